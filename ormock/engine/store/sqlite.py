"""The SQLite store backend: one file that survives a restart (``--store sqlite:PATH``).

One table, ``(namespace, kind, key, seq, size, value, expires_at)``: ``seq`` orders a kind's keys
by write (a write takes the next number of its namespace and kind), ``size`` is the length of
``value`` so that the caps are counted from an index without reading a value. WAL mode, every
write one ``BEGIN IMMEDIATE`` transaction (so several processes on one file stay consistent), one
connection shared by the threads of a process under a lock.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from os import PathLike
from pathlib import Path

from ormock.engine.store.base import (
    LOG_END,
    AppendsToLogs,
    Clock,
    Guard,
    LogEntries,
    StoreBackend,
    Write,
    check_args,
    check_log,
    check_writes,
    counted,
)

__all__ = ["SqliteBackend"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ormock_store (
    namespace TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    size INTEGER NOT NULL,
    value BLOB NOT NULL,
    expires_at REAL,
    PRIMARY KEY (namespace, kind, key)
);
CREATE INDEX IF NOT EXISTS ormock_store_order ON ormock_store (namespace, kind, seq, size);
CREATE INDEX IF NOT EXISTS ormock_store_expiry ON ormock_store (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS ormock_log_head (
    namespace TEXT NOT NULL,
    log TEXT NOT NULL,
    seq INTEGER NOT NULL,
    size INTEGER NOT NULL,
    expires_at REAL,
    PRIMARY KEY (namespace, log)
);
CREATE TABLE IF NOT EXISTS ormock_log (
    namespace TEXT NOT NULL,
    log TEXT NOT NULL,
    number INTEGER NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (namespace, log, number)
);
"""
LOG_POLL = 0.05  # seconds between reads of a log that ``log_wait`` waits on
_LIVE = "(expires_at IS NULL OR expires_at > ?)"


class _Database:
    """The connection a backend and its ``scoped`` views share."""

    def __init__(self, path: Path, max_keys: int, max_bytes: int, clock: Clock) -> None:
        self.path, self.max_keys, self.max_bytes, self.clock = path, max_keys, max_bytes, clock
        self.lock = threading.Lock()
        self.connection = sqlite3.connect(path, timeout=10, isolation_level=None,
                                          check_same_thread=False)
        self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.execute("PRAGMA synchronous=NORMAL")
        self.connection.executescript(_SCHEMA)
        self.closed = False


class SqliteBackend(AppendsToLogs, StoreBackend):
    """``StoreBackend`` in one SQLite file (made if need be)."""

    def __init__(self, path: str | PathLike[str], *, max_keys: int = 2000,
                 max_bytes: int = 128 * 1024 * 1024, clock: Clock = time.time,
                 namespace: str = "", _shared: _Database | None = None) -> None:
        self.namespace = namespace
        self._db = _shared or _Database(Path(path), max_keys, max_bytes, clock)
        self.path = self._db.path

    def scoped(self, namespace: str) -> SqliteBackend:
        return SqliteBackend(self.path, namespace=namespace, _shared=self._db)

    # -- reads ----------------------------------------------------------------------------------
    def get(self, kind: str, key: str) -> bytes | None:
        check_args(kind)
        with self._db.lock:
            row = self._sql().execute(
                f"SELECT value FROM ormock_store WHERE namespace = ? AND kind = ? AND key = ? "
                f"AND {_LIVE}", (self.namespace, kind, key, self._db.clock())).fetchone()
        return None if row is None else bytes(row[0])

    def list(self, kind: str, prefix: str = "", after: str | None = None, limit: int = 100,
             reverse: bool = False) -> list[tuple[str, bytes]]:
        check_args(kind, limit=limit)
        now = self._db.clock()
        where = f"namespace = ? AND kind = ? AND {_LIVE} AND substr(key, 1, ?) = ?"
        args: list[object] = [self.namespace, kind, now, len(prefix), prefix]
        if after is not None:
            where += (f" AND seq {'<' if reverse else '>'} (SELECT seq FROM ormock_store WHERE "
                      f"namespace = ? AND kind = ? AND key = ? AND {_LIVE})")
            args += [self.namespace, kind, after, now]
        order = "DESC" if reverse else "ASC"
        with self._db.lock:
            rows = self._sql().execute(
                f"SELECT key, value FROM ormock_store WHERE {where} ORDER BY seq {order} "
                f"LIMIT ?", (*args, limit)).fetchall()
        return [(str(key), bytes(value)) for key, value in rows]

    # -- writes ---------------------------------------------------------------------------------
    def put(self, kind: str, key: str, value: bytes, ttl: float | None = None) -> None:
        check_args(kind, ttl=ttl)
        with self._db.lock, self._transaction() as sql:
            now = self._expire(sql)
            sql.execute(
                "INSERT OR REPLACE INTO ormock_store VALUES (?, ?, ?, ?, ?, ?, ?)",
                (self.namespace, kind, key, self._next_seq(sql, kind), len(_bytes(value)),
                 value, None if ttl is None else now + ttl))
            self._trim(sql, kind)

    def put_many(self, writes: Sequence[Write], guard: Guard | None = None) -> bool:
        check_writes(writes, guard)
        with self._db.lock, self._transaction() as sql:
            now = self._expire(sql)  # an expired guard's key is gone now
            if guard is not None:
                row = sql.execute(
                    "SELECT value FROM ormock_store WHERE namespace = ? AND kind = ? AND key = ?",
                    (self.namespace, guard[0], guard[1])).fetchone()
                if (None if row is None else bytes(row[0])) != guard[2]:
                    return False
            for kind, key, value, ttl in writes:
                sql.execute(
                    "INSERT OR REPLACE INTO ormock_store VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (self.namespace, kind, key, self._next_seq(sql, kind), len(value), value,
                     None if ttl is None else now + ttl))
                self._trim(sql, kind)
        return True

    def compare_and_set(self, kind: str, key: str, expected: bytes | None, value: bytes,
                        ttl: float | None = None) -> bool:
        check_args(kind, ttl=ttl)
        with self._db.lock, self._transaction() as sql:
            now = self._expire(sql)
            expires = None if ttl is None else now + ttl
            seq = self._next_seq(sql, kind)
            if expected is None:  # only if absent (an expired row was just removed)
                written = sql.execute(
                    "INSERT OR IGNORE INTO ormock_store VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (self.namespace, kind, key, seq, len(_bytes(value)), value, expires))
            else:
                written = sql.execute(
                    "UPDATE ormock_store SET value = ?, size = ?, seq = ?, expires_at = ? "
                    "WHERE namespace = ? AND kind = ? AND key = ? AND value = ?",
                    (_bytes(value), len(value), seq, expires, self.namespace, kind, key,
                     expected))
            won = written.rowcount == 1
            if won:
                self._trim(sql, kind)
        return won

    def incr(self, kind: str, key: str, amount: int = 1) -> int:
        check_args(kind)
        with self._db.lock, self._transaction() as sql:
            self._expire(sql)
            row = sql.execute(
                "SELECT value FROM ormock_store WHERE namespace = ? AND kind = ? AND key = ?",
                (self.namespace, kind, key)).fetchone()
            value = counted(None if row is None else bytes(row[0]), key, amount)
            text = str(value).encode()
            sql.execute("INSERT OR REPLACE INTO ormock_store VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (self.namespace, kind, key, self._next_seq(sql, kind), len(text), text,
                         None))
            self._trim(sql, kind)
        return value

    def delete(self, kind: str, key: str) -> bool:
        check_args(kind)
        with self._db.lock, self._transaction() as sql:
            self._expire(sql)
            gone = sql.execute(
                "DELETE FROM ormock_store WHERE namespace = ? AND kind = ? AND key = ?",
                (self.namespace, kind, key))
        return gone.rowcount == 1

    def clear(self) -> None:
        with self._db.lock, self._transaction() as sql:
            sql.execute("DELETE FROM ormock_store WHERE namespace = ?", (self.namespace,))
            sql.execute("DELETE FROM ormock_log_head WHERE namespace = ?", (self.namespace,))
            sql.execute("DELETE FROM ormock_log WHERE namespace = ?", (self.namespace,))

    def close(self) -> None:
        with self._db.lock:
            if not self._db.closed:
                self._db.closed = True
                self._db.connection.close()

    # -- under the lock -------------------------------------------------------------------------
    def _sql(self) -> sqlite3.Connection:
        if self._db.closed:
            raise RuntimeError(f"the store {self.path} is closed")
        return self._db.connection

    def _transaction(self) -> _Transaction:
        return _Transaction(self._sql())

    def _expire(self, sql: sqlite3.Connection) -> float:
        now = self._db.clock()
        sql.execute("DELETE FROM ormock_store WHERE expires_at IS NOT NULL AND expires_at <= ?",
                    (now,))
        return now

    def _next_seq(self, sql: sqlite3.Connection, kind: str) -> int:
        (last,) = sql.execute(
            "SELECT MAX(seq) FROM ormock_store WHERE namespace = ? AND kind = ?",
            (self.namespace, kind)).fetchone()
        return int(last or 0) + 1

    def _trim(self, sql: sqlite3.Connection, kind: str) -> None:
        """Past the caps, the oldest keys of the kind go (the newest stays)."""
        db = self._db
        count, total = sql.execute(
            "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM ormock_store "
            "WHERE namespace = ? AND kind = ?", (self.namespace, kind)).fetchone()
        if count <= db.max_keys and total <= db.max_bytes:
            return
        doomed: list[tuple[str, str, str]] = []
        for key, size in sql.execute(
                "SELECT key, size FROM ormock_store WHERE namespace = ? AND kind = ? "
                "ORDER BY seq", (self.namespace, kind)):
            if count <= 1 or (count <= db.max_keys and total <= db.max_bytes):
                break
            doomed.append((self.namespace, kind, key))
            count, total = count - 1, total - size
        sql.executemany("DELETE FROM ormock_store WHERE namespace = ? AND kind = ? AND key = ?",
                        doomed)

    # -- event logs (two tables: a head per log, for its order, size and expiry; its entries)
    def log_read(self, log: str, start: int = 0, limit: int = 100) -> LogEntries:
        check_log(log, limit=limit)
        with self._db.lock:
            rows = self._sql().execute(
                "SELECT number, value FROM ormock_log WHERE namespace = ? AND log = ? AND "
                "number >= ? AND EXISTS (SELECT 1 FROM ormock_log_head h WHERE h.namespace = ? "
                "AND h.log = ? AND (h.expires_at IS NULL OR h.expires_at > ?)) "
                "ORDER BY number LIMIT ?",
                (self.namespace, log, start, self.namespace, log, self._db.clock(),
                 limit)).fetchall()
        return [(int(number), bytes(value)) for number, value in rows]

    def log_wait(self, log: str, start: int, timeout: float, limit: int = 100
                 ) -> LogEntries:
        """Polls the file every ``LOG_POLL`` seconds (another process may append)."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            found = self.log_read(log, start, limit)
            left = deadline - time.monotonic()
            if found or left <= 0:
                return found
            time.sleep(min(LOG_POLL, left))

    def _log_add(self, log: str, number: int, value: bytes, ttl: float | None) -> bool:
        _bytes(value)
        ns = self.namespace
        with self._db.lock, self._transaction() as sql:
            now = self._db.clock()
            for (doomed,) in sql.execute(
                    "SELECT log FROM ormock_log_head WHERE namespace = ? AND expires_at IS NOT "
                    "NULL AND expires_at <= ?", (ns, now)).fetchall():
                self._log_drop(sql, doomed)
            (last,) = sql.execute("SELECT MAX(number) FROM ormock_log WHERE namespace = ? AND "
                                  "log = ?", (ns, log)).fetchone()
            if last == LOG_END:
                return False
            if last is not None and number <= last:
                raise ValueError(f"log {log!r}: entry {number} is not above the last one, "
                                 f"{last}")
            sql.execute("INSERT INTO ormock_log VALUES (?, ?, ?, ?)", (ns, log, number, value))
            (seq,) = sql.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM ormock_log_head WHERE "
                                 "namespace = ?", (ns,)).fetchone()
            sql.execute(
                "INSERT INTO ormock_log_head VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace, log) "
                "DO UPDATE SET seq = excluded.seq, size = size + excluded.size, "
                "expires_at = excluded.expires_at",
                (ns, log, seq, len(value), None if ttl is None else now + ttl))
            count, total = sql.execute(
                "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM ormock_log_head WHERE "
                "namespace = ?", (ns,)).fetchone()
            db = self._db
            if count > db.max_keys or total > db.max_bytes:
                for doomed, size in sql.execute(
                        "SELECT log, size FROM ormock_log_head WHERE namespace = ? ORDER BY seq",
                        (ns,)).fetchall():
                    if count <= 1 or (count <= db.max_keys and total <= db.max_bytes):
                        break
                    self._log_drop(sql, doomed)
                    count, total = count - 1, total - size
            return True

    def _log_drop(self, sql: sqlite3.Connection, log: str) -> None:
        sql.execute("DELETE FROM ormock_log_head WHERE namespace = ? AND log = ?",
                    (self.namespace, log))
        sql.execute("DELETE FROM ormock_log WHERE namespace = ? AND log = ?",
                    (self.namespace, log))


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an error): the write lock of the
    file is taken first, so a read-then-write inside cannot race another process."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def __enter__(self) -> sqlite3.Connection:
        self.connection.execute("BEGIN IMMEDIATE")
        return self.connection

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.connection.execute("COMMIT" if exc_type is None else "ROLLBACK")


def _bytes(value: bytes) -> bytes:
    if not isinstance(value, bytes):
        raise TypeError(f"a stored value is bytes, not {type(value).__name__}")
    return value
