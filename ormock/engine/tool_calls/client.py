"""The embedded default's calls of the tools the client runs: a custom tool's input (a text its
regex grammar matches, a plausible text for its Lark grammar, a sentence for free text), a
computer's next action (a screenshot, a click, typing: one more after each screenshot the
client sends back), a local or remote shell's command, a patch, a tool search."""

from __future__ import annotations

import re

from ormock.engine.tool_calls.asked import Asked, Planned
from ormock.engine.tool_calls.lark_text import text_for_lark
from ormock.engine.tool_calls.regex_text import text_matching
from ormock.protocol.errors import invalid
from ormock.protocol.plan import ToolCallPlan
from ormock.protocol.request_tools import tool_param
from ormock.protocol.types import Json

__all__ = ["COMPUTER_STEPS", "apply_patch", "computer", "custom", "local_shell", "shell",
           "tool_search"]

COMPUTER_STEPS = 3  # the actions a computer task takes before the answer (auto)
_COMMAND = re.compile(r"`([^`\n]+)`")
_FILE = re.compile(r"\b[\w./-]+\.[A-Za-z0-9]{1,5}\b")


def custom(tool: Json, asked: Asked) -> Planned:
    fmt = tool.get("format") or {"type": "text"}
    try:
        if fmt.get("type") == "grammar" and fmt.get("syntax") == "regex":
            text = text_matching(str(fmt.get("definition", "")), asked.below)
        elif fmt.get("type") == "grammar":
            text = text_for_lark(str(fmt.get("definition", "")), asked.below)
        else:
            text = " ".join(asked.text.split()) or asked.prose.sentence()
    except (ValueError, re.error) as error:
        raise invalid(f"The embedded default cannot write an input for the custom tool "
                      f"{tool.get('name')!r}: its grammar has {error}. Script the call in a "
                      "scenario (a custom_tool_call item with its input).",
                      f"{tool_param(asked.request.tools, asked.request.input, tool)}"
                      ".format.definition", "unsupported_grammar") from None
    fields: Json = {"name": tool.get("name"), "input": text}
    if tool.get("namespace") is not None:  # a custom tool of a namespace tool
        fields["namespace"] = tool["namespace"]
    return Planned([ToolCallPlan("custom_tool_call", fields)])


def _screens(asked: Asked) -> int:
    return sum(i.get("type") == "computer_call_output" for i in asked.after)


def computer(tool: Json, asked: Asked) -> Planned:
    step = _screens(asked) % COMPUTER_STEPS
    width, height = int(tool.get("display_width") or 1024), int(tool.get("display_height") or 768)
    action: Json
    if step == 0:
        action = {"type": "screenshot"}
    elif step == 1:
        action = {"type": "click", "button": "left", "x": asked.number(0, width - 1),
                  "y": asked.number(0, height - 1)}
    else:
        action = {"type": "type", "text": " ".join(asked.text.split()[:6]) or asked.word()}
    fields: Json = {"pending_safety_checks": []}
    if tool.get("type") == "computer":  # the GA tool: a batch of actions
        fields["actions"] = [action]
    else:
        fields["action"] = action
    return Planned([ToolCallPlan("computer_call", fields)])


def computer_done(asked: Asked) -> bool:
    """A computer task under ``auto`` ends after its steps' screenshots came back."""
    return _screens(asked) >= COMPUTER_STEPS


def _command(asked: Asked) -> str:
    found = _COMMAND.search(asked.text)
    return found.group(1) if found else asked.pick(("ls -la", "pwd", "git status", "uname -a"))


def local_shell(tool: Json, asked: Asked) -> Planned:
    action = {"type": "exec", "command": ["bash", "-lc", _command(asked)], "env": {},
              "timeout_ms": 10000, "working_directory": None, "user": None}
    return Planned([ToolCallPlan("local_shell_call", {"action": action})])


def shell(tool: Json, asked: Asked) -> Planned:
    action = {"commands": [_command(asked)], "timeout_ms": 10000, "max_output_length": 4096}
    return Planned([ToolCallPlan("shell_call", {"action": action})])


def apply_patch(tool: Json, asked: Asked) -> Planned:
    found = _FILE.search(asked.text)
    path = found.group() if found else f"{asked.word()}.md"
    diff = "".join(f"+{asked.prose.sentence()}\n" for _ in range(2))
    operation = {"type": "create_file", "path": path, "diff": diff}
    return Planned([ToolCallPlan("apply_patch_call", {"operation": operation})])


def tool_search(tool: Json, asked: Asked) -> Planned:
    """A search for tools: the client runs it (``execution: client``: it answers with a
    ``tool_search_output``), or the server, whose output loads the request's deferred tools
    (``defer_loading``) in the same answer."""
    execution = "client" if tool.get("execution") == "client" else "server"
    arguments = {"query": " ".join(asked.text.split())[:100] or asked.word()}
    if execution == "client":
        return Planned([ToolCallPlan("tool_search_call", {"arguments": arguments,
                                                          "execution": execution})])
    deferred = [t for t in asked.request.tools if t.get("defer_loading")]
    return Planned([
        ToolCallPlan("tool_search_call", {"call_id": None, "arguments": arguments,
                                          "execution": execution}),
        ToolCallPlan("tool_search_output", {"call_id": None, "execution": execution,
                                            "tools": deferred}),
    ], f"Found {len(deferred)} tools for {arguments['query']!r}.")
