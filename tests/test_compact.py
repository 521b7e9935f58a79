"""``POST /v1/responses/compact`` through the real openai SDK against a real server: the
``response.compaction`` resource (checked against the official schema), its output passed back
as input, ``previous_response_id``, errors, the journal, namespaces, determinism."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses.compacted_response import CompactedResponse
from openai.types.responses.response_compaction_item import ResponseCompactionItem

from ormock import OrmockServer
from ormock.engine.compaction import compact
from ormock.engine.core import Engine
from ormock.protocol.compaction import unpack
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.schema import validate_compaction, validate_error, validate_response

CONVERSATION: list[Any] = [
    {"type": "message", "role": "user",
     "content": "We agreed to launch on Tuesday and notify support first."},
    {"type": "message", "role": "assistant",
     "content": "Understood. The launch is Tuesday, with support notified beforehand."},
    {"type": "message", "role": "user",
     "content": [{"type": "input_text", "text": "Who do we notify?"}]},
]


@pytest.fixture
def sdk(base_url: str) -> Iterator[openai.OpenAI]:
    """The SDK as most code uses it (no strict validation): a compacted window holds the user
    messages as a provider returns them, with ``input_text`` parts, which the SDK's
    ``ResponseOutputItem`` union has no strict type for."""
    with openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0) as client:
        yield client


def _raw(client: openai.OpenAI, **params: Any) -> dict[str, Any]:
    raw = client.responses.with_raw_response.compact(**params)
    assert raw.status_code == 200
    assert raw.headers["content-type"] == "application/json"
    body: dict[str, Any] = json.loads(raw.content)
    assert validate_compaction(body) is None, validate_compaction(body)
    return body


def _error(response: httpx.Response) -> dict[str, Any]:
    envelope = response.json()
    assert validate_error(envelope) is None
    error: dict[str, Any] = envelope["error"]
    return error


def test_compact_returns_the_user_messages_then_one_compaction_item(sdk: openai.OpenAI) -> None:
    compacted = sdk.responses.compact(model="gpt-4o-mini", input=CONVERSATION,
                                      prompt_cache_key="openresponses-compact-test")
    assert isinstance(compacted, CompactedResponse)
    assert compacted.object == "response.compaction"
    assert compacted.id.startswith("resp_")
    types = [item.type for item in compacted.output]
    assert types == ["message", "message", "compaction"]
    users: list[Any] = compacted.output[:2]  # built as the SDK builds them, unvalidated
    assert [u.role for u in users] == ["user", "user"]
    assert [[(p.type, p.text) for p in u.content] for u in users] == [
        [("input_text", CONVERSATION[0]["content"])], [("input_text", "Who do we notify?")]]
    item = compacted.output[-1]
    assert isinstance(item, ResponseCompactionItem) and item.id.startswith("cmp_")
    # opaque to the client; ormock packs what the item stands for: the assistant's message
    assert unpack(item.encrypted_content) == [("assistant", CONVERSATION[1]["content"])]
    usage = compacted.usage
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.input_tokens > usage.output_tokens > 0


def test_the_resource_is_valid_under_the_official_schema(sdk: openai.OpenAI) -> None:
    image = {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "What is in this picture?"},
        {"type": "input_image", "image_url": "https://example.com/a.png"}]}
    body = _raw(sdk, model="gpt-4o-mini", input=[*CONVERSATION, image],
                instructions="Be brief.")
    assert list(body) == ["id", "object", "created_at", "output", "usage"]
    assert body["output"][2]["content"][1] == {
        "type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"}
    assert body["output"][-1] == {"id": body["output"][-1]["id"], "type": "compaction",
                                  "encrypted_content": body["output"][-1]["encrypted_content"]}


def test_a_window_without_user_messages_parses_under_strict_validation(
    client: openai.OpenAI,
) -> None:
    compacted = client.responses.compact(
        model="gpt-4o-mini", input=[
            {"type": "message", "role": "developer", "content": "Answer in French."},
            {"type": "function_call", "call_id": "call_1", "name": "lookup",
             "arguments": '{"q": "launch"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "Tuesday"},
        ])
    assert [item.type for item in compacted.output] == ["compaction"]
    item = compacted.output[0]
    assert isinstance(item, ResponseCompactionItem)
    assert unpack(item.encrypted_content) == [
        ("developer", "Answer in French."), ("function_call:lookup", '{"q": "launch"}'),
        ("function_call_output", "Tuesday")]


def test_the_output_fed_back_as_input_counts_the_same_context(
    sdk: openai.OpenAI, client: openai.OpenAI
) -> None:
    body = _raw(sdk, model="gpt-4o-mini", input=CONVERSATION)
    follow = {"type": "message", "role": "user", "content": "Continue from here."}
    again = client.responses.create(model="gpt-4o-mini", input=[*body["output"], follow],
                                    store=False)
    assert validate_response(again.model_dump(mode="json")) is None
    assert again.status == "completed" and again.output_text
    whole = client.responses.create(model="gpt-4o-mini", input=[*CONVERSATION, follow])
    assert again.usage is not None and whole.usage is not None
    assert again.usage.input_tokens == whole.usage.input_tokens
    assert client.responses.input_tokens.count(
        model="gpt-4o-mini", input=[*body["output"], follow]
    ).input_tokens == whole.usage.input_tokens


def test_compacting_a_compacted_window_keeps_what_the_first_stood_for(
    sdk: openai.OpenAI,
) -> None:
    first = _raw(sdk, model="gpt-4o-mini", input=CONVERSATION)
    more = {"type": "message", "role": "assistant", "content": "Support first, then launch."}
    second = _raw(sdk, model="gpt-4o-mini", input=[*first["output"], more])
    assert [i["type"] for i in second["output"]] == ["message", "message", "compaction"]
    assert unpack(second["output"][-1]["encrypted_content"]) == [
        ("assistant", CONVERSATION[1]["content"]), ("assistant", more["content"])]


def test_previous_response_id_compacts_the_whole_chain(
    sdk: openai.OpenAI, client: openai.OpenAI
) -> None:
    first = client.responses.create(model="gpt-4o-mini", input="Remember the word: slate.")
    body = _raw(sdk, model="gpt-4o-mini", previous_response_id=first.id,
                input="Compress this conversation.")
    texts = [i["content"][0]["text"] for i in body["output"] if i["type"] == "message"]
    assert texts == ["Remember the word: slate.", "Compress this conversation."]
    assert unpack(body["output"][-1]["encrypted_content"]) == [("assistant", first.output_text)]
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.responses.compact(model="gpt-4o-mini", previous_response_id="resp_nope")
    assert caught.value.body["param"] == "previous_response_id"  # type: ignore[index]


@pytest.mark.parametrize(("body", "param", "code"), [
    ({"input": CONVERSATION}, "model", "missing_required_parameter"),
    ({"model": None, "input": "x"}, "model", "missing_required_parameter"),
    ({"previous_response_id": "resp_1"}, "model", "missing_required_parameter"),
    ({"model": 3}, "model", "invalid_type"),
    ({"model": "m", "input": 5}, "input", "invalid_type"),
    ({"model": "m", "input": [{"type": "nope"}]}, "input[0].type", "invalid_value"),
    ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0].role",
     "invalid_value"),
    ({"model": "m", "input": [{"type": "compaction"}]}, "input[0].encrypted_content",
     "missing_required_parameter"),
    ({"model": "m", "instructions": 1}, "instructions", "invalid_type"),
    ({"model": "m", "prompt_cache_key": 1}, "prompt_cache_key", "invalid_type"),
    ({"model": "m", "prompt_cache_retention": "forever"}, "prompt_cache_retention",
     "invalid_value"),
    ({"model": "m", "stream": True}, "stream", "unsupported_parameter"),
])
def test_a_bad_request_is_a_400_naming_the_field(
    http: httpx.Client, body: dict[str, Any], param: str, code: str
) -> None:
    response = http.post("/responses/compact", json=body)
    assert response.status_code == 400
    error = _error(response)
    assert (error["type"], error["param"], error["code"]) == ("invalid_request", param, code)


def test_the_sdk_sees_a_missing_model_as_a_bad_request(sdk: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.responses.compact(model=None, input="x")
    assert caught.value.status_code == 400
    assert caught.value.body["param"] == "model"  # type: ignore[index]


def test_bodies_are_read_as_create_reads_them(http: httpx.Client) -> None:
    wrong_type = http.post("/responses/compact", content=b"{}",
                           headers={"content-type": "text/plain"})
    assert wrong_type.status_code == 415 and _error(wrong_type)["param"] == "content-type"
    broken = http.post("/responses/compact", content=b"{",
                       headers={"content-type": "application/json"})
    assert broken.status_code == 400 and _error(broken)["code"] == "invalid_json"
    not_object = http.post("/responses/compact", json=[1])
    assert not_object.status_code == 400 and _error(not_object)["code"] == "invalid_json"
    other_method = http.delete("/responses/compact")
    assert other_method.status_code == 405


def test_each_request_is_journaled(server: OrmockServer, base_url: str,
                                   sdk: openai.OpenAI, http: httpx.Client) -> None:
    body = _raw(sdk, model="gpt-4o-mini", input="Compact me.")
    http.post("/responses/compact", json={"input": "x"},
              headers={"Authorization": "Bearer not-a-real-key"})
    name = base_url.rsplit("/", 2)[-2]
    entries = list(server.engine(name).journal)
    assert [(e.method, e.path, e.status) for e in entries] == [
        ("POST", f"/{name}/v1/responses/compact", 200),
        ("POST", f"/{name}/v1/responses/compact", 400)]
    assert entries[0].body == {"model": "gpt-4o-mini", "input": "Compact me."}
    assert entries[0].sent_bytes == len(json.dumps(body, separators=(",", ":")))
    assert entries[0].finished_at is not None
    assert entries[1].error is not None and entries[1].error["param"] == "model"
    assert entries[1].headers["authorization"] == "***"  # masked, as for create
    listed = http.get(base_url.replace("/v1", "/_ormock/journal")).json()["data"]
    assert [e["status"] for e in listed] == [200, 400]


def test_namespaces_are_apart_and_the_root_path_works(server: OrmockServer) -> None:
    with httpx.Client(base_url=server.url) as raw:
        root = raw.post("/v1/responses/compact", json={"model": "m", "input": "x"})
        assert root.status_code == 200 and validate_compaction(root.json()) is None
        unknown = raw.post("/never-opened/v1/responses/compact", json={"model": "m"})
        assert unknown.status_code == 404
        assert _error(unknown)["code"] == "unknown_namespace"


def test_the_same_seed_and_order_give_the_same_bytes(server: OrmockServer) -> None:
    requests = [{"model": "m", "input": CONVERSATION}, {"model": "m", "input": "again"}]

    def run(name: str) -> list[bytes]:
        server.namespaces.open(name)
        with httpx.Client(base_url=f"{server.url}/{name}/v1") as raw:
            return [raw.post("/responses/compact", json=r).content for r in requests]

    first, second = run("compact-same-a"), run("compact-same-b")
    assert first == second
    assert first[0] != first[1]


def test_the_engine_answers_python_callers_and_seeds_drive_the_ids() -> None:
    one, same, other = Engine(seed=1), Engine(seed=1), Engine(seed=2)
    body = {"model": "m", "input": CONVERSATION}
    assert compact(one, body)[0] == compact(same, body)[0]
    assert compact(one, body)[0]["id"] != compact(other, body)[0]["id"]
    resource, entry = compact(one, body)
    assert validate_compaction(resource) is None
    assert entry.status == 200 and entry.path == "/v1/responses/compact"
    with pytest.raises(OpenResponsesError) as caught:
        compact(one, {"input": "x"})
    assert caught.value.param == "model"
    assert one.journal[-1].status == 400
