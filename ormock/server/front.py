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
from ormock.engine.writer import remember_transport
from ormock.protocol.ids import IdFactory
from ormock.server.asgi import App, Message, Receive, Scope, Send
from ormock.server.auth import ApiKeyGuard
from ormock.server.replay import ReplayRoute

if TYPE_CHECKING:
    from ormock.server.app import _CreateRoute

__all__ = ["CREATE_PATH", "Front", "create_namespace"]


_REQUEST_ID = re.compile(r"^[\x21-\x7e]{1,200}$")
# header names as the front decoded them (the same few come with every request), the first
# ``_NAMES_KEPT`` seen: a client sending new names never makes it grow past them
_NAMES: dict[bytes, str] = {}
_NAMES_KEPT = 256


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
    """Pure ASGI, outermost: every HTTP response carries ``X-Request-ID`` (the client's own when
    it sent a printable one); ``POST [/<namespace>]/v1/responses`` goes straight to its route
    when nothing in front of it would act on it (its API key is the server's, its namespace's
    profile respells no error, the cassette route, tried first as the router would, does not
    claim it): one layer and one wrapped ``send`` instead of the middlewares, Starlette's two
    and its router. A bug that escapes the route is answered as Starlette's error middleware
    would (the 500 envelope when nothing was sent yet, then raised to the server). Any other
    request goes through ``app``: the API key guard, the profile's error spelling, Starlette."""

    def __init__(self, app: App, seed: int, namespaces: Namespaces, replay: ReplayRoute,
                 create: _CreateRoute, server_error: Callable[[Scope, Exception], Response],
                 guard: ApiKeyGuard | None) -> None:
        self.app, self.namespaces, self.replay, self.create = app, namespaces, replay, create
        self.server_error, self.guard = server_error, guard
        self.ids = IdFactory(seed ^ 0x5EED)

    def direct(self, scope: Scope) -> tuple[str, Engine | None] | None:
        """The namespace (and its engine when it exists) of a request the create route answers
        with nothing in front of it (its ``path_params`` set then); None for any other."""
        if scope["method"] != "POST":
            return None
        path = scope["path"]
        name = "" if path == CREATE_PATH else create_namespace(path)
        if name is None or (self.guard is not None and not self.guard.allows(scope)):
            return None
        engine = self.namespaces.find(name)  # its profile, else the server's
        profile = engine.profile if engine is not None else self.namespaces.settings.profile
        # as this worker knows the namespace: a create that finds it changed routes again
        if profile.error_types or self.replay.claims(name, lazily=True, found=engine):
            return None
        scope["endpoint"] = self.create.create
        scope["path_params"] = {"namespace": name} if name else {}
        return name, engine

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        remember_transport(send)  # for disconnect faults, below Starlette's wrapped sends
        route = self.direct(scope)
        raw_headers = scope["headers"]
        headers: dict[str, str] | None = None
        text = None
        if route is None:
            for key, value in raw_headers:
                if key == b"x-request-id":
                    text = value.decode("latin-1")
                    break
        else:  # the create route's headers, decoded once: the request id among them
            headers = {}
            names = _NAMES
            for raw, value in raw_headers:  # a loop: cheaper than a comprehension
                key = names.get(raw)  # a name seen before: not decoded again
                if key is None:
                    key = raw.decode("latin-1")
                    if len(names) < _NAMES_KEPT:
                        names[raw] = key
                headers[key] = value.decode("latin-1")
            text = headers.get("x-request-id")
            if text is not None and len(headers) != len(raw_headers):  # a name sent twice:
                text = next(v for n, v in raw_headers if n == b"x-request-id").decode(
                    "latin-1")  # the first one, as the loop above takes
        request_id = text if text is not None and _REQUEST_ID.match(text) else None
        if request_id is None:
            request_id = self.ids.new("req")
        header = (b"x-request-id", request_id.encode())
        started = False

        def send_with_id(message: Message) -> Awaitable[None]:
            # a plain function handing back ``send``'s awaitable: no coroutine of its own
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                sent = message.get("headers", ())
                for key, _ in sent:
                    if key == b"x-request-id":  # a replay's own
                        break
                else:
                    message["headers"] = [*sent, header]
            return send(message)

        if route is None or headers is None:
            await self.app(scope, receive, send_with_id)
            return
        namespace, found = route  # positional below: cheaper than a starred call
        try:
            await self.create.create.answer(scope, receive, send_with_id, headers, namespace,
                                            found)
        except Exception as exc:
            if not started:
                await self.server_error(scope, exc)(scope, receive, send_with_id)
            raise
