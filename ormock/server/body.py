"""Reading a request body with a size limit, and decoding it as JSON: ``POST /v1/responses``,
WebSocket messages and the admin API share both; the bound on a request's headers
(``header_bytes``, ``headers_too_large``), which the front applies to every request. And the one
writer of an answer sent whole (``send_whole``: status, headers with its length, the body in
one write; ``whole_messages`` its two messages)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from ormock.engine.limits import Limits
from ormock.protocol.depth import MAX_DEPTH, nests_deeper
from ormock.protocol.errors import OpenResponsesError
from ormock.server.asgi import Message, Receive, Send

__all__ = ["DEFAULT_MAX_BODY", "DEFAULT_MAX_HEADER_BYTES", "body_again", "declared_fits",
           "decode_json",
           "header_bytes", "headers_too_large", "is_json", "json_only", "json_request",
           "more_body", "read_body", "send_error", "send_whole", "too_large", "whole_body",
           "whole_messages"]

DEFAULT_MAX_BODY = Limits().max_body
DEFAULT_MAX_HEADER_BYTES = Limits().max_header_bytes


async def read_body(receive: Receive, declared: str, limit: int) -> bytes:
    """The whole body, or 413 ``request_too_large`` once it (or its ``declared``
    Content-Length) passes ``limit`` bytes; nothing past the limit is kept."""
    declared_fits(declared, limit)
    message = await receive()
    raw = whole_body(message, limit)
    return raw if raw is not None else await more_body(receive, message, limit)


def json_request(headers: Mapping[str, str], limit: int) -> None:
    """What ``json_only`` and then ``read_body`` check before a byte is read: 415 unless the
    body is JSON, 413 when its declared ``Content-Length`` passes ``limit``."""
    if headers.get("content-type") != "application/json":  # ``json_only``'s own first test
        json_only(headers)
    declared_fits(headers.get("content-length", ""), limit)


def declared_fits(declared: str, limit: int) -> None:
    """413 ``request_too_large`` when a declared ``Content-Length`` passes ``limit``."""
    if declared.isdigit() and int(declared) > limit:
        raise too_large(limit)


def whole_body(message: Message, limit: int) -> bytes | None:
    """The body of a request's first ``receive`` message when it is all of it (the usual
    body: one message, taken as it is, no join; a client gone: ``b""``); None when more is
    to come (``more_body``). 413 ``request_too_large`` past ``limit`` bytes."""
    if message["type"] == "http.disconnect":
        return b""
    chunk = message.get("body", b"")
    if len(chunk) > limit:
        raise too_large(limit)
    if not message.get("more_body", False) and type(chunk) is bytes:
        return chunk
    return None


async def more_body(receive: Receive, message: Message, limit: int) -> bytes:
    """The whole body of a request whose first message (``whole_body`` said None) is
    ``message``: the rest received, joined; 413 once it passes ``limit`` bytes."""
    chunk = message.get("body", b"")
    size = len(chunk)
    chunks = [chunk]
    while message.get("more_body", False):
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def is_json(content_type: str) -> bool:
    """Whether a ``Content-Type`` is JSON: the usual spelling, else its media type."""
    return (content_type == "application/json"
            or content_type.split(";")[0].strip().lower() == "application/json")


def json_only(headers: Mapping[str, str]) -> None:
    """415 ``unsupported_content_type`` unless the request's ``Content-Type`` is JSON."""
    content_type = headers.get("content-type", "")
    if not is_json(content_type):
        media_type = content_type.split(";")[0].strip().lower()
        raise OpenResponsesError(
            f"Content-Type must be application/json, not {media_type or 'missing'!r}; "
            "send the request body as JSON.",
            code="unsupported_content_type",
            param="content-type",
            status=415,
        )


def header_bytes(headers: list[tuple[bytes, bytes]]) -> int:
    """The bytes of a request's headers: every name and value, as received."""
    size = 0
    for name, value in headers:
        size += len(name) + len(value)
    return size


def headers_too_large(size: int, limit: int) -> OpenResponsesError:
    """431 ``request_headers_too_large``: ``size`` bytes of headers, past ``limit``."""
    return OpenResponsesError(
        f"The request headers are {size} bytes (names and values together), more than this "
        f"server's limit of {limit} bytes; send fewer or shorter headers, or start the server "
        "with a larger --max-header-bytes.",
        type="request_headers_too_large",
        code="request_headers_too_large",
        param="headers",
        status=431,
    )


def too_large(limit: int) -> OpenResponsesError:
    return OpenResponsesError(
        f"The request body is larger than this server's limit of {limit} bytes; "
        "send less input, or start the server with a larger --max-body.",
        type="request_too_large",
        code="request_too_large",
        param="body",
        status=413,
    )


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


# one decoder, made once, for every body (``json.loads`` with an option would make one a body)
_DECODER = json.JSONDecoder(parse_constant=_no_constants)
# Where orjson reads a body otherwise than json: an integer of 19 digits or more may be past
# 64 bits, which orjson reads as a float; json reads any body with such a run of digits
# (``_long_digits``).
_AS_DIGITS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_RUN = b"0" * 19


def _long_digits(raw: bytes | str) -> bool:
    """Whether ``raw`` holds a run of 19 ASCII digits or more: each digit byte mapped to
    ``0`` and every other byte to a space, the run looked for (text as its UTF-8, where an
    ASCII digit is only ever itself)."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    return _LONG_RUN in raw.translate(_AS_DIGITS)


def _loads(raw: bytes | str) -> Any:
    """``json.loads(raw, parse_constant=_no_constants)``, step for step, with one decoder
    (with ``loads``' own errors)."""
    if isinstance(raw, str):
        if raw.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", raw, 0)
    else:
        raw = raw.decode(json.detect_encoding(raw), "surrogatepass")
    return _DECODER.decode(raw)


def _too_deep(what: str, param: str) -> OpenResponsesError:
    return OpenResponsesError(
        f"The {what} nests too deeply to read (at most {MAX_DEPTH} levels); send flatter "
        "JSON.", code="invalid_json", param=param)


def _standard(raw: bytes | str, param: str, what: str) -> Any:
    """``decode_json``'s value through ``json.loads``, or its 400."""
    try:
        return _loads(raw)
    except RecursionError:
        raise _too_deep(what, param) from None
    except ValueError as error:  # JSONDecodeError, a bad constant, bytes that are not UTF-8
        detail = getattr(error, "msg", None) or str(error)[:200]
        # some of json's messages end in "at" ("Invalid control character at"): the place
        # follows once
        detail = detail.removesuffix(" at")
        where = (f" at line {error.lineno} column {error.colno}"
                 if isinstance(error, json.JSONDecodeError) else "")
        raise OpenResponsesError(
            f"The {what} is not valid JSON ({detail}{where}); send a JSON object.",
            code="invalid_json", param=param,
        ) from None


def decode_json(raw: bytes | str, param: str = "body", what: str = "request body") -> Any:
    """JSON (strict: no NaN or Infinity), or a 400 ``invalid_json`` naming ``param`` that says
    where it broke; one that nests deeper than ``MAX_DEPTH`` is refused the same way.

    orjson reads it as ``json.loads`` does but for integers past 64 bits (``_LONG_DIGITS``);
    those, and all orjson refuses (NaN and infinities, numbers past a double's range, lone
    surrogates, a BOM, UTF-16, and every error), are read again by ``json.loads``
    (``_standard``): its value, or its error's message, line and column."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = _standard(raw, param, what)
    else:
        if _long_digits(raw):
            value = _standard(raw, param, what)
    # a text of at most ``MAX_DEPTH`` characters holds at most that many brackets: it nests no
    # deeper (``nests_deeper``'s own first test, known from its length alone)
    if len(raw) > MAX_DEPTH and isinstance(value, (dict, list)) and nests_deeper(raw, value):
        raise _too_deep(what, param)
    return value


def whole_messages(status: int, body: bytes, headers: Mapping[str, str] | None = None,
                   content_type: bytes = b"application/json") -> tuple[Message, Message]:
    """An answer sent whole, as its two ASGI messages: ``content-type``, its
    ``content-length``, ``headers``; then the body (``send_whole`` sends them)."""
    raw = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()),
           *[(k.lower().encode("latin-1"), v.encode("latin-1"))
             for k, v in (headers or {}).items()]]
    return ({"type": "http.response.start", "status": status, "headers": raw},
            {"type": "http.response.body", "body": body, "more_body": False})


async def send_error(send: Send, error: OpenResponsesError) -> None:
    """An error's envelope, its status and headers, in one write."""
    await send_whole(send, error.status, error.body(), error.headers)


async def send_whole(send: Send, status: int, body: bytes,
                     headers: Mapping[str, str] | None = None,
                     content_type: bytes = b"application/json") -> None:
    """An answer in one write (``whole_messages``)."""
    start, whole = whole_messages(status, body, headers, content_type)
    await send(start)
    await send(whole)


def body_again(raw: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body read already once, then what the client sends (a
    request handed to another route after its body was read)."""
    given = False

    async def again() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return again
