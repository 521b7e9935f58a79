"""The protocol as code: fold a stream of events into the final Response, checking every rule.

``check_stream`` takes raw SSE bytes, parsed messages, or event dicts and returns a report: the
folded Response and every rule the stream broke, each with a rule id, the event index, the SSE line
(for raw input) and a one-line reason. ``fold_events`` is the same fold for a stream that must be
valid: it builds the JSON body of every non-streaming reply.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ormock.sse import SSEMessage, parse_sse

from . import events as ev
from .schema import schema_errors

__all__ = ["RULES", "ProtocolError", "StreamReport", "Violation", "check_stream", "fold_events"]

Json = dict[str, Any]

RULES: dict[str, str] = {
    "first-event": "the first event is response.created",
    "event-type-mismatch": "the SSE event: line equals the JSON type",
    "sequence-number": "sequence_number is an integer that increases by one",
    "unknown-event": "core event types are known ones; extensions carry a vendor prefix",
    "order": "each event may follow the one before it (the streaming state machine)",
    "delta-before-added": "deltas come after their output_item.added and content_part.added",
    "index-mismatch": "output_index, item_id, content_index and summary_index line up",
    "done-mismatch": ".done text, arguments and parts equal what the deltas built",
    "item-open": "every item is done before response.completed or response.incomplete",
    "terminal-count": "exactly one terminal event: completed, incomplete or failed",
    "incomplete-item": "an incomplete item is the last one, in an incomplete response",
    "response-id": "every snapshot carries the same response id",
    "snapshot-mismatch": "the terminal snapshot agrees with its event type and the folded output",
    "schema": "each payload is valid under the official Open Responses schema",
    "after-done": "nothing follows data: [DONE]",
    "no-done": "the stream ends with data: [DONE]",
    "sse-invalid-json": "each data line is valid JSON",
    "sse-crlf": "lines end with LF, not CRLF or CR",
    "sse-multiline-data": "each event's JSON is on one data line",
    "sse-missing-blank-line": "every event ends with a blank line",
    "sse-id-line": "servers send no id: lines",
}

_TERMINALS = frozenset(ev.TERMINAL_EVENTS)
_ALLOWED: dict[str | None, frozenset[str]] = {
    None: frozenset({ev.CREATED}),
    ev.CREATED: frozenset({ev.QUEUED, ev.IN_PROGRESS}),
    ev.QUEUED: frozenset({ev.IN_PROGRESS}),
    ev.IN_PROGRESS: frozenset({ev.ITEM_ADDED, *_TERMINALS}),
    ev.ITEM_ADDED: frozenset(
        {ev.PART_ADDED, ev.ARGS_DELTA, ev.ARGS_DONE, ev.SUMMARY_PART_ADDED, ev.ITEM_DONE}
    ),
    ev.PART_ADDED: frozenset(
        {
            ev.TEXT_DELTA, ev.TEXT_DONE, ev.ANNOTATION_ADDED, ev.REFUSAL_DELTA,
            ev.REFUSAL_DONE, ev.REASONING_DELTA, ev.REASONING_DONE, ev.PART_DONE,
        }
    ),
    ev.TEXT_DELTA: frozenset({ev.TEXT_DELTA, ev.TEXT_DONE, ev.ANNOTATION_ADDED}),
    ev.ANNOTATION_ADDED: frozenset({ev.ANNOTATION_ADDED, ev.TEXT_DELTA, ev.TEXT_DONE}),
    ev.TEXT_DONE: frozenset({ev.PART_DONE}),
    ev.REFUSAL_DELTA: frozenset({ev.REFUSAL_DELTA, ev.REFUSAL_DONE}),
    ev.REFUSAL_DONE: frozenset({ev.PART_DONE}),
    ev.REASONING_DELTA: frozenset({ev.REASONING_DELTA, ev.REASONING_DONE}),
    ev.REASONING_DONE: frozenset({ev.PART_DONE}),
    ev.PART_DONE: frozenset({ev.PART_ADDED, ev.ITEM_DONE}),
    ev.ARGS_DELTA: frozenset({ev.ARGS_DELTA, ev.ARGS_DONE}),
    ev.ARGS_DONE: frozenset({ev.ITEM_DONE}),
    ev.SUMMARY_PART_ADDED: frozenset({ev.SUMMARY_DELTA, ev.SUMMARY_DONE}),
    ev.SUMMARY_DELTA: frozenset({ev.SUMMARY_DELTA, ev.SUMMARY_DONE}),
    ev.SUMMARY_DONE: frozenset({ev.SUMMARY_PART_DONE}),
    ev.SUMMARY_PART_DONE: frozenset({ev.SUMMARY_PART_ADDED, ev.PART_ADDED, ev.ITEM_DONE}),
    ev.ITEM_DONE: frozenset({ev.ITEM_ADDED, *_TERMINALS}),
    ev.ERROR: frozenset({ev.FAILED}),
}
# content-level events: type -> (the field naming the part's index, the parts' collection)
_PART_EVENTS = {
    ev.PART_ADDED: "content",
    ev.PART_DONE: "content",
    ev.TEXT_DELTA: "content",
    ev.TEXT_DONE: "content",
    ev.ANNOTATION_ADDED: "content",
    ev.REFUSAL_DELTA: "content",
    ev.REFUSAL_DONE: "content",
    ev.REASONING_DELTA: "content",
    ev.REASONING_DONE: "content",
    ev.SUMMARY_PART_ADDED: "summary",
    ev.SUMMARY_PART_DONE: "summary",
    ev.SUMMARY_DELTA: "summary",
    ev.SUMMARY_DONE: "summary",
}


class ProtocolError(ValueError):
    """A stream that cannot be folded into a Response; ``violations`` says why."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        super().__init__("; ".join(str(v) for v in violations) or "not a valid stream")


@dataclass(frozen=True)
class Violation:
    rule: str
    index: int | None
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"event {self.index}" if self.index is not None else "stream"
        if self.line is not None:
            where += f" (line {self.line})"
        return f"{self.rule} at {where}: {self.message}"


@dataclass
class StreamReport:
    events: list[Json] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    response: Json | None = None
    done: bool = False

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def rules(self) -> set[str]:
        return {v.rule for v in self.violations}


@dataclass
class _Part:
    type: str
    text: str = ""
    deltas: int = 0
    done: bool = False
    annotations: list[Json] = field(default_factory=list)


@dataclass
class _Item:
    id: str | None
    type: str
    content: dict[int, _Part] = field(default_factory=dict)
    summary: dict[int, _Part] = field(default_factory=dict)
    arguments: str = ""
    deltas: int = 0
    final: Json | None = None


class _Checker:
    def __init__(self, schema: bool) -> None:
        self.schema = schema
        self.report = StreamReport()
        self.prev: str | None = None
        self.seq: int | None = None
        self.response_id: str | None = None
        self.items: list[_Item] = []
        self.terminal: Json | None = None
        self.terminals = 0
        self.index = -1
        self.line: int | None = None
        self.incomplete_at: int | None = None

    def flag(self, rule: str, message: str, ahead: int = 0) -> None:
        """Record a violation at the current event (``ahead=1``: at the one about to come)."""
        self.report.violations.append(Violation(rule, self.index + ahead, message, self.line))

    # -- one event ---------------------------------------------------------------------------
    def event(self, event: Any) -> None:
        self.index += 1
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            self.report.events.append(event if isinstance(event, dict) else {"value": event})
            self.flag("schema", "an event is a JSON object with a string 'type'")
            return
        self.report.events.append(event)
        type_ = event["type"]
        self._sequence(event)
        if self.report.done:
            self.flag("after-done", f"{type_} after data: [DONE]")
        if ev.is_vendor_type(type_):
            if self.index == 0:
                self.flag("first-event", f"the stream starts with {type_}, not response.created")
            elif self.terminals:
                self.flag("order", f"{type_} after the terminal event")
            return
        if type_ not in ev.CORE_EVENT_TYPES:
            self.flag(
                "unknown-event",
                f"{type_!r} is not an Open Responses event (extensions need a vendor prefix, "
                "as in 'acme:trace')",
            )
            return
        if self.schema:
            problem = schema_errors(event)
            if problem:
                self.flag("schema", f"{type_}: {problem}")
        before = len(self.report.violations)
        self._state(type_, event)
        specific = len(self.report.violations) > before
        self._order(type_, specific)
        self.prev = type_

    def _sequence(self, event: Json) -> None:
        number = event.get("sequence_number")
        if not isinstance(number, int) or isinstance(number, bool):
            self.flag("sequence-number", f"{event['type']} has no integer sequence_number")
            return
        if self.seq is not None and number != self.seq + 1:
            self.flag("sequence-number", f"sequence_number {number} follows {self.seq}")
        self.seq = number

    def _order(self, type_: str, specific: bool) -> None:
        if self.index == 0 and type_ != ev.CREATED:
            self.flag("first-event", f"the stream starts with {type_}, not response.created")
            return
        if type_ in _TERMINALS and self.terminals > 1:
            return  # reported as terminal-count
        allowed = _ALLOWED.get(self.prev, frozenset())
        if self.prev not in _TERMINALS and self.prev != ev.ERROR and type_ == ev.ERROR:
            return
        if type_ not in allowed and not specific and self.index > 0:
            expected = ", ".join(sorted(allowed)) or "nothing but data: [DONE]"
            self.flag("order", f"{type_} cannot follow {self.prev} (expected {expected})")

    # -- item and part bookkeeping (the fold) -------------------------------------------------
    def _state(self, type_: str, event: Json) -> None:
        if type_ in ev.LIFECYCLE_EVENTS:
            self._snapshot(type_, event)
        elif type_ == ev.ITEM_ADDED:
            self._item_added(event)
        elif type_ == ev.ITEM_DONE:
            self._item_done(event)
        elif type_ in _PART_EVENTS:
            self._part_event(type_, event)
        elif type_ in (ev.ARGS_DELTA, ev.ARGS_DONE):
            self._arguments(type_, event)

    def _snapshot(self, type_: str, event: Json) -> None:
        response = event.get("response")
        if not isinstance(response, dict):
            return  # the schema rule names it
        rid = response.get("id")
        if self.response_id is None:
            self.response_id = rid
        elif rid != self.response_id:
            self.flag("response-id", f"{type_} carries id {rid!r}, not {self.response_id!r}")
        if type_ not in _TERMINALS:
            return
        self.terminals += 1
        if self.terminals > 1:
            self.flag("terminal-count", f"a second terminal event: {type_}")
            return
        self.terminal = response
        status = ev.TERMINAL_EVENTS[type_]
        if response.get("status") != status:
            self.flag(
                "snapshot-mismatch",
                f"{type_} carries status {response.get('status')!r}, not {status!r}",
            )
        if type_ != ev.FAILED:
            for index, item in enumerate(self.items):
                if item.final is None:
                    self.flag("item-open", f"item {index} ({item.type} {item.id}) never got "
                              "response.output_item.done")
        if self.incomplete_at is not None and type_ != ev.INCOMPLETE:
            self.flag("incomplete-item", f"item {self.incomplete_at} ended incomplete, but the "
                      f"response ends with {type_}")
        folded = [item.final for item in self.items if item.final is not None]
        if type_ != ev.FAILED and response.get("output") != folded:
            self.flag("snapshot-mismatch", f"{type_}: response.output differs from the items "
                      "the stream built")

    def _item_at(self, event: Json, check_id: bool = True) -> _Item | None:
        index = event.get("output_index")
        if not isinstance(index, int) or not 0 <= index < len(self.items):
            self.flag("delta-before-added", f"{event['type']} for output_index {index}, which "
                      "no response.output_item.added opened")
            return None
        item = self.items[index]
        if check_id and "item_id" in event and event["item_id"] != item.id:
            self.flag("index-mismatch", f"{event['type']} names item_id {event['item_id']!r}, but "
                      f"output_index {index} is {item.id!r}")
        if item.final is not None:
            self.flag("order", f"{event['type']} for item {index}, which is already done")
        return item

    def _item_added(self, event: Json) -> None:
        item = event.get("item")
        if not isinstance(item, dict):
            return
        index = event.get("output_index")
        if index != len(self.items):
            self.flag("index-mismatch", f"output_item.added has output_index {index}; the next "
                      f"item is {len(self.items)}")
        if self.incomplete_at is not None:
            self.flag("incomplete-item", f"item {self.incomplete_at} ended incomplete but is "
                      "not the last item")
        self.items.append(_Item(item.get("id"), str(item.get("type"))))

    def _item_done(self, event: Json) -> None:
        final = event.get("item")
        item = self._item_at(event, check_id=False)
        if item is None or not isinstance(final, dict):
            return
        if final.get("id") != item.id:
            self.flag("index-mismatch", f"output_item.done carries item {final.get('id')!r}, but "
                      f"output_index {event.get('output_index')} is {item.id!r}")
        item.final = final
        if final.get("status") == "incomplete":
            self.incomplete_at = event.get("output_index")
        arguments = final.get("arguments")
        if item.type == "function_call" and item.deltas and arguments != item.arguments:
            self.flag("done-mismatch", "output_item.done arguments differ from the deltas")
        for name, parts in (("content", item.content), ("summary", item.summary)):
            listed = final.get(name)
            if not parts or not isinstance(listed, list):
                continue
            for index, part in parts.items():
                if not part.done:
                    self.flag("item-open", f"{name} part {index} of item {item.id} was never done")
                elif index >= len(listed) or _part_text(listed[index]) != part.text:
                    self.flag("done-mismatch", f"output_item.done {name}[{index}] differs from "
                              "the text the deltas built")

    def _part_event(self, type_: str, event: Json) -> None:
        item = self._item_at(event)
        if item is None:
            return
        kind = _PART_EVENTS[type_]
        key = "summary_index" if kind == "summary" else "content_index"
        parts = item.summary if kind == "summary" else item.content
        index = event.get(key)
        if type_ in (ev.PART_ADDED, ev.SUMMARY_PART_ADDED):
            if index != len(parts):
                self.flag("index-mismatch", f"{type_} has {key} {index}; the next part is "
                          f"{len(parts)}")
            part = event.get("part")
            part_type = str(part.get("type")) if isinstance(part, dict) else "?"
            parts[index if isinstance(index, int) else len(parts)] = _Part(part_type)
            return
        part_state = parts.get(index) if isinstance(index, int) else None
        if part_state is None:
            self.flag("delta-before-added", f"{type_} for {key} {index}, which no part.added "
                      "opened")
            return
        if part_state.done:
            self.flag("order", f"{type_} for {key} {index}, which is already done")
        wanted = ev.DELTA_PART_TYPE.get(type_)
        if wanted and part_state.type != wanted:
            self.flag("index-mismatch", f"{type_} targets a {part_state.type} part")
        if type_ in (ev.TEXT_DELTA, ev.REFUSAL_DELTA, ev.REASONING_DELTA, ev.SUMMARY_DELTA):
            part_state.text += str(event.get("delta", ""))
            part_state.deltas += 1
        elif type_ in (ev.TEXT_DONE, ev.REFUSAL_DONE, ev.REASONING_DONE, ev.SUMMARY_DONE):
            text = event.get("refusal" if type_ == ev.REFUSAL_DONE else "text")
            if part_state.deltas and text != part_state.text:
                self.flag("done-mismatch", f"{type_} text differs from the concatenated deltas")
            part_state.text = str(text)
        elif type_ == ev.ANNOTATION_ADDED:
            part_state.annotations.append(event.get("annotation") or {})
        else:  # part done
            part = event.get("part")
            if isinstance(part, dict) and _part_text(part) != part_state.text:
                self.flag("done-mismatch", f"{type_} part text differs from the text built")
            part_state.done = True

    def _arguments(self, type_: str, event: Json) -> None:
        item = self._item_at(event)
        if item is None:
            return
        if type_ == ev.ARGS_DELTA:
            item.arguments += str(event.get("delta", ""))
            item.deltas += 1
            return
        arguments = event.get("arguments")
        if item.deltas and arguments != item.arguments:
            self.flag("done-mismatch", "function_call_arguments.done differs from the deltas")
        item.arguments = str(arguments)

    # -- the end ------------------------------------------------------------------------------
    def finish(self, raw: bool) -> StreamReport:
        self.index += 1
        self.line = None
        if self.terminals == 0:
            self.flag("terminal-count", "the stream has no terminal event (completed, "
                      "incomplete or failed)")
        if raw and not self.report.done:
            self.flag("no-done", "the stream does not end with data: [DONE]")
        if self.terminal is not None:
            self.report.response = self.terminal
        return self.report


def _part_text(part: Any) -> Any:
    if not isinstance(part, dict):
        return None
    return part.get(ev.PART_TEXT_FIELD.get(str(part.get("type")), "text"))


def _check_messages(checker: _Checker, messages: list[SSEMessage]) -> None:
    for message in messages:
        if message.data_lines == 0:
            continue
        checker.line = message.line
        if message.crlf:
            checker.flag("sse-crlf", "lines end with CR LF; Open Responses streams use LF")
        if not message.terminated:
            checker.flag("sse-missing-blank-line", "the stream ends inside an event (no blank "
                         "line after it)")
        if message.id is not None:
            checker.flag("sse-id-line", f"an id: line ({message.id!r}); servers send none")
        if message.data_lines > 1:
            checker.flag("sse-multiline-data", f"the data spans {message.data_lines} data lines")
        if message.is_done:
            if checker.report.done:
                checker.flag("after-done", "a second data: [DONE]")
            checker.report.done = True
            continue
        try:
            event = json.loads(message.data)
        except json.JSONDecodeError as error:
            checker.index += 1
            checker.flag("sse-invalid-json", f"data is not JSON ({error.msg} at column "
                         f"{error.colno})")
            continue
        if message.event is not None and isinstance(event, dict) and message.event != event.get(
            "type"
        ):
            checker.flag("event-type-mismatch", f"event: {message.event!r} but type "
                         f"{event.get('type')!r}", ahead=1)
        checker.event(event)


def check_stream(
    source: bytes | str | Iterable[Json] | Iterable[SSEMessage], *, schema: bool = True
) -> StreamReport:
    """Check a stream against every rule of the protocol and fold it into a Response.

    ``source`` is a raw SSE body (bytes or str), a list of parsed ``SSEMessage``, or a list of
    event dicts (then framing and ``[DONE]`` are not checked). ``schema=False`` skips validation
    against the official schema.
    """
    checker = _Checker(schema)
    if isinstance(source, (bytes, str)):
        _check_messages(checker, parse_sse(source))
        return checker.finish(raw=True)
    items = list(source)
    if items and all(isinstance(i, SSEMessage) for i in items):
        _check_messages(checker, items)  # type: ignore[arg-type]
        return checker.finish(raw=True)
    for event in items:
        checker.event(event)
    return checker.finish(raw=False)


def fold_events(events: Iterable[Json]) -> Json:
    """The final Response a valid stream describes; raises ``ProtocolError`` otherwise."""
    report = check_stream(events, schema=False)
    if report.violations or report.response is None:
        raise ProtocolError(report.violations)
    return report.response
