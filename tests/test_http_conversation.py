"""The server's HTTP/1.1 conversation: keep-alive, pipelining, ``Expect: 100-continue``,
HTTP/1.0, chunked bodies, errors, idempotent replays, paced streams and resets, over a raw
socket. ``ormock.server.http_protocol`` corked (a response's head written with its first body
bytes) writes the bytes of its plain protocol (uvicorn's writes): the same conversation against a
server on each, compared byte for byte, the date aside."""

from __future__ import annotations

import json
import logging
import re
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from stores import BACKENDS, store_spec

from ormock import OrmockServer

_HOST = b"127.0.0.1:8787"  # sent to both servers: their journals keep it


def _post(body: Any, path: bytes = b"/v1/responses", headers: bytes = b"",
          version: bytes = b"1.1") -> bytes:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    if b"content-type" not in headers.lower():
        headers += b"Content-Type: application/json\r\n"
    return (b"POST %s HTTP/%s\r\nHost: %s\r\n%sContent-Length: %d\r\n\r\n"
            % (path, version, _HOST, headers, len(raw)) + raw)


def _get(path: bytes) -> bytes:
    return b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, _HOST)


def _chunked(body: Any) -> bytes:
    raw = json.dumps(body).encode()
    parts = [raw[:10], raw[10:]]
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
    return (b"POST /v1/responses HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" % _HOST) + chunks


def _read(stream: Any) -> bytes:
    """One whole response off ``stream`` (its head and its body, by length or chunks; to the
    end of the connection when it has neither); b"" once the server closed it."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = stream.readline()
        if not line:
            return head
        head += line
    fields = head.lower()
    if head.startswith(b"HTTP/1.1 100 "):
        return head
    length = re.search(rb"\r\ncontent-length: (\d+)\r\n", fields)
    if length is not None:
        return head + stream.read(int(length.group(1)))
    if b"\r\ntransfer-encoding: chunked\r\n" not in fields:
        return head + stream.read()
    body = b""
    while True:
        size = stream.readline()
        body += size
        chunk = stream.read(int(size.strip(), 16) + 2)
        body += chunk
        if size.strip() == b"0":
            return head + body


def _same_date(response: bytes) -> bytes:
    return re.sub(rb"\r\ndate: [^\r]*\r\n", b"\r\ndate: -\r\n", response)


class _Talk:
    """A conversation with one server: requests written raw, responses read whole."""

    def __init__(self, server: OrmockServer) -> None:
        self.server = server
        self.heard: list[bytes] = []

    def connect(self) -> tuple[socket.socket, Any]:
        sock = socket.create_connection((self.server.host, self.server.port), timeout=10)
        return sock, sock.makefile("rb")

    def say(self, sock: socket.socket, stream: Any, *requests: bytes) -> None:
        sock.sendall(b"".join(requests))  # more than one: pipelined
        for _ in requests:
            self.heard.append(_same_date(_read(stream)))

    def once(self, request: bytes) -> None:
        """On a connection of its own, read to its end (the server closes it)."""
        sock, stream = self.connect()
        with sock, stream:
            sock.sendall(request)
            try:
                self.heard.append(_same_date(_read(stream)))
                self.heard.append(stream.read())  # nothing more: the server closed it
            except ConnectionResetError:
                self.heard.append(b"reset")


def _conversation(server: OrmockServer) -> list[bytes]:
    talk = _Talk(server)
    sock, stream = talk.connect()
    plain = {"model": "gpt-4o", "input": "the first question"}
    with sock, stream:
        talk.say(sock, stream, _post(plain))
        talk.say(sock, stream, _post({**plain, "stream": True}))
        talk.say(sock, stream, _post(plain))  # repeated: kept by the stream cache
        talk.say(sock, stream, _post(plain))  # again: the stream cache's
        talk.say(sock, stream, _post({"model": "ormock:text", "input": "a scenario's"}))
        talk.say(sock, stream, _post({"model": "ormock:text", "input": "b", "stream": True}))
        talk.say(sock, stream, _post(b"{not json"))
        talk.say(sock, stream, _post(plain, headers=b"Content-Type: text/plain\r\n"))
        talk.say(sock, stream, _post({"model": "gpt-4o", "input": "x", "temperature": "hot"}))
        talk.say(sock, stream, _post({"input": "no model"}))
        talk.say(sock, stream, _post({"model": "gpt-4o", "input": "mine"},
                                     headers=b"X-Request-ID: my-own-id\r\n"))
        talk.say(sock, stream, _post({"model": "gpt-4o", "input": "bad id"},
                                     headers=b"X-Request-ID: not printable\r\n"))
        keyed = _post({"model": "gpt-4o", "input": "keyed"}, headers=b"Idempotency-Key: k1\r\n")
        talk.say(sock, stream, keyed)
        talk.say(sock, stream, keyed)  # the first one's answer again
        talk.say(sock, stream, _post({"model": "gpt-4o", "input": "later",
                                      "background": True}))
        talk.say(sock, stream, _post(plain, path=b"/nowhere/v1/responses"))
        talk.say(sock, stream, _get(b"/v1/models"))
        talk.say(sock, stream, _post({"model": "ormock:slow", "input": "paced",
                                      "stream": True}))
        talk.say(sock, stream, _post({"model": "ormock:slow", "input": "delayed"}))
        talk.say(sock, stream, _post({"model": "ormock:rate-limited-once", "input": "r"}))
        talk.say(sock, stream, _post({"model": "ormock:rate-limited-once", "input": "r"}))
        talk.say(sock, stream, _post({"model": "gpt-4o", "input": "one"}),
                 _post({"model": "gpt-4o", "input": "two", "stream": True}),
                 _get(b"/v1/models"), _post({"model": "gpt-4o", "input": "three"}))
        talk.say(sock, stream, _chunked({"model": "gpt-4o", "input": "in chunks"}))
        talk.say(sock, stream, _post({"model": "gpt-4o", "input": "long " * 30_000}))
        waiting = _post({"model": "gpt-4o", "input": "may I?"}, headers=b"Expect: 100-continue\r\n")
        head, body = waiting.split(b"\r\n\r\n", 1)
        sock.sendall(head + b"\r\n\r\n")
        talk.heard.append(_read(stream))  # 100 Continue
        talk.say(sock, stream, body)
    talk.once(_post(plain, version=b"1.0"))
    talk.once(_post(plain, headers=b"Connection: close\r\n"))
    talk.once(_post({"model": "ormock:disconnect", "input": "dropped"}))
    return talk.heard


def _journal(server: OrmockServer) -> list[dict[str, Any]]:
    base = f"http://{server.host}:{server.port}"
    entries: list[dict[str, Any]] = httpx.get(f"{base}/_ormock/journal").json()["data"]
    for entry in entries:
        for timed in ("at", "finished_at"):
            entry.pop(timed, None)
        for event in entry.get("events") or ():
            event.pop("offset_ms", None)
    return entries


def _served(corked: bool, store: str) -> tuple[list[bytes], list[Any]]:
    # without the cork, uvicorn's plain writes: a head and its body in two writes
    server = OrmockServer(seed=0, speed=200, store=store, cork=corked)
    with server:
        return _conversation(server), _journal(server)


def _store(kind: str, request: pytest.FixtureRequest, tmp_path: Path, which: str) -> str:
    """A store of ``kind`` of its own for each server of a test."""
    if kind == "sqlite":
        return f"sqlite:{tmp_path / which}.db"
    return store_spec(kind, request, tmp_path)


@pytest.mark.parametrize("kind", BACKENDS)
def test_the_corked_protocol_writes_the_plain_protocols_bytes(
        kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    corked, corked_journal = _served(True, _store(kind, request, tmp_path, "a"))
    plain, plain_journal = _served(False, _store(kind, request, tmp_path, "b"))
    assert len(corked) == len(plain)
    for index, (one, other) in enumerate(zip(corked, plain, strict=True)):
        assert one == other, f"response {index} differs"
    assert corked_journal == plain_journal
    statuses = [int(r.split(b" ", 2)[1]) if r.startswith(b"HTTP/") else r for r in corked]
    assert statuses == [200, 200, 200, 200, 200, 200, 400, 415, 400, 400, 200, 200, 200, 200,
                        200, 404, 200, 200, 200, 429, 200, 200, 200, 200, 200, 200, 200, 100,
                        200, 200, b"", 200, b"", b"reset"]
    assert b"x-request-id: my-own-id\r\n" in corked[10]
    assert b"x-idempotent-replayed: true\r\n" in corked[13]
    assert b"connection: close\r\n" in corked[29] and b"connection: close\r\n" in corked[31]
    assert b"transfer-encoding: chunked\r\n" in corked[17]  # paced: its events one by one


def test_a_client_that_leaves_before_its_body_is_in_leaves_nothing() -> None:
    with OrmockServer(seed=0) as server, httpx.Client(base_url=server.base_url) as http:
        with socket.create_connection((server.host, server.port), timeout=5) as sock:
            whole = _post({"model": "gpt-4o", "input": "never finished"})
            sock.sendall(whole[:-5])
        time.sleep(0.1)
        assert http.post("/responses", json={"model": "gpt-4o", "input": "hi"}
                         ).status_code == 200
        assert len(server.engine().journal) == 1


def test_a_server_stops_with_a_create_waiting_for_its_body() -> None:
    server = OrmockServer(seed=0)
    server.start()
    sock = socket.create_connection((server.host, server.port), timeout=5)
    try:
        sock.sendall(_post({"model": "gpt-4o", "input": "half"})[:-3])
        time.sleep(0.05)
        began = time.monotonic()
        server.stop()
        assert time.monotonic() - began < 5
    finally:
        sock.close()


def test_a_request_pipelined_behind_an_answer_is_not_timed_out_as_idle() -> None:
    server = OrmockServer(seed=0, speed=5)
    # read by each connection's protocol (its timer takes a float)
    server._config.timeout_keep_alive = 0.2  # type: ignore[assignment]
    plain = _post({"model": "gpt-4o", "input": "first"})
    with server, socket.create_connection((server.host, server.port), timeout=5) as sock, \
            sock.makefile("rb") as stream:
        # a paced create behind a plain one, longer than the keep-alive timeout
        sock.sendall(plain + _post({"model": "ormock:slow", "input": "paced"}))
        assert _read(stream).startswith(b"HTTP/1.1 200 ")
        assert _read(stream).startswith(b"HTTP/1.1 200 ")
        # a create whose body comes later than the keep-alive timeout
        late = _post({"model": "gpt-4o", "input": "late"})
        split = late.index(b"\r\n\r\n") + 4
        sock.sendall(plain + late[:split])
        assert _read(stream).startswith(b"HTTP/1.1 200 ")
        time.sleep(0.5)
        sock.sendall(late[split:])
        assert _read(stream).startswith(b"HTTP/1.1 200 ")
        assert len(server.engine().journal) == 4


def test_a_request_pipelined_behind_a_closing_answer_is_not_run() -> None:
    server = OrmockServer(seed=0)
    closing = _post({"model": "gpt-4o", "input": "one"}, version=b"1.0",
                    headers=b"Connection: keep-alive\r\n")  # HTTP/1.0: uvicorn closes anyway
    # a create, and a request of another route: neither run once the connection is closing
    behind = _post({"model": "gpt-4o", "input": "two"}) + _post(
        {"name": "behind"}, path=b"/_ormock/namespaces")
    with server, socket.create_connection((server.host, server.port), timeout=5) as sock, \
            sock.makefile("rb") as stream:
        sock.sendall(closing + behind)
        answer = _read(stream)
        assert answer.startswith(b"HTTP/1.1 200 ") and b"connection: close\r\n" in answer
        assert stream.read() == b""
        time.sleep(0.1)
        assert [e.body["input"] for e in server.engine().journal] == ["one"]
        assert "behind" not in server.namespaces.opened()


def test_a_failure_routing_a_create_is_a_500_and_logged(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def failing(name: str) -> None:  # a shared store that cannot be read, say
        raise RuntimeError("the store is down")

    server = OrmockServer(seed=0)  # uvicorn's logging configured
    monkeypatch.setattr(server.namespaces, "find", failing)
    uvicorns = logging.getLogger("uvicorn.error")  # it does not propagate to the root
    uvicorns.addHandler(caplog.handler)
    try:
        with server:
            talk = _Talk(server)
            talk.once(_post({"model": "gpt-4o", "input": "hi"}))
    finally:
        uvicorns.removeHandler(caplog.handler)
    assert talk.heard[0].startswith(b"HTTP/1.1 500 ") and talk.heard[1] == b""
    failed = [r for r in caplog.records if r.exc_info and "store is down" in str(r.exc_info[1])]
    assert len(failed) == 1  # its traceback logged
