"""Error envelopes spelled the way a namespace's profile spells them.

A profile's ``error_types`` (``platform``: OpenAI's ``invalid_request_error`` for
``invalid_request`` and ``not_found``) rename the ``type`` of every HTTP error envelope a
namespace answers, and its ``error_body`` (``openrouter``: ``{"error": {"code", "message",
"metadata"}}``) reshapes the envelope, whichever endpoint built it (a validation 400, a 404, an
injected ``http_error`` fault), so no endpoint needs to know the profile: ``ProfileErrors`` for
the router's routes, ``respelling`` on the send of a create (``ormock.server.front``). A
namespace whose profile respells nothing is passed straight through (nothing is buffered), and
so is an answer replayed from a cassette (it goes out as recorded).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from ormock.engine.namespaces import Namespaces
from ormock.protocol.profile import Profile
from ormock.protocol.sse import encode_json
from ormock.server.asgi import Message, Receive, Scope, Send
from ormock.server.replay import REPLAYED, namespace_of

__all__ = ["ProfileErrors", "namespace_profile", "respelling"]


def namespace_profile(namespaces: Namespaces, path: str) -> Profile:
    """The profile of the namespace a request path is in (``/v1/...``: ``""``;
    ``/<name>/v1/...``: ``name``): its engine's when it has one, else the one it was opened
    with, else the server's."""
    return namespaces.profile_of(namespace_of(path) or "")


def respell(body: bytes, profile: Profile, status: int = 400) -> bytes:
    """An error envelope's bytes as the profile sends it with ``status`` (a body that is no
    Open Responses envelope as it was)."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("type"), str):
        return body
    spelled = profile.error_envelope(data, status)
    if spelled == data:
        return body
    return encode_json(spelled).encode()


class ProfileErrors:
    """Pure ASGI middleware: respell the error envelopes of namespaces whose profile
    ``respells_errors``."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]],
                 namespaces: Namespaces) -> None:
        self.app = app
        self.namespaces = namespaces

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        profile = namespace_profile(self.namespaces, scope.get("path", ""))
        if not profile.respells_errors:
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, respelling(send, profile, scope))


def respelling(send: Send, profile: Profile, scope: Scope) -> Send:
    """``send`` with each JSON error envelope (status 400 and up) respelled as ``profile``
    spells it: held until its whole body is read, sent with its new length; any other answer,
    and one replayed from a cassette (``REPLAYED`` in the scope's state: it goes out as
    recorded), passed on as it comes."""
    start: Message | None = None
    chunks: list[bytes] = []

    async def respelled(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            headers = message.get("headers", [])
            json_body = any(k == b"content-type" and v.startswith(b"application/json")
                            for k, v in headers)
            replayed = scope.get("state", {}).get(REPLAYED, False)
            if message["status"] >= 400 and json_body and not replayed:
                start = message  # held until the whole body is read
                return
        elif message["type"] == "http.response.body" and start is not None:
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = respell(b"".join(chunks), profile, start["status"])
            headers = [(k, v) for k, v in start.get("headers", [])
                       if k != b"content-length"]
            await send({**start, "headers": [*headers,
                                              (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        await send(message)

    return respelled
