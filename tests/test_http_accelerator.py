"""The cork of ``ormock.server.http_protocol`` is an accelerator only: a server with it
(``CorkedProtocol``, the default) and one without (``HttpProtocol``, uvicorn's plain writes) put
the same bytes on the wire for every kind of answer, and a fault that closes or resets the
connection mid-body does so on both (a FIN, or ECONNRESET). Each case runs on a fresh server of
each kind with the same seed, so ids and timestamps agree; the bytes are read off a raw socket,
the ``date`` header aside."""

from __future__ import annotations

import base64
import json
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ormock import OrmockServer
from ormock.server.http_protocol import CorkedProtocol, HttpProtocol
from ormock.server.runner import uvicorn_config

CASSETTE = Path(__file__).parent.parent / "cassettes" / "streamed-text.yaml"
_HOST = b"127.0.0.1:8787"  # sent to both servers alike
_KEY = base64.b64encode(b"ormock accelerat")  # 16 bytes, a WebSocket handshake's, always


def _post(body: Any, last: bool = True) -> bytes:
    """A create; ``last``: the connection's last request (``Connection: close``)."""
    raw = json.dumps(body).encode()
    close = b"Connection: close\r\n" if last else b""
    return (b"POST /v1/responses HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
            b"%sContent-Length: %d\r\n\r\n" % (_HOST, close, len(raw)) + raw)


def _same_date(data: bytes) -> bytes:
    return re.sub(rb"\r\ndate: [^\r]*\r\n", b"\r\ndate: -\r\n", data)


@dataclass(frozen=True)
class Case:
    """A request written on a connection of its own (``Connection: close``), read to the end
    of the connection; ``fault``: injected first; ``ends``: how the connection ends;
    ``shows``: bytes the answer holds that say it is the case it is meant to be."""

    request: bytes
    fault: dict[str, Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    ends: str = "eof"
    shows: bytes = b"HTTP/1.1 200 OK\r\n"


_STREAM = {"model": "gpt-4o", "input": "stream me", "stream": True}
CASES = {
    "json": Case(_post({"model": "gpt-4o", "input": "hi"})),
    "stream": Case(_post(_STREAM)),
    "paced-stream": Case(_post({"model": "ormock:slow", "input": "paced", "stream": True}),
                         shows=b"\r\ntransfer-encoding: chunked\r\n"),  # event by event
    "error-400": Case(_post({"model": "gpt-4o", "input": 5}), shows=b"HTTP/1.1 400 "),
    "fault-429": Case(_post(_STREAM), {"http_error": {"status": 429, "retry_after_ms": 1500}},
                      shows=b"HTTP/1.1 429 "),
    "close-mid-stream": Case(_post(_STREAM), {"disconnect": {"mode": "close", "after_events": 3}}),
    "reset-mid-stream": Case(_post(_STREAM), {"disconnect": {"mode": "reset", "after_events": 3}},
                             ends="reset"),
    "reset-json": Case(_post({"model": "gpt-4o", "input": "hi"}), {"disconnect": "reset"},
                       ends="reset"),
    # started by uvicorn from the first one's task once it is answered: the same connection
    "reset-pipelined": Case(_post({"model": "gpt-4o", "input": "first"}, last=False)
                            + _post({"model": "ormock:disconnect", "input": "second",
                                     "stream": True}), ends="reset"),
    "replayed-cassette": Case(_post({"model": "gpt-4.1-mini", "stream": True,
                                     "input": "Say something short."}),
                              options={"cassettes": [CASSETTE]},
                              shows=b"\r\nx-request-id: req_e4ee8428"),  # the recorded one
}


def _server(cork: bool, **options: Any) -> OrmockServer:
    return OrmockServer(seed=0, speed=200, cork=cork, **options)


def _exchange(server: OrmockServer, request: bytes) -> tuple[bytes, str]:
    """Everything the server writes after ``request`` up to the end of the connection, and how
    it ended: ``eof`` (a FIN) or ``reset``."""
    received = b""
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        sock.sendall(request)
        while True:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                return received, "reset"
            if not data:
                return received, "eof"
            received += data


def _served(cork: bool, case: Case) -> tuple[bytes, str]:
    with _server(cork, **case.options) as server:
        if case.fault is not None:
            server.engine().inject(case.fault)
        data, ended = _exchange(server, case.request)
    return _same_date(data), ended


@pytest.mark.parametrize("name", CASES)
def test_the_cork_writes_the_plain_protocols_bytes(name: str) -> None:
    case = CASES[name]
    corked, corked_end = _served(True, case)
    plain, plain_end = _served(False, case)
    assert corked == plain
    assert corked_end == plain_end == case.ends
    assert corked.startswith(b"HTTP/1.1 ") and case.shows in corked
    last = corked[corked.rindex(b"HTTP/1.1 "):]  # the last answer on the connection
    if case.ends == "reset" or (case.fault is not None and "disconnect" in case.fault):
        assert b"[DONE]" not in last and b'"status":"completed"' not in last  # cut short
    else:  # whole: a JSON body, or a stream's last event (its last chunk when paced)
        assert last.endswith((b"}", b"data: [DONE]\n\n", b"\r\n0\r\n\r\n"))


def _frame(text: bytes) -> bytes:
    """A client's text frame (masked, as a client's must be)."""
    mask = b"\x01\x02\x03\x04"
    masked = bytes(byte ^ mask[index % 4] for index, byte in enumerate(text))
    size = len(text)
    head = b"\x81" + (bytes([0x80 | size]) if size < 126 else b"\xfe" + size.to_bytes(2, "big"))
    return head + mask + masked


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        more = sock.recv(size - len(data))
        assert more, "the connection ended mid-frame"
        data += more
    return data


def _socket_turn(server: OrmockServer) -> bytes:
    """A WebSocket handshake and one turn: the server's bytes up to its terminal event."""
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        sock.sendall(b"GET /v1/responses HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                     b"Sec-WebSocket-Version: 13\r\n\r\n" % (_HOST, _KEY))
        received = b""
        while b"\r\n\r\n" not in received:
            received += _read_exactly(sock, 1)
        assert received.startswith(b"HTTP/1.1 101 "), received
        sock.sendall(_frame(json.dumps({"type": "response.create", "model": "gpt-4o",
                                        "input": "a turn"}).encode()))
        while True:
            head = _read_exactly(sock, 2)
            size = head[1] & 0x7F
            extended = _read_exactly(sock, {126: 2, 127: 8}.get(size, 0))
            length = int.from_bytes(extended, "big") if extended else size
            payload = _read_exactly(sock, length)
            received += head + extended + payload
            if b'"response.completed"' in payload or head[0] & 0x0F != 0x1:
                return received


def test_a_websocket_turn_is_the_same_with_the_cork_and_without() -> None:
    turns = []
    for cork in (True, False):
        with _server(cork) as server:
            turns.append(_same_date(_socket_turn(server)))
    assert turns[0] == turns[1]
    assert b'"response.completed"' in turns[0]


@pytest.mark.parametrize(("value", "protocol"), [
    (None, CorkedProtocol), ("", CorkedProtocol), ("1", CorkedProtocol), ("on", CorkedProtocol),
    ("0", HttpProtocol), ("false", HttpProtocol), ("Off", HttpProtocol)])
def test_the_environment_turns_the_cork_off_where_no_cork_is_given(
        monkeypatch: pytest.MonkeyPatch, value: str | None, protocol: type) -> None:
    if value is None:
        monkeypatch.delenv("ORMOCK_HTTP_CORK", raising=False)
    else:
        monkeypatch.setenv("ORMOCK_HTTP_CORK", value)
    assert uvicorn_config(None, log_level="warning", access_log=False).http is protocol
    # a ``cork`` given beats the environment
    assert uvicorn_config(None, log_level="warning", access_log=False,
                          cork=False).http is HttpProtocol
    assert uvicorn_config(None, log_level="warning", access_log=False,
                          cork=True).http is CorkedProtocol


def test_an_unknown_cork_setting_says_what_it_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORMOCK_HTTP_CORK", "maybe")
    with pytest.raises(ValueError, match=r"ORMOCK_HTTP_CORK='maybe': expected 1 or 0"):
        uvicorn_config(None, log_level="warning", access_log=False)
