"""Scenario state every worker and replica on one store shares: ``StoreCounters`` keeps the
counts of ``ormock.scenario.counters`` (step uses, ``nth`` arrivals, fault triggers, chaos
draws) in the store (kind ``counter``) through its atomic ``incr``."""

from __future__ import annotations

from ormock.engine.store.base import StoreBackend
from ormock.scenario.counters import CounterKey

__all__ = ["StoreCounters"]

_KIND = "counter"


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

    def value(self, key: CounterKey) -> int:
        found = self.backend.get(_KIND, self._name(key))
        return int(found) if found is not None else 0

    def forget(self, tag: str) -> None:
        return None

    def clear(self) -> None:
        return None
