"""``ormock.server.body``: a request body read up to a limit, and decoded as strict JSON."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

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
])
def test_bad_json_is_a_400_naming_the_param(raw: bytes, says: str) -> None:
    with pytest.raises(OpenResponsesError) as raised:
        decode_json(raw, param="message", what="WebSocket message")
    error = raised.value
    assert (error.status, error.code, error.param) == (400, "invalid_json", "message")
    assert error.message.startswith("The WebSocket message ") and says in error.message
