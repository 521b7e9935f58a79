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

from collections.abc import Callable
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

__all__ = ["KINDS", "Clock", "StoreBackend", "StoreError", "check_args", "counted", "shown"]

Clock = Callable[[], float]  # seconds (wall clock: an expiry survives a restart)

# the kinds in use or planned
KINDS = ("response", "meta", "input_items", "tombstone", "idempotency", "conversation",
         "conversation_item", "event", "counter", "admin", "journal")


class StoreError(Exception):
    """The storage a ``store`` setting names cannot be used (a Redis nobody answers at, the
    ``redis`` package missing); the message says what to do."""


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


def check_args(kind: str, *, limit: int = 0, ttl: float | None = None) -> None:
    """The arguments every backend refuses alike."""
    if not kind:
        raise ValueError("a store kind is a non-empty name such as 'response'")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"a page limit is a whole number >= 0, not {limit!r}")
    if ttl is not None and not ttl > 0:
        raise ValueError(f"a ttl is a number of seconds > 0, not {ttl!r}")


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


def shown(spec: str) -> str:
    """A ``store`` setting fit to print: a URL's password (if any) replaced by ``***``."""
    parts = urlsplit(spec)
    if not parts.netloc or parts.password is None:
        return spec
    user = f"{parts.username}:" if parts.username else ":"
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}***@{host}"))
