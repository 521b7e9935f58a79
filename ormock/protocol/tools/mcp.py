"""Remote MCP servers OpenAI calls: ``mcp_list_tools`` (the server's tools), ``mcp_call`` (its
arguments streamed as ``response.mcp_call_arguments.delta``/``.done``; ``failed`` when it
carries an ``error``) and ``mcp_approval_request`` (a call waiting for the client's
``mcp_approval_response``)."""

from __future__ import annotations

from ormock.protocol.tools.kind import TextStream, ToolKind
from ormock.protocol.types import Json

__all__ = ["MCP_APPROVAL_REQUEST", "MCP_CALL", "MCP_LIST_TOOLS"]


def _not_listed_yet(fields: Json) -> Json:
    return {**fields, "tools": []}


def _not_called_yet(fields: Json) -> Json:
    return {**fields, "arguments": "", "output": None, "error": None}


MCP_LIST_TOOLS = ToolKind(
    type="mcp_list_tools",
    prefix="mcpl",
    required=("id", "server_label", "tools"),
    status=False,
    opening=_not_listed_yet,
    before=("in_progress",),
    after=("completed",),
    failed="failed",
)

MCP_CALL = ToolKind(
    type="mcp_call",
    prefix="mcp",
    required=("id", "arguments", "name", "server_label"),
    opening=_not_called_yet,
    before=("in_progress",),
    text=TextStream("arguments", "response.mcp_call_arguments.delta",
                    "response.mcp_call_arguments.done", "arguments"),
    after=("completed",),
    failed="failed",
)

MCP_APPROVAL_REQUEST = ToolKind(
    type="mcp_approval_request",
    prefix="mcpr",
    required=("id", "arguments", "name", "server_label"),
    status=False,
)
