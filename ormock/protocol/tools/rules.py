"""The checker's rules for OpenAI's tool-call items (``ormock.protocol.checker`` calls them
when the profile speaks OpenAI's tool items): each event is about an open item of its type,
nothing of an item follows its ``completed``/``failed`` step, streamed text (a custom tool's
input, code, MCP arguments, shell commands) ends in a ``.done`` that equals its deltas and in a
done item that carries it, partial images are numbered from 0, and (held to the strict rules)
the done item has the fields OpenAI's types require."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ormock.protocol.hints import short
from ormock.protocol.tools.client import COMMAND_ADDED, COMMAND_DELTA, COMMAND_DONE
from ormock.protocol.tools.images import PARTIAL_IMAGE
from ormock.protocol.tools.kinds import KINDS, TOOL_EVENTS
from ormock.protocol.types import Json

__all__ = ["ToolState", "item_done", "tool_event"]

Flag = Callable[[str, str], None]  # (rule, message)


@dataclass
class _Text:
    text: str = ""
    deltas: int = 0
    done: bool = False


@dataclass
class ToolState:
    """What the events of one tool item built so far."""

    text: _Text = field(default_factory=_Text)
    commands: dict[int, _Text] = field(default_factory=dict)
    partials: int = 0
    finished: str | None = None  # the completed/failed event that ended its steps


def _streamed(state: _Text, what: str, piece: Any, whole: bool, flag: Flag) -> None:
    if not whole:
        if state.done:
            flag("order", f"{what} delta after its .done")
        state.text += str(piece)
        state.deltas += 1
        return
    if state.deltas and piece != state.text:
        flag("done-mismatch", f"{what} .done {short(piece, 40)} differs from the concatenated "
             f"deltas {short(state.text, 40)}")
    elif not state.deltas:
        state.text = str(piece)
    state.done = True


def tool_event(state: ToolState, type_: str, event: Json, flag: Flag) -> None:
    """Fold one event about a tool item into ``state``."""
    kind = KINDS[TOOL_EVENTS[type_]]
    if state.finished is not None:
        flag("order", f"{type_} after {state.finished}")
        return
    if type_.endswith((".completed", ".failed")) and type_ in kind.status_events():
        state.finished = type_
        return
    text = kind.text
    if text is not None and type_ in (text.delta, text.done):
        whole = type_ == text.done
        _streamed(state.text, f"{kind.type} {text.field}",
                  event.get(text.done_field if whole else "delta", ""), whole, flag)
    elif type_ == PARTIAL_IMAGE:
        number = event.get("partial_image_index")
        if number != state.partials:
            flag("index-mismatch", f"partial_image_index {number!r}; the next partial image is "
                 f"{state.partials}")
        state.partials += 1
    elif type_ in (COMMAND_ADDED, COMMAND_DELTA, COMMAND_DONE):
        _command(state, type_, event, flag)


def _command(state: ToolState, type_: str, event: Json, flag: Flag) -> None:
    number = event.get("command_index")
    if not isinstance(number, int):
        flag("index-mismatch", f"{type_} has no integer command_index")
        return
    if type_ == COMMAND_ADDED:
        if number != len(state.commands):
            flag("index-mismatch", f"command_index {number}; the next command is "
                 f"{len(state.commands)}")
        state.commands[number] = _Text(text=str(event.get("command") or ""))
        return
    command = state.commands.get(number)
    if command is None:
        flag("delta-before-added", f"{type_} for command {number}, which no "
             "shell_call_command.added opened")
        command = state.commands[number] = _Text()
    _streamed(command, f"shell_call command {number}",
              event.get("command" if type_ == COMMAND_DONE else "delta", ""),
              type_ == COMMAND_DONE, flag)


def item_done(state: ToolState | None, final: Json, strict: bool, flag: Flag) -> None:
    """An ``output_item.done`` of a tool item against what its events built (a field it leaves
    out is not compared: real streams leave some out); ``strict``: it must carry the fields
    OpenAI's types require."""
    kind = KINDS[str(final.get("type"))]
    if strict:
        missing = [name for name in kind.required if name not in final]
        if missing:
            flag("schema", f"the {kind.type} item lacks {', '.join(missing)} (OpenAI's "
                 f"{kind.type} has {', '.join(kind.required)})")
    if state is None:
        return
    text = kind.text
    if text is not None and (state.text.deltas or state.text.done) and text.field in final and (
            final[text.field] != state.text.text):
        flag("done-mismatch", f"output_item.done {text.field} {short(final.get(text.field), 40)}"
             f" differs from the streamed {short(state.text.text, 40)}")
    if state.commands:
        action = final.get("action")
        listed = action.get("commands") if isinstance(action, dict) else None
        built = [state.commands[n].text for n in sorted(state.commands)]
        if listed is not None and listed != built:
            flag("done-mismatch", f"output_item.done action.commands {short(listed, 40)} "
                 f"differ from the streamed {short(built, 40)}")
