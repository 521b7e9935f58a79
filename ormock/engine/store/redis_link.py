"""How the Redis backend talks to Redis: each thread keeps one connection of the pool and runs a
script a call on it (``EVALSHA``), through the connection's public methods.

Why not ``redis.Redis``'s own path for a script (``Script.__call__`` -> ``execute_command``): it
takes a connection from the pool and gives it back on every call, asks the socket each time
whether it holds stray data, and wraps the call in its retry loop and observability hooks; for a
store that makes one small call a request, that was more of the caller's CPU than Redis spent
running the script (``bench/README.md``, "Past findings that explain the design"). Here a
thread takes a connection the first time it calls and keeps it (a thread that ends gives it
back), and a call is ``send_packed_command`` then ``read_response``. Everything else stays
``redis``'s own: the URL's auth, TLS and unix sockets, RESP parsing (hiredis's when installed),
the connection's health check (a connection idle past ``health_check_interval`` is PINGed before
it is used), and the errors (a lost connection is disconnected and raised as ``redis``'s
``ConnectionError`` or ``TimeoutError``, an error answer as its ``ResponseError``).

A write whose answer nobody waits for (``send(..., wait=False)``, the store's ``put_nowait``) is
sent and not read: Redis runs it as it arrives, and the thread reads its answer before its next
call on the connection, so that call sees the write done. An error answer of such a write is
logged, not raised into an unrelated later call; a script Redis no longer knows (restarted,
``SCRIPT FLUSH``) is loaded and the write run again then.

A call Redis cannot take (the connection lost again when sent once more, an answer that says
Redis is out of memory, read-only, still loading or refuses the password) raises the store's
``StoreUnavailable``, its message naming the store as printed (no password): not a bug, a 503.
A call is sent once more only when Redis cannot have run it (the connection was lost before the
whole call was written, or Redis did not know the script), or when running it twice does what
running it once did (``AGAIN``: a read, a write of the same values). A count, a claim, a delete
or a log append whose answer was lost after it was sent may have been made: it is not sent again
(a step counter would count twice, a claim won would read as lost) but raised; and so that a
connection Redis closed since its last call (a restart) does not cost such a call a 503, the
connection is first asked whether Redis hung up on it (``can_read``) and made again if so.

After a fork, the child never uses a connection its parent made: a thread's connection is kept
with the process id it was made in, and taken anew from the pool (which resets itself in a
forked child) when that id is not the process's.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, cast

import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import (
    NoPermissionError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    ResponseError,
)
from redis.exceptions import TimeoutError as RedisTimeoutError

from ormock.engine.store import redis_scripts
from ormock.engine.store.base import StoreUnavailable

__all__ = ["AGAIN", "Args", "Link"]

log = logging.getLogger("ormock.store.redis")

Args = Sequence[str | bytes | int]

# hiredis's public packer, when installed: the same bytes as ``Connection.pack_command`` for a
# script's arguments (str, bytes, int; tests/test_store_redis.py checks it), without that
# method's Python pass over each of them (a create's write has ~20)
_pack: Callable[[tuple[Any, ...]], bytes] | None
try:
    import hiredis
    _pack = cast("Callable[[tuple[Any, ...]], bytes]", hiredis.pack_command)
except ImportError:  # the connection's own packer
    _pack = None
_LOST = (RedisConnectionError, RedisTimeoutError)  # (a refused password, Redis loading too)
_REFUSED = (OutOfMemoryError, ReadOnlyError, NoPermissionError)  # Redis says no to any call now
# the scripts whose second run does what the first did: sent once more when their answer was
# lost on the way back (module docstring)
AGAIN = frozenset({"GET", "LIST", "LOG_READ", "PUT", "PUT_MANY", "CLEAR"})


class _Unanswered(Exception):
    """The connection was lost after a call was sent whole: Redis may have run it."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


# this process's id, kept up to date by a fork hook rather than asked on every call (a system
# call): a connection made before a fork is never used by the child (module docstring)
_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


class _Own:
    """One thread's connection and the writes it sent whose answers it has not read yet."""

    __slots__ = ("conn", "pending", "pid", "pool")

    def __init__(self, pool: redis.ConnectionPool) -> None:
        self.pool, self.pid = pool, _pid
        self.conn: Any = pool.get_connection()
        self.pending: list[tuple[str, Args]] = []

    def __del__(self) -> None:  # the thread ended: its connection goes back to the pool
        try:
            if self.pending:
                self.conn.disconnect()  # unread answers: not fit for another thread
            self.pool.release(self.conn)
        except Exception:  # at interpreter exit the pool may be gone
            pass


class Link:
    """The scripts of ``redis_scripts`` run on a pool, from any number of threads."""

    def __init__(self, pool: redis.ConnectionPool, shown: str) -> None:
        self.pool, self.shown = pool, shown  # the store's URL as printed (``base.shown``)
        self.sources = {name: getattr(redis_scripts, name) for name in redis_scripts.__all__}
        self.shas = {name: hashlib.sha1(source.encode()).hexdigest()  # what EVALSHA names
                     for name, source in self.sources.items()}
        self._local = threading.local()

    def load(self, client: redis.Redis) -> None:
        """Load every script into Redis (one round trip), so that a write nobody waits for
        is not refused for a script Redis does not know yet."""
        with client.pipeline(transaction=False) as pipe:
            for source in self.sources.values():
                pipe.script_load(source)
            pipe.execute()

    def _own(self) -> _Own:
        own: _Own | None = getattr(self._local, "own", None)
        if own is None or own.pid != _pid:
            own = self._local.own = _Own(self.pool)
        return own

    def send(self, script: str, args: Args, *, wait: bool = True) -> Any:
        """Run ``script`` with ``args`` (its ARGV; it takes no KEYS): its answer, or None at
        once when not ``wait``. A connection lost on the way is made again and the call sent
        once more (as ``redis.Redis`` retries); a second loss raises ``StoreUnavailable``."""
        try:
            own = self._own()  # (a thread's first call connects)
            if own.pending:
                self._settle(own)
            packed = (own.conn.pack_command("EVALSHA", self.shas[script], 0, *args)
                      if _pack is None else [_pack(("EVALSHA", self.shas[script], 0, *args))])
            again = script in AGAIN
            if not again:
                _hung_up(own.conn)
            try:
                return self._once(own, script, packed, args, wait)
            except NoScriptError:  # a Redis restarted, or SCRIPT FLUSH: nothing was run
                self._load(own.conn, script)
            except _Unanswered as lost:
                if not again:
                    raise self.unavailable(lost.error, "lost the connection before answering a "
                                           "call it may have made (not sent again: it would be "
                                           "made twice)") from lost.error
                own.conn.disconnect()
            except _LOST:  # not sent whole: Redis ran nothing
                own.conn.disconnect()
            return self._once(own, script, packed, args, wait)
        except _Unanswered as lost:
            raise self.unavailable(lost.error) from lost.error
        except _LOST as error:
            raise self.unavailable(error) from error
        except _REFUSED as error:
            raise self.unavailable(error, "refused the call") from error

    def unavailable(self, error: Exception, what: str = "") -> StoreUnavailable:
        """The ``StoreUnavailable`` of ``error`` (a lost connection, unless ``what`` Redis
        did), logged: one line, no traceback."""
        text = (f"Redis at {self.shown} {what} ({error})" if what
                else f"cannot reach Redis at {self.shown} ({error})")
        log.warning("the store is unavailable: %s", text)
        return StoreUnavailable(text)

    @staticmethod
    def _once(own: _Own, script: str, packed: Any, args: Args, wait: bool) -> Any:
        conn = own.conn
        conn.send_packed_command(packed)  # (a connection not connected connects first)
        if wait:
            try:
                return conn.read_response()
            except _LOST as error:
                raise _Unanswered(error) from error
        own.pending.append((script, args))
        return None

    def _load(self, conn: Any, script: str) -> None:
        conn.send_command("SCRIPT", "LOAD", self.sources[script])
        conn.read_response()

    def _settle(self, own: _Own) -> None:
        """Read the answers of the writes this thread sent without waiting (all of them
        first: the connection is then free to run again what Redis did not know)."""
        pending, own.pending = own.pending, []
        again: list[tuple[str, Args]] = []
        conn = own.conn
        for index, (script, args) in enumerate(pending):
            try:
                conn.read_response()
            except NoScriptError:
                again.append((script, args))
            except ResponseError as error:
                log.warning("a store write to Redis failed: %s", error)
            except _LOST as error:
                own.conn.disconnect()
                log.warning("the connection to Redis was lost with %d store write(s) "
                            "unconfirmed: %s", len(pending) - index, error)
                return
        for script, args in again:
            try:
                self.send(script, args)
            except ResponseError as error:
                log.warning("a store write to Redis failed: %s", error)
            except StoreUnavailable:  # logged; the call that settles goes on (and meets it)
                return


def _hung_up(conn: Any) -> None:
    """Disconnect ``conn`` when Redis closed it since its last answer (``can_read``: the end of
    the stream, or bytes nobody asked for), so that the call about to be sent is sent on a new
    connection rather than lost on that one."""
    if not getattr(conn, "is_connected", True):  # (none in older redis: ``can_read`` connects)
        return
    try:
        stray = conn.can_read(0)
    except _LOST:  # closed by Redis
        stray = True
    if stray:
        conn.disconnect()
