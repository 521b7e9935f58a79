"""Everything stateful goes through one small protocol (``base.StoreBackend``: get, put,
compare-and-set, cursor pages, expiry) with three backends: in memory (``memory``, the
default), one SQLite file across restarts (``sqlite``) and Redis, shared by every worker and
replica on it (``redis_backend``; the ``redis`` package, ``pip install 'ormock[redis]'``).
``ResponseStore`` (``responses``) is the typed view of stored responses over a backend;
``open_backend`` makes the one a ``store`` setting names."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from ormock.engine.limits import Limits
from ormock.engine.store.base import StoreBackend, StoreError, StoreUnavailable, shown
from ormock.engine.store.memory import MemoryBackend
from ormock.engine.store.responses import ResponseStore, Stored
from ormock.engine.store.sqlite import SqliteBackend

__all__ = ["MemoryBackend", "ResponseStore", "SqliteBackend", "StoreBackend", "StoreError",
           "StoreUnavailable", "Stored", "check_store", "open_backend"]

_WRITE = "write 'memory' (the default: each namespace in memory), 'sqlite:PATH' (one file "\
    "that survives a restart, e.g. 'sqlite:ormock.db') or a Redis URL shared by every worker "\
    "and replica ('redis://HOST:PORT/DB', 'rediss://...', 'unix:///PATH/redis.sock?db=N')"
_REDIS = ("redis", "rediss", "unix")


def check_store(spec: object) -> str:
    """A ``store`` setting as written: ``"memory"``, ``"sqlite:PATH"`` or a Redis URL;
    anything else is a ``ValueError`` that says what to write."""
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
    if scheme in _REDIS and path.startswith("//"):
        return _check_redis(spec)
    raise ValueError(f"unknown store {spec!r}: {_WRITE}")


def _check_redis(spec: str) -> str:
    """A Redis URL as the ``redis`` package reads it, with a database number it can use."""
    parts, printed = urlsplit(spec), shown(spec)
    try:
        parts.port  # noqa: B018 (a port that is no number raises)
    except ValueError:
        raise ValueError(f"store {printed!r} has no valid port: write 'redis://HOST:PORT/DB', "
                         f"e.g. 'redis://127.0.0.1:6379/0'") from None
    if parts.scheme == "unix":
        if not parts.path:
            raise ValueError(f"store {printed!r} names no socket: write "
                             f"'unix:///PATH/redis.sock?db=N', e.g. "
                             f"'unix:///run/redis/redis-server.sock?db=0'")
        db = parse_qs(parts.query).get("db", ["0"])[0]
    else:
        if not parts.hostname:
            raise ValueError(f"store {printed!r} names no host: write 'redis://HOST:PORT/DB', "
                             f"e.g. 'redis://127.0.0.1:6379/0'")
        db = parse_qs(parts.query).get("db", [parts.path.strip("/") or "0"])[0]
    if not db.isdigit():
        raise ValueError(f"store {printed!r}: the database is a number such as 0, not {db!r} "
                         f"(write '.../0' or '?db=0')")
    return spec


def open_backend(spec: str, limits: Limits, namespace: str = "") -> StoreBackend:
    """The backend a ``store`` setting names, capped by ``limits`` (``store_responses``,
    ``store_bytes``: per namespace and kind, the oldest go first)."""
    spec = check_store(spec)
    keys, size = limits.store_responses, limits.store_bytes
    if spec == "memory":
        return MemoryBackend(namespace=namespace, max_keys=keys, max_bytes=size)
    if spec.partition(":")[0] in _REDIS:
        try:
            from ormock.engine.store.redis_backend import RedisBackend
        except ImportError as error:
            raise StoreError(f"the store {shown(spec)} needs the redis package "
                             f"({error}): pip install 'ormock[redis]'") from None
        return RedisBackend(spec, namespace=namespace, max_keys=keys, max_bytes=size)
    return SqliteBackend(spec.partition(":")[2], namespace=namespace, max_keys=keys,
                         max_bytes=size)
