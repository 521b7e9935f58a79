"""The embedded default reply: what ``ormock serve`` answers when nothing else was scripted.

Deterministic (the prose is drawn from Faker's word list by SHAKE-128 of the content seed, the
server seed and the request; tool arguments and schema values from a Faker seeded with it; so a
repeated request gets the same content), and shaped like a model would answer: function calls
when tools are offered and allowed and no tool output has come back yet, arguments valid against
each tool's schema; the call of any other tool type when ``tool_choice`` requires it, forces it
or the user's words ask for it (``ormock.engine.tool_calls``: a hosted tool's call answered with
a message in the same response, a client-run tool's call left for its output); a final message
that uses the tool outputs once they arrive; JSON when
``text.format`` asks for it; a reasoning item when ``reasoning`` is on; ``incomplete`` when the
answer does not fit ``max_output_tokens``.
"""

from __future__ import annotations

import json
import re

from faker import Faker

from ormock.engine.schema_values import value_for
from ormock.engine.tool_calls import (
    ANSWERS,
    Asked,
    Choice,
    answer_approvals,
    computer_done,
    family,
    mentioned,
    plan_call,
    resolve_choice,
)
from ormock.protocol.frozen import made
from ormock.protocol.plan import (
    FunctionCallPlan,
    ItemPlan,
    MessagePlan,
    ReasoningPlan,
    ReplyPlan,
    TextPart,
)
from ormock.protocol.request import ResponseRequest, item_text
from ormock.protocol.tokens import count_tokens, split_tokens
from ormock.protocol.types import Json
from ormock.scenario.generated_text import Prose

__all__ = ["default_plan"]


_PLACE = re.compile(r"\b(?:in|at|for|from|to|near)\s+([A-Z][\w'-]*(?:,?\s+[A-Z][\w'-]*){0,3})")
_PLACE_KEYS = ("location", "city", "place", "destination", "address", "region")
_PARALLEL_WORDS = re.compile(r"\b(each|every|all|both|parallel)\b", re.IGNORECASE)


# the echoed fields besides the tools that change what the default answers
_SHAPING = frozenset(("text", "reasoning", "max_output_tokens"))


def _is_user_message(item: Json) -> bool:
    return item.get("type") == "message" and item.get("role") == "user"


def _last_user_index(context: list[Json]) -> int:
    for index in range(len(context) - 1, -1, -1):
        item = context[index]
        if item.get("type") == "message" and item.get("role") == "user":
            return index
    return -1


def _tools_to_call(request: ResponseRequest, choice: Choice, text: str,
                   after: list[Json]) -> list[Json]:
    """The tools called: those the user's words name (one unless calls may run in parallel),
    every function tool when the words ask for them all, else the computer whose screenshot
    just came back (its task goes on), else the first function or custom tool, else (a call
    being required) the first tool; none when nothing calls for one."""
    tools = choice.tools
    named = [t for t in tools if mentioned(t, text)]
    functions = [t for t in tools if t.get("type") == "function"]
    parallel = request.echo.get("parallel_tool_calls", True) and not choice.forced
    if parallel and len(named) > 1:
        chosen = named
    elif parallel and len(functions) > 1 and _PARALLEL_WORDS.search(text):
        chosen = functions
    elif named:
        chosen = named[:1]
    else:
        screens = any(i.get("type") == "computer_call_output" for i in after)
        going = [t for t in tools if screens and family(t.get("type")) == "computer"]
        own = [t for t in tools if t.get("type") in ("function", "custom")]
        chosen = going[:1] or own[:1] or (tools[:1] if choice.must else [])
    limit = request.echo.get("max_tool_calls")
    return chosen[:limit] if limit else chosen


def _calls(request: ResponseRequest, choice: Choice, asked: Asked, faker: Faker
           ) -> list[ItemPlan]:
    """The calls of the tools called, and, when every one was a tool the provider runs, the
    message saying what they found (their citations placed within it)."""
    items: list[ItemPlan] = []
    said: list[str] = []
    citations: list[Json] = []
    waits = False  # a call the client answers (or approves) before the model goes on
    hints = _hints(asked.text)
    for tool in _tools_to_call(request, choice, asked.text, asked.after):
        if tool.get("type") == "function":
            arguments = value_for(tool.get("parameters") or {"type": "object"}, faker, hints=hints)
            items.append(FunctionCallPlan(name=tool["name"], arguments=json.dumps(arguments),
                                          namespace=tool.get("namespace")))
            waits = True
            continue
        planned = plan_call(tool, asked)
        if planned is None:
            continue
        items += planned.items
        if planned.said is None:
            waits = True
            continue
        _join(said, citations, planned.said, planned.citations)
    if items and said and not waits:
        items.append(MessagePlan(parts=(TextPart(" ".join(said), tuple(citations)),)))
    return items


def _join(said: list[str], citations: list[Json], text: str, notes: list[Json]) -> None:
    """One more sentence of the message, its citations moved to where it lands."""
    offset = sum(len(s) + 1 for s in said)
    said.append(text)
    citations += [{**n, "start_index": n["start_index"] + offset,
                   "end_index": n["end_index"] + offset} for n in notes]


def _hints(text: str) -> Json:
    match = _PLACE.search(text)
    return {key: match.group(1) for key in _PLACE_KEYS} if match else {}


def _answer_text(
    request: ResponseRequest, context: list[Json], start: int, faker: Faker, prose: Prose
) -> tuple[str, tuple[list[str], int] | None]:
    """The final message's text, and its cut when the prose knows it (``TextPart.cut``)."""
    fmt = request.echo.get("text", {}).get("format", {})
    if fmt.get("type") == "json_schema":
        schema = request.body["text"]["format"]["schema"]
        return json.dumps(value_for(schema, faker, param="text.format.schema"),
                          ensure_ascii=False), None
    if fmt.get("type") == "json_object":
        return json.dumps({"answer": prose.sentence()}, ensure_ascii=False), None
    if start >= len(context):  # nothing after the user's message: no tool output
        return prose.cut_paragraph(3)
    names = {i.get("call_id"): i.get("name") or i.get("type") for i in context
             if "call_id" in i and i.get("type") not in _OUTPUTS}
    results = [
        f"{names.get(i.get('call_id'), 'the tool')} returned {_output_text(i)[:200]}"
        for i in context[start:]
        if i.get("type") in _OUTPUTS
    ]
    if results:
        return "Here is what I found: " + "; ".join(results) + ". " + prose.sentence(), None
    return prose.cut_paragraph(3)


_OUTPUTS = ANSWERS - {"mcp_approval_response"}


def _output_text(item: Json) -> str:
    output = item.get("output")
    return output if isinstance(output, str) else json.dumps(output)


def default_plan(
    request: ResponseRequest, context: list[Json], faker: Faker, seed: int
) -> ReplyPlan:
    """Plan the embedded default reply for ``request`` given its whole ``context``."""
    content = request.content_seed(seed)
    prose = Prose(content)
    if not request.offered_tools and _SHAPING.isdisjoint(request.echo) and (
            not context or _is_user_message(context[-1])):
        # nearly every request: no tools, no format, reasoning or budget, nothing after the
        # user's message: prose, what the steps below come to for it without their checks
        text, cut = prose.cut_paragraph(3)
        return ReplyPlan(items=[made(MessagePlan, parts=(
            made(TextPart, text=text, annotations=(), cut=cut),), role="assistant", phase=None,
            id=None)])
    start = _last_user_index(context)
    choice = resolve_choice(request)
    tools, must_call = choice.tools, choice.must
    # read only when tools are offered: what the user asked, whether a tool output came back
    last_text = item_text(context[start]) if tools and start >= 0 else ""
    after = context[start + 1:] if tools else []
    asked = Asked(request, last_text, after, context, prose, faker, choice.mcp_tool)
    answered = bool(tools) and (
        any(i.get("type") in ANSWERS and i.get("type") != "computer_call_output" for i in after)
        or computer_done(asked))
    if tools or \
            request.echo.get("text", {}).get("format", {}).get("type") == "json_schema":
        faker.seed_instance(content)  # only tool arguments and schema values draw from it
    items: list[ItemPlan] = []
    reasoning = request.echo.get("reasoning")
    budget = request.echo.get("max_output_tokens")
    used = 0
    if reasoning and reasoning.get("effort") != "none":
        summary = prose.sentence()
        items.append(ReasoningPlan(summary=(summary,)))
        used += count_tokens(summary)
    approvals = answer_approvals(asked) if tools else None
    if approvals is not None:  # the client approved (or refused) an MCP server's call
        assert approvals.said is not None
        return ReplyPlan(items=[*items, *approvals.items, MessagePlan(parts=(TextPart(
            approvals.said),))])
    if tools and (must_call or not answered):
        calls = _calls(request, choice, asked, faker)
        if calls:
            return ReplyPlan(items=[*items, *calls])
    text, cut = _answer_text(request, context, start + 1, faker, prose)
    if budget is not None and used + (count_tokens(text) if cut is None else cut[1]) > budget:
        text = "".join(split_tokens(text)[: max(budget - used, 0)])
        items.append(MessagePlan(parts=(TextPart(text),)))
        return ReplyPlan(items=items, status="incomplete", incomplete_reason="max_output_tokens")
    # made without the frozen dataclasses' __init__ (ormock.protocol.frozen): every new
    # request to the embedded default plans one
    items.append(made(MessagePlan, parts=(made(TextPart, text=text, annotations=(), cut=cut),),
                      role="assistant", phase=None, id=None))
    return ReplyPlan(items=items)
