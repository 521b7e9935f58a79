"""Drift: how two recordings of the same request differ in shape, not in value.

``outline`` reads one interaction's answer as its shape: the status, the kind of body (an SSE
stream, JSON, text, a WebSocket session), the headers that matter (the content type; the
rate-limit headers, present or absent), the SSE framing, the event types in order (a run of one
type, such as the deltas of a text, counted once), the output items with their content part
types, the fields of every event and every typed object (an object with a string ``type``, or
an ``object`` such as ``response``) as JSON paths with the JSON types seen there, whether the
events carry ``sequence_number``, and the end of the stream (the terminal event, ``[DONE]``,
how the body ended). An error envelope (a JSON body holding ``error``) is its own owner of
fields. Values are never compared, so ids, timestamps, text and usage numbers may differ.

``compare`` gives the ``Change``s between an old and a new outline; ``compare_interactions`` pairs
two lists of interactions in order (what ``ormock cassette diff`` and ``ormock drift`` report).
``Ignore`` leaves out what a user names: ``fnmatch`` patterns (``*`` is any run of characters,
dots too) matched against a field's path within its event or object (``obfuscation``,
``usage.*``), the same path with the event or object type in front
(``response.output_text.delta.obfuscation``, ``message.status``), an event type, or a header
name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any

from ormock.cassette.model import Interaction, RecordedResponse
from ormock.protocol.events import ERROR, TERMINAL_EVENTS

__all__ = ["Change", "Compared", "Ignore", "Outline", "compare", "compare_interactions",
           "outline"]

Fields = dict[str, dict[str, set[str]]]  # owner -> JSON path -> JSON types
_TERMINAL = frozenset({*TERMINAL_EVENTS, ERROR})
_ERROR_OWNER = "error envelope"


@dataclass(frozen=True)
class Ignore:
    """What a comparison leaves out (``fnmatch`` patterns, see the module's docstring)."""

    patterns: tuple[str, ...] = ()

    def __call__(self, *names: str) -> bool:
        return any(fnmatchcase(name, pattern) for pattern in self.patterns for name in names)


@dataclass(frozen=True)
class Outline:
    """The shape of one recorded answer."""

    kind: str  # "sse", "json", "error" (a JSON error envelope), "text", "empty", "websocket"
    status: int | None = None
    content_type: str | None = None
    rate_limits: frozenset[str] = frozenset()  # rate-limit header names present
    framing: str | None = None  # an SSE stream's framing style (``event+data``, ``data``)
    events: tuple[str, ...] = ()  # event types in order, runs collapsed
    items: tuple[str, ...] = ()  # output item types, each with its content part types
    fields: Mapping[str, Mapping[str, frozenset[str]]] = field(default_factory=dict)
    sequence: str | None = None  # where sequence_number is: "on every event", "on no event"
    terminal: str | None = None  # the terminal event's type (None: none came)
    done: bool | None = None  # the stream ended with ``data: [DONE]``
    ended: str | None = None  # how the body ended (``whole``, ``closed``, ...)


@dataclass(frozen=True)
class Change:
    """One difference of shape: ``kind`` (``status``, ``field added``, ...), ``where`` (the
    field's owner and path, the header, ...), and what it was and is (None: absent)."""

    kind: str
    where: str
    old: str | None = None
    new: str | None = None

    def __str__(self) -> str:
        head = self.kind if self.where == self.kind else f"{self.kind}: {self.where}"
        if self.old is None or self.new is None:  # added or removed: what it has, if any
            said = self.new if self.old is None else self.old
            return head + (f" ({said})" if said else "")
        return f"{head}: {self.old} -> {self.new}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "where": self.where, "old": self.old, "new": self.new,
                "message": str(self)}


@dataclass(frozen=True)
class Compared:
    """One interaction of a comparison: where it is, and its changes; ``note`` says why it was
    not compared (a request never replayed, an interaction only one side has)."""

    index: int  # 1-based, in the old cassette
    method: str
    path: str
    line: int | None = None
    changes: tuple[Change, ...] = ()
    note: str | None = None

    @property
    def label(self) -> str:
        where = f" (line {self.line})" if self.line is not None else ""
        return f"interaction {self.index}{where}: {self.method} {self.path}"

    def to_dict(self) -> dict[str, Any]:
        return {"interaction": self.index, "line": self.line, "method": self.method,
                "path": self.path, "changes": [c.to_dict() for c in self.changes],
                "note": self.note}


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "null"


def _label(value: Any, key: str) -> str | None:
    """The type of a typed object (an item, a part, a response), or None."""
    if not isinstance(value, dict) or key == "error":
        return None
    for name in ("type", "object"):
        if isinstance(value.get(name), str):
            return str(value[name])
    return None


class _Walker:
    def __init__(self, ignore: Ignore) -> None:
        self.ignore = ignore
        self.fields: Fields = {}

    def walk(self, value: Any, owner: str, name: str, path: str = "") -> None:
        """Note ``value``'s fields under ``owner`` (named ``name`` for ``Ignore``)."""
        items: Iterable[tuple[str, Any]]
        if isinstance(value, dict):
            items = ((f"{path}.{key}" if path else str(key), child)
                     for key, child in value.items())
        elif isinstance(value, list):
            items = ((f"{path}[*]", child) for child in value)
        else:
            return
        for child_path, child in items:
            if (owner.startswith("event ") and child_path == "sequence_number") \
                    or self.ignore(child_path, f"{name}.{child_path}"):
                continue
            self.fields.setdefault(owner, {}).setdefault(child_path, set()).add(
                _json_type(child))
            key = child_path.rsplit(".", 1)[-1]
            label = _label(child, key)
            if label is not None:
                self.walk(child, f"object {label}", label)
            else:
                self.walk(child, owner, name, child_path)


def _item_outline(item: Any) -> str:
    if not isinstance(item, dict):
        return _json_type(item)
    kind = str(item.get("type") or item.get("object") or "object")
    parts = [str(p.get("type")) for key in ("content", "summary")
             if isinstance(item.get(key), list) for p in item[key] if isinstance(p, dict)]
    return f"{kind}({', '.join(parts)})" if parts else kind


def _output(document: Any) -> list[Any] | None:
    if isinstance(document, dict) and isinstance(document.get("output"), list):
        return list(document["output"])
    return None


def _items(events: Sequence[dict[str, Any]], body: Any = None) -> tuple[str, ...]:
    """The output items of the final response (the terminal event's, else each
    ``output_item.done``'s; a JSON body's own)."""
    if body is not None:
        return tuple(_item_outline(i) for i in _output(body) or ())
    for event in reversed(events):
        output = _output(event.get("response"))
        if event.get("type") in TERMINAL_EVENTS and output is not None:
            return tuple(_item_outline(i) for i in output)
    return tuple(_item_outline(e.get("item")) for e in events
                 if e.get("type") == "response.output_item.done")


def _collapsed(types: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for name in types:
        if not out or out[-1] != name:
            out.append(name)
    return tuple(out)


def _frozen(fields: Fields) -> dict[str, dict[str, frozenset[str]]]:
    return {owner: {path: frozenset(types) for path, types in paths.items()}
            for owner, paths in fields.items()}


def _header(headers: Mapping[str, str | list[str]], name: str) -> str | None:
    value = headers.get(name)
    if isinstance(value, list):
        value = value[0] if value else None
    return value


def _is_rate_limit(name: str) -> bool:
    return name.startswith(("x-ratelimit-", "ratelimit")) or name in ("retry-after",
                                                                       "retry-after-ms")


def _events_outline(events: list[dict[str, Any]], walker: _Walker) -> dict[str, Any]:
    ignore = walker.ignore
    kept = [e for e in events if not ignore(str(e.get("type")))]
    for event in kept:
        walker.walk(event, f"event {event.get('type')}", str(event.get("type")))
    numbered = sum(1 for e in kept if "sequence_number" in e)
    sequence = None if not kept else "on every event" if numbered == len(kept) \
        else "on no event" if numbered == 0 else "on some events"
    terminal = next((str(e["type"]) for e in reversed(kept) if e.get("type") in _TERMINAL),
                    None)
    return {"events": _collapsed(str(e.get("type")) for e in kept), "sequence": sequence,
            "terminal": terminal, "items": _items(kept)}


def _response_outline(response: RecordedResponse, walker: _Walker) -> Outline:
    ignore = walker.ignore
    media = _header(response.headers, "content-type")
    rate = frozenset(n for n in response.headers if _is_rate_limit(n) and not ignore(n))
    base: dict[str, Any] = {
        "status": response.status, "rate_limits": rate, "ended": response.ended,
        "content_type": None if media is None or ignore("content-type")
        else media.split(";")[0].strip().lower()}
    if response.messages is not None:
        events = [m.event for m in response.messages if isinstance(m.event, dict)]
        return Outline("sse", framing=response.style,
                       done=any(m.done for m in response.messages),
                       **_events_outline(events, walker), **base,
                       fields=_frozen(walker.fields))
    body = response.body
    if body is None or (body.json is None and not body.raw and not body.binary):
        return Outline("empty", **base)
    if not body.is_json:
        return Outline("text", **base)
    document = body.json
    label = _label(document, "")
    if label is None and isinstance(document, dict) and isinstance(document.get("error"), dict):
        walker.walk(document, _ERROR_OWNER, "")
        return Outline("error", fields=_frozen(walker.fields), **base)
    walker.walk(document, f"object {label}" if label else "body", label or "")
    return Outline("json", items=_items([], document), fields=_frozen(walker.fields), **base)


def outline(interaction: Interaction, ignore: Ignore = Ignore()) -> Outline:
    """The shape of ``interaction``'s answer."""
    walker = _Walker(ignore)
    if interaction.response is not None:
        return _response_outline(interaction.response, walker)
    session = interaction.socket
    events = [f.event for f in session.frames if f.sender == "server"
              and isinstance(f.event, dict)] if session is not None else []
    return Outline("websocket", **_events_outline(events, walker),
                   ended=None if session is None or session.close_code is None
                   else f"close {session.close_code} by {session.closed_by}",
                   fields=_frozen(walker.fields))


def _types(types: frozenset[str] | None) -> str | None:
    return None if types is None else "|".join(sorted(types))


def _type_changed(old: frozenset[str], new: frozenset[str]) -> bool:
    """Not when only ``null`` differs and both sides have another type (a nullable field)."""
    if old == new:
        return False
    return not (old - {"null"} and old - {"null"} == new - {"null"})


def _fields(old: Outline, new: Outline) -> list[Change]:
    changes: list[Change] = []
    outlined = {part.strip(") ") for side in (old, new) for item in side.items
                for part in item.replace("(", ",").split(",")}
    for owner in sorted(set(old.fields) | set(new.fields)):
        before, after = old.fields.get(owner), new.fields.get(owner)
        if before is None or after is None:
            # a new or gone event is told as such; a new or gone item or part type too
            name = owner.removeprefix("object ")
            if owner.startswith("object ") and name not in outlined:
                fields = ", ".join(sorted(after or before or {}))
                changes.append(Change("object removed", name, fields) if after is None
                               else Change("object added", name, None, fields))
            continue
        for path in sorted(set(before) | set(after)):
            was, now = before.get(path), after.get(path)
            where = f"{owner}: {path}"
            if was is None:
                changes.append(Change("field added", where, None, _types(now)))
            elif now is None:
                changes.append(Change("field removed", where, _types(was), None))
            elif _type_changed(was, now):
                changes.append(Change("field type changed", where, _types(was), _types(now)))
    return changes


def _events(old: Outline, new: Outline) -> list[Change]:
    """Event types only one side has, each named once; then the order of the others (runs
    collapsed again once those are out: deltas an added event split are still one run)."""
    before, after = set(old.events), set(new.events)
    changes = [Change("event added", name) for name in dict.fromkeys(new.events)
               if name not in before]
    changes += [Change("event removed", name) for name in dict.fromkeys(old.events)
                if name not in after]
    common_old = _collapsed(n for n in old.events if n in after)
    common_new = _collapsed(n for n in new.events if n in before)
    if common_old != common_new:
        changes.append(Change("event order", "event order", " ".join(common_old),
                              " ".join(common_new)))
    return changes


def _said(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, tuple):
        return "[" + ", ".join(value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


def compare(old: Outline, new: Outline) -> list[Change]:
    """The changes of shape from ``old`` to ``new``: status, kind of body, headers, SSE
    framing, events, items, fields, ``sequence_number``, the end. Once the kind of body
    differs (a stream became a JSON error), only what both kinds have is compared."""
    changes = [Change(name, name, _said(getattr(old, attr)) or "none",
                      _said(getattr(new, attr)) or "none")
               for name, attr in (("status", "status"), ("body", "kind"),
                                  ("content-type", "content_type"))
               if getattr(old, attr) != getattr(new, attr)]
    changes += [Change("header added", name) for name in sorted(new.rate_limits
                                                                - old.rate_limits)]
    changes += [Change("header removed", name) for name in sorted(old.rate_limits
                                                                  - new.rate_limits)]
    if old.kind != new.kind:
        return changes
    if old.framing != new.framing:
        changes.append(Change("sse framing", "sse framing", old.framing, new.framing))
    changes += _events(old, new)
    if old.items != new.items:
        changes.append(Change("output items", "output items", _said(old.items), _said(new.items)))
    changes += _fields(old, new)
    for name, attr in (("sequence_number", "sequence"), ("terminal event", "terminal"),
                       ("[DONE]", "done"), ("ended", "ended")):
        was, now = getattr(old, attr), getattr(new, attr)
        if was != now:
            changes.append(Change(name, name, _said(was) or "none", _said(now) or "none"))
    return changes


def compare_interactions(old: Sequence[Interaction], new: Sequence[Interaction | None],
                         ignore: Ignore = Ignore(),
                         notes: Mapping[int, str] | None = None) -> list[Compared]:
    """Each old interaction against the new one at its place (None, or a ``notes`` entry: not
    compared, the note says why); new interactions past the old ones are ``interaction
    added``, old ones past the new ``interaction removed``."""
    out: list[Compared] = []
    notes = notes or {}
    for index in range(max(len(old), len(new))):
        source = old[index] if index < len(old) else new[index]
        assert source is not None  # past the old ones, the new ones are given
        request = source.request
        base = Compared(index + 1, request.method, request.target, source.line)
        if index >= len(old):
            out.append(replace(base, changes=(Change("interaction added",
                                                         f"interaction {index + 1}"),)))
            continue
        now = new[index] if index < len(new) else None
        if index in notes or (now is None and index < len(new)):
            out.append(replace(base, note=notes.get(index, "not compared")))
            continue
        if now is None:
            out.append(replace(base, changes=(Change("interaction removed",
                                                         f"interaction {index + 1}"),)))
            continue
        changes = compare(outline(old[index], ignore), outline(now, ignore))
        if (now.request.method, now.request.path) != (request.method, request.path):
            changes.insert(0, Change("request", "request", f"{request.method} {request.path}",
                                     f"{now.request.method} {now.request.path}"))
        out.append(replace(base, changes=tuple(changes)))
    return out
