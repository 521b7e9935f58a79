"""The app's one front layer (``Front``): every HTTP response's ``X-Request-ID``, and
``POST [/<namespace>]/v1/responses`` handed straight to the create route when nothing in front
of it would act on it (``ormock.server.app`` assembles it)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from starlette.responses import Response

from ormock.engine.core import Engine
from ormock.engine.namespaces import Namespaces
from ormock.engine.store import StoreUnavailable
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.ids import IdFactory
from ormock.server.asgi import App, Message, Receive, Scope, Send
from ormock.server.auth import ApiKeyGuard
from ormock.server.body import (
    DEFAULT_MAX_HEADER_BYTES,
    header_bytes,
    headers_too_large,
    whole_messages,
)
from ormock.server.perimeter import Perimeter
from ormock.server.replay import ReplayRoute

if TYPE_CHECKING:
    from ormock.server.app import _CreateRoute

__all__ = ["CREATE_PATH", "Front", "bug_error", "create_namespace"]


_REQUEST_ID = re.compile(r"^[\x21-\x7e]{1,200}$")
# header names as the front decoded them (the same few come with every request), the first
# ``_NAMES_KEPT`` seen no longer than ``_NAME_KEPT_LENGTH``: a client sending new names, or
# long ones, never makes it grow past them
_NAMES: dict[bytes, str] = {}
_NAMES_KEPT = 256
_NAME_KEPT_LENGTH = 64


CREATE_PATH = "/v1/responses"


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
    """Pure ASGI, outermost: every HTTP response carries ``X-Request-ID`` (the client's own when
    it sent a printable one); ``POST [/<namespace>]/v1/responses`` goes straight to its route
    when nothing in front of it would act on it (the perimeter lets it in, its API key is the
    server's, its namespace's profile respells no error, the cassette route, tried first as the
    router would, does not claim it): one layer and one wrapped ``send`` instead of the
    middlewares, Starlette's two and its router. A bug that escapes the route is answered as
    Starlette's error middleware would (the 500 envelope when nothing was sent yet, then raised
    to the server). Any other
    request goes through ``app``: the perimeter, the API key guard, the profile's error spelling,
    Starlette. Before all of it, a request (HTTP or a WebSocket upgrade, any path) whose headers
    pass ``max_header_bytes`` is refused, 431 ``request_headers_too_large``."""

    def __init__(self, app: App, seed: int, namespaces: Namespaces, replay: ReplayRoute,
                 create: _CreateRoute, server_error: Callable[[Scope, Exception], Response],
                 guard: ApiKeyGuard | None, perimeter: Perimeter,
                 max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES) -> None:
        self.app, self.namespaces, self.replay, self.create = app, namespaces, replay, create
        self.server_error, self.guard, self.perimeter = server_error, guard, perimeter
        self.max_header_bytes, self.max_body = max_header_bytes, create.create.max_body
        self.ids = IdFactory(seed ^ 0x5EED)

    def direct(self, scope: Scope) -> tuple[str, Engine | None] | None:
        """The namespace (and its engine when it exists) of a request the create route answers
        with nothing in front of it (its ``path_params`` set then); None for any other."""
        if scope["method"] != "POST":
            return None
        path = scope["path"]
        name = "" if path == CREATE_PATH else create_namespace(path)
        if (name is None or self.perimeter.refusal(scope) is not None
                or (self.guard is not None and not self.guard.allows(scope))):
            return None
        engine = self.namespaces.find(name)  # its profile, else the server's
        profile = engine.profile if engine is not None else self.namespaces.settings.profile
        # as this worker knows the namespace: a create that finds it changed routes again
        if profile.respells_errors or self.replay.claims(name, lazily=True, found=engine):
            return None
        scope["endpoint"] = self.create.create
        scope["path_params"] = {"namespace": name} if name else {}
        return name, engine

    def _headers(self, raw_headers: list[tuple[bytes, bytes]]
                 ) -> tuple[dict[str, str], tuple[bytes, bytes]]:
        """A create's headers, decoded once, and its ``X-Request-ID`` header."""
        headers: dict[str, str] = {}
        names = _NAMES
        for raw, value in raw_headers:
            key = names.get(raw)  # a name seen before: not decoded again
            if key is None:
                key = raw.decode("latin-1")
                if len(names) < _NAMES_KEPT and len(raw) <= _NAME_KEPT_LENGTH:
                    names[raw] = key
            headers[key] = value.decode("latin-1")
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
        try:
            route = self.direct(scope)
        except Exception as exc:  # the store, asked whether a cassette claims it
            with_id = _IdSend(send, self._headers(scope["headers"])[1])
            await self.guarded(scope, receive, with_id, _raising(exc))
            return
        if route is None:
            await self.app(scope, receive,
                           _IdSend(send, self._request_id(_sent_id(scope["headers"]))))
            return
        headers, header = self._headers(scope["headers"])
        namespace, found = route
        with_id = _IdSend(send, header)
        await self.guarded(scope, receive, with_id,
                           self.create.create.answer(scope, receive, with_id, headers,
                                                     namespace, found))

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

    async def guarded(self, scope: Scope, receive: Receive, send: _IdSend,
                      answer: Awaitable[None]) -> None:
        """Run a create's ``answer``: a bug that escapes it is answered as Starlette's error
        middleware would (the 500 envelope when nothing was sent yet, then raised to the
        server); a store that cannot take a call (logged where it is raised) is answered so
        (503) when nothing was sent yet, and never raised on."""
        try:
            await answer
        except Exception as exc:
            if not send.started:
                await self.server_error(scope, exc)(scope, receive, send)
            if not isinstance(exc, StoreUnavailable):
                raise


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


async def _raising(exc: Exception) -> None:
    """An answer that fails with ``exc`` (a failure before the route ran), for ``guarded``."""
    raise exc
