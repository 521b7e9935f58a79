"""``ormock.server.http_protocol``: a response's head goes out with its first body bytes, and
nothing waits longer than the step of the loop that wrote it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from ormock import OrmockServer
from ormock.server import http_protocol
from ormock.server.http_protocol import Corked


class _Socket:
    """A transport that records its writes and closes."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.calls: list[str] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self.calls.append("write")

    def close(self) -> None:
        self.calls.append("close")

    def abort(self) -> None:
        self.calls.append("abort")

    def write_eof(self) -> None:
        self.calls.append("write_eof")

    def get_write_buffer_size(self) -> int:
        return 7

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"

    def is_closing(self) -> bool:
        return "close" in self.calls


def _corked() -> tuple[Corked, _Socket, asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    socket = _Socket()
    return Corked(socket, loop), socket, loop  # type: ignore[arg-type]


def _step(loop: asyncio.AbstractEventLoop) -> None:
    """Run the loop's callbacks that are ready (the end of the current step)."""
    loop.run_until_complete(asyncio.sleep(0))


def test_two_writes_of_one_step_are_one_write() -> None:
    transport, socket, loop = _corked()
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    assert socket.writes == []
    transport.write(b"{}")
    assert socket.writes == [b"HTTP/1.1 200 OK\r\n\r\n{}"]
    _step(loop)  # the flush scheduled for the first finds nothing held
    assert socket.writes == [b"HTTP/1.1 200 OK\r\n\r\n{}"]
    loop.close()


def test_a_lone_write_goes_out_at_the_end_of_its_step() -> None:
    transport, socket, loop = _corked()
    transport.write(b"head")
    assert transport.get_write_buffer_size() == 7 + 4
    _step(loop)
    assert socket.writes == [b"head"]
    transport.write(b"event 1")
    _step(loop)
    transport.write(b"event 2")
    _step(loop)
    assert socket.writes == [b"head", b"event 1", b"event 2"]
    loop.close()


def test_a_large_body_is_written_after_the_head_not_copied_onto_it() -> None:
    transport, socket, loop = _corked()
    body = b"x" * (http_protocol._JOINED + 1)
    transport.write(b"head")
    transport.write(body)
    assert socket.writes == [b"head", body]
    loop.close()


@pytest.mark.parametrize("end", ["close", "abort", "write_eof"])
def test_what_is_held_goes_out_before_the_connection_ends(end: str) -> None:
    transport, socket, loop = _corked()
    transport.write(b"half an event")
    getattr(transport, end)()
    assert socket.calls == ["write", end]
    assert transport.is_closing() == (end == "close")
    assert socket.writes == [b"half an event"]
    _step(loop)
    assert socket.writes == [b"half an event"]
    loop.close()


def test_anything_else_is_the_wrapped_transports() -> None:
    transport, socket, loop = _corked()
    assert transport.get_extra_info("peername") == "info peername"
    assert not transport.is_closing()
    transport.writelines([b"a", b"b"])
    _step(loop)
    assert socket.writes == [b"ab"]
    loop.close()


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[list[bytes]]:
    """The socket writes of each connection a server opened while the test runs."""
    made: list[list[bytes]] = []
    real = Corked.__init__

    class Spy:
        def __init__(self, transport: Any) -> None:
            self.transport, self.writes = transport, []
            made.append(self.writes)

        def write(self, data: bytes) -> None:
            self.writes.append(bytes(data))
            self.transport.write(data)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.transport, name)

    def spied(self: Corked, transport: Any, loop: Any) -> None:
        real(self, Spy(transport), loop)  # type: ignore[arg-type]

    monkeypatch.setattr(Corked, "__init__", spied)
    return made


def test_a_json_reply_is_one_write_on_a_real_server(writes: list[list[bytes]]) -> None:
    with OrmockServer(seed=0, cork=True) as server, httpx.Client(base_url=server.url) as http:
        answer = http.post("/v1/responses", json={"model": "m", "input": "hi"})
        error = http.post("/v1/responses", json={"model": "m", "input": 5})
    assert answer.status_code == 200
    assert error.status_code == 400
    (connection,) = writes
    assert len(connection) == 2  # the reply, then the error envelope: each one write
    head, _, body = connection[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert body == answer.content
    assert json.loads(body)["status"] == "completed"
    assert connection[1].startswith(b"HTTP/1.1 400 ")
    assert connection[1].endswith(error.content)


def test_a_paced_stream_still_sends_each_event_when_it_comes(
        writes: list[list[bytes]]) -> None:
    with OrmockServer(seed=0, cork=True) as server, httpx.Client(base_url=server.url) as http:
        server.engine().inject({"slow": {"first_event": 0.01, "tokens_per_second": None,
                                       "per_event": 0.01}})
        with http.stream("POST", "/v1/responses",
                         json={"model": "m", "input": "hi", "stream": True}) as streamed:
            body = b"".join(streamed.iter_raw())
    (connection,) = writes
    assert connection[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert connection[0].endswith(b"\r\n\r\n")  # the head alone: the first event waits
    events = body.count(b"\nevent: ") + body.startswith(b"event: ")
    assert events > 3
    assert len(connection) >= events  # each paced event its own write, as before
