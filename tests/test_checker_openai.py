"""The checker under ``--profile openai``: how OpenAI really streams passes, genuine faults do not.

The streams here are small synthetic ones shaped like recordings of OpenAI's Responses API (no
``data: [DONE]``, hosted-tool events, ``response.reasoning_text.*``, background and resumed
streams, re-encrypted reasoning). Each accepted behaviour passes under the openai profile and is
still reported under the default profile; each genuine deviation is reported under the openai
profile with exactly its rule.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ormock.cli import main
from ormock.protocol import check_stream
from ormock.protocol.events import CORE_EVENT_TYPES
from ormock.protocol.profile import get_profile, openai_vocabulary
from ormock.protocol.sse import DONE_FRAME, frame_event

Json = dict[str, Any]
RID = "resp_0a1b"


# -- building OpenAI-shaped streams ------------------------------------------------------------
def snapshot(status: str, output: list[Json] | None = None) -> Json:
    return {"id": RID, "object": "response", "created_at": 1, "status": status, "background": False,
            "model": "gpt-5", "output": output or [], "tools": [{"type": "web_search"}]}


def reasoning(encrypted: str = "gAAA-1") -> list[Json]:
    """A reasoning item with a summary; its output_item.done carries ``encrypted_content``."""
    rid = "rs_1"
    part = {"type": "summary_text", "text": "Think."}
    done = {"type": "reasoning", "id": rid, "summary": [part], "encrypted_content": encrypted}
    return [
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"type": "reasoning", "id": rid, "summary": [], "encrypted_content": None}},
        {"type": "response.reasoning_summary_part.added", "item_id": rid, "output_index": 0,
         "summary_index": 0, "part": {"type": "summary_text", "text": ""}},
        {"type": "response.reasoning_summary_text.delta", "item_id": rid, "output_index": 0,
         "summary_index": 0, "delta": "Think."},
        {"type": "response.reasoning_summary_text.done", "item_id": rid, "output_index": 0,
         "summary_index": 0, "text": "Think."},
        {"type": "response.reasoning_summary_part.done", "item_id": rid, "output_index": 0,
         "summary_index": 0, "part": part},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
    ]


def hosted(index: int, kind: str = "web_search_call") -> list[Json]:
    """A hosted-tool item and the events OpenAI streams about it (the openai SDK's names)."""
    hid = f"{kind[:2]}_{index}"
    steps = {
        "web_search_call": ["in_progress", "searching", "completed"],
        "file_search_call": ["in_progress", "searching", "completed"],
        "code_interpreter_call": ["in_progress", "interpreting", "completed"],
        "image_generation_call": ["in_progress", "generating", "completed"],
        "mcp_call": ["in_progress", "completed"],
        "mcp_list_tools": ["in_progress", "completed"],
    }[kind]
    middle: list[Json] = [{"type": f"response.{kind}.{step}", "item_id": hid,
                           "output_index": index} for step in steps]
    if kind == "code_interpreter_call":
        middle[2:2] = [
            {"type": "response.code_interpreter_call_code.delta", "item_id": hid,
             "output_index": index, "delta": "print(1)"},
            {"type": "response.code_interpreter_call_code.done", "item_id": hid,
             "output_index": index, "code": "print(1)"},
        ]
    if kind == "mcp_call":
        middle[1:1] = [
            {"type": "response.mcp_call_arguments.delta", "item_id": hid, "output_index": index,
             "delta": "{}"},
            {"type": "response.mcp_call_arguments.done", "item_id": hid, "output_index": index,
             "arguments": "{}"},
        ]
    if kind == "image_generation_call":
        middle.insert(2, {"type": "response.image_generation_call.partial_image", "item_id": hid,
                          "output_index": index, "partial_image_index": 0,
                          "partial_image_b64": "iVBO"})
    return [
        {"type": "response.output_item.added", "output_index": index,
         "item": {"type": kind, "id": hid, "status": "in_progress"}},
        *middle,
        {"type": "response.output_item.done", "output_index": index,
         "item": {"type": kind, "id": hid, "status": "completed"}},
    ]


def message(index: int, text: tuple[str, ...] = ("Hello", " there.")) -> list[Json]:
    mid = f"msg_{index}"
    where = {"item_id": mid, "output_index": index, "content_index": 0}
    part = {"type": "output_text", "text": "".join(text), "annotations": []}
    return [
        {"type": "response.output_item.added", "output_index": index,
         "item": {"type": "message", "id": mid, "status": "in_progress", "role": "assistant",
                  "content": []}},
        {"type": "response.content_part.added", **where,
         "part": {"type": "output_text", "text": "", "annotations": []}},
        *({"type": "response.output_text.delta", **where, "delta": d, "logprobs": []}
          for d in text),
        {"type": "response.output_text.done", **where, "text": "".join(text), "logprobs": []},
        {"type": "response.content_part.done", **where, "part": part},
        {"type": "response.output_item.done", "output_index": index,
         "item": {"type": "message", "id": mid, "status": "completed", "role": "assistant",
                  "content": [part]}},
    ]


def finish(items: list[Json], *, queued: bool = False, reencrypt: bool = True) -> list[Json]:
    """created, in_progress, the items' events, completed (its output: what each item's done
    carried, reasoning re-encrypted), numbered from 0."""
    output = [copy.deepcopy(e["item"]) for e in items if e["type"] == "response.output_item.done"]
    for item in output:
        if reencrypt and item.get("encrypted_content"):
            item["encrypted_content"] += "-again"
    head: list[Json] = [{"type": "response.created",
                         "response": snapshot("queued" if queued else "in_progress")}]
    if queued:
        head.append({"type": "response.queued", "response": snapshot("queued")})
    head.append({"type": "response.in_progress", "response": snapshot("in_progress")})
    events = [*head, *copy.deepcopy(items),
              {"type": "response.completed", "response": snapshot("completed", output)}]
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


def openai_stream() -> list[Json]:
    """Reasoning (re-encrypted at the end), a web search and a message."""
    return finish([*reasoning(), *hosted(1), *message(2)])


def sse(events: list[Json], done: bool = False) -> bytes:
    """Framed as OpenAI frames it: an event: line per frame, no data: [DONE]."""
    return b"".join(frame_event(e) for e in events) + (DONE_FRAME if done else b"")


def rules(report: Any) -> set[str]:
    return {v.rule for v in report.violations}


# -- the vocabulary comes from the openai SDK (tests/test_openai_vocabulary.py) -------------
def test_the_openai_profile_knows_the_sdks_events_beyond_the_core() -> None:
    known = get_profile("openai").known_events
    sdk = set(openai_vocabulary()["events"])
    assert known <= sdk and not known & CORE_EVENT_TYPES
    assert {"response.web_search_call.searching", "response.mcp_list_tools.in_progress",
            "response.code_interpreter_call_code.delta",
            "response.image_generation_call.partial_image"} <= known
    assert "response.reasoning_text.delta" not in known  # read as response.reasoning.delta
    assert get_profile("openresponses").known_events == frozenset()


def test_the_self_check_holds_ormocks_own_openai_streams_to_every_rule() -> None:
    profile = get_profile("openai")
    strict = profile.spellings_only()
    assert strict.event_names == profile.event_names and strict.echo_json_schema
    assert strict.known_events == frozenset() and not strict.done_optional
    assert strict.official_schema and not profile.official_schema
    assert get_profile(None).spellings_only() is get_profile(None)


# -- what OpenAI really does passes under the openai profile -----------------------------------
def _reasoning_text() -> tuple[list[Json], bytes | None]:
    rid = "rs_1"
    where = {"item_id": rid, "output_index": 0, "content_index": 0}
    part = {"type": "reasoning_text", "text": "Hmm."}
    items = [
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"type": "reasoning", "id": rid, "summary": [], "content": []}},
        {"type": "response.content_part.added", **where,
         "part": {"type": "reasoning_text", "text": ""}},
        {"type": "response.reasoning_text.delta", **where, "delta": "Hmm."},
        {"type": "response.reasoning_text.done", **where, "text": "Hmm."},
        {"type": "response.content_part.done", **where, "part": part},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"type": "reasoning", "id": rid, "summary": [], "content": [part]}},
        *message(1),
    ]
    return finish(items), None


def _hosted(kind: str) -> Callable[[], tuple[list[Json], bytes | None]]:
    def build() -> tuple[list[Json], bytes | None]:
        return finish([*hosted(0, kind), *message(1)]), None
    build.__name__ = kind
    return build


def _background() -> tuple[list[Json], bytes | None]:
    return finish([*message(0)], queued=True), None


def _compaction_reencrypted() -> tuple[list[Json], bytes | None]:
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA-c"}
    events = [{"type": "response.output_item.added", "output_index": 0,
               "item": {**item, "encrypted_content": None}},
              {"type": "response.compaction.compacting", "item_id": "cmp_1", "output_index": 0},
              {"type": "response.output_item.done", "output_index": 0, "item": item}]
    return finish([*events, *message(1)]), None


def _resumed_mid_text() -> tuple[list[Json], bytes | None]:
    whole = openai_stream()
    cut = next(i for i, e in enumerate(whole) if e["type"] == "response.output_text.delta") + 1
    return whole[cut:], b"starting_after=%d" % whole[cut - 1]["sequence_number"]


def _resumed_after_the_last_item() -> tuple[list[Json], bytes | None]:
    whole = openai_stream()
    return whole[-1:], b"starting_after=%d" % whole[-2]["sequence_number"]


def _resumed_mid_function_call() -> tuple[list[Json], bytes | None]:
    fid = "fc_1"
    where = {"item_id": fid, "output_index": 0}
    final = {"type": "function_call", "id": fid, "call_id": "call_1", "name": "f",
             "arguments": '{"a": 1}', "status": "completed"}
    whole = finish([
        {"type": "response.output_item.added", "output_index": 0,
         "item": {**final, "arguments": "", "status": "in_progress"}},
        {"type": "response.function_call_arguments.delta", **where, "delta": '{"a"'},
        {"type": "response.function_call_arguments.delta", **where, "delta": ": 1}"},
        {"type": "response.function_call_arguments.done", **where, "arguments": '{"a": 1}'},
        {"type": "response.output_item.done", "output_index": 0, "item": final},
    ])
    return whole[4:], b"resumed"


ACCEPTED: list[tuple[str, Callable[[], tuple[list[Json], bytes | None]], str]] = [
    ("no data: [DONE] and hosted web search, reasoning re-encrypted", lambda: (openai_stream(),
                                                                               None), "no-done"),
    ("response.reasoning_text.*", _reasoning_text, "unknown-event"),
    *((f"hosted {kind} events", _hosted(kind), "unknown-event") for kind in (
        "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call",
        "mcp_list_tools")),
    ("a background stream: created queued, response.queued, in_progress", _background,
     "no-done"),
    ("a compaction item re-encrypted", _compaction_reencrypted, "snapshot-mismatch"),
    ("a resumed tail that begins inside a text part", _resumed_mid_text, "first-event"),
    ("a resumed tail that begins after the last item", _resumed_after_the_last_item,
     "first-event"),
    ("a resumed tail that begins inside a function call", _resumed_mid_function_call,
     "first-event"),
]


@pytest.mark.parametrize(("name", "build", "default_rule"), ACCEPTED,
                         ids=[name for name, _, _ in ACCEPTED])
def test_what_openai_really_streams_passes_under_the_openai_profile(
    name: str, build: Callable[[], tuple[list[Json], bytes | None]], default_rule: str
) -> None:
    events, resumption = build()
    options: dict[str, Any] = {}
    if resumption == b"resumed":
        options["resumed"] = True
    elif resumption is not None:
        options["starting_after"] = int(resumption.split(b"=")[1])
    report = check_stream(sse(events), profile="openai", **options)
    assert report.ok, [str(v) for v in report.violations]
    assert report.response is not None and report.response["status"] == "completed"
    assert check_stream(events, profile="openai", **options).ok  # as an event list too
    # the default profile (and the openai profile's spellings alone) still holds it to Open
    # Responses
    assert default_rule in rules(check_stream(sse(events)))


def test_a_data_done_is_still_fine_and_nothing_may_follow_it() -> None:
    events = openai_stream()
    assert check_stream(sse(events, done=True), profile="openai").ok
    late = sse(events, done=True) + frame_event({**events[-1], "sequence_number": 99})
    assert "after-done" in rules(check_stream(late, profile="openai"))


# -- genuine deviations are still reported, each with its rule --------------------------------
def _without_sequence_numbers() -> list[Json]:
    return [{k: v for k, v in e.items() if k != "sequence_number"} for e in openai_stream()]


def _hosted_item_never_closed() -> list[Json]:
    events = finish([*hosted(0, "mcp_list_tools"), *hosted(1, "mcp_list_tools")])
    first_done = next(i for i, e in enumerate(events) if e["type"] == "response.output_item.done")
    del events[first_done]
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


def _unknown_event() -> list[Json]:
    events = openai_stream()
    at = next(i for i, e in enumerate(events) if e["type"] == "response.web_search_call.searching")
    events[at]["type"] = "response.web_search_call.pondering"
    return events


def _hosted_event_for_the_wrong_item() -> list[Json]:
    events = openai_stream()
    at = next(i for i, e in enumerate(events) if e["type"] == "response.web_search_call.searching")
    events[at]["item_id"] = "ws_other"
    return events


def _hosted_event_after_its_item_is_done() -> list[Json]:
    events = openai_stream()
    at = next(i for i, e in enumerate(events) if e["type"] == "response.web_search_call.searching")
    moved = events.pop(at)
    done = next(i for i, e in enumerate(events) if e["type"] == "response.output_item.done"
                and e["output_index"] == 1)
    events.insert(done + 1, moved)
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


def _reasoning_differs_beyond_encryption() -> list[Json]:
    events = openai_stream()
    events[-1]["response"]["output"][0]["summary"][0]["text"] = "Something else."
    return events


def _a_number_skipped() -> list[Json]:
    events = openai_stream()
    for event in events[5:]:
        event["sequence_number"] += 1
    return events


DEVIATIONS: list[tuple[str, Callable[[], list[Json]], str, dict[str, Any]]] = [
    ("old recordings: no sequence_number", _without_sequence_numbers, "sequence-number", {}),
    ("items never closed", _hosted_item_never_closed, "item-open", {}),
    ("an event type the openai SDK does not know", _unknown_event, "unknown-event", {}),
    ("a hosted-tool event naming another item", _hosted_event_for_the_wrong_item,
     "index-mismatch", {}),
    ("a hosted-tool event after its item is done", _hosted_event_after_its_item_is_done,
     "order", {}),
    ("reasoning that differs beyond its encrypted_content",
     _reasoning_differs_beyond_encryption, "snapshot-mismatch", {}),
    ("a sequence_number skipped", _a_number_skipped, "sequence-number", {}),
    ("a stream that starts mid-sequence, not said to be resumed",
     lambda: openai_stream()[5:], "first-event delta-before-added", {}),
    ("a resumed tail that starts at the wrong number", lambda: openai_stream()[5:],
     "sequence-number", {"starting_after": 2}),
    ("a resumed tail whose text done does not end with its deltas",
     lambda: [({**e, "text": "Other"} if e["type"] == "response.output_text.done" else e)
              for e in _resumed_mid_text()[0]], "done-mismatch", {"resumed": True}),
]


@pytest.mark.parametrize(("name", "build", "rule", "options"), DEVIATIONS,
                         ids=[name for name, _, _, _ in DEVIATIONS])
def test_genuine_deviations_are_reported_with_their_rule(
    name: str, build: Callable[[], list[Json]], rule: str, options: dict[str, Any]
) -> None:
    report = check_stream(sse(build()), profile="openai", **options)
    assert rules(report) == set(rule.split()), [str(v) for v in report.violations]


# -- from the command line ---------------------------------------------------------------------
def test_ormock_check_profile_openai(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    events = openai_stream()
    capture = tmp_path / "openai.sse"
    capture.write_bytes(sse(events))
    assert main(["check", "--profile", "openai", str(capture)]) == 0
    assert capsys.readouterr().out == f"{capture}: ok ({len(events)} events)\n"

    assert main(["check", str(capture)]) == 1  # the default profile: Open Responses
    out = capsys.readouterr().out
    assert "unknown-event: 'response.web_search_call.in_progress'" in out and "no-done" in out

    tail = tmp_path / "tail.sse"
    tail.write_bytes(sse(events[5:]))
    assert main(["check", "--profile", "openai", "--starting-after", "4", str(tail)]) == 0
    assert main(["check", "--profile", "openai", "--resumed", str(tail)]) == 0
    capsys.readouterr()
    assert main(["check", "--profile", "openai", "--starting-after", "2", str(tail)]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{tail}:1: sequence-number: sequence_number is 5, expected 3")


def test_ormock_check_rejects_an_unknown_profile(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["check", "--profile", "acme", str(tmp_path / "x.sse")])
    assert exit_.value.code == 2
    assert "invalid choice: 'acme'" in capsys.readouterr().err
