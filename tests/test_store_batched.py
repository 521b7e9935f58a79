"""``ormock.engine.store.batched``: while a ``Held`` is active, a ``Holding`` backend keeps puts
back (reads of them see them), sends them before any other write (so the store sees the writes in
order), and makes them in one guarded ``put_many``; a failing guard writes nothing and raises
``Stale``; outside the context, or in another thread, every call goes straight through."""

from __future__ import annotations

import threading

import pytest

from ormock.engine.store import MemoryBackend
from ormock.engine.store.batched import Held, Holding, Stale, holding


def _pair() -> tuple[MemoryBackend, Holding]:
    inner = MemoryBackend()
    inner.put("admin", "stamp", b"s1")
    return inner, Holding(inner)


def test_puts_are_held_read_back_and_made_at_the_commit() -> None:
    inner, backend = _pair()
    held = Held(backend, ("admin", "stamp", b"s1"))
    with holding(held):
        backend.put("response", "r1", b"one")
        backend.put_nowait("journal", "j1", b"entry")
        assert backend.get("response", "r1") == b"one"  # this request reads what it holds
        assert inner.get("response", "r1") is None  # nothing sent yet
        seen: list[bytes | None] = []
        other = threading.Thread(target=lambda: seen.append(backend.get("response", "r1")))
        other.start()
        other.join()
        assert seen == [None]  # another thread (another context) holds nothing
        held.commit()
        assert not held.writes and held.verified
    assert inner.get("response", "r1") == b"one" and inner.get("journal", "j1") == b"entry"
    backend.put("response", "r2", b"two")  # no Held active: straight through
    assert inner.get("response", "r2") == b"two"


def test_another_write_sends_what_is_held_first() -> None:
    inner, backend = _pair()
    held = Held(backend, ("admin", "stamp", b"s1"))
    with holding(held):
        backend.put("counter", "c", b"5")
        assert backend.incr("counter", "c") == 6  # the held value was made first
        assert held.verified  # that first batch checked the stamp
        backend.put("response", "r1", b"one")  # held again, made unguarded
        assert [k for k, _ in backend.list("response")] == ["r1"]  # a page holds it
    assert inner.get("counter", "c") == b"6"


def test_a_stale_guard_writes_nothing() -> None:
    inner, backend = _pair()
    held = Held(backend, ("admin", "stamp", b"s0"))  # the stamp moved on since
    with holding(held):
        backend.put("response", "r1", b"one")
        with pytest.raises(Stale):
            backend.incr("counter", "c")  # checked before the first write that is made
        assert inner.get("counter", "c") is None
        backend.put("response", "r1", b"one")
        with pytest.raises(Stale):
            held.commit()
    assert inner.list("response") == [] and inner.get("counter", "c") is None


def test_an_exception_in_the_block_leaves_the_context_clean() -> None:
    inner, backend = _pair()
    held = Held(backend, None)
    def fails() -> None:
        with holding(held):
            backend.put("response", "r1", b"one")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        fails()
    backend.put("response", "r2", b"two")  # the Held is no longer active
    assert inner.get("response", "r2") == b"two"
    assert inner.get("response", "r1") is None  # the route commits before it sends: here
    held.commit()  # nothing was sent, and what it held is still there to make
    assert inner.get("response", "r1") == b"one"
    with pytest.raises(TypeError, match="bytes"), holding(Held(backend, None)):
        backend.put("response", "r3", "text")  # type: ignore[arg-type]  # refused at once


@pytest.mark.parametrize(("kind", "value", "ttl", "error"), [
    ("", b"v", None, "non-empty"), ("response", b"v", 0, "ttl"), ("response", b"v", -1.5, "ttl"),
    ("response", bytearray(b"v"), None, "bytes"),
])
def test_a_held_write_is_refused_as_put_refuses_it(kind: str, value: bytes, ttl: float | None,
                                                   error: str) -> None:
    """Checked once, as it is held (the commit's ``put_many`` is told so): a bad one is refused
    at the ``put``, as the backend's own ``put`` refuses it, and nothing of it is held."""
    inner, backend = _pair()
    with pytest.raises((ValueError, TypeError), match=error):
        inner.put(kind, "k", value, ttl)
    held = Held(backend, None)
    with holding(held):
        with pytest.raises((ValueError, TypeError), match=error):
            backend.put(kind, "k", value, ttl)
        backend.put("response", "ok", b"fine", 60.0)
    assert list(held.writes) == [("response", "ok")]
    held.commit()
    assert inner.get("response", "ok") == b"fine"
