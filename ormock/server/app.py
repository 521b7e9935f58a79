"""The Starlette app: ``/v1/*`` endpoints of an Open Responses provider, per namespace, behind
the front (``ormock.server.front``), which answers ``POST [/<namespace>]/v1/responses`` itself
(the create endpoint: ``ormock.server.create``) and gives every response its ``X-Request-ID``.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, WebSocketRoute

from ormock.engine.namespaces import Namespaces
from ormock.engine.store import StoreUnavailable
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.sse import encode_json
from ormock.server.admin import admin_routes
from ormock.server.auth import ApiKeyGuard
from ormock.server.body import (
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_HEADER_BYTES,
)
from ormock.server.compact import compact_routes
from ormock.server.conversations import conversation_routes
from ormock.server.create import CreateEndpoint, error_response, method_not_allowed
from ormock.server.front import Front
from ormock.server.inspector import inspector_routes
from ormock.server.perimeter import Perimeter
from ormock.server.profile_errors import ProfileErrors
from ormock.server.replay import ReplayRoute
from ormock.server.responses_api import response_routes
from ormock.server.websocket import ResponsesSocket

__all__ = ["create_app"]


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
            return error_response(method_not_allowed(request.method, request.url.path,
                                                      dict(exc.headers or {})))
        return error_response(OpenResponsesError(
            f"No route for {request.method} {request.url.path}: ormock serves "
            "POST /v1/responses, /v1/responses/compact and /v1/responses/input_tokens, "
            "GET and DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items, "
            "POST /v1/responses/{id}/cancel, /v1/conversations (and its items), "
            "GET /v1/models and the admin API under /_ormock/.",
            type="not_found", code="unknown_route", param="path", status=exc.status_code))

    async def server_error(request: Request, exc: Exception) -> Response:
        return error_response(create.bug_error(request.scope, exc))

    replay = ReplayRoute(namespaces, max_body, create.answer_bug)
    create.replay = replay
    routes: list[BaseRoute] = [replay,
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
    return Front(perimeter, namespaces, seed=namespaces.seed, perimeter=perimeter, guard=guard,
                 replay=replay, endpoint=create, max_header_bytes=max_header_bytes)
