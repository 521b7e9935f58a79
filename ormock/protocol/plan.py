"""A reply plan: what a reply says, at the level a person thinks in.

The stream builder turns a plan into the exact list of events; the JSON body is the fold of that
list. Items may fix their own ids (for exact replays); otherwise ids come from the seeded factory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "FunctionCallPlan",
    "ItemPlan",
    "MessagePlan",
    "ReasoningPlan",
    "RefusalPart",
    "ReplyPlan",
    "TextPart",
    "ToolCallPlan",
    "VendorItemPlan",
]


@dataclass(frozen=True)
class TextPart:
    """An ``output_text`` part; annotations are url citations (dicts as on the wire).

    ``cut``: when whoever wrote the text knows it (the embedded default's prose), the text split
    at its spaces and its token count (``count_tokens``), for a plain text only
    (``ormock.protocol.text_cuts.plain``); a shortcut for a compiled reply, never on the wire."""

    text: str
    annotations: tuple[dict[str, Any], ...] = ()
    cut: tuple[list[str], int] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class RefusalPart:
    refusal: str


@dataclass(frozen=True)
class MessagePlan:
    parts: tuple[TextPart | RefusalPart, ...]
    role: str = "assistant"
    phase: str | None = None
    id: str | None = None


@dataclass(frozen=True)
class FunctionCallPlan:
    name: str
    arguments: str
    call_id: str | None = None
    id: str | None = None
    namespace: str | None = None  # the namespace tool it belongs to (OpenAI's ``namespace``)


@dataclass(frozen=True)
class ReasoningPlan:
    summary: tuple[str, ...] = ()
    content: tuple[str, ...] = ()
    encrypted_content: str | None = None
    id: str | None = None


@dataclass(frozen=True)
class VendorItemPlan:
    """An extension item (``acme:web_search_call``): added in progress, done with ``fields``."""

    type: str
    fields: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class ToolCallPlan:
    """One of OpenAI's tool-call items (``ormock.protocol.tools``: ``web_search_call``,
    ``mcp_call``, ``custom_tool_call``, ...), streamed with the events OpenAI sends about it.

    ``fields``: the item's fields besides ``id``, ``type`` and ``status``, as its
    ``output_item.done`` carries them (a ``call_id`` is drawn when the kind has one and
    ``fields`` gives none). ``partial_images``: base64 images an ``image_generation_call``
    streams before it completes. ``vendor``: the item goes out as the extension item
    ``vendor:type`` (added, then done with its fields, without OpenAI's own events), as a
    profile without OpenAI's tool items (the Open Responses spec) has it."""

    type: str
    fields: dict[str, Any] = field(default_factory=dict)
    partial_images: tuple[str, ...] = ()
    id: str | None = None
    vendor: str | None = None


ItemPlan = MessagePlan | FunctionCallPlan | ReasoningPlan | VendorItemPlan | ToolCallPlan

Status = Literal["completed", "incomplete", "failed"]


@dataclass
class ReplyPlan:
    """What to answer.

    ``status``: ``incomplete`` ends the last item ``incomplete`` with ``incomplete_reason``;
    ``failed`` sends an ``error`` event (with ``error``) and then ``response.failed``.
    ``usage``: ``"auto"`` counts tokens; ``None`` sends ``null``; a dict is sent as given.
    """

    items: list[ItemPlan] = field(default_factory=list)
    status: Status = "completed"
    incomplete_reason: str | None = None
    error: dict[str, Any] | None = None
    usage: dict[str, Any] | Literal["auto"] | None = "auto"
    chunking: str = "words"
    queued: bool = False
