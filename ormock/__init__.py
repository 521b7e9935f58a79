"""ormock: a scriptable fake Open Responses provider for tests."""

from .engine import Engine
from .journal import JournalEntry
from .protocol import (
    RULES,
    FunctionCallPlan,
    MessagePlan,
    ProtocolError,
    ReasoningPlan,
    RefusalPart,
    ReplyPlan,
    StreamReport,
    TextPart,
    VendorItemPlan,
    Violation,
    build_events,
    check_stream,
    fold_events,
)
from .protocol.errors import OpenResponsesError
from .reply import RawReply, Reply
from .server import OrmockServer
from .sse import SSEMessage, SSEParser, parse_sse

__version__ = "0.1.0"

__all__ = [
    "RULES",
    "Engine",
    "FunctionCallPlan",
    "JournalEntry",
    "MessagePlan",
    "OpenResponsesError",
    "OrmockServer",
    "ProtocolError",
    "RawReply",
    "ReasoningPlan",
    "RefusalPart",
    "Reply",
    "ReplyPlan",
    "SSEMessage",
    "SSEParser",
    "StreamReport",
    "TextPart",
    "VendorItemPlan",
    "Violation",
    "__version__",
    "build_events",
    "check_stream",
    "fold_events",
    "parse_sse",
]
