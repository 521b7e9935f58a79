"""The embedded default's calls of every tool type but the function (``ormock.engine.embedded``
plans those): which tools a request lets it call (``choice``), which of them it calls, and each
call's items (one module per family: ``search``, ``runs``, ``mcp``, ``client``).

A tool the provider runs (web and file search, code interpreter, image generation, MCP, a tool
search the server runs) is called and answered in one response: its items, then one message
saying what they found (a web search's with ``url_citation`` annotations). A tool the client
runs (custom, computer, shells, apply_patch, a client tool search) gets its call, and the
client's output item comes back in the next request."""

from __future__ import annotations

import re
from collections.abc import Callable

from ormock.engine.tool_calls.asked import Asked, Planned
from ormock.engine.tool_calls.choice import Choice, family, resolve_choice
from ormock.engine.tool_calls.client import (
    apply_patch,
    computer,
    computer_done,
    custom,
    local_shell,
    shell,
    tool_search,
)
from ormock.engine.tool_calls.mcp import answer_approvals, mcp, server_tools
from ormock.engine.tool_calls.runs import code_interpreter, image_generation
from ormock.engine.tool_calls.search import file_search, web_search
from ormock.protocol.types import Json

__all__ = ["ANSWERS", "Asked", "Choice", "Planned", "answer_approvals", "computer_done",
           "family", "mentioned", "plan_call", "resolve_choice"]

# tool family -> its call's items (function tools are the embedded default's own)
PLANS: dict[str, Callable[[Json, Asked], Planned]] = {
    "custom": custom,
    "web_search": web_search,
    "file_search": file_search,
    "code_interpreter": code_interpreter,
    "image_generation": image_generation,
    "mcp": mcp,
    "computer": computer,
    "local_shell": local_shell,
    "shell": shell,
    "apply_patch": apply_patch,
    "tool_search": tool_search,
}
# the output items by which the client answers a call of a tool it runs
ANSWERS = frozenset({"function_call_output", "custom_tool_call_output", "computer_call_output",
                     "local_shell_call_output", "shell_call_output", "apply_patch_call_output",
                     "tool_search_output", "mcp_approval_response"})
# the words that make a model reach for a tool under ``tool_choice: auto``
_WORDS = {
    "web_search": r"search|web|latest|news|online|look up",
    "file_search": r"files?|documents?|docs|knowledge base",
    "code_interpreter": r"code|python|calculate|compute|plot|chart",
    "image_generation": r"image|picture|draw|photo|illustration",
    "computer": r"click|screen|browser|computer",
    "local_shell": r"shell|terminal|command",
    "shell": r"shell|terminal|command",
    "apply_patch": r"patch|edit the file|create a file",
    "tool_search": r"tools? for|find a tool|search for tools?",
}


def mentioned(tool: Json, text: str) -> bool:
    """Whether the user's words call for ``tool``: its name (a function's, a custom tool's), an
    MCP server's label or one of its tools, or the words of its family."""
    lowered = text.lower()
    name = tool.get("name")
    if isinstance(name, str) and (name.lower() in lowered
                                  or name.replace("_", " ").lower() in lowered):
        return True
    kind = family(tool.get("type"))
    if kind == "mcp":
        names = [str(tool.get("server_label", "")), *(t["name"] for t in server_tools(tool))]
        return any(n and n.lower() in lowered for n in names)
    words = _WORDS.get(kind)
    return bool(words and re.search(rf"\b(?:{words})\b", lowered))


def plan_call(tool: Json, asked: Asked) -> Planned | None:
    """The items of a call of ``tool`` (None: a function tool, or a type without a fake)."""
    plan = PLANS.get(family(tool.get("type")))
    return plan(tool, asked) if plan is not None else None
