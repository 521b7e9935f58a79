"""Counters of scenario state (step uses, ``nth`` arrivals, fault triggers, chaos draws) behind
one small interface, so that the same selection code runs in one process or across many.

``LocalCounters`` is a dict (the memory store: one process, under the engine's lock, as fast as
before); ``ormock.engine.shared_counters.StoreCounters`` keeps each count in the store through its
atomic ``incr``, so that every worker and replica on one SQLite file or one Redis counts
together: of N racing requests each gets a different number, and the k-th one is k.
A count is named by a key ``(tag, what, index)``: ``tag`` says whose it is (a scenario's name
in memory; across processes its content hash and when it was loaded,
``ormock.engine.shared_admin``),
``what`` which count (``uses``, ``reached``, ``fault``, ``chaos``, a cassette's ``played``).
Beside the counts, ``note`` keeps a value (the response a step produced, for ``step:N``).
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["CounterKey", "Counters", "LocalCounters"]

CounterKey = tuple[str, str, int]


class Counters(Protocol):
    shared: bool  # whether other processes count too (then a read may be stale at once)

    def add(self, key: CounterKey) -> int:
        """Count one more; the new count (1 for the first)."""
        ...

    def take(self, key: CounterKey) -> int:
        """Count one less (a use given back: an attempt a fault ended); the new count."""
        ...

    def value(self, key: CounterKey) -> int:
        """The count now (0 before the first)."""
        ...

    def forget(self, tag: str) -> None:
        """Drop the counts of ``tag`` (a scenario unloaded or replaced in this process)."""
        ...

    def clear(self) -> None:
        """Drop every count this object knows of (``Engine.reset``)."""
        ...

    def note(self, key: CounterKey, value: str) -> None:
        """Keep a value under ``key`` (the response a step produced, for ``step:N``)."""
        ...

    def noted(self, key: CounterKey) -> str | None:
        """The value last kept under ``key`` (None: none)."""
        ...


class LocalCounters:
    """Counts in a dict of this process (the caller holds the engine's lock)."""

    shared = False

    def __init__(self) -> None:
        self.counts: dict[CounterKey, int] = {}
        self.notes: dict[CounterKey, str] = {}

    def add(self, key: CounterKey) -> int:
        value = self.counts[key] = self.counts.get(key, 0) + 1
        return value

    def take(self, key: CounterKey) -> int:
        value = self.counts[key] = self.counts.get(key, 0) - 1
        return value

    def value(self, key: CounterKey) -> int:
        return self.counts.get(key, 0)

    def forget(self, tag: str) -> None:
        for key in [k for k in self.counts if k[0] == tag]:
            del self.counts[key]
        for key in [k for k in self.notes if k[0] == tag]:
            del self.notes[key]

    def clear(self) -> None:
        self.counts.clear()
        self.notes.clear()

    def note(self, key: CounterKey, value: str) -> None:
        self.notes[key] = value

    def noted(self, key: CounterKey) -> str | None:
        return self.notes.get(key)
