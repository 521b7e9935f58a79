"""``ormock.engine.store``: every backend (memory, SQLite, Redis) behaves the same through the store
protocol: get/put, compare-and-set (one winner of a race), delete, cursor pages, expiry on an
injected clock, namespace isolation on one shared storage, and the caps."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest
from stores import BACKENDS, RedisServer, winners

from ormock import Engine
from ormock.engine.limits import Limits
from ormock.engine.settings import Settings
from ormock.engine.store import (
    MemoryBackend,
    SqliteBackend,
    StoreBackend,
    check_store,
    open_backend,
)
from ormock.engine.store.base import LOG_END
from ormock.engine.store.redis_backend import RedisBackend


class Make(Protocol):
    def __call__(self, max_keys: int = ..., max_bytes: int = ...,
                 clock: FakeClock | None = ...) -> StoreBackend: ...


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=BACKENDS)
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    """A maker of backends of one kind: ``make(max_keys=..., max_bytes=..., clock=...)``; each
    on storage of its own (a file, a Redis database)."""
    made: list[StoreBackend] = []
    redis: RedisServer | None = (request.getfixturevalue("redis_server")
                                 if request.param == "redis" else None)

    def factory(max_keys: int = 1000, max_bytes: int = 1 << 20,
                clock: FakeClock | None = None) -> StoreBackend:
        clock = clock or FakeClock()
        backend: StoreBackend
        if request.param == "memory":
            backend = MemoryBackend(max_keys=max_keys, max_bytes=max_bytes, clock=clock)
        elif redis is not None:
            backend = RedisBackend(redis.fresh_url(), max_keys=max_keys, max_bytes=max_bytes,
                                   clock=clock)
        else:
            backend = SqliteBackend(tmp_path / f"store{len(made)}.db", max_keys=max_keys,
                                    max_bytes=max_bytes, clock=clock)
        made.append(backend)
        return backend

    yield factory
    for backend in made:
        backend.close()


def test_get_put_and_replace(make: Make) -> None:
    store = make()
    assert store.get("response", "a") is None
    store.put("response", "a", b"one")
    assert store.get("response", "a") == b"one"
    store.put("response", "a", b"two")
    assert store.get("response", "a") == b"two"
    assert store.get("tombstone", "a") is None  # kinds are apart
    with pytest.raises(TypeError, match="bytes"):
        store.put("response", "b", "text")


def test_compare_and_set(make: Make) -> None:
    store = make()
    assert store.compare_and_set("idempotency", "k", None, b"pending")  # absent: written
    assert not store.compare_and_set("idempotency", "k", None, b"other")  # present now
    assert not store.compare_and_set("idempotency", "k", b"done", b"x")  # mismatch
    assert store.get("idempotency", "k") == b"pending"
    assert store.compare_and_set("idempotency", "k", b"pending", b"done")  # match
    assert store.get("idempotency", "k") == b"done"
    assert not store.compare_and_set("idempotency", "missing", b"done", b"x")
    assert store.get("idempotency", "missing") is None


def test_twenty_threads_racing_one_compare_and_set_one_wins(make: Make) -> None:
    store = make()
    won = winners(lambda n: store.compare_and_set("idempotency", "key", None,
                                                  f"thread {n}".encode()))
    assert len(won) == 1
    assert store.get("idempotency", "key") == f"thread {won[0]}".encode()
    # and the same for an update: of 20 racing from one expected value, one wins
    current = store.get("idempotency", "key")
    updated = winners(lambda n: store.compare_and_set("idempotency", "key", current,
                                                      f"done {n}".encode()))
    assert len(updated) == 1 and store.get("idempotency", "key") == f"done {updated[0]}".encode()


def test_incr_counts_from_zero_and_reads_back(make: Make) -> None:
    store = make()
    assert store.incr("counter", "steps") == 1
    assert store.incr("counter", "steps") == 2
    assert store.incr("counter", "steps", 5) == 7
    assert store.incr("counter", "steps", -7) == 0
    assert store.get("counter", "steps") == b"0"
    assert store.incr("counter", "other") == 1  # each key its own count
    assert store.scoped("elsewhere").incr("counter", "steps") == 1  # each namespace too
    store.put("counter", "text", b"not a number")
    with pytest.raises(ValueError, match="holds no counter"):
        store.incr("counter", "text")
    assert store.get("counter", "text") == b"not a number"  # left as it was
    with pytest.raises(ValueError, match="whole number"):
        store.incr("counter", "steps", 1.5)  # type: ignore[arg-type]


def test_forty_racing_incrs_each_get_their_own_number(make: Make) -> None:
    store = make()
    start = threading.Barrier(8)
    got: list[int] = []
    lock = threading.Lock()

    def race() -> None:
        start.wait()
        for _ in range(5):
            value = store.incr("counter", "k")
            with lock:
                got.append(value)

    threads = [threading.Thread(target=race) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got) == list(range(1, 41))
    assert store.get("counter", "k") == b"40"


def test_incr_is_atomic_across_connections(tmp_path: Path,
                                           request: pytest.FixtureRequest) -> None:
    """Two connections to one storage (as two worker processes have): SQLite files and Redis."""
    redis: RedisServer = request.getfixturevalue("redis_server")
    url = redis.fresh_url()
    for one, two in ((SqliteBackend(tmp_path / "s.db"), SqliteBackend(tmp_path / "s.db")),
                     (RedisBackend(url), RedisBackend(url))):
        got: list[int] = []

        def race(store: StoreBackend, got: list[int] = got) -> None:
            got.extend(store.incr("counter", "k") for _ in range(20))

        threads = [threading.Thread(target=race, args=(b,)) for b in (one, two)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(got) == list(range(1, 41))
        one.close()
        two.close()


def test_delete(make: Make) -> None:
    store = make()
    store.put("response", "a", b"1")
    assert store.delete("response", "a") is True
    assert store.get("response", "a") is None
    assert store.delete("response", "a") is False
    assert store.compare_and_set("response", "a", None, b"again")  # absent again
    store.put("tombstone", "empty", b"")  # an empty value is a value
    assert store.get("tombstone", "empty") == b"" and store.delete("tombstone", "empty")
    assert store.get("tombstone", "empty") is None


def test_list_pages_in_write_order(make: Make) -> None:
    store = make()
    for key in ["item_3", "item_1", "other_1", "item_2", "item_0"]:
        store.put("input_items", key, key.encode())
    keys = [k for k, _ in store.list("input_items", "item_")]
    assert keys == ["item_3", "item_1", "item_2", "item_0"]  # written order, not sorted
    assert store.list("input_items", "item_", limit=2) == [(b.decode(), b) for b in
                                                           [b"item_3", b"item_1"]]
    assert [k for k, _ in store.list("input_items", "item_", after="item_1", limit=2)] == [
        "item_2", "item_0"]
    assert [k for k, _ in store.list("input_items", "item_", reverse=True)] == [
        "item_0", "item_2", "item_1", "item_3"]
    assert [k for k, _ in store.list("input_items", "item_", after="item_2", reverse=True)] == [
        "item_1", "item_3"]
    assert store.list("input_items", "item_", after="item_0") == []  # the last page is done
    assert store.list("input_items", after="nobody") == []  # a cursor naming no key
    assert [k for k, _ in store.list("input_items")] == [
        "item_3", "item_1", "other_1", "item_2", "item_0"]
    assert store.list("input_items", limit=0) == []
    store.put("input_items", "item_3", b"rewritten")  # a write makes the key the newest
    assert [k for k, _ in store.list("input_items", "item_")][-1] == "item_3"
    with pytest.raises(ValueError, match="page limit"):
        store.list("input_items", limit=-1)


def test_expiry_on_the_injected_clock(make: Make) -> None:
    clock = FakeClock()
    store = make(clock=clock)
    store.put("idempotency", "short", b"s", ttl=10)
    store.put("idempotency", "long", b"l", ttl=100)
    store.put("idempotency", "always", b"a")
    clock.now += 9.5
    assert store.get("idempotency", "short") == b"s"
    clock.now += 1
    assert store.get("idempotency", "short") is None
    assert [k for k, _ in store.list("idempotency")] == ["long", "always"]
    assert store.list("idempotency", after="short") == []
    assert store.compare_and_set("idempotency", "short", None, b"new")  # expired is absent
    assert not store.compare_and_set("idempotency", "long", None, b"new")
    store.put("idempotency", "long", b"kept")  # rewritten without a ttl: it stays
    clock.now += 1000
    assert store.get("idempotency", "long") == b"kept"
    assert store.get("idempotency", "always") == b"a"
    assert not store.delete("idempotency", "nothing")
    with pytest.raises(ValueError, match="ttl"):
        store.put("idempotency", "x", b"", ttl=0)


def test_namespaces_are_isolated_on_one_storage(make: Make) -> None:
    root = make()
    first, second = root.scoped("test_a"), root.scoped("test_b")
    first.put("response", "resp_1", b"a's")
    second.put("response", "resp_1", b"b's")
    root.put("response", "resp_1", b"the default's")
    assert first.get("response", "resp_1") == b"a's"
    assert second.get("response", "resp_1") == b"b's"
    assert [v for _, v in first.list("response")] == [b"a's"]
    assert not second.compare_and_set("response", "resp_1", b"a's", b"stolen")
    first.clear()  # one namespace's keys only
    assert first.get("response", "resp_1") is None and first.list("response") == []
    assert second.get("response", "resp_1") == b"b's"
    assert root.get("response", "resp_1") == b"the default's"
    assert root.scoped("test_b").get("response", "resp_1") == b"b's"  # a view, not a copy


def test_caps_drop_the_oldest_and_keep_the_newest(make: Make) -> None:
    store = make(max_keys=3, max_bytes=250)
    for n in range(5):
        store.put("response", f"r{n}", b"x" * 10)
    assert [k for k, _ in store.list("response")] == ["r2", "r3", "r4"]
    store.put("response", "big1", b"y" * 100)
    store.put("response", "big2", b"y" * 100)  # 10 + 200 fits; a third would not
    assert [k for k, _ in store.list("response")] == ["r4", "big1", "big2"]
    store.put("response", "huge", b"z" * 1000)  # larger than the room: kept alone
    assert [k for k, _ in store.list("response")] == ["huge"]
    store.put("tombstone", "t", b"1")  # each kind has its own room
    assert store.get("response", "huge") is not None
    assert store.compare_and_set("response", "won", None, b"w")  # a cas counts the same
    assert [k for k, _ in store.list("response")] == ["won"]


def test_put_nowait_is_a_put_the_next_call_sees(make: Make) -> None:
    store = make(max_keys=3)
    for n in range(5):
        store.put_nowait("journal", f"j{n}", f"entry {n}".encode())
    assert store.get("journal", "j4") == b"entry 4"  # this thread's next call sees it done
    assert store.list("journal") == [(f"j{n}", f"entry {n}".encode()) for n in (2, 3, 4)]
    store.put_nowait("journal", "j4", b"again")
    seen: list[bytes | None] = []
    reader = threading.Thread(target=lambda: seen.append(store.get("journal", "j2")))
    reader.start()
    reader.join()
    assert seen == [b"entry 2"]  # another thread (its own connection) sees the same store
    assert store.get("journal", "j4") == b"again"
    with pytest.raises(TypeError, match="bytes"):
        store.put_nowait("journal", "j5", "text")  # checked as put checks it


def test_sqlite_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "kept.db"
    first = SqliteBackend(path).scoped("ns")
    first.put("response", "a", b"1")
    first.put("response", "b", b"2")
    first.close()
    with pytest.raises(RuntimeError, match="closed"):
        first.get("response", "a")
    again = SqliteBackend(path).scoped("ns")
    assert again.list("response") == [("a", b"1"), ("b", b"2")]
    again.put("response", "c", b"3")  # order continues after a restart
    assert [k for k, _ in again.list("response", reverse=True)] == ["c", "b", "a"]
    again.close()


def test_the_store_setting_says_what_to_write(tmp_path: Path) -> None:
    assert check_store("memory") == "memory"
    assert check_store("sqlite:x.db") == "sqlite:x.db"
    with pytest.raises(ValueError, match=r"unknown store 'redis': write 'memory'.*'sqlite:PATH'"):
        Settings(store="redis")
    with pytest.raises(ValueError, match=r"names no file: write 'sqlite:PATH'"):
        Settings(store="sqlite:")
    with pytest.raises(ValueError, match="must be a string"):
        Settings(store=None)  # type: ignore[arg-type]
    backend = open_backend(f"sqlite:{tmp_path / 'o.db'}", Limits(store_responses=7))
    assert isinstance(backend, SqliteBackend) and (tmp_path / "o.db").exists()
    backend.close()
    assert isinstance(open_backend("memory", Limits()), MemoryBackend)


def test_engines_on_one_sqlite_file_keep_their_namespaces(tmp_path: Path) -> None:
    shared = SqliteBackend(tmp_path / "one.db")
    first, second = Engine(backend=shared.scoped("a")), Engine(backend=shared.scoped("b"))
    one = first.answer({"model": "m", "input": "hi"}, {})[1].response_id
    two = second.answer({"model": "m", "input": "hi"}, {})[1].response_id
    assert one == two  # the same seed, each namespace fresh: the same ids
    assert list(first.responses) == [one] and list(second.responses) == [two]
    first.reset()  # this namespace's keys only
    assert len(first.responses) == 0 and list(second.responses) == [two]
    # a new engine on the same keys (a restart) hands out ids it does not hold yet
    again = Engine(backend=shared.scoped("b"))
    three = again.answer({"model": "m", "input": "hi", "previous_response_id": two}, {})
    assert three[1].response_id not in (None, two)
    assert [i.get("content") for i in again.responses[str(three[1].response_id)].context
            if i.get("role") == "user"] == ["hi", "hi"]
    shared.close()


def test_memory_expiry_bookkeeping_stays_bounded() -> None:
    """Keys rewritten or dropped by the caps leave their expiry behind until it is rebuilt."""
    clock = FakeClock()
    store = MemoryBackend(max_keys=10, clock=clock)
    for n in range(20_000):
        store.put("response", f"r{n % 50}", b"x", ttl=3600)
    assert len(store._m.expiring) <= 2048  # not 20,000
    assert [k for k, _ in store.list("response")] == [f"r{n}" for n in range(40, 50)]
    clock.now += 3601
    assert store.list("response") == []


class Lazy:
    """An ``Encoded`` value that counts the times its bytes were made."""

    def __init__(self, data: bytes) -> None:
        self.data, self.made = data, 0

    @property
    def size(self) -> int:
        return len(self.data)

    def encode(self) -> bytes:
        self.made += 1
        return self.data


def test_a_memory_value_is_kept_as_given_and_read_as_its_bytes() -> None:
    clock = FakeClock()
    store = MemoryBackend(max_keys=10, max_bytes=250, clock=clock)
    held = Lazy(b"x" * 100)
    store.put_value("response", "a", held, ttl=60)
    store.put("response", "b", b"y" * 100)
    assert store.get_value("response", "a") is held and held.made == 0  # nothing encoded
    assert store.get("response", "a") == b"x" * 100 and held.made == 1
    assert store.list("response") == [("a", b"x" * 100), ("b", b"y" * 100)]
    assert not store.compare_and_set("response", "a", b"other", b"z")
    assert store.put_many([], ("response", "a", b"x" * 100))  # a guard reads its bytes too
    store.put_value("response", "c", Lazy(b"z" * 60))  # its size counts: 260 > 250, a goes
    assert [k for k, _ in store.list("response")] == ["b", "c"]
    assert store.compare_and_set("response", "c", b"z" * 60, b"w")  # now bytes
    assert store.get_value("response", "c") == b"w"
    store.put_value("response", "d", Lazy(b"d"), ttl=60)
    clock.now += 61
    assert store.get_value("response", "d") is None  # expiry as for bytes


# -- event logs ---------------------------------------------------------------------------------
def test_a_log_is_appended_in_order_and_read_from_a_number(make: Make) -> None:
    store = make()
    assert store.log_read("resp_a") == []
    assert store.log_append("resp_a", 0, b"zero") and store.log_append("resp_a", 4, b"four")
    with pytest.raises(ValueError, match="not above"):
        store.log_append("resp_a", 4, b"again")
    with pytest.raises(ValueError, match="whole number"):
        store.log_append("resp_a", -1, b"x")
    assert store.log_read("resp_a") == [(0, b"zero"), (4, b"four")]
    assert store.log_read("resp_a", 1) == [(4, b"four")]  # a range read from a number
    assert store.log_read("resp_a", 5) == [] and store.log_read("resp_a", 0, 1) == [(0, b"zero")]
    assert store.scoped("other").log_read("resp_a") == []  # a namespace's own
    store.clear()
    assert store.log_read("resp_a") == []


def test_a_closed_log_takes_no_more_and_wakes_a_waiter(make: Make) -> None:
    store = make()
    store.log_append("resp_b", 1, b"one")
    assert store.log_wait("resp_b", 0, 5.0) == [(1, b"one")]  # there already: at once
    assert store.log_wait("resp_b", 2, 0.05) == []  # nothing within the timeout
    woke: list[list[tuple[int, bytes]]] = []
    waiter = threading.Thread(target=lambda: woke.append(store.log_wait("resp_b", 2, 20.0)))
    waiter.start()
    assert store.log_close("resp_b", b"last")
    waiter.join(20)
    assert woke == [[(LOG_END, b"last")]]
    assert not store.log_append("resp_b", 9, b"late") and not store.log_close("resp_b")
    assert store.log_read("resp_b") == [(1, b"one"), (LOG_END, b"last")]
    assert store.log_close("resp_new")  # a cancel before the first event: made closed
    assert store.log_read("resp_new") == [(LOG_END, b"")]


def test_logs_expire_and_the_least_recently_appended_go_past_the_caps(make: Make) -> None:
    clock = FakeClock()
    store = make(max_keys=2, clock=clock)
    store.log_append("resp_t", 1, b"v", ttl=10)
    clock.now += 11
    assert store.log_read("resp_t") == []
    for name in ("resp_1", "resp_2"):
        store.log_append(name, 1, b"v")
    store.log_append("resp_1", 2, b"w")  # appended to last: resp_2 is the oldest now
    store.log_append("resp_3", 1, b"v")
    assert store.log_read("resp_2") == []
    assert store.log_read("resp_1") == [(1, b"v"), (2, b"w")] and store.log_read("resp_3")


def test_logs_past_the_byte_cap_go_oldest_first_and_the_newest_stays(make: Make) -> None:
    store = make(max_bytes=10)
    store.log_append("resp_a", 1, b"123456")
    store.log_append("resp_b", 1, b"123456")  # 12 bytes: resp_a goes
    assert store.log_read("resp_a") == [] and store.log_read("resp_b") == [(1, b"123456")]
    store.log_append("resp_b", 2, b"1234567890")  # over on its own: the newest stays
    assert [n for n, _ in store.log_read("resp_b")] == [1, 2]
