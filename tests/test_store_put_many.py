"""``StoreBackend.put_many``: several writes at once, atomically, only if a guard holds, with the
caps and expiry of ``put``; the same on every backend (memory, SQLite, a real redis-server:
the ``make`` fixture of ``test_store_backends``)."""

from __future__ import annotations

import pytest
from stores import winners
from test_store_backends import FakeClock, Make, make

__all__ = ["make"]  # the fixture, imported for these tests


def test_the_writes_are_made_in_order_and_read_as_puts(make: Make) -> None:
    store = make()
    assert store.put_many([("response", "r1", b"one", None), ("journal", "j1", b"entry", None),
                           ("response", "r1", b"two", None)])
    assert store.get("response", "r1") == b"two"  # the later write of a key wins
    assert store.get("journal", "j1") == b"entry"
    store.put("response", "r2", b"after")
    assert [k for k, _ in store.list("response")] == ["r1", "r2"]  # in write order
    assert store.put_many([])  # nothing to write, no guard: made


def test_a_failing_guard_writes_nothing(make: Make) -> None:
    store = make()
    store.put("admin", "stamp", b"s1")
    writes = [("response", "r1", b"one", None), ("journal", "j1", b"entry", None)]
    assert not store.put_many(writes, ("admin", "stamp", b"s0"))  # another value
    assert not store.put_many(writes, ("admin", "stamp", None))  # present, not absent
    assert not store.put_many(writes, ("admin", "other", b"s1"))  # absent
    assert store.get("response", "r1") is None and store.get("journal", "j1") is None
    assert store.list("response") == [] and store.list("journal") == []
    assert store.put_many(writes, ("admin", "stamp", b"s1"))  # the value it holds: made
    assert store.get("response", "r1") == b"one" and store.get("journal", "j1") == b"entry"
    assert store.put_many([("response", "r2", b"x", None)], ("admin", "missing", None))
    assert store.get("response", "r2") == b"x"


def test_a_guard_alone_is_a_check(make: Make) -> None:
    store = make()
    store.put("admin", "stamp", b"s1")
    assert store.put_many([], ("admin", "stamp", b"s1"))
    assert not store.put_many([], ("admin", "stamp", b"s2"))
    assert store.get("admin", "stamp") == b"s1"  # the guard's key is not written


def test_an_expired_guard_key_is_absent(make: Make) -> None:
    clock = FakeClock()
    store = make(clock=clock)
    store.put("admin", "stamp", b"s1", ttl=10)
    clock.now += 11
    assert not store.put_many([("response", "r", b"v", None)], ("admin", "stamp", b"s1"))
    assert store.put_many([("response", "r", b"v", None)], ("admin", "stamp", None))


def test_ttls_and_caps_as_put_keeps_them(make: Make) -> None:
    clock = FakeClock()
    store = make(max_keys=3, max_bytes=250, clock=clock)
    assert store.put_many([("response", f"r{n}", b"x" * 10, None) for n in range(5)]
                          + [("tombstone", "t", b"", 10.0)])
    assert [k for k, _ in store.list("response")] == ["r2", "r3", "r4"]  # the oldest went
    assert store.get("tombstone", "t") == b""
    assert store.put_many([("response", "big1", b"y" * 100, None),
                           ("response", "big2", b"y" * 100, None)])
    assert [k for k, _ in store.list("response")] == ["r4", "big1", "big2"]  # the bytes cap
    clock.now += 11
    assert store.get("tombstone", "t") is None  # its ttl passed
    assert store.put_many([("response", "r9", b"z", 5.0)])
    clock.now += 6
    assert store.get("response", "r9") is None
    assert [k for k, _ in store.list("response")] == ["big1", "big2"]


def test_bad_arguments_are_refused_before_any_write(make: Make) -> None:
    store = make()
    with pytest.raises(TypeError, match="bytes"):
        store.put_many([("response", "a", b"ok", None), ("response", "b", "text", None)])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="ttl"):
        store.put_many([("response", "a", b"ok", None), ("response", "b", b"x", 0)])
    with pytest.raises(ValueError, match="kind"):
        store.put_many([("", "a", b"ok", None)])
    assert store.get("response", "a") is None


def test_racing_guarded_writes_one_wins(make: Make) -> None:
    """Twenty threads each move the stamp from the value they read: exactly one wins, the way
    two workers' commits race on one stamp."""
    store = make()
    store.put("admin", "stamp", b"s0")
    won = winners(lambda n: store.put_many([("admin", "stamp", f"s{n + 1}".encode(), None),
                                            ("response", f"r{n}", b"v", None)],
                                           ("admin", "stamp", b"s0")))
    assert len(won) == 1
    assert store.get("admin", "stamp") == f"s{won[0] + 1}".encode()
    assert [k for k, _ in store.list("response")] == [f"r{won[0]}"]
