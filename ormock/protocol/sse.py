"""Server-sent events: framing exactly as Open Responses wants it, and an incremental parser.

A frame is ``event: <type>\\ndata: <one-line JSON>\\n\\n``; the stream ends with ``data: [DONE]``.
The parser reads any framing (LF, CRLF, CR) and remembers what it saw, so the checker can name
framing faults: CRLF line ends, multi-line data, ``id:`` lines, a missing final blank line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "DONE_FRAME",
    "Framed",
    "SSEMessage",
    "SSEParser",
    "delta_frames",
    "encode_json",
    "encode_str",
    "frame_event",
    "json_events",
    "parse_sse",
]

DONE_FRAME = b"data: [DONE]\n\n"
# The reference text of ``encode_json`` (before its escapes), for what orjson writes otherwise;
# no circular-reference markers: a value that contains itself is a RecursionError.
_standard = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                             check_circular=False).encode
# subclasses, datetimes and dataclasses go to ``default``, whose TypeError hands them to json
_ORJSON_OPTIONS = (orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME
                   | orjson.OPT_PASSTHROUGH_DATACLASS)
# How orjson spells a float json spells otherwise, 1e-05 as 0.00001 and 1e-07 as 1e-7: the
# floats from 1e-9 up to 1e-4 (tests/test_sse.py holds every other float spelled alike)
_SHORT_EXPONENT = re.compile(rb"e-[0-9](?![0-9])")


def _respelled(raw: bytes) -> bool:
    return b"0.0000" in raw or (b"e-" in raw and _SHORT_EXPONENT.search(raw) is not None)

# Left raw by ensure_ascii=False, yet line breaks to str.splitlines (which httpx's iter_lines
# uses: a raw U+2028 would cut a data line in two), or not encodable as UTF-8 (lone surrogates).
# They can only stand inside JSON strings, where the escape means the same character.
_UNSAFE = re.compile("[\x85\u2028\u2029\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _not_native(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def encode_json(value: Any) -> str:
    """Compact one-line JSON, the way the data line and the JSON body are written: the text of
    ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)``.

    Non-ASCII text stays as UTF-8, except the characters some line readers split on
    (U+0085, U+2028, U+2029) and lone surrogates, which are written as ``\\uXXXX`` escapes.
    orjson writes it where its text is json's; json itself where orjson refuses a value (ints
    past 64 bits, keys that are not strings, lone surrogates, subclasses), where it would spell
    a float otherwise, or where its text does not read back as the value (NaN and infinities,
    which it writes as null; a UUID or a plain Enum member, which json refuses; tuples).
    """
    if type(value) is tuple:  # a journal entry: orjson's list of it never reads back as it
        text = _standard(value)
    else:
        try:
            raw = orjson.dumps(value, default=_not_native, option=_ORJSON_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError is one
            text = _standard(value)
        else:
            if type(value) is not str and (_respelled(raw) or orjson.loads(raw) != value):
                text = _standard(value)
            else:
                text = raw.decode()
    return text if text.isascii() else _UNSAFE.sub(_escape, text)


def encode_str(value: str) -> str:
    """``encode_json`` of a string, without its checks (a string's text is the same either
    way)."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:  # lone surrogates
        text = _standard(value)
    return text if text.isascii() else _UNSAFE.sub(_escape, text)


# The shape of the events that make up most of a stream, as the builder writes them: framed
# from a template, with the same bytes as encoding the whole dict (tests/test_sse.py holds it).
_DELTA_KEYS = {
    "response.output_text.delta": ("type", "sequence_number", "item_id", "output_index",
                                   "content_index", "delta", "logprobs"),
    "response.function_call_arguments.delta": ("type", "sequence_number", "item_id",
                                               "output_index", "delta"),
}


def _delta_frame(event: Mapping[str, Any], kind: str) -> bytes | None:
    keys = _DELTA_KEYS.get(kind)
    if keys is None or tuple(event) != keys:
        return None
    number, index = event["sequence_number"], event["output_index"]
    if type(number) is not int or type(index) is not int:
        return None
    item, delta = event["item_id"], event["delta"]
    if type(item) is not str or type(delta) is not str:
        return None
    head = (f'event: {kind}\ndata: {{"type":"{kind}","sequence_number":{number},'
            f'"item_id":{encode_str(item)},"output_index":{index},')
    if len(keys) == 5:
        return f'{head}"delta":{encode_str(delta)}}}\n\n'.encode()
    part = event["content_index"]
    if type(part) is not int or event["logprobs"] != []:
        return None
    return f'{head}"content_index":{part},"delta":{encode_str(delta)},"logprobs":[]}}\n\n'.encode()


def delta_frames(kind: str, first: int, item_id: str, output_index: int,
                 content_index: int | None, pieces: Iterable[str]) -> list[bytes]:
    """The frames of consecutive deltas of one item, numbered from ``first``: the bytes
    ``frame_event`` gives each delta's dict as the builder writes it (a text delta when
    ``content_index`` is given, with empty ``logprobs``; else an arguments delta), from one
    template, with no dict made."""
    head = f'event: {kind}\ndata: {{"type":"{kind}","sequence_number":'
    if content_index is None:
        tail = f',"item_id":{encode_str(item_id)},"output_index":{output_index},"delta":'
        return [f"{head}{number}{tail}{encode_str(piece)}}}\n\n".encode()
                for number, piece in enumerate(pieces, first)]
    tail = (f',"item_id":{encode_str(item_id)},"output_index":{output_index},'
            f'"content_index":{content_index},"delta":')
    return [f'{head}{number}{tail}{encode_str(piece)},"logprobs":[]}}\n\n'.encode()
            for number, piece in enumerate(pieces, first)]


def frame_event(event: Mapping[str, Any]) -> bytes:
    """One event, framed whole: written in a single write, no reader sees half of it."""
    kind = event["type"]
    if kind in _DELTA_KEYS:
        framed = _delta_frame(event, kind)
        if framed is not None:
            return framed
    return f"event: {kind}\ndata: {encode_json(event)}\n\n".encode()


_SNAPSHOT_KEYS = ("type", "sequence_number", "response")


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """The same keys in the same order, each holding the very same object: the same JSON."""
    return len(a) == len(b) and all(
        (ka is kb or ka == kb) and va is vb
        for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True))


class Framed:
    """A list of events framed one after the other (each as ``frame_event`` frames it), with
    the JSON of the last Response snapshot framed (``snapshot``, the object ``response``): a
    snapshot made of the same objects as the one before it (``response.created`` and
    ``response.in_progress``) is encoded once, and the terminal one's JSON is what a store
    keeps, so it need not be encoded again. An event given as bytes is a frame already
    (``delta_frames``), kept as it is."""

    __slots__ = ("frames", "response", "snapshot")

    def __init__(self, events: Iterable[Mapping[str, Any] | bytes]) -> None:
        self.frames: list[bytes] = []
        self.response: Mapping[str, Any] | None = None
        self.snapshot = ""
        append = self.frames.append
        for event in events:
            if type(event) is bytes:
                append(event)
                continue
            assert not isinstance(event, bytes)
            kind = event["type"]
            if kind in _DELTA_KEYS:
                framed = _delta_frame(event, kind)
                if framed is not None:
                    append(framed)
                    continue
            number = event.get("sequence_number")
            response = event.get("response")
            if type(kind) is str and type(number) is int and type(response) is dict \
                    and tuple(event) == _SNAPSHOT_KEYS:
                last: Mapping[str, Any] | None = self.response
                if last is None or not (last is response or _same(last, response)):
                    self.snapshot = encode_json(response)
                self.response = response
                append(f'event: {kind}\ndata: {{"type":{encode_str(kind)},"sequence_number":'
                       f'{number},"response":{self.snapshot}}}\n\n'.encode())
                continue
            append(frame_event(event))


@dataclass
class SSEMessage:
    """One dispatched SSE message, with what the parser noticed about its framing."""

    data: str
    event: str | None = None
    id: str | None = None
    line: int = 1  # the line its first field stood on (1-based)
    data_lines: int = 0
    crlf: bool = False  # some line of it ended with CR LF or a lone CR
    terminated: bool = True  # False: the stream ended before its blank line

    @property
    def is_done(self) -> bool:
        return self.data == "[DONE]"


class SSEParser:
    """Feed bytes as they arrive; get whole messages back."""

    def __init__(self) -> None:
        self._buffer = b""
        self._line_no = 0
        self._reset()

    def _reset(self) -> None:
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self._start = 0
        self._crlf = False
        self._has_fields = False

    def feed(self, chunk: bytes) -> list[SSEMessage]:
        self._buffer += chunk
        return list(self._drain(final=False))

    def close(self) -> list[SSEMessage]:
        """End of stream: a message still open is returned with ``terminated=False``."""
        out = list(self._drain(final=True))
        if self._buffer:
            self._line(self._buffer.decode("utf-8", "replace"), crlf=False)
            self._buffer = b""
        if self._has_fields:
            message = self._message()
            message.terminated = False
            out.append(message)
        return out

    def _drain(self, final: bool) -> Iterator[SSEMessage]:
        buffer = self._buffer
        start = 0
        while True:
            lf = buffer.find(b"\n", start)
            cr = buffer.find(b"\r", start, lf if lf >= 0 else len(buffer))
            if cr >= 0:
                if cr + 1 == len(buffer) and not final:
                    break  # a CR at the end: wait to see whether LF follows
                end, size = cr, 2 if buffer[cr + 1 : cr + 2] == b"\n" else 1
                crlf = True
            elif lf >= 0:
                end, size, crlf = lf, 1, False
            else:
                break
            line = buffer[start:end].decode("utf-8", "replace")
            start = end + size
            message = self._line(line, crlf)
            if message is not None:
                yield message
        self._buffer = buffer[start:]

    def _line(self, line: str, crlf: bool) -> SSEMessage | None:
        self._line_no += 1
        if not line:
            if not self._has_fields:
                self._reset()
                return None
            self._crlf = self._crlf or crlf
            message = self._message()
            self._reset()
            return message
        if line.startswith(":"):
            return None  # a comment
        if not self._has_fields:
            self._start = self._line_no
            self._has_fields = True
        self._crlf = self._crlf or crlf
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
        return None

    def _message(self) -> SSEMessage:
        return SSEMessage(
            data="\n".join(self._data),
            event=self._event,
            id=self._id,
            line=self._start,
            data_lines=len(self._data),
            crlf=self._crlf,
        )


def parse_sse(body: bytes | str) -> list[SSEMessage]:
    """Parse a whole SSE body."""
    parser = SSEParser()
    raw = body.encode() if isinstance(body, str) else body
    return parser.feed(raw) + parser.close()


def json_events(messages: Iterable[SSEMessage]) -> Iterator[dict[str, Any]]:
    """The events among parsed messages: data that is a JSON object (``[DONE]``, data that is
    not JSON and JSON that is not an object are passed over)."""
    for message in messages:
        if message.is_done:
            continue
        try:
            event = json.loads(message.data)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event
