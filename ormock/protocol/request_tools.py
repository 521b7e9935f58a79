"""A ``POST /v1/responses`` body's ``tools`` and ``tool_choice``, checked (``param`` naming the
field at fault) and prepared for the Response's echo; ``ormock.protocol.request`` reads the rest
of the body.

``tool_choice`` takes every form the openai SDK defines: the modes, a function or a custom tool by
name, an MCP server (and one of its tools), a hosted tool by its type (``file_search``,
``web_search_preview``, ``code_interpreter``, ``image_generation``, ``computer_use_preview``,
``shell``, ``apply_patch``, ...; ``web_search`` too, as OpenAI takes it), and ``allowed_tools``
listing tools of any type. A tool it names must be offered (``tools``, or an ``additional_tools``
input item); the spec profile refuses the forms that are OpenAI's
(``ormock.protocol.openai_request``). ``demand_of`` resolves the choice into what the answer must
do (``ToolDemand``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ormock.protocol.errors import invalid
from ormock.protocol.fields import expect
from ormock.protocol.tool_schema import check_parameters
from ormock.protocol.types import Json

__all__ = ["FORCED_TYPES", "TOOL_CHOICE_MODES", "UNFORCED_TYPES", "ToolDemand", "additional_tools",
           "check_tool_choice", "check_tools", "demand_of", "echo_tool", "tool_param"]

TOOL_CHOICE_MODES = ("auto", "required", "none")


def check_tools(value: Any, param: str = "tools") -> list[Json]:
    """A request's ``tools`` (or another array of tools, named ``param``): each a tool object,
    a function tool named (uniquely) with a JSON Schema for its parameters."""
    if value is None:
        return []
    expect(value, list, param, "an array of tools")
    seen: set[str] = set()
    tools = []
    where = param
    for i, tool in enumerate(value):
        param = f"{where}[{i}]"
        expect(tool, dict, param, "a tool object")
        if tool.get("type") == "function":
            name = tool.get("name")
            if not isinstance(name, str) or not name:
                raise invalid(f"'{param}.name' is required on a function tool.", f"{param}.name",
                              "missing_required_parameter")
            if name in seen:
                raise invalid(f"'{param}.name' {name!r} is already the name of another tool; "
                              "tool names must be unique.", f"{param}.name", "duplicate_tool")
            seen.add(name)
            params = tool.get("parameters")
            if params is not None:
                expect(params, dict, f"{param}.parameters", "a JSON Schema object")
                check_parameters(params, f"{param}.parameters")
        elif not isinstance(tool.get("type"), str):
            raise invalid(f"'{param}.type' is required.", f"{param}.type",
                          "missing_required_parameter")
        tools.append(tool)
    return tools


def echo_tool(tool: Json) -> Json:
    """A tool as the Response repeats it back."""
    if tool.get("type") != "function":
        return dict(tool)
    return {
        "type": "function",
        "name": tool["name"],
        "description": tool.get("description"),
        "parameters": tool.get("parameters"),
        "strict": tool.get("strict"),
    }


# each hosted tool's ``tool_choice`` form, and the tool types it forces (a form names its tool's
# type, or one of its dated or older spellings). The web search forms are one family: the SDK's
# forced form is ``web_search_preview`` (it has no ``web_search`` form) while clients offer the
# ``web_search`` tool, so each form forces any of them
_WEB_SEARCH = ("web_search", "web_search_2025_08_26", "web_search_preview",
               "web_search_preview_2025_03_11")
_COMPUTER = ("computer", "computer_use_preview")
FORCED_TYPES: dict[str, tuple[str, ...]] = {
    "file_search": ("file_search",),
    **dict.fromkeys(_WEB_SEARCH, _WEB_SEARCH),
    "computer": ("computer",), "computer_use_preview": ("computer_use_preview",),
    "computer_use": _COMPUTER,
    "image_generation": ("image_generation",), "code_interpreter": ("code_interpreter",),
    "shell": ("shell",), "apply_patch": ("apply_patch",),
    "programmatic_tool_calling": ("programmatic_tool_calling",),
}
# the tool types no ``tool_choice`` form names (``required`` or ``allowed_tools`` reach them)
UNFORCED_TYPES = frozenset({"local_shell", "namespace", "tool_search"})
# the forms that name a tool: the key its name is under
_NAMED = {"function": "name", "custom": "name", "mcp": "server_label"}


@dataclass(frozen=True)
class ToolDemand:
    """What a request's ``tool_choice`` asks of the answer, resolved against the tools it
    offers (``ResponseRequest.tool_demand``).

    ``must_call``: the answer must call a tool (``required``, a forced tool, ``allowed_tools``
    with mode ``required``). ``allowed``: the tools it may call, entries of the offered tools in
    their order (all of them under ``auto`` and ``required``, none under ``none``).
    ``forced``: the one tool ``tool_choice`` names (a function, custom or MCP tool, or a hosted
    tool by its type), else None. ``mcp_name``: the MCP server's tool a forced ``mcp`` choice
    names, if it names one."""

    must_call: bool
    allowed: tuple[Json, ...]
    forced: Json | None = None
    mcp_name: str | None = None


def additional_tools(value: Any) -> list[Json]:
    """The tools an ``input`` offers through ``additional_tools`` items (the newest models'
    way: Codex sends its tools so); the items themselves are checked with the input."""
    if not isinstance(value, list):
        return []
    return [tool for item in value if isinstance(item, dict)
            and item.get("type") == "additional_tools" and isinstance(item.get("tools"), list)
            for tool in item["tools"] if isinstance(tool, dict)]


def tool_param(tools: list[Json], items: list[Json], tool: Json) -> str:
    """Where an offered ``tool`` is in its request, as a ``param``: ``tools[i]``,
    ``input[i].tools[j]`` (an ``additional_tools`` item's), ``...tools[j]`` below either (a
    namespace tool's, offered as a copy marked with its namespace); ``tools`` if nowhere."""
    places = [(f"tools[{i}]", t) for i, t in enumerate(tools)]
    places += [(f"input[{i}].tools[{j}]", t) for i, item in enumerate(items)
               if item.get("type") == "additional_tools" and isinstance(item.get("tools"), list)
               for j, t in enumerate(item["tools"])]
    for where, offered in places:
        if offered is tool:
            return where
        inner = offered.get("tools") if isinstance(offered, dict) and \
            offered.get("type") == "namespace" else None
        for j, t in enumerate(inner if isinstance(inner, list) else ()):
            if isinstance(t, dict) and {**t, "namespace": offered.get("name")} == tool:
                return f"{where}.tools[{j}]"
    return "tools"


def _known(tools: list[Json], key: str, kind: str) -> str:
    names = sorted({str(t.get(key)) for t in tools if t.get("type") == kind})
    return ", ".join(names) or "none"


def _offered(choice: Json, tools: list[Json]) -> Json | None:
    """The offered tool a forced choice (or an ``allowed_tools`` entry) names, or None."""
    kind = choice.get("type", "function")
    key = _NAMED.get(kind)
    if key is not None:
        return next((t for t in tools if t.get("type") == kind
                     and t.get(key) == choice.get(key)), None)
    return next((t for t in tools if t.get("type") in FORCED_TYPES.get(kind, (kind,))), None)


def check_tool_choice(value: Any, tools: list[Json], given_input: Any = None) -> Any:
    """A request's ``tool_choice`` checked against the tools it offers (``tools``, and those of
    its ``input``'s ``additional_tools`` items), as the Response echoes it (none given:
    ``auto``)."""
    if value is None:
        return "auto"
    offered = [*tools, *additional_tools(given_input)]
    if isinstance(value, str):
        if value not in TOOL_CHOICE_MODES:
            raise invalid(f"'tool_choice' must be 'auto', 'required', 'none' or an object; got "
                          f"{value!r}.", "tool_choice")
        if value == "required" and not offered:
            raise invalid("'tool_choice' is 'required' but no tools were given; add 'tools' or "
                          "use 'auto'.", "tool_choice")
        return value
    expect(value, dict, "tool_choice", "a string or an object")
    kind = value.get("type")
    if kind == "allowed_tools":
        return _allowed_tools(value, offered)
    if kind in _NAMED:
        key = _NAMED[kind]
        name = value.get(key)
        if not isinstance(name, str):
            raise invalid(f"'tool_choice.{key}' is required on a {kind} tool_choice and must be "
                          "a string.", f"tool_choice.{key}", "missing_required_parameter")
        if _offered(value, offered) is None:
            what = "MCP server" if kind == "mcp" else f"{kind} tool"
            raise invalid(f"'tool_choice' names the {what} {name!r}, which is not in 'tools' "
                          f"(known: {_known(offered, key, kind)}).", "tool_choice",
                          "unknown_tool")
        if kind != "mcp":
            return {"type": kind, "name": name}
        tool_name = value.get("name")
        if tool_name is not None:
            expect(tool_name, str, "tool_choice.name", "a string")
            return {"type": "mcp", "server_label": name, "name": tool_name}
        return {"type": "mcp", "server_label": name}
    if kind in FORCED_TYPES:
        if _offered(value, offered) is None:
            raise invalid(f"'tool_choice' forces the {kind} tool, which is not in 'tools'; add "
                          f"a tool of type {' or '.join(FORCED_TYPES[kind])}.", "tool_choice",
                          "unknown_tool")
        return {"type": kind}
    forms = ", ".join(sorted([*_NAMED, "allowed_tools", *FORCED_TYPES]))
    raise invalid(f"'tool_choice.type' must be one of {forms}; got {kind!r}.",
                  "tool_choice.type")


def _allowed_tools(value: Json, offered: list[Json]) -> Json:
    listed = value.get("tools")
    expect(listed, list, "tool_choice.tools", "an array of tools")
    assert isinstance(listed, list)
    entries = []
    for i, tool in enumerate(listed):
        where = f"tool_choice.tools[{i}]"
        expect(tool, dict, where, "a tool object")
        if _offered(tool, offered) is None:
            kind = tool.get("type", "function")
            key = _NAMED.get(kind)
            named = f"the {kind} tool {tool.get(key)!r}" if key else f"a {kind} tool"
            raise invalid(f"'{where}' names {named}, which is not in 'tools' (known: "
                          f"{_known(offered, key or 'type', kind)}).", where, "unknown_tool")
        entries.append({"type": "function", "name": tool["name"]}
                       if tool.get("type", "function") == "function" else dict(tool))
    mode = value.get("mode", "auto")
    if mode not in ("auto", "required"):
        raise invalid(f"'tool_choice.mode' must be 'auto' or 'required'; got {mode!r}.",
                      "tool_choice.mode")
    return {"type": "allowed_tools", "tools": entries, "mode": mode}


def demand_of(choice: Any, tools: Iterable[Json]) -> ToolDemand:
    """What ``choice`` (a checked ``tool_choice``, as echoed) asks of an answer offered
    ``tools``."""
    offered = list(tools)
    if choice == "none" or not offered:
        return ToolDemand(False, ())
    if not isinstance(choice, dict):
        return ToolDemand(choice == "required", tuple(offered))
    if choice["type"] == "allowed_tools":
        allowed = [t for t in offered if any(_offered(e, [t]) for e in choice["tools"])]
        return ToolDemand(choice["mode"] == "required", tuple(allowed))
    forced = _offered(choice, offered)
    assert forced is not None  # checked: a forced tool is offered
    return ToolDemand(True, (forced,), forced,
                      choice.get("name") if choice["type"] == "mcp" else None)
