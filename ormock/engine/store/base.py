"""The store protocol: what every backend implements, so that everything stateful (stored
responses, input items, tombstones, idempotency records, ...) reads and writes bytes the same
way whether they live in memory, in an SQLite file or in Redis.

A backend is a view on one namespace's keyspace (``namespace``): ``scoped(name)`` is a view on
another namespace of the same storage (a pytest namespace stays isolated on a shared file), and
``clear()`` drops the keys of its own namespace only. Within a namespace, keys live under a
``kind`` ("response", "input_items", "tombstone", "idempotency", ...). Each kind keeps its keys in
write order: every successful write (``put``, a ``compare_and_set`` that wins) makes the key the
newest. Past a backend's caps (keys, bytes of values, per namespace and kind) the oldest go; the
newest always stays. A key written with ``ttl`` seconds is gone, for ``get``, ``list`` and
``compare_and_set``, once they have passed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable
from urllib.parse import unquote_plus, urlsplit, urlunsplit

__all__ = ["KINDS", "LOG_END", "AppendsToLogs", "Checked", "Clock", "Guard", "LogEntries",
           "LogEntry", "StoreBackend", "StoreError", "StoreUnavailable", "Write", "check_args",
           "check_log", "check_writes", "counted", "shown"]

Clock = Callable[[], float]  # seconds (wall clock: an expiry survives a restart)
LogEntry = tuple[int, bytes]  # an event log's entry: its number, its value
LogEntries = list[LogEntry]  # (a name of its own: inside a backend, ``list`` is its method)
LOG_END = 2**63 - 1  # the number of a closed log's last entry (``log_close``)
Write = tuple[str, str, bytes, "float | None"]  # one write of ``put_many``: kind, key, value, ttl
# ``put_many``'s condition: (kind, key, the value that key must hold; None: absent or expired)
Guard = tuple[str, str, "bytes | None"]

# the kinds in use or planned
KINDS = ("response", "meta", "input_items", "tombstone", "idempotency", "conversation",
         "conversation_item", "lease", "counter", "admin", "journal")


class StoreError(Exception):
    """The storage a ``store`` setting names cannot be used (a Redis nobody answers at, the
    ``redis`` package missing); the message says what to do."""


class StoreUnavailable(StoreError):
    """The store cannot take a call now (a Redis gone or restarted with the connection lost
    twice, out of memory, asking for a password it was not given): not a bug of ormock's, so a
    request that meets it is answered 503 ``store_unavailable`` with this message, which names
    the store as ``shown`` prints it."""


@runtime_checkable
class StoreBackend(Protocol):
    """One namespace's keyspace in a key-value store with compare-and-set, cursor pages and
    expiry. Every method is safe to call from several threads at once."""

    namespace: str

    def get(self, kind: str, key: str) -> bytes | None:
        """The value of ``key``, or None when absent or expired."""
        ...

    def put(self, kind: str, key: str, value: bytes, ttl: float | None = None) -> None:
        """Write ``value`` (replacing any), gone after ``ttl`` seconds when given."""
        ...

    def put_nowait(self, kind: str, key: str, value: bytes, ttl: float | None = None) -> None:
        """``put``, without waiting for the storage to confirm it where a round trip would
        be waited for (Redis: sent, its answer read before this thread's next call, so that
        call and every later one see it; an error is logged then, not raised). A write of
        no consequence to the caller: the journal's entry of a reply already sent. Memory
        and SQLite write at once (this default)."""
        self.put(kind, key, value, ttl)

    def put_many(self, writes: Sequence[Write], guard: Guard | None = None) -> bool:
        """Make every write (kind, key, value, ttl: each as ``put`` makes it, in order, with
        the same caps and expiry) atomically, in one call (one transaction on SQLite, one
        script on Redis: one round trip), only if ``guard`` holds: its key's current value is
        its expected one (None: absent or expired). Whether they were made (nothing is
        written when the guard fails); no writes and a guard: a check of it alone."""
        ...

    def compare_and_set(self, kind: str, key: str, expected: bytes | None, value: bytes,
                        ttl: float | None = None) -> bool:
        """Atomically write ``value`` if the current value is ``expected`` (None: only if the
        key is absent or expired); whether it was written. Of any number of racing callers
        with the same ``expected``, exactly one wins."""
        ...

    def incr(self, kind: str, key: str, amount: int = 1) -> int:
        """Atomically add ``amount`` to the counter ``key`` (absent: 0) and answer the new
        value; the value is stored as decimal ASCII (``get`` reads it). Of any number of
        racing callers, each gets a different value. A value that is no whole number raises
        ``ValueError``."""
        ...

    def delete(self, kind: str, key: str) -> bool:
        """Remove ``key``; whether it was there (and not expired)."""
        ...

    def list(self, kind: str, prefix: str = "", after: str | None = None, limit: int = 100,
             reverse: bool = False) -> list[tuple[str, bytes]]:
        """A page of at most ``limit`` (key, value) pairs whose key starts with ``prefix``, in
        write order (``reverse``: newest first), starting after the key ``after`` in that order.
        An ``after`` that names no live key gives an empty page."""
        ...

    def scoped(self, namespace: str) -> StoreBackend:
        """A view on another namespace of the same storage (the same caps and clock)."""
        ...

    def clear(self) -> None:
        """Remove every key of this namespace, of every kind (``Engine.reset``)."""
        ...

    def close(self) -> None:
        """Release the storage (a file's connection); the views on it are closed too."""
        ...

    # -- event logs ----------------------------------------------------------------------------
    # An append-only log of entries, each a whole number and bytes, in the order of their
    # numbers (each above the one before): a background response's events. A log belongs to
    # the namespace (``clear`` drops it); past the caps (logs, bytes of their entries, per
    # namespace), the logs appended to least recently go whole. ``log_close`` appends the last
    # entry (numbered ``LOG_END``): from then on nothing more is appended, and every waiter
    # wakes, so a close is a flag any process on the storage sees.

    def log_append(self, log: str, number: int, value: bytes, ttl: float | None = None
                   ) -> bool:
        """Append ``value`` as entry ``number`` (above the log's last one: else a
        ``ValueError``); the first append makes the log. False (nothing appended) once the
        log is closed. ``ttl``: the log is gone ``ttl`` seconds after its last append."""
        ...

    def log_close(self, log: str, value: bytes = b"", ttl: float | None = None) -> bool:
        """Append the last entry (``LOG_END``, holding ``value``) unless the log is closed
        already (a log that does not exist yet is made closed): whether this call closed it."""
        ...

    def log_read(self, log: str, start: int = 0, limit: int = 100) -> LogEntries:
        """At most ``limit`` entries of the log numbered ``start`` or above, in order (none for
        a log that does not exist)."""
        ...

    def log_wait(self, log: str, start: int, timeout: float, limit: int = 100
                 ) -> LogEntries:
        """``log_read``, but when there is no such entry yet, wait at most ``timeout`` seconds
        for one to be appended (blocking the calling thread: from an event loop, call it in
        a worker thread)."""
        ...


def check_args(kind: str, *, limit: int = 0, ttl: float | None = None) -> None:
    """The arguments every backend refuses alike."""
    if not kind:
        raise ValueError("a store kind is a non-empty name such as 'response'")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"a page limit is a whole number >= 0, not {limit!r}")
    if ttl is not None and not ttl > 0:
        raise ValueError(f"a ttl is a number of seconds > 0, not {ttl!r}")


class Checked(tuple[Write, ...]):
    """Writes for ``put_many`` whose arguments were checked already, each as it was made (a
    request's held writes: ``ormock.engine.store.batched``): ``check_writes`` passes over them."""

    __slots__ = ()


def check_writes(writes: Sequence[Write], guard: Guard | None) -> None:
    """The arguments of ``put_many`` every backend refuses alike (before writing any); writes
    ``Checked`` already are not looked at again."""
    if type(writes) is not Checked:
        for kind, _, value, ttl in writes:
            check_args(kind, ttl=ttl)
            if not isinstance(value, bytes):
                raise TypeError(f"a stored value is bytes, not {type(value).__name__}")
    if guard is not None and not guard[0]:
        check_args(guard[0])


def counted(found: bytes | None, key: str, amount: int) -> int:
    """The counter after ``incr``: ``found`` (None: 0) plus ``amount`` (every backend alike)."""
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise ValueError(f"a counter moves by a whole number, not {amount!r}")
    try:
        before = int(found) if found is not None else 0
    except ValueError:
        raise ValueError(f"the store key {key!r} holds no counter (not a whole number)"
                         ) from None
    return before + amount


class AppendsToLogs:
    """``log_append`` and ``log_close`` for a backend, over its own ``_log_add`` (which writes
    an entry the arguments of which are checked already)."""

    def _log_add(self, log: str, number: int, value: bytes, ttl: float | None) -> bool:
        raise NotImplementedError

    def log_append(self, log: str, number: int, value: bytes, ttl: float | None = None
                   ) -> bool:
        check_log(log, number, ttl=ttl)
        return self._log_add(log, number, value, ttl)

    def log_close(self, log: str, value: bytes = b"", ttl: float | None = None) -> bool:
        check_log(log, ttl=ttl)
        return self._log_add(log, LOG_END, value, ttl)


def check_log(log: str, number: int | None = None, *, limit: int = 0,
              ttl: float | None = None) -> None:
    """The arguments of the event-log methods every backend refuses alike."""
    check_args("log", limit=limit, ttl=ttl)
    if not log:
        raise ValueError("a log name is a non-empty string such as a response id")
    if number is not None and (isinstance(number, bool) or not isinstance(number, int)
                               or not 0 <= number < LOG_END):
        raise ValueError(f"a log entry number is a whole number from 0 to {LOG_END - 1}, "
                         f"not {number!r}")


def shown(spec: str) -> str:
    """A ``store`` setting fit to print: a URL's password (if any: before its host, or as the
    ``password`` of its query, where a unix socket's URL gives it) replaced by ``***``."""
    parts = urlsplit(spec)
    if parts.netloc and parts.password is not None:
        user = f"{parts.username}:" if parts.username else ":"
        host = parts.netloc.rpartition("@")[2]
        spec = urlunsplit(parts._replace(netloc=f"{user}***@{host}"))
    base, mark, query = spec.partition("?")
    if not mark:
        return spec
    query, hash_, fragment = query.partition("#")
    pairs = []
    for pair in query.split("&"):  # as the redis package reads it (``parse_qs``)
        name, equals, _ = pair.partition("=")
        pairs.append(f"{name}=***" if equals and unquote_plus(name) == "password" else pair)
    return f"{base}?{'&'.join(pairs)}{hash_}{fragment}"
