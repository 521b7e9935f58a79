"""Whether an engine serves its namespace alone or with other processes, as one object the
engine asks instead of branching on it: ``Alone`` (one process: nothing to tell, nothing to
take in) and ``Shared`` (``--workers``, replicas: the admin state, the scenario and fault
counts and the journal go through the store every process shares).

The engine tells its sharing what changed (``changed``), takes in what others changed
(``pull``), publishes its journal's entries (``publish``), holds an HTTP create's writes for one
guarded commit (``hold``: ``ormock.engine.attempt``) and reads the journal and its clock through
it (``journal``, ``elapsed``). ``sync`` and ``sink`` are the shared parts themselves
(None when alone), for the modules that hold a shared attempt (``ormock.engine.attempt``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ormock.engine import attempt
from ormock.engine.attempt import Held
from ormock.engine.journal import JournalEntry
from ormock.engine.journal_sink import SharedJournal
from ormock.engine.shared_admin import Sync
from ormock.engine.store.base import StoreBackend
from ormock.scenario import Scenario

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = ["Alone", "Shared"]


class Alone:
    """One process serves the namespace."""

    shared = False
    sync: Sync | None = None
    sink: SharedJournal | None = None

    def __init__(self) -> None:
        self.started = time.monotonic()

    def tag(self, scenario: Scenario, *, fresh: bool) -> str | None:
        """The name of a scenario's counts in the store (None: counted in this process)."""
        return None

    def changed(self, engine: Engine, *, faults: bool = False, chaos: bool = False,
                reset: bool = False) -> None:
        """The engine's admin state changed (``faults``, ``chaos``: those too; ``reset``: it
        started over); the caller holds its lock."""

    def pull(self, engine: Engine) -> None:
        """Take in what other processes changed; the caller holds the engine's lock."""

    def restarted(self) -> None:
        """The engine's journal clock starts over (a reset)."""
        self.started = time.monotonic()

    def publish(self, entry: JournalEntry, wait: bool = False) -> None:
        """The journal's ``entry`` as it is now, for other processes (``wait``: stored before
        this returns)."""

    def hold(self, engine: Engine) -> Held | None:
        """The ``Held`` of one attempt at an HTTP create, whose writes are made in one call
        guarded by the admin stamp; None alone: nothing to hold, nothing can be stale."""
        return None

    def journal(self, engine: Engine) -> list[JournalEntry]:
        """The journal as ``GET /_ormock/journal`` and the verdict read it."""
        return list(engine.journal)

    def elapsed(self) -> float:
        """Seconds since the journal's clock started, to the microsecond: ``round(t * 1e6) /
        1e6``, the value of ``round(t, 6)`` but for the last digit of a tie."""
        return round((time.monotonic() - self.started) * 1e6) / 1e6


class Shared(Alone):
    """Other processes serve the namespace from the same store."""

    shared = True

    def __init__(self, backend: StoreBackend) -> None:
        super().__init__()
        self.sync: Sync = Sync(backend)
        self.sink: SharedJournal = SharedJournal(backend)

    def tag(self, scenario: Scenario, *, fresh: bool) -> str:
        return self.sync.tag(scenario, fresh=fresh)

    def hold(self, engine: Engine) -> Held | None:
        return attempt.hold(engine)

    def changed(self, engine: Engine, *, faults: bool = False, chaos: bool = False,
                reset: bool = False) -> None:
        if faults:
            self.sync.changed_faults()
        if chaos:
            self.sync.changed_chaos()
        self.sync.push(engine, reset=reset)  # every process takes it in (a reset: resets)

    def pull(self, engine: Engine) -> None:
        self.sync.pull(engine)

    def publish(self, entry: JournalEntry, wait: bool = False) -> None:
        self.sink.publish(entry, wait)

    def journal(self, engine: Engine) -> list[JournalEntry]:
        """Every process's entries, read back from the store."""
        return [JournalEntry.from_dict(data)
                for data in self.sink.read(engine.limits.journal_entries)]

    def elapsed(self) -> float:
        """Since the namespace started, on the wall clock every process shares."""
        return round((time.time() - self.sync.started) * 1e6) / 1e6
