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

from ormock.protocol import events as ev
from ormock.protocol.hints import short
from ormock.protocol.profile import Profile, get_profile
from ormock.protocol.schema import schema_errors
from ormock.protocol.sse import SSEMessage, parse_sse
from ormock.protocol.tools import KINDS, TOOL_EVENTS
from ormock.protocol.tools.rules import ToolState, item_done, tool_event
from ormock.protocol.types import Json

__all__ = ["RULES", "ProtocolError", "StreamReport", "Violation", "check_stream", "fold_events"]


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
    """One broken rule.

    ``index`` is the position of the event at fault (0-based, counting every event the stream
    carried, unparseable ones included); ``data: [DONE]`` and the end of the stream stand at the
    position after the last event. ``line`` is the SSE line the message started on (raw input).
    """

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
    claimed: str | None = None  # the text a .done event claimed, when it differed (reported)
    done: bool = False
    reported: bool = False  # already named by an item-open violation
    implied: bool = False  # opened by an event that came before its part.added
    prior: bool = False  # opened before a resumed tail began: its start was not seen
    annotations: list[Json] = field(default_factory=list)


@dataclass
class _Item:
    id: str | None
    type: str
    content: dict[int, _Part] = field(default_factory=dict)
    summary: dict[int, _Part] = field(default_factory=dict)
    arguments: str = ""
    deltas: int = 0
    claimed: str | None = None  # what function_call_arguments.done claimed, when it differed
    arguments_done: bool = False
    final: Json | None = None  # what output_item.done carried (None: nothing, or not yet)
    done: bool = False
    reported: bool = False  # already named by an item-open violation
    implied: bool = False  # opened by an event that came before its output_item.added
    prior: bool = False  # added before a resumed tail began: its start was not seen
    tool: ToolState | None = None  # an OpenAI tool item's events, folded (tools/rules.py)


# what an event implies about its item and part when their .added event is missing
_IMPLIED_ITEM = {
    ev.ARGS_DELTA: "function_call",
    ev.ARGS_DONE: "function_call",
    ev.REASONING_DELTA: "reasoning",
    ev.REASONING_DONE: "reasoning",
}
_IMPLIED_PART = {
    **ev.DELTA_PART_TYPE,
    ev.SUMMARY_DELTA: "summary_text",
    ev.SUMMARY_DONE: "summary_text",
    ev.SUMMARY_PART_DONE: "summary_text",
}


class _Checker:
    def __init__(self, schema: bool, profile: Profile, resumed: bool = False,
                 starting_after: int | None = None) -> None:
        self.schema = schema
        self.profile = profile
        self.spelled = not profile.plain  # events to read as the Open Responses spelling
        self.known = profile.known_events
        # OpenAI's tool items' events, held to their rules (ormock.protocol.tools.rules)
        self.tool_events = TOOL_EVENTS if profile.openai_items else {}
        # a resumed tail (GET ...?stream=true&starting_after=N) begins mid-sequence: items and
        # parts it meets unopened were opened before it
        self.resumed = resumed or starting_after is not None
        self.report = StreamReport()
        self.prev: str | None = None
        self.seq: int | None = starting_after
        # the number before the last one reported, to get back in step after one odd number
        self.seq_before: int | None = None
        self.response_id: str | None = None
        self.items: list[_Item] = []
        self.terminal: Json | None = None
        self.terminals = 0
        self.index = -1
        self.line: int | None = None
        self.incomplete_at: int | None = None
        self.incomplete_named = False
        self.first_named = False
        # the current event stands aside from the state machine (a late .added whose absence was
        # reported already, or an event filed under the wrong item or part): the next event is
        # checked against the one before it
        self.aside = False

    def flag(self, rule: str, message: str, ahead: int = 0) -> None:
        """Record a violation at the current event (``ahead=1``: at the one about to come)."""
        message = message.replace("\r", "\\r").replace("\n", "\\n")  # one line, always
        self.report.violations.append(Violation(rule, self.index + ahead, message, self.line))

    def skip(self, record: Json) -> None:
        """An event that cannot be read: keep positions and numbering in step past it."""
        self.index += 1
        self.report.events.append(record)
        if self.seq is not None:
            self.seq += 1
            self.seq_before = None

    # -- one event ---------------------------------------------------------------------------
    def event(self, event: Any) -> None:
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            self.skip(event if isinstance(event, dict) else {"value": event})
            self.flag("schema", "an event is a JSON object with a string 'type'")
            return
        self.index += 1
        self.report.events.append(event)
        if self.spelled:
            event = self.profile.canonical(event)
        type_ = event["type"]
        self._sequence(event)
        if self.report.done:
            self.flag("after-done", f"{type_} after data: [DONE]")
            return  # outside the stream: not folded
        if type_ in self.tool_events:
            if self.prev is None and not self.resumed:
                self._first(type_)
            elif self.terminals:
                self.flag("order", f"{type_} after the terminal event")
            else:
                self._tool_event(type_, event)
            return
        if ev.is_vendor_type(type_) or type_ in self.known:
            if self.prev is None and not self.resumed:
                self._first(type_)
            elif self.terminals:
                self.flag("order", f"{type_} after the terminal event")
            elif type_ in self.known and "output_index" in event:
                self._item_at(event)  # the item it is about is there and open
            return
        if type_ not in ev.CORE_EVENT_TYPES:
            self.flag(
                "unknown-event",
                f"{type_!r} is not an Open Responses event (extensions need a vendor prefix, "
                "as in 'acme:trace')",
            )
            return
        if self.schema and self.profile.official_schema:
            problem = schema_errors(event, openai_tools=self.profile.openai_items)
            if problem:
                self.flag("schema", f"{type_} fails the official schema: {problem}")
        before = len(self.report.violations)
        self.aside = False
        self._state(type_, event)
        if self.aside:
            return
        specific = len(self.report.violations) > before
        self._order(type_, specific)
        self.prev = type_

    def _sequence(self, event: Json) -> None:
        number = event.get("sequence_number")
        if not isinstance(number, int) or isinstance(number, bool):
            self.flag("sequence-number", f"{event['type']} has no integer sequence_number")
            if self.seq is not None:
                self.seq += 1
            return
        if self.seq is not None and number != self.seq + 1:
            before, odd = self.seq_before, self.seq
            if before is not None and number == before + 2:
                # the one before was a lone bad number (already reported): back in step
                self.seq, self.seq_before = number, None
                return
            if before is not None and number == before + 1 and odd == before + 2:
                # the one before and this one were swapped (already reported): back in step
                self.seq, self.seq_before = odd, None
                return
            self.flag("sequence-number", f"sequence_number is {number}, expected {self.seq + 1}")
            self.seq_before = self.seq
        else:
            self.seq_before = None
        self.seq = number

    def _first(self, type_: str) -> None:
        if not self.first_named and not self.resumed:
            self.first_named = True
            self.flag("first-event", f"the stream starts with {type_}, not response.created")

    def _order(self, type_: str, specific: bool) -> None:
        if self.prev is None and type_ != ev.CREATED:
            self._first(type_)
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

    def _not_object(self, type_: str, name: str) -> None:
        if not self.schema:  # with the schema on, its rule has named it already
            self.flag("schema", f"{type_} has no {name} object")

    def _open_items(self, before: str) -> None:
        """Name each item (and part) still open when ``before`` arrives, once."""
        for index, item in enumerate(self.items):
            if item.done:
                continue
            if not item.reported:
                item.reported = True
                self.flag("item-open", f"item {index} ({item.type} {item.id}) is still open "
                          f"at {before}: it never got response.output_item.done")
            self._open_parts(item, before)

    def _open_parts(self, item: _Item, before: str) -> None:
        for name, parts in (("summary", item.summary), ("content", item.content)):
            for index, part in parts.items():
                if not part.done and not part.reported:
                    part.reported = True
                    self.flag("item-open", f"{name} part {index} of item {item.id} is still "
                              f"open at {before}: it never got its part.done")

    def _snapshot(self, type_: str, event: Json) -> None:
        response = event.get("response")
        terminal = type_ in _TERMINALS
        if terminal:
            self.terminals += 1
            if self.terminals > 1:
                self.flag("terminal-count", f"a second terminal event: {type_}")
                return
            if type_ != ev.FAILED:
                self._open_items(type_)
            if self.incomplete_at is not None and type_ != ev.INCOMPLETE and (
                not self.incomplete_named
            ):
                self.flag("incomplete-item", f"item {self.incomplete_at} ended incomplete, but "
                          f"the response ends with {type_}")
        if not isinstance(response, dict):
            self._not_object(type_, "response")
            return
        rid = response.get("id")
        if self.response_id is None:
            self.response_id = rid
        elif rid != self.response_id:
            self.flag("response-id", f"{type_} carries id {rid!r}, not {self.response_id!r}")
        if not terminal:
            return
        self.terminal = response
        status = ev.TERMINAL_EVENTS[type_]
        if response.get("status") != status:
            self.flag(
                "snapshot-mismatch",
                f"{type_} carries status {response.get('status')!r}, not {status!r}",
            )
        if type_ != ev.FAILED:
            self._compare_output(type_, response.get("output"))

    def _compare_output(self, type_: str, output: Any) -> None:
        if isinstance(output, list) and self._before_tail(len(output) - 1):
            self._pad_items(len(output))  # a resumed tail that began after the last one
        if not isinstance(output, list) or len(output) != len(self.items):
            count = len(output) if isinstance(output, list) else output
            self.flag("snapshot-mismatch", f"{type_}: response.output has {count} items; the "
                      f"stream built {len(self.items)}")
            return
        for index, (listed, item) in enumerate(zip(output, self.items, strict=True)):
            if item.final is not None and item.type in self.profile.reencrypted_items and (
                isinstance(listed, dict)
            ):
                # the provider re-encrypts: the snapshot's encrypted_content may differ
                listed = {**listed, "encrypted_content": item.final.get("encrypted_content")}
                if "encrypted_content" not in item.final:
                    listed.pop("encrypted_content")
            if item.final is not None and listed != item.final:  # open items: named already
                self.flag("snapshot-mismatch", f"{type_}: response.output[{index}] differs from "
                          "the item its output_item.done carried")

    def _item_at(self, event: Json, check_id: bool = True) -> _Item | None:
        """The item an event is about (by ``output_index``, or by ``item_id`` when they differ).

        A missing ``output_item.added`` is reported once, at the first event of the item; the
        item is then folded as if it had been added, so one fault gives one violation.
        """
        type_ = event["type"]
        index = event.get("output_index")
        item_id = event.get("item_id") if check_id else None
        count = len(self.items)
        named = next(
            (i for i, item in enumerate(self.items) if item_id is not None and item.id == item_id),
            None,
        )
        in_range = isinstance(index, int) and not isinstance(index, bool) and 0 <= index < count
        if isinstance(index, int) and in_range and named in (None, index):
            item = self.items[index]
            if item.id is None and isinstance(item_id, str):
                item.id = item_id  # its output_item.added carried no item (null)
            elif check_id and "item_id" in event and item_id != item.id:
                self.flag("index-mismatch", f"{type_} names item_id {item_id!r}, but "
                          f"output_index {index} is {item.id!r}")
        elif named is not None:
            self.flag("index-mismatch", f"{type_} has output_index {index!r}, but its item_id "
                      f"{item_id!r} is item {named}")
            item = self.items[named]
        elif self._before_tail(index):
            assert isinstance(index, int)
            self._pad_items(index)
            item = _Item(item_id if isinstance(item_id, str) else None, "", prior=True)
            self.items.append(item)
            return item
        elif index == count and all(item.done for item in self.items):
            self.flag("delta-before-added", f"{type_} for output_index {index}, which no "
                      "response.output_item.added opened")
            self._open_items(type_)
            implied = _IMPLIED_ITEM.get(type_)
            if implied is None:
                implied = "reasoning" if _PART_EVENTS.get(type_) == "summary" else "message"
            item = _Item(item_id if isinstance(item_id, str) else None, implied, implied=True)
            self.items.append(item)
            return item
        else:
            still_open = [item for item in self.items if not item.done]
            self.flag("index-mismatch", f"{type_} has output_index {index!r}, but the stream "
                      f"has {count} items" + (", the last one open" if still_open else ""))
            if not still_open:
                return None
            item = still_open[-1]  # fold it where it evidently belongs
        if item.done:
            self.flag("order", f"{type_} for item {self.items.index(item)}, which is already "
                      "done")
            self.aside = True
            return None
        return item

    def _before_tail(self, index: Any) -> bool:
        """A resumed tail names an item it has not seen added: one added before the tail (only
        while the tail has added none itself)."""
        return (self.resumed and isinstance(index, int) and not isinstance(index, bool)
                and index >= len(self.items) and all(item.prior for item in self.items))

    def _pad_items(self, count: int) -> None:
        """Items before a resumed tail that it never mentions: done before it began."""
        while len(self.items) < count:
            self.items.append(_Item(None, "", done=True, prior=True))

    def _item_added(self, event: Json) -> None:
        item = event.get("item")
        if not isinstance(item, dict):
            item = {}  # null is allowed: its other events say which item it is
        index = event.get("output_index")
        last = self.items[-1] if self.items else None
        if last is not None and last.implied and index == len(self.items) - 1:
            # late: its first event already reported it; adopt it quietly
            self.aside = True
            last.implied = False
            if last.id is not None and item.get("id") != last.id:
                self.flag("index-mismatch", f"output_item.added carries item {item.get('id')!r}, "
                          f"but output_index {index} is {last.id!r}")
            last.id, last.type = item.get("id"), str(item.get("type") or "")
            return
        if self._before_tail(index) and index != len(self.items):
            assert isinstance(index, int)
            self._pad_items(index)
        if index != len(self.items):
            self.flag("index-mismatch", f"output_item.added has output_index {index!r}; the next "
                      f"item is {len(self.items)}")
        if self.incomplete_at is not None and not self.incomplete_named:
            self.incomplete_named = True
            self.flag("incomplete-item", f"item {self.incomplete_at} ended incomplete but is "
                      "not the last item")
        self._open_items(ev.ITEM_ADDED)
        self.items.append(_Item(item.get("id"), str(item.get("type") or "")))

    def _item_done(self, event: Json) -> None:
        final = event.get("item")
        item = self._item_at(event, check_id=False)
        if item is None:
            return
        item.done = True
        if not isinstance(final, dict):
            return  # null is allowed: the terminal snapshot alone says what the item became
        if item.implied or item.id is None or not item.type:
            item.id, item.type = final.get("id"), str(final.get("type") or "")
        if final.get("id") != item.id:
            self.flag("index-mismatch", f"output_item.done carries item {final.get('id')!r}, but "
                      f"output_index {event.get('output_index')} is {item.id!r}")
        item.final = final
        if final.get("status") == "incomplete":
            self.incomplete_at = event.get("output_index")
        streamed = item.deltas or item.arguments_done
        if (
            item.type == "function_call"
            and streamed
            and final.get("arguments") not in (item.arguments, item.claimed)
            and not (item.prior and str(final.get("arguments")).endswith(item.arguments))
        ):
            sent = short(final.get("arguments"), 40)
            self.flag("done-mismatch", f"output_item.done arguments {sent} differ from the "
                      f"streamed {short(item.arguments, 40)}")
        if self.tool_events and final.get("type") in KINDS:
            item_done(item.tool, final, self.schema and self.profile.official_schema, self.flag)
        self._open_parts(item, ev.ITEM_DONE)
        for name, parts in (("content", item.content), ("summary", item.summary)):
            listed = final.get(name)
            if not parts or not isinstance(listed, list):
                continue
            if len(listed) != len(parts) and not (item.prior and len(listed) > len(parts)):
                self.flag("done-mismatch", f"output_item.done has {len(listed)} {name} parts; "
                          f"the stream built {len(parts)}")
                continue
            for index, part in parts.items():
                if not part.done or not 0 <= index < len(listed):
                    continue
                problem = _part_differs(listed[index], part)
                if problem:
                    self.flag("done-mismatch", f"output_item.done {name}[{index}]: {problem}")

    def _tool_event(self, type_: str, event: Json) -> None:
        item = self._item_at(event)
        if item is None:
            return
        wanted = self.tool_events[type_]
        if item.type and item.type != wanted:
            self.flag("index-mismatch", f"{type_} targets item {item.id}, a {item.type}")
            return
        if item.tool is None:
            item.tool = ToolState()
        tool_event(item.tool, type_, event, self.flag)

    def _part_event(self, type_: str, event: Json) -> None:
        item = self._item_at(event)
        if item is None:
            return
        kind = _PART_EVENTS[type_]
        key = "summary_index" if kind == "summary" else "content_index"
        parts = item.summary if kind == "summary" else item.content
        if kind == "summary" and item.type not in ("reasoning", ""):
            self.flag("index-mismatch", f"{type_} targets item {item.id}, a {item.type}")
            return
        index = event.get(key)
        state = parts.get(index) if isinstance(index, int) else None
        if type_ in (ev.PART_ADDED, ev.SUMMARY_PART_ADDED):
            part = event.get("part")
            part_type = str(part.get("type") or "") if isinstance(part, dict) else ""
            if state is not None and state.implied:
                self.aside = True  # its first event already reported it; adopt it quietly
                state.implied = False
                state.type = part_type or state.type
                return
            if index != len(parts):
                self.flag("index-mismatch", f"{type_} has {key} {index!r}; the next part is "
                          f"{len(parts)}")
            self._open_parts(item, type_)
            parts[len(parts)] = _Part(part_type)  # where the protocol puts it
            return
        still_open = [p for p in parts.values() if not p.done]
        if state is None and item.prior and isinstance(index, int) and index >= len(parts) and (
            all(p.prior for p in parts.values())
        ):
            while len(parts) < index:  # parts before the tail that it never mentions
                parts[len(parts)] = _Part("", done=True, prior=True)
            state = parts[index] = _Part(_IMPLIED_PART.get(type_, ""), prior=True)
        elif state is None and index == len(parts) and not still_open:
            self.flag("delta-before-added", f"{type_} for {key} {index}, which no part.added "
                      "opened")
            self._open_parts(item, type_)
            state = parts[index] = _Part(_IMPLIED_PART.get(type_, "output_text"), implied=True)
        elif state is None or (state.done and len(still_open) == 1):
            if len(still_open) != 1:
                self.flag("index-mismatch", f"{type_} has {key} {index!r}, but item {item.id} "
                          f"has {len(parts)} parts and {len(still_open)} open")
                return
            state = still_open[0]  # fold it where it evidently belongs
            self.flag("index-mismatch", f"{type_} has {key} {index!r}, but the open part of "
                      f"item {item.id} is {_key_of(parts, state)}")
        if state.done:
            self.flag("order", f"{type_} for {key} {index}, which is already done")
        wanted = ev.DELTA_PART_TYPE.get(type_)
        if wanted and state.type and state.type != wanted:
            self.flag("index-mismatch", f"{type_} targets a {state.type} part")
            self.aside = True
        if type_ in ev.TEXT_DELTAS:
            state.text += str(event.get("delta", ""))
            state.deltas += 1
        elif type_ in ev.TEXT_DONES:
            text = event.get("refusal" if type_ == ev.REFUSAL_DONE else "text")
            if state.prior and isinstance(text, str) and text.endswith(state.text):
                state.text = text  # the tail's deltas end the whole text
            state.text, state.claimed = self._settle(f"{type_} text", text, state.text,
                                                     state.deltas, state.claimed)
        elif type_ == ev.ANNOTATION_ADDED:
            number = event.get("annotation_index")
            if state.prior and isinstance(number, int) and number > len(state.annotations):
                state.annotations = [{}] * number  # annotations sent before the tail
            if number != len(state.annotations):
                self.flag("index-mismatch", f"annotation_index {number!r}; the next annotation "
                          f"is {len(state.annotations)}")
            state.annotations.append(event.get("annotation") or {})
        else:  # part done
            part = event.get("part")
            problem = _part_differs(part, state) if isinstance(part, dict) else None
            if problem:
                self.flag("done-mismatch", f"{type_}: {problem}")
            state.done = True

    def _arguments(self, type_: str, event: Json) -> None:
        item = self._item_at(event)
        if item is None:
            return
        if item.type not in ("function_call", ""):
            self.flag("index-mismatch", f"{type_} targets item {item.id}, a {item.type}")
            return
        if type_ == ev.ARGS_DELTA:
            item.arguments += str(event.get("delta", ""))
            item.deltas += 1
            return
        item.arguments_done = True
        whole = event.get("arguments")
        if item.prior and isinstance(whole, str) and whole.endswith(item.arguments):
            item.arguments = whole  # the tail's deltas end the whole arguments
        item.arguments, item.claimed = self._settle(
            "function_call_arguments.done", event.get("arguments"), item.arguments, item.deltas,
            item.claimed)

    def _settle(self, what: str, whole: Any, built: str, deltas: int, claimed: str | None
                ) -> tuple[str, str | None]:
        """A ``.done`` event's whole text (or arguments) against the concatenated deltas: the
        text built so far and the differing text claimed, once the mismatch is reported."""
        if not deltas:
            return str(whole), claimed
        if whole != built:
            self.flag("done-mismatch", f"{what} {short(whole, 40)} differs from the "
                      f"concatenated deltas {short(built, 40)}")
            # later events may follow either (a delta lost, or this text wrong): not again
            return built, str(whole)
        return built, claimed

    # -- the end ------------------------------------------------------------------------------
    def finish(self, raw: bool) -> StreamReport:
        self.index += 1
        self.line = None
        if self.terminals == 0:
            self.flag("terminal-count", "the stream has no terminal event (completed, "
                      "incomplete or failed)")
        if raw and not self.report.done and not self.profile.done_optional:
            self.flag("no-done", "the stream does not end with data: [DONE]")
        if self.terminal is not None:
            self.report.response = self.terminal
        return self.report


def _key_of(parts: dict[int, _Part], part: _Part) -> int:
    return next(key for key, value in parts.items() if value is part)


def _part_text(part: Any) -> Any:
    if not isinstance(part, dict):
        return None
    return part.get(ev.PART_TEXT_FIELD.get(str(part.get("type")), "text"))


def _part_differs(part: Any, built: _Part) -> str | None:
    """Why a part carried by a .done event is not the part the stream built (None: it is)."""
    if not isinstance(part, dict):
        return "the part is not an object"
    if built.type and part.get("type") != built.type:
        return f"part type {part.get('type')!r}, but the part was added as {built.type!r}"
    text = _part_text(part)
    if built.prior and isinstance(text, str) and text.endswith(built.text):
        pass  # a part begun before a resumed tail: the tail's deltas end its text
    elif text not in (built.text, built.claimed):
        return (f"part text {short(_part_text(part), 40)} differs from the text built "
                f"{short(built.text, 40)}")
    if built.type == "output_text" and not built.prior and (
        part.get("annotations", []) != built.annotations
    ):
        return "annotations differ from the ones response.output_text.annotation.added sent"
    return None


def _check_messages(checker: _Checker, messages: list[SSEMessage]) -> None:
    crlf = [m for m in messages if m.crlf and m.data_lines]
    for message in messages:
        if message.data_lines == 0:
            continue
        checker.line = message.line
        # framing faults belong to the event this message carries ([DONE]: the next position)
        ahead = 1
        if message is (crlf[0] if crlf else None):
            more = f" ({len(crlf)} messages in all)" if len(crlf) > 1 else ""
            checker.flag("sse-crlf", "lines end with CR LF or CR; Open Responses streams use LF"
                         + more, ahead)
        if not message.terminated:
            checker.flag("sse-missing-blank-line", "the stream ends inside an event (no blank "
                         "line after it)", ahead)
        if message.id is not None:
            checker.flag("sse-id-line", f"an id: line ({message.id!r}); servers send none", ahead)
        if message.data_lines > 1:
            checker.flag("sse-multiline-data", f"the data spans {message.data_lines} data lines",
                         ahead)
        if message.is_done:
            if checker.report.done:
                checker.flag("after-done", "a second data: [DONE]", ahead)
            checker.report.done = True
            continue
        try:
            event = json.loads(message.data)
        except json.JSONDecodeError as error:
            checker.skip({"value": message.data})
            checker.flag("sse-invalid-json", f"data is not JSON ({error.msg} at column "
                         f"{error.colno})")
            continue
        if message.event is not None and isinstance(event, dict) and message.event != event.get(
            "type"
        ):
            checker.flag("event-type-mismatch", f"event: {message.event!r} but type "
                         f"{event.get('type')!r}", ahead)
        checker.event(event)


def check_stream(
    source: bytes | str | Iterable[Json] | Iterable[SSEMessage],
    *,
    schema: bool = True,
    profile: Profile | str | None = None,
    resumed: bool = False,
    starting_after: int | None = None,
) -> StreamReport:
    """Check a stream against every rule of the protocol and fold it into a Response.

    ``source`` is a raw SSE body (bytes or str), a list of parsed ``SSEMessage``, or a list of
    event dicts (then framing and ``[DONE]`` are not checked). ``schema=False`` skips validation
    against the official schema. ``profile``: the wire spellings to read (``"openai"``: its
    ``response.reasoning_text.*`` events are read as the Open Responses ones, the other events
    of the openai SDK's vocabulary are known ones, ``data: [DONE]`` is optional and reasoning may
    be re-encrypted in the terminal snapshot).

    ``resumed=True``: the stream is a resumed tail (``GET /v1/responses/{id}?stream=true&
    starting_after=N``) that begins mid-sequence, so it need not start with
    ``response.created`` and may name items and parts opened before it; ``starting_after=N``
    also says its first ``sequence_number`` is N+1.
    """
    checker = _Checker(schema, get_profile(profile), resumed, starting_after)
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
