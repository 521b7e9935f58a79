"""A tool-call item's events, in the order OpenAI streams them: ``output_item.added`` (the
kind's opening form), its status steps, its text deltas or events of its own, then
``output_item.done``; or, spelled as an extension item, added and done alone."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

from ormock.protocol import events as ev
from ormock.protocol.ids import IdFactory
from ormock.protocol.items import vendor_item
from ormock.protocol.plan import ToolCallPlan
from ormock.protocol.tokens import count_tokens
from ormock.protocol.tools.kind import ToolKind, status_event
from ormock.protocol.tools.kinds import KINDS
from ormock.protocol.types import Json

__all__ = ["tool_call_events", "tool_item"]

# fields too large or too much the tool's own to count as what the model wrote
_UNCOUNTED = frozenset({"result", "results", "outputs", "tools", "pending_safety_checks"})


class Emitter(Protocol):
    def emit(self, type_: str, **fields: Any) -> None: ...


def tool_item(kind: ToolKind, item_id: str, status: str, fields: Json) -> Json:
    """The item as the wire has it: id, type, status (when the kind has one), its fields."""
    item: Json = {"id": item_id, "type": kind.type}
    if kind.status:
        item["status"] = status
    item.update((k, v) for k, v in fields.items() if k not in ("id", "type", "status"))
    return item


def tool_call_events(out: Emitter, plan: ToolCallPlan, index: int, status: str,
                     ids: IdFactory, chunk: Callable[[str], list[str]]) -> tuple[Json, int]:
    """Emit one tool call's events into ``out``; its final form and its output tokens."""
    kind = KINDS[plan.type]
    item_id = plan.id or ids.new(kind.prefix)
    fields = dict(plan.fields)
    if kind.call_id and "call_id" not in fields:
        fields = {"call_id": ids.new("call"), **fields}
    failing = kind.failing(fields)
    if failing and status == "completed":
        status = "failed"
    text = str(fields.get(kind.text.field, "")) if kind.text else ""
    tokens = count_tokens(text) if kind.text else count_tokens(json.dumps(
        {k: v for k, v in fields.items() if k not in _UNCOUNTED}, sort_keys=True))
    if plan.vendor is not None:
        name = f"{plan.vendor}:{kind.type}"
        out.emit(ev.ITEM_ADDED, output_index=index, item=vendor_item(name, item_id, "in_progress"))
        done = vendor_item(name, item_id, status, fields)
        out.emit(ev.ITEM_DONE, output_index=index, item=done)
        return done, tokens
    out.emit(ev.ITEM_ADDED, output_index=index,
             item=tool_item(kind, item_id, "in_progress", kind.opening(fields)))
    where = {"item_id": item_id, "output_index": index}
    for step in kind.before:
        out.emit(status_event(kind.type, step), **where)
    if kind.text is not None:
        for piece in chunk(text):
            out.emit(kind.text.delta, **where, delta=piece)
        out.emit(kind.text.done, **where, **{kind.text.done_field: text})
    if kind.middle is not None:
        kind.middle(out.emit, item_id, index, fields, plan.partial_images, chunk)
    for step in (kind.failed,) if failing and kind.failed else kind.after:
        out.emit(status_event(kind.type, step), **where)
    done = tool_item(kind, item_id, status, fields)
    out.emit(ev.ITEM_DONE, output_index=index, item=done)
    return done, tokens
