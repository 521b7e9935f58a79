"""The Redis store backend (``--store redis://HOST:PORT/DB``, ``rediss://...``,
``unix:///path/redis.sock?db=N``): every worker and replica on the same Redis shares one store.

Each call is one Lua script (``redis_scripts``), so one round trip, atomic across processes and
machines: a ``compare_and_set`` has one winner however many replicas race, and ``expected=None``
is ``SET NX`` (only if absent or expired). A kind's write order is a sorted set scored by a
per-namespace counter; the caps are counted from a hash of the sizes; a ttl is a Redis expiry
on the value (Redis frees it even if nobody comes back) and an entry in an expiry index on the
backend's clock (a key is gone for ``get``, ``list`` and ``compare_and_set`` the moment its time
has passed, and the oldest-first caps never count what has expired). ``clear`` drops the keys of
its namespace only, never the database.

The client is the synchronous ``redis`` package over one ``ConnectionPool`` per backend (its
``scoped`` views share it): the store protocol is synchronous and thread-safe, called inline by
the request handlers and by Python callers of ``Engine`` alike (``docs/scaling.md``). The
scripts go over a connection each thread keeps (``redis_link``); ``put_nowait`` sends one
without waiting for its answer.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from typing import Any

import redis

from ormock.engine.store.base import (
    LOG_END,
    AppendsToLogs,
    Clock,
    Guard,
    LogEntries,
    LogEntry,
    StoreBackend,
    StoreError,
    Write,
    check_args,
    check_log,
    check_writes,
    shown,
)
from ormock.engine.store.redis_link import Link

__all__ = ["RedisBackend"]


class _Redis:
    """The client a backend and its ``scoped`` views share, and its scripts."""

    def __init__(self, url: str, max_keys: int, max_bytes: int, clock: Clock,
                 prefix: str) -> None:
        self.url, self.shown = url, shown(url)
        self.max_keys, self.max_bytes, self.clock, self.prefix = (max_keys, max_bytes, clock,
                                                                  prefix)
        # a call waits for Redis 5 s at most (a URL's own ``socket_timeout`` wins): the redis
        # package's default before version 8 was forever, for a Redis frozen or cut off
        self.pool: redis.ConnectionPool = redis.ConnectionPool.from_url(
            url, socket_connect_timeout=5, socket_timeout=5, health_check_interval=30)
        self.client = redis.Redis(connection_pool=self.pool)  # XREAD BLOCK, PING
        # the scripts: each thread on a connection of its own
        self.link = Link(self.pool, self.shown)
        self.lock = threading.Lock()
        self.closed = False
        try:
            self.link.load(self.client)
        except redis.RedisError as error:
            self.pool.disconnect()
            raise StoreError(f"cannot reach Redis at {self.shown} ({error}); is redis-server "
                             f"running there? (Debian: apt-get install -y redis-server)"
                             ) from error


class RedisBackend(AppendsToLogs, StoreBackend):
    """``StoreBackend`` in Redis (``url`` as the ``redis`` package reads it; ``prefix`` starts
    every key, so that several fakes can share one database)."""

    def __init__(self, url: str, *, max_keys: int = 2000, max_bytes: int = 128 * 1024 * 1024,
                 clock: Clock = time.time, namespace: str = "", prefix: str = "ormock",
                 _shared: _Redis | None = None) -> None:
        self.namespace = namespace
        self._r = _shared or _Redis(url, max_keys, max_bytes, clock, prefix)
        self.url = self._r.shown
        self._base = f"{self._r.prefix}:{{ns:{namespace}}}:"

    def scoped(self, namespace: str) -> RedisBackend:
        return RedisBackend(self._r.url, namespace=namespace, _shared=self._r)

    # -- reads ----------------------------------------------------------------------------------
    def get(self, kind: str, key: str) -> bytes | None:
        self._check(kind)
        found = self._run("GET", kind, self._now, key)
        return None if found is None else bytes(found)

    def list(self, kind: str, prefix: str = "", after: str | None = None, limit: int = 100,
             reverse: bool = False) -> list[tuple[str, bytes]]:
        self._check(kind, limit=limit)
        flat = self._run("LIST", kind, self._now, prefix, "0" if after is None else "1",
                         after or "", limit, "1" if reverse else "0")
        return [(bytes(flat[i]).decode(), bytes(flat[i + 1])) for i in range(0, len(flat), 2)]

    # -- writes ---------------------------------------------------------------------------------
    def put(self, kind: str, key: str, value: bytes, ttl: float | None = None) -> None:
        self._check(kind, ttl=ttl)
        now = self._now
        self._run("PUT", kind, now, *self._write(key, value, ttl, now))

    def put_nowait(self, kind: str, key: str, value: bytes, ttl: float | None = None) -> None:
        """``put``, sent without waiting for Redis's answer (``redis_link``)."""
        self._check(kind, ttl=ttl)
        now = self._now
        self._r.link.send("PUT", [self._base, kind, repr(now), *self._write(key, value, ttl, now)],
                          wait=False)

    def put_many(self, writes: Sequence[Write], guard: Guard | None = None) -> bool:
        """One script (``PUT_MANY``): one round trip, the guard checked in it."""
        check_writes(writes, guard)  # every kind checked once, and the store opened once
        for kind, *_ in writes:
            _named(kind)
        guard_kind, guard_key, expected = guard if guard is not None else ("", "", None)
        if guard is not None:
            _named(guard_kind)
        self._open()
        r, now = self._r, self._now
        mode = "0" if guard is None else "2" if expected is None else "1"
        args: list[str | bytes | int] = [self._base, guard_kind, repr(now), mode, guard_key, "",
                                         r.max_keys, r.max_bytes, expected or b""]
        for kind, key, value, ttl in writes:
            args += (kind, key, value, "", "") if ttl is None else (
                kind, key, value, str(max(1, math.ceil(ttl * 1000))), repr(now + ttl))
        return bool(r.link.send("PUT_MANY", args))

    def compare_and_set(self, kind: str, key: str, expected: bytes | None, value: bytes,
                        ttl: float | None = None) -> bool:
        self._check(kind, ttl=ttl)
        now = self._now
        won = self._run("COMPARE_AND_SET", kind, now, *self._write(key, value, ttl, now),
                        "0" if expected is None else "1", expected or b"")
        return bool(won)

    def incr(self, kind: str, key: str, amount: int = 1) -> int:
        self._check(kind)
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise ValueError(f"a counter moves by a whole number, not {amount!r}")
        now = self._now
        try:
            return int(self._run("INCR", kind, now, *self._write(key, b"", None, now),
                                 str(amount)))
        except redis.ResponseError as error:
            if "no counter" not in str(error):
                raise
            raise ValueError(f"the store key {key!r} holds no counter (not a whole number)"
                             ) from None

    def delete(self, kind: str, key: str) -> bool:
        self._check(kind)
        return bool(self._run("DELETE", kind, self._now, key))

    def clear(self) -> None:
        self._open()
        self._r.link.send("CLEAR", [self._base])

    def close(self) -> None:
        with self._r.lock:
            if not self._r.closed:
                self._r.closed = True
                self._r.pool.disconnect()

    # -- one script, one round trip -------------------------------------------------------------
    def _check(self, kind: str, *, limit: int = 0, ttl: float | None = None) -> None:
        check_args(kind, limit=limit, ttl=ttl)
        _named(kind)
        self._open()

    def _open(self) -> None:
        if self._r.closed:
            raise RuntimeError(f"the store {self.url} is closed")

    def _write(self, key: str, value: bytes, ttl: float | None, now: float
               ) -> tuple[str | bytes | int, ...]:
        """The arguments of a write: key, value, ttl in ms, the caps, when it expires."""
        if not isinstance(value, bytes):
            raise TypeError(f"a stored value is bytes, not {type(value).__name__}")
        r = self._r
        if ttl is None:
            return key, value, "", r.max_keys, r.max_bytes, ""
        return (key, value, str(max(1, math.ceil(ttl * 1000))), r.max_keys, r.max_bytes,
                repr(now + ttl))

    @property
    def _now(self) -> float:
        return float(self._r.clock())

    def _run(self, script: str, kind: str, now: float, *args: str | bytes | int) -> Any:
        return self._r.link.send(script, [self._base, kind, repr(now), *args])

    # -- event logs: Redis Streams (``redis_scripts.LOG_APPEND``) -------------------------------
    def log_read(self, log: str, start: int = 0, limit: int = 100) -> LogEntries:
        check_log(log, limit=limit)
        self._open()
        if limit == 0:
            return []
        found = self._run("LOG_READ", "log", self._now, log, f"{start}-0", limit)
        return [_entry(entry) for entry in found]

    def log_wait(self, log: str, start: int, timeout: float, limit: int = 100
                 ) -> LogEntries:
        """``XREAD BLOCK``: woken by the append, on whichever process or machine it is made."""
        check_log(log, limit=limit)
        self._open()
        if limit == 0:
            return []
        # the entries after the id given: ours all end in -1, so after (start - 1)-1
        after = f"{start - 1}-1" if start > 0 else "0-0"
        block = max(1, math.ceil(timeout * 1000))
        try:
            found: Any = self._r.client.xread({self._log_key(log): after}, count=limit,
                                              block=block)
        except (redis.ConnectionError, redis.TimeoutError) as error:
            raise self._r.link.unavailable(error) from error
        return [_entry(entry) for _, entries in found or () for entry in entries]

    def _log_add(self, log: str, number: int, value: bytes, ttl: float | None) -> bool:
        self._open()
        now = self._now
        done = self._run("LOG_APPEND", "log", now, *self._write(log, value, ttl, now),
                         str(number), str(LOG_END))
        if done == -1:
            raise ValueError(f"log {log!r}: entry {number} is not above the last one")
        return bool(done)

    def _log_key(self, log: str) -> str:
        return f"{self._base}v:log:{log}"


def _entry(entry: Any) -> LogEntry:
    """An ``XRANGE``/``XREAD`` entry (id, fields: a dict, or a flat list from a script) as
    (number, value)."""
    entry_id, fields = entry
    value = fields[b"v"] if isinstance(fields, dict) else fields[1]
    return int(bytes(entry_id).split(b"-")[0]), bytes(value)


def _named(kind: str) -> None:
    """A kind is part of Redis key names joined by ':' (``redis_scripts``): none in it."""
    if ":" in kind:
        raise ValueError(f"a store kind is a name without ':' such as 'response', not "
                         f"{kind!r}")
