"""Everything stateful goes through one small protocol (``base.StoreBackend``: get, put,
compare-and-set, cursor pages, expiry) with two backends: in memory (``memory_backend``, the
default) and one SQLite file across restarts (``sqlite``). ``ResponseStore`` (``memory``) is the
typed view of stored responses over a backend; ``open_backend`` makes the one a ``store``
setting names."""

from __future__ import annotations

from ormock.engine.limits import Limits
from ormock.engine.store.base import StoreBackend
from ormock.engine.store.memory import ResponseStore, Stored, check_call_outputs
from ormock.engine.store.memory_backend import MemoryBackend
from ormock.engine.store.sqlite import SqliteBackend

__all__ = ["MemoryBackend", "ResponseStore", "SqliteBackend", "StoreBackend", "Stored",
           "check_call_outputs", "check_store", "open_backend"]

_WRITE = "write 'memory' (the default: each namespace in memory) or 'sqlite:PATH' (one file "\
    "that survives a restart, e.g. 'sqlite:ormock.db')"


def check_store(spec: object) -> str:
    """A ``store`` setting as written: ``"memory"`` or ``"sqlite:PATH"``; anything else is a
    ``ValueError`` that says what to write."""
    if not isinstance(spec, str):
        raise ValueError(f"store must be a string: {_WRITE}; not {spec!r}")
    if spec == "memory":
        return spec
    scheme, colon, path = spec.partition(":")
    if scheme == "sqlite" and colon and path.strip():
        return spec
    if scheme == "sqlite":
        raise ValueError(f"store {spec!r} names no file: write 'sqlite:PATH', e.g. "
                         f"'sqlite:ormock.db'")
    raise ValueError(f"unknown store {spec!r}: {_WRITE}")


def open_backend(spec: str, limits: Limits, namespace: str = "") -> StoreBackend:
    """The backend a ``store`` setting names, capped by ``limits`` (``store_responses``,
    ``store_bytes``: per namespace and kind, the oldest go first)."""
    spec = check_store(spec)
    keys, size = limits.store_responses, limits.store_bytes
    if spec == "memory":
        return MemoryBackend(namespace=namespace, max_keys=keys, max_bytes=size)
    return SqliteBackend(spec.partition(":")[2], namespace=namespace, max_keys=keys,
                         max_bytes=size)
