"""A ``POST /v1/responses`` body's ``tools`` and ``tool_choice``, checked (``param`` naming the
field at fault) and prepared for the Response's echo; ``ormock.protocol.request`` reads the rest
of the body."""

from __future__ import annotations

from typing import Any

from ormock.protocol.errors import invalid
from ormock.protocol.fields import expect
from ormock.protocol.tool_schema import check_parameters
from ormock.protocol.types import Json

__all__ = ["TOOL_CHOICE_MODES", "check_tool_choice", "check_tools", "echo_tool"]

TOOL_CHOICE_MODES = ("auto", "required", "none")


def check_tools(value: Any) -> list[Json]:
    """A request's ``tools``: each a tool object, a function tool named (uniquely) with a JSON
    Schema for its parameters."""
    if value is None:
        return []
    expect(value, list, "tools", "an array of tools")
    seen: set[str] = set()
    tools = []
    for i, tool in enumerate(value):
        param = f"tools[{i}]"
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


def check_tool_choice(value: Any, tools: list[Json]) -> Any:
    """A request's ``tool_choice`` checked against its ``tools``, as the Response echoes it
    (none given: ``auto``)."""
    if value is None:
        return "auto"
    names = {t.get("name") for t in tools if t.get("type") == "function"}
    if isinstance(value, str):
        if value not in TOOL_CHOICE_MODES:
            raise invalid(f"'tool_choice' must be 'auto', 'required', 'none' or an object; got "
                          f"{value!r}.", "tool_choice")
        if value == "required" and not tools:
            raise invalid("'tool_choice' is 'required' but no tools were given; add 'tools' or "
                          "use 'auto'.", "tool_choice")
        return value
    expect(value, dict, "tool_choice", "a string or an object")
    kind = value.get("type")
    if kind == "function":
        name = value.get("name")
        if name not in names:
            raise invalid(f"'tool_choice' names the function {name!r}, which is not in 'tools' "
                          f"(known: {', '.join(sorted(map(str, names))) or 'none'}).",
                          "tool_choice", "unknown_tool")
        return {"type": "function", "name": name}
    if kind == "allowed_tools":
        listed = value.get("tools")
        expect(listed, list, "tool_choice.tools", "an array of tools")
        for i, tool in enumerate(listed):
            if not isinstance(tool, dict) or tool.get("name") not in names:
                raise invalid(f"'tool_choice.tools[{i}]' names a function that is not in 'tools' "
                              f"(known: {', '.join(sorted(map(str, names))) or 'none'}).",
                              f"tool_choice.tools[{i}]", "unknown_tool")
        mode = value.get("mode", "auto")
        if mode not in ("auto", "required"):
            raise invalid(f"'tool_choice.mode' must be 'auto' or 'required'; got {mode!r}.",
                          "tool_choice.mode")
        return {"type": "allowed_tools",
                "tools": [{"type": "function", "name": t["name"]} for t in listed],
                "mode": mode}
    raise invalid(f"'tool_choice.type' must be 'function' or 'allowed_tools'; got {kind!r}.",
                  "tool_choice.type")
