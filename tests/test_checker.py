"""The checker: a valid stream passes, and every rule, broken alone, is reported alone.

Each case below takes a valid stream built by ``build_events``, breaks one thing, and says which
rule must fire and at which event. The report must name exactly that rule (not merely include it),
so a single fault never cascades into unrelated findings. Event-list cases are also framed as raw
SSE and checked again: the same violations, now with the SSE line of the event at fault.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ormock.protocol import (
    RULES,
    FunctionCallPlan,
    IdFactory,
    MessagePlan,
    ProtocolError,
    ReasoningPlan,
    RefusalPart,
    ReplyPlan,
    TextPart,
    VendorItemPlan,
    Violation,
    build_events,
    check_stream,
    fold_events,
    new_response,
)
from ormock.protocol.events import CORE_EVENT_TYPES, TERMINAL_EVENTS
from ormock.protocol.items import url_citation
from ormock.protocol.sse import DONE_FRAME, frame_event, parse_sse

Json = dict[str, Any]
Status = str


# -- building valid streams ------------------------------------------------------------------------
def plan(status: Status = "completed", *, queued: bool = False) -> ReplyPlan:
    """Four items, one of each kind, so every event type of the catalogue occurs."""
    return ReplyPlan(
        items=[
            ReasoningPlan(summary=("Plan the answer.",), content=("Two parts, then a call.",)),
            MessagePlan(
                parts=(
                    TextPart(
                        "Hello there, world.",
                        (url_citation("https://example.com/", 0, 5, "Example"),),
                    ),
                    RefusalPart("Not that, though."),
                )
            ),
            FunctionCallPlan(name="lookup", arguments='{"city": "Paris"}'),
            VendorItemPlan(type="acme:web_search_call", fields={"query": "weather"}),
        ],
        status=status,  # type: ignore[arg-type]
        queued=queued,
        error={"type": "model_error", "code": "overloaded", "message": "Try again."}
        if status == "failed"
        else None,
    )


def build(status: Status = "completed", *, queued: bool = False) -> list[Json]:
    ids = IdFactory(7)
    response = new_response(ids.new("resp"), 1_767_225_600, {"model": "ormock-test"})
    return build_events(plan(status, queued=queued), response, ids, input_tokens=5)


BASE = {status: build(status) for status in ("completed", "incomplete", "failed")}


def stream(status: Status = "completed") -> list[Json]:
    """A fresh copy, every event its own JSON as on the wire (the builder shares objects between
    events, e.g. a part between content_part.done and output_item.done)."""
    events: list[Json] = json.loads(json.dumps(BASE[status]))
    return events


def renumber(events: list[Any]) -> list[Any]:
    """Sequence numbers 0..n-1 again after events were added, dropped or moved."""
    return [{**e, "sequence_number": i} if isinstance(e, dict) else e for i, e in enumerate(events)]


def at(events: list[Json], type_: str, nth: int = 0) -> int:
    """The index of the ``nth`` event of type ``type_``."""
    return [i for i, e in enumerate(events) if e.get("type") == type_][nth]


def vendor(type_: str = "acme:trace") -> Json:
    return {"type": type_, "sequence_number": 0, "note": "extension events are ignored"}


def frame(event: Any) -> bytes:
    if isinstance(event, dict) and isinstance(event.get("type"), str):
        return frame_event(event)
    return b"data: " + json.dumps(event).encode() + b"\n\n"


def frames(events: list[Any]) -> list[bytes]:
    return [frame(e) for e in events]


def line_of(chunks: list[bytes], k: int) -> int:
    """The line (1-based) on which chunk ``k`` starts."""
    return b"".join(chunks[:k]).count(b"\n") + 1


def found(report: Any) -> list[tuple[str, int | None]]:
    return [(v.rule, v.index) for v in report.violations]


# -- the valid stream ------------------------------------------------------------------------------
@pytest.mark.parametrize("status", ["completed", "incomplete", "failed"])
def test_a_built_stream_passes_and_folds_to_its_terminal_snapshot(status: Status) -> None:
    events = stream(status)
    report = check_stream(events)
    assert report.ok, report.violations
    assert report.violations == []
    assert report.rules == set()
    assert report.events == events
    assert report.response == events[-1]["response"]
    assert report.response["status"] == status
    assert not report.done  # an event list has no [DONE]
    assert fold_events(events) == events[-1]["response"]


@pytest.mark.parametrize("status", ["completed", "incomplete", "failed"])
def test_the_framed_stream_passes_as_bytes_str_and_parsed_messages(status: Status) -> None:
    events = stream(status)
    body = b"".join(frames(events)) + DONE_FRAME
    for source in (body, body.decode(), parse_sse(body)):
        report = check_stream(source)
        assert report.ok, report.violations
        assert report.done
        assert report.events == events
        assert report.response == events[-1]["response"]


def test_a_queued_stream_passes() -> None:
    events = build(queued=True)
    assert [e["type"] for e in events[:3]] == [
        "response.created",
        "response.queued",
        "response.in_progress",
    ]
    assert check_stream(events).ok


def test_the_base_stream_uses_every_core_event_type() -> None:
    """So the cases below can break every kind of event."""
    seen = {e["type"] for status in BASE for e in BASE[status]}
    assert seen | {"response.queued"} == CORE_EVENT_TYPES
    assert set(TERMINAL_EVENTS) <= seen


@pytest.mark.parametrize("status", ["completed", "incomplete", "failed"])
def test_vendor_events_are_allowed_anywhere_between_created_and_the_terminal(
    status: Status,
) -> None:
    base = stream(status)
    for position in range(1, len(base)):  # before every event after created, terminal included
        events = renumber([*base[:position], vendor(), *base[position:]])
        report = check_stream(events)
        assert report.ok, (position, report.violations)
        assert report.response == base[-1]["response"]


def test_vendor_events_and_vendor_items_fold_like_any_other() -> None:
    events = stream()
    several = renumber([events[0], vendor("x-corp:ping"), vendor(), *events[1:]])
    assert fold_events(several)["output"][3]["type"] == "acme:web_search_call"


def test_error_then_failed_is_a_valid_ending() -> None:
    events = stream("failed")
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert set(events[-2]["error"]) == {"type", "code", "message", "param"}
    report = check_stream(events)
    assert report.ok, report.violations
    assert report.response is not None
    assert report.response["error"] == {"code": "overloaded", "message": "Try again."}


def test_a_mid_stream_error_may_leave_items_open() -> None:
    events = stream("failed")
    cut = at(events, "response.output_text.delta")  # in the middle of the message
    error, failed = events[-2:]
    failed["response"]["output"] = [events[at(events, "response.output_item.done")]["item"]]
    report = check_stream(renumber([*events[: cut + 1], error, failed]))
    assert report.ok, report.violations
    assert report.response is not None
    assert report.response["status"] == "failed"


def test_an_incomplete_stream_is_valid() -> None:
    events = stream("incomplete")
    report = check_stream(events)
    assert report.ok, report.violations
    assert report.response is not None
    assert report.response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert [item["status"] for item in report.response["output"]] == [
        "completed",
        "completed",
        "completed",
        "incomplete",
    ]


def test_a_response_without_items_is_valid() -> None:
    ids = IdFactory(1)
    response = new_response(ids.new("resp"), 1_767_225_600, {})
    for status in ("completed", "incomplete"):
        events = build_events(ReplyPlan(status=status), response, ids)  # type: ignore[arg-type]
        assert [e["type"] for e in events][:2] == ["response.created", "response.in_progress"]
        assert check_stream(events).ok


# -- one fault, one rule ---------------------------------------------------------------------------
Mutation = Callable[[list[Json]], tuple[list[Any], int]]
EVENT_CASES: list[Any] = []


def case(rule: str, says: str, status: Status = "completed") -> Callable[[Mutation], Mutation]:
    """Register a mutation of the ``status`` stream that breaks ``rule`` at the index it returns;
    ``says`` must appear in the violation's message."""

    def register(mutate: Mutation) -> Mutation:
        name = mutate.__name__.removeprefix("_")
        EVENT_CASES.append(pytest.param(rule, says, status, mutate, id=f"{rule}:{name}"))
        return mutate

    return register


def also_terminal(events: list[Json], index: int, change: Callable[[Json], None]) -> None:
    """Apply ``change`` to the item that event ``index`` carries and to the terminal's copy, so the
    snapshot stays consistent with the stream and only the rule under test is broken."""
    item = events[index]["item"]
    position = events[-1]["response"]["output"].index(item)
    change(item)
    change(events[-1]["response"]["output"][position])


def _named(name: str, mutate: Mutation) -> Mutation:
    mutate.__name__ = name
    return mutate


def dropping(name: str, type_: str, nth: int) -> Mutation:
    """The ``nth`` event of ``type_`` left out: the rule is broken at its place."""

    def mutate(e: list[Json]) -> tuple[list[Any], int]:
        i = at(e, type_, nth)
        return renumber(e[:i] + e[i + 1 :]), i

    return _named(name, mutate)


def setting(name: str, type_: str, nth: int, **fields: Any) -> Mutation:
    """The ``nth`` event of ``type_`` with ``fields`` set: the rule is broken there."""

    def mutate(e: list[Json]) -> tuple[list[Any], int]:
        i = at(e, type_, nth)
        e[i].update(fields)
        return e, i

    return _named(name, mutate)


def changing_item(name: str, type_: str, nth: int, change: Callable[[Json], None]) -> Mutation:
    """The item the ``nth`` event of ``type_`` carries changed, and the terminal's copy too."""

    def mutate(e: list[Json]) -> tuple[list[Any], int]:
        i = at(e, type_, nth)
        also_terminal(e, i, change)
        return e, i

    return _named(name, mutate)


@case("first-event", "response.in_progress, not response.created")
def _created_dropped(e: list[Json]) -> tuple[list[Any], int]:
    return renumber(e[1:]), 0


@case("first-event", "starts with acme:trace")
def _vendor_event_first(e: list[Json]) -> tuple[list[Any], int]:
    return renumber([vendor(), *e]), 0


@case("sequence-number", "sequence_number is 99, expected 5")
def _one_number_wrong(e: list[Json]) -> tuple[list[Any], int]:
    e[5]["sequence_number"] = 99  # one violation: event 6 is back in step with event 4
    return e, 5


@case("sequence-number", "sequence_number is 6, expected 5")
def _a_number_skipped(e: list[Json]) -> tuple[list[Any], int]:
    for event in e[5:]:
        event["sequence_number"] += 1
    return e, 5


@case("sequence-number", "sequence_number is 4, expected 5")
def _a_number_repeated(e: list[Json]) -> tuple[list[Any], int]:
    for event in e[5:]:
        event["sequence_number"] -= 1
    return e, 5


@case("sequence-number", "sequence_number is 6, expected 5")
def _two_numbers_swapped(e: list[Json]) -> tuple[list[Any], int]:
    e[5]["sequence_number"], e[6]["sequence_number"] = 6, 5
    return e, 5


@case("unknown-event", "'response.output_text.deleted' is not an Open Responses event")
def _unknown_core_type(e: list[Json]) -> tuple[list[Any], int]:
    return renumber([*e[:5], {"type": "response.output_text.deleted"}, *e[5:]]), 5


@case("unknown-event", "'trace' is not an Open Responses event")
def _extension_without_prefix(e: list[Json]) -> tuple[list[Any], int]:
    return renumber([*e[:5], vendor("trace"), *e[5:]]), 5


@case("unknown-event", "':trace' is not")
def _empty_vendor_prefix(e: list[Json]) -> tuple[list[Any], int]:
    return renumber([*e[:5], vendor(":trace"), *e[5:]]), 5


@case("unknown-event", "'acme:' is not")
def _empty_vendor_name(e: list[Json]) -> tuple[list[Any], int]:
    return renumber([*e[:5], vendor("acme:"), *e[5:]]), 5


@case("order", "response.output_item.added cannot follow response.created")
def _in_progress_dropped(e: list[Json]) -> tuple[list[Any], int]:
    return renumber([e[0], *e[2:]]), 1


@case("order", "response.created cannot follow response.created")
def _created_twice(e: list[Json]) -> tuple[list[Any], int]:
    return renumber([e[0], copy.deepcopy(e[0]), *e[1:]]), 1


case("order", "response.content_part.done cannot follow response.output_text.annotation.added")(
    dropping("text_done_dropped", "response.output_text.done", 0))


@case("order", "acme:trace after the terminal event")
def _vendor_event_after_the_terminal(e: list[Json]) -> tuple[list[Any], int]:
    return renumber([*e, vendor()]), len(e)


@case("order", "error cannot follow response.completed")
def _error_after_the_terminal(e: list[Json]) -> tuple[list[Any], int]:
    error = {"type": "error", "error": BASE["failed"][-2]["error"]}
    return renumber([*e, error]), len(e)


@case("order", "response.output_item.done cannot follow error", status="failed")
def _error_not_followed_by_failed(e: list[Json]) -> tuple[list[Any], int]:
    error = e.pop(-2)
    i = at(e, "response.output_item.done", 3)
    return renumber([*e[:i], error, *e[i:]]), i + 1


@case("order", "response.output_text.delta for item 1, which is already done")
def _delta_after_its_item_is_done(e: list[Json]) -> tuple[list[Any], int]:
    i = at(e, "response.output_text.delta")
    delta = {**e[i], "delta": ""}  # adds nothing to the text: only its place is wrong
    j = at(e, "response.output_item.done", 1)
    return renumber([*e[: j + 1], delta, *e[j + 1 :]]), j + 1


case("delta-before-added", "response.content_part.added for output_index 1")(
    dropping("message_item_added_dropped", "response.output_item.added", 1))


case("delta-before-added", "response.function_call_arguments.delta for output_index 2")(
    dropping("function_call_item_added_dropped", "response.output_item.added", 2))


case("delta-before-added", "response.output_item.done for output_index 3")(
    dropping("vendor_item_added_dropped", "response.output_item.added", 3))


case("delta-before-added", "response.output_text.delta for content_index 0")(
    dropping("content_part_added_dropped", "response.content_part.added", 1))


case("delta-before-added", "response.reasoning_summary_text.delta for summary_index 0")(
    dropping("summary_part_added_dropped", "response.reasoning_summary_part.added", 0))


@case("delta-before-added", "response.output_text.delta for content_index 0")
def _delta_before_its_part_added(e: list[Json]) -> tuple[list[Any], int]:
    i = at(e, "response.content_part.added", 1)
    e[i], e[i + 1] = e[i + 1], e[i]  # the late part.added is then taken as it comes
    return renumber(e), i


@case("delta-before-added", "response.function_call_arguments.delta for output_index 2")
def _delta_before_its_item_added(e: list[Json]) -> tuple[list[Any], int]:
    i = at(e, "response.output_item.added", 2)
    e[i], e[i + 1] = e[i + 1], e[i]
    return renumber(e), i


case("index-mismatch", "names item_id 'msg_other'")(
    setting("delta_names_another_item_id", "response.output_text.delta", 0, item_id="msg_other"))


# item 0 is done; the item_id says where the delta belongs
case("index-mismatch", "has output_index 0, but its item_id")(
    setting("delta_names_another_output_index", "response.output_text.delta", 0, output_index=0))


@case("index-mismatch", "has output_index 9")
def _delta_output_index_out_of_range(e: list[Json]) -> tuple[list[Any], int]:
    i = at(e, "response.function_call_arguments.delta")
    e[i]["output_index"] = 9
    e[i]["item_id"] = "fc_unknown"
    return e, i


# part 0 is open, part 1 not yet added
case("index-mismatch", "has content_index 1, but the open part of item")(
    setting("delta_content_index_wrong", "response.output_text.delta", 1, content_index=1))


case("index-mismatch", "output_item.added has output_index 7; the next item is 1")(
    setting("item_added_output_index_wrong", "response.output_item.added", 1, output_index=7))


case("index-mismatch", "has content_index 3; the next part is 0")(
    setting("part_added_content_index_wrong", "response.content_part.added", 1, content_index=3))


case("index-mismatch", "annotation_index 2; the next annotation is 0")(
    setting("annotation_index_wrong", "response.output_text.annotation.added", 0,
            annotation_index=2))


@case("index-mismatch", "response.output_text.delta targets a refusal part")
def _delta_of_the_wrong_kind(e: list[Json]) -> tuple[list[Any], int]:
    i = at(e, "response.refusal.delta")
    e[i] = {**e[i], "type": "response.output_text.delta", "logprobs": []}
    return e, i


case("index-mismatch", "output_item.done carries item 'fc_renamed'")(
    changing_item("item_done_carries_another_id", "response.output_item.done", 2,
                  lambda item: item.update(id="fc_renamed")))


# the part.done and item.done still agree with the deltas
case("done-mismatch", "response.output_text.done text 'Hello?' differs")(
    setting("text_done_differs", "response.output_text.done", 0, text="Hello?"))


case("done-mismatch", "response.refusal.done text")(
    setting("refusal_done_differs", "response.refusal.done", 0, refusal="No."))


case("done-mismatch", "response.reasoning_summary_text.done text")(
    setting("summary_done_differs", "response.reasoning_summary_text.done", 0,
            text="Something else."))


case("done-mismatch", "response.reasoning.done text")(
    setting("reasoning_done_differs", "response.reasoning.done", 0, text="Something else."))


case("done-mismatch", "function_call_arguments.done '{}' differs")(
    setting("arguments_done_differ", "response.function_call_arguments.done", 0, arguments="{}"))


@case("done-mismatch", "response.content_part.done: part text")
def _part_done_text_differs(e: list[Json]) -> tuple[list[Any], int]:
    i = at(e, "response.content_part.done", 1)
    e[i]["part"]["text"] = "Hello."
    return e, i


@case("done-mismatch", "annotations differ")
def _part_done_drops_the_annotation(e: list[Json]) -> tuple[list[Any], int]:
    i = at(e, "response.content_part.done", 1)
    e[i]["part"]["annotations"] = []
    return e, i


case("done-mismatch", "output_item.done content[1]: part text")(
    changing_item("item_done_text_differs", "response.output_item.done", 1,
                  lambda item: item["content"][1].update(refusal="No.")))


case("done-mismatch", "output_item.done summary[0]: part text")(
    changing_item("item_done_summary_differs", "response.output_item.done", 0,
                  lambda item: item["summary"][0].update(text="Other.")))


case("done-mismatch", "output_item.done has 1 content parts; the stream built 2")(
    changing_item("item_done_drops_a_part", "response.output_item.done", 1,
                  lambda item: item["content"].pop()))


case("done-mismatch", "output_item.done arguments")(
    changing_item("item_done_arguments_differ", "response.output_item.done", 2,
                  lambda item: item.update(arguments="{}")))


# named at the terminal that took its place
case("item-open", "item 3 (acme:web_search_call")(
    dropping("last_item_done_dropped", "response.output_item.done", 3))


# named at the next output_item.added
case("item-open", "item 0 (reasoning")(
    dropping("first_item_done_dropped", "response.output_item.done", 0))


case("item-open", "content part 0 of item msg_")(
    dropping("text_part_done_dropped", "response.content_part.done", 1))


case("item-open", "content part 1 of item msg_")(
    dropping("refusal_part_done_dropped", "response.content_part.done", 2))


case("item-open", "summary part 0 of item rs_")(
    dropping("summary_part_done_dropped", "response.reasoning_summary_part.done", 0))


case("item-open", "still open at response.incomplete", status="incomplete")(
    dropping("incomplete_item_never_done", "response.output_item.done", 3))


@case("terminal-count", "no terminal event")
def _terminal_dropped(e: list[Json]) -> tuple[list[Any], int]:
    return e[:-1], len(e) - 1  # named at the end of the stream


@case("terminal-count", "no terminal event", status="failed")
def _failed_dropped_after_error(e: list[Json]) -> tuple[list[Any], int]:
    return e[:-1], len(e) - 1


@case("terminal-count", "a second terminal event: response.completed")
def _terminal_twice(e: list[Json]) -> tuple[list[Any], int]:
    return renumber([*e, copy.deepcopy(e[-1])]), len(e)


@case("terminal-count", "a second terminal event: response.failed")
def _completed_then_failed(e: list[Json]) -> tuple[list[Any], int]:
    failed = BASE["failed"][-1]
    return renumber([*e, copy.deepcopy(failed)]), len(e)


@case("incomplete-item", "item 3 ended incomplete, but the response ends with response.completed")
def _incomplete_item_in_a_completed_response(e: list[Json]) -> tuple[list[Any], int]:
    i = at(e, "response.output_item.done", 3)
    also_terminal(e, i, lambda item: item.update(status="incomplete"))
    return e, len(e) - 1


@case("incomplete-item", "item 0 ended incomplete but is not the last item", status="incomplete")
def _incomplete_item_not_last(e: list[Json]) -> tuple[list[Any], int]:
    i = at(e, "response.output_item.done", 0)
    also_terminal(e, i, lambda item: item.update(status="incomplete"))
    return e, at(e, "response.output_item.added", 1)


@case("incomplete-item", "ends with response.failed", status="failed")
def _incomplete_item_in_a_failed_response(e: list[Json]) -> tuple[list[Any], int]:
    i = at(e, "response.output_item.done", 3)
    also_terminal(e, i, lambda item: item.update(status="incomplete"))
    return e, len(e) - 1


@case("response-id", "response.in_progress carries id 'resp_other'")
def _in_progress_id_changed(e: list[Json]) -> tuple[list[Any], int]:
    e[1]["response"]["id"] = "resp_other"
    return e, 1


@case("response-id", "response.completed carries id 'resp_other'")
def _terminal_id_changed(e: list[Json]) -> tuple[list[Any], int]:
    e[-1]["response"]["id"] = "resp_other"
    return e, len(e) - 1


@case("snapshot-mismatch", "response.completed carries status 'incomplete', not 'completed'")
def _terminal_status_wrong(e: list[Json]) -> tuple[list[Any], int]:
    e[-1]["response"]["status"] = "incomplete"
    return e, len(e) - 1


@case("snapshot-mismatch", "response.output[1] differs")
def _terminal_output_text_differs(e: list[Json]) -> tuple[list[Any], int]:
    e[-1]["response"]["output"][1]["content"][0]["text"] = "Hello!"
    return e, len(e) - 1


@case("snapshot-mismatch", "response.output has 3 items; the stream built 4")
def _terminal_output_misses_an_item(e: list[Json]) -> tuple[list[Any], int]:
    e[-1]["response"]["output"].pop(0)
    return e, len(e) - 1


@case("schema", "error fails the official schema: error: Field required", status="failed")
def _flat_error_event(e: list[Json]) -> tuple[list[Any], int]:
    i = at(e, "error")
    e[i] = {**e[i]["error"], "type": "error", "sequence_number": i}
    return e, i


@case("schema", "response.output_item.added fails the official schema: item")
def _item_added_with_a_bad_status(e: list[Json]) -> tuple[list[Any], int]:
    i = at(e, "response.output_item.added", 1)
    e[i]["item"]["status"] = "thinking"
    return e, i


@case("schema", "response.created fails the official schema: response.tools")
def _snapshot_misses_a_property(e: list[Json]) -> tuple[list[Any], int]:
    del e[0]["response"]["tools"]
    return e, 0


@case("schema", "an event is a JSON object with a string 'type'")
def _event_not_an_object(e: list[Json]) -> tuple[list[Any], int]:
    return renumber([*e[:5], 42, *e[5:]]), 5


@case("schema", "an event is a JSON object with a string 'type'")
def _event_without_type(e: list[Json]) -> tuple[list[Any], int]:
    return renumber([*e[:5], {"note": "no type"}, *e[5:]]), 5


def _all_rules(params: list[Any]) -> set[str]:
    return {p.values[0] for p in params}


@pytest.mark.parametrize(("rule", "says", "status", "mutate"), EVENT_CASES)
def test_one_fault_in_an_event_list_breaks_exactly_one_rule(
    rule: str, says: str, status: Status, mutate: Mutation
) -> None:
    events, index = mutate(stream(status))
    report = check_stream(events)
    assert found(report) == [(rule, index)], "\n".join(map(str, report.violations))
    (violation,) = report.violations
    assert says in violation.message
    assert violation.line is None  # no SSE here
    assert len(report.events) == len(events)


@pytest.mark.parametrize(("rule", "says", "status", "mutate"), EVENT_CASES)
def test_the_same_fault_framed_as_sse_gives_the_same_report_with_lines(
    rule: str, says: str, status: Status, mutate: Mutation
) -> None:
    events, index = mutate(stream(status))
    chunks = frames(events)
    report = check_stream(b"".join(chunks) + DONE_FRAME)
    assert found(report) == [(rule, index)], "\n".join(map(str, report.violations))
    (violation,) = report.violations
    expected_line = line_of(chunks, index) if index < len(events) else None
    assert violation.line == expected_line
    assert says in violation.message


# -- framing faults (raw SSE) ----------------------------------------------------------------------
RawMutation = Callable[[list[Json]], tuple[bytes, int, int | None]]
RAW_CASES: list[Any] = []


def raw_case(rule: str, says: str) -> Callable[[RawMutation], RawMutation]:
    def register(mutate: RawMutation) -> RawMutation:
        name = mutate.__name__.removeprefix("_")
        RAW_CASES.append(pytest.param(rule, says, mutate, id=f"{rule}:{name}"))
        return mutate

    return register


def joined(chunks: list[bytes], done: bytes = DONE_FRAME) -> bytes:
    return b"".join(chunks) + done


@raw_case("event-type-mismatch", "event: 'response.output_text.done' but type")
def _event_line_differs(e: list[Json]) -> tuple[bytes, int, int | None]:
    chunks = frames(e)
    i = at(e, "response.output_text.delta")
    chunks[i] = chunks[i].replace(b"event: response.output_text.delta\n",
                                  b"event: response.output_text.done\n")
    return joined(chunks), i, line_of(chunks, i)


@raw_case("after-done", "acme:trace after data: [DONE]")
def _event_after_done(e: list[Json]) -> tuple[bytes, int, int | None]:
    chunks = [*frames(e), DONE_FRAME, frame_event({**vendor(), "sequence_number": len(e)})]
    return b"".join(chunks), len(e), line_of(chunks, len(e) + 1)


@raw_case("after-done", "response.completed after data: [DONE]")
def _terminal_again_after_done(e: list[Json]) -> tuple[bytes, int, int | None]:
    again = {**e[-1], "sequence_number": len(e)}  # after [DONE]: not a second terminal
    chunks = [*frames(e), DONE_FRAME, frame_event(again)]
    return b"".join(chunks), len(e), line_of(chunks, len(e) + 1)


@raw_case("after-done", "a second data: [DONE]")
def _done_twice(e: list[Json]) -> tuple[bytes, int, int | None]:
    chunks = [*frames(e), DONE_FRAME, DONE_FRAME]
    return b"".join(chunks), len(e), line_of(chunks, len(e) + 1)


@raw_case("no-done", "does not end with data: [DONE]")
def _done_missing(e: list[Json]) -> tuple[bytes, int, int | None]:
    return joined(frames(e), b""), len(e), None


@raw_case("sse-invalid-json", "data is not JSON (Expecting")
def _truncated_json(e: list[Json]) -> tuple[bytes, int, int | None]:
    # a vendor event, so that losing it costs nothing else (compare the next test)
    events = renumber([*e[:5], vendor(), *e[5:]])
    chunks = frames(events)
    chunks[5] = chunks[5][: chunks[5].index(b",")] + b"\n\n"
    return joined(chunks), 5, line_of(chunks, 5)


@raw_case("sse-crlf", "lines end with CR LF or CR; Open Responses streams use LF (")
def _crlf_everywhere(e: list[Json]) -> tuple[bytes, int, int | None]:
    return joined(frames(e)).replace(b"\n", b"\r\n"), 0, 1  # named once, not once per event


@raw_case("sse-crlf", "lines end with CR LF or CR")
def _cr_everywhere(e: list[Json]) -> tuple[bytes, int, int | None]:
    return joined(frames(e)).replace(b"\n", b"\r"), 0, 1


@raw_case("sse-crlf", "Open Responses streams use LF")
def _crlf_in_one_event(e: list[Json]) -> tuple[bytes, int, int | None]:
    chunks = frames(e)
    chunks[4] = chunks[4].replace(b"\n", b"\r\n")
    return joined(chunks), 4, line_of(chunks, 4)


@raw_case("sse-multiline-data", "the data spans 2 data lines")
def _data_on_two_lines(e: list[Json]) -> tuple[bytes, int, int | None]:
    chunks = frames(e)
    i = at(e, "response.output_text.delta")
    chunks[i] = chunks[i].replace(b',"sequence_number"', b'\ndata: ,"sequence_number"', 1)
    assert chunks[i].count(b"data: ") == 2
    return joined(chunks), i, line_of(chunks, i)


@raw_case("sse-missing-blank-line", "the stream ends inside an event")
def _no_blank_line_after_done(e: list[Json]) -> tuple[bytes, int, int | None]:
    chunks = frames(e)
    return joined(chunks, b"data: [DONE]\n"), len(e), line_of([*chunks, b""], len(e))


@raw_case("sse-missing-blank-line", "no blank line after it")
def _no_newline_at_all_after_done(e: list[Json]) -> tuple[bytes, int, int | None]:
    chunks = frames(e)
    return joined(chunks, b"data: [DONE]"), len(e), line_of([*chunks, b""], len(e))


@raw_case("sse-id-line", "an id: line ('5')")
def _id_line(e: list[Json]) -> tuple[bytes, int, int | None]:
    chunks = frames(e)
    chunks[5] = b"id: 5\n" + chunks[5]
    return joined(chunks), 5, line_of(chunks, 5)


@pytest.mark.parametrize(("rule", "says", "mutate"), RAW_CASES)
def test_one_framing_fault_breaks_exactly_one_rule(
    rule: str, says: str, mutate: RawMutation
) -> None:
    body, index, line = mutate(stream())
    report = check_stream(body)
    assert found(report) == [(rule, index)], "\n".join(map(str, report.violations))
    (violation,) = report.violations
    assert violation.line == line
    assert says in violation.message
    assert report.response == BASE["completed"][-1]["response"]


def test_every_rule_has_a_failing_case() -> None:
    assert _all_rules(EVENT_CASES) | _all_rules(RAW_CASES) == set(RULES)


def test_comments_and_a_leading_blank_line_are_not_faults() -> None:
    chunks = frames(stream())
    body = b"\n: keep-alive\n\n" + b"".join(c if i % 5 else b": ping\n" + c
                                          for i, c in enumerate(chunks)) + DONE_FRAME
    report = check_stream(body)
    assert report.ok, report.violations


def test_an_unreadable_event_keeps_positions_and_numbering_in_step() -> None:
    events = renumber([*stream()[:5], vendor(), *stream()[5:]])
    chunks = frames(events)
    chunks[5] = b"data: {not json\n\n"
    report = check_stream(joined(chunks))
    assert found(report) == [("sse-invalid-json", 5)]
    assert len(report.events) == len(events)
    assert report.events[6] == events[6]


# -- faults that genuinely break two rules ---------------------------------------------------------
def test_a_missing_sequence_number_breaks_the_schema_too() -> None:
    events = stream()
    del events[5]["sequence_number"]
    # sequence_number is required by the official schema as well as by the numbering rule
    assert found(check_stream(events)) == [("sequence-number", 5), ("schema", 5)]
    assert found(check_stream(events, schema=False)) == [("sequence-number", 5)]


def test_an_unreadable_delta_loses_its_text() -> None:
    events = stream()
    i = at(events, "response.output_text.delta")
    chunks = frames(events)
    chunks[i] = chunks[i][:-3] + b"\n\n"  # cut off the closing brace
    report = check_stream(joined(chunks))
    # the JSON is broken, and without that delta the deltas really do not add up to the text
    assert found(report) == [
        ("sse-invalid-json", i),
        ("done-mismatch", at(events, "response.output_text.done")),
    ]


def test_a_delta_of_the_wrong_json_type_breaks_the_text_too() -> None:
    events = stream()
    i = at(events, "response.function_call_arguments.delta")
    events[i]["delta"] = 7
    # the schema wants a string; and "7" is not what the arguments start with
    assert check_stream(events).rules == {"schema", "done-mismatch"}


def test_a_blank_line_missing_between_events_merges_them() -> None:
    events = stream()
    i = at(events, "response.output_text.delta")
    assert events[i + 1]["type"] == "response.output_text.delta"
    chunks = frames(events)
    chunks[i] = chunks[i][:-1]  # two deltas run together: one message, two data lines
    report = check_stream(joined(chunks))
    # SSE cannot tell where the first ended: the message has two data lines that are not one
    # JSON, and the reader loses both deltas, so one number goes missing (the message stood for
    # one event) and the deltas no longer add up to the text.
    assert found(report) == [
        ("sse-multiline-data", i),
        ("sse-invalid-json", i),
        ("sequence-number", i + 1),
        ("done-mismatch", at(events, "response.output_text.done") - 1),
    ]


# -- messages, reports, fold_events ----------------------------------------------------------------
@pytest.mark.parametrize(("rule", "says", "status", "mutate"), EVENT_CASES)
def test_messages_are_one_line_and_name_the_rule(
    rule: str, says: str, status: Status, mutate: Mutation
) -> None:
    events, _ = mutate(stream(status))
    for violation in check_stream(events).violations:
        text = str(violation)
        assert "\n" not in text and "\r" not in text
        assert text.startswith(f"{rule} at event {violation.index}: ")
        assert len(violation.message) < 200


@pytest.mark.parametrize(("rule", "says", "mutate"), RAW_CASES)
def test_framing_messages_are_one_line_too(rule: str, says: str, mutate: RawMutation) -> None:
    body, _, _ = mutate(stream())
    for violation in check_stream(body).violations:
        assert "\n" not in str(violation) and "\r" not in str(violation)
        where = f" (line {violation.line})" if violation.line is not None else ""
        assert str(violation).startswith(f"{rule} at event {violation.index}{where}: ")


def test_line_breaks_in_what_a_message_quotes_are_escaped() -> None:
    report = check_stream([vendor("acme:two\nlines"), *stream()[1:]])
    (violation,) = report.violations
    assert violation.rule == "first-event"
    assert "\n" not in violation.message and "acme:two\\nlines" in violation.message


def test_violation_text_names_the_line_for_raw_input() -> None:
    assert str(Violation("sse-id-line", 5, "an id: line", 16)) == (
        "sse-id-line at event 5 (line 16): an id: line"
    )
    assert str(Violation("terminal-count", None, "none")) == "terminal-count at stream: none"


def test_every_rule_is_described_on_one_line() -> None:
    for rule, description in RULES.items():
        assert rule == rule.lower() and " " not in rule
        assert description and "\n" not in description


def test_fold_events_raises_protocol_error_with_the_violations() -> None:
    events = stream()
    i = at(events, "response.output_text.done")
    events[i]["text"] = "Hello?"
    with pytest.raises(ProtocolError) as caught:
        fold_events(events)
    assert isinstance(caught.value, ValueError)
    assert found(caught.value) == [("done-mismatch", i)]
    assert str(caught.value) == str(caught.value.violations[0])


def test_fold_events_raises_on_a_stream_without_a_terminal() -> None:
    with pytest.raises(ProtocolError, match="terminal-count at event 2"):
        fold_events(stream()[:2])
    with pytest.raises(ProtocolError, match="terminal-count"):
        fold_events([])


def test_a_terminal_without_its_response_is_still_the_terminal() -> None:
    events = stream()
    events[-1]["response"] = None
    report = check_stream(events)
    assert found(report) == [("schema", len(events) - 1)]  # not also "no terminal event"
    assert report.response is None
    with pytest.raises(ProtocolError, match=r"response\.completed has no response object"):
        fold_events(events)  # without the schema, the fold still names it


def test_fold_events_skips_the_schema() -> None:
    events = stream("failed")
    i = at(events, "error")
    events[i] = {**events[i]["error"], "type": "error", "sequence_number": i}  # flat
    assert check_stream(events).rules == {"schema"}
    assert check_stream(events, schema=False).ok
    assert fold_events(events)["status"] == "failed"


@pytest.mark.parametrize("nth", [0, 1, 2, 3])
def test_a_null_item_is_allowed_and_the_stream_still_folds(nth: int) -> None:
    # The official schema allows "item": null on output_item.added and .done (the Vercel
    # provider crashes on it all the same); the item's other events say which item it is.
    events = stream()
    added = at(events, "response.output_item.added", nth)
    done = at(events, "response.output_item.done", nth)
    events[added]["item"] = None
    events[done]["item"] = None
    report = check_stream(events)
    assert report.ok, report.violations
    assert report.response == events[-1]["response"]


# -- robustness ------------------------------------------------------------------------------------
junk = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 9), st.text(max_size=6),
    st.lists(st.integers(0, 3), max_size=2), st.dictionaries(st.text(max_size=3), st.none(),
                                                             max_size=2),
)


@st.composite
def broken_streams(draw: st.DrawFn) -> list[Any]:
    events: list[Any] = stream(draw(st.sampled_from(["completed", "incomplete", "failed"])))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(events) - 1))
        how = draw(st.sampled_from(["drop", "repeat", "swap", "field", "delete", "junk"]))
        if how == "drop":
            del events[i]
        elif how == "repeat":
            events.insert(i, copy.deepcopy(events[i]))
        elif how == "swap" and i + 1 < len(events):
            events[i], events[i + 1] = events[i + 1], events[i]
        elif how in ("field", "delete") and isinstance(events[i], dict) and events[i]:
            key = draw(st.sampled_from(sorted(events[i])))
            if how == "delete":
                del events[i][key]
            else:
                events[i][key] = draw(junk)
        elif how == "junk":
            events[i] = draw(junk)
        if not events:
            break
    if draw(st.booleans()):
        events = renumber(events)
    return events


@settings(max_examples=150, deadline=None)
@given(events=broken_streams())
def test_the_checker_survives_any_broken_stream(events: list[Any]) -> None:
    report = check_stream(events)
    assert report.rules <= set(RULES)
    assert len(report.events) == len(events)
    for violation in report.violations:
        assert violation.index is not None and 0 <= violation.index <= len(events)
        assert "\n" not in str(violation)
    framed = check_stream(b"".join(frames(events)) + DONE_FRAME)
    assert framed.rules <= set(RULES)
