"""``--api-key``: one check in front of every ``/v1`` endpoint of every namespace, for HTTP and
for the WebSocket upgrade alike (``POST /v1/responses``, ``GET /v1/responses/{id}``,
``GET /v1/models``, ``GET /v1/responses`` upgraded). The admin API is guarded apart (loopback,
``Host`` and ``Origin``), not by the key."""

from __future__ import annotations

import hmac

from ormock.protocol.errors import OpenResponsesError
from ormock.server.asgi import App, Receive, Scope, Send

__all__ = ["ApiKeyGuard", "is_api_path"]


def is_api_path(path: str) -> bool:
    """``/v1...`` or ``/<namespace>/v1...``."""
    parts = path.split("/", 3)
    return (len(parts) > 1 and parts[1] == "v1") or (len(parts) > 2 and parts[2] == "v1")


def _refusal() -> OpenResponsesError:
    return OpenResponsesError(
        "Incorrect API key provided: this ormock server was started with --api-key; send "
        "'Authorization: Bearer <that key>'.",
        type="authentication_error", code="invalid_api_key", param="authorization", status=401,
    )


class ApiKeyGuard:
    """Pure ASGI middleware: a ``/v1`` request without ``Authorization: Bearer <key>`` gets 401
    (HTTP) or a refused handshake (WebSocket), before any endpoint sees it (a create: the
    front asks ``allows`` itself, ``ormock.server.front``)."""

    def __init__(self, app: App, api_key: str) -> None:
        self.app = app
        self.expected = f"Bearer {api_key}".encode("latin-1")

    def allows(self, scope: Scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                return hmac.compare_digest(value, self.expected)
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not is_api_path(scope["path"]) or (
                self.allows(scope)):
            await self.app(scope, receive, send)
            return
        await self.refuse(scope, receive, send)

    @staticmethod
    async def refuse(scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a request without the key: 401 (HTTP), a handshake refused (WebSocket)."""
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008, "reason": "invalid API key"})
            return
        error = _refusal()
        body = error.body()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", b'Bearer realm="ormock"')]})
        await send({"type": "http.response.body", "body": body, "more_body": False})
