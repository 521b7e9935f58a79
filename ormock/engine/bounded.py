"""The one bounded cache of ormock: a mapping capped in count and in bytes, the least recently
used entry the first to go, built on ``cachetools.LRUCache``. Every cache a server keeps (stream
templates, compiled templates, parsed bodies, decoded stored responses, the frames the newest
answers sent, open namespaces, a memory store's keys) is one, so nothing a client sends grows
memory without bound and there is one place that says how an entry goes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar, overload

from cachetools import Cache, LRUCache

__all__ = ["Bounded"]

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")


class Bounded(LRUCache[K, V]):
    """At most ``count`` entries and, with ``max_bytes``, at most that many bytes of them (each
    one's ``size``); past either the least recently used go first, each told to ``evicted``
    when given. An entry larger than ``max_bytes`` counts as all of it: it stays alone, as the
    newest always does, until the next write (a caller that wants it not kept checks first).

    A write (``cache[key] = value``) makes its key the most recent and the last in iteration;
    a read through ``cache[key]`` or ``get`` makes it the most recent too, one through ``peek``
    or ``in`` does not (nor does ``entries``; ``values`` and ``items`` read each, uses all).
    Iteration is in the order of writes, oldest first: the order of recency where reads go
    through ``peek``. Not thread-safe: a cache shared by threads is used under its owner's
    lock."""

    def __init__(self, count: int, max_bytes: int | None = None,
                 size: Callable[[V], int] | None = None, *,
                 evicted: Callable[[K, V], None] | None = None) -> None:
        if count < 1 or (max_bytes is not None and max_bytes < 1):
            raise ValueError("a bounded cache needs room for one entry")
        if (max_bytes is None) != (size is None):
            raise ValueError("a byte cap needs the size of an entry, and the other way round")
        if max_bytes is None or size is None:
            super().__init__(count)
        else:
            cap, measure = max_bytes, size
            super().__init__(cap, getsizeof=lambda value: min(measure(value), cap))
        self.count = count
        self.evicted = evicted

    def __setitem__(self, key: K, value: V) -> None:
        if key in self:
            del self[key]  # rewritten: the newest in iteration too, its old bytes gone first
        while len(self) >= self.count:
            self.popitem()
        super().__setitem__(key, value)

    def popitem(self) -> tuple[K, V]:
        """Drop the least recently used entry (told to ``evicted``) and give it."""
        key, value = super().popitem()
        if self.evicted is not None:
            self.evicted(key, value)
        return key, value

    @overload
    def peek(self, key: K) -> V | None: ...
    @overload
    def peek(self, key: K, default: D) -> V | D: ...
    def peek(self, key: K, default: object = None) -> object:
        """The value of ``key`` (``default`` when absent), its recency left as it was."""
        return Cache.__getitem__(self, key) if key in self else default

    def entries(self) -> list[tuple[K, V]]:
        """Every key and value, in the order of writes, oldest first; no recency changed."""
        return [(key, Cache.__getitem__(self, key)) for key in self]

    @property
    def bytes(self) -> int:
        """The bytes of the entries kept (their count, without a byte cap)."""
        return int(self.currsize)

    def __reversed__(self) -> Iterator[K]:
        """The keys in the order of writes, newest first."""
        return reversed(list(self))
