"""When the Redis backend sends a call once more (``ormock.engine.store.redis_link``): only when
Redis cannot have run it, or when running it twice does what running it once did. Between the
backend and a real redis-server, a relay the test tells to lose Redis's next answer (the call
made, its answer never delivered) or to hang up on the backend."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Iterator

import pytest
import redis
from stores import RedisServer

from ormock.engine.store import StoreUnavailable
from ormock.engine.store.redis_backend import RedisBackend
from ormock.engine.store.redis_link import AGAIN


class Relay:
    """A TCP relay on 127.0.0.1 to ``port``: each connection relayed both ways until ``lose``
    is set, when the next bytes Redis sends back are dropped with both connections closed."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lose = threading.Event()
        self.lost = 0  # answers dropped
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self.open += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, False),
                             daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, True),
                             daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, answers: bool) -> None:
        try:
            while data := source.recv(65536):
                if answers and self.lose.is_set():
                    self.lose.clear()
                    self.lost += 1
                    break
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):  # shut down first: the other thread's recv ends now
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()

    def hang_up(self) -> None:
        """Close every connection relayed so far (as a Redis restarted would)."""
        for end in self.open:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
        self.open.clear()

    def close(self) -> None:
        self.listener.close()
        self.hang_up()


@pytest.fixture
def relayed(redis_server: RedisServer) -> Iterator[tuple[Relay, RedisBackend, redis.Redis]]:
    """A relay to the test's Redis, a backend on a fresh database through it, and a client
    straight to that database."""
    direct = redis_server.fresh_url()
    db = direct.rsplit("/", 1)[1]
    relay = Relay(redis_server.port)
    backend = RedisBackend(f"redis://127.0.0.1:{relay.port}/{db}")
    raw = redis.Redis.from_url(direct)
    yield relay, backend, raw
    backend.close()
    raw.close()
    relay.close()


def test_a_count_whose_answer_was_lost_is_not_counted_twice(
        relayed: tuple[Relay, RedisBackend, redis.Redis]) -> None:
    relay, backend, _ = relayed
    assert backend.incr("count", "steps") == 1
    relay.lose.set()
    with pytest.raises(StoreUnavailable, match=re.escape(
            "lost the connection before answering a call it may have made (not sent again: it "
            "would be made twice)")):
        backend.incr("count", "steps")
    assert relay.lost == 1
    assert backend.incr("count", "steps") == 3  # the lost one was made once, not twice


def test_a_claim_whose_answer_was_lost_is_not_read_as_lost(
        relayed: tuple[Relay, RedisBackend, redis.Redis]) -> None:
    """Sent again, a compare-and-set that won would find its own value and answer False."""
    relay, backend, _ = relayed
    relay.lose.set()
    with pytest.raises(StoreUnavailable, match="may have made"):
        backend.compare_and_set("idempotency", "k", None, b"mine")
    assert backend.get("idempotency", "k") == b"mine"  # it was made, once


@pytest.mark.parametrize("call", ["get", "put", "list"])
def test_a_read_or_a_write_of_the_same_values_is_sent_again(
        relayed: tuple[Relay, RedisBackend, redis.Redis], call: str) -> None:
    relay, backend, _ = relayed
    backend.put("response", "a", b"1")
    relay.lose.set()
    if call == "get":
        assert backend.get("response", "a") == b"1"
    elif call == "put":
        backend.put("response", "a", b"2")
        assert backend.get("response", "a") == b"2"
    else:
        assert [key for key, _ in backend.list("response")] == ["a"]
    assert relay.lost == 1  # the first answer lost, the call sent again on a new connection


def test_a_connection_redis_hung_up_on_is_made_again_before_a_count(
        relayed: tuple[Relay, RedisBackend, redis.Redis]) -> None:
    """A Redis restarted between two calls closed the connection: a count is not sent on it
    (its answer would be lost, and the count not sent again), but on a new one."""
    relay, backend, _ = relayed
    assert backend.incr("count", "steps") == 1
    relay.hang_up()
    assert backend.incr("count", "steps") == 2
    assert backend.delete("count", "steps") is True
    relay.hang_up()
    assert backend.delete("count", "steps") is False


def test_which_scripts_are_sent_again() -> None:
    """Every script but these runs the same twice as once: a new one must be put on a side."""
    from ormock.engine.store import redis_scripts

    assert set(redis_scripts.__all__) - AGAIN == {"COMPARE_AND_SET", "DELETE", "INCR",
                                                  "LOG_APPEND"}
