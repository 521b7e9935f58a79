"""``ormock record`` serves the inspector too: its journal of relayed requests, pushed live,
each exchange with the frames as recorded, secrets masked; ``/_ormock/`` is never relayed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from recordings import namespace, recorded

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
