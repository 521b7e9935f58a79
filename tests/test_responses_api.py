"""Seed 002's stateful provider, rule by rule, through the openai SDK and raw HTTP against a real
server: GET/DELETE /v1/responses/{id}, input items, cancel, tombstones, branches, tool outputs,
ownership by API key, Idempotency-Key, a disconnect (of a stream or of a WebSocket turn) marking
the response cancelled, and X-Request-ID on every answer. Everything that reads the store runs on
every backend (memory, SQLite, Redis)."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from stores import BACKENDS, RedisServer
from websockets.sync.client import connect as ws_connect

from ormock import OrmockServer
from ormock.engine.core import Engine
from ormock.engine.store import MemoryBackend, ResponseStore, SqliteBackend, StoreBackend, Stored
from ormock.engine.store.redis_backend import RedisBackend
from ormock.protocol.sse import SSEParser

_names = itertools.count()
KEY_A, KEY_B = "sk-alice", "sk-bob"
WEATHER = {"type": "function", "name": "get_weather", "description": "The weather of a city",
           "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
                          "required": ["location"]}}
TIME = {"type": "function", "name": "get_time", "description": "The local time in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}


class Place:
    """A fresh namespace of a server on one backend."""

    def __init__(self, server: OrmockServer, name: str) -> None:
        server.namespaces.open(name)
        self.server, self.name = server, name
        self.base_url = f"{server.url}/{name}/v1"

    @property
    def engine(self) -> Engine:
        return self.server.namespaces.serve(self.name)

    def sdk(self, key: str = KEY_A) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.base_url, api_key=key, max_retries=0,
                             _strict_response_validation=True)

    def http(self, key: str | None = KEY_A) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=10)


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OrmockServer]:
    path: Path = tmp_path_factory.mktemp("store") / "ormock.db"
    with OrmockServer(seed=0, self_check=True, store=f"sqlite:{path}") as running:
        yield running


@pytest.fixture(scope="module")
def redis_ormock(redis_server: RedisServer) -> Iterator[OrmockServer]:
    with OrmockServer(seed=0, self_check=True, store=redis_server.fresh_url()) as running:
        yield running


@pytest.fixture(params=BACKENDS)
def place(request: pytest.FixtureRequest) -> Place:
    running = request.getfixturevalue({"memory": "server", "sqlite": "sqlite_server",
                                       "redis": "redis_ormock"}[request.param])
    return Place(running, f"api{next(_names)}")


def _error(answer: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = answer.json()["error"]
    return error


def _create(http: httpx.Client, **body: Any) -> dict[str, Any]:
    answer = http.post("/responses", json={"model": "m", "input": "Hello.", **body})
    assert answer.status_code == 200, answer.text
    created: dict[str, Any] = answer.json()
    return created


# -- GET ------------------------------------------------------------------------------------------
def test_retrieve_answers_the_stored_response(place: Place) -> None:
    with place.sdk() as sdk:
        made = sdk.responses.create(model="m", input="Say something.")
        got = sdk.responses.retrieve(made.id, include=["message.output_text.logprobs"])
        assert got.id == made.id and got.output_text == made.output_text
        with pytest.raises(openai.NotFoundError) as missing:
            sdk.responses.retrieve("resp_nope")
    assert isinstance(missing.value.body, dict) and missing.value.body["code"] == (
        "response_not_found")


def test_an_unknown_include_is_a_400_naming_include(place: Place) -> None:
    with place.http() as http:
        made = _create(http)
        for path in (f"/responses/{made['id']}", f"/responses/{made['id']}/input_items"):
            bad = http.get(path, params={"include[]": "file_search_call.result"})
            assert bad.status_code == 400 and _error(bad)["param"] == "include"
            for known in ("reasoning.encrypted_content", "file_search_call.results"):
                # what a create may ask for (the openai SDK's ``ResponseIncludable``)
                good = http.get(path, params={"include": known})
                assert good.status_code == 200


# -- DELETE ---------------------------------------------------------------------------------------
def test_delete_leaves_a_tombstone_answering_404_everywhere(place: Place) -> None:
    with place.sdk() as sdk, place.http() as http:
        made = sdk.responses.create(model="m", input="Forget me.")
        assert sdk.responses.delete(made.id) is None  # the SDK's answer: None
        with pytest.raises(openai.NotFoundError):
            sdk.responses.retrieve(made.id)
        for method, path in [("GET", f"/responses/{made.id}"),
                             ("DELETE", f"/responses/{made.id}"),
                             ("GET", f"/responses/{made.id}/input_items"),
                             ("POST", f"/responses/{made.id}/cancel")]:
            answer = http.request(method, path)
            assert answer.status_code == 404, (method, path)
            assert _error(answer)["code"] == "response_not_found"
        with pytest.raises(openai.BadRequestError) as orphan:
            sdk.responses.create(model="m", input="More.", previous_response_id=made.id)
    assert isinstance(orphan.value.body, dict)
    assert orphan.value.body["code"] == "previous_response_not_found"
    assert orphan.value.body["param"] == "previous_response_id"
    assert made.id in place.engine.responses  # the record stays for children


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_buried_response_stays_buried_when_its_tombstone_is_dropped(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    backend: StoreBackend = (
        MemoryBackend() if kind == "memory" else SqliteBackend(tmp_path / "o.db")
        if kind == "sqlite" else RedisBackend(request.getfixturevalue("redis_server").fresh_url()))
    store = ResponseStore(backend=backend)
    parent = Stored({"id": "resp_a", "output": []}, [{"type": "message", "role": "user",
                                                      "content": "hi"}], owner="o")
    store.keep("resp_a", parent)
    store.keep("resp_b", Stored({"id": "resp_b", "output": []}, [], parent, owner="o"))
    store.bury("resp_a")
    assert store.visible("resp_a", "o") is None and store.buried("resp_a")
    backend.delete("tombstone", "resp_a")  # as the caps would drop the oldest tombstone
    assert not store.buried("resp_a") and store.visible("resp_a", "o") is None
    child = store.visible("resp_b", "o")
    assert child is not None and child.context[0]["content"] == "hi"  # through the buried one
    backend.close()


def test_a_raw_delete_answers_the_deleted_object(place: Place) -> None:
    with place.http() as http:
        made = _create(http)
        gone = http.delete(f"/responses/{made['id']}")
    assert gone.status_code == 200
    assert gone.json() == {"id": made["id"], "object": "response.deleted", "deleted": True}


def test_children_of_a_deleted_response_still_rebuild_their_context(place: Place) -> None:
    with place.sdk() as sdk:
        first = sdk.responses.create(model="m", input="The word is tangerine.")
        second = sdk.responses.create(input="Noted?", previous_response_id=first.id)
        sdk.responses.delete(first.id)
        third = sdk.responses.create(input="What was the word?",
                                     previous_response_id=second.id)
        assert third.model == "m"  # inherited through the chain
        texts = [item.content[0].text for item in  # type: ignore[union-attr]
                 sdk.responses.input_items.list(third.id, order="asc")
                 if item.type == "message" and item.role == "user"]  # type: ignore[union-attr]
    assert texts == ["The word is tangerine.", "Noted?", "What was the word?"]
    context = place.engine.responses[third.id].context
    assert context[0]["content"] == "The word is tangerine."


def test_deleting_a_response_still_being_written_is_a_409(place: Place) -> None:
    place.engine.inject({"slow": {"first_event": 0, "per_event": 0.05,
                                  "tokens_per_second": None}})
    with place.http() as http, http.stream(
            "POST", "/responses", json={"model": "m", "input": "A long story.",
                                        "stream": True}) as answer:
        parser, response_id, chunks = SSEParser(), None, answer.iter_raw()
        for chunk in chunks:
            for event in parser.feed(chunk):
                if event.data and '"response.created"' in event.data:
                    response_id = json.loads(event.data)["response"]["id"]
            if response_id:
                break
        assert response_id is not None
        busy = http.delete(f"/responses/{response_id}")
        assert busy.status_code == 409 and _error(busy)["code"] == "response_in_progress"
        rest = b"".join(chunks)
    assert b"response.completed" in rest
    with place.http() as http:
        deadline = time.monotonic() + 10
        while place.engine.journal[0].finished_at is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert http.delete(f"/responses/{response_id}").status_code == 200


# -- branches and tool outputs --------------------------------------------------------------------
def test_one_parent_has_independent_branches(place: Place) -> None:
    with place.sdk() as sdk:
        root = sdk.responses.create(model="m", input="Pick a fruit.")
        left = sdk.responses.create(input="Left branch.", previous_response_id=root.id)
        right = sdk.responses.create(input="Right branch.", previous_response_id=root.id)
        leaf = sdk.responses.create(input="Deeper left.", previous_response_id=left.id)

        def users(response_id: str) -> list[str]:
            return [i.content[0].text for i in  # type: ignore[union-attr]
                    sdk.responses.input_items.list(response_id, order="asc")
                    if i.type == "message" and i.role == "user"]  # type: ignore[union-attr]

        assert users(left.id) == ["Pick a fruit.", "Left branch."]
        assert users(right.id) == ["Pick a fruit.", "Right branch."]
        assert users(leaf.id) == ["Pick a fruit.", "Left branch.", "Deeper left."]
    assert len({root.id, left.id, right.id, leaf.id}) == 4


def test_every_pending_tool_call_is_answered_at_once(place: Place) -> None:
    with place.sdk() as sdk:
        first = sdk.responses.create(model="m", input="Use get_weather and get_time for Rome.",
                                     tools=[WEATHER, TIME])  # type: ignore[list-item]
        calls = [o for o in first.output if o.type == "function_call"]
        assert len(calls) == 2
        with pytest.raises(openai.BadRequestError) as partial:
            sdk.responses.create(previous_response_id=first.id, input=[
                {"type": "function_call_output", "call_id": calls[0].call_id, "output": "x"}])
        assert isinstance(partial.value.body, dict)
        assert partial.value.body["code"] == "missing_tool_output"
        both = sdk.responses.create(previous_response_id=first.id, input=[
            {"type": "function_call_output", "call_id": c.call_id, "output": "ok"}
            for c in calls])
        assert both.status == "completed"
        listed = list(sdk.responses.input_items.list(both.id, order="asc"))
    outputs = [i for i in listed if i.type == "function_call_output"]
    assert [o.call_id for o in outputs] == [c.call_id for c in calls]
    assert all(o.id.startswith("fco_") for o in outputs)


# -- input items -----------------------------------------------------------------------------------
def test_input_items_page_to_the_end_with_the_sdk(place: Place) -> None:
    with place.sdk() as sdk:
        first = sdk.responses.create(model="m", input="One.")
        second = sdk.responses.create(input="Two.", previous_response_id=first.id)
        third = sdk.responses.create(input=[
            {"role": "developer", "content": "Three, as a developer."},
            {"role": "user", "content": [{"type": "input_text", "text": "Four."}]},
        ], previous_response_id=second.id)
        newest_first = list(sdk.responses.input_items.list(third.id, limit=2))
        oldest_first = list(sdk.responses.input_items.list(third.id, order="asc", limit=2))
        page = sdk.responses.input_items.list(third.id, limit=2)
        again = [i.id for i in sdk.responses.input_items.list(third.id, limit=100)]
    # one, its output, two, its output, three, four
    assert len(newest_first) == 6
    assert [i.id for i in newest_first] == [i.id for i in reversed(oldest_first)] == again
    assert len(set(again)) == 6 and all(isinstance(i, str) and i for i in again)
    assert oldest_first[0].content[0].text == "One."  # type: ignore[union-attr]
    assert oldest_first[1].id == first.output[0].id  # an output keeps its id
    assert oldest_first[0].id.startswith("msg_")
    assert page.has_more is True and len(page.data) == 2


def test_input_items_answer_the_list_shape(place: Place) -> None:
    with place.http() as http:
        made = _create(http, input=[{"role": "user", "content": "A"},
                                    {"role": "user", "content": "B"},
                                    {"role": "user", "content": "C"}])
        path = f"/responses/{made['id']}/input_items"
        whole = http.get(path, params={"order": "asc"}).json()
        first = http.get(path, params={"order": "asc", "limit": 2}).json()
        rest = http.get(path, params={"order": "asc", "limit": 2,
                                      "after": first["last_id"]}).json()
    assert whole["object"] == "list" and whole["has_more"] is False
    assert [i["content"][0]["text"] for i in whole["data"]] == ["A", "B", "C"]
    assert first["has_more"] is True and first["first_id"] == whole["data"][0]["id"]
    assert first["last_id"] == whole["data"][1]["id"]
    assert [i["id"] for i in rest["data"]] == [whole["data"][2]["id"]]
    assert rest["has_more"] is False and rest["first_id"] == rest["last_id"]


@pytest.mark.parametrize(("query", "param"), [
    ({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"limit": "ten"}, "limit"),
    ({"after": "msg_nope"}, "after"), ({"order": "sideways"}, "order"),
])
def test_bad_input_items_queries_are_400s(place: Place, query: dict[str, Any],
                                          param: str) -> None:
    with place.http() as http:
        made = _create(http)
        bad = http.get(f"/responses/{made['id']}/input_items", params=query)
    assert bad.status_code == 400 and _error(bad)["param"] == param


# -- cancel ----------------------------------------------------------------------------------------
def test_cancel_of_a_response_not_in_background_is_unsupported(place: Place) -> None:
    with place.sdk() as sdk:
        made = sdk.responses.create(model="m", input="Quick one.")
        with pytest.raises(openai.BadRequestError) as refused:
            sdk.responses.cancel(made.id)
        assert sdk.responses.retrieve(made.id).status == "completed"
    assert isinstance(refused.value.body, dict)
    assert refused.value.body["code"] == "unsupported_operation"


def test_a_client_that_leaves_a_stream_leaves_the_response_cancelled(place: Place) -> None:
    place.engine.inject({"slow": {"first_event": 0, "per_event": 0.05,
                                  "tokens_per_second": None}})
    with openai.OpenAI(base_url=place.base_url, api_key=KEY_A, max_retries=0) as sdk:
        stream = sdk.responses.create(model="m", input="Tell me a long story.", stream=True)
        response_id = None
        for event in stream:
            if event.type == "response.created":
                response_id = event.response.id
            if event.type == "response.output_text.delta":
                break
        stream.close()
    assert response_id is not None
    deadline = time.monotonic() + 10
    while place.engine.journal[0].finished_at is None:
        assert time.monotonic() < deadline, "the answer never finished"
        time.sleep(0.01)
    assert place.engine.journal[0].ended == "client gone"
    with place.sdk() as sdk:
        assert sdk.responses.retrieve(response_id).status == "cancelled"



def test_a_client_that_leaves_a_websocket_turn_leaves_the_response_cancelled(
        place: Place) -> None:
    """WebSocket mode settles a turn as HTTP does: the socket closed before the terminal event,
    the stored response reads ``cancelled`` for the key of the handshake."""
    place.engine.inject({"slow": {"first_event": 0, "per_event": 0.05,
                                  "tokens_per_second": None}})
    url = place.base_url.replace("http", "ws", 1) + "/responses"
    with ws_connect(url, additional_headers={"Authorization": f"Bearer {KEY_A}"}) as socket:
        socket.send(json.dumps({"type": "response.create", "model": "m",
                                "input": "Tell me a long story."}))
        events = [json.loads(socket.recv(timeout=10)) for _ in range(3)]
    assert events[0]["type"] == "response.created"
    response_id = events[0]["response"]["id"]
    deadline = time.monotonic() + 10
    while place.engine.journal[0].finished_at is None:
        assert time.monotonic() < deadline, "the turn never finished"
        time.sleep(0.01)
    assert place.engine.journal[0].ended == "client gone"
    with place.sdk() as sdk:
        assert sdk.responses.retrieve(response_id).status == "cancelled"
    with place.sdk(KEY_B) as other, pytest.raises(openai.NotFoundError):
        other.responses.retrieve(response_id)


# -- ownership -------------------------------------------------------------------------------------
def test_a_response_is_visible_only_to_the_key_that_created_it(place: Place) -> None:
    with place.http(KEY_A) as alice, place.http(KEY_B) as bob, place.http(None) as nobody:
        made = _create(alice)
        rid = made["id"]
        for client in (bob, nobody):
            for method, path in [("GET", f"/responses/{rid}"),
                                 ("GET", f"/responses/{rid}/input_items"),
                                 ("POST", f"/responses/{rid}/cancel"),
                                 ("DELETE", f"/responses/{rid}")]:
                answer = client.request(method, path)
                assert answer.status_code == 404, (method, path)
                assert _error(answer)["code"] == "response_not_found"
            child = client.post("/responses", json={"model": "m", "input": "Mine now.",
                                                    "previous_response_id": rid})
            assert child.status_code in (400, 404)
            assert _error(child)["code"] == "previous_response_not_found"
        assert alice.get(f"/responses/{rid}").status_code == 200  # bob's delete did nothing
        child = _create(alice, previous_response_id=rid)
        assert bob.get(f"/responses/{child['id']}").status_code == 404
        anonymous = _create(nobody)
        assert nobody.get(f"/responses/{anonymous['id']}").status_code == 200
        assert alice.get(f"/responses/{anonymous['id']}").status_code == 404
    stored = place.engine.responses.backend.get("response", rid)
    assert stored is not None and KEY_A.encode() not in stored
    assert hashlib.sha256(KEY_A.encode()).hexdigest().encode() in stored


# -- idempotency -----------------------------------------------------------------------------------
def test_the_same_key_and_request_replay_the_response(place: Place) -> None:
    body = {"model": "m", "input": "Order A123."}
    with place.http() as http:
        first = http.post("/responses", json=body, headers={"Idempotency-Key": "order-A123"})
        again = http.post("/responses", json=body, headers={"Idempotency-Key": "order-A123"})
    assert first.status_code == again.status_code == 200
    assert "x-idempotent-replayed" not in first.headers
    assert again.headers["x-idempotent-replayed"] == "true"
    assert again.content == first.content
    assert len(place.engine.responses) == 1


def test_a_streamed_request_replays_the_same_events(place: Place) -> None:
    body = {"model": "m", "input": "Stream it.", "stream": True}
    with place.http() as http:
        first = http.post("/responses", json=body, headers={"Idempotency-Key": "s-1"})
        again = http.post("/responses", json=body, headers={"Idempotency-Key": "s-1"})
    assert again.headers["x-idempotent-replayed"] == "true"
    assert again.headers["content-type"].startswith("text/event-stream")
    assert again.content == first.content and b"response.completed" in again.content
    with openai.OpenAI(base_url=place.base_url, api_key=KEY_A, max_retries=0) as sdk:
        replayed = list(sdk.responses.create(model="m", input="Stream it.", stream=True,
                                             extra_headers={"Idempotency-Key": "s-1"}))
    assert replayed[-1].type == "response.completed"
    assert len(place.engine.responses) == 1


def test_the_same_key_with_another_request_is_a_409_conflict(place: Place) -> None:
    with place.http() as http:
        _ = http.post("/responses", json={"model": "m", "input": "One."},
                      headers={"Idempotency-Key": "k"})
        other = http.post("/responses", json={"model": "m", "input": "Two."},
                          headers={"Idempotency-Key": "k"})
    assert other.status_code == 409
    assert _error(other)["code"] == "idempotency_key_conflict"
    assert _error(other)["param"] == "Idempotency-Key"


def test_the_same_key_while_the_first_is_generating_is_a_409_in_use(place: Place) -> None:
    place.engine.inject({"slow": {"first_event": 0, "per_event": 0.05,
                                  "tokens_per_second": None}})
    body = {"model": "m", "input": "A long story.", "stream": True}
    started = threading.Event()

    def first() -> None:
        with place.http() as http, http.stream("POST", "/responses", json=body,
                                               headers={"Idempotency-Key": "busy"}) as answer:
            for _ in answer.iter_raw():
                started.set()

    runner = threading.Thread(target=first)
    runner.start()
    assert started.wait(10)
    with place.http() as http:
        busy = http.post("/responses", json=body, headers={"Idempotency-Key": "busy"})
        runner.join(20)
        assert busy.status_code == 409 and _error(busy)["code"] == "idempotency_key_in_use"
        deadline = time.monotonic() + 10
        while place.engine.journal[0].finished_at is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        done = http.post("/responses", json=body, headers={"Idempotency-Key": "busy"})
    assert done.status_code == 200 and done.headers["x-idempotent-replayed"] == "true"


def test_idempotency_keys_never_cross_api_keys(place: Place) -> None:
    body = {"model": "m", "input": "Same words."}
    with place.http(KEY_A) as alice, place.http(KEY_B) as bob:
        mine = alice.post("/responses", json=body, headers={"Idempotency-Key": "shared"})
        theirs = bob.post("/responses", json=body, headers={"Idempotency-Key": "shared"})
        clash = bob.post("/responses", json={**body, "input": "Else."},
                         headers={"Idempotency-Key": "shared"})
    assert mine.status_code == theirs.status_code == 200
    assert "x-idempotent-replayed" not in theirs.headers
    assert mine.json()["id"] != theirs.json()["id"]
    assert clash.status_code == 409  # bob's own record of that key


def test_an_idempotency_key_is_at_most_255_characters(place: Place) -> None:
    with place.http() as http:
        longest = http.post("/responses", json={"model": "m", "input": "x"},
                            headers={"Idempotency-Key": "k" * 255})
        too_long = http.post("/responses", json={"model": "m", "input": "x"},
                             headers={"Idempotency-Key": "k" * 256})
    assert longest.status_code == 200
    assert too_long.status_code == 400 and _error(too_long)["param"] == "Idempotency-Key"
    assert len(place.engine.responses) == 1


def test_a_failed_request_does_not_hold_its_key(place: Place) -> None:
    with place.http() as http:
        bad = http.post("/responses", json={"model": "m", "input": 3},
                        headers={"Idempotency-Key": "retry-me"})
        assert bad.status_code == 400
        again = http.post("/responses", json={"model": "m", "input": 3},
                          headers={"Idempotency-Key": "retry-me"})
    assert again.status_code == 400 and "x-idempotent-replayed" not in again.headers


def test_concurrent_duplicates_make_exactly_one_response(place: Place) -> None:
    body = {"model": "m", "input": "Only once, please."}

    async def race() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=place.base_url, timeout=20, headers={
                "Authorization": f"Bearer {KEY_A}", "Idempotency-Key": "race"}) as http:
            return await asyncio.gather(*[http.post("/responses", json=body)
                                          for _ in range(20)])

    answers = asyncio.run(race())
    made = [a for a in answers if a.status_code == 200]
    assert all(a.status_code in (200, 409) for a in answers)
    assert all(_error(a)["code"] == "idempotency_key_in_use"
               for a in answers if a.status_code == 409)
    assert made and len({a.json()["id"] for a in made}) == 1
    assert sum(1 for a in made if "x-idempotent-replayed" not in a.headers) == 1
    assert len(place.engine.responses) == 1


# -- X-Request-ID ----------------------------------------------------------------------------------
def test_every_answer_carries_x_request_id(place: Place) -> None:
    with place.http() as http:
        made = _create(http, input="Id me.")
        rid = made["id"]
        _ = http.post("/responses", json={"model": "m", "input": "Id me."},
                      headers={"Idempotency-Key": "rid"})
        calls = [
            ("GET", f"/responses/{rid}", {}),
            ("GET", f"/responses/{rid}/input_items", {}),
            ("GET", f"/responses/{rid}/input_items", {"limit": "0"}),  # 400
            ("POST", f"/responses/{rid}/cancel", {}),  # 400
            ("GET", "/responses/resp_nope", {}),  # 404
            ("DELETE", "/responses/resp_nope", {}),  # 404
            ("DELETE", f"/responses/{rid}", {}),
        ]
        for method, path, params in calls:
            generated = http.request(method, path, params=params)
            assert generated.headers["x-request-id"].startswith("req_"), (method, path)
        own = {"X-Request-ID": "my-trace-42"}
        for method, path, params in calls:
            echoed = http.request(method, path, params=params, headers=own)
            assert echoed.headers["x-request-id"] == "my-trace-42", (method, path)
        body = {"model": "m", "input": "Id me."}
        replay = http.post("/responses", json=body, headers={**own, "Idempotency-Key": "rid"})
        conflict = http.post("/responses", json={**body, "input": "other"},
                             headers={**own, "Idempotency-Key": "rid"})
    assert replay.headers["x-idempotent-replayed"] == "true"
    assert replay.headers["x-request-id"] == conflict.headers["x-request-id"] == "my-trace-42"
    assert conflict.status_code == 409
