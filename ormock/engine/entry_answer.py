"""What an answer puts into its journal entry: the reply's status, error and events
(``record``), how it ended on the wire as planned (``on_the_wire``, ``raw_ended``) and as the
writer reported it (``wrote``), a failure while answering (``answering``, ``failed``), and the
final Response a stream carried (``final_response``)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from types import TracebackType

from ormock.engine.journal import JournalEntry, Sent, summarize
from ormock.protocol.checker import ProtocolError
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.events import TERMINAL_EVENTS
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.secrets import scrub
from ormock.protocol.types import Json
from ormock.protocol.wire import Ended, Written

__all__ = ["answering", "failed", "final_response", "last_status", "on_the_wire", "raw_ended",
           "record", "sent_error", "unfoldable", "wrote"]


def raw_ended(reply: RawReply) -> Ended:
    """A raw answer is whole, unless it is a 200 whose JSON body is cut (not JSON)."""
    if reply.status == 200 and reply.content_type == "application/json":
        try:
            json.loads(reply.body)
        except ValueError:
            return "truncated"
    return "whole"


def on_the_wire(reply: Reply) -> tuple[Sent | None, Ended]:
    """For a reply whose frames are set (a wire fault, a literal SSE body): the events that
    go out whole before a drop or a stall for good, with their delays, and how it ends. Each
    frame says which events it carries (``Frame.events``, set where it was made): no bytes are
    parsed again."""
    frames = reply.frames or []
    if not reply.stream:  # a JSON body held back or dropped
        for frame in frames:
            if frame.action == "stall" and math.isinf(frame.delay):
                return None, "stalled"
            if frame.action in ("close", "reset"):
                return None, "closed" if frame.action == "close" else "reset"
        return summarize(reply.events, None), "whole"
    events: list[Json] = []
    delays: list[float] = []
    wait = 0.0
    ended: Ended = "whole"
    for frame in frames:
        if frame.action == "stall" and math.isinf(frame.delay):
            ended = "stalled"
            break
        wait += frame.delay
        if frame.action in ("close", "reset"):
            ended = "closed" if frame.action == "close" else "reset"
            break
        if frame.action == "end":
            break
        for event in frame.events or ():
            events.append(event)
            delays.append(wait)
            wait = 0.0
    if ended == "whole" and not any(e.get("type") in TERMINAL_EVENTS for e in events):
        ended = "truncated"
    return summarize(events, delays), ended


def wrote(entry: JournalEntry, written: Written) -> None:
    """What the writer reports is what the entry keeps: how the answer ended, the bytes, and,
    when the client left before the planned end, the events that went out whole (with the
    waits before them). When every planned event went out, the summary made with the reply
    (``record``) is of exactly those frames, and stays."""
    ended = entry.ended = written.ended
    entry.sent_bytes = written.bytes
    if ended == "client gone":  # not ``written.complete``: no property call per answer
        sent = entry.sent = summarize(list(written.events), written.delays())
        if entry.response_status is not None and not any(
                kind in TERMINAL_EVENTS for kind in sent.types):
            entry.response_status = "cancelled"  # as the store keeps it (``written``)


def final_response(events: list[Json]) -> Json | None:
    """The terminal snapshot of a stream, if it has one."""
    for event in reversed(events):
        response = event.get("response")
        if isinstance(response, dict) and response.get("status") in (
            "completed", "incomplete", "failed"
        ):
            return response
    return None


def record(entry: JournalEntry, reply: Reply | RawReply) -> None:
    if reply.headers:
        entry.reply_headers = dict(reply.headers)
    if isinstance(reply, RawReply):
        entry.status = reply.status
        entry.ended = raw_ended(reply)
        if reply.status >= 400:  # an injected error: the envelope it sent
            entry.error = sent_error(reply)
        return
    entry.status, entry.stream = 200, reply.stream
    if reply.summary is not None:  # summarized by the stream cache already
        entry.sent = reply.summary
        if reply.events:  # a built reply of its content (a cache hit set its id already)
            final = final_response(reply.events)
            if final is not None:
                entry.response_id, entry.response_status = final.get("id"), final.get("status")
        return
    if not reply.stream and reply.frames is None:
        try:
            reply.folded()
        except ProtocolError as error:  # the app answers unfoldable_reply, and sends nothing
            answer = unfoldable(error)
            entry.status, entry.error = answer.status, answer.envelope()["error"]
            entry.sent, entry.ended = None, "whole"
            return
    final = final_response(reply.events)
    if final is not None:
        entry.response_id, entry.response_status = final.get("id"), final.get("status")
    if reply.frames is not None:  # a wire fault or a literal body: only what went out
        entry.sent, entry.ended = on_the_wire(reply)
        if entry.ended != "whole":  # the client never had the final Response
            entry.response_status = last_status(reply, entry.sent)
        return
    if reply.stream and final is None:
        entry.ended = "truncated"
        entry.response_status = last_status(reply, None)
    paced = reply.pacing is not None and reply.pacing.paced
    entry.sent = summarize(reply.events, reply.delays() if paced else None)


def sent_error(reply: RawReply) -> Json | None:
    """The ``error`` of an error answer's envelope, as it went out (None: not an envelope)."""
    try:
        envelope = json.loads(reply.body)
    except ValueError:
        return None
    error = envelope.get("error") if isinstance(envelope, dict) else None
    return error if isinstance(error, dict) else None


def last_status(reply: Reply, sent: Sent | None) -> str | None:
    """The status of the last Response snapshot a stream that did not end whole sent (what
    the client was last told: ``in_progress`` for one cut before its terminal event; None
    when none went out, as for a JSON body cut short): never a planned status the client did
    not get."""
    if not reply.stream:
        return None
    count = len(sent.types) if sent is not None else len(reply.events)
    for event in reversed(reply.events[:count]):
        response = event.get("response")
        if isinstance(response, dict):
            status = response.get("status")
            return status if isinstance(status, str) else None
    return None


def unfoldable(error: ProtocolError) -> OpenResponsesError:
    """The answer to a non-streaming request whose reply's events do not fold into a Response
    (a literal step): what the client gets, and what the journal records."""
    return OpenResponsesError(
        f"This reply can only be streamed: its events do not fold into a Response ({error}). "
        "Send the request with stream: true.",
        type="server_error", code="unfoldable_reply", param="stream", status=500,
    )


class answering:  # lower case: used as the function it was, ``with answering(...)``
    """Journal how making an answer failed: an ``OpenResponsesError`` keeps its status and
    envelope (no secret header value left in its message, for the client nor the journal), any
    other exception is a 500 (the server answers ``internal_error``); both are raised on. A
    class rather than a ``contextmanager`` generator, as every request enters it."""

    __slots__ = ("entry", "headers")

    def __init__(self, entry: JournalEntry, headers: Mapping[str, str]) -> None:
        self.entry, self.headers = entry, headers

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        failed(self.entry, self.headers, error)


def failed(entry: JournalEntry, headers: Mapping[str, str], error: BaseException | None) -> None:
    """``answering``'s work, for a caller that catches the exception itself (``Engine.answer``,
    which every request runs, with a ``try`` rather than a ``with``): journal how making the
    answer failed."""
    if isinstance(error, OpenResponsesError):
        error.message = scrub(error.message, headers)
        entry.status, entry.error = error.status, error.envelope()["error"]
    elif isinstance(error, Exception):
        entry.status = 500
