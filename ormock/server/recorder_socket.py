"""The recorder's WebSocket mode: an upgraded request is proxied to the upstream's ``ws://`` (or
``wss://``) URL with the ``websockets`` client, each text frame both ways relayed at once and
recorded with its offset from the upgrade, and the close (who, which code, when). The session
is one interaction (``SocketSession``), written to the cassette when the connection closes.

Binary frames are relayed and not recorded (the Responses protocol has none, and a cassette
keeps text frames only). An upstream that refuses the upgrade or cannot be reached gets the
client a 502 with the error envelope (where the server supports the WebSocket denial response;
else a close with 1011), and nothing is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any, Literal

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from ormock.cassette.framing import event_text
from ormock.cassette.model import Interaction, SocketFrame, SocketSession, sendable_close
from ormock.cassette.recording import HOP_BY_HOP
from ormock.protocol.depth import loads
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.types import Receive, Scope, Send
from ormock.server.recorder_file import public_url
from ormock.server.relay import relayed_path, upstream_target

if TYPE_CHECKING:
    from ormock.server.recorder import RecorderApp

__all__ = ["proxy_socket", "socket_url"]

# the handshake's own headers: the websockets client makes its own
_HANDSHAKE = frozenset({"host", "connection", "upgrade", "sec-websocket-key",
                        "sec-websocket-version", "sec-websocket-extensions",
                        "sec-websocket-accept", "content-length", "accept-encoding",
                        "keep-alive", "proxy-connection", "proxy-authorization", "te",
                        "trailer", "transfer-encoding"})


def socket_url(http_url: str) -> str:
    if http_url.startswith("https://"):
        return "wss://" + http_url.removeprefix("https://")
    return "ws://" + http_url.removeprefix("http://")


def _frame(at: float, sender: Literal["client", "server"], text: str) -> SocketFrame:
    try:
        event = loads(text)
    except ValueError:  # (too deep to read as well: ``depth.loads``)
        return SocketFrame(at, sender, text=text)
    if not isinstance(event, dict):
        return SocketFrame(at, sender, text=text)
    return SocketFrame(at, sender, event=event, text=None if event_text(event) == text else text)


async def _refuse(scope: Scope, send: Send, message: str) -> None:
    """Turn the upgrade down: a 502 with the envelope, or a close where no denial exists."""
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1011})
        return
    data = OpenResponsesError(message, type="server_error", code="upstream_unreachable",
                              status=502).body()
    await send({"type": "websocket.http.response.start", "status": 502,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode())]})
    await send({"type": "websocket.http.response.body", "body": data, "more_body": False})


async def proxy_socket(app: RecorderApp, scope: Scope, receive: Receive, send: Send) -> None:
    if (await receive())["type"] != "websocket.connect":
        return
    started = time.monotonic()
    sequence = app.next_sequence()
    try:
        target = socket_url(upstream_target(app.upstream, relayed_path(scope)))
    except OpenResponsesError as refusal:
        app.log(f"ormock record: WS {scope['path'][:200]!r}: {refusal}: refused")
        await send({"type": "websocket.close", "code": 1008, "reason": "invalid path"})
        return
    query = scope.get("query_string", b"").decode("latin-1")
    try:
        upstream = await connect(target + (f"?{query}" if query else ""),
                                 additional_headers=app.forwarded_headers(scope, _HANDSHAKE),
                                 open_timeout=app.connect_timeout, max_size=None,
                                 compression=None)
    except (OSError, InvalidHandshake, TimeoutError) as error:
        where = public_url(target)
        app.log(f"ormock record: WS {scope['path']}: cannot open the upstream {where} "
                f"({error}): refused, not recorded")
        await _refuse(scope, send, f"ormock record could not open the upstream {where}: "
                                   f"{error}")
        return
    await send({"type": "websocket.accept"})
    frames: list[SocketFrame] = []

    def ms() -> float:
        return round((time.monotonic() - started) * 1000, 3)

    async def from_client() -> tuple[Literal["client", "server"], int | None, float]:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return "client", message.get("code"), ms()
            text = message.get("text")
            try:
                if text is not None:
                    frames.append(_frame(ms(), "client", text))
                    await upstream.send(text)
                elif message.get("bytes") is not None:
                    await upstream.send(message["bytes"])
            except ConnectionClosed:  # the upstream closed as the client spoke
                return "server", upstream.close_code, ms()

    async def from_upstream() -> tuple[Literal["server"], int | None, float]:
        with contextlib.suppress(ConnectionClosed):
            async for data in upstream:
                if isinstance(data, str):
                    frames.append(_frame(ms(), "server", data))
                    await send({"type": "websocket.send", "text": data})
                else:
                    await send({"type": "websocket.send", "bytes": bytes(data)})
        return "server", upstream.close_code, ms()

    await _pump(app, scope, send, upstream, from_client, from_upstream, frames, sequence)


async def _pump(app: RecorderApp, scope: Scope, send: Send, upstream: ClientConnection,
                from_client: Any, from_upstream: Any, frames: list[SocketFrame],
                sequence: int) -> None:
    client_side = asyncio.create_task(from_client())
    server_side = asyncio.create_task(from_upstream())
    try:
        done, _ = await asyncio.wait((client_side, server_side),
                                     return_when=asyncio.FIRST_COMPLETED)
        first = client_side if client_side in done else server_side
        closed_by, code, at = first.result()
        if closed_by == "client":
            server_side.cancel()
            await upstream.close(sendable_close(code, 1000))
        else:
            client_side.cancel()
            with contextlib.suppress(Exception):  # the client may be gone already
                await send({"type": "websocket.close", "code": sendable_close(code, 1011)})
    finally:
        client_side.cancel()
        server_side.cancel()
        await upstream.close()
    request = app.recorded_request(scope, drop=HOP_BY_HOP | _HANDSHAKE)
    session = SocketSession(tuple(frames), close_code=code, closed_by=closed_by, close_at=at)
    count = sum(1 for f in frames if f.sender == "server")
    line = (f"WS {request.target} {count} server frame{'s' if count != 1 else ''}, "
            f"{len(frames) - count} client, {at:.0f} ms (closed by {closed_by}, code {code})")
    await app.keep(sequence, Interaction(request, socket=session), line)
