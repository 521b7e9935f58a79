"""A Redis that fails under a running ``ormock serve``: every request still gets a clear answer
(the 503 envelope naming the store, its password never shown), and a URL's password is never
printed, wherever in the URL it is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
import redis
from starlette.testclient import TestClient
from stores import RedisServer, own_redis

from ormock import OrmockServer
from ormock.engine.store.base import StoreUnavailable, shown
from ormock.engine.store.redis_backend import RedisBackend

ROOT = Path(__file__).resolve().parent.parent
SECRET = "hunter2"
_PACED = """
name: paced
steps:
  - times: forever
    reply:
      chunking: tokens:1
      pacing:
        first_event: 0
        tokens_per_second: 40
      items:
        - message: "one two three four five six seven eight nine ten eleven twelve"
"""


@pytest.fixture
def doomed() -> Iterator[tuple[RedisServer, str]]:
    """A Redis of the test's own (it is stopped in the test) with a password, and its URL."""
    with own_redis() as running:
        raw = redis.Redis(host="127.0.0.1", port=running.port)
        raw.config_set("requirepass", SECRET)
        raw.close()
        yield running, f"redis://:{SECRET}@127.0.0.1:{running.port}/0"


@pytest.mark.parametrize(("spec", "printed"), [
    ("redis://:hunter2@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
    ("unix:///run/redis.sock?db=0&password=hunter2", "unix:///run/redis.sock?db=0&password=***"),
    ("redis://127.0.0.1:6379/0?password=hunter2", "redis://127.0.0.1:6379/0?password=***"),
    ("rediss://me:hunter2@cache.example:6380/2?password=hunter2&ssl_cert_reqs=none",
     "rediss://me:***@cache.example:6380/2?password=***&ssl_cert_reqs=none"),
    ("unix:///run/redis.sock?db=0", "unix:///run/redis.sock?db=0"),
])
def test_a_password_is_never_printed_wherever_the_url_has_it(spec: str, printed: str) -> None:
    assert shown(spec) == printed


def test_a_unix_socket_password_is_not_in_the_message_of_a_failed_start(tmp_path: Path) -> None:
    spec = f"unix://{tmp_path / 'none.sock'}?db=0&password={SECRET}"
    status = subprocess.run(
        [sys.executable, "-m", "ormock", "serve", "--port", "0", "--store", spec],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60)
    assert status.returncode == 2
    assert status.stderr.startswith(f"ormock: --store: cannot reach Redis at unix://"
                                    f"{tmp_path / 'none.sock'}?db=0&password=*** (")
    assert SECRET not in status.stderr


def _unavailable(answer: httpx.Response, port: int) -> None:
    """``answer`` is the 503 envelope naming the store, its password hidden."""
    assert answer.status_code == 503, answer.text
    error = answer.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "service_unavailable", "store_unavailable", None)
    assert error["message"].startswith(f"cannot reach Redis at redis://:***@127.0.0.1:{port}/0 (")
    assert "bug" not in error["message"] and SECRET not in answer.text


def test_a_redis_gone_between_requests_is_a_503_naming_the_store(
        doomed: tuple[RedisServer, str]) -> None:
    running, url = doomed
    with OrmockServer(seed=0, store=url) as server, httpx.Client(
            base_url=server.base_url.removesuffix("/v1"), timeout=60) as client:
        made = client.post("/v1/responses", json={"model": "m", "input": "hi"})
        assert made.status_code == 200
        running.stop()  # Redis is gone
        body = {"model": "m", "input": "hi"}
        _unavailable(client.post("/v1/responses", json=body), running.port)
        _unavailable(client.post("/v1/responses", json={**body, "stream": True}), running.port)
        _unavailable(client.get(f"/v1/responses/{made.json()['id']}"), running.port)
        _unavailable(client.get("/_ormock/journal"), running.port)
        engine = server.namespaces.find("")
        assert engine is not None and engine.errors == []  # not a bug of ormock's


def test_a_redis_out_of_memory_is_a_503_and_nothing_is_half_written(
        doomed: tuple[RedisServer, str]) -> None:
    running, url = doomed
    raw = redis.Redis(host="127.0.0.1", port=running.port, password=SECRET)
    with OrmockServer(seed=0, store=url) as server, httpx.Client(
            base_url=server.base_url.removesuffix("/v1"), timeout=60) as client:
        assert client.post("/v1/responses", json={"model": "m", "input": "hi"}).status_code == 200
        keys = sorted(raw.keys())
        raw.config_set("maxmemory-policy", "noeviction")
        raw.config_set("maxmemory", 1)  # every write refused: OOM
        refused = client.post("/v1/responses", json={"model": "m", "input": "hi"})
        assert refused.status_code == 503, refused.text
        error = refused.json()["error"]
        assert (error["type"], error["code"]) == ("service_unavailable", "store_unavailable")
        assert error["message"].startswith(
            f"Redis at redis://:***@127.0.0.1:{running.port}/0 refused the call (command not "
            f"allowed when used memory > 'maxmemory'")
        assert sorted(raw.keys()) == keys  # nothing of it written
        raw.config_set("maxmemory", 0)
        again = client.post("/v1/responses", json={"model": "m", "input": "hi"})
        assert again.status_code == 200
        assert client.get(f"/v1/responses/{again.json()['id']}").status_code == 200
    raw.close()


@pytest.mark.parametrize("stream", [False, True])
def test_a_redis_gone_before_the_first_request_is_a_503_too(
        doomed: tuple[RedisServer, str], stream: bool) -> None:
    """The first create of a namespace on a worker asks the store before its route is chosen
    (whether a cassette claims it): a Redis gone then is the same 503, not uvicorn's 400
    ``Invalid HTTP request received``."""
    running, url = doomed
    with OrmockServer(seed=0, store=url) as server, httpx.Client(
            base_url=server.base_url.removesuffix("/v1"), timeout=60) as client:
        running.stop()
        answer = client.post("/v1/responses", json={"model": "m", "input": "hi", "stream": stream},
                             headers={"X-Request-ID": "req-cold"})
        _unavailable(answer, running.port)
        assert answer.headers["x-request-id"] == "req-cold"
        _unavailable(client.post("/v1/responses", json={"model": "m", "input": "hi"}),
                     running.port)  # the connection kept, and the next one the same


def test_the_app_under_any_asgi_server_answers_the_503_too(
        doomed: tuple[RedisServer, str]) -> None:
    """The app under another ASGI server (Starlette's test client) gives a create the same
    answer as uvicorn does."""
    running, url = doomed
    with OrmockServer(seed=0, store=url) as server, TestClient(
            server.app, raise_server_exceptions=False) as client:
        running.stop()
        _unavailable(client.post("/v1/responses", json={"model": "m", "input": "hi"}),
                     running.port)


def test_a_stream_under_way_when_redis_goes_ends_whole(
        doomed: tuple[RedisServer, str], tmp_path: Path) -> None:
    running, url = doomed
    scenario = tmp_path / "paced.yaml"
    scenario.write_text(_PACED)
    with OrmockServer(seed=0, store=url, scenarios=[str(scenario)]) as server, httpx.Client(
            timeout=60) as client, client.stream(
            "POST", f"{server.base_url}/responses",
            json={"model": "m", "input": "hi", "stream": True}) as streamed:
        assert streamed.status_code == 200
        lines = streamed.iter_lines()
        for line in lines:  # the stream is under way
            if "response.output_text.delta" in line:
                break
        running.stop()  # Redis goes while the rest is written
        rest = list(lines)
    types = [line.removeprefix("event: ") for line in rest if line.startswith("event: ")]
    assert types[-3:] == ["response.content_part.done", "response.output_item.done",
                          "response.completed"]


def test_a_websocket_turn_that_meets_a_redis_gone_gets_the_503_error_event(
        doomed: tuple[RedisServer, str]) -> None:
    running, url = doomed
    with OrmockServer(seed=0, store=url) as server, openai.OpenAI(
            base_url=server.base_url, api_key="sk-" + "test", max_retries=0) as sdk, \
            sdk.responses.connect() as connection:
        ends = []
        for turn in range(2):
            if turn:
                running.stop()
            connection.response.create(model="m", input="hi")
            for event in connection:
                if event.type in ("error", "response.completed"):
                    ends.append(event)
                    break
        assert [event.type for event in ends] == ["response.completed", "error"]
        gone = ends[1]
        assert gone.type == "error"
        assert (gone.status, gone.error.type, gone.error.code) == (
            503, "service_unavailable", "store_unavailable")
        assert gone.error.message.startswith(
            f"cannot reach Redis at redis://:***@127.0.0.1:{running.port}/0 (")
        engine = server.namespaces.find("")
        assert engine is not None and engine.errors == []


def test_a_redis_that_stops_answering_is_given_up_on_never_waited_for_forever(
        doomed: tuple[RedisServer, str]) -> None:
    """A call waits at most the socket's timeout, twice (it is sent once more): 5 s, whatever
    the redis package's default (none before redis-py 8: a Redis that stops answering, frozen or
    cut off, would hold the worker's event loop for good); the URL's ``socket_timeout`` wins."""
    running, url = doomed
    assert RedisBackend(url)._r.pool.connection_kwargs["socket_timeout"] == 5
    backend = RedisBackend(f"{url}?socket_timeout=0.5")
    assert backend._r.pool.connection_kwargs["socket_timeout"] == 0.5
    backend.put("response", "a", b"1")
    os.kill(running.process.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match=r"^cannot reach Redis at redis://:\*\*\*@"
                           r"127\.0\.0\.1:\d+/0\?socket_timeout=0\.5 \(Timeout reading from"):
            backend.get("response", "a")
        assert time.monotonic() - started < 5
    finally:
        os.kill(running.process.pid, signal.SIGCONT)
    assert backend.get("response", "a") == b"1"  # answering again: the next call goes through
    backend.close()
