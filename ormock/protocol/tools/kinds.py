"""Every tool-call item type ormock streams as OpenAI does (``KINDS``), and which item type
each of their events is about (``TOOL_EVENTS``)."""

from __future__ import annotations

from ormock.protocol.tools.client import (
    APPLY_PATCH,
    COMPUTER,
    CUSTOM,
    LOCAL_SHELL,
    SHELL,
    TOOL_SEARCH,
    TOOL_SEARCH_OUTPUT,
)
from ormock.protocol.tools.code import CODE_INTERPRETER
from ormock.protocol.tools.images import IMAGE_GENERATION
from ormock.protocol.tools.kind import ToolKind
from ormock.protocol.tools.mcp import MCP_APPROVAL_REQUEST, MCP_CALL, MCP_LIST_TOOLS
from ormock.protocol.tools.search import FILE_SEARCH, WEB_SEARCH

__all__ = ["KINDS", "TOOL_EVENTS"]

KINDS: dict[str, ToolKind] = {kind.type: kind for kind in (
    WEB_SEARCH, FILE_SEARCH, CODE_INTERPRETER, IMAGE_GENERATION, MCP_LIST_TOOLS, MCP_CALL,
    MCP_APPROVAL_REQUEST, CUSTOM, COMPUTER, LOCAL_SHELL, SHELL, APPLY_PATCH, TOOL_SEARCH,
    TOOL_SEARCH_OUTPUT)}

# event type -> the item type it is about
TOOL_EVENTS: dict[str, str] = {
    event: kind.type
    for kind in KINDS.values()
    for event in (*kind.status_events(), *kind.events,
                  *((kind.text.delta, kind.text.done) if kind.text else ()))
}
