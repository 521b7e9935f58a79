"""Every tool type through the real openai SDK against a real server under the openai profile:
``tool_choice: "required"`` with that one tool gets its call item, as JSON (``create``), streamed
(``stream=True``) and through ``responses.stream()``; every streamed event is held to the
checker's strict rules (the self-check, and here again on the bytes), is one the SDK's
``ResponseStreamEvent`` union knows, numbered without a gap, and the JSON body is what the
stream folds to."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from ormock import OrmockServer, check_stream
from ormock.cli import main
from ormock.protocol.profile import get_profile
from ormock.protocol.tools import KINDS

Json = dict[str, Any]
STRICT = get_profile("openai").spellings_only()  # ormock's own streams: every rule
EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
PATCH_GRAMMAR = r'''
start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?
hunk: add_hunk | delete_hunk
add_hunk: "*** Add File: " filename LF add_line+
delete_hunk: "*** Delete File: " filename LF
filename: /(.+)/
add_line: "+" /(.*)/ LF -> line
%import common.LF
'''

# name -> (the one tool, the user's words, the output item types the answer holds)
CASES: dict[str, tuple[Json, str, list[str]]] = {
    "web_search": ({"type": "web_search"}, "How tall is the Eiffel Tower?",
                   ["web_search_call", "message"]),
    "web_search_preview": ({"type": "web_search_preview"}, "Any news today?",
                           ["web_search_call", "message"]),
    "file_search": ({"type": "file_search", "vector_store_ids": ["vs_1"]},
                    "What do the reports say?", ["file_search_call", "message"]),
    "code_interpreter": ({"type": "code_interpreter", "container": {"type": "auto"}},
                         "Plot the numbers.", ["code_interpreter_call", "message"]),
    "image_generation": ({"type": "image_generation", "partial_images": 2},
                         "A lighthouse at dusk.", ["image_generation_call", "message"]),
    "mcp": ({"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.example.com",
             "require_approval": "never"}, "Ask deepwiki about ormock.",
            ["mcp_list_tools", "mcp_call", "message"]),
    "mcp_approval": ({"type": "mcp", "server_label": "deepwiki",
                      "server_url": "https://mcp.example.com",
                      "allowed_tools": ["ask_question"]}, "Ask about ormock.",
                     ["mcp_list_tools", "mcp_approval_request"]),
    "custom_regex": ({"type": "custom", "name": "phone", "format": {
        "type": "grammar", "syntax": "regex", "definition": r"\+1 \d{3}-\d{4}"}},
        "Call the office.", ["custom_tool_call"]),
    "custom_lark": ({"type": "custom", "name": "apply_patch", "format": {
        "type": "grammar", "syntax": "lark", "definition": PATCH_GRAMMAR}},
        "Add a notes file.", ["custom_tool_call"]),
    "custom_text": ({"type": "custom", "name": "note", "format": {"type": "text"}},
                    "Remember to buy milk.", ["custom_tool_call"]),
    "computer": ({"type": "computer_use_preview", "display_width": 800, "display_height": 600,
                  "environment": "browser"}, "Open the settings.", ["computer_call"]),
    "local_shell": ({"type": "local_shell"}, "Run `ls -la` please.", ["local_shell_call"]),
    "shell": ({"type": "shell"}, "Run `git status` please.", ["shell_call"]),
    "apply_patch": ({"type": "apply_patch"}, "Create notes.md with a summary.",
                    ["apply_patch_call"]),
    "tool_search": ({"type": "tool_search"}, "Find tools for the calendar.",
                    ["tool_search_call", "tool_search_output", "message"]),
    "tool_search_client": ({"type": "tool_search", "execution": "client"},
                           "Find tools for the calendar.", ["tool_search_call"]),
}


@pytest.fixture(scope="module")
def server() -> Iterator[OrmockServer]:
    with OrmockServer(seed=0, self_check=True, profile="openai") as running:
        yield running


@pytest.fixture
def client(server: OrmockServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0,
                       _strict_response_validation=True) as sdk:
        yield sdk


WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}


def request_of(name: str) -> Json:
    tool, words, _ = CASES[name]
    return {"model": "gpt-5", "input": words, "tools": [tool], "tool_choice": "required",
            "include": ["web_search_call.action.sources", "file_search_call.results",
                        "code_interpreter_call.outputs"]}


def content(output: list[Json]) -> list[Json]:
    """The output without what a repeated request draws anew (its ids)."""
    drawn = ("id", "call_id", "approval_request_id")
    return [{k: v for k, v in item.items() if k not in drawn} for item in output]


def unparsed(output: list[Any]) -> list[Json]:
    """Items as sent: the stream helper's ``parsed`` (its structured-output slot) left out."""
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "parsed"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return [strip(item.model_dump(exclude_unset=True)) for item in output]


@pytest.mark.parametrize("name", sorted(CASES))
def test_required_gets_the_tools_call_as_json(client: openai.OpenAI, name: str) -> None:
    response = client.responses.create(**request_of(name))  # type: ignore[call-overload]
    assert response.status == "completed"
    assert [item.type for item in response.output] == CASES[name][2]
    for item in response.output:  # the SDK's own typed item, not a fallback
        assert type(item).__module__.startswith("openai.types"), type(item)
    messages = [item for item in response.output if item.type == "message"]
    assert bool(response.output_text) == bool(messages)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_stream_is_valid_known_numbered_and_folds_to_the_json_body(
        server: OrmockServer, name: str) -> None:
    body = request_of(name)
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        plain = http.post("/responses", json=body).json()
        raw = http.post("/responses", json={**body, "stream": True}).content
    report = check_stream(raw, profile=STRICT)
    assert report.ok, [str(v) for v in report.violations]
    events = report.events
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    for event in events:  # each one the SDK's union knows, with the fields it declares
        parsed = EVENTS.validate_python(event)
        assert parsed.type == event["type"]
    assert report.response is not None
    assert content(report.response["output"]) == content(plain["output"])
    assert report.response["usage"] == plain["usage"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_sdks_stream_helpers_give_typed_items(client: openai.OpenAI, name: str) -> None:
    streamed = list(client.responses.create(**request_of(name), stream=True))  # type: ignore
    assert [e.sequence_number for e in streamed] == list(range(len(streamed)))
    assert streamed[-1].type == "response.completed"
    request = request_of(name)
    with client.responses.stream(**request) as stream:  # type: ignore[arg-type]
        seen = [event.type for event in stream]
        final = stream.get_final_response()
    assert seen == [e.type for e in streamed]
    assert [item.type for item in final.output] == CASES[name][2]
    assert content(unparsed(final.output)) == content(unparsed(streamed[-1].response.output))
    text = "".join(getattr(e, "delta", "") for e in streamed
                   if e.type == "response.output_text.delta")
    assert final.output_text == text


def test_the_web_search_answer_cites_inside_its_text(client: openai.OpenAI) -> None:
    response = client.responses.create(**request_of("web_search"))  # type: ignore
    call, message = response.output
    assert call.type == "web_search_call" and call.action.type == "search"
    assert call.action.query == "How tall is the Eiffel Tower?"
    sources = [s.url for s in call.action.sources or []]
    assert len(sources) == 2
    assert message.type == "message"
    part = message.content[0]
    assert part.type == "output_text" and len(part.annotations) == 2
    for note, url in zip(part.annotations, sources, strict=True):
        assert note.type == "url_citation" and note.url == url
        cited = part.text[note.start_index:note.end_index]
        assert cited.startswith("[") and cited.endswith(f"]({url})"), cited


def test_sources_and_results_only_when_include_asks(client: openai.OpenAI) -> None:
    for name in ("web_search", "file_search", "code_interpreter"):
        request = {**request_of(name), "include": []}
        item = client.responses.create(**request).output[0]  # type: ignore[call-overload]
        dumped = item.model_dump()
        assert (dumped.get("action") or {}).get("sources") is None
        assert dumped.get("results") is None and dumped.get("outputs") is None


def test_custom_tool_inputs_follow_their_grammar(client: openai.OpenAI) -> None:
    phone = client.responses.create(**request_of("custom_regex")).output[0]  # type: ignore
    assert phone.type == "custom_tool_call" and phone.name == "phone"
    assert re.fullmatch(r"\+1 \d{3}-\d{4}", phone.input)
    patch = client.responses.create(**request_of("custom_lark")).output[0]  # type: ignore
    assert patch.type == "custom_tool_call"
    assert patch.input.startswith("*** Begin Patch\n*** ")
    assert patch.input.rstrip("\n").endswith("*** End Patch")
    note = client.responses.create(**request_of("custom_text")).output[0]  # type: ignore
    assert note.type == "custom_tool_call" and note.input == "Remember to buy milk."


def test_a_grammar_the_default_cannot_write_for_is_refused_naming_it(
        client: openai.OpenAI) -> None:
    request = request_of("custom_regex")
    twice = {"type": "custom", "name": "twice", "format": {
        "type": "grammar", "syntax": "regex", "definition": r"(a)\1"}}
    request["tools"] = [WEATHER, twice]
    request["tool_choice"] = {"type": "custom", "name": "twice"}
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(**request)  # type: ignore[call-overload]
    assert "backreference" in str(refused.value) and "scenario" in str(refused.value)
    # the param names the grammar: where the tool is, in ``tools``, in a namespace tool or in
    # an ``additional_tools`` item
    assert (refused.value.code, refused.value.param) == (
        "unsupported_grammar", "tools[1].format.definition")
    request["tools"] = [{"type": "namespace", "name": "ns", "description": "d",
                         "tools": [twice]}]
    request["tool_choice"] = "required"
    with pytest.raises(openai.BadRequestError) as nested:
        client.responses.create(**request)  # type: ignore[call-overload]
    assert nested.value.param == "tools[0].tools[0].format.definition"
    request["tools"] = []
    request["input"] = [{"role": "user", "content": "Call it."},
                        {"type": "additional_tools", "role": "developer", "tools": [twice]}]
    with pytest.raises(openai.BadRequestError) as added:
        client.responses.create(**request)  # type: ignore[call-overload]
    assert added.value.param == "input[1].tools[0].format.definition"


def test_image_generation_streams_partial_pngs_then_the_final_one(
        client: openai.OpenAI) -> None:
    events = list(client.responses.create(**request_of("image_generation"),  # type: ignore
                                          stream=True))
    partials = [e for e in events if e.type == "response.image_generation_call.partial_image"]
    assert [e.partial_image_index for e in partials] == [0, 1]
    call = events[-1].response.output[0]
    assert call.type == "image_generation_call" and call.result
    for image in [*(e.partial_image_b64 for e in partials), call.result]:
        assert base64.b64decode(image).startswith(b"\x89PNG\r\n\x1a\n")
    assert [e.type for e in events if e.type.startswith("response.image_generation_call")] == [
        "response.image_generation_call.in_progress", "response.image_generation_call.generating",
        *["response.image_generation_call.partial_image"] * 2,
        "response.image_generation_call.completed"]


def test_mcp_lists_the_allowed_tools_and_asks_approval_by_default(
        client: openai.OpenAI) -> None:
    listed, asked = client.responses.create(**request_of("mcp_approval")).output  # type: ignore
    assert listed.type == "mcp_list_tools" and [t.name for t in listed.tools] == ["ask_question"]
    assert asked.type == "mcp_approval_request" and asked.name == "ask_question"
    assert asked.server_label == "deepwiki" and asked.arguments.startswith("{")


EVERY_ITEM = """\
name: every-tool-call
seed: 5
steps:
  - times: forever
    reply:
      items:
        - web_search_call: {action: {type: search, query: weather in Paris}}
        - file_search_call:
            queries: [weather reports]
            results: [{file_id: file-1, filename: paris.pdf, score: 0.92, text: Mild.}]
        - code_interpreter_call: {code: "print(21 * 2)", outputs: [{type: logs, logs: "42"}]}
        - image_generation_call: {revised_prompt: a lighthouse, partial_images: 2}
        - mcp_list_tools: {server_label: deepwiki, tools: [{name: ask_question}]}
        - mcp_approval_request: {server_label: deepwiki, name: ask_question, arguments: {q: a}}
        - mcp_call: {server_label: deepwiki, name: ask_question, arguments: {q: a}, output: ok}
        - custom_tool_call: {name: note, input: "{{ request.input }}"}
        - computer_call: {action: {type: click, button: left, x: 1, y: 2}}
        - local_shell_call: {action: {command: [ls, -la]}}
        - shell_call: {action: {commands: [ls -la, pwd]}}
        - apply_patch_call: {operation: {type: create_file, path: a.md, diff: "+hi\\n"}}
        - tool_search_call: {arguments: {query: calendar}, execution: client}
        - tool_search_output: {tools: [], execution: server}
        - message: Done.
"""


def test_scenario_items_of_every_type_load_lint_and_replay(
        server: OrmockServer, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "every.yaml"
    path.write_text(EVERY_ITEM)
    assert main(["check", str(path)]) == 0, capsys.readouterr()
    server.namespaces.open("every")  # its own: a loaded scenario answers every request
    base_url = f"{server.url}/every/v1"
    loaded = httpx.post(f"{server.url}/every/_ormock/scenarios", content=EVERY_ITEM,
                        timeout=10, headers={"content-type": "application/yaml"})
    assert loaded.status_code == 201, loaded.text
    headers = {"X-Ormock-Scenario": "every-tool-call"}
    with openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0,
                       _strict_response_validation=True) as client:
        response = client.responses.create(model="m", input="buy milk", extra_headers=headers)
    kinds = [item.type for item in response.output]
    assert kinds[:-1] == sorted(KINDS, key=lambda k: EVERY_ITEM.index(f"- {k}:"))
    assert response.output[7].input == "buy milk"  # type: ignore[union-attr]
    raw = httpx.post(f"{base_url}/responses", headers=headers, timeout=10,
                     json={"model": "m", "input": "buy milk", "stream": True}).content
    report = check_stream(raw, profile=STRICT)
    assert report.ok, [str(v) for v in report.violations]
    assert content(report.response["output"]) == content(  # type: ignore[index]
        unparsed(response.output))
    for event in report.events:
        EVENTS.validate_python(event)


def test_the_mcp_approval_scenario_calls_the_tool_in_the_continuation(
        client: openai.OpenAI) -> None:
    headers = {"X-Ormock-Scenario": "mcp-approval"}
    first = client.responses.create(model="m", input="Ask deepwiki.", extra_headers=headers)
    assert [item.type for item in first.output] == ["mcp_list_tools", "mcp_approval_request"]
    then = client.responses.create(model="m", input="Go ahead.", extra_headers=headers,
                                   previous_response_id=first.id)
    call = then.output[0]
    assert call.type == "mcp_call" and call.approval_request_id == first.output[1].id
    assert then.output_text == "It fakes the OpenAI Responses API for tests."


@pytest.fixture(scope="module")
def fast() -> Iterator[OrmockServer]:
    """A server without the self-check: it takes the shortcut builds."""
    with OrmockServer(seed=0, profile="openai") as running:
        yield running


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_shortcut_builds_send_what_a_full_build_sends(fast: OrmockServer,
                                                          name: str) -> None:
    """Without the self-check a new content is built without event objects and a repeat comes
    from the stream cache (``engine/building.py`` ``fresh``, ``issue``): the same items."""
    with httpx.Client(base_url=fast.base_url, timeout=10) as http:
        answers = []
        for _ in range(3):  # a new content, its repeat (kept), then from the stream cache
            plain = http.post("/responses", json=request_of(name)).json()
            raw = http.post("/responses", json={**request_of(name), "stream": True}).content
            report = check_stream(raw, profile=STRICT)
            assert report.ok, [str(v) for v in report.violations]
            assert content(report.response["output"]) == content(plain["output"])  # type: ignore
            answers.append(content(plain["output"]))
    assert answers[0] == answers[1] == answers[2]
