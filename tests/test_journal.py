"""``ormock.engine.journal``: what a journal entry holds and how it reads as plain data,
``summarize`` (a stream in a few flat tuples), masked headers, the terminal snapshot, and how a
raw answer ended."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from ormock import RawReply
from ormock.engine.entry_answer import final_response, raw_ended
from ormock.engine.journal import JournalEntry, masked, opened, summarize
from ormock.protocol.secrets import MASK

Json = dict[str, Any]


def _stream() -> list[Json]:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    call = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f",
            "arguments": "{}"}
    return [
        {"type": "response.created", "sequence_number": 0,
         "response": {"id": "resp_1", "status": "in_progress"}},
        {"type": "response.output_item.added", "sequence_number": 1, "item": message},
        {"type": "response.output_text.delta", "sequence_number": 2, "delta": "Hi"},
        {"type": "response.output_item.done", "sequence_number": 3, "item": message},
        {"type": "response.output_item.added", "sequence_number": 4, "item": call},
        {"type": "response.output_item.done", "sequence_number": 5, "item": call},
        {"type": "response.completed", "sequence_number": 6,
         "response": {"id": "resp_1", "status": "completed"}},
    ]


def test_summarize_keeps_types_numbers_delays_and_output_ids() -> None:
    events = _stream()
    sent = summarize(events, [0.5, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0])
    assert sent.types == tuple(e["type"] for e in events)
    assert sent.numbers == tuple(range(7))
    assert sent.delays == (0.5, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0)
    assert sent.output_ids == ("msg_1", "fc_1", "call_1")  # each once, call ids too
    assert summarize(events, None).delays is None
    assert summarize([], None).types == ()


def test_an_entry_lists_its_events_with_their_offsets() -> None:
    entry = JournalEntry("POST", "/v1/responses", {}, {"model": "m"})
    assert entry.events == [] and entry.output_ids == []
    entry.sent = summarize(_stream()[:3], [0.5, 0.02, 0.1])
    assert entry.events == [
        {"type": "response.created", "sequence_number": 0, "offset_ms": 500.0},
        {"type": "response.output_item.added", "sequence_number": 1, "offset_ms": 520.0},
        {"type": "response.output_text.delta", "sequence_number": 2, "offset_ms": 620.0},
    ]
    entry.sent = summarize(_stream(), None)  # unpaced: every offset is 0
    assert {e["offset_ms"] for e in entry.events} == {0.0}
    assert entry.output_ids == ["msg_1", "fc_1", "call_1"]


def test_to_dict_is_plain_json_data() -> None:
    body = {"model": "m", "input": [{"role": "user", "content": "x"}]}
    entry = JournalEntry("POST", "/ns/v1/responses", {"x-trace": "t"}, body, at=1.25, size=64,
                         status=200, stream=True, response_id="resp_1",
                         response_status="completed", scenario="text", step=1,
                         faults=["slow"], reply_headers={"retry-after": "1"},
                         sent_bytes=4096, finished_at=1.5,
                         struck=[{"fault": "slow", "index": 0, "frame": None, "byte": None,
                                  "what": "paced from the first event"}])
    entry.sent = summarize(_stream(), None)
    data = entry.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert "sent" not in data
    assert data == {
        "method": "POST", "path": "/ns/v1/responses", "headers": {"x-trace": "t"},
        "body": body, "at": 1.25, "id": "", "namespace": "", "size": 64, "status": 200,
        "stream": True,
        "response_id": "resp_1", "response_status": "completed", "error": None,
        "scenario": "text", "step": 1, "step_used": None, "cassette": None,
        "interaction": None, "faults": ["slow"], "skipped": [],
        "struck": [{"fault": "slow", "index": 0, "frame": None, "byte": None,
                    "what": "paced from the first event"}],
        "reply_headers": {"retry-after": "1"}, "ended": "whole", "sent_bytes": 4096,
        "finished_at": 1.5,
        "events": entry.events, "output_ids": ["msg_1", "fc_1", "call_1"],
    }
    data["headers"]["x-trace"] = "changed"
    data["faults"].append("other")
    data["struck"][0]["index"] = 9
    assert entry.headers == {"x-trace": "t"} and entry.faults == ["slow"]  # copies
    assert entry.struck[0]["index"] == 0
    assert entry.json is body


@pytest.mark.parametrize("name", ["Authorization", "x-api-key", "api-key", "cookie",
                                  "x-my-token", "x-client-secret", "openai-organization"])
def test_masked_hides_secret_headers(name: str) -> None:
    headers = {name: "Bearer sk-live-0123456789", "x-trace": "t1", "content-type": "a/b"}
    assert masked(headers) == {name: MASK, "x-trace": "t1", "content-type": "a/b"}


def test_final_response_is_the_terminal_snapshot() -> None:
    events = _stream()
    assert final_response(events) == {"id": "resp_1", "status": "completed"}
    assert final_response(events[:-1]) is None  # in_progress is not terminal
    failed = {"type": "response.failed", "response": {"id": "r", "status": "failed"}}
    assert final_response([*events[:3], failed]) == {"id": "r", "status": "failed"}


@pytest.mark.parametrize(("reply", "ended"), [
    (RawReply(200, b'{"id": "resp_1"}'), "whole"),
    (RawReply(200, b'{"id": "resp_'), "truncated"),
    (RawReply(500, b"not json"), "whole"),  # an error answer, however it reads
    (RawReply(200, b"data: x", content_type="text/event-stream"), "whole"),
])
def test_raw_ended(reply: RawReply, ended: str) -> None:
    assert raw_ended(reply) == ended


def test_an_opened_entry_is_the_one_its_init_makes() -> None:
    body, headers = {"model": "m"}, {"x-trace": "t"}
    made, opened_one = (JournalEntry("POST", "/v1/responses", headers, body, at=1.5, size=30),
                        opened("POST", "/v1/responses", headers, body, 1.5, 30))
    assert opened_one == made and repr(opened_one) == repr(made)
    assert opened_one.to_dict() == made.to_dict()
    for field in dataclasses.fields(JournalEntry):  # every field, the hidden ``sent`` too
        assert getattr(opened_one, field.name) == getattr(made, field.name), field.name
    other = opened("POST", "/v1/responses", {}, {}, 0.0, 0)
    for name in ("faults", "struck", "skipped", "reply_headers"):  # its own, not shared
        assert getattr(other, name) is not getattr(opened_one, name)
    opened_one.faults.append("f")
    opened_one.status, opened_one.sent = 200, summarize(_stream(), None)
    assert other.faults == [] and other.status == 0 and other.sent is None
    assert dataclasses.replace(opened_one, status=201).faults == ["f"]


def test_an_opened_entry_makes_its_fault_lists_only_when_they_are_set_or_read() -> None:
    from ormock.engine.journal import answer_size

    entry = opened("POST", "/v1/responses", {}, {}, 0.0, 0)
    assert answer_size(entry) == 0
    assert (entry._faults, entry._struck, entry._skipped) == (None, None, None)  # none made
    entry.skipped.append("disconnect")  # read: made, kept, and grown as a field's list
    entry.faults = ["slow"]
    assert (entry.faults, entry.skipped, entry.struck) == (["slow"], ["disconnect"], [])
    assert entry.struck is entry.struck and entry._struck == []
    assert answer_size(entry) == len("slow") + len("disconnect")
    assert entry.to_dict()["skipped"] == ["disconnect"]
    made = JournalEntry("POST", "/v1/responses", {}, {}, faults=["f"], skipped=["s"])
    assert (made.faults, made.struck, made.skipped) == (["f"], [], ["s"])
    assert JournalEntry.from_dict(made.to_dict()) == made
    assert dataclasses.replace(entry).skipped == ["disconnect"]


def test_a_journal_trims_by_its_entries_sizes() -> None:
    from ormock.engine.journal import ENTRY_FIELDS, Journal, entry_size, opened

    journal = Journal(10, 10 * ENTRY_FIELDS, lambda entry: None, lambda entry: None)
    entries = [opened("POST", "/v1/responses", {}, None, 0.0, n * 10) for n in range(30)]
    for entry in entries:
        journal.append(entry)
    assert len(journal) > 3 and journal._sizes(3) == sum(map(entry_size, journal[:3]))
    assert journal.bytes == sum(map(entry_size, journal)) <= 10 * ENTRY_FIELDS
    assert journal[-1] is entries[-1] and journal.dropped == 30 - len(journal)


def test_an_entry_is_counted_with_its_headers_and_again_with_its_answer() -> None:
    from ormock.engine.journal import ENTRY_FIELDS, Journal, entry_size, opened

    journal = Journal(10, 100 * ENTRY_FIELDS, lambda entry: None, lambda entry: None)
    entry = opened("POST", "/v1/responses", {"x-pad": "p" * 1000}, None, 0.0, 20)
    journal.append(entry)
    assert journal.bytes == entry_size(entry) == ENTRY_FIELDS + 20 + 13 + 5 + 1000
    entry.sent, entry.reply_headers = summarize(_stream(), None), {"retry-after": "1"}
    journal.recount(entry)  # its answer is in: counted too, and taken away with it
    assert journal.bytes == entry_size(entry) > ENTRY_FIELDS + 1033 + 24 * len(_stream())
    gone = opened("POST", "/v1/responses", {}, None, 0.0, 0)
    gone.error = {"message": "m" * 5000}
    journal.recount(gone)  # never in it: nothing to count
    journal.clear()
    journal.recount(entry)  # no longer in it: nothing either
    assert journal.bytes == 0


def test_a_journals_counts_are_kept_on_the_entry_and_shown_nowhere() -> None:
    from ormock.engine.journal import FIELDS, Journal, entry_size, opened, request_size

    journal = Journal(10, 10**6, lambda entry: None, lambda entry: None)
    entry = opened("POST", "/v1/responses", {"host": "h"}, {"model": "m"}, 0.0, 15)
    twin = dataclasses.replace(entry)
    journal.append(entry)
    assert journal.bytes == request_size(entry)
    entry.reply_headers = {"retry-after": "1"}
    journal.recount(entry)
    assert journal.bytes == entry_size(entry) > request_size(entry)
    # the sizes counted are bookkeeping: no field of the entry's data, no part of equality
    assert not any("counted" in name for name in (*FIELDS, *entry.to_dict()))
    twin.reply_headers = {"retry-after": "1"}
    assert twin == entry and repr(twin) == repr(entry)
