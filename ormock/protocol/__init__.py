"""The Open Responses model: items, events, ids, the stream builder and the checker/folder."""

from ormock.protocol.checker import (
    RULES,
    ProtocolError,
    StreamReport,
    Violation,
    check_stream,
    fold_events,
)
from ormock.protocol.ids import Clock, IdFactory
from ormock.protocol.plan import (
    FunctionCallPlan,
    ItemPlan,
    MessagePlan,
    ReasoningPlan,
    RefusalPart,
    ReplyPlan,
    TextPart,
    ToolCallPlan,
    VendorItemPlan,
)
from ormock.protocol.response import new_response, usage_object
from ormock.protocol.stream import build_events

__all__ = [
    "RULES",
    "Clock",
    "FunctionCallPlan",
    "IdFactory",
    "ItemPlan",
    "MessagePlan",
    "ProtocolError",
    "ReasoningPlan",
    "RefusalPart",
    "ReplyPlan",
    "StreamReport",
    "TextPart",
    "ToolCallPlan",
    "VendorItemPlan",
    "Violation",
    "build_events",
    "check_stream",
    "fold_events",
    "new_response",
    "usage_object",
]
