"""OpenAI's tool-call items beyond the function call: what each is on the wire (``KINDS``),
the events OpenAI streams about them (``TOOL_EVENTS``), their emission (``tool_call_events``),
and their spelling under a profile without them (``spelled``: extension items ``openai:...``,
as the Open Responses spec allows)."""

from __future__ import annotations

from dataclasses import replace

from ormock.protocol.plan import ReplyPlan, ToolCallPlan
from ormock.protocol.tools.emit import tool_call_events, tool_item
from ormock.protocol.tools.kind import TextStream, ToolKind, status_event
from ormock.protocol.tools.kinds import KINDS, TOOL_EVENTS

__all__ = ["KINDS", "TOOL_EVENTS", "VENDOR", "TextStream", "ToolKind", "spelled",
           "status_event", "tool_call_events", "tool_item"]

VENDOR = "openai"  # the prefix of OpenAI's tool items spelled as extension items


def spelled(plan: ReplyPlan, openai_items: bool) -> ReplyPlan:
    """``plan`` as a profile sends it: with OpenAI's own tool items (``openai_items``), or each
    one as the extension item ``openai:<type>``; the same plan when nothing changes."""
    if openai_items:
        return plan
    for item in plan.items:  # most plans hold no tool item: returned as they are
        if isinstance(item, ToolCallPlan):
            break
    else:
        return plan
    items = [replace(item, vendor=VENDOR) if isinstance(item, ToolCallPlan) else item
             for item in plan.items]
    return replace(plan, items=items)
