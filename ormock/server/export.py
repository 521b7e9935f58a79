"""A served exchange turned into a file that replays it exactly (``GET
/_ormock/journal/{id}/export?as=...``, ``ormock journal export ID --as ...``).

- ``cassette``: an ormock cassette of one interaction, built from the frames the writer really
  sent (``Feed.frames_of``) through the recorder's own ``Recording``: the status, the headers,
  every byte and each frame's offset; replayed, it sends the same bytes at the same offsets.
- ``scenario``: a scenario of one step (``match: {model}``, ``times: forever``). A stream's
  reply is the literal ``sse:`` body that went out, byte for byte. A JSON answer's is its
  output as ``items`` with its ``usage`` and ``status`` (``ormock.scenario.transcript``: what
  items cannot say is refused by name), and an HTTP error's an ``http_error`` fault with its
  status, envelope and headers.
- A WebSocket turn: a cassette's WebSocket interaction (the client's ``response.create``, then
  the server's text frames at their offsets), or a step whose literal ``events:`` are the ones
  sent.

The request is kept masked (secret headers and key-shaped values, as on the page), so are
key-shaped values in the bytes sent (a secret the response echoed: only then do the bytes
differ), and the text is scanned like every cassette before it is given out.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from ormock.cassette.fileformat import dump_cassette
from ormock.cassette.framing import event_text
from ormock.cassette.model import (
    Cassette,
    Interaction,
    RecordedRequest,
    SocketFrame,
    SocketSession,
)
from ormock.cassette.model import Ended as CassetteEnded
from ormock.cassette.recording import Recording
from ormock.cassette.redact import REDACTED, SecretFound, scan
from ormock.engine.feed import SentFrames
from ormock.engine.journal import JournalEntry
from ormock.protocol.checker import check_stream
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.secrets import is_secret_header, mask_json, mask_text
from ormock.protocol.types import Json
from ormock.scenario.transcript import Inexpressible, needs_openai, reply_of
from ormock.server.exchange import api_path

__all__ = ["KINDS", "export_entry"]

KINDS = ("scenario", "cassette")
_ERROR_FIELDS = ("message", "type", "param", "code")
_SERVER_HEADERS = frozenset({"content-type", "content-length", "date", "server"})
_SKIPPED_HEADERS = frozenset({"host", "content-length", "connection", "accept-encoding",
                              "user-agent", "accept"})


def _unexportable(message: str, param: str = "id") -> OpenResponsesError:
    return OpenResponsesError(message, code="not_exportable", param=param, status=409)


def _masked(data: bytes) -> bytes:
    """Bytes sent, with anything key-shaped masked (an echoed secret); otherwise the same."""
    text = data.decode("utf-8", "surrogateescape")
    masked = mask_text(text)
    return data if masked == text else masked.encode("utf-8", "surrogateescape")


def _redacted(name: str, value: str) -> str:
    """A header's value as a cassette may hold it: ``REDACTED`` for a secret one."""
    return REDACTED if is_secret_header(name) else value


def _request(entry: JournalEntry) -> RecordedRequest:
    path, _, query = api_path(entry).partition("?")
    headers: dict[str, str | list[str]] = {
        k.lower(): _redacted(k, v) for k, v in entry.headers.items()
        if k.lower() not in _SKIPPED_HEADERS}
    return RecordedRequest(entry.method, path, query, headers, mask_json(entry.body))


def _socket_cassette(entry: JournalEntry, sent: SentFrames) -> str:
    """A WebSocket turn as a cassette's WebSocket interaction: the client's ``response.create``
    (the request as journaled, without the ``stream`` the server adds), then each text frame
    the server sent at its offset (ms). Replayed, a client sending the same message gets the
    same frames."""
    body = mask_json(entry.body) if isinstance(entry.body, dict) else {}
    create = {"type": "response.create", **{k: v for k, v in body.items() if k != "stream"}}
    frames = [SocketFrame(0.0, "client", create)]
    at = 0.0
    for wait, frame in sent.frames:
        at += wait
        text = _masked(frame.data).decode("utf-8", "replace")
        try:
            event = json.loads(text)
        except ValueError:
            event = None
        exact = None if event is not None and event_text(event) == text else text
        frames.append(SocketFrame(round(at * 1000, 3), "server", event, exact))
    request = _request(entry)
    interaction = Interaction(RecordedRequest("GET", request.path, request.query,
                                              request.headers),
                              socket=SocketSession(tuple(frames)))
    return dump_cassette(Cassette((interaction,), recorded_with="ormock journal export"))


def _cassette(entry: JournalEntry, sent: SentFrames) -> str:
    if sent.kind == "socket":
        return _socket_cassette(entry, sent)
    recording = Recording(_request(entry), started=0.0)
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in sent.headers]
    recording.answer(sent.status, [(k, _redacted(k, v)) for k, v in headers], now=0.0)
    at = 0.0
    for wait, frame in sent.frames:
        at += wait
        recording.chunk(_masked(frame.data), now=at)
    # a body cut short but ended cleanly is whole bytes to a cassette (its missing terminal
    # event is in the messages); a client that left got what is here, whole
    ended: CassetteEnded = "whole"
    if entry.ended == "closed" or entry.ended == "reset" or entry.ended == "stalled":
        ended = entry.ended
    interaction = recording.interaction(ended, now=at)
    return dump_cassette(Cassette((interaction,), recorded_with="ormock journal export"))


def _literal_reply(sent: SentFrames) -> Json:
    """A stream's reply: the literal ``sse:`` body (a WebSocket turn's ``events:``) as sent,
    with ``breaks:`` naming the rules it breaks."""
    reply: Json
    if sent.kind == "socket":  # a WebSocket turn: its events, sent as written
        events = [json.loads(_masked(frame.data)) for _, frame in sent.frames if frame.data]
        reply = {"events": events}
        broken = sorted(check_stream(events, schema=False).rules)
    else:
        reply = {"sse": _masked(sent.body).decode("utf-8", "replace")}
        broken = sorted(check_stream(sent.body, schema=False).rules)
    return {"breaks": broken, **reply} if broken else reply


def _json_body(entry: JournalEntry, sent: SentFrames) -> Any:
    try:
        return json.loads(_masked(sent.body))
    except ValueError:
        raise _unexportable(
            f"Entry {entry.id} was answered with a body that is not whole JSON (HTTP "
            f"{sent.status}; a fault may have cut it), which a scenario step cannot give; "
            "export it with as=cassette.", "as") from None


def _number(value: str) -> float | None:
    """A header's number, when writing it again gives the same text (``20``, ``1.5``)."""
    try:
        number = float(value)
    except ValueError:
        return None
    same = int(number) if number.is_integer() else number
    return same if str(same) == value else None


def _error_reply(entry: JournalEntry, envelope: Any, status: int) -> Json:
    """An HTTP error's reply: an ``http_error`` fault with the status, the envelope's four
    strings and the headers the answer set (``retry-after``, ``x-should-retry``, ...)."""
    error = envelope.get("error") if isinstance(envelope, dict) else None
    if not isinstance(error, dict) or set(error) != set(_ERROR_FIELDS) or not all(
            isinstance(error[k], str) for k in _ERROR_FIELDS):
        raise _unexportable(
            f"Entry {entry.id} was answered with HTTP {status} and a body that is not the "
            "error envelope of four strings (message, type, param, code) an http_error fault "
            "sends; export it with as=cassette.", "as")
    fault: Json = {"status": status, **{k: error[k] for k in _ERROR_FIELDS}}
    if status == 429:  # the answer's own x-ratelimit-* headers, if any, are kept as they were
        fault["rate_limit_headers"] = False
    headers: dict[str, str] = {}
    for name, value in entry.reply_headers.items():
        key = name.lower()
        if key in ("retry-after", "retry-after-ms") and _number(value) is not None:
            fault[key.replace("-", "_")] = _number(value)
        elif key == "x-should-retry" and value in ("true", "false"):
            fault["should_retry"] = value == "true"
        elif key not in _SERVER_HEADERS:
            headers[key] = value
    if headers:
        fault["headers"] = headers
    return {"faults": [{"http_error": fault}]}


def _items_reply(entry: JournalEntry, sent: SentFrames) -> Json:
    """A JSON answer's reply: its output as items, with its usage, status and model."""
    response = _json_body(entry, sent)
    model = entry.body.get("model") if isinstance(entry.body, dict) else None
    try:
        return reply_of(response if isinstance(response, dict) else {}, model)
    except Inexpressible as error:
        raise _unexportable(
            f"Entry {entry.id}'s answer cannot be a scenario step: {error}; export it with "
            "as=cassette, which keeps every byte.", "as") from None


def _document(entry: JournalEntry, reply: Json, how: str) -> str:
    """A scenario of one step answering the entry's model (any request when it had none)
    forever with ``reply``; ``how``: what the reply keeps of the exchange."""
    step: Json = {"times": "forever"}
    if isinstance(entry.body, dict) and isinstance(entry.body.get("model"), str):
        step["match"] = {"model": entry.body["model"]}
    step["reply"] = reply
    document: Json = {"name": f"exported-{entry.id}",
                      "description": f"Exchange {entry.id} ({entry.method} {entry.path}) {how}."}
    if needs_openai(reply):  # OpenAI's tool items, as the openai profile sends them
        document["profile"] = "openai"
    document["steps"] = [step]
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


def _scenario(entry: JournalEntry, sent: SentFrames) -> str:
    if sent.kind in ("sse", "socket") and sent.status == 200:
        return _document(entry, _literal_reply(sent), "as it was sent, byte for byte")
    if entry.method != "POST" or api_path(entry).partition("?")[0] != "/v1/responses":
        raise _unexportable(
            f"Entry {entry.id} is {entry.method} {api_path(entry)}; a scenario step answers "
            "POST /v1/responses only: export it with as=cassette.", "as")
    if sent.status >= 400:
        return _document(entry, _error_reply(entry, _json_body(entry, sent), sent.status),
                         "as it was answered: the HTTP error, as an http_error fault")
    if sent.kind == "json" and sent.status == 200:
        return _document(entry, _items_reply(entry, sent),
                         "as it was answered: its output items, usage and status")
    raise _unexportable(
        f"Entry {entry.id} was answered with a {sent.kind} answer (HTTP {sent.status}), which "
        "a scenario step cannot give; export it with as=cassette.", "as")


def export_entry(entry: JournalEntry, sent: SentFrames | None, kind: str) -> tuple[str, str]:
    """The file's text and a file name; ``OpenResponsesError`` when it cannot be made."""
    if kind not in KINDS:
        raise OpenResponsesError(f"as must be one of {', '.join(KINDS)}, not {kind!r}.",
                                 code="invalid_export", param="as")
    if sent is None:
        raise _unexportable(
            f"The bytes of entry {entry.id} are no longer kept (the server keeps the newest "
            "answers only) or it was never written (a Python caller's): send the request "
            "again and export the new entry.")
    text = _cassette(entry, sent) if kind == "cassette" else _scenario(entry, sent)
    leaks = scan(text)
    if leaks:
        raise _unexportable(str(SecretFound(f"the export of {entry.id}", leaks)))
    return text, f"{entry.id}.{kind}.yaml"
