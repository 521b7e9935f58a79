"""What one of OpenAI's tool-call item types is on the wire: its id prefix, its required fields
(as the openai SDK's types declare them), the item its ``output_item.added`` carries, and the
events OpenAI streams about it between ``output_item.added`` and ``output_item.done``.

Each family's kinds are values in a module of their own (``search``, ``code``, ``images``,
``mcp``, ``client``); ``ormock.protocol.tools`` gathers them in ``KINDS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from ormock.protocol.types import Json

__all__ = ["Middle", "TextStream", "ToolKind", "status_event"]


class TextStream(NamedTuple):
    """A field of the item streamed as text: its deltas' event type, its done event's type and
    the done event's field holding the whole text."""

    field: str
    delta: str
    done: str
    done_field: str


class Emit(Protocol):
    def __call__(self, type_: str, **fields: Any) -> None: ...


# events of their own between the status events (partial images, shell commands): called with
# the emitter, the item's id and output index, the done item's fields, the plan's partial
# images and the chunker
Middle = Callable[[Emit, str, int, Json, tuple[str, ...], Callable[[str], list[str]]], None]


def _same(fields: Json) -> Json:
    return fields


@dataclass(frozen=True)
class ToolKind:
    """One tool-call item type.

    ``opening``: the added item's fields made from the done item's (a search's results are not
    known yet, a call's arguments are still to stream). ``before``/``after``: the status steps
    streamed after the item is added and before it is done (``response.<type>.<step>``);
    ``failed``: the step that replaces ``after`` when the item carries an ``error``. ``text``:
    the field streamed as deltas between them; ``middle``: events of the family's own."""

    type: str
    prefix: str
    required: tuple[str, ...]
    call_id: bool = False
    status: bool = True
    opening: Callable[[Json], Json] = _same
    before: tuple[str, ...] = ()
    text: TextStream | None = None
    middle: Middle | None = None
    after: tuple[str, ...] = ()
    failed: str | None = None
    events: tuple[str, ...] = ()  # event types of its own besides the status and text ones

    def status_events(self) -> tuple[str, ...]:
        steps = {*self.before, *self.after, *((self.failed,) if self.failed else ())}
        return tuple(sorted(status_event(self.type, step) for step in steps))

    def failing(self, fields: Json) -> bool:
        return self.failed is not None and fields.get("error") not in (None, "", {})


def status_event(item_type: str, step: str) -> str:
    """``response.web_search_call.searching``: a status step of an item type."""
    return f"response.{item_type}.{step}"
