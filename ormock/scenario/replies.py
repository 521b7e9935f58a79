"""A step's reply: person-level items (with templates) or literal events / SSE, sent exactly.

``compile_reply`` turns the ``reply:`` mapping of a step into a ``StepReply`` at load time;
``StepReply.build`` makes the events for one request (templates rendered from its seed: ``Draws``).
How a request makes each item of the plan is decided once per item (``_Item``): a message
that is one template renders only that; an item with no template whose plan holds nothing
mutable is made once and shared (plans are frozen), and a reply whose every item is so made
shares its whole plan; any other renders its spec and reads it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ormock.protocol.frozen import made
from ormock.protocol.ids import IdFactory
from ormock.protocol.plan import (
    FunctionCallPlan,
    ItemPlan,
    MessagePlan,
    ReasoningPlan,
    RefusalPart,
    ReplyPlan,
    TextPart,
    VendorItemPlan,
)
from ormock.protocol.response import usage_object
from ormock.protocol.sse import json_events, parse_sse
from ormock.protocol.stream import build_events
from ormock.protocol.text_cuts import plain, tokens
from ormock.protocol.tokens import chunker
from ormock.protocol.tools import KINDS, spelled
from ormock.protocol.types import Json
from ormock.protocol.wire import Frame, Pacing
from ormock.scenario.generated_text import Draws
from ormock.scenario.templates import Template, TemplateError, compile_template, has_template
from ormock.scenario.tool_items import tool_plan

__all__ = ["StepReply", "compile_reply"]


def _compile_tree(value: Any, path: tuple[str | int, ...] = ()) -> Any:
    """Strings with ``{{ }}`` become templates, everywhere in a nested value.

    A ``TemplateError`` carries the ``path`` of the string it is in.
    """
    if isinstance(value, str):
        if not has_template(value):
            return value
        try:
            return compile_template(value)
        except TemplateError as error:
            error.path = path
            raise
    if isinstance(value, list):
        return [_compile_tree(v, (*path, i)) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _compile_tree(v, (*path, k)) for k, v in value.items()}
    return value


def _render(value: Any, draws: Draws | None, request: Mapping[str, Any]) -> Any:
    if isinstance(value, Template):
        assert draws is not None  # a reply with a template is given what it draws from
        return value.render(draws, request)
    if isinstance(value, list):
        return [_render(v, draws, request) for v in value]
    if isinstance(value, dict):
        return {k: _render(v, draws, request) for k, v in value.items()}
    return value


def _templated(value: Any) -> bool:
    """Whether a compiled spec holds a template anywhere."""
    if isinstance(value, Template):
        return True
    if isinstance(value, list):
        return any(_templated(v) for v in value)
    if isinstance(value, dict):
        return any(_templated(v) for v in value.values())
    return False


def _reads_request(value: Any) -> bool:
    """Whether a template of a compiled spec reads the request (``request.<field>``)."""
    if isinstance(value, Template):
        return value.reads_request
    if isinstance(value, list):
        return any(_reads_request(v) for v in value)
    if isinstance(value, dict):
        return any(_reads_request(v) for v in value.values())
    return False


def _texts(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(str(v) for v in value)


def _annotation(spec: Json, text: str) -> Json:
    start = spec.get("start_index")
    end = spec.get("end_index")
    if "cite" in spec:
        start = text.find(spec["cite"])
        if start < 0:
            raise ValueError(f"the cited words {spec['cite']!r} are not in the message text")
        end = start + len(spec["cite"])
    return {
        "type": "url_citation",
        "url": spec["url"],
        "start_index": int(start if start is not None else 0),
        "end_index": int(end if end is not None else len(text)),
        "title": spec.get("title", spec["url"]),
    }


def _text_part(spec: Json) -> TextPart:
    text = str(spec.get("text", ""))
    notes = tuple(_annotation(a, text) for a in spec.get("annotations", []))
    return TextPart(text, notes)


def _item(spec: Json) -> ItemPlan:
    (kind, body), = spec.items()
    if kind == "message":
        if isinstance(body, str):
            return MessagePlan(parts=(TextPart(body),))
        parts: list[TextPart | RefusalPart] = []
        if "text" in body:
            parts.append(_text_part(body))
        for part in body.get("parts", []):
            if "refusal" in part:
                parts.append(RefusalPart(str(part["refusal"])))
            else:
                parts.append(_text_part(part))
        return MessagePlan(parts=tuple(parts) or (TextPart(""),), phase=body.get("phase"),
                           id=body.get("id"))
    if kind == "refusal":
        return MessagePlan(parts=(RefusalPart(str(body)),))
    if kind == "function_call":
        arguments = body.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        return FunctionCallPlan(name=body["name"], arguments=arguments,
                                call_id=body.get("call_id"), id=body.get("id"),
                                namespace=body.get("namespace"))
    if kind == "reasoning":
        if isinstance(body, str):
            return ReasoningPlan(summary=(body,))
        return ReasoningPlan(summary=_texts(body.get("summary")),
                             content=_texts(body.get("content")),
                             encrypted_content=body.get("encrypted_content"), id=body.get("id"))
    if kind in KINDS:
        return tool_plan(kind, body)
    return VendorItemPlan(type=body["type"], fields=dict(body.get("fields", {})),
                          id=body.get("id"))


def _frozen(item: ItemPlan) -> bool:
    """Whether a plan holds nothing a build or a fault could change (no dict): one object may
    then stand in every reply."""
    if type(item) is MessagePlan:
        return all(not isinstance(p, TextPart) or not p.annotations for p in item.parts)
    return type(item) in (FunctionCallPlan, ReasoningPlan)


def _cut(item: ItemPlan) -> ItemPlan:
    """A message made once for every request with its plain texts cut (``TextPart.cut``: each
    split at its spaces, and its tokens), once, as a compiled reply cuts them otherwise for
    each; any other item as it is."""
    if type(item) is not MessagePlan:
        return item
    parts: list[TextPart | RefusalPart] = []
    for part in item.parts:
        if type(part) is TextPart and plain(part.text):
            words = part.text.split(" ")
            part = replace(part, cut=(words, tokens(words)))
        parts.append(part)
    return replace(item, parts=tuple(parts))


# how a request makes an item: from what its templates draw from (None: the reply has none)
# and the request's fields
ItemMaker = Callable[[Draws | None, Mapping[str, Any]], ItemPlan]


class _Item:
    """How a request makes one item of the plan from its compiled ``spec``: rendered and read
    (``_item``), and, when the spec has no template and the plan is ``_frozen``, kept from the
    first request (the load's check) for every later one: the same plan, made (and its texts
    cut: ``_cut``) once."""

    __slots__ = ("made", "spec", "templated")

    def __init__(self, spec: Any) -> None:
        self.spec, self.templated = spec, _templated(spec)
        self.made: ItemPlan | None = None

    def __call__(self, draws: Draws | None, request: Mapping[str, Any]) -> ItemPlan:
        if self.made is not None:
            return self.made
        item = _item(_render(self.spec, draws, request))
        if not self.templated and _frozen(item):
            self.made = item = _cut(item)
        return item


def _maker(spec: Any) -> ItemMaker:
    """How a request makes the item of ``spec``: a message that is one template is its text
    rendered (``{message: "Hello! {{ faker.sentence() }}"}``), anything else an ``_Item``."""
    if isinstance(spec, dict) and len(spec) == 1 and isinstance(spec.get("message"), Template):
        template: Template = spec["message"]

        def message(draws: Draws | None, request: Mapping[str, Any]) -> ItemPlan:
            assert draws is not None  # its reply has a template: it is given its draws
            text, cut = template.render_cut(draws, request)
            # made without the frozen dataclasses' __init__ (ormock.protocol.frozen), as
            # every reply makes one: every field it sets, in order
            return made(MessagePlan, parts=(made(TextPart, text=text, annotations=(), cut=cut),),
                        role="assistant", phase=None, id=None)

        return message
    return _Item(spec)


@dataclass
class StepReply:
    """What a step answers. Exactly one of items (a plan), ``events`` or ``sse`` is the source."""

    items: list[Any] = field(default_factory=list)
    status: str = "completed"
    incomplete_reason: str | None = None
    error: Json | None = None
    usage: Any = "auto"
    chunking: str = "words"
    pacing: Pacing | None = None
    faults: list[Any] = field(default_factory=list)
    events: list[Json] | None = None
    sse: bytes | None = None
    breaks: frozenset[str] = frozenset()
    model: str | None = None
    # whether ``items`` hold a template, and whether one reads the request (``compile_reply``
    # decides; a reply made otherwise is given what templates draw from and the request's
    # fields)
    templated: bool = field(default=True, init=False, repr=False, compare=False)
    # whether ``events`` or ``sse`` is the source, not ``items`` (decided when it is made)
    literal: bool = field(default=False, init=False, repr=False, compare=False)
    reads_request: bool = field(default=True, init=False, repr=False, compare=False)
    # how a request makes each item: (the ``items`` they were made for, one maker an item,
    # the plan itself when every item is made once: then the same plan answers every request)
    _makers: tuple[list[Any], tuple[ItemMaker, ...], ReplyPlan | None] | None = field(
        default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.literal = self.events is not None or self.sse is not None

    def literal_events(self) -> list[Json]:
        """The events of a literal reply (parsed from the SSE body when that is the source)."""
        if self.events is not None:
            return self.events
        assert self.sse is not None
        return list(json_events(parse_sse(self.sse)))

    def literal_frames(self, events: list[Json]) -> list[Frame] | None:
        """The literal SSE body as one frame, carrying ``events`` (its ``literal_events``)."""
        return [Frame(self.sse, events=tuple(events))] if self.sse is not None else None

    def plan(self, faker: Draws | None, request: Mapping[str, Any]) -> ReplyPlan:
        """The plan for one request: ``faker``, what its templates draw from (None when it has
        none: ``templated``), ``request``, the request's fields they may read."""
        makers = self._makers
        if makers is None or makers[0] is not self.items:  # decided once per item
            makers = self._makers = (self.items, tuple(_maker(spec) for spec in self.items),
                                     None)
        elif makers[2] is not None:  # every item made once: the plan too (plans are frozen)
            return makers[2]
        each = makers[1]
        # a ReplyPlan's fields, as ``ReplyPlan(...)`` sets them, without its __init__
        # (ormock.protocol.frozen)
        plan = made(ReplyPlan, items=[each[0](faker, request)] if len(each) == 1
                    else [make(faker, request) for make in each],
                    status=self.status, incomplete_reason=self.incomplete_reason,
                    error=self.error,
                    usage="auto" if isinstance(self.usage, dict) else self.usage,
                    chunking=self.chunking, queued=False)
        if all(type(make) is _Item and make.made is not None for make in each):
            self._makers = (makers[0], each, plan)
        return plan

    def build(
        self,
        faker: Draws,
        request: Mapping[str, Any],
        response: Json,
        ids: IdFactory,
        *,
        input_tokens: int,
        completed_at: int,
        openai_items: bool = False,
    ) -> list[Json]:
        """The events for one request: literal ones as written, or built from the items
        (OpenAI's tool items as ``openai_items`` says: ``ormock.protocol.tools.spelled``)."""
        if self.literal:
            return self.literal_events()
        events = build_events(spelled(self.plan(faker, request), openai_items), response, ids,
                              input_tokens=input_tokens, completed_at=completed_at)
        self.own_usage(events[-1]["response"])
        return events

    def own_usage(self, final: Json) -> None:
        """The step's ``usage:`` counts in the terminal snapshot ``final`` (in place), each
        count it does not give as counted."""
        if not isinstance(self.usage, dict):
            return
        counted = final["usage"]
        usage = usage_object(
            self.usage.get("input_tokens", counted["input_tokens"]),
            self.usage.get("output_tokens", counted["output_tokens"]),
            self.usage.get("reasoning_tokens",
                           counted["output_tokens_details"]["reasoning_tokens"]),
        )
        usage["input_tokens_details"]["cached_tokens"] = self.usage.get("cached_tokens", 0)
        final["usage"] = usage


def compile_reply(spec: Json) -> StepReply:
    """Compile a ``reply:`` mapping (already schema-valid). ``ValueError`` names the problem."""
    sources = [k for k in ("items", "events", "sse") if k in spec]
    if len(sources) > 1:
        raise ValueError(f"a reply has one source: items, events or sse (this one has "
                         f"{' and '.join(sources)})")
    pacing = None
    if "pacing" in spec:
        pacing = Pacing(**spec["pacing"])
    chunking = spec.get("chunking", "words")
    chunker(chunking)  # raises ValueError on a bad rule
    faults = []
    if spec.get("faults"):
        from ormock.faults import parse_fault

        faults = [parse_fault(f, f"faults[{i}]") for i, f in enumerate(spec["faults"])]
    status = spec.get("status", "completed")
    if status == "incomplete" and not spec.get("items") and not sources:
        raise ValueError("an incomplete reply needs at least one item (the one that ends "
                         "incomplete)")
    # with no items, a completed reply says "OK"; a failed one has no output
    default = [{"message": "OK"}] if status == "completed" and not sources else []
    items = _compile_tree(spec.get("items", default), ("items",))
    reply = StepReply(
        items=items,
        status=status,
        incomplete_reason=spec.get("incomplete_reason"),
        error=spec.get("error"),
        usage=spec.get("usage", "auto"),
        chunking=chunking,
        pacing=pacing,
        faults=faults,
        events=spec.get("events"),
        sse=spec["sse"].encode() if "sse" in spec else None,
        breaks=frozenset(spec.get("breaks", ())),
        model=spec.get("model"),
    )
    reply.templated, reply.reads_request = _templated(items), _reads_request(items)
    return reply
