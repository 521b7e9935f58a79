"""The create endpoint, ``POST [/<namespace>]/v1/responses``: the body read with a size limit
and decoded (a body read before is not decoded again: ``ParsedBodies``), the engine asked once
(``Creates.answer``), the reply written. An unpaced stream goes out as whole events coalesced
into one write; no event is ever split across writes. The front (``ormock.server.front``) is
its one way in.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter
from typing import Any

from starlette.responses import Response

from ormock.engine.bounded import Bounded, Sightings
from ormock.engine.core import Engine
from ormock.engine.create_answer import Creates, Prepared
from ormock.engine.namespaces import Namespaces
from ormock.engine.store import StoreUnavailable
from ormock.engine.writer import send_wire
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.reply import Reply
from ormock.protocol.request import ResponseRequest, parse_request
from ormock.server.asgi import Receive, Scope, Send
from ormock.server.background import answer_background
from ormock.server.body import (
    body_again,
    decode_json,
    json_only,
    json_request,
    more_body,
    read_body,
    send_error,
    whole_body,
)
from ormock.server.replay import ReplayRoute
from ormock.server.responses_api import send_replay

__all__ = ["CreateEndpoint", "ParsedBodies", "bug_error", "error_response",
           "method_not_allowed"]


def bug_error(exc: Exception) -> OpenResponsesError:
    """The envelope of an exception a route let escape: a bug of ormock's (500
    ``internal_error``), or a store that cannot take a call now, which is none (503
    ``store_unavailable``, the message naming the store: ``StoreUnavailable``)."""
    if isinstance(exc, StoreUnavailable):
        return OpenResponsesError(str(exc), type="service_unavailable",
                                  code="store_unavailable", status=503)
    return OpenResponsesError(
        f"ormock failed on this request ({type(exc).__name__}: {exc}); this is a bug in "
        "ormock, please report it with the request.",
        type="server_error", code="internal_error", status=500,
    )


def method_not_allowed(method: str, path: str, headers: dict[str, str]) -> OpenResponsesError:
    """405 ``method_not_allowed``: ``method`` on ``path`` (``headers``: its ``Allow``)."""
    return OpenResponsesError(
        f"{method} is not allowed on {path}.", type="method_not_allowed",
        code="method_not_allowed", param="method", status=405, headers=headers)


def error_response(error: OpenResponsesError) -> Response:
    return Response(
        error.body(),
        status_code=error.status,
        media_type="application/json",
        headers=error.headers,
    )


KEPT, BYTES, BODY = 512, 1 << 20, 64 * 1024  # bodies at most, their bytes in all, each's


class ParsedBodies:
    """The create bodies the endpoint decoded and checked, remembered by their bytes so that a
    repeated request is not decoded and checked again: valid bodies' decoded JSON and parsed
    request, kept from a body's second sighting on (``Sightings``: a body sent once, as every
    new input is, is only noted), the oldest kept dropped past ``KEPT`` bodies or ``BYTES``
    bytes (a body's decoded objects take several times its bytes: ~7x for many small input
    items); none of over ``BODY`` bytes kept. Neither a read nor a repeat keeps a body longer:
    bodies go in the order they were kept."""

    def __init__(self) -> None:
        # raw -> (its JSON, its request, its bytes)
        self._kept: Bounded[bytes, tuple[Any, ResponseRequest, int]] = Bounded(
            KEPT, BYTES, itemgetter(2))
        self._seen = Sightings()

    def read(self, raw: bytes) -> tuple[Any, ResponseRequest | None]:
        """A body decoded (``decode_json``: its 400 raised) and checked (``parse_request``):
        as kept when it came before, else read now and kept when valid and seen before. An
        invalid one's request is None: it is left to the engine, which journals it with its
        error."""
        found = self._kept.peek(raw)
        if found is not None:
            return found[0], found[1]
        body = decode_json(raw)
        try:
            request = parse_request(body)
        except OpenResponsesError:
            return body, None
        size = len(raw)
        if size <= BODY and self._seen.again(raw):
            self._kept[raw] = (body, request, size)
        return body, request

    def __len__(self) -> int:
        return len(self._kept)

    def __iter__(self) -> Iterator[bytes]:
        """The bodies kept, oldest first."""
        return iter(self._kept)

    @property
    def size(self) -> int:
        """The bytes of the bodies kept."""
        return self._kept.bytes


class CreateEndpoint:
    """``POST [/<namespace>]/v1/responses``: the body read and decoded, the engine's answer
    asked for once (``Creates.answer``, on a shared store answered again while the admin state
    changed meanwhile), then written."""

    def __init__(self, namespaces: Namespaces, max_body: int) -> None:
        self.namespaces = namespaces
        self.creates = Creates(namespaces)
        self.max_body = max_body
        self.replay: ReplayRoute | None = None  # routed to when a cassette loaded meanwhile
        self._read = ParsedBodies()  # bodies decoded and checked, the valid ones kept

    async def answer(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str],
                     name: str, found: Engine | None) -> None:
        """Answer the create request of namespace ``name`` (``found``: its engine as the
        front found it, None when it did not look)."""
        creates, engine = self.creates, None
        try:
            engine = creates.engine(name, found)
            # ``raw_body``'s steps, without its two coroutines: the usual body is the first
            # message whole
            json_request(headers, self.max_body)
            message = await receive()
            raw = whole_body(message, self.max_body)
            if raw is None:
                raw = await more_body(receive, message, self.max_body)
            body, request = self._read.read(raw)
        except OpenResponsesError as error:
            await send_error(send, creates.refused(name, engine, error))
            return
        except Exception as exc:
            await self.answer_bug(scope, send, exc)
            return
        ready = creates.answer(name, engine, scope["path"], headers, body, request, len(raw))
        if isinstance(ready, OpenResponsesError):
            await send_error(send, ready)
        elif isinstance(ready, str):  # REPLAYED: a cassette loaded meanwhile
            assert self.replay is not None
            await self.replay.handle(scope, body_again(raw, receive), send)
        else:
            now = ready.now()  # a reply written at once, over already: its two messages
            if now is None:
                await self._send(scope, receive, send, ready)
                return
            await send(now[0])
            await send(now[1])

    async def _send(self, scope: Scope, receive: Receive, send: Send, ready: Prepared) -> None:
        """Write what ``Creates.answer`` made but a reply written at once (the store has it all
        by now)."""
        if ready.delivery is None:  # no reply of its own to write: an error, or a bug
            if ready.error is not None:
                await send_error(send, ready.error)
                return
            if ready.bug is not None:
                await send_error(send, self.bug_error(scope, ready.bug))
                return
        if ready.replay is not None:  # an idempotent replay: the first answer again
            try:
                await send_replay(send, ready.engine, ready.replay)
            except OpenResponsesError as error:
                await send_error(send, error)
            return
        reply, delivery = ready.reply, ready.delivery
        assert reply is not None
        assert delivery is not None
        if ready.background:
            # background mode: run on this loop, not tied to this connection (background)
            assert isinstance(reply, Reply)
            try:
                await answer_background(send, receive, ready.engine, reply, delivery.entry,
                                        delivery.claim)
            finally:
                ready.engine.finished(delivery.entry)
            return
        delivery.begin()
        written = None
        try:
            if ready.error is not None:  # a reply the protocol cannot fold into JSON
                await send_error(send, ready.error)
                return
            wire = delivery.wire
            if ready.bug is not None or wire is None:
                await self.answer_bug(scope, send, ready.bug or RuntimeError("no wire"))
                return
            # once the writer has started, a bug can only drop the connection
            written = await send_wire(delivery.watch(send), receive, wire, delivery.ahead)
        finally:
            delivery.over(written)

    async def answer_bug(self, scope: Scope, send: Send, exc: Exception) -> None:
        """A bug before anything was sent is answered here (a 500 envelope, the traceback kept
        for the after-test report), not by Starlette's error middleware, which re-raises to the
        server and so drops a keep-alive connection."""
        await send_error(send, self.bug_error(scope, exc))

    def bug_error(self, scope: Scope, exc: Exception) -> OpenResponsesError:
        """The 500 envelope of a bug, its traceback kept for the after-test report (the 503 of
        a store that cannot take a call now: no bug, ``bug_error``)."""
        found = self.namespaces.find(scope.get("path_params", {}).get("namespace", ""))
        if found is not None and not isinstance(exc, StoreUnavailable):
            found.failed_inside(exc)
        return bug_error(exc)

    async def raw_body(self, headers: dict[str, str], receive: Receive) -> bytes:
        """A JSON body, read with the size limit (415 for another media type)."""
        json_only(headers)
        return await read_body(receive, headers.get("content-length", ""), self.max_body)
