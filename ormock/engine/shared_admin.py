"""Admin changes shared by every worker and replica on one store (``--store sqlite:...``,
``--store redis://...``), so that N processes behave as one fake.

A namespace's admin state (the loaded scenarios, the cassettes it replays, the faults, chaos,
when it started and its reset epoch) is one JSON value in its keyspace (kind ``admin``, key
``state``), written whole by the process that changes it, and then its stamp (key ``stamp``: a
fresh token per change). Each process compares the stamp with the one it applied, once per
request (one ``get``: one Redis round trip), and reads and applies the state only when it
changed (or, for an HTTP create, not before: its writes are made in one call only if the stamp
is still the one applied, ``guard``; on a change it is answered again after a pull). The writer
writes the state before the stamp, so a process that sees a new stamp reads
a state at least as new, and an admin call returns only once both are written: what it changed
is in effect on every worker for the next request any of them serves.

The counts (``ormock.engine.shared_counters``) are tagged by whose they are: a scenario by its
content hash and when it was loaded (``0`` for the ``--scenario`` files every replica starts
with, so a replica that starts later joins their counts; a fresh token for one loaded through
the admin API, so a reload starts them over for all), the faults and chaos by the change that
set them. A reset clears the namespace's keys (counts included) and starts a new epoch, which
every process sees and resets its own part for (ids, cache, the request-named scenarios). """

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ormock.engine.shared_counters import PRELOADED, apply_cassettes, cassettes_state
from ormock.engine.store.base import Guard, StoreBackend
from ormock.faults import parse_fault
from ormock.faults.chaos import Chaos
from ormock.protocol.errors import OpenResponsesError
from ormock.scenario import Scenario, load_scenario

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = ["DROPPED", "PRELOADED", "Sync", "closed_error", "content_hash", "token"]

_KIND, _STATE, _STAMP = "admin", "state", "stamp"
DROPPED = b"dropped"  # the stamp of a namespace dropped by some process


def content_hash(scenario: Scenario) -> str:
    """A scenario's content, hashed (the same file on two replicas: the same hash)."""
    text = json.dumps(scenario.data, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def closed_error() -> OpenResponsesError:
    return OpenResponsesError(
        "This namespace is closed: it was dropped (DELETE /_ormock/namespaces/NAME, or the "
        "test that owned it has ended), on this worker or another one on the same store.",
        type="not_found", code="namespace_closed", param="path")


def token() -> str:
    """A fresh load token (a scenario or cassette loaded through the admin API)."""
    return secrets.token_hex(8)


@dataclass
class Sync:
    """One engine's side of its namespace's shared admin state."""

    backend: StoreBackend
    stamp: str | None = None  # the state applied last
    epoch: str | None = None
    started: float = field(default_factory=time.time)  # the journal's clock, shared
    faults_tag: str = PRELOADED
    chaos_tag: str = PRELOADED
    _loaded: dict[str, Scenario] = field(default_factory=dict)  # by tag: parsed once

    # -- tags -----------------------------------------------------------------------------------
    def tag(self, scenario: Scenario, *, fresh: bool) -> str:
        """The tag of a scenario's counts: its content and its load (``fresh``: a new load)."""
        return f"{content_hash(scenario)}:{token() if fresh else PRELOADED}"

    def changed_faults(self) -> None:
        self.faults_tag = token()

    def changed_chaos(self) -> None:
        self.chaos_tag = token()

    # -- reading --------------------------------------------------------------------------------
    def guard(self) -> Guard | None:
        """The condition of a commit made without reading the stamp first (``put_many``'s
        guard, ``ormock.engine.store.batched``): the stamp is still the one applied last. None
        before any was applied."""
        return None if self.stamp is None else (_KIND, _STAMP, self.stamp.encode())

    def pull(self, engine: Engine) -> None:
        """Apply what another process changed (one ``get`` when nothing did); the caller
        holds the engine's lock. A dropped namespace raises 404 ``namespace_closed``."""
        stamp = self.backend.get(_KIND, _STAMP)
        if stamp == DROPPED:
            raise closed_error()
        if stamp is not None and stamp.decode() == self.stamp:
            return
        raw = self.backend.get(_KIND, _STATE)
        if raw is None:
            # nobody wrote it yet (a fresh store, a cleared namespace): this engine's is it,
            # unless another process writes first
            if not self.push(engine, first=True):
                self.pull(engine)
            return
        state = json.loads(raw)
        if state["stamp"] != self.stamp:
            self._apply(engine, state)

    def _apply(self, engine: Engine, state: dict[str, Any]) -> None:
        if self.epoch is not None and state["epoch"] != self.epoch:
            engine.reset_locally()  # another process reset the namespace
        self.epoch, self.started = state["epoch"], float(state["started"])
        wanted: list[tuple[Scenario, str]] = []
        for entry in state["scenarios"]:
            tag = entry["tag"]
            scenario = self._loaded.get(tag)
            if scenario is None:
                scenario = self._loaded[tag] = load_scenario(entry["data"])
            wanted.append((scenario, tag))
        self._loaded = {tag: scenario for scenario, tag in wanted}
        scenarios = engine.scenarios
        names = {s.name for s, _ in wanted}
        for gone in [s.name for s in scenarios.scenarios if s.name not in names]:
            scenarios.remove(gone)
        for scenario, tag in wanted:
            if scenarios.get(scenario.name) is not scenario or scenarios.tag(scenario) != tag:
                scenarios.add(scenario, tag)
        scenarios.scenarios = [s for s, _ in wanted]  # in the order they were loaded
        if "cassettes" in state:
            apply_cassettes(engine, state["cassettes"])
        if state["faults_tag"] != self.faults_tag:
            engine.faults[:] = [parse_fault(s, f"faults[{i}]")
                                for i, s in enumerate(state["faults"])]
            self.faults_tag = state["faults_tag"]
        if state["chaos_tag"] != self.chaos_tag:
            engine.chaos = Chaos.parse(state["chaos"]) if state["chaos"] else None
            self.chaos_tag = state["chaos_tag"]
        self.stamp = state["stamp"]

    # -- writing --------------------------------------------------------------------------------
    def push(self, engine: Engine, *, first: bool = False, reset: bool = False) -> bool:
        """Write this engine's admin state for every process (the caller holds the engine's
        lock): the state, then its stamp. ``first``: only if none is there yet (whether it
        was written). ``reset``: a new epoch (the namespace's keys were just cleared)."""
        if reset or self.epoch is None:
            self.epoch, self.started = token(), time.time()
        stamp = token()
        scenarios = engine.scenarios
        state = {
            "stamp": stamp, "epoch": self.epoch, "started": self.started,
            "scenarios": [{"data": s.data, "tag": scenarios.tag(s)}
                          for s in scenarios.scenarios],
            "faults": [f.to_spec() for f in engine.faults], "faults_tag": self.faults_tag,
            "chaos": str(engine.chaos) if engine.chaos is not None else None,
            "chaos_tag": self.chaos_tag, "cassettes": cassettes_state(engine),
        }
        raw = json.dumps(state, default=str).encode()
        if first:
            if not self.backend.compare_and_set(_KIND, _STATE, None, raw):
                return False
        else:
            self.backend.put(_KIND, _STATE, raw)
        self.backend.put(_KIND, _STAMP, stamp.encode())
        self.stamp = stamp
        self._loaded = {scenarios.tag(s): s for s in scenarios.scenarios}
        return True

    def drop(self) -> None:
        """Mark the namespace dropped for every process (after its keys were cleared)."""
        self.backend.put(_KIND, _STAMP, DROPPED)
