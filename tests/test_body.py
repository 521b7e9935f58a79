"""``ormock.server.body``: a request body read up to a limit, and decoded as strict JSON."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ormock.protocol.errors import OpenResponsesError
from ormock.server.body import decode_json, read_body


def _read(chunks: list[bytes], declared: str = "", limit: int = 10,
          disconnect: bool = False) -> bytes:
    messages: list[dict[str, Any]] = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1 or disconnect}
        for i, c in enumerate(chunks)]
    if disconnect:
        messages.append({"type": "http.disconnect"})
    pending = iter(messages)

    async def receive() -> dict[str, Any]:
        return next(pending)

    return asyncio.run(read_body(receive, declared, limit))


def test_the_body_is_read_whole() -> None:
    assert _read([b"abc", b"def", b"g"]) == b"abcdefg"
    assert _read([b"0123456789"]) == b"0123456789"  # exactly the limit
    assert _read([b"abc"], disconnect=True) == b"abc"  # the client left


@pytest.mark.parametrize(("chunks", "declared"), [
    ([b"01234", b"567890"], ""),  # passes the limit on the way
    ([b"x"], "11"),  # its Content-Length says so: refused before reading
])
def test_past_the_limit_is_a_413(chunks: list[bytes], declared: str) -> None:
    with pytest.raises(OpenResponsesError) as raised:
        _read(chunks, declared)
    error = raised.value
    assert (error.status, error.code, error.param) == (413, "request_too_large", "body")
    assert "limit of 10 bytes" in error.message and "--max-body" in error.message


def test_decode_json() -> None:
    assert decode_json(b'{"a": [1, 2.5, null]}') == {"a": [1, 2.5, None]}
    assert decode_json('"text"') == "text"


@pytest.mark.parametrize(("raw", "says"), [
    (b"{", "not valid JSON (Expecting property name enclosed in double quotes at line 1 "
           "column 2)"),
    (b'{"a": NaN}', "not valid JSON (NaN is not a JSON value)"),
    (b"[Infinity]", "not valid JSON (Infinity is not a JSON value)"),
    (b"\xff", "not valid JSON ("),
    (b"[" * 100_000 + b"]" * 100_000, "nests too deeply to read"),
    # json's messages that end in "at" (its own text goes on ": line 1 column 9 (char 8)")
    (b'{"a": "a\x01b"}', "not valid JSON (Invalid control character at line 1 column 9)"),
    (b'{"a": "ab', "not valid JSON (Unterminated string starting at line 1 column 7)"),
])
def test_bad_json_is_a_400_naming_the_param(raw: bytes, says: str) -> None:
    with pytest.raises(OpenResponsesError) as raised:
        decode_json(raw, param="message", what="WebSocket message")
    error = raised.value
    assert (error.status, error.code, error.param) == (400, "invalid_json", "message")
    assert error.message.startswith("The WebSocket message ") and says in error.message


def _loads_as_before(raw: bytes | str) -> Any:
    def no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON value")

    return json.loads(raw, parse_constant=no_constants)


_texts = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=12).map(json.dumps)
_raws = st.one_of(
    _texts.map(str.encode),
    st.builds(lambda text, pad, tail: (text + pad).encode() + tail, _texts,
              st.sampled_from(["", " ", "\n\t ", "x", "}", " {}", "NaN"]),
              st.sampled_from([b"", b"\xff", b"\x00", b" "])),
    st.binary(max_size=12).map(lambda b: b"{" + b),
    st.sampled_from([b'{"a": NaN}', b'{"a": Infinity}', b"\xef\xbb\xbf{}", b"{\x00}",
                     '{"é": 1}'.encode("utf-16"), b'{"a": "\xed\xa0\x80"}']),
)


@settings(max_examples=400, deadline=None)
@given(raw=_raws)
def test_a_body_decodes_as_json_loads_would(raw: bytes) -> None:
    # orjson's reading is an exact stand-in: the same value, or a 400 where loads raised,
    # with the message it gave
    failure: ValueError | RecursionError | None = None
    try:
        expected = _loads_as_before(raw)
    except (ValueError, RecursionError) as error:
        failure = error
    if failure is None:
        assert decode_json(raw) == expected
        return
    with pytest.raises(OpenResponsesError) as refused:
        decode_json(raw)
    if isinstance(failure, json.JSONDecodeError):
        assert failure.msg in refused.value.message


def _outcome(decode: Any, raw: bytes | str) -> tuple[str, str]:
    """What reading ``raw`` gives, in full: the value's ``repr`` (an int is not a float, key
    order counts), or the error's message."""
    try:
        return "value", repr(decode(raw))
    except OpenResponsesError as error:
        return "error", error.message


def _as_before(raw: bytes | str) -> Any:
    """``decode_json`` as it was: ``json.loads`` refusing NaN and infinities, its error's
    message, line and column in the 400."""
    try:
        return _loads_as_before(raw)
    except RecursionError:
        raise OpenResponsesError("The request body nests too deeply to read (at most 256 "
                                 "levels); send flatter JSON.", code="invalid_json") from None
    except ValueError as error:
        detail = (getattr(error, "msg", None) or str(error)[:200]).removesuffix(" at")
        where = (f" at line {error.lineno} column {error.colno}"
                 if isinstance(error, json.JSONDecodeError) else "")
        raise OpenResponsesError(f"The request body is not valid JSON ({detail}{where}); send "
                                 "a JSON object.", code="invalid_json") from None


_numbers = st.from_regex(r"\A-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?\Z")
_escapes = st.sampled_from(["\\ud800", "\\udfff", "\\ud83d\\ude00", "\\udc00\\ud800", "\\u0000",
                            "\\n", "\\/", "\\x", "\\u12", "é", "\u2028", "\x1f", "\x7f"])
_pieces = st.lists(_numbers | _escapes.map(lambda e: f'"{e}"') | st.sampled_from(
    ["[", "]", "{", "}", ",", ":", '"a"', '"a":', " ", "\n", "\x0c", "null", "true", "NaN",
     "-Infinity", "1e400", "-0", "18446744073709551616", "9223372036854775807"]), max_size=8)
_bodies = st.one_of(
    _raws,
    _numbers.map(str.encode),
    st.lists(_numbers, max_size=4).map(lambda ns: f'{{"n": [{", ".join(ns)}]}}'.encode()),
    st.lists(_escapes, max_size=3).map(lambda es: f'{{"s": "{"".join(es)}"}}'.encode()),
    _pieces.map(lambda ps: "".join(ps).encode()),
    _pieces.map("".join),  # a WebSocket message is text
    st.integers(-2**80, 2**80).map(lambda n: f'{{"a": {n}, "b": [{n}]}}'.encode()),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: f"[{f!r}]".encode()),
)


@settings(max_examples=3000, deadline=None)
@given(raw=_bodies)
def test_a_body_reads_as_json_loads_reads_it_value_for_value_and_error_for_error(
    raw: bytes | str,
) -> None:
    # orjson where it reads as json does; json for the rest: the same value, of the same types,
    # or the same 400 with the same message, line and column
    assert _outcome(decode_json, raw) == _outcome(_as_before, raw)


@pytest.mark.parametrize("raw", [
    b'{"n": 18446744073709551616}', b"[-9223372036854775809]", b'{"n": 1e400}',
    b'{"s": "\\ud800"}', b'{"s": "\xed\xa0\x80"}', b"\xef\xbb\xbf{}", '{"é": 1}'.encode("utf-16"),
    b'{"a": 1, "a": 2, "b": 3}', b"123456789012345678901234567890",
    b'{"t": "0.1234567890123456789"}',
])
def test_what_orjson_reads_otherwise_is_read_by_json(raw: bytes) -> None:
    assert _outcome(decode_json, raw) == _outcome(_as_before, raw)
    assert _outcome(decode_json, raw)[0] == "value"


@pytest.mark.parametrize("raw", [
    b'{"pad": "' + b"x" * 100_000 + b'", "n": 18446744073709551616}',  # far into the body
    '{"é": "ü", "n": 18446744073709551616}',  # text past a character of several bytes
    b'{"n": 1844674407370955161}', '{"n": -1844674407370955161}',  # 19 digits, within 64 bits
])
def test_a_long_run_of_digits_anywhere_is_read_as_json_reads_it(raw: bytes | str) -> None:
    assert _outcome(decode_json, raw) == _outcome(_as_before, raw)
    assert _outcome(decode_json, raw)[0] == "value"
