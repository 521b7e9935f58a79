"""The inspector's server side: entry ids, the page and its headers, the live journal, one
exchange's detail, masking, and the export of an exchange as a scenario or a cassette."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
import yaml

from ormock import OrmockServer
from ormock.cassette import parse_cassette
from ormock.engine.feed import Watcher
from ormock.server.inspector import CSP
from tests.inspector_helpers import BODY_SECRET, HEADER_SECRET, PACED, SECRETS, StreamReader

_names = itertools.count()


@pytest.fixture
def ns(server: OrmockServer) -> str:
    name = f"insp{next(_names)}"
    server.namespaces.open(name)
    return name


@pytest.fixture
def admin(server: OrmockServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as raw:
        yield raw


def sdk(server: OrmockServer, ns: str, key: str = "sk-" + "test") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/{ns}/v1", api_key=key, max_retries=0)


def stream_text(server: OrmockServer, ns: str, scenario: str, **extra: Any) -> bytes:
    answer = httpx.post(f"{server.url}/{ns}/v1/responses", timeout=10, json={
        "model": "m", "input": "hi", "stream": True, **extra},
        headers={"x-ormock-scenario": scenario})
    return answer.content


def test_ids_are_unique_across_namespaces_and_resets(server: OrmockServer, admin: httpx.Client,
                                                     ns: str) -> None:
    other = f"{ns}b"
    server.namespaces.open(other)
    sdk(server, ns).responses.create(model="m", input="one")
    sdk(server, other).responses.create(model="m", input="two")
    first = admin.get(f"/{ns}/_ormock/journal").json()["data"][0]
    second = admin.get(f"/{other}/_ormock/journal").json()["data"][0]
    assert first["id"] != second["id"] and first["id"].startswith("e")
    assert (first["namespace"], second["namespace"]) == (ns, other)
    one = admin.get(f"/{ns}/_ormock/journal/{first['id']}").json()
    assert one["id"] == first["id"] and one["body"]["input"] == "one"
    # at the root, an id of any namespace is found
    assert admin.get(f"/_ormock/journal/{second['id']}").json()["body"]["input"] == "two"
    # a namespace's own route does not answer another's id
    missing = admin.get(f"/{ns}/_ormock/journal/{second['id']}")
    assert missing.status_code == 404
    assert missing.json()["error"]["param"] == "id"
    assert missing.json()["error"]["code"] == "unknown_entry"
    admin.post(f"/{ns}/_ormock/reset", headers={"x-ormock-admin": "1"})
    sdk(server, ns).responses.create(model="m", input="three")
    again = admin.get(f"/{ns}/_ormock/journal").json()["data"][0]
    assert again["id"] not in (first["id"], second["id"])


def test_the_page_and_its_files_are_served_with_a_strict_policy(admin: httpx.Client,
                                                                 ns: str) -> None:
    for path in ("/_ormock/", f"/{ns}/_ormock/"):
        page = admin.get(path)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert page.headers["content-security-policy"] == CSP
        assert "default-src 'self'" in CSP and "'unsafe-inline'" not in CSP
        assert page.headers["x-content-type-options"] == "nosniff"
        assert 'src="inspector.js"' in page.text and "http" not in page.text.split("<body>")[0]
    script = admin.get("/_ormock/inspector.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert "EventSource" in script.text and "innerHTML" not in script.text
    assert "text/css" in admin.get("/_ormock/inspector.css").headers["content-type"]


@pytest.mark.parametrize(("headers", "param"), [
    ({"host": "evil.example:80"}, "host"),
    ({"origin": "http://evil.example"}, "origin"),
])
def test_the_page_and_its_data_are_behind_the_admin_guard(
        admin: httpx.Client, headers: dict[str, str], param: str) -> None:
    for path in ("/_ormock/", "/_ormock/journal/stream", "/_ormock/journal/e1",
                 "/_ormock/journal/e1/export"):
        refused = admin.get(path, headers=headers)
        assert refused.status_code == 403, path
        assert refused.json()["error"]["param"] == param


def test_the_page_routes_change_nothing(admin: httpx.Client) -> None:
    for path in ("/_ormock/", "/_ormock/journal/stream", "/_ormock/journal/e1"):
        assert admin.post(path, headers={"x-ormock-admin": "1"}).status_code == 405


def test_an_exchange_shows_its_timeline_answer_and_fault(server: OrmockServer,
                                                         admin: httpx.Client, ns: str) -> None:
    stream_text(server, ns, "failed-midstream")
    entry = admin.get(f"/{ns}/_ormock/journal").json()["data"][-1]
    detail = admin.get(f"/{ns}/_ormock/journal/{entry['id']}").json()
    assert detail["answered_by"] == {"kind": "scenario", "scenario": "failed-midstream",
                                     "step": 1}
    timeline = detail["timeline"]
    assert timeline[0]["type"] == "response.created" and timeline[0]["offset_ms"] == 0
    assert [r["index"] for r in timeline] == list(range(len(timeline)))
    deltas = [r for r in timeline if r["type"] == "response.output_text.delta"]
    assert deltas and all(r["output_index"] == 0 and r["content_index"] == 0 for r in deltas)
    assert all("data" in r for r in timeline if r["type"] != "[DONE]")
    error_at = next(r["index"] for r in timeline if r["type"] == "error")
    assert detail["struck"] == [{"fault": "fail_midstream", "index": error_at, "frame": None,
                                 "byte": None, "what": "error sent"}]
    # recorded where the fault was applied, and so in the journal too
    assert entry["struck"] == detail["struck"]
    assert detail["findings"] == []  # a failed stream breaks no rule


def test_the_checker_findings_name_the_events_they_concern(server: OrmockServer,
                                                           admin: httpx.Client, ns: str) -> None:
    stream_text(server, ns, "broken-sequence")
    entry = admin.get(f"/{ns}/_ormock/journal").json()["data"][-1]
    detail = admin.get(f"/{ns}/_ormock/journal/{entry['id']}").json()
    assert detail["findings"] == [{"rule": "sequence-number", "index": 5,
                                   "message": "sequence_number is 6, expected 5"}]
    assert detail["timeline"][5]["sequence_number"] == 6
    assert detail["struck"] == [{"fault": "sequence", "index": 5, "frame": None, "byte": None,
                                 "what": "sequence_number 6, was 5"}]


def test_a_miss_shows_the_near_misses(server: OrmockServer, admin: httpx.Client,
                                      ns: str) -> None:
    admin.post(f"/{ns}/_ormock/scenarios", json={"name": "only-hello", "steps": [
        {"name": "hello", "match": {"input_contains": "hello"},
         "reply": {"items": [{"message": "Hi"}]}}]})
    with pytest.raises(openai.BadRequestError):
        sdk(server, ns).responses.create(model="m", input="goodbye")
    entry = admin.get(f"/{ns}/_ormock/journal").json()["data"][-1]
    detail = admin.get(f"/{ns}/_ormock/journal/{entry['id']}").json()
    assert detail["answered_by"]["kind"] == "error" and detail["status"] == 400
    assert "hello" in detail["error"]["message"] and "input" in detail["error"]["message"]


def test_secrets_never_reach_the_page_data(server: OrmockServer, admin: httpx.Client,
                                           ns: str) -> None:
    reader = StreamReader(f"{server.url}/{ns}/_ormock/journal/stream")
    client = sdk(server, ns, key=HEADER_SECRET)
    client.responses.create(model="m", input=f"my key is {BODY_SECRET}",
                            metadata={"api_key": BODY_SECRET},
                            extra_headers={"x-custom-token": HEADER_SECRET})
    reader.wait_for(lambda ms: [d for e, d in ms if e == "entry" and d["finished_at"]])
    entry = admin.get(f"/{ns}/_ormock/journal").json()["data"][-1]
    shown = [
        admin.get(f"/{ns}/_ormock/journal/{entry['id']}").text,
        admin.get(f"/_ormock/journal/{entry['id']}").text,
        admin.get(f"/{ns}/_ormock/journal/{entry['id']}/export?as=cassette").text,
        reader.raw(),
    ]
    detail = json.loads(shown[0])
    assert detail["headers"]["authorization"] == "***"
    assert detail["body"]["metadata"]["api_key"] == "***"
    assert "$OPENAI_API_KEY" in detail["curl"]
    for text in shown:
        for secret in SECRETS:
            assert secret not in text
    reader.close()


def test_a_cookie_the_answer_set_never_reaches_the_page_or_an_export(
        server: OrmockServer, admin: httpx.Client, ns: str) -> None:
    """An answer's secret headers (a provider's ``set-cookie``, replayed from a cassette or
    relayed by ``ormock record``): the detail showed them and the cassette export wrote them."""
    cookie = "__cf_bm=abcDEF123secretcookievalue; path=/"
    server.engine(ns).use_cassette(parse_cassette(
        "version: 1\ninteractions:\n- request: {method: POST, path: /v1/responses, "
        "body: {model: m, input: hi}}\n  response: {status: 200, headers: {content-type: "
        f"application/json, set-cookie: '{cookie}', x-trace: ok}}, body: {{json: {{}}}}}}\n"))
    answer = httpx.post(f"{server.url}/{ns}/v1/responses", json={"model": "m", "input": "hi"})
    assert answer.headers["set-cookie"] == cookie  # the client gets what was recorded
    entry = admin.get(f"/{ns}/_ormock/journal").json()["data"][-1]
    detail = admin.get(f"/{ns}/_ormock/journal/{entry['id']}").json()
    assert detail["response_headers"]["set-cookie"] == "***"
    assert detail["response_headers"]["x-trace"] == "ok"
    exported = admin.get(f"/{ns}/_ormock/journal/{entry['id']}/export?as=cassette")
    assert exported.status_code == 200, exported.text
    assert "abcDEF123" not in exported.text
    (interaction,) = parse_cassette(exported.text).interactions
    assert interaction.response is not None
    assert interaction.response.headers["set-cookie"] == "REDACTED"


def test_the_live_journal_grows_event_by_event(server: OrmockServer, ns: str) -> None:
    server.namespaces.get(ns).use(PACED)
    reader = StreamReader(f"{server.url}/{ns}/_ormock/journal/stream")
    assert reader.headers["content-security-policy"] == CSP
    events: list[dict[str, Any]] = []
    with sdk(server, ns).responses.stream(model="m", input="hi") as stream:
        for event in stream:
            events.append({"type": event.type})
            if len(events) == 3:
                # the page has seen events of this stream while it still runs
                seen = reader.wait_for(lambda ms: [d for e, d in ms if e == "events"])
                assert seen[0]["events"][0]["type"] == "response.created"
                running = [d for e, d in reader.messages if e == "entry"]
                assert running and running[-1]["finished_at"] is None
    final = reader.wait_for(lambda ms: [d for e, d in ms if e == "entry" and d["finished_at"]])
    pushed = [x for e, d in reader.messages if e == "events" for x in d["events"]]
    assert [e["type"] for e in pushed] == [e["type"] for e in events]
    offsets = [d["offset_ms"] for e, d in reader.messages if e == "events"]
    assert offsets == sorted(offsets) and offsets[-1] > offsets[0]
    assert final[-1]["ended"] == "whole"
    reader.close()


def test_a_page_opened_later_gets_the_journal_first(server: OrmockServer, ns: str) -> None:
    sdk(server, ns).responses.create(model="m", input="before")
    reader = StreamReader(f"{server.url}/{ns}/_ormock/journal/stream")
    first = reader.wait_for(lambda ms: [d for e, d in ms if e == "entry"])
    assert first[0]["body"]["input"] == "before" and first[0]["namespace"] == ns
    reader.close()


def test_a_slow_reader_is_told_to_resync_instead_of_buffering() -> None:
    async def run() -> list[Any]:
        watcher = Watcher(None)
        for number in range(Watcher.limit + 5):
            watcher.put({"kind": "entry", "namespace": "", "id": f"e{number}"})
        return [await watcher.get(0.1), await watcher.get(0.1)]

    first, second = asyncio.run(run())
    assert first == {"kind": "resync"} and second == {"kind": "resync"}


def test_a_watcher_of_one_namespace_sees_only_it() -> None:
    async def run() -> Any:
        watcher = Watcher("a")
        watcher.put({"kind": "entry", "namespace": "b", "id": "e1"})
        watcher.put({"kind": "entry", "namespace": "a", "id": "e2"})
        return await watcher.get(0.1), await watcher.get(0.05)

    assert asyncio.run(run()) == ({"kind": "entry", "namespace": "a", "id": "e2"}, None)


def test_an_open_page_does_not_hold_up_the_shutdown() -> None:
    with OrmockServer() as running:
        reader = StreamReader(f"{running.url}/_ormock/journal/stream")
    reader.thread.join(10)
    assert not reader.thread.is_alive()


@pytest.mark.parametrize("kind", ["scenario", "cassette"])
def test_an_export_replays_the_same_bytes(server: OrmockServer, admin: httpx.Client, ns: str,
                                          kind: str) -> None:
    original = stream_text(server, ns, "tool-call")
    entry = admin.get(f"/{ns}/_ormock/journal").json()["data"][-1]
    exported = admin.get(f"/{ns}/_ormock/journal/{entry['id']}/export", params={"as": kind})
    assert exported.status_code == 200, exported.text
    assert exported.headers["content-disposition"].endswith(f'{entry["id"]}.{kind}.yaml"')
    yaml.safe_load(exported.text)
    fresh = f"{ns}-{kind}"
    server.namespaces.open(fresh)
    path = "scenarios" if kind == "scenario" else "cassettes"
    loaded = admin.post(f"/{fresh}/_ormock/{path}", content=exported.text,
                        headers={"content-type": "application/yaml"})
    assert loaded.status_code == 201, loaded.text
    again = httpx.post(f"{server.url}/{fresh}/v1/responses", timeout=10,
                       json={"model": "m", "input": "hi", "stream": True})
    assert again.content == original, again.text


def test_a_json_answer_exports_as_a_scenario_or_a_cassette(server: OrmockServer,
                                                           admin: httpx.Client, ns: str) -> None:
    original = httpx.post(f"{server.url}/{ns}/v1/responses", timeout=10,
                          json={"model": "m", "input": "hi"}).json()
    entry = admin.get(f"/{ns}/_ormock/journal").json()["data"][-1]
    wrong = admin.get(f"/{ns}/_ormock/journal/{entry['id']}/export?as=har")
    assert wrong.status_code == 400 and wrong.json()["error"]["param"] == "as"
    for kind, path in (("scenario", "scenarios"), ("cassette", "cassettes")):
        exported = admin.get(f"/{ns}/_ormock/journal/{entry['id']}/export?as={kind}")
        assert exported.status_code == 200, exported.text
        fresh = f"{ns}-json-{kind}"
        server.namespaces.open(fresh)
        admin.post(f"/{fresh}/_ormock/{path}", content=exported.text,
                   headers={"content-type": "application/yaml"})
        again = httpx.post(f"{server.url}/{fresh}/v1/responses", timeout=10,
                           json={"model": "m", "input": "hi"})
        if kind == "cassette":  # every byte
            assert again.json() == original
        else:  # what the step says: the output, its usage and status
            assert {k: again.json()[k] for k in ("output", "usage", "status")} == \
                {k: original[k] for k in ("output", "usage", "status")}


def test_a_python_callers_entry_reaches_the_page_too(server: OrmockServer, ns: str) -> None:
    reader = StreamReader(f"{server.url}/{ns}/_ormock/journal/stream")
    server.engine(ns).respond({"model": "m", "input": "from python"}, {})  # this thread
    seen = reader.wait_for(lambda ms: [d for e, d in ms if e == "entry"
                                       and d["body"]["input"] == "from python"])
    assert seen[0]["namespace"] == ns and seen[0]["id"].startswith("e")
    reader.close()


def test_a_lone_engine_numbers_its_entries() -> None:
    from ormock.engine.core import Engine

    engine = Engine()
    engine.respond({"model": "m", "input": "a"}, {})
    engine.reset()
    engine.respond({"model": "m", "input": "b"}, {})
    assert [e.id for e in engine.journal] == ["e2"] and engine.journal.find("e2") is not None
    assert engine.journal.find("e1") is None
