"""``POST [/<namespace>]/v1/responses/compact`` and ``.../v1/responses/input_tokens``: the JSON
endpoints beside create. Each reads the body as create does (``application/json``, the
size limit), answers from the namespace's engine (``ormock.engine.compaction``,
``ormock.engine.token_count``) and writes one JSON object; a bad request is the Open Responses
error envelope, a bug a 500 envelope (the connection kept)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.routing import BaseRoute, Route

from ormock.engine.compaction import compact
from ormock.engine.core import Engine
from ormock.engine.journal import JournalEntry
from ormock.engine.namespaces import Namespaces
from ormock.engine.token_count import count_input_tokens
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Json, Receive, Scope, Send
from ormock.server.body import decode_json, send_whole

__all__ = ["JsonEndpoint", "compact_routes"]

Answer = Callable[[Engine, Any, dict[str, str], str, int], tuple[Json, JournalEntry]]
ReadBody = Callable[[dict[str, str], Receive], Awaitable[bytes]]
OnBug = Callable[[Scope, Send, Exception], Awaitable[None]]


class JsonEndpoint:
    """One POST endpoint answering a JSON body with a JSON object (an ASGI app)."""

    def __init__(self, namespaces: Namespaces, answer: Answer, read_body: ReadBody,
                 on_bug: OnBug) -> None:
        self.namespaces = namespaces
        self.answer = answer
        self.read_body = read_body  # the create endpoint's: Content-Type, then the size limit
        self.on_bug = on_bug  # the create endpoint's 500 envelope, the traceback kept

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            engine = self.namespaces.serve(scope.get("path_params", {}).get("namespace", ""))
            raw = await self.read_body(headers, receive)
            data, entry = self.answer(engine, decode_json(raw), headers, scope["path"],
                                      len(raw))
        except OpenResponsesError as error:
            await send_whole(send, error.status, error.body(), error.headers)
            return
        except Exception as exc:
            await self.on_bug(scope, send, exc)
            return
        body = encode_json(data).encode()
        await send_whole(send, 200, body, {})
        entry.sent_bytes = len(body)
        engine.finished(entry)


def compact_routes(namespaces: Namespaces, read_body: ReadBody, on_bug: OnBug,
                   prefix: str = "") -> list[BaseRoute]:
    """The routes of both endpoints under ``prefix`` (``""`` or ``/{namespace:str}``); placed
    before ``GET /v1/responses/{response_id}``, which would take their paths otherwise."""
    return [
        Route(prefix + "/v1/responses/compact",
              JsonEndpoint(namespaces, compact, read_body, on_bug), methods=["POST"]),
        Route(prefix + "/v1/responses/input_tokens",
              JsonEndpoint(namespaces, count_input_tokens, read_body, on_bug),
              methods=["POST"]),
    ]
