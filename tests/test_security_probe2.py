"""Safe beside real keys, round two (issue 28): the recorder's and the server's perimeter, the
copied curl, the recorder's body limit and its paths. One test (or a parametrized group) per
finding of the second outside probe, named after it; each failed before its fix."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from raw_http import answer_to
from recordings import raw_upstream, recorded
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from ormock import OrmockServer
from ormock.server.recorder import RecorderServer

UPSTREAM_KEY = "sk-" + "upstream-real-key-never-lent-0123456789"
FOREIGN = {"host": "attacker.example", "origin": "http://attacker.example",
           "content-type": "text/plain"}
ANSWER = b'{"id":"resp_1","object":"response","status":"completed","output":[]}'


async def answer_json(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                 + str(len(ANSWER)).encode() + b"\r\nconnection: close\r\n\r\n" + ANSWER)
    await writer.drain()


@pytest.fixture
def upstream() -> Iterator[tuple[str, list[bytes]]]:
    """A raw upstream that answers every request with one JSON body; the heads it read."""
    with raw_upstream(answer_json) as running:
        yield running


@pytest.fixture
def recorder(upstream: tuple[str, list[bytes]], tmp_path: Path) -> Iterator[RecorderServer]:
    with RecorderServer(upstream[0], tmp_path, name="session", upstream_key=UPSTREAM_KEY,
                        log=lambda line: None, max_body=1024) as running:
        yield running


def sent(recorder: RecorderServer, data: bytes) -> bytes:
    """The recorder's answer to a request of which only ``data`` was sent."""
    return answer_to(recorder.host, recorder.port, data)


def error_of(answer: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body)["error"]


# -- finding 1: the perimeter of every route of every server


def test_finding1_the_recorder_lends_no_key_to_a_foreign_page(
        recorder: RecorderServer, upstream: tuple[str, list[bytes]]) -> None:
    """The probe's curl: a DNS-rebinding Host, a foreign Origin, a text/plain body."""
    body = b'{"model":"gpt-4o","input":"spend the key"}'
    for headers, param in ((FOREIGN, "host"),
                           ({**FOREIGN, "host": f"127.0.0.1:{recorder.port}"}, "origin"),
                           ({"origin": "null", "content-type": "text/plain"}, "origin"),
                           ({"sec-fetch-site": "cross-site"}, "sec-fetch-site")):
        answer = httpx.post(recorder.base_url + "/responses", content=body, headers=headers)
        assert answer.status_code == 403, (headers, answer.text)
        error = answer.json()["error"]
        assert error["param"] == param and error["type"] == "permission_denied"
        assert "attacker" not in error["message"]  # nothing of the request repeated
    assert upstream[1] == []  # nothing reached the upstream, with the key or without
    # a client (no Origin) and a page on this machine are relayed, the key given to the upstream
    assert httpx.post(recorder.base_url + "/responses", content=body).status_code == 200
    page = {"origin": "http://localhost:3000", "sec-fetch-site": "same-site"}
    assert httpx.post(recorder.base_url + "/responses", content=body,
                      headers=page).status_code == 200
    assert len(upstream[1]) == 2 and UPSTREAM_KEY.encode() in upstream[1][0]


def test_finding1_the_recorder_refuses_a_foreign_websocket(tmp_path: Path) -> None:
    with OrmockServer() as upstream, RecorderServer(
            upstream.base_url, tmp_path, name="ws", upstream_key=UPSTREAM_KEY,
            log=lambda line: None) as recorder:
        url = recorder.base_url.replace("http://", "ws://") + "/responses"
        for headers in ({"Origin": "http://attacker.example"},
                        {"Host": "attacker.example", "Origin": "http://attacker.example"}):
            with pytest.raises(InvalidStatus) as refused:
                connect(url, additional_headers=headers, open_timeout=5)
            assert refused.value.response.status_code == 403
        assert list(upstream.engine().journal) == []
        with connect(url, additional_headers={"Origin": "http://localhost:5173"},
                     open_timeout=5) as socket_:
            socket_.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
            assert json.loads(socket_.recv(5))["type"] == "response.created"


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/models", "/v1/responses/resp_x"])
def test_finding1_serve_answers_no_foreign_page(path: str) -> None:
    with OrmockServer(allowed_hosts=["ormock.test"]) as server:
        method = "POST" if path == "/v1/responses" else "GET"
        body = b'{"model":"m","input":"hi"}'
        for headers, param in ((FOREIGN, "host"), ({"host": "ormock.test.evil.example"}, "host"),
                               ({"origin": "http://attacker.example"}, "origin"),
                               ({"host": "ormock", "origin": "http://other"}, "origin"),
                               ({"sec-fetch-site": "cross-site"}, "sec-fetch-site")):
            answer = httpx.request(method, server.url + path, content=body,
                                   headers={"content-type": "application/json", **headers})
            assert answer.status_code == 403 and answer.json()["error"]["param"] == param
        assert list(server.engine().journal) == []
        # an --allowed-host name, an IP address, a page on it or on localhost are answered
        for headers in ({"host": f"ormock.test:{server.port}"},
                        {"host": f"127.0.0.2:{server.port}"}, {"host": "testserver"},
                        {"host": "ormock:8787", "origin": "http://ormock:3000"},
                        {"host": "ormock.test", "origin": "http://ormock.test:8080"},
                        {"origin": "http://localhost:3000"}):
            answer = httpx.request(method, server.url + path, content=body,
                                   headers={"content-type": "application/json", **headers})
            assert answer.status_code != 403, (headers, answer.text)


def test_finding1_serve_refuses_a_foreign_websocket() -> None:
    with OrmockServer() as server:
        url = server.base_url.replace("http://", "ws://") + "/responses"
        with pytest.raises(InvalidStatus) as refused:
            connect(url, additional_headers={"Origin": "http://attacker.example"},
                    open_timeout=5)
        assert refused.value.response.status_code == 403


# -- finding 2: "copy as curl" quotes every argument


def test_finding2_a_copied_curl_runs_nothing_when_pasted(recorder: RecorderServer,
                                                          tmp_path: Path) -> None:
    """The recorder's journal keeps every request relayed, whatever its path; its page's "copy
    as curl", pasted into a shell, runs curl and nothing else."""
    planted = tmp_path / "PWNED"
    ran = tmp_path / "ran"
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "curl").write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    (fake / "uname").write_text(f"#!/bin/sh\ntouch {ran}\n")
    for tool in ("curl", "uname"):
        (fake / tool).chmod(stat.S_IRWXU)
    segment = f"x;touch {planted};#?y"  # sent escaped: %3B, %20, %23, %3F
    server = recorder
    httpx.post(f"{server.url}/v1/{quote(segment, safe='')}", json={"model": "m"},
               headers={"x-`uname`-key": "sk-" + "a" * 30, "x-note": "v`uname`$(uname)"})
    httpx.post(f"{server.url}/v1/responses", json={"input": "it's $(uname) `uname`"},
               headers={"authorization": "Bearer sk-" + "b" * 30})
    entries = list(recorder.app.journal.engine.journal)
    assert len(entries) == 2
    commands = [httpx.get(f"{server.url}/_ormock/journal/{e.id}").json()["curl"]
                for e in entries]
    base = server.url
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "OPENAI_API_KEY": "k1",
           "X__UNAME__KEY": "k2"}
    argv = [subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True,
                           check=True, timeout=10).stdout.splitlines() for command in commands]
    assert not planted.exists() and not ran.exists()
    # the URL is the request's own path, escaped again; a masked value comes from a variable
    assert argv[0][2] == base + "/v1/" + quote(segment, safe="/;")
    assert "x-`uname`-key: k2" in argv[0] and "x-note: v`uname`$(uname)" in argv[0]
    assert "authorization: Bearer k1" in [a.lower().replace("bearer", "Bearer") for a in argv[1]]
    assert json.loads(argv[1][argv[1].index("-d") + 1])["input"] == "it's $(uname) `uname`"


# -- finding 4: the recorder's body limit


def test_finding4_the_recorder_refuses_a_body_past_max_body_at_once(
        recorder: RecorderServer, upstream: tuple[str, list[bytes]]) -> None:
    head = (f"POST /v1/responses HTTP/1.1\r\nhost: 127.0.0.1:{recorder.port}\r\n"
            "content-type: application/json\r\n").encode()
    # a declared length past the limit, one byte sent: 413 without waiting for the rest
    answer = sent(recorder, head + b"content-length: 99999999999\r\n\r\n{")
    status, error = error_of(answer)
    assert status == 413 and error["code"] == "request_too_large" and error["param"] == "body"
    assert b"connection: close" in answer.lower()
    # a chunked body that passes it as it comes
    chunk = b"x" * 2000
    answer = sent(recorder, head + b"transfer-encoding: chunked\r\n\r\n"
                      + f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n0\r\n\r\n")
    assert error_of(answer)[0] == 413
    assert upstream[1] == []
    small = httpx.post(recorder.base_url + "/responses", json={"model": "m", "input": "hi"})
    assert small.status_code == 200 and len(upstream[1]) == 1
    assert len(recorded(recorder, 1).interactions) == 1


def test_finding4_record_takes_max_body_and_allowed_host(tmp_path: Path) -> None:
    """``ormock record --max-body N --allowed-host NAME``, as a user starts it."""
    with OrmockServer() as upstream, subprocess.Popen(
            [sys.executable, "-m", "ormock", "record", "--upstream", upstream.base_url,
             "--cassettes", str(tmp_path), "--port", "0", "--max-body", "100",
             "--allowed-host", "recorder.test"],
            stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stderr is not None
            line = process.stderr.readline()
            base = re.search(r" on (http://\S+/v1) ", line)
            assert base, line
            url = base.group(1)
            too_big = httpx.post(url + "/responses", json={"model": "m", "input": "x" * 200})
            assert too_big.status_code == 413
            named = httpx.post(url + "/responses", json={"model": "m", "input": "hi"},
                               headers={"host": "recorder.test"})
            assert named.status_code == 200
            foreign = httpx.post(url + "/responses", json={"model": "m", "input": "hi"},
                                 headers={"host": "other.test"})
            assert foreign.status_code == 403
        finally:
            process.terminate()


# -- finding 8: the recorder's paths


@pytest.mark.parametrize(("target", "status"), [
    (b"*", 400),
    (b"/v1/%2e%2e/%2e%2e/secret", 400),
    (b"/v1/./responses", 400),
    (b"/v1/..%5c..%5csecret", 400),
])
def test_finding8_a_target_outside_the_upstreams_base_is_400(
        recorder: RecorderServer, upstream: tuple[str, list[bytes]], target: bytes,
        status: int) -> None:
    answer = sent(recorder, b"GET " + target + b" HTTP/1.1\r\nhost: localhost\r\n\r\n")
    code, error = error_of(answer)
    assert code == status and error["code"] == "invalid_path" and error["param"] == "path"
    assert upstream[1] == []


@pytest.mark.parametrize("path", ["/v1/x%0d%0ay", "/v1/x%3Fy%23z", "/v1/a%2Fb"])
def test_finding8_the_upstream_gets_exactly_the_path_sent(
        recorder: RecorderServer, upstream: tuple[str, list[bytes]], path: str) -> None:
    answer = sent(recorder, f"GET {path}?q=1 HTTP/1.1\r\nhost: localhost\r\n\r\n"
                      .encode())
    assert answer.startswith(b"HTTP/1.1 200"), answer
    (head,) = upstream[1]
    assert head.split(b"\r\n")[0] == f"GET {path}?q=1 HTTP/1.1".encode()
    request = recorded(recorder, 1).interactions[0].request
    assert request.query == "q=1" and request.path == httpx.URL(path).path
