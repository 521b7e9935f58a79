"""Faults that end a stream early but validly: ``fail_midstream`` and ``incomplete``.

Both rewrite the events (the JSON body is their fold, so a JSON answer changes the same way) and
keep the sequence numbers consecutive. Neither breaks a protocol rule: failing mid-stream and
stopping at the token limit are things a provider may do.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from ormock.faults.base import Fault, Param, register
from ormock.faults.strikes import Strike
from ormock.protocol import events as ev
from ormock.protocol.errors import ERROR_STATUS, OpenResponsesError
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.response import usage_object
from ormock.protocol.tokens import count_tokens
from ormock.protocol.types import Json

__all__ = ["FailMidstream", "Incomplete", "body_end", "last_snapshot", "renumbered"]

# a text .done event -> the field holding the whole text
_TEXT_DONE = {ev.TEXT_DONE: "text", ev.REFUSAL_DONE: "refusal", ev.REASONING_DONE: "text",
              ev.SUMMARY_DONE: "text"}
_PART_DONE = frozenset({ev.PART_DONE, ev.SUMMARY_PART_DONE})
_PART_ADDED = frozenset({ev.PART_ADDED, ev.SUMMARY_PART_ADDED})


def body_end(events: list[Json]) -> int:
    """The index of the first ``error`` or terminal event (the end of the stream's body)."""
    ends = {ev.ERROR, *ev.TERMINAL_EVENTS}
    return next((i for i, e in enumerate(events) if e.get("type") in ends), len(events))


def last_snapshot(events: list[Json]) -> Json:
    """The last Response snapshot the events carry (``ValueError`` when there is none; compare
    ``ormock.engine.entry_answer.final_response``, which answers None)."""
    for event in reversed(events):
        if isinstance(event.get("response"), dict):
            response: Json = event["response"]
            return response
    raise ValueError("the reply carries no Response snapshot")


def renumbered(events: list[Json]) -> list[Json]:
    """The events numbered consecutively from the first one's number (copies where changed)."""
    start = events[0].get("sequence_number", 0) if events else 0
    start = start if isinstance(start, int) else 0
    return [e if e.get("sequence_number") == start + i else {**e, "sequence_number": start + i}
            for i, e in enumerate(events)]


def _in_progress_end(events: list[Json]) -> int:
    """The index just after ``response.in_progress`` (2 in a plain stream)."""
    return next((i + 1 for i, e in enumerate(events) if e.get("type") == ev.IN_PROGRESS), 2)


@register
@dataclass(frozen=True, kw_only=True)
class FailMidstream(Fault):
    """The stream fails after N events: an ``error`` event, then ``response.failed``.

    The error event has the nested shape ``{"type": "error", "error": {type, code, message,
    param}}``; ``response.failed`` carries status ``failed``, ``error: {code, message}`` and
    the items completed so far. ``after_events``: how many events go out first (default: half
    the stream; never before ``response.in_progress``). ``type``, ``code``, ``message``,
    ``param``: the error's fields. A JSON request gets what a provider answers when the model
    fails before the body: HTTP 500 (the status of ``type``) with the error envelope.
    """

    name = "fail_midstream"
    main = "after_events"
    params = {
        "after_events": Param("integer", "events sent before the failure (default: half)",
                               minimum=0, nullable=True),
        "type": Param("string", "the error type"),
        "code": Param("string", "the error code"),
        "message": Param("string", "the error message"),
        "param": Param("string", "the request parameter at fault", nullable=True),
    }

    after_events: int | None = None
    type: str = "server_error"
    code: str = "server_error"
    message: str = "The model failed while generating the response (ormock fail_midstream fault)."
    param: str | None = None

    def apply(self, reply: Reply, rng: random.Random) -> Reply | RawReply:
        if not reply.stream:
            param = self.param if self.param is not None else reply.provider.error_param
            failure = OpenResponsesError(self.message, type=self.type, param=param,
                                         code=self.code, status=ERROR_STATUS.get(self.type, 500))
            return RawReply(failure.status, failure.body(), dict(reply.headers))
        events = reply.events
        end = body_end(events)
        wanted = self.after_events if self.after_events is not None else end // 2
        cut = max(_in_progress_end(events), min(wanted, end))
        kept = events[:cut]
        done = [e["item"] for e in kept if e.get("type") == ev.ITEM_DONE]
        response = {**last_snapshot(events), "status": "failed", "output": done,
                    "error": {"code": self.code, "message": self.message}, "usage": None,
                    "completed_at": None, "incomplete_details": None}
        error: Json = {"type": self.type, "code": self.code, "message": self.message,
                       "param": self.param}
        tail: list[Json] = [
            {"type": ev.ERROR, "sequence_number": 0, "error": error},
            {"type": ev.FAILED, "sequence_number": 0, "response": response},
        ]
        return replace(reply, events=renumbered([*kept, *tail]), frames=None)


@register
@dataclass(frozen=True, kw_only=True)
class Incomplete(Fault):
    """The response stops at the token limit or a content filter: ``response.incomplete``.

    The item at ``item`` (an output index; negative counts from the end, default the last)
    ends with status ``incomplete``, cut after ``deltas`` of its deltas (default: at its end;
    later parts are dropped, the open one closed with the text so far); the items after it are
    dropped; ``incomplete_details.reason`` is ``reason``; usage is counted again. Valid under
    the protocol, and the JSON body is its fold, so JSON requests get it too.
    """

    name = "incomplete"
    main = "reason"
    params = {
        "reason": Param("string", "incomplete_details.reason",
                        choices=("max_output_tokens", "content_filter")),
        "item": Param("integer", "the output index of the item cut (negative: from the end)"),
        "deltas": Param("integer", "deltas of that item kept (default: all)", minimum=0,
                        nullable=True),
    }

    reason: str = "max_output_tokens"
    item: int = -1
    deltas: int | None = None

    def struck(self, before: Reply | RawReply, after: Reply | RawReply) -> Strike:
        """Where the answer was cut, and why (``Fault.struck`` says where)."""
        return replace(super().struck(before, after), what=f"cut short ({self.reason})")

    def apply(self, reply: Reply, rng: random.Random) -> Reply:
        events = reply.events
        body = events[: body_end(events)]
        added = [e.get("output_index") for e in body if e.get("type") == ev.ITEM_ADDED]
        target = None
        if added:
            index = self.item if self.item >= 0 else len(added) + self.item
            target = added[max(0, min(index, len(added) - 1))]
        out = _cut_item(body, target, self.deltas)
        items = [e["item"] for e in out if e.get("type") == ev.ITEM_DONE]
        final = last_snapshot(events)
        response = {**final, "status": "incomplete", "output": items, "completed_at": None,
                    "incomplete_details": {"reason": self.reason}, "error": None,
                    "usage": _usage(final.get("usage"), items)}
        terminal = {"type": ev.INCOMPLETE, "sequence_number": 0, "response": response}
        return replace(reply, events=renumbered([*out, terminal]), frames=None)


def _part_key(event: Json) -> tuple[str, Any]:
    if "summary_index" in event:
        return "summary", event["summary_index"]
    return "content", event.get("content_index")


def _cut_item(body: list[Json], target: Any, deltas: int | None) -> list[Json]:
    """``body`` with the items after ``target`` dropped and ``target`` ended ``incomplete``
    after ``deltas`` of its deltas (``None``: at its end)."""
    if target is None:
        return list(body)
    mine = [i for i, e in enumerate(body) if e.get("output_index") == target]
    delta_at = [i for i in mine if body[i].get("type") in ev.DELTAS]
    cut = len(body)
    if deltas is not None and deltas < len(delta_at):
        cut = delta_at[deltas] - 1 if deltas == 0 else delta_at[deltas - 1]
    text: dict[tuple[str, Any], str] = {}
    notes: dict[tuple[str, Any], list[Any]] = {}
    closed: set[tuple[str, Any]] = set()
    dropped: set[tuple[str, Any]] = set()
    arguments = ""
    out: list[Json] = []
    for i, event in enumerate(body):
        index, type_ = event.get("output_index"), event.get("type")
        if not isinstance(index, int) or isinstance(index, bool) or index < target:
            out.append(event)
            continue
        if index > target:
            continue
        key = _part_key(event)
        if i <= cut:
            if type_ == ev.ARGS_DELTA:
                arguments += str(event.get("delta", ""))
            elif type_ in ev.DELTAS:
                text[key] = text.get(key, "") + str(event.get("delta", ""))
            elif type_ == ev.ANNOTATION_ADDED:
                notes.setdefault(key, []).append(event.get("annotation"))
            elif type_ in _PART_DONE:
                closed.add(key)
            if type_ == ev.ITEM_DONE:
                event = {**event, "item": {**event["item"], "status": "incomplete"}}
            out.append(event)
            continue
        if type_ in _PART_ADDED:
            dropped.add(key)
        if key in dropped or type_ in ev.DELTAS or type_ == ev.ANNOTATION_ADDED:
            continue
        if type_ in _TEXT_DONE:
            event = {**event, _TEXT_DONE[type_]: text.get(key, "")}
        elif type_ in _PART_DONE:
            event = {**event, "part": _cut_part(event.get("part"), text.get(key, ""),
                                                notes.get(key, []))}
        elif type_ == ev.ARGS_DONE:
            event = {**event, "arguments": arguments}
        elif type_ == ev.ITEM_DONE:
            event = {**event, "item": _cut_final(event["item"], text, notes, closed, dropped,
                                                 arguments)}
        out.append(event)
    return out


def _cut_part(part: Any, text: str, notes: list[Any]) -> Any:
    if not isinstance(part, dict):
        return part
    cut = {**part, ev.PART_TEXT_FIELD.get(str(part.get("type")), "text"): text}
    if part.get("type") == "output_text":
        cut["annotations"] = list(notes)
    return cut


def _cut_final(
    item: Json,
    text: dict[tuple[str, Any], str],
    notes: dict[tuple[str, Any], list[Any]],
    closed: set[tuple[str, Any]],
    dropped: set[tuple[str, Any]],
    arguments: str,
) -> Json:
    final = {**item, "status": "incomplete"}
    for name in ("content", "summary"):
        parts = item.get(name)
        if not isinstance(parts, list):
            continue
        final[name] = [
            part if (name, i) in closed else _cut_part(part, text.get((name, i), ""),
                                                       notes.get((name, i), []))
            for i, part in enumerate(parts)
            if (name, i) not in dropped
        ]
    if item.get("type") == "function_call":
        final["arguments"] = arguments
    return final


def _usage(usage: Any, items: list[Json]) -> Any:
    """Usage counted again for what is left (as the stream builder counts it)."""
    if not isinstance(usage, dict):
        return usage
    output = reasoning = 0
    for item in items:
        if item.get("type") == "function_call":
            output += count_tokens(str(item.get("arguments", "")))
            continue
        for name in ("content", "summary"):
            for part in item.get(name) or []:
                if not isinstance(part, dict):
                    continue
                tokens = count_tokens(str(part.get(ev.PART_TEXT_FIELD.get(
                    str(part.get("type")), "text"), "")))
                output += tokens
                if item.get("type") == "reasoning":
                    reasoning += tokens
    return usage_object(int(usage.get("input_tokens") or 0), output, reasoning)
