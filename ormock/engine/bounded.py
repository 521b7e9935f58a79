"""The one bounded cache of ormock: a mapping capped in count and in bytes, the least recently
used entry the first to go. Every cache a server keeps (stream templates, compiled templates,
parsed bodies, decoded stored responses, the frames the newest answers sent, open namespaces, a
memory store's keys) is one, so nothing a client sends grows memory without bound and there is
one place that says how an entry goes. A cache that keeps a value only from its key's second
sighting notes the first in a ``Sightings``.

It is an ``OrderedDict`` (C in CPython) whose order is the order of use: the create path writes
several entries a request, which a general-purpose cache library made several times dearer
(``bench/README.md``, "Past findings that explain the design")."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar, overload

__all__ = ["Bounded", "Sightings"]

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")

_MISSING = object()


class Bounded(Generic[K, V]):
    """At most ``count`` entries and, with ``max_bytes``, at most that many bytes of them (each
    one's ``size``); past either the least recently used go first, each told to ``evicted``
    when given. An entry larger than ``max_bytes`` counts as all of it: it stays alone, as the
    newest always does, until the next write (a caller that wants it not kept checks first).

    A write (``cache[key] = value``) makes its key the most recent and the last in iteration;
    a read through ``cache[key]`` or ``get`` makes it the most recent too, one through ``peek``
    or ``in`` does not (nor does ``entries``). Iteration is in the order of use, oldest first:
    the order of writes where reads go through ``peek``. Not thread-safe: a cache shared by
    threads is used under its owner's lock."""

    __slots__ = ("_data", "_sizes", "bytes", "count", "evicted", "max_bytes", "size")

    def __init__(self, count: int, max_bytes: int | None = None,
                 size: Callable[[V], int] | None = None, *,
                 evicted: Callable[[K, V], None] | None = None) -> None:
        if count < 1 or (max_bytes is not None and max_bytes < 1):
            raise ValueError("a bounded cache needs room for one entry")
        if (max_bytes is None) != (size is None):
            raise ValueError("a byte cap needs the size of an entry, and the other way round")
        self.count, self.max_bytes, self.size, self.evicted = count, max_bytes, size, evicted
        self._data: OrderedDict[K, V] = OrderedDict()
        self._sizes: dict[K, int] = {}  # each entry's counted bytes (with a byte cap only)
        self.bytes = 0  # the bytes counted (the entries' count without a byte cap)

    def __setitem__(self, key: K, value: V) -> None:
        data = self._data
        if key in data:
            self._drop(key)  # rewritten: the newest in iteration too, its old bytes gone first
        size, cap = self.size, self.max_bytes
        if size is None or cap is None:
            while len(data) >= self.count:
                self.popitem()
            data[key] = value
            self.bytes += 1
            return
        counted = size(value)
        if counted > cap:
            counted = cap
        while data and (len(data) >= self.count or self.bytes + counted > cap):
            self.popitem()
        data[key] = value
        self._sizes[key] = counted
        self.bytes += counted

    def __getitem__(self, key: K) -> V:
        value = self._data[key]
        self._data.move_to_end(key)
        return value

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...
    def get(self, key: K, default: object = None) -> object:
        """The value of ``key`` (``default`` when absent), made the most recent."""
        data = self._data
        value = data.get(key, _MISSING)
        if value is _MISSING:
            return default
        data.move_to_end(key)
        return value

    @overload
    def peek(self, key: K) -> V | None: ...
    @overload
    def peek(self, key: K, default: D) -> V | D: ...
    def peek(self, key: K, default: object = None) -> object:
        """The value of ``key`` (``default`` when absent), its recency left as it was."""
        return self._data.get(key, default)

    def __delitem__(self, key: K) -> None:
        if key not in self._data:
            raise KeyError(key)
        self._drop(key)

    @overload
    def pop(self, key: K) -> V: ...
    @overload
    def pop(self, key: K, default: D) -> V | D: ...
    def pop(self, key: K, default: object = _MISSING) -> object:
        """Take ``key`` out (not told to ``evicted``: nothing was pushed out)."""
        if key not in self._data:
            if default is _MISSING:
                raise KeyError(key)
            return default
        return self._drop(key)

    def popitem(self) -> tuple[K, V]:
        """Drop the least recently used entry (told to ``evicted``) and give it."""
        key, value = self._data.popitem(last=False)
        self.bytes -= self._sizes.pop(key, 1)
        if self.evicted is not None:
            self.evicted(key, value)
        return key, value

    def _drop(self, key: K) -> V:
        value = self._data.pop(key)
        self.bytes -= self._sizes.pop(key, 1)
        return value

    def clear(self) -> None:
        """Forget every entry (none told to ``evicted``)."""
        self._data.clear()
        self._sizes.clear()
        self.bytes = 0

    def entries(self) -> list[tuple[K, V]]:
        """Every key and value, in the order of use, oldest first; no recency changed."""
        return list(self._data.items())

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __reversed__(self) -> Iterator[K]:
        """The keys in the order of use, newest first."""
        return reversed(self._data)

    def __repr__(self) -> str:
        return f"Bounded({len(self._data)} of {self.count}, {self.bytes} bytes)"


class Sightings:
    """Which keys came before, for a cache that keeps a value only from its key's second
    sighting (what is met once, as most new inputs are, costs it no entry): each key's hash in
    the one of ``slots`` slots that hash picks, which a later key with the same slot takes. A
    record of fixed size, not a cache (it holds no value and evicts nothing in order): a key
    whose slot was taken is kept a sighting later, and two keys of one hash one early; which
    value a cache gives never depends on it. Not thread-safe, as ``Bounded``."""

    __slots__ = ("_seen",)

    def __init__(self, slots: int = 1024) -> None:
        self._seen: list[int | None] = [None] * slots

    def again(self, key: object) -> bool:
        """Whether ``key`` was seen before (then forgotten: its slot is free again); a first
        sighting is noted, and False."""
        noted = hash(key)
        seen = self._seen
        slot = noted % len(seen)
        if seen[slot] == noted:
            seen[slot] = None
            return True
        seen[slot] = noted
        return False

    def clear(self) -> None:
        self._seen = [None] * len(self._seen)

    def __len__(self) -> int:
        """Its slots."""
        return len(self._seen)
