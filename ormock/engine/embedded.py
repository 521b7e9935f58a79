"""The embedded default reply: what ``ormock serve`` answers when nothing else was scripted.

Deterministic (the prose is drawn from Faker's word list by SHAKE-128 of the content seed, the
server seed and the request; tool arguments and schema values from a Faker seeded with it; so a
repeated request gets the same content), and shaped like a model would answer: function calls
when tools are offered and allowed and no tool output has come back yet, arguments valid against
each tool's schema; a final message that uses the tool outputs once they arrive; JSON when
``text.format`` asks for it; a reasoning item when ``reasoning`` is on; ``incomplete`` when the
answer does not fit ``max_output_tokens``.
"""

from __future__ import annotations

import json
import re

from faker import Faker

from ormock.engine.schema_values import value_for
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


def _callable_tools(request: ResponseRequest) -> tuple[list[Json], bool]:
    """The function tools the model may call, and whether it must call one (what
    ``request.tool_demand`` allows of them)."""
    demand = request.tool_demand
    tools = [t for t in demand.allowed if t.get("type") == "function"]
    return tools, demand.must_call and bool(tools)


def _tools_to_call(request: ResponseRequest, tools: list[Json], text: str) -> list[Json]:
    lowered = text.lower()
    mentioned = [
        t for t in tools
        if t["name"].lower() in lowered or t["name"].replace("_", " ").lower() in lowered
    ]
    parallel = request.echo.get("parallel_tool_calls", True)
    forced = request.tool_demand.forced is not None
    if parallel and not forced and len(mentioned) > 1:
        chosen = mentioned
    elif parallel and not forced and len(tools) > 1 and _PARALLEL_WORDS.search(text):
        chosen = tools
    else:
        chosen = [mentioned[0] if mentioned else tools[0]]
    limit = request.echo.get("max_tool_calls")
    return chosen[:limit] if limit else chosen


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
        return json.dumps(value_for(schema, faker), ensure_ascii=False), None
    if fmt.get("type") == "json_object":
        return json.dumps({"answer": prose.sentence()}, ensure_ascii=False), None
    if start >= len(context):  # nothing after the user's message: no tool output
        return prose.cut_paragraph(3)
    names = {i.get("call_id"): i.get("name") for i in context if i.get("type") == "function_call"}
    results = [
        f"{names.get(i.get('call_id'), 'the tool')} returned {item_text(i)[:200]}"
        for i in context[start:]
        if i.get("type") == "function_call_output"
    ]
    if results:
        return "Here is what I found: " + "; ".join(results) + ". " + prose.sentence(), None
    return prose.cut_paragraph(3)


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
    tools, must_call = _callable_tools(request)
    # read only when tools are offered: what the user asked, whether a tool output came back
    last_text = item_text(context[start]) if tools and start >= 0 else ""
    answered = bool(tools) and any(i.get("type") == "function_call_output"
                                   for i in context[start + 1:])
    if (tools and (must_call or not answered)) or \
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
    if tools and (must_call or not answered):
        hints = _hints(last_text)
        for tool in _tools_to_call(request, tools, last_text):
            arguments = value_for(tool.get("parameters") or {"type": "object"}, faker, hints=hints)
            items.append(FunctionCallPlan(name=tool["name"], arguments=json.dumps(arguments)))
        return ReplyPlan(items=items)
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
