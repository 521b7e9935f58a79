"""A create's answer, from its decoded body to its last byte: the one call the create route
makes (``Creates.answer``), and the answer it gets back (``Prepared``), which the route writes.

``Creates.answer`` asks the engine, renders the wire and makes the store's writes, all before
the first byte. On a shared store it does so in one attempt whose writes are held and made in
one call guarded by the admin stamp (``ormock.engine.attempt``); when another process changed
the admin state meanwhile (``Stale``) it takes the change in and answers again, so the route
never sees a stale attempt. A reply's ``Prepared`` carries its ``Delivery``
(``ormock.engine.delivery``), what the route calls while it writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ormock.engine.attempt import Held, Stale, commit, forget, holding
from ormock.engine.core import Engine
from ormock.engine.delivery import Delivery, InFlight
from ormock.engine.entry_answer import unfoldable
from ormock.engine.journal import JournalEntry
from ormock.engine.namespaces import Namespaces
from ormock.engine.render import render
from ormock.engine.stateful import Claim, IdempotencyRecord, owner_of
from ormock.engine.writer import at_once, at_once_messages
from ormock.protocol.checker import ProtocolError
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.request import ResponseRequest

__all__ = ["REPLAYED", "Creates", "Messages", "Prepared", "prepare"]

# a reply's status line and headers, then its body: the ASGI messages of one written at once
Messages = tuple[dict[str, Any], dict[str, Any]]

# ``Creates.answer``'s word that a cassette loaded meanwhile (by another process) makes the
# request the replay route's: nothing was written or sent
REPLAYED = "replayed"


class Prepared:
    """What a create's answer is, made before its first byte (``prepare``): an error or a bug to
    answer, an idempotent replay, or a reply (its ``delivery``: the entry, claim and wire, and
    what the writer calls while it writes them; ``background``: run as a background job)."""

    __slots__ = ("background", "bug", "delivery", "engine", "error", "replay", "reply")

    def __init__(self, engine: Engine, reply: Reply | RawReply | None = None,
                 delivery: Delivery | None = None, error: OpenResponsesError | None = None,
                 bug: Exception | None = None, replay: IdempotencyRecord | None = None) -> None:
        self.engine, self.error, self.bug, self.replay = engine, error, bug, replay
        self.reply, self.delivery = reply, delivery
        self.background = False

    def now(self) -> Messages | None:
        """The two ASGI messages of a reply written in one go with nothing to wait for and
        nobody watching (``writer.at_once``), its answer over already (``Delivery.at_once``);
        None for every other answer (the route writes it, ``send_wire``)."""
        delivery = self.delivery
        if (delivery is None or self.background or self.error is not None
                or self.bug is not None or self.engine.feed.watchers):
            return None
        wire = delivery.wire
        if wire is None:
            return None
        written = at_once(wire)
        if written is None:
            return None
        delivery.at_once(written)
        return at_once_messages(wire, written)


class Creates:
    """The create pipeline of a server's namespaces."""

    def __init__(self, namespaces: Namespaces) -> None:
        self.namespaces = namespaces

    def engine(self, name: str, found: Engine | None) -> Engine:
        """The engine that answers namespace ``name`` (``found``: as the front found it, None
        when it did not look); on a shared store a warm one is not pulled first: its commit
        is guarded by the admin stamp it applied (``attempt.hold``). 404 for a namespace that
        is not open."""
        if found is not None and not name and self.namespaces.backend is None:
            return found  # the default namespace's, warm and not shared
        return self.namespaces.serve(name, lazily=True)

    def refused(self, name: str, engine: Engine | None, error: OpenResponsesError
                ) -> OpenResponsesError:
        """``error``, or, on a shared store, the 404 of the namespace when another process
        dropped it meanwhile (as a pull first would have answered)."""
        if engine is not None and engine.sharing.shared:
            try:
                self.namespaces.pull(name, engine)
            except OpenResponsesError as closed:
                return closed
        return error

    def answer(self, name: str, engine: Engine, path: str,
               headers: dict[str, str], body: Any, request: ResponseRequest | None, size: int
               ) -> Prepared | OpenResponsesError | str:
        """What to write for a create to namespace ``name`` (``prepare``), on a shared store
        answered again while the admin state changed meanwhile: the ``Prepared`` answer, the
        404 of a namespace another process dropped, or ``REPLAYED`` when a cassette loaded
        meanwhile makes the request the replay route's."""
        flight = self.namespaces.in_flight
        old = None  # a stale attempt's journal entry, which the next one replaces
        while True:
            held = engine.sharing.hold(engine)
            if held is None:  # no shared store: nothing to hold, nothing can be stale
                return prepare(engine, path, headers, body, request, size, None, None, flight)
            try:
                with holding(held):
                    return prepare(engine, path, headers, body, request, size, held, old,
                                   flight)
            except Stale:  # nothing was written or sent: take the change in, answer again
                old = held.entry
                try:
                    self.namespaces.pull(name, engine)
                except OpenResponsesError as error:  # dropped by another process
                    forget(engine, old)
                    return error
                if engine.replaying:  # a cassette loaded meanwhile: the replay's request
                    forget(engine, old)
                    return REPLAYED


def prepare(engine: Engine, path: str, headers: Mapping[str, str], body: Any,
            request: ResponseRequest | None, size: int, held: Held | None,
            old: JournalEntry | None, flight: InFlight | None = None) -> Prepared:
    """Answer the request, render its wire, and make what it holds (with the journal's
    entry of an answer written at once): everything before the first byte. ``Stale``
    when the admin state changed meanwhile (nothing written then). ``flight``: the server's
    count of answers being written."""
    claim = None
    try:
        claim = _idempotent(engine, headers, body)
        if claim is not None and not isinstance(claim, Claim):
            commit(held)
            return Prepared(engine, replay=claim)
        try:
            # the server's own path may issue a repeated content from the stream cache:
            # it writes bytes, and never looks at the events
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
        return Prepared(engine, error=error)
    except Exception as exc:
        commit(held)
        return Prepared(engine, bug=exc)
    delivery = Delivery(engine, entry, claim=claim, flight=flight)
    ready = Prepared(engine, reply, delivery)
    if (isinstance(reply, Reply) and isinstance(body, dict)
            and body.get("background") is True and entry.response_id is not None
            and "background" not in engine.profile.ignored_fields):
        ready.background = True
        commit(held)
        return ready
    try:  # nothing is sent before the wire is rendered: a bug here is a 500 envelope
        delivery.wire = render(reply, "sse" if isinstance(reply, Reply) and reply.stream
                            else "json")
    except ProtocolError as error:
        ready.error = unfoldable(error)
    except Exception as exc:
        entry.status = 500
        ready.bug = exc
    if held is None:  # nothing held (no shared store): nothing to commit
        return ready
    if delivery.ahead is not None and delivery.wire is not None:
        planned = at_once(delivery.wire)
        if planned is not None:  # the entry as it will be, held: made with the response
            delivery.ahead(planned)
    try:
        commit(held)
    except Stale:
        if claim is not None:
            claim.release()
        raise
    return ready


def _idempotent(engine: Engine, headers: Mapping[str, str], body: Any
                ) -> Claim | IdempotencyRecord | None:
    """For a create request with ``Idempotency-Key``: the claim it holds while it answers, or
    the record of the same request answered before (replay it); None without the header. A
    key too long, or held by another request or one still answering, raises (400, 409)."""
    header = headers.get("idempotency-key")
    if header is None:
        return None
    return Claim.take(engine.responses, header, owner_of(headers), body)
