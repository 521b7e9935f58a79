"""``ormock.engine.store.redis_backend`` against a real redis-server: what only Redis has (the
common behaviour of every backend is ``test_store_backends``): compare-and-set atomic across
processes, a unix socket, Redis's own expiry freeing values, ``clear`` leaving every other key of
the database alone, the URLs the ``store`` setting takes, and a Redis nobody answers at."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
import redis
from stores import RedisServer, free_port

from ormock import Engine, OrmockServer
from ormock.engine.limits import Limits
from ormock.engine.store import StoreError, check_store, open_backend
from ormock.engine.store.redis_backend import RedisBackend

ROOT = Path(__file__).resolve().parent.parent

_RACER = """
import sys
from ormock.engine.store.redis_backend import RedisBackend
backend = RedisBackend(sys.argv[1]).scoped("race")
sys.stdin.readline()  # every process started: go
won = [n for n in range(200) if backend.compare_and_set("idempotency", f"k{n}", None,
                                                        sys.argv[2].encode())]
print(" ".join(map(str, won)))
"""


@pytest.fixture
def url(redis_server: RedisServer) -> str:
    return redis_server.fresh_url()


@pytest.fixture
def raw(url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(url)
    yield client
    client.close()


def test_compare_and_set_has_one_winner_across_processes(url: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    racers = [subprocess.Popen([sys.executable, "-c", _RACER, url, f"p{n}"], env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
              for n in range(4)]
    for racer in racers:
        assert racer.stdin is not None
        racer.stdin.write("go\n")
        racer.stdin.flush()
    won = [racer.communicate(timeout=60)[0].split() for racer in racers]
    assert all(racer.returncode == 0 for racer in racers)
    keys = [key for each in won for key in each]
    assert sorted(keys, key=int) == [str(n) for n in range(200)]  # each key won exactly once
    backend = RedisBackend(url).scoped("race")
    for n, each in enumerate(won):
        assert all(backend.get("idempotency", f"k{key}") == f"p{n}".encode() for key in each)
    backend.close()


def test_a_unix_socket_serves_the_same_store(redis_server: RedisServer) -> None:
    db = redis_server.fresh_db()
    over_socket = RedisBackend(redis_server.socket_url(db))
    over_tcp = RedisBackend(redis_server.url(db))
    over_socket.put("response", "r", b"one")
    assert over_tcp.get("response", "r") == b"one"  # the same database, two ways in
    with OrmockServer(seed=0, store=redis_server.socket_url(db)) as server, openai.OpenAI(
            base_url=server.base_url, api_key="sk-" + "test", max_retries=0) as sdk:
        made = sdk.responses.create(model="gpt-5", input="Hello over a socket.")
        assert sdk.responses.retrieve(made.id).output_text == made.output_text
    assert made.id in Engine(backend=over_tcp).responses
    over_socket.close()
    over_tcp.close()


def test_redis_expires_the_values_itself(url: str, raw: redis.Redis) -> None:
    backend = RedisBackend(url)
    backend.put("idempotency", "short", b"s", ttl=0.2)
    backend.put("idempotency", "kept", b"k")
    value_key = "ormock:{ns:}:v:idempotency:"
    assert 0 < raw.pttl(value_key + "short") <= 200
    assert raw.pttl(value_key + "kept") == -1  # no ttl: no expiry
    deadline = time.monotonic() + 30
    while raw.exists(value_key + "short") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not raw.exists(value_key + "short")  # Redis freed it, nobody had to come back
    assert backend.get("idempotency", "short") is None
    assert backend.list("idempotency") == [("kept", b"k")]  # and the order skips it
    assert backend.compare_and_set("idempotency", "short", None, b"again")
    backend.close()


def test_a_stored_response_expires_after_store_seconds(url: str, raw: redis.Redis) -> None:
    day = 24 * 3600 * 1000
    engine = Engine(store=url)
    made = engine.answer({"model": "m", "input": "hi"}, {})[1].response_id
    assert 29 * day < raw.pttl(f"ormock:{{ns:}}:v:response:{made}") <= 30 * day  # OpenAI's 30
    short = Engine(store=url, limits=Limits(store_seconds=60)).responses
    short.bury(made)  # a tombstone, and the record marked: both on the configured time
    assert 0 < raw.pttl(f"ormock:{{ns:}}:v:tombstone:{made}") <= 60_000
    assert 0 < raw.pttl(f"ormock:{{ns:}}:v:response:{made}") <= 60_000
    engine.backend.close()
    short.backend.close()


def test_clear_drops_its_namespace_and_nothing_else(url: str, raw: redis.Redis) -> None:
    raw.set("someone:else", b"theirs")
    root = RedisBackend(url)
    mine, other = root.scoped("mine"), root.scoped("other")
    for kind in ("response", "tombstone", "idempotency"):
        mine.put(kind, "a", b"1", ttl=100)
        mine.put(kind, "b", b"2")
        other.put(kind, "a", b"3")
    assert not mine.delete("conversation", "none")  # a kind never written: nothing made
    for older in ("n", "s"):  # the sums and sizes of the layout before the namespace's sums
        raw.hset(f"ormock:{{ns:mine}}:{older}:response", "a", b"1")
    mine.clear()
    assert list(raw.scan_iter(match="ormock:{ns:mine}:*")) == []  # nothing left behind
    assert other.get("response", "a") == b"3" and raw.get("someone:else") == b"theirs"
    assert raw.dbsize() > 1
    root.close()
    with pytest.raises(RuntimeError, match="is closed"):
        mine.get("response", "a")


@pytest.mark.parametrize("spec", [
    "redis://127.0.0.1:6379/0", "redis://localhost", "rediss://cache.example:6380/2",
    "redis://:secret@127.0.0.1:6379/1", "unix:///run/redis/redis.sock?db=3", "unix:///tmp/r.sock",
])
def test_the_store_setting_takes_redis_urls(spec: str) -> None:
    assert check_store(spec) == spec


@pytest.mark.parametrize(("spec", "says"), [
    ("redis://:6379/0", r"names no host: write 'redis://HOST:PORT/DB'"),
    ("redis://127.0.0.1:port/0", r"has no valid port"),
    ("redis://127.0.0.1:6379/zero", r"the database is a number such as 0, not 'zero'"),
    ("unix://?db=1", r"names no socket: write 'unix:///PATH/redis.sock\?db=N'"),
    ("unix:///tmp/r.sock?db=x", r"the database is a number"),
    ("redis://:hunter2@127.0.0.1:6379/x", r"^store 'redis://:\*\*\*@127.0.0.1:6379/x'"),
])
def test_a_redis_url_that_cannot_work_says_what_to_write(spec: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as refused:
        check_store(spec)
    assert "hunter2" not in str(refused.value)


def test_a_redis_nobody_answers_at_is_a_store_error() -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(StoreError, match=r"cannot reach Redis at redis://:\*\*\*@127.0.0.1:"
                       rf"{port}/0 .*apt-get install -y redis-server"):
        RedisBackend(f"redis://:pw@127.0.0.1:{port}/0")
    status = subprocess.run(
        [sys.executable, "-m", "ormock", "serve", "--port", "0", "--store",
         f"redis://127.0.0.1:{port}/0"], env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=60)
    assert status.returncode == 2
    assert status.stderr.startswith(f"ormock: --store: cannot reach Redis at "
                                    f"redis://127.0.0.1:{port}/0")


def test_two_prefixes_are_two_stores_on_one_database(url: str, raw: redis.Redis) -> None:
    ours, theirs = RedisBackend(url), RedisBackend(url, prefix="other-fake")
    ours.put("response", "r", b"ours")
    theirs.put("response", "r", b"theirs")
    assert (ours.get("response", "r"), theirs.get("response", "r")) == (b"ours", b"theirs")
    theirs.clear()
    assert ours.get("response", "r") == b"ours" and theirs.get("response", "r") is None
    assert list(raw.scan_iter(match="other-fake:*")) == []
    ours.close()
    theirs.close()


def test_rediss_speaks_tls_to_the_same_store(redis_server: RedisServer) -> None:
    db = redis_server.fresh_db()
    tls = redis_server.tls_url(db)
    if tls is None:
        pytest.skip("openssl not found: the TLS test needs a certificate it makes")
    with OrmockServer(seed=0, store=tls) as server, openai.OpenAI(
            base_url=server.base_url, api_key="sk-" + "test", max_retries=0) as sdk:
        made = sdk.responses.create(model="gpt-5", input="Hello over TLS.")
        assert sdk.responses.retrieve(made.id).output_text == made.output_text
    plain = RedisBackend(redis_server.url(db))
    assert plain.get("response", made.id) is not None  # what went over TLS is in that database
    plain.close()
    counts = RedisBackend(tls)  # a count looks at its connection first (``redis_link``)
    assert [counts.incr("count", "k") for _ in range(3)] == [1, 2, 3]
    counts.close()


def test_put_nowait_does_not_wait_for_redis(url: str, raw: redis.Redis) -> None:
    backend = RedisBackend(url)
    backend.get("journal", "warm")  # this thread's connection made
    raw.client_pause(60_000, all=False)  # Redis runs no write for a minute (reads it does)
    try:
        backend.put_nowait("journal", "entry", b"kept")  # returns: it did not wait
        assert raw.get("ormock:{ns:}:v:journal:entry") is None  # Redis has not run it yet
    finally:
        raw.client_unpause()
    assert backend.get("journal", "entry") == b"kept"  # run since, and seen by the next call
    backend.close()


def test_a_failed_write_nobody_waited_for_is_logged_not_raised(
        url: str, raw: redis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    backend = RedisBackend(url)
    raw.set("ormock:{ns:}:sums", b"not a hash")  # the namespace's bookkeeping broken
    backend.put_nowait("journal", "entry", b"lost")
    with caplog.at_level("WARNING", logger="ormock.store.redis"):
        assert backend.get("response", "other") is None  # an unrelated call goes on
    assert "a store write to Redis failed" in caplog.text and "WRONGTYPE" in caplog.text
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        backend.put("journal", "entry", b"waited")  # a write waited for raises
    backend.close()


def test_scripts_redis_forgot_are_loaded_again(url: str, raw: redis.Redis) -> None:
    backend = RedisBackend(url)
    backend.put("response", "a", b"1")
    raw.script_flush()  # as after a restart of Redis
    assert backend.get("response", "a") == b"1"
    raw.script_flush()
    backend.put_nowait("journal", "e", b"2")  # refused (NOSCRIPT), then run again
    assert backend.get("journal", "e") == b"2"
    assert raw.get("ormock:{ns:}:v:journal:e") == b"2"
    backend.close()


def test_a_connection_redis_dropped_is_made_again(url: str, raw: redis.Redis) -> None:
    backend = RedisBackend(url)
    backend.put("response", "a", b"1")
    assert raw.client_kill_filter(_type="normal", skipme=True) >= 1  # the backend's, gone
    assert backend.get("response", "a") == b"1"  # sent again on a new connection
    backend.put_nowait("journal", "e", b"2")
    raw.client_kill_filter(_type="normal", skipme=True)
    backend.put("response", "b", b"3")  # the lost answer is not waited for; the call goes on
    assert backend.get("response", "b") == b"3"
    backend.close()


def test_a_connection_idle_past_its_health_check_is_checked_first(
        url: str, raw: redis.Redis) -> None:
    """A connection idle past its health check interval is PINGed before a call is sent on it
    (``send_packed_command``'s own check); one used since is not."""
    backend = RedisBackend(url)
    backend.put("response", "a", b"1")  # this thread's connection made
    own = backend._r.link._own()
    raw.config_resetstat()
    backend.get("response", "a")
    assert "cmdstat_ping" not in raw.info("commandstats")
    own.conn.next_health_check = 0.0  # as if idle for longer than its interval
    assert backend.get("response", "a") == b"1"
    assert raw.info("commandstats")["cmdstat_ping"]["calls"] == 1
    backend.get("response", "a")  # checked: straight again
    assert raw.info("commandstats")["cmdstat_ping"]["calls"] == 1
    backend.close()


def test_hiredis_packs_a_call_as_the_connection_would() -> None:
    """``redis_link`` packs with hiredis's ``pack_command`` when installed: the bytes the
    connection's own ``pack_command`` makes of a script's arguments (str, bytes, int)."""
    from ormock.engine.store import redis_link

    if redis_link._pack is None:
        pytest.skip("hiredis not installed: the connection's own packer is used")
    conn = redis.Connection()  # (packing needs no server)
    for call in [("EVALSHA", "f" * 40, 0), ("EVALSHA", "a" * 40, 0, "ns:", "response", "12.5",
                                           b"\x00\xffbytes", "", b"", -3, 2**40, "h\u00e9\u2603")]:
        assert redis_link._pack(call) == b"".join(conn.pack_command(*call))


def test_a_write_forgets_at_most_a_hundred_expired_keys(url: str, raw: redis.Redis) -> None:
    now = [1_000.0]
    backend = RedisBackend(url, clock=lambda: now[0])
    for n in range(150):
        backend.put("idempotency", f"k{n}", b"v", ttl=60)
    now[0] += 61  # all 150 have expired, on the backend's clock
    order = "ormock:{ns:}:o:idempotency"
    assert backend.get("idempotency", "k0") is None and backend.list("idempotency") == []
    assert raw.zcard(order) == 150  # reads forget nothing
    backend.put("idempotency", "new", b"n")
    assert raw.zcard(order) == 51  # 100 swept by that write (a bounded amount of work) ...
    backend.put("idempotency", "newer", b"n")
    assert raw.zcard(order) == 2  # ... the rest by the next one
    assert backend.list("idempotency") == [("new", b"n"), ("newer", b"n")]
    backend.close()


def _sums_hold(raw: redis.Redis, kind: str) -> None:
    """A kind's bookkeeping as the scripts keep it (``redis_scripts``) agrees with its keys: in
    the namespace's ``sums``, the kind's count and bytes are those of the write order's keys,
    each key's size (under its value's key) is there for each of them and only them (a value's
    length; a log's, the sum of its entries'), and ``soon`` is no later than the first expiry
    of the index (and empty only with the index)."""
    base = "ormock:{ns:}:"
    keys = [bytes(k).decode() for k in raw.zrange(f"{base}o:{kind}", 0, -1)]
    timed = {bytes(k).decode() for k in raw.zrange(f"{base}x:{kind}", 0, -1)}
    fields = {bytes(k).decode(): bytes(v).decode()
              for k, v in raw.hgetall(f"{base}sums").items()}
    value = f"{base}v:{kind}:"
    sized = {k[len(value):]: int(v) for k, v in fields.items() if k.startswith(value)}
    assert timed <= set(keys)
    assert set(sized) == set(keys)
    for key in keys:
        if kind == "log":
            entries = raw.xrange(f"{value}{key}")
            held = sum(len(fields_[b"v"]) for _, fields_ in entries)
            assert sized[key] == held or not entries  # (a log Redis freed on its expiry)
        elif raw.exists(f"{value}{key}"):
            assert sized[key] == raw.strlen(f"{value}{key}")
    seq, count, total, soon = fields[kind].split(" ")
    assert (int(count), int(total)) == (len(keys), sum(sized.values()))
    newest = raw.zrange(f"{base}o:{kind}", -1, -1, withscores=True)
    assert not newest or int(seq) >= newest[0][1]  # the last write number, at least
    first = raw.zrange(f"{base}x:{kind}", 0, 0, withscores=True)
    if first:
        assert soon != "" and float(soon) <= first[0][1]


def test_the_sums_stay_those_of_the_keys(url: str, raw: redis.Redis) -> None:
    now = [1_000.0]
    backend = RedisBackend(url, max_keys=4, max_bytes=40, clock=lambda: now[0])
    backend.put("response", "a", b"12345", ttl=10)
    backend.put("response", "b", b"123")
    backend.put("response", "a", b"1234567")  # a key with a ttl rewritten without one
    backend.put("response", "b", b"12", ttl=5)  # and one without rewritten with one
    assert backend.put_many([("response", "c", b"x" * 9, 20.0), ("response", "d", b"y", None),
                             ("journal", "e1", b"entry", None)])
    backend.put("response", "e", b"z" * 6)  # five keys: the oldest goes
    assert backend.get("response", "a") is None
    assert backend.incr("response", "n", 3) == 3
    assert backend.compare_and_set("response", "c", b"x" * 9, b"w" * 30, ttl=50)  # bytes cap
    assert backend.delete("response", "c")
    now[0] += 6  # b has expired: the next write sweeps it
    backend.put("response", "f", b"f", ttl=100)
    assert backend.get("response", "b") is None
    assert backend.log_append("job", 1, b"first", ttl=30)
    assert backend.log_append("job", 2, b"second")  # the log's ttl dropped
    assert backend.log_append("other", 1, b"o" * 30)  # the bytes cap: job goes whole
    _sums_hold(raw, "response")
    _sums_hold(raw, "journal")
    _sums_hold(raw, "log")
    assert backend.log_read("job") == [] and backend.log_read("other") == [(1, b"o" * 30)]
    backend.close()


def test_a_write_sweeps_only_once_a_key_can_have_expired(url: str, raw: redis.Redis) -> None:
    now = [1_000.0]
    backend = RedisBackend(url, clock=lambda: now[0])
    backend.put("response", "long", b"1", ttl=3600)
    backend.put("response", "short", b"2", ttl=60)
    raw.config_resetstat()
    for n in range(5):  # nothing can have expired yet: no sweep, no expiry read
        backend.put("response", f"r{n}", b"v", ttl=3600)
        backend.put("journal", f"e{n}", b"v")
    assert "cmdstat_zrangebyscore" not in raw.info("commandstats")
    now[0] += 61  # "short" has expired
    backend.put("response", "next", b"v", ttl=3600)
    assert raw.info("commandstats")["cmdstat_zrangebyscore"]["calls"] == 1  # swept, once
    assert raw.zscore("ormock:{ns:}:o:response", "short") is None
    backend.put("response", "again", b"v", ttl=3600)  # the next expiry is an hour away
    assert raw.info("commandstats")["cmdstat_zrangebyscore"]["calls"] == 1
    _sums_hold(raw, "response")
    backend.close()


def test_a_thread_that_ends_gives_its_connection_back(url: str, raw: redis.Redis) -> None:
    backend = RedisBackend(url)
    db = url.rsplit("/", 1)[1]
    for n in range(20):  # one short-lived thread after another, each with its own calls
        worker = threading.Thread(target=backend.put, args=("response", f"r{n}", b"v"))
        worker.start()
        worker.join()
    assert len(backend.list("response")) == 20
    ours = [c for c in raw.client_list() if c["db"] == db and c["cmd"] != "client|list"]
    assert len(ours) <= 2  # the threads' connections were reused, not one each
    backend.close()


def test_without_the_redis_package_the_store_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # import redis now fails
    monkeypatch.delitem(sys.modules, "ormock.engine.store.redis_backend")
    with pytest.raises(StoreError, match=r"the store redis://:\*\*\*@127.0.0.1:6379/0 needs the "
                       r"redis package .*: pip install 'ormock\[redis\]'"):
        open_backend("redis://:pw@127.0.0.1:6379/0", Limits())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_makes_a_connection_of_its_own(url: str) -> None:
    """The link keeps this process's id by fork hooks, not per call: a child forked after the
    parent used its connection must make its own, or the two would read each other's answers."""
    backend = RedisBackend(url)
    backend.put("k", "parent", b"1")
    parent_conn = backend._r.link._own().conn
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: its own connection, the parent's left alone
        try:
            backend.put("k", "child", b"2")
            own = backend._r.link._own()
            fine = own.conn is not parent_conn and backend.get("k", "parent") == b"1"
            os.write(write, b"ok" if fine else b"shared")
        finally:
            os._exit(0)
    os.close(write)
    try:
        answer = os.read(read, 16)
    finally:
        os.close(read)
        os.waitpid(child, 0)
    assert answer == b"ok"
    assert backend.get("k", "child") == b"2"
    assert backend._r.link._own().conn is parent_conn  # the parent's own is still its own


def test_past_a_cap_of_sixteen_keys_or_more_the_oldest_go_in_a_batch(url: str) -> None:
    """At a cap of 32 keys a write past it drops the oldest down to 30 (a sixteenth of the cap,
    ``redis_scripts.trim``), so the next two writes evict nothing: the kind holds between 15/16
    of its cap and its cap (docs/scaling.md)."""
    backend = RedisBackend(url, max_keys=32)

    def kept() -> set[str]:
        return {key for key, _ in backend.list("response")}

    for n in range(1, 33):
        backend.put("response", f"r{n}", b"x")
    assert kept() == {f"r{n}" for n in range(1, 33)}  # at the cap: all kept
    backend.put("response", "r33", b"x")
    assert kept() == {f"r{n}" for n in range(4, 34)}  # r1-r3 went at once
    for n in (34, 35):
        backend.put("response", f"r{n}", b"x")
    assert kept() == {f"r{n}" for n in range(4, 36)}  # nothing evicted
    backend.put("response", "r36", b"x")
    assert kept() == {f"r{n}" for n in range(7, 37)}
    assert [backend.get("response", k) for k in ("r6", "r7")] == [None, b"x"]
    backend.close()
