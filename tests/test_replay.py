"""Replaying cassettes: recorded through the real recorder from a real upstream, replayed by a
real ``OrmockServer`` to the real openai SDK; bytes, order, timing, misses, faults, WebSocket."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import websockets.sync.client
from recordings import namespace, recorded
from websockets.exceptions import ConnectionClosed

from ormock import OrmockServer
from ormock.cassette import CassetteError, dump_cassette, load_cassette
from ormock.cassette.fileformat import response_bytes
from ormock.cassette.model import Cassette
from ormock.server.recorder import RecorderServer

# what the server writes: run again without the cork of ormock.server.http_protocol
# (ORMOCK_HTTP_CORK=0) by `make test`
pytestmark = pytest.mark.wire

KEY = "sk-" + "test-replay-dummy-0123456789abcdef"
PACED = {"name": "paced", "steps": [{"times": "forever", "reply": {
    "pacing": {"per_event": 0.03},
    "items": [{"message": "one two three four five six"}]}}]}


@pytest.fixture(scope="module")
def upstream() -> Iterator[OrmockServer]:
    with OrmockServer(seed=0) as running:
        yield running


def _record(upstream_url: str, folder: Path, drive: Any, count: int) -> Cassette:
    with RecorderServer(upstream_url, folder, name="c.yaml", log=lambda line: None) as recorder:
        drive(openai.OpenAI(base_url=recorder.base_url, api_key=KEY, max_retries=0))
        return recorded(recorder, count)


def _client(server: OrmockServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="anything", max_retries=0)


def test_a_recorded_stream_replays_the_same_events_at_the_recorded_pace(
        upstream: OrmockServer, tmp_path: Path) -> None:
    recorded_events: list[Any] = []

    def drive(client: openai.OpenAI) -> None:
        recorded_events.extend(e.model_dump() for e in client.responses.create(
            model="m", input="pace me", stream=True))

    cassette = _record(namespace(upstream, PACED), tmp_path, drive, 1)
    response = cassette.interactions[0].response
    assert response is not None and response.messages is not None
    with OrmockServer(cassettes=[tmp_path / "c.yaml"], speed=1) as replay:
        started = time.monotonic()
        arrivals, events = [], []
        for event in _client(replay).responses.create(model="m", input="pace me", stream=True):
            arrivals.append((time.monotonic() - started) * 1000)
            events.append(event.model_dump())
        entry = replay.engine().journal[-1]
    assert events == recorded_events
    assert entry.cassette == str(tmp_path / "c.yaml") and entry.interaction == 1
    assert entry.ended == "whole" and entry.sent_bytes == len(response_bytes(response))
    # each event comes when it came in the recording (from the first one: connection set-up
    # differs): never sooner (a few ms of clock grain), and late only by what a loaded machine
    # adds (a quiet one: a few ms; the whole stream is allowed half a second)
    recorded_at = [m.at for m in response.messages if m.event is not None]
    for got, want in zip(arrivals, recorded_at, strict=True):
        assert (got - arrivals[0]) - (want - recorded_at[0]) > -20
    span = recorded_at[-1] - recorded_at[0]
    assert span > 100  # the pacing really was recorded
    assert arrivals[-1] - arrivals[0] < span + 500


def test_a_tool_loop_and_a_recorded_error_replay_with_no_rewriting(upstream: OrmockServer,
                                                                   tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def drive(client: openai.OpenAI) -> None:
        first = client.responses.create(model="m", input="hello")
        seen["first"] = first.model_dump()
        seen["again"] = client.responses.create(model="m", input="hello").model_dump()
        seen["next"] = client.responses.create(model="m", input="and then?",
                                               previous_response_id=first.id).model_dump()
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.create(model="m", input=42)  # type: ignore[arg-type]
        seen["error"] = caught.value.body

    _record(namespace(upstream), tmp_path, drive, 4)
    with OrmockServer(cassettes=[tmp_path], speed=0) as replay:
        client = _client(replay)
        first = client.responses.create(model="m", input="hello")
        assert first.model_dump() == seen["first"]
        # an identical request gets the next recorded answer, not the first one again
        assert client.responses.create(model="m", input="hello").model_dump() == seen["again"]
        assert client.responses.create(model="m", input="and then?",
                                       previous_response_id=first.id).model_dump() == \
            seen["next"]
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.create(model="m", input=42)  # type: ignore[arg-type]
        assert caught.value.body == seen["error"]
        assert replay.engine().replays.unused() == []


def test_a_miss_names_the_closest_interaction_and_the_difference(upstream: OrmockServer,
                                                                 tmp_path: Path) -> None:
    _record(namespace(upstream), tmp_path,
            lambda c: c.responses.create(model="m", input="weather in Paris"), 1)
    with OrmockServer(cassettes=[tmp_path / "c.yaml"], speed=0) as replay:
        with pytest.raises(openai.BadRequestError) as caught:
            _client(replay).responses.create(model="m", input="weather in Rome")
        error = caught.value.body
        assert isinstance(error, dict)
        assert error["code"] == "cassette_miss" and error["param"] == "input"
        assert "closest is interaction 1 (line 7)" in error["message"]
        assert "input: recorded 'weather in Paris', sent 'weather in Rome'" in error["message"]
        assert replay.engine().journal[-1].status == 400


def test_ignored_paths_and_recorded_order(upstream: OrmockServer, tmp_path: Path) -> None:
    _record(namespace(upstream), tmp_path, lambda c: (
        c.responses.create(model="m", input="a", metadata={"run": "1"}),
        c.responses.create(model="m", input="b", metadata={"run": "1"})), 2)
    with OrmockServer(cassettes=[tmp_path], speed=0, cassette_ignore=["metadata"],
                      cassette_order="recorded") as replay:
        client = _client(replay)
        with pytest.raises(openai.BadRequestError):  # not the next one
            client.responses.create(model="m", input="b", metadata={"run": "2"})
        assert client.responses.create(model="m", input="a", metadata={"run": "2"}).id
        assert client.responses.create(model="m", input="b", metadata={"run": "3"}).id


def test_faults_are_layered_on_a_replay(upstream: OrmockServer, tmp_path: Path) -> None:
    _record(namespace(upstream), tmp_path, lambda c: [
        list(c.responses.create(model="m", input="x", stream=True)) for _ in range(2)], 2)
    with OrmockServer(cassettes=[tmp_path], speed=0) as replay:
        replay.engine().inject({"http_error": 429, "when": {"nth": 1}})
        # the 429 ends the first request's walk: the disconnect is first reached by the second
        replay.engine().inject({"disconnect": {"after_events": 3}, "when": {"nth": 1}})
        client = _client(replay)
        with pytest.raises(openai.RateLimitError):
            list(client.responses.create(model="m", input="x", stream=True))
        got: list[str] = []
        with pytest.raises((httpx.RemoteProtocolError, openai.APIConnectionError)):
            got.extend(e.type for e in client.responses.create(model="m", input="x",
                                                               stream=True))
        assert got == ["response.created", "response.in_progress", "response.output_item.added"]
        journal = replay.engine().journal
        assert [e.faults for e in journal][-2:] == [["http_error"], ["disconnect"]]
        assert journal[-1].ended == "closed" and journal[-1].cassette is not None


def _raw_upstream(script: bytes, close: bool) -> tuple[socket.socket, str]:
    """A one-shot HTTP server that answers any request with ``script`` and then closes."""
    import threading

    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        connection, _ = listener.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            data += connection.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length")), 0)
        while len(rest) < length:
            rest += connection.recv(65536)
        connection.sendall(script)
        if close:
            connection.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener, f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


def test_a_stream_the_upstream_dropped_is_dropped_again(tmp_path: Path) -> None:
    event = b'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n'
    script = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
              b"transfer-encoding: chunked\r\n\r\n"
              + f"{len(event):x}\r\n".encode() + event + b"\r\n")
    listener, url = _raw_upstream(script, close=True)
    with RecorderServer(url, tmp_path, name="c.yaml", log=lambda line: None) as recorder:
        with pytest.raises(httpx.RemoteProtocolError), httpx.stream(
                "POST", f"{recorder.base_url}/responses", json={"model": "m", "input": "x",
                                                                "stream": True}) as answer:
            for _ in answer.iter_raw():
                pass
        deadline = time.monotonic() + 5
        while not load_cassette(recorder.cassette).interactions:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    listener.close()
    response = load_cassette(tmp_path / "c.yaml").interactions[0].response
    assert response is not None and response.ended == "closed"
    with OrmockServer(cassettes=[tmp_path], speed=0) as replay:
        received: list[bytes] = []

        def read() -> None:
            with httpx.stream("POST", f"{replay.url}/v1/responses",
                              json={"model": "m", "input": "x", "stream": True}) as answer:
                received.extend(answer.iter_raw())

        with pytest.raises(httpx.RemoteProtocolError):
            read()
        assert b"".join(received) == event
        assert replay.engine().journal[-1].ended == "closed"


def test_the_admin_api_loads_lists_and_drops_cassettes(upstream: OrmockServer,
                                                       tmp_path: Path) -> None:
    cassette = _record(namespace(upstream), tmp_path,
                       lambda c: c.responses.create(model="m", input="via admin"), 1)
    with OrmockServer(speed=0) as server:
        server.namespaces.open("t")
        admin = f"{server.url}/t/_ormock/cassettes"
        loaded = httpx.post(admin, content=dump_cassette(cassette),
                            headers={"content-type": "application/yaml"})
        assert loaded.status_code == 201 and loaded.json()["interactions"] == 1
        client = openai.OpenAI(base_url=f"{server.url}/t/v1", api_key="x", max_retries=0)
        recorded = cassette.interactions[0].response
        assert recorded is not None and recorded.body is not None
        assert isinstance(recorded.body.json, dict)
        assert client.responses.create(model="m", input="via admin").id == \
            recorded.body.json["id"]
        listing = httpx.get(admin).json()["data"]
        assert listing[0]["played"] == 1 and listing[0]["unused"] == []
        assert server.engine("t").journal[-1].cassette == "<admin body>"
        # the default namespace was not touched: it answers from the embedded default
        _client(server).responses.create(model="m", input="via admin")
        assert server.engine().journal[-1].cassette is None
        bad = httpx.post(admin, content="version: 1\ninteractions: [{request: {}}]\n",
                         headers={"content-type": "application/yaml"})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_cassette"
        assert "<admin body>:2" in bad.json()["error"]["message"]
        assert httpx.delete(admin, headers={"x-ormock-admin": "1"}).json() == {"deleted": 1}
        client.responses.create(model="m", input="via admin")
        assert server.engine("t").journal[-1].cassette is None


def test_a_websocket_session_replays_frame_by_frame(upstream: OrmockServer,
                                                    tmp_path: Path) -> None:
    recorded: list[Any] = []

    def drive(client: openai.OpenAI) -> None:
        with client.responses.connect() as connection:
            connection.response.create(model="m", input="over a socket")
            for event in connection:
                recorded.append(event.model_dump())
                if event.type == "response.completed":
                    break

    cassette = _record(namespace(upstream), tmp_path, drive, 1)
    assert cassette.interactions[0].socket is not None
    with OrmockServer(cassettes=[tmp_path], speed=0) as replay:
        client = _client(replay)
        got: list[Any] = []
        with client.responses.connect() as connection:
            connection.response.create(model="m", input="over a socket")
            for event in connection:
                got.append(event.model_dump())
                if event.type == "response.completed":
                    break
        assert got == recorded
        assert replay.engine().journal[-1].cassette is not None


def _server_closes(code: int) -> str:
    return ("version: 1\ninteractions:\n- request: {method: GET, path: /v1/responses}\n"
            "  socket:\n    frames:\n"
            "    - {at: 1, from: client, event: {type: response.create, model: m, input: hi}}\n"
            "    - {at: 2, from: server, event: {type: response.created, sequence_number: 0}}\n"
            f"    close: {{at: 3, code: {code}, by: server}}\n")


@pytest.mark.parametrize(("code", "sent"), [(1006, 1011), (1005, 1011), (1015, 1011),
                                            (2000, 1011), (4001, 4001)])
def test_a_recorded_close_code_no_frame_carries_is_replayed_as_the_recorder_sent_it(
        tmp_path: Path, code: int, sent: int) -> None:
    """1005, 1006 and 1015 are what the recorder notes of an upstream that closed without a
    code, dropped or failed TLS; it sent the client 1011. A replay once tried to send them
    and broke the connection off with a traceback, no close frame."""
    path = tmp_path / "closes.yaml"
    path.write_text(_server_closes(code))
    with OrmockServer(cassettes=[path], speed=0) as replay, websockets.sync.client.connect(
            replay.base_url.replace("http", "ws", 1) + "/responses") as socket_:
        socket_.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
        assert json.loads(socket_.recv(timeout=10))["type"] == "response.created"
        with pytest.raises(ConnectionClosed) as closed:
            socket_.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == sent
        assert list(replay.engine().errors) == []


@pytest.mark.parametrize("code", [99999, 999, -1, 5000])
def test_a_close_code_past_any_websocket_code_is_refused_at_its_line(tmp_path: Path,
                                                                     code: int) -> None:
    path = tmp_path / "closes.yaml"
    path.write_text(_server_closes(code))
    with pytest.raises(CassetteError) as caught:
        load_cassette(path)
    bound = "greater than the maximum of 4999" if code > 4999 else "less than the minimum of 1000"
    assert str(caught.value) == f"{path}:8: interactions[0].socket.close.code: {code} is {bound}"


def test_a_replayed_error_keeps_its_bytes_under_a_profile_that_respells_errors(
        tmp_path: Path) -> None:
    from ormock.cassette import Interaction, RecordedRequest, RecordedResponse, save_cassette
    from ormock.cassette.framing import to_body

    recorded = (b'{"error":{"message":"No response with id resp_x.","type":"not_found",'
                b'"param":"response_id","code":"response_not_found"}}')
    save_cassette(Cassette((Interaction(
        RecordedRequest("GET", "/v1/responses/resp_x"),
        RecordedResponse(404, {"content-type": "application/json"}, body=to_body(recorded))),)),
        tmp_path / "c.yaml")
    with OrmockServer(profile="platform", cassettes=[tmp_path / "c.yaml"], speed=0) as server:
        replayed = httpx.get(f"{server.url}/v1/responses/resp_x")
        assert replayed.status_code == 404 and replayed.content == recorded
        # a live error of the same namespace (the miss) is spelled the profile's way
        live = httpx.get(f"{server.url}/v1/nothing/here").json()["error"]
        assert live["code"] == "cassette_miss" and live["type"] == "invalid_request_error"
