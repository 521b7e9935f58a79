"""The embedded default's tool calls below the HTTP layer (``ormock.engine.tool_calls``): the
tool choice resolved for every form, the loops whose input items the request parser takes
once the request side knows them (an MCP approval answered, a computer task), the grammars of
custom tools, determinism; the stream builder's spelling of OpenAI's items under the spec's
profile; and the checker's rules for them."""

from __future__ import annotations

import copy
import random
import re
from typing import Any

import pytest
from faker import Faker

from ormock import check_stream
from ormock.engine.embedded import default_plan
from ormock.engine.tool_calls import resolve_choice
from ormock.engine.tool_calls.lark_text import text_for_lark
from ormock.engine.tool_calls.regex_text import text_matching
from ormock.protocol.ids import IdFactory
from ormock.protocol.plan import MessagePlan, ReplyPlan, ToolCallPlan
from ormock.protocol.profile import get_profile
from ormock.protocol.request import ResponseRequest, parse_request
from ormock.protocol.response import new_response
from ormock.protocol.stream import build_events
from ormock.protocol.tools import KINDS, TOOL_EVENTS, spelled

Json = dict[str, Any]
STRICT = get_profile("openai").spellings_only()
WEB = {"type": "web_search"}
TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object"}}
MCP = {"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.example.com"}
COMPUTER = {"type": "computer_use_preview", "display_width": 800, "display_height": 600,
            "environment": "browser"}


def request(tools: list[Json], tool_choice: Any = "required", text: str = "Hello",
            **body: Any) -> ResponseRequest:
    """A parsed request whose ``tool_choice`` is set after parsing: the forms the parser
    learns on the request side are resolved here whatever it takes today."""
    parsed = parse_request({"model": "m", "input": text, "tools": tools, **body})
    parsed.echo["tool_choice"] = tool_choice
    return parsed


def plan(req: ResponseRequest, context: list[Json] | None = None) -> ReplyPlan:
    return default_plan(req, context if context is not None else list(req.input), Faker(), 0)


def types(reply: ReplyPlan) -> list[str]:
    return [item.type if isinstance(item, ToolCallPlan) else type(item).__name__
            for item in reply.items]


def events_of(reply: ReplyPlan, openai_items: bool = True) -> list[Json]:
    ids = IdFactory(0)
    return build_events(spelled(reply, openai_items), new_response(ids.new("resp"), 0,
                                                                   {"model": "m"}), ids)


# -- tool_choice, every form ------------------------------------------------------------------
@pytest.mark.parametrize(("choice", "called", "must"), [
    ("auto", ["get_time", "web_search"], False),
    ("required", ["get_time", "web_search"], True),
    ("none", [], False),
    ({"type": "web_search_preview"}, ["web_search"], True),
    ({"type": "web_search"}, ["web_search"], True),
    ({"type": "function", "name": "get_time"}, ["get_time"], True),
    ({"type": "allowed_tools", "mode": "required", "tools": [{"type": "web_search"}]},
     ["web_search"], True),
    ({"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function",
                                                          "name": "get_time"}]},
     ["get_time"], False),
])
def test_tool_choice_resolves_for_every_form(choice: Any, called: list[str], must: bool) -> None:
    resolved = resolve_choice(request([TIME, WEB], choice))
    assert [t.get("name") or t["type"] for t in resolved.tools] == called
    assert resolved.must is must


def test_forced_custom_and_mcp_choices_name_their_tool() -> None:
    custom = {"type": "custom", "name": "apply_patch"}
    other = {"type": "custom", "name": "note"}
    resolved = resolve_choice(request([other, custom], {"type": "custom", "name": "apply_patch"}))
    assert resolved.tools == [custom] and resolved.forced
    resolved = resolve_choice(request([MCP], {"type": "mcp", "server_label": "deepwiki",
                                              "name": "fetch"}))
    assert resolved.tools == [MCP] and resolved.mcp_tool == "fetch"


def test_a_forced_hosted_tool_is_called_among_function_tools() -> None:
    reply = plan(request([TIME, WEB], {"type": "web_search_preview"}))
    assert types(reply) == ["web_search_call", "MessagePlan"]


def test_auto_calls_a_hosted_tool_when_the_words_ask_for_it() -> None:
    assert types(plan(request([WEB], "auto", "Tell me a joke."))) == ["MessagePlan"]
    assert types(plan(request([WEB], "auto", "Search the web for the latest news."))) == [
        "web_search_call", "MessagePlan"]
    # a function tool is still called as before, whatever else is offered
    assert types(plan(request([WEB, TIME], "auto", "Tell me a joke."))) == ["FunctionCallPlan"]


# -- the loops ------------------------------------------------------------------------------
def test_an_approved_mcp_call_is_made_and_a_refused_one_said() -> None:
    first = plan(request([MCP]))
    assert types(first) == ["mcp_list_tools", "mcp_approval_request"]
    asked = first.items[1]
    assert isinstance(asked, ToolCallPlan)
    approval = {**asked.fields, "type": "mcp_approval_request", "id": "mcpr_1"}
    listed = {**first.items[0].fields, "type": "mcp_list_tools", "id": "mcpl_1"}  # type: ignore
    req = request([MCP])
    for approve, expected in ((True, ["mcp_call", "MessagePlan"]), (False, ["MessagePlan"])):
        context = [*req.input, listed, approval, {"type": "mcp_approval_response",
                                                  "approval_request_id": "mcpr_1",
                                                  "approve": approve}]
        reply = plan(req, context)
        assert types(reply) == expected
        if approve:
            call = reply.items[0]
            assert isinstance(call, ToolCallPlan)
            assert call.fields["approval_request_id"] == "mcpr_1"
            assert call.fields["arguments"] == asked.fields["arguments"]
        else:
            message = reply.items[0]
            assert isinstance(message, MessagePlan)
            assert "not approved" in message.parts[0].text  # type: ignore[union-attr]


def test_mcp_tools_are_listed_once_a_conversation_and_never_asks_no_approval() -> None:
    never = {**MCP, "require_approval": "never"}
    req = request([never])
    assert types(plan(req)) == ["mcp_list_tools", "mcp_call", "MessagePlan"]
    listed = {"type": "mcp_list_tools", "server_label": "deepwiki", "tools": []}
    assert types(plan(req, [listed, *req.input])) == ["mcp_call", "MessagePlan"]
    by_name = {**MCP, "require_approval": {"never": {"tool_names": ["search"]}}}
    assert types(plan(request([by_name]))) == ["mcp_list_tools", "mcp_call", "MessagePlan"]


def test_a_computer_task_loops_on_screenshots_then_answers() -> None:
    req = request([COMPUTER], "auto", "Open the browser settings.")
    context: list[Json] = list(req.input)
    actions = []
    for _ in range(3):
        reply = plan(req, context)
        assert types(reply) == ["computer_call"]
        call = reply.items[0]
        assert isinstance(call, ToolCallPlan)
        actions.append(call.fields["action"]["type"])
        context += [{"type": "computer_call", "call_id": "c", **call.fields},
                    {"type": "computer_call_output", "call_id": "c",
                     "output": {"type": "computer_screenshot", "image_url": "data:,"}}]
    assert actions == ["screenshot", "click", "type"]
    assert types(plan(req, context)) == ["MessagePlan"]


def test_a_client_tools_output_gets_the_final_answer() -> None:
    req = request([{"type": "custom", "name": "note"}], "auto", "Note: buy milk.")
    context = [*req.input, {"type": "custom_tool_call", "call_id": "c1", "name": "note",
                            "input": "buy milk"},
               {"type": "custom_tool_call_output", "call_id": "c1", "output": "noted"}]
    reply = plan(req, context)
    assert types(reply) == ["MessagePlan"]
    assert "note returned noted" in reply.items[0].parts[0].text  # type: ignore[union-attr]


def test_the_same_request_plans_the_same_calls() -> None:
    tools = [WEB, {"type": "image_generation", "partial_images": 1}, MCP]
    first = events_of(plan(request(tools, text="Search and draw ducks")))
    assert first == events_of(plan(request(tools, text="Search and draw ducks")))
    assert first != events_of(plan(request(tools, text="Search and draw geese")))


# -- grammars -------------------------------------------------------------------------------
@pytest.mark.parametrize("pattern", [
    r"\d{3}-\d{4}", r"(yes|no)", r"[A-Z][a-z]+ \d+", r"^(?P<user>\w+)@example\.com$",
    r"[^abc]{2,4}", r"(?i)hello", r"\w+(?:,\s*\w+)*", r"x{2,}", r"[\w.-]+/[\w.-]+\.py"])
def test_a_regex_grammar_gets_a_text_it_matches(pattern: str) -> None:
    draws = random.Random(pattern)
    for _ in range(5):
        assert re.fullmatch(pattern, text_matching(pattern, draws.randrange))


def test_what_a_regex_reader_cannot_make_is_named() -> None:
    with pytest.raises(ValueError, match="backreference"):
        text_matching(r"(a)\1", random.Random(0).randrange)
    with pytest.raises(ValueError, match="lookaround"):
        text_matching(r"(?=a)a", random.Random(0).randrange)


def test_a_lark_grammar_gets_a_text_of_its_shape() -> None:
    grammar = """
    start: expr
    ?expr: term (("+" | "-") term)*
    ?term: NUMBER | "(" expr ")"
    %import common.NUMBER
    %ignore " "
    """
    for seed in range(5):
        text = text_for_lark(grammar, random.Random(seed).randrange)
        assert re.fullmatch(r"[0-9+\-() ]+", text) and text.count("(") == text.count(")")


@pytest.mark.parametrize("pattern", [
    "a{999999999}", "((a{1000}){1000}){1000}", "(){999999999}", ".{0,999999999}",
    "((((((a{0,20}){0,20}){0,20}){0,20}){0,20}){0,20})"])
def test_a_regex_whose_texts_run_too_long_is_named_at_once(pattern: str) -> None:
    # a request's grammar must not hold the server: the text's size is judged before it is made
    with pytest.raises(ValueError, match="100000 characters"):
        text_matching(pattern, random.Random(0).randrange)


@pytest.mark.parametrize("grammar", [
    "start: start", "start: a\na: a \"x\" | a", 'start: "a"~999999999',
    'start: (("a"~1000)~1000)~1000', "start: ()~999999999"])
def test_a_lark_grammar_that_never_ends_or_runs_too_long_is_named(grammar: str) -> None:
    with pytest.raises(ValueError, match=r"do not end|too long"):
        text_for_lark(grammar, random.Random(0).randrange)


# -- the spec's spelling ----------------------------------------------------------------------
def test_under_the_spec_profile_openai_items_are_extension_items() -> None:
    reply = plan(request([WEB, MCP], text="Search deepwiki"))
    events = events_of(reply, openai_items=False)
    report = check_stream(events)  # the Open Responses rules and the official schema
    assert report.ok, [str(v) for v in report.violations]
    output = report.response["output"]  # type: ignore[index]
    assert [i["type"] for i in output[:3]] == ["openai:web_search_call", "openai:mcp_list_tools",
                                               "openai:mcp_approval_request"]
    assert not any(e["type"] in TOOL_EVENTS for e in events)


# -- the checker's rules ----------------------------------------------------------------------
def stream_of(*items: ToolCallPlan) -> list[Json]:
    return events_of(ReplyPlan(items=list(items)))


CALLS = [
    ToolCallPlan("custom_tool_call", {"name": "note", "input": "buy milk today"}),
    ToolCallPlan("code_interpreter_call", {"code": "print(1 + 1)", "container_id": "c",
                                           "outputs": None}),
    ToolCallPlan("mcp_call", {"server_label": "s", "name": "n", "arguments": '{"a": 1}'}),
    ToolCallPlan("shell_call", {"action": {"commands": ["ls -la", "pwd"]}}),
]


def test_every_kind_streams_a_valid_stream_under_the_strict_rules() -> None:
    plans = [ToolCallPlan(kind, fields) for kind, fields in (
        ("web_search_call", {"action": {"type": "search", "query": "q"}}),
        ("file_search_call", {"queries": ["q"], "results": None}),
        ("image_generation_call", {"result": "iVBO"}),
        ("mcp_list_tools", {"server_label": "s", "tools": []}),
        ("mcp_approval_request", {"server_label": "s", "name": "n", "arguments": "{}"}),
        ("computer_call", {"action": {"type": "screenshot"}, "pending_safety_checks": []}),
        ("local_shell_call", {"action": {"type": "exec", "command": ["ls"], "env": {}}}),
        ("apply_patch_call", {"operation": {"type": "delete_file", "path": "a"}}),
        ("tool_search_call", {"arguments": {}, "execution": "client"}),
        ("tool_search_output", {"tools": [], "execution": "server", "call_id": None}),
    )]
    assert {p.type for p in [*plans, *CALLS]} == set(KINDS)
    report = check_stream(stream_of(*plans, *CALLS), profile=STRICT)
    assert report.ok, [str(v) for v in report.violations]


@pytest.mark.parametrize("index", range(len(CALLS)))
def test_a_delta_lost_is_a_done_mismatch(index: int) -> None:
    events = stream_of(CALLS[index])
    delta = next(e for e in events if e["type"].endswith(".delta"))
    events.remove(delta)
    for number, event in enumerate(events):
        event["sequence_number"] = number
    assert "done-mismatch" in check_stream(events, profile=STRICT).rules


def test_a_tool_event_after_its_completed_step_is_out_of_order() -> None:
    events = stream_of(ToolCallPlan("web_search_call", {"action": {"type": "search"}}))
    searching = copy.deepcopy(next(e for e in events if e["type"].endswith(".searching")))
    at = next(n for n, e in enumerate(events) if e["type"].endswith(".completed")
              and "item_id" in e)
    events.insert(at + 1, searching)
    for number, event in enumerate(events):
        event["sequence_number"] = number
    assert "order" in check_stream(events, profile=STRICT).rules


def test_an_event_about_another_items_type_and_a_missing_field_are_named() -> None:
    events = stream_of(ToolCallPlan("web_search_call", {"action": {"type": "search"}}))
    for event in events:
        if event["type"] == "response.web_search_call.searching":
            event["type"] = "response.file_search_call.searching"
    assert "index-mismatch" in check_stream(events, profile=STRICT).rules
    bare = stream_of(ToolCallPlan("computer_call", {}))
    report = check_stream(bare, profile=STRICT)
    assert any(v.rule == "schema" and "pending_safety_checks" in v.message
               for v in report.violations)
    # real providers' streams leave fields out: read leniently under the openai profile
    assert check_stream(bare, profile="openai").ok


def test_spelling_keeps_a_plan_without_tool_items_and_respells_each_one_it_holds() -> None:
    # a plan with no tool item comes back as it is, under either spelling; one with tool
    # items has each of them, and only them, spelled as the extension item
    prose = ReplyPlan(items=[MessagePlan(parts=())])
    assert spelled(prose, False) is prose
    assert spelled(prose, True) is prose
    call = ToolCallPlan(type="web_search_call")
    mixed = ReplyPlan(items=[MessagePlan(parts=()), call])
    assert spelled(mixed, True) is mixed
    respelled = spelled(mixed, False)
    assert respelled.items == [MessagePlan(parts=()),
                               ToolCallPlan(type="web_search_call", vendor="openai")]
    assert mixed.items[1] is call  # the plan it was given is left as it was
