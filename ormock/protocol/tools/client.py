"""The tools the client runs, whose calls it answers with an output item: custom (freeform)
tools (``custom_tool_call``, its ``input`` streamed as ``response.custom_tool_call_input.delta``
/``.done``), computer use (``computer_call``), the Codex tools (``local_shell_call``,
``shell_call`` with its commands streamed as ``response.shell_call_command.*``,
``apply_patch_call``) and tool search (``tool_search_call``, and ``tool_search_output`` when the
server runs the search)."""

from __future__ import annotations

from collections.abc import Callable

from ormock.protocol.tools.kind import Emit, TextStream, ToolKind
from ormock.protocol.types import Json

__all__ = ["APPLY_PATCH", "COMMAND_ADDED", "COMMAND_DELTA", "COMMAND_DONE", "COMPUTER",
           "CUSTOM", "LOCAL_SHELL", "SHELL", "TOOL_SEARCH", "TOOL_SEARCH_OUTPUT"]

COMMAND_ADDED = "response.shell_call_command.added"
COMMAND_DELTA = "response.shell_call_command.delta"
COMMAND_DONE = "response.shell_call_command.done"


def _no_input_yet(fields: Json) -> Json:
    return {**fields, "input": ""}


def _no_commands_yet(fields: Json) -> Json:
    action = fields.get("action")
    return {**fields, "action": {**action, "commands": []}} if isinstance(action, dict) else fields


def _commands(emit: Emit, item_id: str, index: int, fields: Json, partials: tuple[str, ...],
              chunk: Callable[[str], list[str]]) -> None:
    """Each command: added empty, its text as deltas, done whole (these events name their item
    by ``output_index`` alone)."""
    action = fields.get("action")
    commands = action.get("commands") if isinstance(action, dict) else None
    for number, command in enumerate(commands if isinstance(commands, list) else []):
        at = {"output_index": index, "command_index": number}
        emit(COMMAND_ADDED, **at, command="")
        for piece in chunk(str(command)):
            emit(COMMAND_DELTA, **at, delta=piece)
        emit(COMMAND_DONE, **at, command=str(command))


CUSTOM = ToolKind(
    type="custom_tool_call",
    prefix="ctc",
    required=("call_id", "input", "name"),
    call_id=True,
    opening=_no_input_yet,
    text=TextStream("input", "response.custom_tool_call_input.delta",
                    "response.custom_tool_call_input.done", "input"),
)

COMPUTER = ToolKind(
    type="computer_call",
    prefix="cu",
    required=("id", "call_id", "pending_safety_checks", "status"),
    call_id=True,
)

LOCAL_SHELL = ToolKind(
    type="local_shell_call",
    prefix="lsh",
    required=("id", "action", "call_id", "status"),
    call_id=True,
)

SHELL = ToolKind(
    type="shell_call",
    prefix="sh",
    required=("id", "action", "call_id", "status"),
    call_id=True,
    opening=_no_commands_yet,
    middle=_commands,
    events=(COMMAND_ADDED, COMMAND_DELTA, COMMAND_DONE),
)

APPLY_PATCH = ToolKind(
    type="apply_patch_call",
    prefix="apc",
    required=("id", "call_id", "operation", "status"),
    call_id=True,
)

TOOL_SEARCH = ToolKind(
    type="tool_search_call",
    prefix="tsc",
    required=("id", "arguments", "execution", "status"),
    call_id=True,
)

TOOL_SEARCH_OUTPUT = ToolKind(
    type="tool_search_output",
    prefix="tso",
    required=("id", "execution", "status", "tools"),
)
