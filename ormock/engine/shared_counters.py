"""Scenario state every worker and replica on one store shares: ``StoreCounters`` keeps the counts
of ``ormock.scenario.counters`` (step uses, ``nth`` arrivals, fault triggers, chaos draws) in
the store (kind ``counter``) through its atomic ``incr`` (and the response a step produced, for
``step:N``, kind ``noted``); cassettes' plays are such counts too (``Player.claims``), and the
cassettes a namespace replays are part of its admin state (``ormock.engine.shared_admin``):
``cassettes_state`` writes them, ``apply_cassettes`` takes them in on every other worker."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from ormock.cassette.fileformat import dump_cassette, parse_cassette, to_document
from ormock.cassette.matching import Player, order_of
from ormock.cassette.model import Cassette
from ormock.engine.store.base import StoreBackend
from ormock.protocol.types import Json
from ormock.scenario.counters import CounterKey

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = ["PRELOADED", "StoreCounters", "apply_cassettes", "cassette_hash", "cassette_tag",
           "cassettes_state"]

PRELOADED = "0"  # the load token of what every replica starts with (--scenario, --cassette)
_KIND = "counter"
_NOTES = "noted"  # values kept beside the counts: the response a step produced


class StoreCounters:
    """Counts in a namespace's keyspace of a shared store: one ``incr`` (one round trip on
    Redis) per count, one ``get`` per read. ``forget`` and ``clear`` drop nothing: a reload
    counts under a new tag, a reset clears the namespace's keys (``StoreBackend.clear``)."""

    shared = True

    def __init__(self, backend: StoreBackend) -> None:
        self.backend = backend

    @staticmethod
    def _name(key: CounterKey) -> str:
        return f"{key[0]}:{key[1]}:{key[2]}"

    def add(self, key: CounterKey) -> int:
        return self.backend.incr(_KIND, self._name(key))

    def take(self, key: CounterKey) -> int:
        return self.backend.incr(_KIND, self._name(key), -1)

    def value(self, key: CounterKey) -> int:
        found = self.backend.get(_KIND, self._name(key))
        return int(found) if found is not None else 0

    def forget(self, tag: str) -> None:
        return None

    def note(self, key: CounterKey, value: str) -> None:
        self.backend.put(_NOTES, self._name(key), value.encode())

    def noted(self, key: CounterKey) -> str | None:
        found = self.backend.get(_NOTES, self._name(key))
        return found.decode() if found is not None else None

    def clear(self) -> None:
        return None


# -- cassettes --------------------------------------------------------------------------------

def cassette_hash(cassette: Cassette) -> str:
    """A cassette's content, hashed (the same file on two replicas: the same hash)."""
    text = json.dumps(to_document(cassette), sort_keys=True, default=str,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def cassette_tag(cassette: Cassette, token: str) -> str:
    """The name of a cassette's claims: ``cassette:<content hash>:<load token>`` (``0`` for
    the ``--cassette`` files every replica starts with, so they play them together)."""
    return f"cassette:{cassette_hash(cassette)}:{token}"


def cassettes_state(engine: Engine) -> list[Json]:
    """What the admin state says of the engine's cassettes, in the order they are tried: one
    the server started with by its place in ``settings.cassettes``, one loaded later by its
    text."""
    presets = {id(c): i for i, c in enumerate(engine.settings.cassettes)}
    out: list[Json] = []
    for player in engine.replays.players:
        cassette = player.cassette
        entry: Json = {"tag": player.tag, "order": player.order,
                       "ignore": list(player.paths)}
        if id(cassette) in presets:
            entry["preset"] = presets[id(cassette)]
        else:
            entry["text"], entry["file"] = dump_cassette(cassette), cassette.file
        out.append(entry)
    return out


def apply_cassettes(engine: Engine, entries: list[Json]) -> None:
    """Take in the cassettes another process's admin state lists (the caller holds the
    engine's lock); a player already here keeps what it knows of the plays. A ``--cassette``
    file this process was not started with is left out (replicas are started alike)."""
    replays = engine.replays
    if [p.tag for p in replays.players] == [e["tag"] for e in entries]:
        return
    have = {p.tag: p for p in replays.players}
    players, loaded = [], []
    presets = engine.settings.cassettes
    for entry in entries:
        player = have.get(entry["tag"])
        if player is None:
            if "preset" in entry:  # one of the --cassette files: this process has it too,
                index = entry["preset"]  # unless it was started with other files
                if index >= len(presets) or cassette_tag(presets[index], PRELOADED) != entry["tag"]:
                    continue
                cassette = presets[index]
            else:
                cassette = parse_cassette(entry["text"], entry.get("file"))
            order = order_of(entry["order"])
            player = Player.of(cassette, entry["ignore"], order, engine.counters,
                               entry["tag"])
        players.append(player)
        if "preset" not in entry:
            loaded.append((player.cassette, tuple(entry["ignore"]), player.order,
                           entry["tag"]))
    replays.players = players
    engine.loaded_cassettes[:] = loaded
