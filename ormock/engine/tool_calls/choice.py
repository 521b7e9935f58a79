"""Which tools a request lets the model call, and whether it must: its ``tool_choice`` resolved
against its ``tools``, for every tool type (``auto``, ``required``, ``none``, a forced function,
custom tool, MCP server or hosted tool, ``allowed_tools``).

``resolve_choice`` is the one place the embedded default reads it, from the resolution made
when the request is parsed (``ormock.protocol.request_tools.ToolDemand``)."""

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


def resolve_choice(request: ResponseRequest) -> Choice:
    """``tool_choice`` as the request resolved it against the tools it offers
    (``ResponseRequest.tool_demand``: ``tools`` and ``additional_tools``): ``none`` gives none
    to call; ``required`` every tool, one of which must be called; a forced choice the tool it
    names; ``allowed_tools`` the tools it lists; ``auto`` every tool."""
    demand = request.tool_demand
    tools = [tool for offered in demand.allowed for tool in _callable(offered)]
    return Choice(tools, demand.must_call and bool(tools), demand.forced is not None,
                  demand.mcp_name)


def _callable(tool: Json) -> list[Json]:
    """The tools an offered tool lets the model call: itself, or for a ``namespace`` tool the
    function and custom tools in it, each marked with the namespace its call names."""
    if tool.get("type") != "namespace":
        return [tool]
    inner = tool.get("tools")
    return [{**t, "namespace": tool.get("name")} for t in inner if isinstance(t, dict)
            and t.get("type") in ("function", "custom")] if isinstance(inner, list) else []
