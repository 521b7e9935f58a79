"""Streamed background mode and resumable streams, through the real openai SDK (raw httpx for
what it cannot send): ``create(background=True, stream=True)``, a client that drops and
resumes with ``retrieve(id, stream=True, starting_after=N)`` or ``responses.stream(
response_id=id, starting_after=N)``, the errors of a resume, and a follower on another server
over the same SQLite file."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from sdk_clients import client_of as sdk_client
from sdk_clients import closed_clients  # noqa: F401 (autouse: closes the clients)

from ormock import OrmockServer, check_stream
from ormock.engine.event_log import LOG_END, decode
from ormock.protocol.sse import json_events, parse_sse

WORDS = "one two three four five six seven eight nine ten"


def paced(per_event: float) -> dict[str, Any]:
    return {"name": "paced", "steps": [{"times": "forever", "reply": {
        "chunking": "words", "pacing": {"first_event": 0.0, "per_event": per_event},
        "items": [{"message": WORDS}]}}]}


BODY: dict[str, Any] = {"model": "m", "input": "hello"}
KEY = "sk-" + "test-background"


@pytest.fixture
def server() -> Iterator[OrmockServer]:
    with OrmockServer(seed=7, self_check=True) as running:
        running.engine().use(paced(0.03))
        yield running


def client_of(server: OrmockServer, key: str = KEY) -> openai.OpenAI:
    return sdk_client(server, key)


def http_of(server: OrmockServer, key: str = KEY) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, timeout=20,
                        headers={"Authorization": f"Bearer {key}"})


def dumps(events: Any) -> list[dict[str, Any]]:
    return [e.model_dump(exclude_unset=True) for e in events]


def wait_status(client: openai.OpenAI, response_id: str, until: tuple[str, ...]) -> Any:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = client.responses.retrieve(response_id)
        if found.status in until:
            return found
        time.sleep(0.01)  # a poll interval, not a wait for an event
    raise AssertionError(f"{response_id} never reached {until}")


def test_streamed_background_starts_queued_and_passes_the_checker(
        server: OrmockServer) -> None:
    with http_of(server) as http, http.stream(
            "POST", "/responses", json={**BODY, "background": True, "stream": True}) as answer:
        assert answer.status_code == 200
        raw = b"".join(answer.iter_bytes())
    events = list(json_events(parse_sse(raw)))
    assert [e["type"] for e in events[:3]] == ["response.created", "response.queued",
                                               "response.in_progress"]
    assert [e["response"]["status"] for e in events[:3]] == ["queued", "queued", "in_progress"]
    assert all(e["response"]["background"] is True for e in events[:3])
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[-1]["type"] == "response.completed"
    for profile in ("openresponses", "openai"):  # the official schema under openresponses
        report = check_stream(raw, profile=profile)
        assert report.violations == [], (profile, report.violations)
    stored = client_of(server).responses.retrieve(events[0]["response"]["id"])
    assert stored.status == "completed" and stored.output_text == WORDS


def test_sdk_streamed_background_create_matches_a_foreground_answer(
        server: OrmockServer) -> None:
    with client_of(server).responses.create(**BODY, background=True, stream=True) as stream:
        events = list(stream)
    final = events[-1].response
    assert final.status == "completed" and final.background is True
    with OrmockServer(seed=7) as fresh:
        fresh.engine().use(paced(0.03))
        plain = client_of(fresh).responses.create(**BODY)
    assert plain.id == final.id
    assert [o.model_dump() for o in plain.output] == [o.model_dump() for o in final.output]


def test_a_client_that_drops_does_not_cancel_and_resumes_exactly_the_rest(
        server: OrmockServer) -> None:
    client = client_of(server)
    seen = []
    with client.responses.create(**BODY, background=True, stream=True) as stream:
        for event in stream:
            seen.append(event)
            if event.type == "response.output_text.delta":
                break  # the client drops mid-stream
    response_id = seen[0].response.id
    last = seen[-1].sequence_number
    with client.responses.retrieve(response_id, stream=True, starting_after=last) as rest:
        tail = list(rest)
    assert tail[0].sequence_number == last + 1 and tail[-1].type == "response.completed"
    assert client.responses.retrieve(response_id).status == "completed"
    with client.responses.retrieve(response_id, stream=True) as whole:  # from the start
        full = list(whole)
    assert dumps(seen) + dumps(tail) == dumps(full)
    # and one uninterrupted stream of the same request on a fresh server: the same events
    with OrmockServer(seed=7) as fresh:
        fresh.engine().use(paced(0.03))
        with client_of(fresh).responses.create(**BODY, background=True, stream=True) as s:
            uninterrupted = list(s)
    assert dumps(full) == dumps(uninterrupted)


def test_resume_of_a_running_response_goes_on_live() -> None:
    with OrmockServer(seed=3) as server:
        server.engine().use(paced(0.1))
        client = client_of(server)
        created = client.responses.create(**BODY, background=True)
        assert created.status == "queued"
        with client.responses.retrieve(created.id, stream=True, starting_after=1) as stream:
            first = next(iter(stream))
            status_then = client.responses.retrieve(created.id).status
            events = [first, *stream]
    assert status_then == "in_progress"  # 17 more events at 0.1 s each were still to come
    assert [e.sequence_number for e in events] == list(range(2, 2 + len(events)))
    assert events[-1].type == "response.completed"


def test_sdk_stream_helper_resumes_by_response_id(server: OrmockServer) -> None:
    client = client_of(server)
    created = client.responses.create(**BODY, background=True)
    with client.responses.stream(response_id=created.id, starting_after=5) as stream:
        events = list(stream)
        final = stream.get_final_response()
    assert events[0].sequence_number == 6
    assert final.output_text == WORDS and final.status == "completed"


def test_a_finished_response_replays_all_and_ends(server: OrmockServer) -> None:
    client = client_of(server)
    created = client.responses.create(**BODY, background=True)
    wait_status(client, created.id, ("completed",))
    with client.responses.retrieve(created.id, stream=True) as stream:
        events = list(stream)
    assert [e.type for e in events[:3]] == ["response.created", "response.queued",
                                           "response.in_progress"]
    assert events[-1].type == "response.completed"
    with http_of(server) as http:
        past = http.get(f"/responses/{created.id}",
                        params={"stream": "true", "starting_after": len(events) + 5})
    assert past.status_code == 200 and past.text == "data: [DONE]\n\n"


def test_a_resumed_tail_passes_the_checker(server: OrmockServer) -> None:
    client = client_of(server)
    created = client.responses.create(**BODY, background=True)
    with http_of(server) as http:
        raw = http.get(f"/responses/{created.id}",
                       params={"stream": "true", "starting_after": 4}).content
    report = check_stream(raw, starting_after=4)
    assert report.violations == []
    assert report.response is not None and report.response["status"] == "completed"


def test_resume_errors(server: OrmockServer) -> None:
    client = client_of(server)
    plain = client.responses.create(**BODY)
    with pytest.raises(openai.BadRequestError) as raised:  # OpenAI: 400 naming stream
        client.responses.retrieve(plain.id, stream=True)
    assert raised.value.param == "stream" and "background" in raised.value.message
    created = client.responses.create(**BODY, background=True)
    with http_of(server) as http:
        for value in ("-1", "x", "1.5", ""):
            bad = http.get(f"/responses/{created.id}",
                           params={"stream": "true", "starting_after": value})
            assert bad.status_code == 400, value
            assert bad.json()["error"]["param"] == "starting_after"
        alone = http.get(f"/responses/{created.id}", params={"starting_after": "3"})
        assert alone.status_code == 400 and alone.json()["error"]["param"] == "starting_after"
        odd = http.get(f"/responses/{created.id}", params={"stream": "yes"})
        assert odd.status_code == 400 and odd.json()["error"]["param"] == "stream"
    with http_of(server, "sk-" + "test-someone-else") as other:
        hidden = other.get(f"/responses/{created.id}", params={"stream": "true"})
    assert hidden.status_code == 404
    assert hidden.json()["error"]["code"] == "response_not_found"


def test_cancel_ends_a_followed_stream_without_a_terminal_event() -> None:
    with OrmockServer(seed=5) as server:
        server.engine().use(paced(0.1))
        client = client_of(server)
        with client.responses.create(**BODY, background=True, stream=True) as stream:
            events = []
            for event in stream:
                events.append(event)
                if event.type == "response.in_progress":
                    assert client.responses.cancel(event.response.id).status == "cancelled"
        assert events[-1].type not in ("response.completed", "response.failed")
        assert client.responses.retrieve(events[0].response.id).status == "cancelled"
        with client.responses.retrieve(events[0].response.id, stream=True) as again:
            assert dumps(again) == dumps(events)


def test_a_follower_on_another_server_reads_the_store(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'shared.db'}"
    with OrmockServer(seed=1, store=store) as first, \
            OrmockServer(seed=1, store=store) as second:
        first.engine().use(paced(0.05))
        created = client_of(first).responses.create(**BODY, background=True)
        # the second server runs nothing: it follows the run of the first through the file
        with client_of(second).responses.retrieve(created.id, stream=True) as stream:
            events = list(stream)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[1].type == "response.queued" and events[-1].type == "response.completed"


def test_background_events_live_in_the_store(server: OrmockServer) -> None:
    client = client_of(server)
    created = client.responses.create(**BODY, background=True)
    wait_status(client, created.id, ("completed",))
    backend = server.engine().responses.backend
    entries = backend.log_read(created.id, 0, 1000)
    assert entries[-1] == (LOG_END, b"")  # closed at the run's end
    groups = [decode(value) for _, value in entries[:-1]]
    # each entry numbered by the last sequence number it holds: a resume is a range read
    assert [number for number, _ in entries[:-1]] == [g[-1]["sequence_number"] for g in groups]
    events = [event for group in groups for event in group]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def faulted(fault: dict[str, Any]) -> dict[str, Any]:
    return {"name": "faulted", "steps": [{"times": "forever", "reply": {
        "items": [{"message": WORDS}], "faults": [fault]}}]}


def test_event_faults_shape_the_run_and_wire_faults_have_no_connection() -> None:
    with OrmockServer(seed=9) as server, http_of(server) as http:
        server.engine().use(faulted({"fail_midstream": {"after_events": 6}}))
        raw = http.post("/responses", json={**BODY, "background": True, "stream": True})
        events = list(json_events(parse_sse(raw.content)))  # the SDK raises at the error event
        assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
        assert events[1]["type"] == "response.queued"
        assert check_stream(raw.content).violations == []
        response_id = events[0]["response"]["id"]
        assert client_of(server).responses.retrieve(response_id).status == "failed"
        server.engine().reset()
        server.engine().use(faulted({"disconnect": {"mode": "reset", "after_events": 3}}))
        refused = http.post("/responses", json={**BODY, "background": True, "stream": True})
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == "fault_not_in_background"
        assert refused.json()["error"]["param"] == "faults"
        server.engine().reset()
        server.engine().use(paced(0.0))
        server.engine().inject({"disconnect": {"mode": "close"}})  # server-wide: skipped
        with client_of(server).responses.create(**BODY, background=True,
                                                stream=True) as stream:
            whole = list(stream)
        assert whole[-1].type == "response.completed"
        assert server.engine().journal[-1].skipped == ["disconnect"]
