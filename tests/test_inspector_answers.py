"""Every kind of answer in the inspector with its payloads, and exportable: a WebSocket turn
(exported as a cassette's WebSocket interaction and as a scenario step, each replayed to the
same events), a background response (its stored events), and a Python caller's reply."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
import yaml

from ormock import OrmockServer
from ormock.engine.core import Engine
from ormock.engine.feed import Feed, SentFrames
from ormock.engine.journal import opened
from ormock.protocol.wire import Frame, Written
from ormock.server.exchange import exchange
from tests.inspector_helpers import StreamReader

_names = itertools.count()


@pytest.fixture
def admin(server: OrmockServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as raw:
        yield raw


def _open(server: OrmockServer) -> str:
    name = f"answers{next(_names)}"
    server.namespaces.open(name)
    return name


def _turn(server: OrmockServer, ns: str, **create: Any) -> list[dict[str, Any]]:
    """One WebSocket turn with the openai SDK: its events up to the terminal one."""
    sdk = openai.OpenAI(base_url=f"{server.url}/{ns}/v1", api_key="sk-" + "test",
                        max_retries=0)
    events: list[dict[str, Any]] = []
    with sdk.responses.connect() as connection:
        connection.response.create(**create)
        for event in connection:
            events.append(event.to_dict())
            if event.type in ("response.completed", "response.failed",
                              "response.incomplete", "error"):
                break
    return events


def _last(admin: httpx.Client, ns: str) -> dict[str, Any]:
    entry = admin.get(f"/{ns}/_ormock/journal").json()["data"][-1]
    detail: dict[str, Any] = admin.get(f"/{ns}/_ormock/journal/{entry['id']}").json()
    return detail


def test_a_websocket_turn_is_shown_with_its_payloads(server: OrmockServer,
                                                     admin: httpx.Client) -> None:
    ns = _open(server)
    events = _turn(server, ns, model="ormock:tool-call", input="What is the weather?")
    detail = _last(admin, ns)
    assert detail["transport"] == "socket" and detail["frames_kept"] is True
    assert detail["curl"] is None  # no HTTP request to repeat
    assert [row["type"] for row in detail["timeline"]] == [e["type"] for e in events]
    assert [row["data"] for row in detail["timeline"]] == events
    assert detail["findings"] == []


def test_a_websocket_turn_exports_as_a_cassette_that_replays_it(server: OrmockServer,
                                                                admin: httpx.Client) -> None:
    ns = _open(server)
    create = {"model": "ormock:text", "input": "Say hello."}
    events = _turn(server, ns, **create)
    entry_id = _last(admin, ns)["id"]
    exported = admin.get(f"/{ns}/_ormock/journal/{entry_id}/export", params={"as": "cassette"})
    assert exported.status_code == 200, exported.text
    document = yaml.safe_load(exported.text)
    socket = document["interactions"][0]["socket"]
    assert socket["frames"][0]["from"] == "client"
    assert socket["frames"][0]["event"] == {"type": "response.create", **create}
    other = _open(server)
    loaded = admin.post(f"/{other}/_ormock/cassettes", content=exported.text,
                        headers={"content-type": "application/yaml"})
    assert loaded.status_code in (200, 201), loaded.text
    assert _turn(server, other, **create) == events  # the same frames, ids and all


def test_a_websocket_turn_exports_as_a_scenario_step(server: OrmockServer,
                                                     admin: httpx.Client) -> None:
    ns = _open(server)
    events = _turn(server, ns, model="ormock:reasoning", input="Think.")
    entry_id = _last(admin, ns)["id"]
    exported = admin.get(f"/{ns}/_ormock/journal/{entry_id}/export", params={"as": "scenario"})
    assert exported.status_code == 200, exported.text
    document = yaml.safe_load(exported.text)
    assert document["steps"][0]["reply"]["events"] == events
    other = _open(server)
    document["steps"][0]["match"] = {"model": "m"}
    loaded = admin.post(f"/{other}/_ormock/scenarios", json=document)
    assert loaded.status_code == 201, loaded.text
    assert _turn(server, other, model="m", input="anything") == events


def test_a_background_response_shows_its_stored_events(server: OrmockServer,
                                                        admin: httpx.Client) -> None:
    ns = _open(server)
    base = f"{server.url}/{ns}/v1"
    created = httpx.post(f"{base}/responses", timeout=10, json={
        "model": "ormock:text", "input": "hi", "background": True}).json()
    assert created["status"] == "queued"
    deadline = time.monotonic() + 30
    while httpx.get(f"{base}/responses/{created['id']}", timeout=10).json()["status"] in (
            "queued", "in_progress"):
        assert time.monotonic() < deadline, "the background run never ended"
        time.sleep(0.02)
    detail = _last(admin, ns)
    types = [row["type"] for row in detail["timeline"]]
    assert types[:2] == ["response.created", "response.queued"]
    assert types[-2:] == ["response.completed", "[DONE]"]
    assert detail["frames_kept"] is True and detail["findings"] == []
    exported = admin.get(f"/{ns}/_ormock/journal/{detail['id']}/export",
                         params={"as": "scenario"})
    assert exported.status_code == 200
    assert "response.queued" in yaml.safe_load(exported.text)["steps"][0]["reply"]["sse"]


def test_a_python_callers_reply_is_kept_by_reference_and_shown() -> None:
    engine = Engine(seed=0)
    engine.use("tool-call")
    reply, entry = engine.answer({"model": "m", "input": "weather?", "stream": True}, {})
    sent = engine.feed.frames_of(entry.id)
    assert sent is not None and sent.kind == "sse"
    shown = exchange(entry, sent, "http://127.0.0.1:1")
    assert [row.get("data") for row in shown["timeline"] if "data" in row] == reply.events
    assert shown["frames_kept"] is True
    # a non-streamed one: its JSON body
    _, folded = engine.answer({"model": "m", "input": "weather?"}, {})
    body = exchange(folded, engine.feed.frames_of(folded.id), "")["response_body"]
    assert body["object"] == "response" and body["output"][0]["type"] == "function_call"


def test_python_callers_replies_count_against_the_bytes_kept() -> None:
    engine = Engine(seed=0)
    engine.feed = Feed(keep_bytes=1000)  # less than one reply's estimate: only the newest stays
    entries = [engine.answer({"model": "m", "input": f"hi {n}", "stream": True}, {})[1]
               for n in range(3)]
    assert [engine.feed.frames_of(e.id) is not None for e in entries] == [False, False, True]


@pytest.mark.parametrize("sent", [
    ((0, Frame(b'{"id":"resp_1"}', 0, events=None)),),  # a JSON body written at once
    ((0.25, Frame(b"data: {}\n\n", 0.25, events=({"type": "x"},))),),  # one event, paced
    ((0.0, Frame(b"a")), (0.5, Frame(b"b", 0.5)), (0.0, Frame(b"", action="end"))),
])
def test_what_a_writer_sent_reads_back_as_it_reported_it(
        sent: tuple[tuple[float, Frame], ...]) -> None:
    feed = Feed()
    entry = opened("POST", "/v1/responses", {}, {}, 0.0, 0)
    entry.id = "e1"
    headers = ((b"content-type", b"application/json"),)
    written = Written("sse", "whole", sum(len(frame.data) for _, frame in sent), sent)
    feed.sent(entry, 201, headers, written)
    kept = feed.frames_of("e1")
    assert kept == SentFrames("sse", 201, headers, sent)
    assert [type(wait) for wait, _ in kept.frames] == [type(wait) for wait, _ in sent]
    assert kept.events() == SentFrames("sse", 201, headers, sent).events()


def test_a_websocket_turn_grows_on_the_live_journal(server: OrmockServer) -> None:
    ns = _open(server)
    reader = StreamReader(f"{server.url}/{ns}/_ormock/journal/stream")
    events = _turn(server, ns, model="ormock:text", input="hi")
    reader.wait_for(lambda ms: [d for e, d in ms if e == "entry" and d["finished_at"]])

    def pushed(messages: list[tuple[str, Any]]) -> list[dict[str, Any]]:
        return [x for e, d in messages if e == "events" for x in d["events"]]

    assert reader.wait_for(lambda ms: len(pushed(ms)) == len(events) and pushed(ms)) == events
    reader.close()
