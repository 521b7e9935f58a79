"""Tool loops over HTTP with the real openai SDK, under the openai profile: the client sends back
what it did (an MCP approval, a custom tool's output, a computer screenshot, a forced hosted
tool's choice) and the embedded default answers the next step as OpenAI would. Each request is
checked by the request side (its input items and ``tool_choice`` forms) and each answer built by
the output side; the two meet only here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from ormock import OrmockServer

Json = dict[str, Any]
MCP = {"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.example.com",
       "allowed_tools": ["ask_question"]}
PATCH = {"type": "custom", "name": "apply_patch", "format": {"type": "text"}}
SCREEN = {"type": "computer_use_preview", "display_width": 800, "display_height": 600,
          "environment": "browser"}
PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
       "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with OrmockServer(profile="openai", self_check=True) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def _types(response: Any) -> list[str]:
    return [item.type for item in response.output]


def _create(client: openai.OpenAI, **body: Any) -> Any:
    """``responses.create`` with a plain body (these tests are about the server's answers,
    not the SDK's parameter types)."""
    return client.responses.create(**body)


def test_an_mcp_approval_comes_back_and_the_call_is_made(client: openai.OpenAI) -> None:
    first = _create(client, model="gpt-5", input="Ask deepwiki about ormock.",
                    tools=[MCP], tool_choice="required")
    assert _types(first) == ["mcp_list_tools", "mcp_approval_request"]
    request = first.output[1]
    second = _create(
        client, model="gpt-5", previous_response_id=first.id, tools=[MCP],
        input=[{"type": "mcp_approval_response", "approval_request_id": request.id,
                "approve": True}])
    assert _types(second) == ["mcp_call", "message"]
    call = second.output[0]
    assert call.type == "mcp_call" and call.approval_request_id == request.id
    assert call.server_label == "deepwiki" and call.name == "ask_question"
    assert second.output_text


def test_a_refused_mcp_approval_gets_a_message_and_no_call(client: openai.OpenAI) -> None:
    first = _create(client, model="gpt-5", input="Ask deepwiki about ormock.",
                    tools=[MCP], tool_choice="required")
    second = _create(
        client, model="gpt-5", previous_response_id=first.id, tools=[MCP],
        input=[{"type": "mcp_approval_response", "approval_request_id": first.output[1].id,
                "approve": False}])
    assert _types(second) == ["message"]


def test_a_custom_tool_output_is_answered_with_a_message(client: openai.OpenAI) -> None:
    first = _create(client, model="gpt-5", input="Add a notes file.", tools=[PATCH],
                    tool_choice={"type": "custom", "name": "apply_patch"})
    assert _types(first) == ["custom_tool_call"]
    call = first.output[0]
    assert call.type == "custom_tool_call" and isinstance(call.input, str) and call.input
    second = _create(
        client, model="gpt-5", previous_response_id=first.id, tools=[PATCH],
        input=[{"type": "custom_tool_call_output", "call_id": call.call_id,
                "output": "Done: notes.md added"}])
    assert _types(second) == ["message"] and second.output_text


def test_a_custom_tool_call_sent_back_without_previous_response_is_taken(
        client: openai.OpenAI) -> None:
    """Codex's way under ``store: false``: the whole history, the call and its output, again."""
    answer = _create(client, model="gpt-5", store=False, tools=[PATCH], input=[
        {"role": "user", "content": "Add a notes file."},
        {"type": "custom_tool_call", "call_id": "call_patch", "name": "apply_patch",
         "input": "*** Begin Patch\n*** End Patch\n"},
        {"type": "custom_tool_call_output", "call_id": "call_patch", "output": "ok"}])
    assert _types(answer) == ["message"]


def test_a_computer_loop_runs_on_screenshots_until_its_answer(client: openai.OpenAI) -> None:
    response = _create(client, model="computer-use-preview", input="Open the settings.",
                       tools=[SCREEN], truncation="auto",
                       tool_choice="required")
    actions = []
    for _ in range(6):
        if _types(response) != ["computer_call"]:
            break
        call = response.output[0]
        actions.append(call.action.type)
        response = _create(
            client, model="computer-use-preview", previous_response_id=response.id,
            tools=[SCREEN], truncation="auto",
            input=[{"type": "computer_call_output", "call_id": call.call_id,
                    "output": {"type": "computer_screenshot", "image_url": PNG}}])
    assert actions[:3] == ["screenshot", "click", "type"]
    assert _types(response) == ["message"] and response.output_text


@pytest.mark.parametrize("choice", [{"type": "web_search_preview"}, {"type": "web_search"}])
def test_a_forced_web_search_calls_the_web_search_tool(client: openai.OpenAI, choice: Json
                                                       ) -> None:
    response = _create(client, model="gpt-5", input="Any news today?",
                       tools=[{"type": "web_search"}],
                       tool_choice=choice)
    assert _types(response) == ["web_search_call", "message"]
    text = response.output[1].content[0]
    assert len(text.annotations) == 2
    for note in text.annotations:  # each citation covers its link in the text
        assert note.type == "url_citation"
        assert text.text[note.start_index:note.end_index].endswith(f"]({note.url})")


def test_a_forced_tool_that_is_not_offered_is_a_400_naming_tool_choice(
        client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        _create(client, model="gpt-5", input="hi", tools=[PATCH],
                tool_choice={"type": "image_generation"})
    error = refused.value.body
    assert isinstance(error, dict) and error["param"].startswith("tool_choice")


NAMESPACE = {"type": "namespace", "name": "functions", "description": "the agent's tools",
             "tools": [{"type": "function", "name": "exec_command", "description": "run",
                        "parameters": {"type": "object", "required": ["cmd"],
                                       "properties": {"cmd": {"type": "string"}}}},
                       {"type": "custom", "name": "apply_patch", "description": "patch",
                        "format": {"type": "text"}}]}


def _offered(text: str) -> list[Json]:
    """Codex's input with the newest models: its tools in an ``additional_tools`` item, each in
    a ``namespace`` tool."""
    return [{"type": "additional_tools", "role": "developer", "tools": [NAMESPACE]},
            {"role": "user", "content": text}]


@pytest.mark.parametrize(("text", "kind", "name"), [
    ("Please apply_patch a new file notes.md", "custom_tool_call", "apply_patch"),
    ("What is in this folder?", "function_call", "exec_command")])
def test_a_tool_in_a_namespace_is_called_with_its_namespace(
        client: openai.OpenAI, text: str, kind: str, name: str) -> None:
    first = _create(client, model="gpt-6-luna", input=_offered(text))
    assert _types(first) == [kind]
    call = first.output[0]
    assert (call.name, call.namespace) == (name, "functions")
    output = "custom_tool_call_output" if kind == "custom_tool_call" else "function_call_output"
    second = _create(client, model="gpt-6-luna", previous_response_id=first.id,
                     input=[{"type": output, "call_id": call.call_id, "output": "ok"}])
    assert _types(second) == ["message"]


def test_a_scenario_calls_a_tool_of_a_namespace() -> None:
    scenario = {"name": "ns", "steps": [{"reply": {"items": [
        {"function_call": {"name": "exec_command", "namespace": "functions",
                           "arguments": {"cmd": "echo hi"}}}]}}]}
    with OrmockServer(profile="openai", self_check=True) as server:
        server.engine().use(scenario)
        sdk = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        response = _create(sdk, model="gpt-6-luna", input=_offered("run it"), stream=False)
        call = response.output[0]
        assert (call.type, call.name, call.namespace) == ("function_call", "exec_command",
                                                         "functions")
