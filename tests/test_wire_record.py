"""What a client receives is what the journal says went out: for every catalogue scenario, over
SSE (the raw bytes of an HTTP stream, read by a plain TCP client) and over a WebSocket (the
text frames), the number of bytes, the event types and sequence numbers in order, and how the
answer ended."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from ormock import OrmockServer
from ormock.protocol.events import TERMINAL_EVENTS
from ormock.protocol.sse import SSEParser, json_events
from ormock.scenario import catalogue

# what the server writes: run again without the cork of ormock.server.http_protocol
# (ORMOCK_HTTP_CORK=0) by `make test`
pytestmark = pytest.mark.wire

SCENARIOS = sorted(catalogue())


@pytest.fixture(scope="module")
def fast() -> Iterator[OrmockServer]:
    """A server with no pacing (``speed=0``): a slow scenario comes at once."""
    with OrmockServer(seed=0, speed=0) as running:
        yield running


FIRST_BYTE = 5.0  # seconds to wait for an answer to begin (a stall is judged after that)


def _journaled(entry: Any) -> list[tuple[Any, Any]]:
    return [(e["type"], e["sequence_number"]) for e in entry.events]


def _pairs(events: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    return [(e.get("type"), e.get("sequence_number")) for e in events]


def _raw_post(url: str, path: str, body: bytes, headers: dict[str, str],
              timeout: float = 0.5) -> tuple[int, bytes, str]:
    """POST over a plain TCP socket, HTTP/1.1: the status, the body bytes as they arrived
    (de-chunked), and how the answer ended as the client saw it (``stalled``: nothing more came
    for ``timeout`` seconds once the answer had begun, ``FIRST_BYTE`` seconds before: a loaded
    machine may take a while to start; ``closed`` / ``reset``: the connection dropped
    mid-body)."""
    host, port = url.removeprefix("http://").split(":")
    head = "".join(f"{k}: {v}\r\n" for k, v in {
        "Host": f"{host}:{port}", "Content-Type": "application/json",
        "Content-Length": str(len(body)), "Connection": "close", **headers}.items())
    received, ended = b"", "whole"
    with socket.create_connection((host, int(port)), timeout=FIRST_BYTE) as conn:
        conn.sendall(f"POST {path} HTTP/1.1\r\n{head}\r\n".encode() + body)
        try:
            while chunk := conn.recv(65536):
                received += chunk
                conn.settimeout(timeout)
        except TimeoutError:
            ended = "stalled"
        except ConnectionResetError:
            ended = "reset"
    status_line, _, rest = received.partition(b"\r\n")
    fields, _, data = rest.partition(b"\r\n\r\n")
    names = {line.split(b":", 1)[0].strip().lower(): line.split(b":", 1)[1].strip()
             for line in fields.split(b"\r\n") if b":" in line}
    if names.get(b"transfer-encoding") != b"chunked":
        return int(status_line.split()[1]), data, ended
    out, last = b"", False
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            last = True
            break
        out, data = out + data[:size], data[size + 2:]
    if ended == "whole" and not last:
        ended = "closed"  # the server closed the connection before the body's end
    return int(status_line.split()[1]), out, ended


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_sse_bytes_are_what_the_journal_records(fast: OrmockServer, name: str) -> None:
    """A raw HTTP/1.1 client's bytes: their count is the journal's ``sent_bytes``, the events
    read from them are the journal's events, and how they ended is its ``ended``."""
    namespace = f"sse-{name}"
    fast.namespaces.open(namespace)
    engine = fast.namespaces.serve(namespace)
    status, body, ended = _raw_post(
        fast.url, f"/{namespace}/v1/responses",
        json.dumps({"model": "m", "input": "hi", "stream": True}).encode(),
        {"X-Ormock-Scenario": name})
    parser = SSEParser()
    events = [*json_events(parser.feed(body)), *json_events(parser.close())]
    if ended == "whole" and status == 200 and not any(
            e.get("type") in TERMINAL_EVENTS for e in events):
        ended = "truncated"
    entry = _finished(engine)
    assert entry.status == status
    assert entry.sent_bytes == len(body)
    assert _journaled(entry) == _pairs(events)
    assert entry.ended == ended


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_websocket_frames_are_what_the_journal_records(fast: OrmockServer,
                                                           name: str) -> None:
    namespace = f"ws-{name}"
    fast.namespaces.open(namespace)
    engine = fast.namespaces.serve(namespace)
    url = fast.url.replace("http", "ws", 1) + f"/{namespace}/v1/responses"
    events: list[dict[str, Any]] = []
    ended, error, code, size = "whole", None, 1011, 0
    with connect(url) as socket:
        socket.send(json.dumps({"type": "response.create", "model": f"ormock:{name}",
                                "input": "hi"}))
        try:
            while True:
                text = socket.recv(timeout=0.5 if events or size else FIRST_BYTE)
                size += len(text.encode() if isinstance(text, str) else text)
                try:
                    event = json.loads(text)
                except ValueError:
                    continue  # a text frame that is not JSON carries no event
                if event.get("type") == "error" and "sequence_number" not in event:
                    error = event
                    break
                events.append(event)
                if event.get("type") in TERMINAL_EVENTS:
                    break
        except ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd is not None else None
            reason = closed.rcvd.reason if closed.rcvd is not None else ""
            ended = "reset" if "(reset)" in reason else "closed"
        except TimeoutError:
            # the turn ended with no terminal event, or the server stopped for good: a
            # server that still listens answers the next message
            socket.send(json.dumps({"type": "response.create", "model": "m", "input": "x"}))
            try:
                socket.recv(timeout=1)
                ended = "truncated"
            except TimeoutError:
                ended = "stalled"
    if error is not None and error["status"] == 400:
        # only an SSE framing fault is refused here, before any reply: no reply writer
        # answers it, and the entry records no bytes
        entry = engine.journal[0]
        assert error["error"]["code"] == "fault_not_on_websocket"
        assert name in {"crlf-framing", "event-type-mismatch", "no-done"}
        assert entry.status == 400 and not entry.events and entry.sent_bytes is None
        return
    if error is not None:  # an HTTP error fault: the writer sends it as an error event
        entry = _finished(engine)
        assert entry.status == error["status"] and not entry.events
        assert entry.sent_bytes == size and entry.ended == "whole"
        return
    entry = _finished(engine)
    assert entry.sent_bytes == size  # every text frame's bytes, as the client got them
    assert entry.status == 200 and code == 1011  # a disconnect fault closes with 1011
    assert _journaled(entry) == _pairs(events)
    assert entry.ended == ended


def _finished(engine: Any) -> Any:
    """The engine's only journal entry, once its answer is over."""
    import time

    deadline = time.monotonic() + 10
    while not engine.journal or engine.journal[0].finished_at is None:
        assert time.monotonic() < deadline, "the answer never finished"
        time.sleep(0.01)
    return engine.journal[0]


def _paced(server: OrmockServer, namespace: str) -> Any:
    server.namespaces.open(namespace)
    engine = server.namespaces.serve(namespace)
    engine.inject({"slow": {"first_event": 0, "per_event": 0.05, "tokens_per_second": None}})
    return engine


def test_a_client_that_leaves_a_paced_sse_stream_is_journaled_as_gone(server: OrmockServer
                                                                     ) -> None:
    engine = _paced(server, "gone-sse")
    parser, events = SSEParser(), []
    with httpx.Client(base_url=f"{server.url}/gone-sse/v1") as http, http.stream(
            "POST", "/responses", json={"model": "m", "input": "Tell me a long story.",
                                        "stream": True}) as answer:
        for chunk in answer.iter_raw():
            events += json_events(parser.feed(chunk))
            if len(events) >= 3:
                break
    entry = _finished(engine)
    assert entry.ended == "client gone"
    assert 3 <= len(entry.events) < 10
    assert _journaled(entry)[:3] == _pairs(events)[:3]


def test_a_client_that_leaves_a_paced_websocket_turn_is_journaled_as_gone(
        server: OrmockServer) -> None:
    engine = _paced(server, "gone-ws")
    with connect(server.url.replace("http", "ws", 1) + "/gone-ws/v1/responses") as socket:
        socket.send(json.dumps({"type": "response.create", "model": "m",
                                "input": "Tell me a long story."}))
        events = [json.loads(socket.recv(timeout=10)) for _ in range(3)]
    entry = _finished(engine)
    assert entry.ended == "client gone"
    assert 3 <= len(entry.events) < 10
    assert _journaled(entry)[:3] == _pairs(events)
