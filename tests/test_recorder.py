"""``ormock record``: a real proxy between real clients (the openai SDK, httpx) and real upstreams
(an ``OrmockServer``, and a raw asyncio TCP server writing handwritten HTTP/1.1), all on
127.0.0.1; what the client gets and what the cassette file says are compared."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
import os
import random
import re
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from recordings import Script, namespace, raw_upstream, recorded

from ormock import OrmockServer
from ormock.cassette import load_cassette
from ormock.cassette.fileformat import response_bytes
from ormock.cli import main
from ormock.server.recorder import RecorderServer, upstream_target
from ormock.server.recorder_file import public_url

ROOT = Path(__file__).resolve().parent.parent
DUMMY_KEY = "sk-" + "test-recorder-dummy-0123456789abcdef"
PACED = {
    "name": "paced",
    "steps": [{"times": "forever", "reply": {
        "pacing": {"per_event": 0.05},
        "items": [{"message": "one two three four five six seven eight nine ten"}]}}],
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[OrmockServer]:
    with OrmockServer(seed=0) as running:
        yield running


@contextmanager
def recording(upstream_url: str, folder: Path, **options: Any
              ) -> Iterator[tuple[RecorderServer, list[str]]]:
    lines: list[str] = []
    with RecorderServer(upstream_url, folder, name="session", log=lines.append,
                        **options) as recorder:
        yield recorder, lines


def no_key_in(folder: Path, *keys: str) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            for key in keys:
                assert key not in text, f"{key!r} written to {path}"


def sdk(recorder: RecorderServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=recorder.base_url, api_key=DUMMY_KEY, max_retries=0)


# -- where requests go


@pytest.mark.parametrize(("upstream_url", "path", "target"), [
    ("http://host/v1", "/v1/responses", "http://host/v1/responses"),
    ("http://host", "/v1/responses", "http://host/v1/responses"),
    ("http://host/v1/", "/v1/models", "http://host/v1/models"),
    ("https://host/openai/v1", "/v1/responses", "https://host/openai/v1/responses"),
    ("http://host/v1", "/health", "http://host/v1/health"),
])
def test_upstream_target(upstream_url: str, path: str, target: str) -> None:
    assert upstream_target(upstream_url, path) == target


def test_public_url_has_no_credentials() -> None:
    assert public_url("https://user:pw@api.example.com:8443/v1?key=s#x") == \
        "https://api.example.com:8443/v1"


# -- an OrmockServer upstream, the openai SDK as the client


def test_stream_is_relayed_as_it_arrives_and_recorded(upstream: OrmockServer,
                                                      tmp_path: Path) -> None:
    url = namespace(upstream, PACED)
    with recording(url, tmp_path) as (recorder, lines):
        with sdk(recorder) as client:
            sent = time.monotonic()
            got, times = [], []
            for event in client.responses.create(model="m", input="Count.", stream=True):
                times.append(time.monotonic() - sent)
                got.append(event.to_dict())
        cassette = recorded(recorder, 1)
    response = cassette.interactions[0].response
    assert response is not None and response.messages is not None
    assert response.status == 200 and response.ended == "whole"
    events = [m.event for m in response.messages if m.event is not None]
    assert len(events) >= 10
    assert events == got
    assert response.messages[-1].done
    # the first event reached the client before the upstream had sent its last one
    last_chunk = response.chunks[-1][0] / 1000
    assert times[0] < last_chunk
    assert times[0] < times[-1]
    ats = [m.at for m in response.messages if m.event is not None]
    gaps = [b - a for a, b in itertools.pairwise(ats)]
    assert all(gap > 0 for gap in gaps)
    assert 40 <= statistics.median(gaps) <= 100  # the upstream's 50 ms between events
    assert re.fullmatch(r"POST /v1/responses 200 \d+ events \d+ ms", lines[0])
    assert cassette.interactions[0].request.headers["authorization"] == "REDACTED"
    assert cassette.upstream == url
    assert cassette.recorded_with is not None and cassette.recorded_with.startswith("ormock ")
    no_key_in(tmp_path, DUMMY_KEY)


def test_the_bytes_and_writes_the_client_got_are_the_cassettes(upstream: OrmockServer,
                                                               tmp_path: Path) -> None:
    with recording(namespace(upstream, PACED), tmp_path) as (recorder, _), \
            httpx.Client(base_url=recorder.base_url, timeout=10) as client:
        with client.stream("POST", "/responses", json={"model": "m", "input": "x",
                                                         "stream": True}) as answer:
            body = b"".join(answer.iter_raw())
        listed = client.get("/models")
        cassette = recorded(recorder, 2)
    stream, models = (i.response for i in cassette.interactions)
    assert stream is not None and models is not None
    assert response_bytes(stream) == body
    assert sum(size for _, size in stream.chunks) == len(body)
    assert len(stream.chunks) > 5  # one write per paced event, not one buffered body
    assert models.body is not None and models.body.json == listed.json()
    assert cassette.interactions[1].request.method == "GET"


def test_upstream_key_replaces_the_clients(tmp_path: Path) -> None:
    real_key = "sk-" + "upstream-real-key-9876543210fedcba"
    with OrmockServer(seed=0, api_key=real_key) as guarded, \
            recording(guarded.base_url, tmp_path, upstream_key=real_key) as (recorder, _), \
            sdk(recorder) as client:
        reply = client.responses.create(model="m", input="hi")
        assert reply.output_text
        recorded(recorder, 1)
    no_key_in(tmp_path, real_key, DUMMY_KEY)


def test_without_upstream_key_the_clients_goes_through(tmp_path: Path) -> None:
    with OrmockServer(seed=0, api_key=DUMMY_KEY) as guarded, \
            recording(guarded.base_url, tmp_path) as (recorder, _), sdk(recorder) as client:
        assert client.responses.create(model="m", input="hi").output_text
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=recorder.base_url, api_key="sk-" + "wrong-key-000000000000",
                          max_retries=0).responses.create(model="m", input="hi")
        cassette = recorded(recorder, 2)
    assert [i.response.status for i in cassette.interactions if i.response] == [200, 401]
    no_key_in(tmp_path, DUMMY_KEY, "sk-" + "wrong-key-000000000000")


def test_a_429_is_recorded_with_its_headers(upstream: OrmockServer, tmp_path: Path) -> None:
    with recording(namespace(upstream, "rate-limited"), tmp_path) as (recorder, lines), \
            sdk(recorder) as client:
        with pytest.raises(openai.RateLimitError) as raised:
            client.responses.create(model="m", input="hi")
        cassette = recorded(recorder, 1)
    response = cassette.interactions[0].response
    assert response is not None and response.status == 429
    assert response.headers["retry-after-ms"] == raised.value.response.headers["retry-after-ms"]
    assert any(name.startswith("x-ratelimit-") for name in response.headers)
    assert response.body is not None and response.body.json == raised.value.response.json()
    assert lines[0].startswith("POST /v1/responses 429 body")


def test_redaction_options_and_a_refused_write(upstream: OrmockServer, tmp_path: Path) -> None:
    leaky = {"x-trace-secretish": "sk-" + "proj-abcdefghijklmnopqrstuvwx"}  # not a secret name
    with recording(namespace(upstream), tmp_path, redact_headers=["X-Team"],
                   redact_paths=["metadata.user_id"]) as (recorder, lines), \
            httpx.Client(base_url=recorder.base_url, timeout=10) as client:
        body = {"model": "m", "input": "hi", "metadata": {"user_id": "u-42", "run": "7"}}
        assert client.post("/responses", json=body, headers={"x-team": "blue"}).is_success
        recorded(recorder, 1)
        before = recorder.cassette.read_text()
        assert client.post("/responses", json=body, headers={"x-other": leaky[
            "x-trace-secretish"]}).is_success  # relayed all the same
        deadline = time.monotonic() + 5
        while not any("not recorded" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert recorder.cassette.read_text() == before  # the previous file stays
        assert client.post("/responses", json=body).is_success  # and recording goes on
        cassette = recorded(recorder, 2)
    refusal = next(line for line in lines if "not recorded" in line)
    assert "refusing to write" in refusal and "--redact-header" in refusal
    first = cassette.interactions[0].request
    assert first.headers["x-team"] == "REDACTED"
    assert first.body is not None and first.body["metadata"] == {"user_id": "REDACTED",
                                                                 "run": "7"}
    no_key_in(tmp_path, leaky["x-trace-secretish"])


def test_a_key_in_the_query_is_redacted_logged_masked_and_replays(upstream: OrmockServer,
                                                                  tmp_path: Path) -> None:
    """Google's ``?key=``, Azure's ``api-key``, an ``access_token``: not key-shaped, so the
    last scan let them into the cassette and the stderr line printed them whole."""
    keys = {"key": "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6q",
            "api-key": "0123456789abcdef0123456789abcdef", "access_token": "ya29.a0AfH6SMBx3abc"}
    query = "alt=sse&" + "&".join(f"{name}={value}" for name, value in keys.items())
    with recording(namespace(upstream), tmp_path) as (recorder, lines):
        assert httpx.post(f"{recorder.base_url}/responses?{query}", timeout=10,
                          json={"model": "m", "input": "hi"}).is_success
        cassette = recorded(recorder, 1)
    assert cassette.interactions[0].request.query == (
        "alt=sse&key=REDACTED&api-key=REDACTED&access_token=REDACTED")
    assert lines[0].startswith("POST /v1/responses?alt=sse&key=***&api-key=***&access_token=***")
    no_key_in(tmp_path, *keys.values())
    with OrmockServer(cassettes=[recorder.cassette], speed=0) as replay:
        other = "alt=sse&key=AIzaAnotherKeyOfTheSameUser0123456&api-key=x&access_token=y"
        assert httpx.post(f"{replay.base_url}/responses?{other}", timeout=10,
                          json={"model": "m", "input": "hi"}).is_success
        missed = httpx.post(f"{replay.base_url}/responses?{other}&more=1", timeout=10,
                            json={"model": "m", "input": "hi"})
    assert missed.json()["error"]["code"] == "cassette_miss"
    assert "AIzaAnother" not in missed.text and "key=***" in missed.text


def test_unreachable_upstream_is_a_502_and_not_recorded(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with recording(f"http://127.0.0.1:{port}/v1", tmp_path) as (recorder, lines):
        answer = httpx.post(recorder.base_url + "/responses", json={"model": "m"}, timeout=10)
        assert answer.status_code == 502
        error = answer.json()["error"]
        assert error["code"] == "upstream_unreachable" and error["type"] == "server_error"
        assert set(error) == {"message", "type", "param", "code"}
        time.sleep(0.05)
        assert load_cassette(recorder.cassette).interactions == ()
    assert "answered 502, not recorded" in lines[0]


def test_a_websocket_session_is_recorded(upstream: OrmockServer, tmp_path: Path) -> None:
    with recording(namespace(upstream), tmp_path) as (recorder, lines), \
            sdk(recorder) as client:
        got = []
        with client.responses.connect() as connection:
            connection.response.create(model="m", input="Count to three.")
            for event in connection:
                got.append(event.to_dict())
                if event.type == "response.completed":
                    break
        cassette = recorded(recorder, 1)
    interaction = cassette.interactions[0]
    assert interaction.request.method == "GET" and interaction.request.path == "/v1/responses"
    assert interaction.request.headers["authorization"] == "REDACTED"
    session = interaction.socket
    assert session is not None and interaction.response is None
    first = session.frames[0]
    assert first.sender == "client" and first.event is not None
    assert first.event["type"] == "response.create" and first.event["input"] == "Count to three."
    served = [f.event for f in session.frames if f.sender == "server"]
    assert served == got
    ats = [f.at for f in session.frames]
    assert ats == sorted(ats)
    assert session.closed_by == "client" and session.close_code == 1000
    assert session.close_at >= ats[-1]
    assert lines[0].startswith("WS /v1/responses ")
    no_key_in(tmp_path, DUMMY_KEY)


# -- a raw upstream: handwritten HTTP/1.1, so it can drop, reset and stall


HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\n\r\n")


def sse(n: int) -> bytes:
    event = {"type": "response.output_text.delta", "sequence_number": n, "delta": f" w{n}"}
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def post_stream(recorder: RecorderServer, timeout: float = 10) -> tuple[bytes, Exception | None]:
    """What a client reads of a streamed POST, and the error it ended with."""
    got = b""
    try:
        with httpx.stream("POST", recorder.base_url + "/responses",
                          json={"model": "m", "stream": True},
                          timeout=httpx.Timeout(10, read=timeout)) as answer:
            for data in answer.iter_raw():
                got += data
    except httpx.HTTPError as error:
        return got, error
    return got, None


async def dropped(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(HEAD + chunk(sse(0)))
    await writer.drain()
    await asyncio.sleep(0.05)
    writer.write(chunk(sse(1)))
    await writer.drain()
    await asyncio.sleep(0.05)  # then a FIN, with no last chunk


def test_an_upstream_closing_mid_body_is_recorded_closed(tmp_path: Path) -> None:
    with raw_upstream(dropped) as (url, _), recording(url, tmp_path) as (recorder, lines):
        got, error = post_stream(recorder)
        cassette = recorded(recorder, 1)
    assert isinstance(error, httpx.RemoteProtocolError)  # the client's connection closed too
    response = cassette.interactions[0].response
    assert response is not None and response.ended == "closed"
    assert response_bytes(response) == sse(0) + sse(1) == got
    assert response.end_at >= response.messages[-1].at if response.messages else False
    assert lines[0].endswith("(closed)")


async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(HEAD + chunk(sse(0)))
    await writer.drain()
    await asyncio.sleep(0.05)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def test_an_upstream_reset_is_recorded_reset(tmp_path: Path) -> None:
    with raw_upstream(reset) as (url, _), recording(url, tmp_path) as (recorder, _):
        got, error = post_stream(recorder)
        cassette = recorded(recorder, 1)
    assert isinstance(error, httpx.ReadError)  # the client's connection was reset too
    response = cassette.interactions[0].response
    assert response is not None and response.ended == "reset"
    assert response_bytes(response) == sse(0) == got


async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(HEAD + chunk(sse(0)) + chunk(sse(1)))
    await writer.drain()
    await reader.read()  # nothing more, until the recorder lets go


def test_a_client_leaving_a_stall_is_recorded_stalled(tmp_path: Path) -> None:
    with raw_upstream(stall) as (url, _), recording(url, tmp_path) as (recorder, lines):
        got, error = post_stream(recorder, timeout=0.3)
        cassette = recorded(recorder, 1)
    assert isinstance(error, httpx.ReadTimeout)
    response = cassette.interactions[0].response
    assert response is not None and response.ended == "stalled"
    assert response_bytes(response) == sse(0) + sse(1) == got
    assert response.messages is not None and response.end_at > response.messages[-1].at
    assert lines[0].endswith("(stalled)")


async def slow_start(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await asyncio.sleep(0.2)
    writer.write(HEAD)
    await writer.drain()
    await asyncio.sleep(0.2)
    writer.write(chunk(sse(0)) + chunk(sse(1)) + b"0\r\n\r\n")
    await writer.drain()


def test_a_slow_first_byte_is_in_the_offsets(tmp_path: Path) -> None:
    with raw_upstream(slow_start) as (url, heads), recording(url, tmp_path) as (recorder, _):
        got, error = post_stream(recorder)
        cassette = recorded(recorder, 1)
    assert error is None
    response = cassette.interactions[0].response
    assert response is not None and response.messages is not None
    assert response.ended == "whole" and response_bytes(response) == got
    assert response.headers_at >= 200
    # the upstream's 200 ms between its headers and its first event (less the arrival jitter
    # of its headers, on a loaded machine)
    assert response.messages[0].at - response.headers_at >= 150
    assert b"accept-encoding: identity" in heads[0].lower()


async def gzipped(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    data = gzip.compress(sse(0) + sse(1))  # though the recorder asked for identity
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: "
                 b"gzip\r\ncontent-length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    await writer.drain()


def test_a_compressed_answer_is_relayed_as_sent_and_recorded_decoded(tmp_path: Path) -> None:
    with raw_upstream(gzipped) as (url, _), recording(url, tmp_path) as (recorder, _):
        answer = httpx.post(recorder.base_url + "/responses", json={"model": "m"}, timeout=10)
        cassette = recorded(recorder, 1)
    assert answer.headers["content-encoding"] == "gzip"
    assert answer.content == sse(0) + sse(1)  # httpx decoded what was relayed
    response = cassette.interactions[0].response
    assert response is not None and "content-encoding" not in response.headers
    assert response_bytes(response) == sse(0) + sse(1)


async def gzip_bomb(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1024 * 1024)  # 40 MiB of zeros in 40 KB of gzip
    data = b"".join(packer.compress(zeros) for _ in range(40)) + packer.flush()
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n"
                 b"content-encoding: gzip\r\ncontent-length: " + str(len(data)).encode()
                 + b"\r\n\r\n" + data)
    await writer.drain()


def test_finding6_a_gzip_bomb_from_the_upstream_is_relayed_and_not_recorded(
        tmp_path: Path) -> None:
    with raw_upstream(gzip_bomb) as (url, _), recording(url, tmp_path) as (recorder, lines):
        with httpx.stream("POST", recorder.base_url + "/responses", json={"model": "m"},
                          timeout=10) as answer:
            relayed = b"".join(answer.iter_raw())  # as sent: the client may decode it
        deadline = time.monotonic() + 10
        while not lines and time.monotonic() < deadline:  # logged after the last byte
            time.sleep(0.01)
        assert len(relayed) < 100_000 and answer.headers["content-encoding"] == "gzip"
        assert lines == ["ormock record: POST /v1/responses: the gzip body inflates past 32 "
                         "MiB (MAX_INFLATED), the most a recorded body may be decoded to: "
                         "relayed, not recorded"]
        assert load_cassette(recorder.cassette).interactions == ()


# -- the command


def test_record_command_refuses_what_it_cannot_do(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ORMOCK_TEST_NO_SUCH_KEY", raising=False)
    base = ["record", "--cassettes", str(tmp_path), "--port", "0"]
    assert main([*base, "--upstream", "ftp://host/v1"]) == 2
    assert "give an http:// or https:// URL" in capsys.readouterr().err
    assert main([*base, "--upstream", "http://127.0.0.1:9/v1",
                 "--upstream-key-env", "ORMOCK_TEST_NO_SUCH_KEY"]) == 2
    assert "ORMOCK_TEST_NO_SUCH_KEY" in capsys.readouterr().err
    assert main([*base, "--upstream", "http://127.0.0.1:9/v1", "--name", ".hidden"]) == 2
    assert "cannot start with '.'" in capsys.readouterr().err
    (tmp_path / "taken.yaml").write_text("version: 1\ninteractions: []\n")
    assert main([*base, "--upstream", "http://127.0.0.1:9/v1", "--name", "taken"]) == 2
    assert "exists already" in capsys.readouterr().err


def _record_process(upstream_url: str, folder: Path, name: str) -> tuple[subprocess.Popen[str],
                                                                           str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "ormock", "record", "--upstream", upstream_url, "--port", "0",
         "--cassettes", str(folder), "--name", name],
        stderr=subprocess.PIPE, text=True, env=env)
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r" on (http://\S+/v1) into ", line)
    assert found, line
    return process, found.group(1)


def test_sigkill_at_any_moment_leaves_whole_cassettes(upstream: OrmockServer,
                                                      tmp_path: Path) -> None:
    url = namespace(upstream)
    runs = 15
    draw = random.Random(20)
    delays = [draw.uniform(0.0, 0.2) for _ in range(runs)]

    def one(index: int) -> None:
        process, base = _record_process(url, tmp_path, f"run-{index}")
        assert process.stderr is not None
        written = threading.Event()  # a progress line: an interaction is in the file
        stop = threading.Event()

        def read() -> None:
            assert process.stderr is not None
            for line in process.stderr:
                if line.startswith("POST "):
                    written.set()

        def drive() -> None:
            with httpx.Client(base_url=base, timeout=5) as client:
                while not stop.is_set():
                    try:
                        client.post("/responses", json={"model": "m", "input": f"n{index}",
                                                        "stream": index % 2 == 0})
                    except httpx.HTTPError:
                        return
        helpers = [threading.Thread(target=read), threading.Thread(target=drive)]
        for helper in helpers:
            helper.start()
        assert written.wait(10)
        time.sleep(delays[index])  # then at a random point of the write cycle
        process.kill()  # SIGKILL: no handler runs, no cleanup
        process.wait(5)
        stop.set()
        for helper in helpers:
            helper.join(5)
        process.stderr.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(runs)]
    for batch in (threads[:5], threads[5:10], threads[10:]):
        for thread in batch:
            thread.start()
        for thread in batch:
            thread.join(30)
    names = sorted(p.name for p in tmp_path.iterdir())
    cassettes = [n for n in names if not n.startswith(".")]
    assert cassettes == sorted(f"run-{i}.yaml" for i in range(runs))
    for name in cassettes:  # every one parses, and holds what was written before the kill
        assert load_cassette(tmp_path / name).interactions
    for name in names:
        if name.startswith("."):  # a write in flight when the kill came
            assert re.fullmatch(r"\.run-\d+\.yaml\..+\.tmp", name), name


# -- each failure kind, recorded and then replayed: the client sees it again


async def server_error(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    body = b'{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}'
    writer.write(b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
                 b"retry-after: 1\r\n" + f"content-length: {len(body)}\r\n\r\n".encode() + body)
    await writer.drain()


@pytest.mark.parametrize(("script", "error", "ended", "journaled"), [
    (dropped, httpx.RemoteProtocolError, "closed", "closed"),
    (reset, httpx.ReadError, "reset", "reset"),
    (stall, httpx.ReadTimeout, "stalled", "stalled"),
    # whole on the wire, but with no terminal event: the journal says truncated
    (slow_start, None, "whole", "truncated"),
    (server_error, None, "whole", "whole"),
], ids=["dropped", "reset", "stall", "slow-first-byte", "503"])
def test_each_failure_kind_replays_as_recorded(script: Script, error: type[Exception] | None,
                                              ended: str, journaled: str,
                                              tmp_path: Path) -> None:
    with raw_upstream(script) as (url, _), recording(url, tmp_path) as (recorder, _):
        got, raised = post_stream(recorder, timeout=0.3 if ended == "stalled" else 10)
        cassette = recorded(recorder, 1)
    response = cassette.interactions[0].response
    assert response is not None and response.ended == ended
    with OrmockServer(cassettes=[recorder.cassette], speed=1) as replay:
        again, raised_again = b"", None
        try:
            with httpx.stream("POST", f"{replay.url}/v1/responses",
                              json={"model": "m", "stream": True},
                              timeout=httpx.Timeout(10, read=0.3 if ended == "stalled" else 10)
                              ) as answer:
                status, headers = answer.status_code, answer.headers
                for data in answer.iter_raw():
                    again += data
        except httpx.HTTPError as failure:
            raised_again = failure
        entry = replay.engine().journal[-1]
    assert again == got == response_bytes(response)
    assert type(raised_again) is type(raised) and (error is None or isinstance(raised, error))
    assert status == response.status
    assert all(headers.get(name) == value for name, value in response.headers.items()
               if isinstance(value, str))
    assert entry.ended == journaled
