"""A served exchange turned into a file that replays it exactly (``GET
/_ormock/journal/{id}/export?as=...``, ``ormock journal export ID --as ...``).

- ``cassette``: an ormock cassette of one interaction, built from the frames the writer really
  sent (``Feed.frames_of``) through the recorder's own ``Recording``: the status, the headers,
  every byte and each frame's offset; replayed, it sends the same bytes at the same offsets.
- ``scenario``: a scenario of one step whose reply is the literal ``sse:`` body that went out,
  byte for byte (a streamed exchange only; a JSON answer is exported as a cassette).
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
from ormock.cassette.redact import SecretFound, scan
from ormock.engine.feed import SentFrames
from ormock.engine.journal import JournalEntry
from ormock.protocol.checker import check_stream
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.secrets import is_secret_header, mask_json, mask_text
from ormock.server.exchange import api_path

__all__ = ["KINDS", "export_entry"]

KINDS = ("scenario", "cassette")
_SKIPPED_HEADERS = frozenset({"host", "content-length", "connection", "accept-encoding",
                              "user-agent", "accept"})


def _unexportable(message: str, param: str = "id") -> OpenResponsesError:
    return OpenResponsesError(message, code="not_exportable", param=param, status=409)


def _masked(data: bytes) -> bytes:
    """Bytes sent, with anything key-shaped masked (an echoed secret); otherwise the same."""
    text = data.decode("utf-8", "surrogateescape")
    masked = mask_text(text)
    return data if masked == text else masked.encode("utf-8", "surrogateescape")


def _request(entry: JournalEntry) -> RecordedRequest:
    path, _, query = api_path(entry).partition("?")
    headers: dict[str, str | list[str]] = {
        k.lower(): ("REDACTED" if is_secret_header(k) else v)
        for k, v in entry.headers.items() if k.lower() not in _SKIPPED_HEADERS}
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
    recording.answer(sent.status, [(k.decode("latin-1"), v.decode("latin-1"))
                                   for k, v in sent.headers], now=0.0)
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


def _scenario(entry: JournalEntry, sent: SentFrames) -> str:
    if sent.kind not in ("sse", "socket") or sent.status != 200:
        what = "a JSON body" if sent.kind == "json" else f"a {sent.kind} answer"
        raise _unexportable(
            f"Entry {entry.id} was answered with {what} (HTTP {sent.status}), which a "
            "scenario step's literal sse: cannot hold; export it with as=cassette.", "as")
    match: dict[str, Any] = {}
    if isinstance(entry.body, dict) and isinstance(entry.body.get("model"), str):
        match["model"] = entry.body["model"]
    step: dict[str, Any] = {"times": "forever"}
    if match:
        step["match"] = match
    if sent.kind == "socket":  # a WebSocket turn: its events, sent as written
        events = [json.loads(_masked(frame.data)) for _, frame in sent.frames if frame.data]
        step["reply"] = {"events": events}
        broken = sorted(check_stream(events, schema=False).rules)
    else:
        step["reply"] = {"sse": _masked(sent.body).decode("utf-8", "replace")}
        broken = sorted(check_stream(sent.body, schema=False).rules)
    if broken:
        step["reply"] = {"breaks": broken, **step["reply"]}
    document = {"name": f"exported-{entry.id}",
                "description": f"Exchange {entry.id} ({entry.method} {entry.path}) as it was "
                               "sent, byte for byte.",
                "steps": [step]}
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


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
