"""SSE: the incremental parser and the framing of events."""

from __future__ import annotations

import datetime
import enum
import itertools
import json
import math
import re
import uuid
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ormock.protocol.sse import (
    DONE_FRAME,
    Framed,
    SSEMessage,
    SSEParser,
    encode_json,
    encode_str,
    frame_event,
    parse_sse,
)


def feed_in(chunks: list[bytes]) -> list[SSEMessage]:
    parser = SSEParser()
    out: list[SSEMessage] = []
    for chunk in chunks:
        out += parser.feed(chunk)
    return out + parser.close()


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0, *sorted(set(cuts)), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(edges)]


# -- chunking never changes the result -------------------------------------------------------------
# text without line breaks, with multi-byte characters so chunks also split UTF-8 sequences
values = st.text(
    st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12
)
lines = st.one_of(
    st.builds(lambda v: f"data: {v}", values),
    st.builds(lambda v: f"data:{v}", values),
    st.builds(lambda v: f"event: {v}", values),
    st.builds(lambda v: f"id: {v}", values),
    st.builds(lambda v: f": {v}", values),
    st.sampled_from(["", "", "", "data", "retry: 10", "data: [DONE]"]),
)
endings = st.sampled_from(["\n", "\r\n", "\r"])
bodies = st.lists(st.tuples(lines, endings), max_size=25).map(
    lambda pairs: "".join(line + end for line, end in pairs).encode()
)
raw_tails = st.sampled_from([b"", b"data: tail", b"data: tail\r", b"\r", b"event: x\n"])


@settings(max_examples=150, deadline=None)
@given(body=bodies, tail=raw_tails, data=st.data())
def test_random_chunkings_give_the_same_messages_as_the_whole_body(
    body: bytes, tail: bytes, data: st.DataObject
) -> None:
    body += tail
    whole = parse_sse(body)
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=12), label="cuts")
    assert feed_in(split_at(body, cuts)) == whole


@settings(max_examples=60, deadline=None)
@given(body=bodies, tail=raw_tails)
def test_feeding_byte_by_byte_gives_the_same_messages(body: bytes, tail: bytes) -> None:
    body += tail
    assert feed_in([body[i : i + 1] for i in range(len(body))]) == parse_sse(body)


@settings(max_examples=100, deadline=None)
@given(body=st.binary(max_size=200), data=st.data())
def test_arbitrary_bytes_never_raise_and_chunking_does_not_matter(
    body: bytes, data: st.DataObject
) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=8), label="cuts")
    assert feed_in(split_at(body, cuts)) == parse_sse(body)


def test_a_built_stream_fed_byte_by_byte_parses_like_the_whole() -> None:
    events = [
        {"type": "response.output_text.delta", "sequence_number": i, "delta": f"é{i}\u2028"}
        for i in range(5)
    ]
    body = b"".join(frame_event(e) for e in events) + DONE_FRAME
    messages = feed_in([body[i : i + 1] for i in range(len(body))])
    assert messages == parse_sse(body)
    assert [json.loads(m.data) for m in messages[:-1]] == events
    assert messages[-1].is_done


# -- line ends -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("end", "crlf"), [("\n", False), ("\r\n", True), ("\r", True)])
def test_each_line_end_reads_the_same(end: str, crlf: bool) -> None:
    body = f"event: a{end}data: 1{end}{end}event: b{end}data: 2{end}{end}".encode()
    messages = parse_sse(body)
    assert [(m.event, m.data, m.line, m.crlf, m.terminated) for m in messages] == [
        ("a", "1", 1, crlf, True),
        ("b", "2", 4, crlf, True),
    ]


def test_a_crlf_split_between_chunks_is_one_line_end() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: x\r") == []
    assert parser.feed(b"\n\r") == []  # the blank line's CR might still be followed by LF
    (first,) = parser.feed(b"\ndata: y\r\n")
    assert (first.data, first.line, first.crlf) == ("x", 1, True)
    (last,) = parser.close()
    assert (last.data, last.line, last.terminated) == ("y", 3, False)
    second = parse_sse(b"data: x\r\n\r\ndata: y\r\n\r\n")[1]
    assert (second.data, second.line) == ("y", 3)  # CR LF counted once, not as two lines


def test_a_cr_at_the_end_of_a_chunk_waits_for_the_next_one() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: x\r") == []
    assert parser.feed(b"\r") == []  # the first CR was a line end; the second may be CR LF
    (message,) = parser.feed(b"d")  # it was not
    assert (message.data, message.crlf) == ("x", True)


def test_a_cr_at_the_end_of_the_stream_ends_its_line() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: x\r\r") == []
    (message,) = parser.close()
    assert (message.data, message.terminated) == ("x", True)


def test_a_mixed_message_is_marked_crlf() -> None:
    (message,) = parse_sse(b"event: a\ndata: 1\r\n\n")
    assert message.crlf


# -- fields ----------------------------------------------------------------------------------------
def test_comments_are_skipped_and_lines_still_counted() -> None:
    body = b": hello\n\n: ping\nevent: a\n: inside\ndata: 1\n\n: bye\n"
    (message,) = parse_sse(body)
    assert (message.event, message.data, message.line, message.data_lines) == ("a", "1", 4, 1)


def test_multi_line_data_is_joined_with_newlines() -> None:
    (message,) = parse_sse(b"data: {\"a\":\ndata:  1}\n\n")
    assert message.data == '{"a":\n 1}'  # only the first space after the colon goes
    assert message.data_lines == 2
    assert json.loads(message.data) == {"a": 1}


def test_field_forms() -> None:
    messages = parse_sse(b"data\n\ndata:x\n\ndata:  x\n\nretry: 5\nfoo: bar\ndata: y\n\n")
    assert [(m.data, m.data_lines) for m in messages] == [("", 1), ("x", 1), (" x", 1), ("y", 1)]
    assert [m.line for m in messages] == [1, 3, 5, 7]


def test_id_lines_are_kept() -> None:
    (message,) = parse_sse(b"id: 42\nevent: a\ndata: 1\n\n")
    assert (message.id, message.line) == ("42", 1)
    (plain,) = parse_sse(b"event: a\ndata: 1\n\n")
    assert plain.id is None


def test_the_last_event_and_its_blank_line() -> None:
    (ok,) = parse_sse(b"data: [DONE]\n\n")
    assert ok.is_done and ok.terminated
    for body in (b"data: [DONE]\n", b"data: [DONE]", b"data: [DONE]\r"):
        (message,) = parse_sse(body)
        assert message.is_done
        assert not message.terminated, body


def test_blank_lines_alone_make_no_messages() -> None:
    assert parse_sse(b"\n\n\r\n\r\r") == []
    assert parse_sse(b"") == []
    assert parse_sse(b": only a comment\n\n") == []


def test_a_message_without_data_is_returned_with_no_data_lines() -> None:
    (message,) = parse_sse(b"event: ping\n\n")
    assert (message.event, message.data_lines, message.data) == ("ping", 0, "")


def test_str_and_bytes_parse_alike() -> None:
    body = "event: a\ndata: \"é\u2028\"\n\n"
    assert parse_sse(body) == parse_sse(body.encode())
    assert json.loads(parse_sse(body)[0].data) == "é\u2028"


def test_bad_utf8_is_replaced_not_raised() -> None:
    (message,) = parse_sse(b"data: \xff\xfe\n\n")
    assert message.data == "\ufffd\ufffd"


def test_line_numbers_count_every_line() -> None:
    body = b"event: a\ndata: 1\n\n\n\nevent: b\r\ndata: 2\r\n\r\n: c\ndata: [DONE]\n\n"
    assert [(m.data, m.line) for m in parse_sse(body)] == [("1", 1), ("2", 6), ("[DONE]", 10)]


# -- framing ---------------------------------------------------------------------------------------
def test_frame_event_is_event_line_data_line_blank_line() -> None:
    event = {"type": "response.output_text.delta", "sequence_number": 3, "delta": "Hi, there"}
    assert frame_event(event) == (
        b'event: response.output_text.delta\n'
        b'data: {"type":"response.output_text.delta","sequence_number":3,"delta":"Hi, there"}\n\n'
    )
    assert DONE_FRAME == b"data: [DONE]\n\n"


TRICKY = ["a\nb", "a\rb", "a\r\nb", "line\u2028sep", "para\u2029sep", "nel\x85x", "\x0b\x0c\x1c",
          "tab\there", "é ü 日本 🙂", "\ud800 lone", "quote \" and \\ backslash", ""]


@pytest.mark.parametrize("text", TRICKY)
def test_frame_event_has_no_raw_line_breaks(text: str) -> None:
    event = {"type": "response.output_text.delta", "sequence_number": 0, "delta": text}
    frame = frame_event(event)
    assert frame.count(b"\n") == 3 and frame.endswith(b"\n\n")
    assert b"\r" not in frame
    decoded = frame.decode()
    # str.splitlines also breaks at U+2028, U+0085, ... (httpx's iter_lines uses it)
    assert decoded.splitlines() == [
        "event: response.output_text.delta",
        "data: " + encode_json(event),
        "",
    ]
    (message,) = parse_sse(frame)
    assert message.event == "response.output_text.delta"
    assert json.loads(message.data) == event


def test_encode_json_is_compact_and_keeps_non_ascii() -> None:
    assert encode_json({"a": [1, 2], "b": "é"}) == '{"a":[1,2],"b":"é"}'
    assert encode_json("\u2028") == '"\\u2028"'
    with pytest.raises(ValueError, match="Out of range float"):
        encode_json({"x": math.nan})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


_STDLIB = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(value=json_values)
def test_encode_json_writes_what_the_stdlib_encoder_writes(value: Any) -> None:
    # the C encoder is made once; the text is the stdlib's, but for the line-break escapes
    text = _STDLIB.encode(value)
    for char in "\x85\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    assert encode_json(value) == text


def _reference(value: Any) -> str:
    """What ``encode_json`` writes: ``json.dumps``' compact text, non-ASCII kept, with the
    line-break characters and lone surrogates escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return "".join(f"\\u{ord(c):04x}" if c in "\x85\u2028\u2029" or 0xD800 <= ord(c) <= 0xDFFF
                   else c for c in text)


class _Plain(enum.Enum):
    A = 1


class _Number(enum.IntEnum):
    ONE = 1


class _Word(enum.StrEnum):
    HI = "hi"


class _Str(str):
    pass


class _Int(int):
    pass


class _Float(float):
    pass


class _Dict(dict[str, Any]):
    pass


class _List(list[Any]):
    pass


_characters = st.characters(exclude_categories=()) | st.sampled_from(
    "\x00\x1f\x7f\x85\u2028\u2029\ud800\udbff\udc00\udfff\"\\/é😀\ufeff")
_strings = st.text(_characters, max_size=8)
_floats = st.floats() | st.sampled_from([
    -0.0, 0.0, 1e16, 1e15, 1e22, 1e-4, 9.999999999999999e-05, 1e-5, 1e-7, 1e-9, 1e-10, 5e-324,
    1.7976931348623157e308, 2.0**53 + 2, 1e300, -1e-300, math.nan, math.inf, -math.inf]) | (
    st.floats(min_value=1e-11, max_value=1e-3) | st.floats(min_value=1e14, max_value=1e18))
_integers = st.integers() | st.integers(2**63 - 3, 2**64 + 3) | st.integers(
    -2**63 - 3, -2**63 + 3) | st.integers(-2**200, 2**200)
_keys = _strings | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
_scalars = (st.none() | st.booleans() | _integers | _floats | _strings
            | _strings.map(_Str) | st.integers().map(_Int)
            | st.floats(allow_nan=False, allow_infinity=False).map(_Float))
_json_like = st.recursive(
    _scalars,
    lambda inner: (st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple)
                   | st.lists(inner, max_size=3).map(_List)
                   | st.dictionaries(_strings, inner, max_size=4)
                   | st.dictionaries(_keys, inner, max_size=3)
                   | st.dictionaries(_strings, inner, max_size=3).map(_Dict)),
    max_leaves=16)


@settings(max_examples=2000, deadline=None)
@given(value=_json_like)
def test_encode_json_is_json_dumps_byte_for_byte(value: Any) -> None:
    # orjson where its text is json's, json where it is not: the same text, or the same refusal
    try:
        expected = _reference(value)
    except (TypeError, ValueError) as error:
        refused: TypeError | ValueError = error
    else:
        assert encode_json(value) == expected
        if isinstance(value, str):
            assert encode_str(value) == expected
        return
    with pytest.raises(type(refused), match=f"^{re.escape(str(refused))}$"):
        encode_json(value)


@settings(max_examples=3000, deadline=None)
@given(number=st.floats(allow_nan=False, allow_infinity=False))
def test_orjson_spells_a_float_as_python_outside_the_band_encode_json_checks(
    number: float,
) -> None:
    # the premise of ``_respelled``: orjson writes every float as ``repr`` does but those from
    # 1e-9 up to 1e-4, which ``encode_json`` hands to json (each of them matches its test)
    spelled = orjson.dumps(number)
    assert spelled == repr(number).encode() or b"0.0000" in spelled or re.search(
        rb"e-[0-9](?![0-9])", spelled), (number, spelled)


def test_every_character_is_escaped_as_json_escapes_it() -> None:
    # each code point, alone and among others: orjson's escapes are json's
    for start in range(0, 0x110000, 0x1000):
        text = "".join(chr(c) for c in range(start, start + 0x1000) if not 0xD800 <= c <= 0xDFFF)
        assert encode_str(text) == encode_json(text) == _reference(text)
        assert encode_json({text: [text]}) == _reference({text: [text]})
    for lone in ("\ud800", "a\udfff", "\udc00\ud800"):
        assert encode_str(lone) == encode_json(lone) == _reference(lone)


@pytest.mark.parametrize("value", [
    uuid.UUID(int=1), _Plain.A, [_Plain.A], {"a": uuid.UUID(int=2)}, datetime.date(2026, 1, 1),
    b"bytes", {"nan": math.nan}, [math.inf], -math.inf,
])
def test_encode_json_refuses_what_json_refuses_though_orjson_would_write_it(value: Any) -> None:
    with pytest.raises((TypeError, ValueError)) as expected:
        _reference(value)
    with pytest.raises(type(expected.value), match=re.escape(str(expected.value))):
        encode_json(value)


def test_encode_json_writes_an_int_enum_and_a_str_enum_as_json_does() -> None:
    value = {"i": _Number.ONE, "s": _Word.HI, "l": [_Number.ONE]}
    assert encode_json(value) == _reference(value) == '{"i":1,"s":"hi","l":[1]}'


def test_encode_json_refuses_what_the_stdlib_refuses_and_stays_usable() -> None:
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        encode_json({"a": [1, object()]})
    with pytest.raises(ValueError, match="Out of range float"):
        encode_json([1, {"x": math.inf}])
    shared = {"a": [1, 2], "b": {"c": "d"}}
    assert encode_json([shared, shared]) == '[{"a":[1,2],"b":{"c":"d"}},{"a":[1,2],"b":{"c":"d"}}]'


def test_encode_json_of_one_value_from_many_threads_at_once() -> None:
    # no circular-reference markers shared between calls: a value encoded by several threads
    # at once is never taken for a cycle
    from concurrent.futures import ThreadPoolExecutor

    shared = {"items": [{"n": n, "text": "x" * 50} for n in range(200)]}
    expected = _STDLIB.encode(shared)
    with ThreadPoolExecutor(4) as pool:
        assert set(pool.map(lambda _: encode_json(shared), range(200))) == {expected}


@settings(max_examples=100, deadline=None)
@given(fields=st.dictionaries(st.text(), json_values, max_size=5), type_=st.sampled_from(
    ["response.output_text.delta", "acme:trace", "error"]))
def test_any_event_frames_into_exactly_one_parsable_message(
    fields: dict[str, Any], type_: str
) -> None:
    event = {**fields, "type": type_}
    frame = frame_event(event)
    assert frame.startswith(f"event: {type_}\ndata: ".encode())
    assert frame.count(b"\n") == 3 and b"\r" not in frame
    assert len(frame.decode().splitlines()) == 3
    (message,) = parse_sse(frame)
    assert (message.event, message.data_lines, message.crlf, message.terminated) == (
        type_, 1, False, True
    )
    assert json.loads(message.data) == event


def _generic_frame(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {encode_json(event)}\n\n".encode()


@given(
    kind=st.sampled_from(["response.output_text.delta", "response.function_call_arguments.delta"]),
    number=st.integers(min_value=0, max_value=10**12),
    index=st.integers(min_value=0, max_value=1000),
    item=st.text(),
    delta=st.text(),
    extra=st.sampled_from([None, "obfuscation", "bool-index", "logprobs"]),
)
def test_delta_frames_from_the_template_equal_the_generic_encoding(
    kind: str, number: int, index: int, item: str, delta: str, extra: str | None
) -> None:
    event: dict[str, Any] = {"type": kind, "sequence_number": number, "item_id": item,
                             "output_index": index}
    if kind == "response.output_text.delta":
        event.update(content_index=index, delta=delta, logprobs=[])
    else:
        event["delta"] = delta
    if extra == "obfuscation":
        event["obfuscation"] = "x"
    elif extra == "bool-index":
        event["output_index"] = True
    elif extra == "logprobs" and "logprobs" in event:
        event["logprobs"] = [{"token": "a", "logprob": -0.1, "bytes": [97], "top_logprobs": []}]
    assert frame_event(event) == _generic_frame(event)


@settings(max_examples=100, deadline=None)
@given(snapshot=st.dictionaries(st.text(max_size=8), json_values, max_size=6),
       kinds=st.lists(st.sampled_from(["response.created", "response.in_progress",
                                       "response.output_text.delta", "acme:trace"]),
                      min_size=1, max_size=6),
       text=st.text())
def test_framed_events_equal_each_event_framed_alone(
    snapshot: dict[str, Any], kinds: list[str], text: str
) -> None:
    """``Framed`` encodes a snapshot made of the same objects as the one before it once: the
    bytes are still each event's own frame, and ``snapshot`` the last Response's JSON."""
    events: list[dict[str, Any]] = []
    for number, kind in enumerate(kinds):
        if kind.endswith(".delta"):
            events.append({"type": kind, "sequence_number": number, "item_id": "msg_1",
                           "output_index": 0, "content_index": 0, "delta": text,
                           "logprobs": []})
        elif kind.startswith("response."):
            events.append({"type": kind, "sequence_number": number,
                           "response": {**snapshot, "status": "in_progress"}})
        else:
            events.append({"type": kind, "sequence_number": number, "note": text})
    framed = Framed(events)
    assert framed.frames == [frame_event(e) for e in events]
    snapshots = [e["response"] for e in events if "response" in e]
    assert framed.response is (snapshots[-1] if snapshots else None)
    if snapshots:
        assert framed.snapshot == encode_json(snapshots[-1])


def test_framed_snapshots_equal_in_python_but_not_in_json_are_encoded_each() -> None:
    """``True == 1`` and ``1 == 1.0`` in Python, not on the wire: only the very same objects
    are taken to give the same JSON."""
    events = [{"type": "response.created", "sequence_number": 0, "response": {"a": 1}},
              {"type": "response.in_progress", "sequence_number": 1, "response": {"a": True}},
              {"type": "response.in_progress", "sequence_number": 2, "response": {"a": 1.0}}]
    framed = Framed(events)
    assert framed.frames == [frame_event(e) for e in events]
    assert [json.loads(f.split(b"data: ")[1])["response"]["a"] for f in framed.frames] == [
        1, True, 1.0]
    assert framed.snapshot == '{"a":1.0}'
