"""``ormock record`` serves the inspector too: its journal of relayed requests, pushed live,
each exchange with the frames as recorded, secrets masked; ``/_ormock/`` is never relayed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from recordings import Script, namespace, raw_upstream, recorded

from ormock import OrmockServer
from ormock.server.inspector import CSP
from ormock.server.recorder import RecorderServer
from tests.inspector_helpers import HEADER_SECRET, PACED, SECRETS, StreamReader


@pytest.fixture(scope="module")
def upstream() -> Iterator[OrmockServer]:
    with OrmockServer(seed=0) as running:
        yield running


def test_the_recorder_serves_the_page_and_a_live_journal(upstream: OrmockServer,
                                                         tmp_path: Path) -> None:
    url = namespace(upstream, PACED)
    with RecorderServer(url, tmp_path, name="session", log=lambda line: None) as recorder:
        page = httpx.get(recorder.url + "/_ormock/", timeout=10)
        assert page.status_code == 200 and page.headers["content-security-policy"] == CSP
        refused = httpx.get(recorder.url + "/_ormock/", headers={"host": "evil.example"})
        assert refused.status_code == 403
        reader = StreamReader(recorder.url + "/_ormock/journal/stream")
        client = openai.OpenAI(base_url=recorder.base_url, api_key=HEADER_SECRET,
                               max_retries=0)
        types = [e.type for e in client.responses.create(model="m", input="x", stream=True)]
        pushed = reader.wait_for(lambda ms: [x for e, d in ms if e == "events"
                                             for x in d["events"]] if any(
            e == "entry" and d["finished_at"] for e, d in ms) else None)
        assert [e["type"] for e in pushed] == types  # each event as the upstream sent it
        recorded(recorder, 1)
        journal = httpx.get(recorder.url + "/_ormock/journal/e1", timeout=10)
        detail = journal.json()
        assert detail["answered_by"] == {"kind": "recorded", "cassette": "session.yaml"}
        assert [r["type"] for r in detail["timeline"]][:-1] == types
        assert detail["timeline"][-1]["offset_ms"] > detail["timeline"][0]["offset_ms"]
        assert detail["headers"]["authorization"] == "***"
        exported = httpx.get(recorder.url + "/_ormock/journal/e1/export?as=cassette")
        assert exported.status_code == 200
        for text in (journal.text, exported.text, reader.raw()):
            for secret in SECRETS:
                assert secret not in text
        reader.close()
        # nothing under /_ormock/ went to the upstream
        assert len(upstream.engine(url.rsplit("/", 2)[1]).journal) == 1



GOOGLE_KEY = "AIzaSyD-not-key-shaped-0123456789abcdefg"  # no KEY_PATTERNS shape: only known
CLIENT_KEY = "client-key-not-shaped-9876543210"


def _echoing(status: bytes, kind: bytes, body: bytes) -> tuple[Script, list[list[bytes]]]:
    """An upstream that answers with ``body``, its ``KEY`` replaced by the credential the
    request's Authorization header carried (a provider quoting the key it refused); the
    request heads it reads go in the list put in the returned one."""
    heads: list[list[bytes]] = []

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        credential = heads[0][-1].split(b"Bearer ", 1)[1].split(b"\r\n", 1)[0]
        sent = body.replace(b"KEY", credential)
        writer.write(b"HTTP/1.1 " + status + b"\r\ncontent-type: " + kind + b"\r\n"
                     + b"content-length: %d\r\n\r\n" % len(sent) + sent)
        await writer.drain()

    return script, heads


@pytest.mark.parametrize(("injected", "status", "kind", "body"), [
    # the key the recorder sends itself (--upstream-key-env), quoted in an error message
    (True, b"401 Unauthorized", b"application/json",
     b'{"error":{"message":"Incorrect API key provided: KEY.","type":"invalid_request_error",'
     b'"param":null,"code":"invalid_api_key"}}'),
    # the client's own key, relayed, echoed inside a streamed event
    (False, b"200 OK", b"text/event-stream",
     b'event: vendor.echo\ndata: {"type":"vendor.echo","key":"KEY","note":"key KEY"}\n\n'),
])
def test_a_key_the_upstream_echoes_is_scrubbed_from_the_journal_logs_and_cassette(
        tmp_path: Path, injected: bool, status: bytes, kind: bytes, body: bytes) -> None:
    script, heads = _echoing(status, kind, body)
    secret = GOOGLE_KEY if injected else CLIENT_KEY
    lines: list[str] = []
    with raw_upstream(script) as (url, seen):
        heads.append(seen)
        with RecorderServer(url, tmp_path, name="echo", log=lines.append,
                            upstream_key=GOOGLE_KEY if injected else None) as recorder:
            reader = StreamReader(recorder.url + "/_ormock/journal/stream")
            answer = httpx.post(recorder.base_url + "/responses?key=" + CLIENT_KEY,
                                json={"model": "m", "input": "x", "stream": not injected},
                                headers={"authorization": "Bearer " + (
                                    "dummy" if injected else CLIENT_KEY)}, timeout=10)
            assert secret in answer.text  # the client gets it as the upstream sent it
            reader.wait_for(lambda ms: True if any(
                e == "entry" and d["finished_at"] for e, d in ms) else None)
            recorded(recorder, 1)
            texts = [httpx.get(recorder.url + path, timeout=10).text for path in (
                "/_ormock/journal", "/_ormock/journal/e1",
                "/_ormock/journal/e1/export?as=cassette")]
            texts += [reader.raw(), recorder.cassette.read_text(), *lines]
            reader.close()
    assert lines  # the recorder logged the interaction
    for text in texts:
        assert secret not in text and CLIENT_KEY not in text
