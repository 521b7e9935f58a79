"""Replies compiled into byte templates: a new content's reply is a fill, not a build.

What a new content over HTTP sends (``building.fresh``) is, for the replies most requests get
(the embedded default's message, a scenario step's templated message), the same bytes every
time but for a few values: the ids, the two timestamps, the message's text, the usage counts
and, in a stream, the deltas (their number moves the sequence numbers after them). So the
reply is built once per shape, with a sentinel standing for each of those values
(``build_final``/``build_frames`` and ``Framed``, the very code of a build), and its bytes cut
at the sentinels into ``ByteTemplate``s (``ormock.engine.byte_template``, where the stream
cache cuts its bytes too); a request fills the slots: its JSON body (or its stream's frames
before and after the deltas, and its deltas framed from its text by ``delta_frames``) and the
final Response's JSON (which a stream's terminal event holds as it is: filled once, its frames
around it), with the journal summary made of precomputed event types. The bytes, summary, ids
(drawn in the same order) and stored response are a build's.

A template is keyed by everything else the bytes depend on: the step (its own usage), the
profile (event names, estimated usage), the stream flag, the plan's shape and the echo (the
request fields the Response repeats: ``echo_key``, its values as they are when strings or null,
any other as JSON, so that the key is equal exactly when the echo's JSON is). It is compiled
the second time its key is seen, so a one-off echo never pays for a compile; ``Compiled`` keeps
a few hundred, the least recently used dropped. A plan of any other shape (tools, reasoning,
several items or parts, annotations, fixed ids, a failed status) is built as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ormock.engine.bounded import Bounded
from ormock.engine.byte_template import ByteTemplate, Slot
from ormock.engine.journal import Sent
from ormock.protocol import events as ev
from ormock.protocol.ids import IdFactory
from ormock.protocol.plan import MessagePlan, ReplyPlan, TextPart
from ormock.protocol.profile import Profile
from ormock.protocol.response import new_response, usage_object
from ormock.protocol.sse import DONE_FRAME, Framed, delta_frames, encode_json
from ormock.protocol.stream import build_final, build_frames
from ormock.protocol.text_cuts import DeltaFormat, plain, tokens, usage_format
from ormock.protocol.tokens import chunker, count_tokens
from ormock.protocol.types import Json
from ormock.scenario.replies import StepReply

__all__ = ["Compiled", "Template", "echo_key", "final_usage", "shape_of"]

_MARK = "@ormock-slot-"
# a sentinel as the bytes hold it: quoted values (c created_at, d completed_at, t the text,
# u usage, q a sequence number after the deltas) replaced quotes and all; ids inside their quotes
_SLOT = re.compile(rb'"@ormock-slot-([cdtuq])(\d*)@"|@ormock-slot-i(\d+)@')
_TEXT, _CREATED, _COMPLETED, _USAGE = (f"{_MARK}{k}@" for k in "tcdu")
_USAGE_FORMAT = usage_format()  # a counted usage's JSON: % (input, output, total)
_tuple_new = tuple.__new__


def final_usage(step_reply: StepReply | None, profile: Profile, final: Json) -> None:
    """The terminal snapshot's usage (in place): a step's own counts, or none when the profile
    sends only a reply's own."""
    if step_reply is not None:
        step_reply.own_usage(final)
    if not profile.estimated_usage and (step_reply is None
                                        or not isinstance(step_reply.usage, dict)):
        final["usage"] = None


def shape_of(plan: ReplyPlan) -> Hashable | None:
    """What the bytes of a plan's reply depend on besides its text, when a template can hold
    it: one message of one text part with no annotations, its id drawn, completed or
    incomplete, usage counted or null. None: any other plan (it is built)."""
    if len(plan.items) != 1 or plan.queued or plan.status == "failed" or \
            plan.usage not in ("auto", None):
        return None
    item = plan.items[0]
    if type(item) is not MessagePlan or item.id is not None or len(item.parts) != 1:
        return None
    part = item.parts[0]
    if type(part) is not TextPart or part.annotations:
        return None
    return (plan.status, plan.incomplete_reason, plan.usage, plan.chunking, item.role,
            item.phase)


class _Sentinels:
    """An id factory handing out sentinels, remembering the prefixes asked for, in order."""

    def __init__(self) -> None:
        self.prefixes: list[str] = []

    def new(self, prefix: str) -> str:
        self.prefixes.append(prefix)
        return f"{_MARK}i{len(self.prefixes) - 1}@"


def _slot(ids: int, match: re.Match[bytes]) -> Slot:
    """A sentinel's slot: its conversion, and where its value is among a fill's values (laid
    out as ``Template.values``)."""
    kind = (match.group(1) or b"i").decode()
    number = int(match.group(2) or match.group(3) or 0)
    if kind == "i":
        return b"%s", number
    if kind == "q":
        return b"%d", ids + 4 + number
    return b"%d" if kind in "cd" else b"%s", ids + "cdtu".index(kind)


def _cut(raw: bytes, ids: int) -> ByteTemplate:
    """A reply's bytes built with sentinels, cut at them (``ids``: how many ids it drew)."""
    return ByteTemplate.cut(raw, _SLOT, partial(_slot, ids))


@dataclass(frozen=True)
class Template:
    """A compiled reply. ``values`` of a fill: the ids, created_at, completed_at, the text's
    JSON, the usage JSON, then the sequence numbers of the events after the deltas."""

    prefixes: tuple[str, ...]
    final: ByteTemplate
    head: ByteTemplate | None  # a stream's frames before the deltas, and after them
    tail: ByteTemplate | None
    closing: bytes | None  # the tail ends with the final Response's JSON, then this
    first: int  # the sequence number of the first delta
    kind: str  # the deltas' wire type
    message: int  # which id is the message's
    chunk: Callable[[str], list[str]]
    by_words: bool  # the ``words`` chunking (a plain text's deltas are its words)
    deltas: DeltaFormat
    before: tuple[str, ...]  # the journal's event types before the deltas, and after them
    after: tuple[str, ...]
    delta: str
    counted: bool  # usage counted (False: null)
    own: StepReply | None  # the step whose own ``usage:`` counts a fill lays over the counted
    status: str
    store: bool
    completed: bool
    # the journal's event types and numbers by number of deltas (a few counts recur)
    kinds: dict[int, tuple[tuple[str, ...], tuple[int, ...]]] = field(default_factory=dict)

    def fill(self, ids: IdFactory, part: TextPart, created: int, completed: int,
             input_tokens: int) -> tuple[bytes, bytes, Sent, list[str]]:
        """This reply with ``part``'s text: the body, the final Response's JSON (the body
        itself, for JSON: one encoding, the store keeps the same bytes), the journal summary
        and the ids, all drawn here at once (``IdFactory.many``) in the build's order, the
        response id first. A JSON reply makes no event and no frame: its body is the final
        format filled from the same values as a stream's frames."""
        fresh = ids.many(self.prefixes)
        text, cut = part.text, part.cut
        if cut is not None:  # its writer cut it already (a plain text)
            words: list[str] | None
            words, output = cut
        else:  # cut at its spaces, or by the rules
            words, output = text.split(" ") if plain(text) else None, -1
        pieces = None
        if words is not None and self.by_words:
            deltas = len(words)
        else:
            pieces = self.chunk(text)
            deltas = len(pieces)
        usage = b"null"
        if self.counted:
            if output < 0:
                output = tokens(words) if words is not None else count_tokens(text)
            if self.own is None:  # counted: the usage JSON's format filled
                usage = _USAGE_FORMAT % (input_tokens, output, input_tokens + output)
            else:
                final = {"usage": usage_object(input_tokens, output)}
                self.own.own_usage(final)
                usage = encode_json(final["usage"]).encode()
        values: list[Any] = [*map(str.encode, fresh), created, completed,
                             b'"%s"' % text.encode() if words is not None
                             else encode_json(text).encode(), usage]
        head, tail = self.head, self.tail
        if head is None or tail is None:  # JSON: the final Response is the body
            body = raw = self.final.fill(values)
        else:
            start = self.first + deltas
            values += range(start, start + len(self.after))  # the numbers after the deltas
            raw = self.final.fill(values)
            if pieces is None:
                assert words is not None
                framed = self.deltas.frames(self.first, fresh[self.message], words)
            else:
                framed = b"".join(delta_frames(self.kind, self.first, fresh[self.message], 0, 0,
                                               pieces))
            body = b"".join([head.fill(values), framed, tail.fill(values),
                             *((raw, self.closing) if self.closing is not None else ()),
                             DONE_FRAME])
        kinds = self.kinds.get(deltas)
        if kinds is None:  # the types and numbers of a reply of this many deltas, made once
            if len(self.kinds) >= 64:
                self.kinds.clear()
            types = (*self.before, *(self.delta,) * deltas, *self.after)
            kinds = self.kinds[deltas] = (types, tuple(range(len(types))))
        # ``Sent(...)`` through ``tuple.__new__``, as for every new content (its one output:
        # the message's id)
        summary = _tuple_new(Sent, (kinds[0], kinds[1], None, (fresh[self.message],)))
        return body, raw, summary, fresh


def compile_reply(plan: ReplyPlan, echo: Json, profile: Profile, step_reply: StepReply | None,
                  stream: bool) -> Template | None:
    """The template of ``plan``'s reply (``shape_of`` it first), built once with sentinels;
    None when the echo holds a sentinel's mark (never in practice: then it is built)."""
    if _MARK.encode() in encode_json(echo).encode():
        return None
    message = plan.items[0]
    assert isinstance(message, MessagePlan)
    probe = replace(plan, items=[replace(message, parts=(TextPart(_TEXT),))])
    sentinels = _Sentinels()
    snapshot = new_response(sentinels.new("resp"), _CREATED, echo)  # type: ignore[arg-type]
    names = profile.event_names
    completed: Any = _COMPLETED
    head = tail = closing = None
    first = 0
    if stream:
        parts, final, types = build_frames(probe, snapshot, sentinels,  # type: ignore[arg-type]
                                           completed_at=completed, names=names)
    else:
        final, types = build_final(probe, snapshot, sentinels,  # type: ignore[arg-type]
                                   completed_at=completed)
    final_usage(step_reply, profile, final)
    counted = final["usage"] is not None
    if counted:
        final["usage"] = _USAGE
    at = [n for n, kind in enumerate(types) if kind == ev.TEXT_DELTA]
    first, end = (at[0], at[-1] + 1) if at else (0, 0)
    if not at or at != list(range(first, end)):
        return None
    chunk = chunker(plan.chunking)
    kind = names.get(ev.TEXT_DELTA, ev.TEXT_DELTA)
    msg = sentinels.prefixes.index("msg")
    ids = len(sentinels.prefixes)
    if stream:
        expected = delta_frames(kind, first, f"{_MARK}i{msg}@", 0, 0, chunk(_TEXT))
        if parts[first:end] != expected or any(type(p) is bytes for p in parts[:first]
                                               + parts[end:]):
            return None
        for number, part in enumerate(parts[end:]):
            assert isinstance(part, dict)
            part["sequence_number"] = f"{_MARK}q{number}@"
        for part in parts:
            if type(part) is dict and names:
                part["type"] = names.get(part["type"], part["type"])
        head = _cut(b"".join(Framed(parts[:first]).frames), ids)
        after = b"".join(Framed(parts[end:]).frames)
        # the terminal event holds the final Response's JSON as it is: filled once, for the
        # store and the stream
        final_raw, ends = encode_json(final).encode(), b"}\n\n"
        if after.endswith(final_raw + ends):
            after, closing = after[:-len(final_raw) - len(ends)], ends
        tail = _cut(after, ids)
    outputs = [v for item in final["output"] for k in ("id", "call_id")
               if isinstance(v := item.get(k), str)]
    if outputs != [f"{_MARK}i{msg}@"]:  # the summary's output ids: the message's only
        return None
    renamed = [names.get(t, t) for t in types]
    return Template(
        prefixes=tuple(sentinels.prefixes), final=_cut(encode_json(final).encode(), ids),
        head=head, tail=tail, closing=closing, first=first, kind=kind, message=msg, chunk=chunk,
        by_words=chunk is chunker("words"), deltas=DeltaFormat(kind, 0, 0),
        before=tuple(renamed[:first]), after=tuple(renamed[end:]), delta=kind,
        counted=counted,
        own=step_reply if step_reply is not None and isinstance(step_reply.usage, dict) else None,
        status=str(final["status"]),
        store=bool(final.get("store", True)), completed=final.get("completed_at") is not None)


def echo_key(echo: Json) -> tuple[Any, ...]:
    """The echo as a key part, equal for two echoes exactly when their JSON is: its keys in
    order, then each value as it is when a string or null (the usual ones), an empty list as
    ``()``, any other value as ``("", its JSON)`` (``1``, ``1.0``, ``true`` and ``-0.0`` compare
    equal in Python, not on the wire). Made instead of the whole echo's JSON, because a new
    content's request has a new echo every time."""
    out: list[Any] = [*echo]
    for value in echo.values():
        if value is None or value.__class__ is str:
            out.append(value)
        elif value.__class__ is list and not value:
            out.append(())
        else:
            out.append(("", encode_json(value)))
    return tuple(out)


class Compiled:
    """Templates by key, each compiled the second time its key is seen; the least recently
    used dropped past ``size``. Used under its engine's lock, which ``Engine.answer`` holds
    around ``respond`` (the one caller of ``template``), so it has no lock of its own.

    A key holds the step and the profile by ``id`` (hashed and compared in C) and its entry
    holds the two objects, so that neither id can come back as another object's while the key
    is there."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        # key -> (the template, or None when seen once; the step and the profile, kept alive)
        self._templates: Bounded[Hashable, tuple[Template | None, object, object]] = \
            Bounded(size)

    def template(self, plan: ReplyPlan, echo: Json, profile: Profile,
                 step_reply: StepReply | None, stream: bool) -> Template | None:
        """The template of this reply, or None: not of a shape a template holds, or its key
        seen for the first time (built, and compiled when seen again)."""
        shape = shape_of(plan)
        if shape is None:
            return None
        key = (id(step_reply), id(profile), stream, shape, echo_key(echo))
        templates = self._templates
        entry = templates.get(key)  # a use: the most recent now
        if entry is None:  # seen for the first time
            templates[key] = (None, step_reply, profile)
            return None
        if entry[0] is not None:
            return entry[0]
        template = compile_reply(plan, echo, profile, step_reply, stream)
        if template is not None:
            templates[key] = (template, step_reply, profile)
        return template

    def compiled(self) -> list[Template]:
        """The templates compiled, in the order they were compiled (or first seen), oldest
        first."""
        return [t for _, (t, _, _) in self._templates.entries() if t is not None]

    def clear(self) -> None:
        self._templates.clear()
