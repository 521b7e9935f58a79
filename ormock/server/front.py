"""The server's front (``Front``), outermost: the header cap and the request id of every
request, and the one way in of a create: ``[/<namespace>]/v1/responses`` has no route in
Starlette's router, the front answers it (``Front.create``), step by step
(``ormock.server.app`` assembles it)."""

from __future__ import annotations

import re
from collections.abc import Awaitable

from starlette.datastructures import URL
from starlette.responses import RedirectResponse, Response

from ormock.engine.core import Engine
from ormock.engine.namespaces import Namespaces
from ormock.engine.store import StoreUnavailable
from ormock.protocol.ids import IdFactory
from ormock.server.asgi import App, Message, Receive, Scope, Send
from ormock.server.auth import ApiKeyGuard
from ormock.server.body import (
    DEFAULT_MAX_HEADER_BYTES,
    header_bytes,
    headers_too_large,
    whole_messages,
)
from ormock.server.create import CreateEndpoint, error_response, method_not_allowed
from ormock.server.perimeter import Perimeter
from ormock.server.profile_errors import respelling
from ormock.server.replay import ReplayRoute

__all__ = ["CREATE_PATH", "Front", "create_namespace"]


_REQUEST_ID = re.compile(r"^[\x21-\x7e]{1,200}$")


CREATE_PATH = "/v1/responses"


def create_namespace(path: str) -> str | None:
    """The namespace of ``[/<namespace>]/v1/responses`` (``""`` for none); None for any other
    path."""
    if path == CREATE_PATH:  # the default namespace's, most of the time
        return ""
    if not path.endswith(CREATE_PATH):
        return None
    head = path[: -len(CREATE_PATH)]
    if head and (head[0] != "/" or "/" in head[1:] or len(head) == 1):
        return None
    return head[1:]


class Front:
    """Pure ASGI, outermost. A request (HTTP or a WebSocket upgrade, any path) whose headers
    pass ``max_header_bytes`` is refused, 431 ``request_headers_too_large``; every HTTP
    response carries ``X-Request-ID`` (the client's own when it sent a printable one). A
    request to ``[/<namespace>]/v1/responses`` (or that path with a trailing slash) is
    answered by ``create``; any other goes through ``app``: the perimeter, the API key guard,
    the profile's error spelling, Starlette's router."""

    def __init__(self, app: App, namespaces: Namespaces, *, seed: int, perimeter: Perimeter,
                 guard: ApiKeyGuard | None, replay: ReplayRoute, endpoint: CreateEndpoint,
                 max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES) -> None:
        self.app, self.namespaces = app, namespaces
        self.perimeter, self.guard, self.replay, self.endpoint = (perimeter, guard, replay,
                                                                  endpoint)
        self.max_header_bytes = max_header_bytes
        self.ids = IdFactory(seed ^ 0x5EED)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self.app(scope, receive, send)
            return
        size = header_bytes(scope["headers"])
        if size > self.max_header_bytes:
            if kind == "websocket":
                await self._refuse_socket(scope, receive, send, size)
            else:
                start, whole = self._too_large(scope, size)
                await send(start)
                await send(whole)
            return
        if kind != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        name = create_namespace(path)
        if name is not None:
            await self.create(scope, receive, send, name)
        elif path.endswith("/") and (name := create_namespace(path.rstrip("/"))) is not None:
            await self.create(scope, receive, send, name, slashed=True)
        else:
            await self.app(scope, receive,
                           _IdSend(send, self._request_id(_sent_id(scope["headers"]))))

    async def create(self, scope: Scope, receive: Receive, send: Send, name: str,
                     slashed: bool = False) -> None:
        """The one way in of a request to ``[/<namespace>]/v1/responses`` (``name``: its
        namespace), past the header cap (``__call__``). Each step once, in order:

        1. the perimeter (``Perimeter.refusal``: 403 to a foreign page's request);
        2. the API key guard (``ApiKeyGuard.allows``: 401);
        3. the cassettes' claim (``ReplayRoute.claimed``, asked unless the engine neither
           replays nor records: ``_claimed``): the recorded answer;
        4. the engine's answer (``CreateEndpoint.answer``); or, as Starlette's router would
           answer them, 307 to the path without its trailing slash (``slashed``), 405 to
           another method than POST;
        5. the profile's error spelling (``respelling``, on what 3 and 4 send);
        6. the request id (``_IdSend``, on every answer).

        A bug that escapes is answered as Starlette's error middleware would (the 500
        envelope when nothing was sent yet, then raised to the server); a store that cannot
        take a call, 503 when nothing was sent yet, and never raised on."""
        headers, header = self._headers(scope["headers"])
        with_id = _IdSend(send, header)
        refused = self.perimeter.refusal(scope)
        if refused is not None:
            await self.perimeter.refuse(scope, receive, with_id, refused)
            return
        if self.guard is not None and not self.guard.allows(scope):
            await self.guard.refuse(scope, receive, with_id)
            return
        scope["path_params"] = {"namespace": name} if name else {}
        spelled: Send = with_id
        try:
            engine = self.namespaces.find(name)
            profile = engine.profile if engine is not None else self.namespaces.profile_of(name)
            if profile.respells_errors:
                spelled = respelling(with_id, profile, scope)
            claimed = self._claimed(name, engine)
            if claimed is not None:
                scope["path_params"] = {"namespace": claimed} if claimed else {}
                await self.replay.handle(scope, receive, spelled)
            elif slashed:
                await _unslashed(scope)(scope, receive, spelled)
            elif scope["method"] != "POST":
                await _not_allowed(scope)(scope, receive, spelled)
            else:
                await self.endpoint.answer(scope, receive, spelled, headers, name, engine)
        except Exception as exc:
            if not with_id.started:
                bug = self.endpoint.bug_error(scope, exc)
                await error_response(bug)(scope, receive, spelled)
            if not isinstance(exc, StoreUnavailable):
                raise

    def _claimed(self, name: str, engine: Engine | None) -> str | None:
        """``ReplayRoute.claimed`` of a create to namespace ``name`` (``engine``: as found):
        the cassettes claim it as this worker knows the namespace, and a create that finds it
        changed is replayed all the same (``CreateEndpoint.answer``). Without a shared store
        the engine found is the one the route asks, so one that neither replays nor records
        is claimed by none: the route is not asked."""
        if engine is not None and not engine.replaying and self.namespaces.backend is None:
            return None
        return self.replay.claimed(name, lazily=True, found=engine)

    def _headers(self, raw_headers: list[tuple[bytes, bytes]]
                 ) -> tuple[dict[str, str], tuple[bytes, bytes]]:
        """A create's headers, decoded once, and its ``X-Request-ID`` header."""
        headers = {raw.decode("latin-1"): value.decode("latin-1") for raw, value in raw_headers}
        text = headers.get("x-request-id")
        if text is not None and len(headers) != len(raw_headers):  # a name sent twice:
            text = next(v for n, v in raw_headers if n == b"x-request-id").decode(
                "latin-1")  # the first one, as the loop above takes
        return headers, self._request_id(text)

    def _request_id(self, text: str | None) -> tuple[bytes, bytes]:
        """The ``X-Request-ID`` header of a request that sent ``text`` (its own when it is
        printable, else a new one)."""
        request_id = text if text is not None and _REQUEST_ID.match(text) else None
        if request_id is None:
            request_id = self.ids.new("req")
        return b"x-request-id", request_id.encode()

    async def _refuse_socket(self, scope: Scope, receive: Receive, send: Send,
                             size: int) -> None:
        """A WebSocket upgrade whose headers are too large: refused with the 431 answer where
        the server can send one (``websocket.http.response``), else closed before it is
        accepted (uvicorn answers 403)."""
        await receive()  # websocket.connect
        if "websocket.http.response" not in scope.get("extensions", {}):
            await send({"type": "websocket.close", "code": 1008,
                        "reason": "request headers too large"})
            return
        start, whole = self._too_large(scope, size)
        start["type"], whole["type"] = ("websocket.http.response.start",
                                        "websocket.http.response.body")
        await send(start)
        await send(whole)

    def _too_large(self, scope: Scope, size: int) -> tuple[Message, Message]:
        """The 431 answer to a request of ``size`` bytes of headers, with its request id."""
        start, whole = whole_messages(431, headers_too_large(size, self.max_header_bytes).body())
        _with_id(start, self._request_id(_sent_id(scope["headers"])))
        return start, whole


def _unslashed(scope: Scope) -> Response:
    """The 307 of a create path with a trailing slash to the path without, as Starlette's
    router redirects a path it has a route for without the slash."""
    return RedirectResponse(url=str(URL(scope={**scope, "path": scope["path"].rstrip("/")})))


def _not_allowed(scope: Scope) -> Response:
    """The 405 of a create path asked with another method than POST, as Starlette's router
    answers it (``http_error`` in ``ormock.server.app``)."""
    return error_response(method_not_allowed(scope["method"], URL(scope=scope).path,
                                             {"Allow": "POST"}))


def _sent_id(raw_headers: list[tuple[bytes, bytes]]) -> str | None:
    """The request's own ``X-Request-ID``, the first one, if it sent one."""
    for key, value in raw_headers:
        if key == b"x-request-id":
            return value.decode("latin-1")
    return None


def _with_id(message: Message, header: tuple[bytes, bytes]) -> None:
    """A response's start ``message`` with the ``X-Request-ID`` ``header`` (a replay's own
    kept)."""
    sent = message.get("headers", ())
    for key, _ in sent:
        if key == b"x-request-id":  # a replay's own
            return
    message["headers"] = [*sent, header]


class _IdSend:
    """A ``send`` whose response carries the ``X-Request-ID`` ``header``; ``started`` once its
    head was sent. Hands back ``send``'s awaitable: no coroutine of its own."""

    __slots__ = ("header", "send", "started")

    def __init__(self, send: Send, header: tuple[bytes, bytes]) -> None:
        self.send, self.header, self.started = send, header, False

    def __call__(self, message: Message) -> Awaitable[None]:
        if message["type"] == "http.response.start":
            self.started = True
            _with_id(message, self.header)
        return self.send(message)
