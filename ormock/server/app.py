"""The Starlette app: ``/v1/*`` endpoints of an Open Responses provider, per namespace.

``POST [/<namespace>]/v1/responses`` (most of the requests a test makes) goes from the one
front layer (``ormock.server.front``: the request id) straight to its endpoint when nothing in
front of it would act on it, else through the router like every route, on a route of its own
tried first and matched without a regular expression (``_CreateRoute``); its endpoint reads the
body with a size limit, asks the engine, and writes the reply. An unpaced stream goes out as
whole events coalesced into one write; no event is ever split across writes. Every response
carries ``X-Request-ID`` (the client's own when it sent one).
"""

from __future__ import annotations

import traceback
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import URLPath
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, NoMatchFound, Route, WebSocketRoute

from ormock.engine.core import Engine
from ormock.engine.create_answer import Creates, Prepared
from ormock.engine.namespaces import Namespaces
from ormock.engine.store import StoreUnavailable
from ormock.engine.writer import at_once_messages, send_wire
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.reply import Reply
from ormock.protocol.request import ResponseRequest, parse_request
from ormock.protocol.sse import encode_json
from ormock.server.admin import admin_routes
from ormock.server.asgi import Now, Receive, Scope, Send
from ormock.server.auth import ApiKeyGuard
from ormock.server.background import answer_background
from ormock.server.body import (
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_HEADER_BYTES,
    body_again,
    decode_json,
    json_only,
    json_request,
    more_body,
    read_body,
    send_error,
    whole_body,
    whole_messages,
)
from ormock.server.compact import compact_routes
from ormock.server.conversations import conversation_routes
from ormock.server.create_bodies import ParsedBodies
from ormock.server.front import Front, bug_error, create_namespace
from ormock.server.inspector import inspector_routes
from ormock.server.perimeter import Perimeter
from ormock.server.profile_errors import ProfileErrors
from ormock.server.replay import ReplayRoute
from ormock.server.responses_api import response_routes, send_replay
from ormock.server.websocket import ResponsesSocket

__all__ = ["create_app"]


def error_messages(error: OpenResponsesError) -> Now:
    """``send_error``'s two messages, to send at once."""
    return whole_messages(error.status, error.body(), error.headers)


def error_response(error: OpenResponsesError) -> Response:
    return Response(
        error.body(),
        status_code=error.status,
        media_type="application/json",
        headers=error.headers,
    )


class _CreateRoute(BaseRoute):
    """The route of ``POST [/<namespace>]/v1/responses``, which most requests take, so it is
    matched by a string test instead of a regular expression, and tried first. Another method
    gets 405."""

    def __init__(self, create: _CreateResponse) -> None:
        self.create = create

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        name = create_namespace(scope.get("path", "")) if scope["type"] == "http" else None
        if name is None:
            return Match.NONE, {}
        child: Scope = {"endpoint": self.create,
                        "path_params": {"namespace": name} if name else {}}
        return (Match.FULL if scope["method"] == "POST" else Match.PARTIAL), child

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            raise HTTPException(405, headers={"Allow": "POST"})
        await self.create(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        raise NoMatchFound(name, path_params)


class _CreateResponse:
    """``POST [/<namespace>]/v1/responses``: the body read and decoded, the engine's answer
    asked for once (``Creates.answer``, on a shared store answered again while the admin state
    changed meanwhile), then written."""

    def __init__(self, namespaces: Namespaces, max_body: int) -> None:
        self.namespaces = namespaces
        self.creates = Creates(namespaces)
        self.max_body = max_body
        self.replay: ReplayRoute | None = None  # routed to when a cassette loaded meanwhile
        self._read = ParsedBodies()  # valid bodies decoded and checked (``_parse``)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The router's way in (the front's: ``answer``, the headers decoded already)."""
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            headers[name.decode("latin-1")] = value.decode("latin-1")
        await self.answer(scope, receive, send, headers,
                          scope.get("path_params", {}).get("namespace", ""), None)

    async def answer(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str],
                     name: str, found: Engine | None) -> None:
        """Answer the create request of namespace ``name`` (``found``: its engine as the
        front found it, None when it did not look)."""
        creates, engine = self.creates, None
        try:
            engine = creates.engine(name, found)
            # ``_raw_body``'s steps, without its two coroutines: the usual body is the first
            # message whole
            json_request(headers, self.max_body)
            message = await receive()
            raw = whole_body(message, self.max_body)
            if raw is None:
                raw = await more_body(receive, message, self.max_body)
            body, request = self._read.get(raw) or self._parse(raw)
        except OpenResponsesError as error:
            await send_error(send, creates.refused(name, engine, error))
            return
        except Exception as exc:
            await self._answer_bug(scope, send, exc)
            return
        ready = creates.answer(name, engine, scope["path"], headers, body, request, len(raw))
        if isinstance(ready, OpenResponsesError):
            await send_error(send, ready)
        elif isinstance(ready, str):  # REPLAYED: a cassette loaded meanwhile
            assert self.replay is not None
            await self.replay.handle(scope, body_again(raw, receive), send)
        else:
            await self._send(scope, receive, send, ready)

    def _now(self, scope: Scope, ready: Prepared) -> Now | None:
        """The answer's two messages when it is an error, a bug, or a reply written in one
        go with nothing to wait for and nobody watching (begun and over already); None for
        any other (``_send`` writes it)."""
        delivery = ready.delivery
        if delivery is None:  # no reply of its own to write
            if ready.error is not None:
                return error_messages(ready.error)
            if ready.bug is not None:
                return error_messages(self._bug_error(scope, ready.bug))
            return None
        written = ready.at_once()
        if written is None or delivery.wire is None:
            return None
        delivery.begin()
        if delivery.ahead is not None:
            delivery.ahead(written)
        messages = at_once_messages(delivery.wire, written)
        delivery.over(written)
        return messages

    async def _send(self, scope: Scope, receive: Receive, send: Send, ready: Prepared) -> None:
        """Write what ``Creates.answer`` made (the store has it all by now)."""
        now = self._now(scope, ready)  # an error, a bug, a reply written at once
        if now is not None:
            await send(now[0])
            await send(now[1])
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
                await self._answer_bug(scope, send, ready.bug or RuntimeError("no wire"))
                return
            # once the writer has started, a bug can only drop the connection
            written = await send_wire(delivery.watch(send), receive, wire, delivery.ahead)
        finally:
            delivery.over(written)

    async def _answer_bug(self, scope: Scope, send: Send, exc: Exception) -> None:
        """A bug before anything was sent is answered here (a 500 envelope, the traceback kept
        for the after-test report), not by Starlette's error middleware, which re-raises to the
        server and so drops a keep-alive connection."""
        await send_error(send, self._bug_error(scope, exc))

    def _bug_error(self, scope: Scope, exc: Exception) -> OpenResponsesError:
        """The 500 envelope of a bug, its traceback kept for the after-test report (the 503 of
        a store that cannot take a call now: no bug, ``bug_error``)."""
        found = self.namespaces.find(scope.get("path_params", {}).get("namespace", ""))
        if found is not None and not isinstance(exc, StoreUnavailable):
            found.errors.append("".join(traceback.format_exception(exc)).rstrip())
        return bug_error(exc)

    async def _raw_body(self, headers: dict[str, str], receive: Receive) -> bytes:
        """A JSON body, read with the size limit (415 for another media type)."""
        json_only(headers)
        return await read_body(receive, headers.get("content-length", ""), self.max_body)

    def _parse(self, raw: bytes) -> tuple[Any, ResponseRequest | None]:
        """Decode and check a body; a valid one is remembered by its bytes, so that a repeated
        request is not decoded and checked again. An invalid one is left to the engine, which
        journals it with its error."""
        body = decode_json(raw)
        try:
            request = parse_request(body)
        except OpenResponsesError:
            return body, None
        self._read.keep(raw, body, request)
        return body, request


def create_app(
    namespaces: Namespaces | None = None,
    *,
    api_key: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    admin_hosts: frozenset[str] = frozenset(),
    allowed_hosts: frozenset[str] = frozenset(),
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
) -> Any:
    """The ASGI app of one ormock server; ``namespaces`` holds its engines and their options;
    ``allowed_hosts``: the names it answers to besides loopback ones (``Perimeter``)."""
    namespaces = namespaces or Namespaces()
    create = _CreateResponse(namespaces, max_body)
    socket = ResponsesSocket(namespaces)

    async def models(request: Request) -> Response:
        try:  # a namespace nobody opened (or one dropped) is 404, as on every other endpoint
            engine = namespaces.serve(request.path_params.get("namespace", ""))
        except OpenResponsesError as error:
            return error_response(error)
        data = [m.listing() for m in engine.profile.models]
        return Response(encode_json({"object": "list", "data": data}),
                        media_type="application/json")

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 405:
            return error_response(OpenResponsesError(
                f"{request.method} is not allowed on {request.url.path}.",
                type="method_not_allowed", code="method_not_allowed", param="method",
                status=405, headers=dict(exc.headers or {})))
        return error_response(OpenResponsesError(
            f"No route for {request.method} {request.url.path}: ormock serves "
            "POST /v1/responses, /v1/responses/compact and /v1/responses/input_tokens, "
            "GET and DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items, "
            "POST /v1/responses/{id}/cancel, /v1/conversations (and its items), "
            "GET /v1/models and the admin API under /_ormock/.",
            type="not_found", code="unknown_route", param="path", status=exc.status_code))

    def bug_answer(scope: Scope, exc: Exception) -> Response:
        return error_response(create._bug_error(scope, exc))

    async def server_error(request: Request, exc: Exception) -> Response:
        return bug_answer(request.scope, exc)

    replay, create_route = ReplayRoute(namespaces, max_body, create._answer_bug), \
        _CreateRoute(create)
    create.replay = replay
    routes: list[BaseRoute] = [replay, create_route,
                               *inspector_routes(namespaces, admin_hosts),
                               *admin_routes(namespaces, admin_hosts, max_body)]
    for prefix in ("", "/{namespace:str}"):
        routes += [
            WebSocketRoute(prefix + "/v1/responses", socket),
            *compact_routes(namespaces, create._raw_body, create._answer_bug, prefix),
            *response_routes(namespaces, prefix),
            Route(prefix + "/v1/models", models, methods=["GET"]),
            *conversation_routes(namespaces, create._raw_body, create._answer_bug, prefix),
        ]
    app = Starlette(
        routes=routes,
        # a store that cannot take a call: answered, not raised on (Starlette's error middleware
        # raises every other exception to the server once answered)
        exception_handlers={HTTPException: http_error, StoreUnavailable: server_error,
                            Exception: server_error},
    )
    served: Any = ProfileErrors(app, namespaces)
    guard = None if api_key is None else ApiKeyGuard(served, api_key)
    perimeter = Perimeter(guard or served, allowed_hosts)
    return Front(perimeter, namespaces.seed, namespaces, replay, create_route, bug_answer,
                 guard, perimeter, max_header_bytes)
