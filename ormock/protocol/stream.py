"""The stream builder: a reply plan becomes the exact list of events a provider would send."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ormock.protocol import events as ev
from ormock.protocol.ids import IdFactory
from ormock.protocol.items import (
    function_call_item,
    message_item,
    output_text_part,
    reasoning_item,
    reasoning_text_part,
    refusal_part,
    summary_text_part,
    vendor_item,
)
from ormock.protocol.plan import (
    FunctionCallPlan,
    ItemPlan,
    MessagePlan,
    ReasoningPlan,
    RefusalPart,
    ReplyPlan,
    TextPart,
    ToolCallPlan,
)
from ormock.protocol.response import usage_object
from ormock.protocol.sse import delta_frames
from ormock.protocol.tokens import Chunker, chunker, count_tokens
from ormock.protocol.tools import tool_call_events
from ormock.protocol.types import Json

__all__ = ["build_events", "build_final", "build_frames"]


class _Emitter:
    """Collects the events of a stream, numbered in order."""

    def __init__(self) -> None:
        self.events: list[Json] = []

    def emit(self, type_: str, **fields: Any) -> None:
        self.events.append({"type": type_, "sequence_number": len(self.events), **fields})

    def text_deltas(self, item_id: str, index: int, content_index: int,
                    pieces: list[str]) -> None:
        events = self.events  # the deltas, most of a stream's events, each dict written here
        for piece in pieces:
            events.append({"type": ev.TEXT_DELTA, "sequence_number": len(events),
                           "item_id": item_id, "output_index": index,
                           "content_index": content_index, "delta": piece, "logprobs": []})

    def argument_deltas(self, item_id: str, index: int, pieces: list[str]) -> None:
        events = self.events
        for piece in pieces:
            events.append({"type": ev.ARGS_DELTA, "sequence_number": len(events),
                           "item_id": item_id, "output_index": index, "delta": piece})


class _Types(_Emitter):
    """The same walk keeping only each event's type: what a non-streamed reply needs besides
    its terminal snapshot (the journal records the types; the numbers are their positions)."""

    def __init__(self) -> None:
        super().__init__()
        self.types: list[str] = []

    def emit(self, type_: str, **fields: Any) -> None:
        self.types.append(type_)

    def text_deltas(self, item_id: str, index: int, content_index: int,
                    pieces: list[str]) -> None:
        self.types += [ev.TEXT_DELTA] * len(pieces)

    def argument_deltas(self, item_id: str, index: int, pieces: list[str]) -> None:
        self.types += [ev.ARGS_DELTA] * len(pieces)


class _Frames(_Emitter):
    """The same walk framing the deltas at once (``delta_frames``: no dict per delta) and
    keeping every other event's dict, in order, for ``Framed`` to frame when the reply is
    finished (its terminal snapshot may still change); and every event's type. ``names``:
    the wire name of an event type a profile renames."""

    def __init__(self, names: Mapping[str, str]) -> None:
        super().__init__()
        self.parts: list[Json | bytes] = []
        self.types: list[str] = []
        self.names = names

    def emit(self, type_: str, **fields: Any) -> None:
        self.parts.append({"type": type_, "sequence_number": len(self.types), **fields})
        self.types.append(type_)

    def text_deltas(self, item_id: str, index: int, content_index: int,
                    pieces: list[str]) -> None:
        self._deltas(ev.TEXT_DELTA, item_id, index, content_index, pieces)

    def argument_deltas(self, item_id: str, index: int, pieces: list[str]) -> None:
        self._deltas(ev.ARGS_DELTA, item_id, index, None, pieces)

    def _deltas(self, kind: str, item_id: str, index: int, content_index: int | None,
                pieces: list[str]) -> None:
        self.parts += delta_frames(self.names.get(kind, kind), len(self.types), item_id, index,
                                   content_index, pieces)
        self.types += [kind] * len(pieces)


def build_events(
    plan: ReplyPlan,
    response: Json,
    ids: IdFactory,
    *,
    input_tokens: int = 0,
    completed_at: int | None = None,
) -> list[Json]:
    """Build the events for ``plan``; ``response`` is the snapshot from ``new_response``.

    The last event is the terminal one, whose response is the final Response object.
    """
    out = _Emitter()
    _build(out, plan, response, ids, input_tokens, completed_at)
    return out.events


def build_final(
    plan: ReplyPlan,
    response: Json,
    ids: IdFactory,
    *,
    input_tokens: int = 0,
    completed_at: int | None = None,
) -> tuple[Json, list[str]]:
    """What ``build_events`` gives a non-streamed reply, without making an event: the terminal
    snapshot (the same object, the same ids drawn in the same order) and the type of every
    event, in order (event ``n`` has ``sequence_number`` ``n``)."""
    out = _Types()
    return _build(out, plan, response, ids, input_tokens, completed_at), out.types


def build_frames(
    plan: ReplyPlan,
    response: Json,
    ids: IdFactory,
    *,
    input_tokens: int = 0,
    completed_at: int | None = None,
    names: Mapping[str, str] | None = None,
) -> tuple[list[Json | bytes], Json, list[str]]:
    """What ``build_events`` gives a stream, its deltas framed already: each event in order,
    a delta as its frame (under its ``names`` wire name), any other event as its dict (the
    same ids drawn in the same order); the terminal snapshot; the type of every event."""
    out = _Frames(names or {})
    final = _build(out, plan, response, ids, input_tokens, completed_at)
    return out.parts, final, out.types


def _build(out: _Emitter, plan: ReplyPlan, response: Json, ids: IdFactory, input_tokens: int,
           completed_at: int | None) -> Json:
    """Emit ``plan``'s events into ``out``; the terminal snapshot."""
    chunk = chunker(plan.chunking)
    first_status = "queued" if plan.queued else "in_progress"
    out.emit(ev.CREATED, response={**response, "status": first_status})
    if plan.queued:
        out.emit(ev.QUEUED, response={**response, "status": "queued"})
    out.emit(ev.IN_PROGRESS, response={**response, "status": "in_progress"})

    final_items: list[Json] = []
    output_tokens = reasoning_tokens = 0
    last = len(plan.items) - 1
    for index, item in enumerate(plan.items):
        status = "incomplete" if plan.status == "incomplete" and index == last else "completed"
        done, tokens, reasoning = _item_events(out, item, index, status, ids, chunk)
        final_items.append(done)
        output_tokens += tokens
        reasoning_tokens += reasoning

    final = {**response, "status": plan.status, "output": final_items}
    if plan.usage == "auto":
        final["usage"] = usage_object(input_tokens, output_tokens, reasoning_tokens)
    else:
        final["usage"] = plan.usage
    if plan.status == "completed":
        final["completed_at"] = completed_at if completed_at is not None else response["created_at"]
    elif plan.status == "incomplete":
        final["incomplete_details"] = {"reason": plan.incomplete_reason or "max_output_tokens"}
    else:
        error = plan.error or {}
        code = str(error.get("code") or "server_error")
        message = str(error.get("message") or "The model failed to produce a response.")
        out.emit(
            ev.ERROR,
            error={
                "type": str(error.get("type") or "server_error"),
                "code": code,
                "message": message,
                "param": error.get("param"),
            },
        )
        final["error"] = {"code": code, "message": message}
    terminal = {"completed": ev.COMPLETED, "incomplete": ev.INCOMPLETE, "failed": ev.FAILED}
    out.emit(terminal[plan.status], response=final)
    return final


def _item_events(
    out: _Emitter, item: ItemPlan, index: int, status: str, ids: IdFactory, chunk: Chunker
) -> tuple[Json, int, int]:
    """Emit one item's events; return its final form, its output tokens and reasoning tokens."""
    if isinstance(item, MessagePlan):
        return _message(out, item, index, status, ids, chunk)
    if isinstance(item, FunctionCallPlan):
        item_id = item.id or ids.new("fc")
        call_id = item.call_id or ids.new("call")
        out.emit(
            ev.ITEM_ADDED,
            output_index=index,
            item=function_call_item(item_id, "in_progress", call_id, item.name, "",
                                    item.namespace),
        )
        out.argument_deltas(item_id, index, chunk(item.arguments))
        out.emit(ev.ARGS_DONE, item_id=item_id, output_index=index, arguments=item.arguments)
        done = function_call_item(item_id, status, call_id, item.name, item.arguments,
                                  item.namespace)
        out.emit(ev.ITEM_DONE, output_index=index, item=done)
        return done, count_tokens(item.arguments), 0
    if isinstance(item, ReasoningPlan):
        return _reasoning(out, item, index, status, ids, chunk)
    if isinstance(item, ToolCallPlan):
        done, tokens = tool_call_events(out, item, index, status, ids, chunk)
        return done, tokens, 0
    item_id = item.id or ids.new("item")
    out.emit(ev.ITEM_ADDED, output_index=index, item=vendor_item(item.type, item_id, "in_progress"))
    done = vendor_item(item.type, item_id, status, item.fields)
    out.emit(ev.ITEM_DONE, output_index=index, item=done)
    return done, 0, 0


def _message(
    out: _Emitter, item: MessagePlan, index: int, status: str, ids: IdFactory, chunk: Chunker
) -> tuple[Json, int, int]:
    item_id = item.id or ids.new("msg")
    where = {"item_id": item_id, "output_index": index}
    out.emit(
        ev.ITEM_ADDED,
        output_index=index,
        item=message_item(item_id, "in_progress", [], item.role, item.phase),
    )
    parts: list[Json] = []
    tokens = 0
    for content_index, part in enumerate(item.parts):
        at = {**where, "content_index": content_index}
        if isinstance(part, TextPart):
            out.emit(ev.PART_ADDED, **at, part=output_text_part())
            out.text_deltas(item_id, index, content_index, chunk(part.text))
            for annotation_index, annotation in enumerate(part.annotations):
                out.emit(
                    ev.ANNOTATION_ADDED,
                    **at,
                    annotation_index=annotation_index,
                    annotation=dict(annotation),
                )
            out.emit(ev.TEXT_DONE, **at, text=part.text, logprobs=[])
            final = output_text_part(part.text, [dict(a) for a in part.annotations])
            tokens += count_tokens(part.text)
        else:
            assert isinstance(part, RefusalPart)
            out.emit(ev.PART_ADDED, **at, part=refusal_part())
            for piece in chunk(part.refusal):
                out.emit(ev.REFUSAL_DELTA, **at, delta=piece)
            out.emit(ev.REFUSAL_DONE, **at, refusal=part.refusal)
            final = refusal_part(part.refusal)
            tokens += count_tokens(part.refusal)
        out.emit(ev.PART_DONE, **at, part=final)
        parts.append(final)
    done = message_item(item_id, status, parts, item.role, item.phase)
    out.emit(ev.ITEM_DONE, output_index=index, item=done)
    return done, tokens, 0


def _reasoning(
    out: _Emitter, item: ReasoningPlan, index: int, status: str, ids: IdFactory, chunk: Chunker
) -> tuple[Json, int, int]:
    item_id = item.id or ids.new("rs")
    where = {"item_id": item_id, "output_index": index}
    out.emit(ev.ITEM_ADDED, output_index=index, item=reasoning_item(item_id, "in_progress", []))
    summary: list[Json] = []
    tokens = 0
    for summary_index, text in enumerate(item.summary):
        at = {**where, "summary_index": summary_index}
        out.emit(ev.SUMMARY_PART_ADDED, **at, part=summary_text_part())
        for piece in chunk(text):
            out.emit(ev.SUMMARY_DELTA, **at, delta=piece)
        out.emit(ev.SUMMARY_DONE, **at, text=text)
        out.emit(ev.SUMMARY_PART_DONE, **at, part=summary_text_part(text))
        summary.append(summary_text_part(text))
        tokens += count_tokens(text)
    content: list[Json] | None = [] if item.content else None
    for content_index, text in enumerate(item.content):
        at = {**where, "content_index": content_index}
        out.emit(ev.PART_ADDED, **at, part=reasoning_text_part())
        for piece in chunk(text):
            out.emit(ev.REASONING_DELTA, **at, delta=piece)
        out.emit(ev.REASONING_DONE, **at, text=text)
        out.emit(ev.PART_DONE, **at, part=reasoning_text_part(text))
        assert content is not None
        content.append(reasoning_text_part(text))
        tokens += count_tokens(text)
    done = reasoning_item(item_id, status, summary, content, item.encrypted_content)
    out.emit(ev.ITEM_DONE, output_index=index, item=done)
    return done, tokens, tokens
