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

from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import URLPath
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, NoMatchFound, Route, WebSocketRoute

from ormock.engine.namespaces import Namespaces
from ormock.engine.store import StoreUnavailable
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.sse import encode_json
from ormock.server.admin import admin_routes
from ormock.server.asgi import Receive, Scope, Send
from ormock.server.auth import ApiKeyGuard
from ormock.server.body import (
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_HEADER_BYTES,
)
from ormock.server.compact import compact_routes
from ormock.server.conversations import conversation_routes
from ormock.server.create import CreateEndpoint, error_response
from ormock.server.front import Front, create_namespace
from ormock.server.inspector import inspector_routes
from ormock.server.perimeter import Perimeter
from ormock.server.profile_errors import ProfileErrors
from ormock.server.replay import ReplayRoute
from ormock.server.responses_api import response_routes
from ormock.server.websocket import ResponsesSocket

__all__ = ["create_app"]


class _CreateRoute(BaseRoute):
    """The route of ``POST [/<namespace>]/v1/responses``, which most requests take, so it is
    matched by a string test instead of a regular expression, and tried first. Another method
    gets 405."""

    def __init__(self, create: CreateEndpoint) -> None:
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
    create = CreateEndpoint(namespaces, max_body)
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
        return error_response(create.bug_error(scope, exc))

    async def server_error(request: Request, exc: Exception) -> Response:
        return bug_answer(request.scope, exc)

    replay, create_route = ReplayRoute(namespaces, max_body, create.answer_bug), \
        _CreateRoute(create)
    create.replay = replay
    routes: list[BaseRoute] = [replay, create_route,
                               *inspector_routes(namespaces, admin_hosts),
                               *admin_routes(namespaces, admin_hosts, max_body)]
    for prefix in ("", "/{namespace:str}"):
        routes += [
            WebSocketRoute(prefix + "/v1/responses", socket),
            *compact_routes(namespaces, create.raw_body, create.answer_bug, prefix),
            *response_routes(namespaces, prefix),
            Route(prefix + "/v1/models", models, methods=["GET"]),
            *conversation_routes(namespaces, create.raw_body, create.answer_bug, prefix),
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
