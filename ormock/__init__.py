"""ormock: a scriptable fake Open Responses provider for tests.

Names are imported on first use, so that loading the pytest plugin (which every pytest run does
once ormock is installed) imports almost nothing until a test asks for a fake.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ormock.engine.core import Engine
    from ormock.engine.journal import JournalEntry
    from ormock.engine.limits import Limits
    from ormock.engine.settings import Settings
    from ormock.engine.verdict import Verdict, assert_resilient, judge
    from ormock.protocol import (
        RULES,
        FunctionCallPlan,
        MessagePlan,
        ProtocolError,
        ReasoningPlan,
        RefusalPart,
        ReplyPlan,
        StreamReport,
        TextPart,
        ToolCallPlan,
        VendorItemPlan,
        Violation,
        build_events,
        check_stream,
        fold_events,
    )
    from ormock.protocol.errors import OpenResponsesError
    from ormock.protocol.reply import RawReply, Reply
    from ormock.protocol.sse import SSEMessage, SSEParser, parse_sse
    from ormock.server.runner import OrmockServer

__version__ = "0.1.0"

_HOMES = {
    "Engine": "engine.core",
    "JournalEntry": "engine.journal",
    "Limits": "engine.limits",
    "OpenResponsesError": "protocol.errors",
    "OrmockServer": "server.runner",
    "RawReply": "protocol.reply",
    "Reply": "protocol.reply",
    "Settings": "engine.settings",
    "SSEMessage": "protocol.sse",
    "SSEParser": "protocol.sse",
    "parse_sse": "protocol.sse",
    "Verdict": "engine.verdict",
    "assert_resilient": "engine.verdict",
    "judge": "engine.verdict",
    **dict.fromkeys(
        ["RULES", "FunctionCallPlan", "MessagePlan", "ProtocolError", "ReasoningPlan",
         "RefusalPart", "ReplyPlan", "StreamReport", "TextPart", "ToolCallPlan", "VendorItemPlan",
         "Violation",
         "build_events", "check_stream", "fold_events"],
        "protocol",
    ),
}

__all__ = [
    "RULES",
    "Engine",
    "FunctionCallPlan",
    "JournalEntry",
    "Limits",
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
    "Settings",
    "StreamReport",
    "TextPart",
    "ToolCallPlan",
    "VendorItemPlan",
    "Verdict",
    "Violation",
    "__version__",
    "assert_resilient",
    "build_events",
    "check_stream",
    "fold_events",
    "judge",
    "parse_sse",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ormock' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
