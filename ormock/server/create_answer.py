"""What a create's answer is, made before its first byte (``prepare``): the engine's answer,
its rendered wire, and the store's writes made (``ormock.engine.attempt``: held while it is
answered, then made in one call with the journal's entry of an answer written at once). The
create route (``ormock.server.app``) sends it, or, on ``Stale``, answers again."""

from __future__ import annotations

from typing import Any

from ormock.engine.attempt import Held, Stale, commit
from ormock.engine.core import Engine
from ormock.engine.entry_answer import unfoldable
from ormock.engine.journal import JournalEntry
from ormock.engine.journal_sink import WrittenAhead
from ormock.engine.render import render
from ormock.engine.stateful import Claim, IdempotencyRecord
from ormock.engine.writer import at_once
from ormock.protocol.checker import ProtocolError
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.request import ResponseRequest
from ormock.protocol.wire import Wire
from ormock.server.asgi import Message, Receive
from ormock.server.responses_api import idempotent

__all__ = ["Prepared", "body_again", "prepare"]

class Prepared:
    """What a create's answer is, made before its first byte (``prepare``):
    an error or a bug to answer, an idempotent replay, or a reply (its entry, claim, wire and
    the writer's ``ahead``; ``background``: run as a background job)."""

    __slots__ = ("ahead", "background", "bug", "claim", "entry", "error", "replay", "reply",
                 "wire")

    def __init__(self, reply: Reply | RawReply | None = None, entry: JournalEntry | None = None,
                 claim: Claim | None = None, error: OpenResponsesError | None = None,
                 bug: Exception | None = None, replay: IdempotencyRecord | None = None
                 ) -> None:  # called with positions: every create makes one
        self.error, self.bug, self.replay = error, bug, replay
        self.reply, self.entry, self.claim = reply, entry, claim
        self.background = False
        self.ahead: WrittenAhead | None = None
        self.wire: Wire | None = None


def prepare(engine: Engine, path: str, headers: dict[str, str], body: Any,
            request: ResponseRequest | None, size: int, held: Held | None,
            old: JournalEntry | None) -> Prepared:
    """Answer the request, render its wire, and make what it holds (with the journal's
    entry of an answer written at once): everything before the first byte. ``Stale``
    when the admin state changed meanwhile (nothing written then)."""
    claim = None
    try:
        claim = idempotent(engine, headers, body)  # Idempotency-Key (responses_api)
        if claim is not None and not isinstance(claim, Claim):
            commit(held)
            return Prepared(replay=claim)
        try:
            # the server's own path may issue a repeated content from the stream cache:
            # it writes bytes, and never looks at the events
            # by position, as on every create: local None, parsed, size, the transport, forced None
            reply, entry = engine.answer(body, headers, path, None, request, size, "http", None,
                                         old)
        except BaseException:
            if claim is not None:
                claim.release()
            raise
    except Stale:
        raise
    except OpenResponsesError as error:
        commit(held)
        return Prepared(error=error)
    except Exception as exc:
        commit(held)
        return Prepared(bug=exc)
    ready = Prepared(reply, entry, claim)
    if (isinstance(reply, Reply) and isinstance(body, dict)
            and body.get("background") is True and entry.response_id is not None):
        ready.background = True
        commit(held)
        return ready
    # a shared journal has the entry whole before the client has the answer's last bytes
    ready.ahead = WrittenAhead(entry, engine.finished) if engine.sink is not None else None
    try:  # nothing is sent before the wire is rendered: a bug here is a 500 envelope
        ready.wire = render(reply, "sse" if isinstance(reply, Reply) and reply.stream
                            else "json")
    except ProtocolError as error:
        ready.error = unfoldable(error)
    except Exception as exc:
        entry.status = 500
        ready.bug = exc
    if held is None:  # nothing held (no shared store): nothing to commit
        return ready
    if ready.ahead is not None and ready.wire is not None:
        planned = at_once(ready.wire)
        if planned is not None:  # the entry as it will be, held: made with the response
            ready.ahead(planned)
    try:
        commit(held)
    except Stale:
        if claim is not None:
            claim.release()
        raise
    return ready


def body_again(raw: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body read already once, then what the client sends (a
    stale attempt's request handed to another route)."""
    given = False

    async def again() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return again
