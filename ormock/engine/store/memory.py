"""The in-memory store backend: the default, and a WebSocket connection's own cache. Bounded per
namespace and kind (``max_keys``, ``max_bytes`` of values: past them the least recently written
go, the newest stays), thread-safe (one lock), expiry by an injectable clock.

Besides bytes, a key may hold a value kept as it was given (``put_value``, an ``Encoded``: the
stored responses of ``ResponseStore``): its bytes are made only when a read wants bytes, so that
a value nobody reads back is never encoded; ``get_value`` gives the value itself."""

from __future__ import annotations

import bisect
import heapq
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ormock.engine.bounded import Bounded
from ormock.engine.store.base import (
    LOG_END,
    AppendsToLogs,
    Clock,
    Guard,
    LogEntries,
    LogEntry,
    StoreBackend,
    Write,
    check_args,
    check_log,
    check_writes,
    counted,
)

__all__ = ["Encoded", "MemoryBackend"]


class Encoded(Protocol):
    """A value a memory backend keeps as it is (``put_value``): ``encode()`` its bytes, made
    when a read wants bytes (the same every time), ``size`` their length, known without making
    them (the byte cap counts it)."""

    @property
    def size(self) -> int: ...

    def encode(self) -> bytes: ...


# one namespace's keys of one kind, least recently written first: key -> (value, expires_at);
# a write is a use of its key, a read is not
_Kind = Bounded[str, tuple["bytes | Encoded", float | None]]
_EMPTY: _Kind = Bounded(1)  # never written to
_EXPIRING_ROOM = 1024


class _Memory:
    """The storage a backend and its ``scoped`` views share."""

    def __init__(self, max_keys: int, max_bytes: int, clock: Clock) -> None:
        self.max_keys, self.max_bytes, self.clock = max_keys, max_bytes, clock
        self.lock = threading.Lock()
        self.kinds: dict[tuple[str, str], _Kind] = {}
        self.expiring: list[tuple[float, str, str, str]] = []  # a heap: (at, namespace, kind, key)
        # past this many, the heap is rebuilt from the live keys (a rewritten or dropped key
        # leaves its entry behind until its time comes)
        self.expiring_room = _EXPIRING_ROOM
        # per namespace, its logs, least recently appended to first (a read is no use of one)
        self.logs: dict[str, Bounded[str, _Log]] = {}
        self.appended = threading.Condition(self.lock)  # notified on every append (log_wait)


class MemoryBackend(AppendsToLogs, StoreBackend):
    """``StoreBackend`` in a dict per namespace and kind."""

    def __init__(self, *, max_keys: int = 2000, max_bytes: int = 128 * 1024 * 1024,
                 clock: Clock = time.time, namespace: str = "",
                 _shared: _Memory | None = None) -> None:
        self.namespace = namespace
        self._m = _shared or _Memory(max_keys, max_bytes, clock)

    def scoped(self, namespace: str) -> MemoryBackend:
        return MemoryBackend(namespace=namespace, _shared=self._m)

    # -- reads ----------------------------------------------------------------------------------
    def get(self, kind: str, key: str) -> bytes | None:
        value = self.get_value(kind, key)
        return value if value is None or value.__class__ is bytes else _bytes(value)

    def get_value(self, kind: str, key: str) -> bytes | Encoded | None:
        """The value of ``key`` as it was written (a ``put_value``'s object itself), or None
        when absent or expired."""
        check_args(kind)
        with self._m.lock:
            self._expire()
            found = self._find(kind).peek(key)
        return None if found is None else found[0]

    def list(self, kind: str, prefix: str = "", after: str | None = None, limit: int = 100,
             reverse: bool = False) -> list[tuple[str, bytes]]:
        check_args(kind, limit=limit)
        with self._m.lock:
            self._expire()
            entries = self._find(kind)
            if after is not None and after not in entries:
                return []
            keys = reversed(entries) if reverse else iter(entries)
            if after is not None:
                for key in keys:
                    if key == after:
                        break
            page: list[tuple[str, bytes]] = []
            for key in keys:
                if len(page) >= limit:
                    break
                found = entries.peek(key) if key.startswith(prefix) else None
                if found is not None:
                    page.append((key, _bytes(found[0])))
            return page

    # -- writes ---------------------------------------------------------------------------------
    def put(self, kind: str, key: str, value: bytes, ttl: float | None = None) -> None:
        if value.__class__ is not bytes:
            _check_bytes(value)
        self.put_value(kind, key, value, ttl)

    def put_value(self, kind: str, key: str, value: bytes | Encoded,
                  ttl: float | None = None) -> None:
        """``put`` of bytes, or of a value kept as it is (``Encoded``): ``get``, ``list`` and
        the compares read its ``encode()``, the byte cap counts its ``size``, ``get_value``
        gives it back."""
        if not kind or (ttl is not None and not ttl > 0):  # ``check_args``' faults, tested here
            check_args(kind, ttl=ttl)
        m = self._m
        lock = m.lock
        lock.acquire()  # spelled out, not ``with``: every store write takes this lock
        try:
            # one reading of the clock for the expiry and the write (only when either needs it)
            now = m.clock() if m.expiring or ttl is not None else 0.0
            if m.expiring and m.expiring[0][0] <= now:
                self._expire(now)
            self._write(kind, key, value, ttl, now)
        finally:
            lock.release()

    def put_many(self, writes: Sequence[Write], guard: Guard | None = None) -> bool:
        check_writes(writes, guard)
        with self._m.lock:
            self._expire()
            if guard is not None:
                found = self._find(guard[0]).peek(guard[1])
                if (_bytes(found[0]) if found is not None else None) != guard[2]:
                    return False
            for kind, key, value, ttl in writes:
                self._write(kind, key, value, ttl)
            return True

    def compare_and_set(self, kind: str, key: str, expected: bytes | None, value: bytes,
                        ttl: float | None = None) -> bool:
        check_args(kind, ttl=ttl)
        with self._m.lock:
            self._expire()
            found = self._find(kind).peek(key)
            if (_bytes(found[0]) if found is not None else None) != expected:
                return False
            _check_bytes(value)
            self._write(kind, key, value, ttl)
            return True

    def incr(self, kind: str, key: str, amount: int = 1) -> int:
        check_args(kind)
        with self._m.lock:
            self._expire()
            found = self._find(kind).peek(key)
            value = counted(_bytes(found[0]) if found is not None else None, key, amount)
            self._write(kind, key, str(value).encode(), None)
            return value

    def delete(self, kind: str, key: str) -> bool:
        check_args(kind)
        with self._m.lock:
            self._expire()
            return self._remove(self._find(kind), key)

    def clear(self) -> None:
        with self._m.lock:
            for where in [w for w in self._m.kinds if w[0] == self.namespace]:
                del self._m.kinds[where]
            self._m.logs.pop(self.namespace, None)

    def close(self) -> None:
        with self._m.lock:
            self._m.kinds.clear()
            self._m.expiring.clear()
            self._m.logs.clear()

    # -- under the lock -------------------------------------------------------------------------
    def _find(self, kind: str) -> _Kind:
        """The keys of a kind, for reading (an unknown kind reads as empty, and stays unmade)."""
        return self._m.kinds.get((self.namespace, kind), _EMPTY)

    def _kind(self, kind: str) -> _Kind:
        where = (self.namespace, kind)
        found = self._m.kinds.get(where)
        if found is None:
            found = self._m.kinds[where] = Bounded(self._m.max_keys, self._m.max_bytes, _size)
        return found

    def _write(self, kind: str, key: str, value: bytes | Encoded, ttl: float | None,
               now: float | None = None) -> None:
        """Write a key (the newest of its kind; bytes checked already); ``now``: the clock
        read already, when given."""
        m = self._m
        keys = m.kinds.get((self.namespace, kind))
        if keys is None:
            keys = self._kind(kind)
        if ttl is None:
            keys[key] = (value, None)
        else:
            expires = (m.clock() if now is None else now) + ttl
            keys[key] = (value, expires)
            expiring = m.expiring
            heapq.heappush(expiring, (expires, self.namespace, kind, key))
            if len(expiring) > m.expiring_room:
                self._compact()

    @staticmethod
    def _remove(keys: _Kind, key: str) -> bool:
        return keys.pop(key, None) is not None

    def _compact(self) -> None:
        """The expiry heap rebuilt from the keys that still expire (amortised: the room is
        four times what is live, so a rebuild comes after three times as many writes)."""
        m = self._m
        m.expiring = [(entry[1], namespace, kind, key)
                      for (namespace, kind), keys in m.kinds.items()
                      for key, entry in keys.entries() if entry[1] is not None]
        heapq.heapify(m.expiring)
        m.expiring_room = max(_EXPIRING_ROOM, 4 * len(m.expiring))

    def _expire(self, now: float | None = None) -> None:
        """Drop every key whose time has passed (in every namespace: they share the heap);
        ``now``: the clock read already, when given."""
        m = self._m
        if not m.expiring:
            return
        if now is None:
            now = m.clock()
        while m.expiring and m.expiring[0][0] <= now:
            at, namespace, kind, key = heapq.heappop(m.expiring)
            keys = m.kinds.get((namespace, kind))
            found = keys.peek(key) if keys is not None else None
            if keys is not None and found is not None and found[1] == at:  # not rewritten
                self._remove(keys, key)

    # -- event logs -----------------------------------------------------------------------------
    def log_read(self, log: str, start: int = 0, limit: int = 100) -> LogEntries:
        check_log(log, limit=limit)
        with self._m.lock:
            return self._log_entries(log, start, limit)

    def log_wait(self, log: str, start: int, timeout: float, limit: int = 100
                 ) -> LogEntries:
        check_log(log, limit=limit)
        deadline = time.monotonic() + max(0.0, timeout)
        with self._m.appended:
            while True:
                found = self._log_entries(log, start, limit)
                left = deadline - time.monotonic()
                if found or left <= 0:
                    return found
                self._m.appended.wait(left)

    def _log_add(self, log: str, number: int, value: bytes, ttl: float | None) -> bool:
        if not isinstance(value, bytes):
            raise TypeError(f"a stored value is bytes, not {type(value).__name__}")
        m = self._m
        with m.appended:
            logs = m.logs.get(self.namespace)
            if logs is None:
                logs = m.logs[self.namespace] = Bounded(m.max_keys, m.max_bytes,
                                                        _log_size)
            found = self._live_log(log)
            if found is None:
                found = _Log()
            if found.entries and found.entries[-1][0] == LOG_END:
                return False
            if found.entries and number <= found.entries[-1][0]:
                raise ValueError(f"log {log!r}: entry {number} is not above the last one, "
                                 f"{found.entries[-1][0]}")
            found.entries.append((number, value))
            found.bytes += len(value)
            found.expires = None if ttl is None else m.clock() + ttl
            logs[log] = found  # appended to most recently: the last to go, at its new size
            m.appended.notify_all()
            return True

    def _live_log(self, log: str) -> _Log | None:
        """The log, unless absent or past its expiry (then dropped); under the lock."""
        logs = self._m.logs.get(self.namespace)
        found = logs.peek(log) if logs is not None else None
        if logs is not None and found is not None and found.expires is not None \
                and found.expires <= self._m.clock():
            del logs[log]
            return None
        return found

    def _log_entries(self, log: str, start: int, limit: int) -> LogEntries:
        found = self._live_log(log)
        if found is None:
            return []
        at = bisect.bisect_left(found.entries, start, key=lambda entry: entry[0])
        return found.entries[at:at + limit]


@dataclass
class _Log:
    """One event log: its entries in order, their bytes, when it expires."""

    entries: list[LogEntry] = field(default_factory=list)
    bytes: int = 0
    expires: float | None = None



def _size(entry: tuple[bytes | Encoded, float | None]) -> int:
    """A key's bytes: its value's (an ``Encoded`` one's ``size``)."""
    value = entry[0]
    return len(value) if isinstance(value, bytes) else value.size


def _bytes(value: bytes | Encoded) -> bytes:
    """A value's bytes (an ``Encoded`` one's ``encode()``)."""
    return value if isinstance(value, bytes) else value.encode()


def _check_bytes(value: object) -> None:
    if not isinstance(value, bytes):
        raise TypeError(f"a stored value is bytes, not {type(value).__name__}")


def _log_size(log: _Log) -> int:
    return log.bytes
