"""The stored-response endpoints beside create, per namespace, and what create does around its
answer for them:

- ``GET [/<namespace>]/v1/responses/{id}`` (``include`` checked; ``stream=true`` and
  ``starting_after``: a background response's events, ``ormock.server.resume``),
  ``DELETE`` (a tombstone; 409 while its answer is still being written),
  ``GET .../{id}/input_items`` (cursor pages),
  ``POST .../{id}/cancel`` (a background response still running is stopped and
  stored ``cancelled``, a finished one answered as it is; any other is 400
  ``unsupported_operation``). A response absent, deleted or created with another API key is
  404 ``response_not_found`` on every one of them.
- ``Idempotency-Key`` on create: a request answered before is answered again here
  (``send_replay``); the claim is taken in ``ormock.engine.create_answer``.

The logic lives in ``ormock.engine.stateful``; this module reads requests and writes answers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ormock.engine.core import Engine
from ormock.engine.namespaces import Namespaces
from ormock.engine.stateful import (
    Generating,
    IdempotencyRecord,
    check_include,
    input_items_page,
    not_found,
    owner_of,
)
from ormock.engine.store.responses import Stored
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Send
from ormock.server.background import cancel_background
from ormock.server.body import send_whole
from ormock.server.resume import EventStream, resume_query, settled, streamable

__all__ = ["response_routes", "send_replay"]

Endpoint = Callable[[Request], Awaitable[Response]]
_POST_ONLY = ("compact", "input_tokens")  # /v1/responses/compact, /v1/responses/input_tokens


def _json(data: Any, status: int = 200) -> Response:
    return Response(encode_json(data), status_code=status, media_type="application/json")


def _error(error: OpenResponsesError) -> Response:
    return Response(error.body(), status_code=error.status, media_type="application/json",
                    headers=error.headers)


def _visible(engine: Engine, request: Request) -> Stored:
    """The response the path names, as the caller's API key sees it (else 404)."""
    response_id = request.path_params["response_id"]
    found = engine.responses.visible(response_id, owner_of(request.headers))
    if found is None:
        raise not_found(response_id)
    return found


def _include(request: Request) -> list[str]:
    query = request.query_params  # the openai SDK writes include[]=..., others include=...
    return check_include([*query.getlist("include"), *query.getlist("include[]")])


def _limit(request: Request) -> int:
    raw = request.query_params.get("limit", "20")
    try:
        return int(raw)
    except ValueError:
        raise OpenResponsesError(f"Invalid value for 'limit': {raw!r}; it must be a whole "
                                 "number between 1 and 100.", code="invalid_type",
                                 param="limit") from None


def _endpoint(namespaces: Namespaces, answer: Callable[[Engine, Request], Response]
              ) -> Endpoint:
    """An endpoint answering from its namespace's engine; an error is the envelope."""

    async def endpoint(request: Request) -> Response:
        try:
            engine = namespaces.serve(request.path_params.get("namespace", ""))
            return answer(engine, request)
        except OpenResponsesError as error:
            return _error(error)

    return endpoint


def _get(engine: Engine, request: Request) -> Response:
    _include(request)
    stream, after = resume_query(request)
    stored = _visible(engine, request)
    if not stream:
        return Response(settled(engine.responses, stored).raw, media_type="application/json")
    streamable(engine.responses, stored)  # background, its events still stored
    return EventStream(engine.responses, stored.response_id, after)


def _delete(engine: Engine, request: Request) -> Response:
    if request.path_params["response_id"] in _POST_ONLY:  # not an id: the route takes POST
        raise HTTPException(405, headers={"Allow": "POST"})
    stored = _visible(engine, request)
    response_id = stored.response_id
    if Generating.has(engine.responses, response_id):
        raise OpenResponsesError(
            f"Response {response_id!r} is still being generated; it can be deleted once its "
            "answer has finished (deleting does not cancel it).", type="conflict",
            code="response_in_progress", param="response_id")
    engine.responses.bury(response_id)
    return _json({"id": response_id, "object": "response.deleted", "deleted": True})


def _input_items(engine: Engine, request: Request) -> Response:
    stored = _visible(engine, request)
    _include(request)
    query = request.query_params
    return _json(input_items_page(stored, order=query.get("order", "desc"),
                                  limit=_limit(request), after=query.get("after")))


def _cancel(engine: Engine, request: Request) -> Response:
    stored = _visible(engine, request)
    if stored.response.get("background") is True:  # running: stopped; finished: as it is
        # the answer is what the store holds now: the cancel, or the end that beat it
        now = cancel_background(engine.responses, stored.response_id)
        return _json(now if now is not None else stored.response)
    raise OpenResponsesError(
        f"Response {stored.response_id!r} was not created with background: true; only a "
        "background response can be cancelled.", code="unsupported_operation",
        param="response_id")


def response_routes(namespaces: Namespaces, prefix: str = "") -> list[BaseRoute]:
    """The routes under ``prefix`` (``""`` or ``/{namespace:str}``), after compact's."""
    path = prefix + "/v1/responses/{response_id}"
    return [
        Route(path, _endpoint(namespaces, _get), methods=["GET"]),
        Route(path, _endpoint(namespaces, _delete), methods=["DELETE"]),
        Route(path + "/input_items", _endpoint(namespaces, _input_items), methods=["GET"]),
        Route(path + "/cancel", _endpoint(namespaces, _cancel), methods=["POST"]),
    ]


# -- around create ------------------------------------------------------------------------------
async def send_replay(send: Send, engine: Engine, record: IdempotencyRecord) -> None:
    """The answer of the first request with this key, byte for byte, with
    ``X-Idempotent-Replayed: true`` (a response deleted since: 404)."""
    assert record.response_id is not None
    if engine.responses.buried(record.response_id):
        raise not_found(record.response_id)
    body = record.body
    kind = b"text/event-stream" if record.sse else b"application/json"
    await send_whole(send, 200, body, {"x-idempotent-replayed": "true"}, kind)


