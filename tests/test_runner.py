"""``ormock.server.runner.OrmockServer``: a real server on a socket bound at once, run in a
background thread (``start``/``stop``, a context manager) or in the calling one
(``serve_forever``, what ``ormock serve`` runs)."""

from __future__ import annotations

import socket
import threading

import httpx
import pytest

from ormock import OrmockServer

BODY = {"model": "m", "input": "x"}


def test_port_0_binds_a_free_port_at_once() -> None:
    fake = OrmockServer()
    try:
        assert fake.port > 0
        assert fake.url == f"http://127.0.0.1:{fake.port}"
        assert fake.base_url == fake.url + "/v1"
        assert repr(fake) == f"OrmockServer({fake.url!r})"
    finally:
        fake.stop()  # never started: the socket is closed


def test_a_taken_port_fails_when_constructed() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError, match="in use"):
            OrmockServer(port=taken.getsockname()[1])


def test_the_context_manager_starts_and_stops() -> None:
    with OrmockServer(speed=0) as fake:
        assert fake.start() is fake  # starting again changes nothing
        answer = httpx.post(fake.base_url + "/responses", json=BODY)
        assert answer.status_code == 200
        assert fake.engine().journal[-1].response_id == answer.json()["id"]
        url = fake.base_url
    with pytest.raises(httpx.ConnectError):
        httpx.post(url + "/responses", json=BODY, timeout=2)


def test_serve_forever_runs_in_the_calling_thread_until_stopped() -> None:
    fake = OrmockServer(speed=0)
    done = threading.Event()

    def serve() -> None:
        fake.serve_forever()
        done.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    for _ in range(2000):
        try:
            answer = httpx.post(fake.base_url + "/responses", json=BODY)
            break
        except httpx.ConnectError:
            done.wait(0.005)
    assert answer.status_code == 200
    fake.stop()
    thread.join(10)
    assert done.is_set()


def test_serve_forever_refuses_a_server_running_in_the_background() -> None:
    with OrmockServer() as fake, pytest.raises(RuntimeError, match="already runs"):
        fake.serve_forever()
