"""The real openai SDK against a real server under ``--profile openai``: what OpenAI's clients
send beyond the spec (issue 30's reproductions, every input item type of the SDK, every forced
``tool_choice`` form), encrypted reasoning under ``store: false``, and ``generate: false``."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, get_args

import openai
import pytest

from ormock import OrmockServer
from ormock.protocol.tokens import count_tokens
from ormock.protocol.vocabulary import openai_vocabulary
from tests.vocabulary_items import minimal_item

Json = dict[str, Any]
_names = itertools.count()
WEATHER = {"type": "function", "name": "get_weather", "description": "The weather in a place",
           "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
                          "required": ["location"]}}
APPLY_PATCH = {"type": "custom", "name": "apply_patch", "description": "Apply a patch",
               "format": {"type": "grammar", "syntax": "lark",
                          "definition": 'start: "*** Begin Patch" /(.|\\n)*/'}}


@pytest.fixture(scope="module")
def server() -> Iterator[OrmockServer]:
    with OrmockServer(profile="openai", seed=0, self_check=True) as running:
        yield running


@pytest.fixture(scope="module")
def hosted() -> Iterator[OrmockServer]:
    """Without the self-check: a Response echoing a hosted tool or a hosted tool_choice form
    cannot pass the official Open Responses schema (it knows function tools only)."""
    with OrmockServer(profile="openai", seed=0) as running:
        yield running


@pytest.fixture
def hosted_sdk(hosted: OrmockServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=hosted.base_url, api_key="test-key", max_retries=0) as client:
        yield client


@pytest.fixture
def namespace(server: OrmockServer) -> str:
    name = f"voc{next(_names)}"
    server.namespaces.open(name)
    return name


@pytest.fixture
def sdk(server: OrmockServer, namespace: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{server.url}/{namespace}/v1", api_key="test-key",
                       max_retries=0) as client:
        yield client


def create(sdk: openai.OpenAI, **body: Any) -> Any:
    return sdk.responses.create(model="gpt-5", **body)


# -- the three reproductions, answered 200 --------------------------------------------
def test_tools_sent_as_an_additional_tools_item(sdk: openai.OpenAI) -> None:
    """Codex with the newest models sends its tools as an input item."""
    response = create(sdk, input=[
        {"type": "additional_tools", "role": "developer", "tools": [WEATHER, APPLY_PATCH]},
        {"role": "user", "content": "What is the weather in Paris?"}], tool_choice="required",
        stream=False)
    assert response.status == "completed"
    (call,) = response.output  # its function tool is offered, and required
    assert call.type == "function_call" and call.name == "get_weather"


def test_a_custom_tool_call_and_its_output_sent_back(hosted_sdk: openai.OpenAI) -> None:
    response = create(hosted_sdk, tools=[APPLY_PATCH], input=[
        {"role": "user", "content": "Fix the typo."},
        {"type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch",
         "input": "*** Begin Patch\n*** End Patch"},
        {"type": "custom_tool_call_output", "call_id": "call_1", "output": "Done."}])
    assert response.status == "completed" and response.output_text


def test_generate_false_answers_no_output_and_uses_no_step(server: OrmockServer,
                                                           namespace: str,
                                                           sdk: openai.OpenAI) -> None:
    engine = server.engine(namespace)
    engine.use({"name": "one", "steps": [
        {"reply": {"items": [{"message": "The step's answer."}]}}]})
    warm = create(sdk, input="hi", extra_body={"generate": False})
    assert (warm.status, warm.output) == ("completed", [])
    streamed = list(create(sdk, input="hi", stream=True, extra_body={"generate": False}))
    assert [e.type for e in streamed] == ["response.created", "response.in_progress",
                                          "response.completed"]
    assert streamed[-1].response.output == []
    assert create(sdk, input="hi").output_text == "The step's answer."  # the step is still there
    with pytest.raises(openai.BadRequestError) as refused:
        create(sdk, input="hi", extra_body={"generate": "no"})
    assert refused.value.body["param"] == "generate"  # type: ignore[index]


def test_generate_false_over_websocket_then_the_turn(server: OrmockServer, namespace: str,
                                                     sdk: openai.OpenAI) -> None:
    server.engine(namespace).use({"name": "one", "steps": [
        {"reply": {"items": [{"message": "Turn."}]}}]})
    finals = []
    with sdk.responses.connect() as connection:
        for extra in ({"generate": False}, {}):
            connection.response.create(model="gpt-5", input="hi", store=False, **extra)
            for event in connection:
                if event.type in ("response.completed", "error"):
                    break
            assert event.type == "response.completed", event
            finals.append(event.response)
    assert finals[0].output == [] and finals[1].output_text == "Turn."


# -- every input item type the SDK knows ------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(set(openai_vocabulary()["input_items"]) - {"compaction"}))
def test_every_input_item_type_of_the_sdk_is_taken(sdk: openai.OpenAI, kind: str) -> None:
    response = create(sdk, input=[minimal_item(kind), {"role": "user", "content": "go on"}])
    assert response.status == "completed"


def test_an_item_the_sdk_declares_otherwise_is_a_400_naming_the_field(sdk: openai.OpenAI
                                                                      ) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        create(sdk, input=[{"role": "user", "content": "hi"},
                           {"type": "custom_tool_call", "name": "apply_patch", "input": "x"}])
    body: Json = refused.value.body  # type: ignore[assignment]
    assert (body["param"], body["code"]) == ("input[1].call_id", "missing_required_parameter")


def test_the_spec_profile_says_an_item_is_openais() -> None:
    with OrmockServer(seed=0) as spec, openai.OpenAI(
            base_url=spec.base_url, api_key="test-key", max_retries=0) as client, \
            pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="gpt-5", input=[
            {"type": "custom_tool_call", "call_id": "c", "name": "p", "input": "x"}])
    assert "'input[0].type' 'custom_tool_call' is an OpenAI item type; serve with --profile " \
           "openai to accept it" in refused.value.message


def test_a_step_matches_a_custom_tools_output(server: OrmockServer, namespace: str,
                                              sdk: openai.OpenAI) -> None:
    server.engine(namespace).use({"name": "patch", "steps": [
        {"match": {"function_call_output": ["call_7"]},
         "reply": {"items": [{"message": "Patched: {{ request.tool_outputs }}"}]}}]})
    response = create(sdk, input=[
        {"type": "custom_tool_call", "call_id": "call_7", "name": "apply_patch", "input": "x"},
        {"type": "custom_tool_call_output", "call_id": "call_7", "output": "1 file changed"}])
    assert response.output_text == "Patched: 1 file changed"


# -- tool_choice: every forced form ------------------------------------------------------------
FORCED: list[tuple[Json, Json]] = [
    ({"type": "function", "name": "get_weather"}, WEATHER),
    ({"type": "custom", "name": "apply_patch"}, APPLY_PATCH),
    ({"type": "mcp", "server_label": "docs"}, {"type": "mcp", "server_label": "docs",
                                               "server_url": "https://mcp.example/sse"}),
    ({"type": "mcp", "server_label": "docs", "name": "search"},
     {"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example/sse"}),
    ({"type": "web_search"}, {"type": "web_search"}),
    ({"type": "web_search_preview"}, {"type": "web_search_preview"}),
    ({"type": "file_search"}, {"type": "file_search", "vector_store_ids": ["vs_1"]}),
    ({"type": "code_interpreter"}, {"type": "code_interpreter", "container": {"type": "auto"}}),
    ({"type": "image_generation"}, {"type": "image_generation"}),
    ({"type": "computer_use_preview"}, {"type": "computer_use_preview", "display_width": 1024,
                                        "display_height": 768, "environment": "linux"}),
    ({"type": "shell"}, {"type": "shell"}),
    ({"type": "apply_patch"}, {"type": "apply_patch"}),
    ({"type": "allowed_tools", "mode": "required", "tools": [{"type": "web_search"},
                                                            {"type": "custom",
                                                             "name": "apply_patch"}]},
     {"type": "web_search"}),
]


@pytest.mark.parametrize(("choice", "tool"), FORCED,
                         ids=[f"{c['type']}-{i}" for i, (c, _) in enumerate(FORCED)])
def test_every_forced_tool_choice_form_is_taken(hosted_sdk: openai.OpenAI, choice: Json,
                                                tool: Json) -> None:
    tools = [tool, APPLY_PATCH] if choice["type"] == "allowed_tools" else [tool]
    raw = hosted_sdk.responses.with_raw_response.create(
        model="gpt-5", input="Use the tool.", tools=tools, tool_choice=choice)  # type: ignore
    response = raw.http_response.json()  # the SDK has no type for a forced web_search
    assert response["status"] == "completed" and response["tool_choice"] == choice


@pytest.mark.parametrize("choice", [c for c, _ in FORCED])
def test_a_forced_tool_that_is_not_offered_is_a_400(hosted_sdk: openai.OpenAI,
                                                    choice: Json) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        create(hosted_sdk, input="Use the tool.", tools=[{"type": "local_shell"}],
               tool_choice=choice)
    body: Json = refused.value.body  # type: ignore[assignment]
    assert body["param"].startswith("tool_choice") and body["code"] == "unknown_tool"


# -- reasoning as OpenAI keeps it -------------------------------------------------------------
def _reasoning(sdk: openai.OpenAI) -> Json:
    first = create(sdk, input="Think about ducks.", reasoning={"effort": "low"}, store=False,
                   include=["reasoning.encrypted_content"])
    item = first.output[0].to_dict()
    assert item["type"] == "reasoning" and item["encrypted_content"].startswith("ormock:v1:")
    return item


THOUGHT = "The user asked about ducks; they float because of air sacs."


def test_encrypted_reasoning_comes_back_under_store_false(server: OrmockServer, namespace: str,
                                                         sdk: openai.OpenAI) -> None:
    server.engine(namespace).use({"name": "thinks", "strict": False, "steps": [
        {"match": {"input_contains": "ducks"}, "reply": {"items": [
            {"reasoning": {"summary": ["Ducks."], "content": [THOUGHT]}}, {"message": "Air."}]}}]})
    first = create(sdk, input="Think about ducks.", store=False,
                   include=["reasoning.encrypted_content"])
    item = first.output[0].to_dict()
    assert item["encrypted_content"].startswith("ormock:v1:")
    # only its encrypted content tells what it thought: restored, the thought counts as input
    bare = {"type": "reasoning", "id": item["id"], "summary": [],
            "encrypted_content": item["encrypted_content"]}
    turn = [{"role": "user", "content": "hi"}, bare, {"role": "user", "content": "And then?"}]
    again = create(sdk, input=turn, store=False)
    plain = create(sdk, input=[turn[0], turn[2]], store=False)
    assert again.usage.input_tokens == plain.usage.input_tokens + count_tokens(THOUGHT)
    # without include, no encrypted content
    unsealed = create(sdk, input="Think about ducks.", reasoning={"effort": "low"})
    assert "encrypted_content" not in unsealed.output[0].to_dict()


def test_changed_encrypted_reasoning_is_refused(sdk: openai.OpenAI) -> None:
    item = _reasoning(sdk)
    body, tag = item["encrypted_content"].rsplit(":", 1)
    changed = {**item, "encrypted_content": f"{body[:-2]}AA:{tag}"}
    with pytest.raises(openai.BadRequestError) as refused:
        create(sdk, input=[changed, {"role": "user", "content": "go on"}], store=False)
    error: Json = refused.value.body  # type: ignore[assignment]
    assert (error["code"], error["param"]) == ("invalid_encrypted_content",
                                               "input[0].encrypted_content")
    assert f"The encrypted content for item {item['id']!r} could not be verified" in \
        error["message"]


def test_an_unknown_reasoning_id_under_store_false_is_a_404(sdk: openai.OpenAI) -> None:
    item = {"type": "reasoning", "id": "rs_0123abc", "summary": []}
    with pytest.raises(openai.NotFoundError) as refused:
        create(sdk, input=[{"role": "user", "content": "hi"}, item], store=False)
    assert refused.value.body["message"] == (  # type: ignore[index]
        "Item with id 'rs_0123abc' not found. Items are not persisted when `store` is set to "
        "false. Try again with `store` set to true, or remove this item from your input.")
    assert create(sdk, input=[{"role": "user", "content": "hi"}, item]).status == "completed"


def test_a_reasoning_id_the_chain_holds_is_taken_under_store_false(sdk: openai.OpenAI) -> None:
    first = create(sdk, input="Think.", reasoning={"effort": "low"})
    reasoning = first.output[0].to_dict()
    again = create(sdk, previous_response_id=first.id, store=False, input=[
        {"type": "reasoning", "id": reasoning["id"], "summary": []},
        {"role": "user", "content": "More."}])
    assert again.status == "completed"


def test_include_takes_what_the_sdk_may_ask_for(sdk: openai.OpenAI) -> None:
    """``include`` names what the installed SDK's ``ResponseIncludable`` names (a release that
    adds one fails here, in ``make test-latest``, before a client meets a 400), on a create and
    on a retrieve."""
    from openai.types.responses.response_includable import ResponseIncludable

    from ormock.protocol.fields import INCLUDABLE

    assert set(INCLUDABLE) == set(get_args(ResponseIncludable))
    made = sdk.responses.create(model="m", input="hi", include=list(INCLUDABLE))
    assert sdk.responses.retrieve(made.id, include=list(INCLUDABLE)).id == made.id
