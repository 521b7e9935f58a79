"""Writes held back while a request is answered, and sent at once in one guarded call
(``StoreBackend.put_many``): a plain create on a shared store makes one waited round trip.

``Holding`` is the backend of an engine on a shared store (``Engine(shared=True)``): a view on
the real one that, while a ``Held`` of its own is active in the current context (``holding``:
the HTTP create route sets one per request, from before the engine answers until just before
the first byte goes out), keeps every ``put`` (and ``put_nowait``) in the ``Held`` instead of
sending it; a ``get`` of a held key reads the held value. Every other write (a count's ``incr``,
a claim's ``compare_and_set``, a delete, a log append, a ``list`` that must see the held ones)
first sends what is held, so the store sees the writes in the order they were made.

The guard: a ``Held`` made with one (the admin stamp this worker applied, ``attempt.hold``)
sends its first batch only if the stamp is still that value, in the same call. If it is not
(another process changed the admin state, reset or dropped the namespace since), nothing is
written and ``Stale`` is raised: the create route takes the change in and answers the request
again from the start (``ormock.server.create``). After its first batch a ``Held`` is verified: its
later batches go unguarded. Nothing held outlives its request: the route commits (or drops, on
``Stale``) before anything is sent, on every path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any

from ormock.engine.store.base import (
    Checked,
    Guard,
    LogEntries,
    StoreBackend,
    Write,
    check_args,
    check_writes,
)

__all__ = ["Held", "Holding", "Stale", "active", "holding"]


class Stale(Exception):
    """The admin state changed since this worker applied it (a guarded commit failed):
    nothing was written; take the change in (``Sync.pull``) and answer again. Internal: never
    an answer of its own."""


_HELD: ContextVar[Held | None] = ContextVar("ormock_held", default=None)


class Held:
    """The writes one request holds back, and the guard of its first commit."""

    __slots__ = ("after", "backend", "entry", "guard", "writes")

    def __init__(self, backend: Holding, guard: Guard | None) -> None:
        self.backend, self.guard = backend, guard
        self.writes: dict[tuple[str, str], Write] = {}  # in the order made (a rewrite: last)
        self.after: list[Callable[[], None]] = []  # run once the first commit is made
        self.entry: Any = None  # the attempt's journal entry (``ormock.engine.attempt``)

    @property
    def verified(self) -> bool:
        return self.guard is None

    def hold(self, kind: str, key: str, value: bytes, ttl: float | None) -> None:
        """Keep a write (refused here, as ``put`` would refuse it, and checked only here: the
        commit's ``put_many`` is told they are, ``Checked``)."""
        if not kind or type(value) is not bytes or (ttl is not None and not ttl > 0):
            check_writes(((kind, key, value, ttl),), None)  # the refusal (or a bytes subclass)
        writes = self.writes
        if (kind, key) in writes:  # a rewrite: the last in the order made
            del writes[kind, key]
        writes[kind, key] = (kind, key, value, ttl)

    def commit(self) -> None:
        """Send what is held in one call, guarded until verified; ``Stale`` when the guard
        fails (nothing written, the held writes dropped)."""
        writes = Checked(self.writes.values())
        self.writes.clear()
        guard = self.guard
        if guard is None:
            if writes:
                self.backend.inner.put_many(writes)
            return
        if not self.backend.inner.put_many(writes, guard):
            raise Stale
        self.guard = None
        if self.after:
            after, self.after = self.after, []
            for call in after:
                call()


class holding:  # lower case: used as the function it was, ``with holding(held):``
    """``held`` active in this context (None: nothing held) until the block ends. A class
    rather than a ``contextmanager`` generator, as every create enters it."""

    __slots__ = ("held", "reset")

    def __init__(self, held: Held | None) -> None:
        self.held = held
        self.reset: Token[Held | None] | None = None

    def __enter__(self) -> Held | None:
        self.reset = _HELD.set(self.held)
        return self.held

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.reset is not None:
            _HELD.reset(self.reset)


def active(backend: Holding) -> Held | None:
    """The ``Held`` of ``backend`` active in this context, if any."""
    held = _HELD.get()
    return held if held is not None and held.backend is backend else None


class Holding(StoreBackend):
    """A backend whose writes a ``Held`` may hold back (module docstring); with none active,
    every call goes straight to ``inner``. Never subclassed: ``type(backend) is Holding`` is
    the test of one, which every create on the memory store makes (``isinstance`` against a
    protocol's class runs Python code when false)."""

    def __init__(self, inner: StoreBackend) -> None:
        self.inner, self.namespace = inner, inner.namespace

    def _flush(self) -> None:
        held = active(self)
        if held is not None and (held.writes or held.guard is not None):
            held.commit()

    # -- reads ----------------------------------------------------------------------------------
    def get(self, kind: str, key: str) -> bytes | None:
        held = active(self)
        if held is not None and held.writes:
            found = held.writes.get((kind, key))
            if found is not None:
                return found[2]
        return self.inner.get(kind, key)

    def list(self, kind: str, prefix: str = "", after: str | None = None, limit: int = 100,
             reverse: bool = False) -> list[tuple[str, bytes]]:
        held = active(self)
        if held is not None and any(write[0] == kind for write in held.writes.values()):
            held.commit()  # a page must hold them
        return self.inner.list(kind, prefix, after, limit, reverse)

    def log_read(self, log: str, start: int = 0, limit: int = 100) -> LogEntries:
        return self.inner.log_read(log, start, limit)

    def log_wait(self, log: str, start: int, timeout: float, limit: int = 100
                 ) -> LogEntries:
        return self.inner.log_wait(log, start, timeout, limit)

    # -- writes held ----------------------------------------------------------------------------
    def put(self, kind: str, key: str, value: bytes, ttl: float | None = None) -> None:
        held = active(self)
        if held is None:
            self.inner.put(kind, key, value, ttl)
        else:
            held.hold(kind, key, value, ttl)

    def put_nowait(self, kind: str, key: str, value: bytes, ttl: float | None = None) -> None:
        held = active(self)
        if held is None:
            self.inner.put_nowait(kind, key, value, ttl)
        else:
            held.hold(kind, key, value, ttl)

    def put_many(self, writes: Sequence[Write], guard: Guard | None = None) -> bool:
        self._flush()
        return self.inner.put_many(writes, guard)

    # -- writes that send what is held first ----------------------------------------------------
    def compare_and_set(self, kind: str, key: str, expected: bytes | None, value: bytes,
                        ttl: float | None = None) -> bool:
        check_args(kind, ttl=ttl)
        self._flush()
        return self.inner.compare_and_set(kind, key, expected, value, ttl)

    def incr(self, kind: str, key: str, amount: int = 1) -> int:
        self._flush()
        return self.inner.incr(kind, key, amount)

    def delete(self, kind: str, key: str) -> bool:
        self._flush()
        return self.inner.delete(kind, key)

    def log_append(self, log: str, number: int, value: bytes, ttl: float | None = None
                   ) -> bool:
        self._flush()
        return self.inner.log_append(log, number, value, ttl)

    def log_close(self, log: str, value: bytes = b"", ttl: float | None = None) -> bool:
        self._flush()
        return self.inner.log_close(log, value, ttl)

    def clear(self) -> None:
        held = active(self)
        if held is not None:
            held.writes.clear()  # what the clear would drop anyway
        self._flush()
        self.inner.clear()

    # -- the storage ----------------------------------------------------------------------------
    def scoped(self, namespace: str) -> StoreBackend:
        return self.inner.scoped(namespace)

    def close(self) -> None:
        self.inner.close()
