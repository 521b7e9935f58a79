"""The cassette file format: exact bytes both ways, hand-editable YAML, errors at file:line."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ormock.cassette import (
    Cassette,
    CassetteError,
    RecordedRequest,
    Recording,
    dump_cassette,
    load_cassette,
    parse_cassette,
)
from ormock.cassette.fileformat import response_bytes
from ormock.cassette.framing import body_bytes, split_messages, to_body
from ormock.cassette.model import Ended
from ormock.cassette.replay import answer_frames
from ormock.protocol.sse import frame_event

REQUEST = RecordedRequest("POST", "/v1/responses", headers={"content-type": "application/json"},
                          body={"model": "gpt-test", "input": "hi", "stream": True})


def _events(count: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = [{"type": "response.created", "sequence_number": 0,
                                     "response": {"id": "resp_1", "status": "in_progress"}}]
    out += [{"type": "response.output_text.delta", "sequence_number": n, "item_id": "msg_1",
             "output_index": 0, "content_index": 0, "delta": f"w{n} é", "logprobs": []}
            for n in range(1, count)]
    return out


def _record(body: bytes, cuts: list[int], status: int = 200,
            content_type: str = "text/event-stream") -> Recording:
    recording = Recording(REQUEST, started=0.0)
    recording.answer(status, [("Content-Type", content_type), ("X-Request-Id", "req_1")],
                     now=0.010)
    points = [0, *sorted(set(cuts)), len(body)]
    for number, (start, end) in enumerate(itertools.pairwise(points)):
        recording.chunk(body[start:end], now=0.020 + number * 0.005)
    return recording


def _round_trip(cassette: Cassette, tmp_path: Path) -> Cassette:
    file = tmp_path / "c.yaml"
    file.write_text(dump_cassette(cassette), encoding="utf-8")
    return load_cassette(file)


def test_a_canonical_stream_is_events_as_mappings_with_no_raw_bytes(tmp_path: Path) -> None:
    body = b"".join(frame_event(e) for e in _events(5)) + b"data: [DONE]\n\n"
    interaction = _record(body, [30, 200]).interaction(now=0.1)
    text = dump_cassette(Cassette((interaction,)))
    assert "raw:" not in text and "type: response.output_text.delta" in text
    back = _round_trip(Cassette((interaction,)), tmp_path).interactions[0].response
    assert back is not None and back.messages is not None
    assert response_bytes(back) == body
    assert [m.event for m in back.messages if m.event] == _events(5)
    assert back.messages[-1].done


@pytest.mark.parametrize("framing", [
    pytest.param(lambda e: f"data: {json.dumps(e)}\n\n", id="data-only-spaced-json"),
    pytest.param(lambda e: f"event: {e['type']}\r\ndata: {json.dumps(e)}\r\n\r\n", id="crlf"),
    pytest.param(lambda e: f"id: 1\nevent: {e['type']}\ndata: {json.dumps(e)}\n\n", id="id"),
])
def test_other_framings_come_back_byte_for_byte(framing: object, tmp_path: Path) -> None:
    assert callable(framing)
    body = ("".join(framing(e) for e in _events(4)) + ": keep-alive\n\n").encode()
    interaction = _record(body, [7, 61, 62]).interaction(now=0.1)
    back = _round_trip(Cassette((interaction,)), tmp_path).interactions[0].response
    assert back is not None
    assert response_bytes(back) == body
    assert b"".join(f.data for f in answer_frames(back)) == body


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=900), max_size=12),
       tail=st.sampled_from([b"", b"data: [DONE]\n\n", b"event: x\ndata: {\"a\""]))
def test_any_chunking_replays_the_same_writes(cuts: list[int], tail: bytes) -> None:
    body = b"".join(frame_event(e) for e in _events(6)) + tail
    cuts = [c for c in cuts if c < len(body)]
    interaction = _record(body, cuts).interaction(now=0.2)
    back = parse_cassette(dump_cassette(Cassette((interaction,))))
    response = back.interactions[0].response
    assert response is not None
    frames = answer_frames(response)
    points = [0, *sorted(set(cuts)), len(body)]
    assert [f.data for f in frames] == [body[a:b] for a, b in itertools.pairwise(points)]
    assert b"".join(f.data for f in frames) == body


def test_replay_pauses_follow_the_recorded_offsets_and_speed() -> None:
    body = b"".join(frame_event(e) for e in _events(3))
    response = _record(body, [40, 120]).interaction(now=0.1).response
    assert response is not None
    assert [round(f.delay, 4) for f in answer_frames(response, speed=1)] == [0.01, 0.005, 0.005]
    assert [round(f.delay, 4) for f in answer_frames(response, speed=10)] == \
        [0.001, 0.0005, 0.0005]
    assert all(f.delay == 0 for f in answer_frames(response, speed=0))
    assert all(f.delay == 0 for f in answer_frames(response, speed=1, timed=False))


@pytest.mark.parametrize(("ended", "action"), [("closed", "close"), ("reset", "reset"),
                                               ("stalled", "stall"), ("whole", None)])
def test_the_way_a_body_ended_is_replayed(ended: Ended, action: str | None) -> None:
    body = frame_event(_events(1)[0])
    interaction = _record(body, []).interaction(ended=ended, now=0.1)
    response = parse_cassette(dump_cassette(Cassette((interaction,)))).interactions[0].response
    assert response is not None and response.ended == ended
    frames = answer_frames(response)
    assert frames[0].data == body
    assert [f.action for f in frames[1:]] == ([action] if action else [])


@pytest.mark.parametrize("raw", [
    b'{"id":"resp_1","object":"response"}',
    b'{\n  "id": "resp_1",\n  "object": "response"\n}',
    b'{\n  "id": "resp_1",\n  "text": "\\u00e9"\n}\n',
    b'{"id": "resp_1"}',
    b"not json at all",
    b"\xff\xfe binary",
])
def test_non_streamed_bodies_keep_their_exact_bytes(raw: bytes) -> None:
    assert body_bytes(to_body(raw)) == raw


def test_a_json_body_is_a_mapping_with_its_style_not_an_escaped_blob(tmp_path: Path) -> None:
    raw = b'{\n  "id": "resp_1",\n  "object": "response"\n}'
    interaction = _record(raw, [], content_type="application/json").interaction(now=0.05)
    text = dump_cassette(Cassette((interaction,)))
    assert "style: indent-2" in text and "id: resp_1" in text and "raw:" not in text
    assert response_bytes(_round_trip(Cassette((interaction,)), tmp_path).interactions[0]
                          .response) == raw  # type: ignore[arg-type]


def test_split_messages_keeps_every_byte() -> None:
    body = b"event: a\r\ndata: 1\r\n\r\n\n\ndata: 2\rdata: 3\r\r: c\n\npartial"
    spans = split_messages(body)
    assert b"".join(spans) == body
    assert spans[-1] == b"partial"


def test_an_edited_event_with_stale_chunks_is_an_error_naming_the_line(tmp_path: Path) -> None:
    body = b"".join(frame_event(e) for e in _events(3))
    text = dump_cassette(Cassette((_record(body, [50]).interaction(now=0.1),)))
    text = text.replace("w1 é", "w1 edited by hand")
    file = tmp_path / "edited.yaml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(CassetteError) as caught:
        load_cassette(file)
    message = str(caught.value)
    assert str(file) in message and "chunks" in message and "delete `chunks:`" in message
    line = next(n for n, t in enumerate(text.splitlines(), 1) if t.strip() == "chunks:")
    assert f":{line}:" in message
    # without the chunks, the edited event is written at its `at`
    fixed = text[:text.index("    chunks:")] + text[text.index("    ended:"):]
    file.write_text(fixed, encoding="utf-8")
    response = load_cassette(file).interactions[0].response
    assert response is not None and b"w1 edited by hand" in response_bytes(response)


@pytest.mark.parametrize(("change", "words"), [
    (("version: 1", "version: 7"), "7 is not allowed"),
    (("status: 200", "status: many"), "must be an integer"),
    (("ended: whole", "ended: exploded"), "'exploded' is not allowed"),
    (("headers_at:", "header_at:"), "unknown key 'header_at'"),
    # an HTTP answer and a WebSocket session: once "must be None or None, not a mapping"
    (("\n  response:\n", "\n  socket: {frames: []}\n  response:\n"),
     "interactions[0]: must have one of the keys 'response' or 'socket', not 'response' and "
     "'socket'"),
])
def test_mistakes_name_file_line_and_key(change: tuple[str, str], words: str,
                                         tmp_path: Path) -> None:
    body = frame_event(_events(1)[0])
    text = dump_cassette(Cassette((_record(body, []).interaction(now=0.1),)))
    file = tmp_path / "bad.yaml"
    file.write_text(text.replace(*change), encoding="utf-8")
    with pytest.raises(CassetteError) as caught:
        load_cassette(file)
    assert words in str(caught.value) and f"{file}:" in str(caught.value)


def test_the_schema_validates_what_the_writer_writes() -> None:
    import jsonschema
    import yaml

    from ormock.cassette.schema import cassette_schema

    body = b"".join(frame_event(e) for e in _events(3))
    document = yaml.safe_load(dump_cassette(Cassette((_record(body, [9]).interaction(now=1),))))
    jsonschema.Draft202012Validator(cassette_schema()).validate(document)
