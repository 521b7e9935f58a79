"""Which tools a request lets the model call, and whether it must: its ``tool_choice`` resolved
against its ``tools``, for every tool type (``auto``, ``required``, ``none``, a forced function,
custom tool, MCP server or hosted tool, ``allowed_tools``).

``resolve_choice`` is the one place the embedded default reads ``tool_choice``: a typed
resolution made when the request is parsed can take its place."""

from __future__ import annotations

from dataclasses import dataclass

from ormock.protocol.request import ResponseRequest
from ormock.protocol.types import Json

__all__ = ["Choice", "family", "resolve_choice"]

# tool types that are one family (a forced ``{"type": "web_search_preview"}`` calls a
# ``web_search`` tool; both make a ``web_search_call``)
_FAMILIES = {
    "web_search_preview": "web_search",
    "web_search_2025_08_26": "web_search",
    "web_search_preview_2025_03_11": "web_search",
    "computer_use_preview": "computer",
    "computer_use": "computer",
}


def family(tool_type: object) -> str:
    """A tool type's family: ``web_search_preview`` is ``web_search``'s."""
    return _FAMILIES.get(str(tool_type), str(tool_type))


@dataclass(frozen=True)
class Choice:
    """The tools the model may call (in the request's order), whether it must call one, and
    the tool a choice names within an MCP server (``{"type": "mcp", "name": ...}``)."""

    tools: list[Json]
    must: bool
    forced: bool = False
    mcp_tool: str | None = None


def _names(choice: Json, tool: Json) -> bool:
    """Whether a forced choice (or an entry of ``allowed_tools``) names ``tool``."""
    kind = choice.get("type")
    if kind in ("function", "custom"):
        return tool.get("type") == kind and tool.get("name") == choice.get("name")
    if kind == "mcp":
        return tool.get("type") == "mcp" and tool.get("server_label") == choice.get(
            "server_label")
    return family(tool.get("type")) == family(kind)


def resolve_choice(request: ResponseRequest) -> Choice:
    """``tool_choice`` resolved against ``tools``: ``none`` (or no tools) gives none to call;
    ``required`` every tool, one of which must be called; a forced choice the tools it names,
    one of which must be called; ``allowed_tools`` the tools it lists (``mode: required``:
    one must be called); ``auto`` every tool."""
    tools, choice = request.tools, request.tool_choice
    if choice == "none" or not tools:
        return Choice([], False)
    if isinstance(choice, dict):
        if choice.get("type") == "allowed_tools":
            listed = [entry for entry in choice.get("tools") or [] if isinstance(entry, dict)]
            return Choice([t for t in tools if any(_names(entry, t) for entry in listed)],
                          choice.get("mode") == "required")
        name = choice.get("name") if choice.get("type") == "mcp" else None
        return Choice([t for t in tools if _names(choice, t)], True, True,
                      name if isinstance(name, str) else None)
    return Choice(list(tools), choice == "required")
