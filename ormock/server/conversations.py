"""``[/<namespace>]/v1/conversations`` and its items: the JSON endpoints of
``ormock.engine.conversations``. A body is read as create reads one (``application/json``, the
size limit); each answer is one JSON object, given under the namespace engine's lock; a bad
request is the Open Responses error envelope, a bug a 500 envelope (the connection kept)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from starlette.routing import BaseRoute, Route

from ormock.engine import conversations as conv
from ormock.engine.core import Engine
from ormock.engine.namespaces import Namespaces
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Json, Receive, Scope, Send
from ormock.server.body import decode_json, send_whole
from ormock.server.compact import OnBug, ReadBody

__all__ = ["conversation_routes"]

Query = dict[str, list[str]]
# (engine, path parameters, query, body or None) -> the JSON answer
Action = Callable[[Engine, dict[str, str], Query, Any], Json]


class _Endpoint:
    """One path's methods (an ASGI app): each an action, and whether it reads a body."""

    def __init__(self, namespaces: Namespaces, read_body: ReadBody, on_bug: OnBug,
                 actions: dict[str, tuple[Action, bool]]) -> None:
        self.namespaces = namespaces
        self.read_body = read_body
        self.on_bug = on_bug
        self.actions = actions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        params: dict[str, str] = dict(scope.get("path_params", {}))
        action, reads_body = self.actions.get(scope["method"]) or self.actions["GET"]  # HEAD
        try:
            engine = self.namespaces.serve(params.pop("namespace", ""))
            if not engine.profile.conversations:
                raise OpenResponsesError(
                    f"No route for {scope['method']} {scope['path']}: the "
                    f"{engine.profile.name!r} profile has no conversations API.",
                    type="not_found", code="unknown_route", param="path", status=404)
            body = decode_json(await self.read_body(headers, receive)) if reads_body else None
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"),
                             keep_blank_values=True)
            with engine.lock:
                data = action(engine, params, query, body)
        except OpenResponsesError as error:
            await send_whole(send, error.status, error.body(), error.headers)
            return
        except Exception as exc:
            await self.on_bug(scope, send, exc)
            return
        await send_whole(send, 200, encode_json(data).encode(), {})


def conversation_routes(namespaces: Namespaces, read_body: ReadBody, on_bug: OnBug,
                        prefix: str = "") -> list[BaseRoute]:
    """The routes under ``prefix`` (``""`` or ``/{namespace:str}``)."""

    def route(path: str, actions: dict[str, tuple[Action, bool]]) -> Route:
        return Route(prefix + path, _Endpoint(namespaces, read_body, on_bug, actions),
                     methods=list(actions))

    return [
        route("/v1/conversations", {
            "POST": (lambda e, p, q, b: conv.create_conversation(e, b), True)}),
        route("/v1/conversations/{conversation_id}", {
            "GET": (lambda e, p, q, b: conv.get_conversation(e, p["conversation_id"]), False),
            "POST": (lambda e, p, q, b: conv.update_conversation(e, p["conversation_id"], b),
                     True),
            "DELETE": (lambda e, p, q, b: conv.delete_conversation(e, p["conversation_id"]),
                       False)}),
        route("/v1/conversations/{conversation_id}/items", {
            "GET": (lambda e, p, q, b: conv.list_items(e, p["conversation_id"], q), False),
            "POST": (lambda e, p, q, b: conv.add_items(e, p["conversation_id"], b, q), True)}),
        route("/v1/conversations/{conversation_id}/items/{item_id}", {
            "GET": (lambda e, p, q, b: conv.get_item(e, p["conversation_id"], p["item_id"], q),
                    False),
            "DELETE": (lambda e, p, q, b: conv.delete_item(e, p["conversation_id"],
                                                           p["item_id"]), False)}),
    ]
