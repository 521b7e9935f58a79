"""WebSocket mode: ``GET /v1/responses`` upgraded, as the Responses API and the openai SDK's
``client.responses.connect()`` speak it.

The client sends ``{"type": "response.create", ...request}`` messages; each is answered with the
same events a stream would carry, one JSON text frame each, with no ``[DONE]``. A request that
fails gets ``{"type": "error", "status", "error": {...}}`` and the connection stays open.
``store: false`` responses can be continued on the connection that made them, and only there;
a continuation that fails evicts its parent from that connection's cache.

Faults apply as on a stream (``docs/faults.md``, the WebSocket column): the turn is the
``Wire`` ``render_socket`` makes of a socket reply, one text frame per event, so ``malformed
invalid_json`` is a text frame that is not JSON, ``disconnect`` closes the connection with 1011
where the stream is cut, ``stall`` stops sending, ``truncate`` ends the turn with no terminal
event. The SSE framing
faults (``crlf``, ``missing_blank_line``, ``type_mismatch``, ``multiline_data``, ``no_done``)
cannot exist here: a step's is refused with an ``error`` event (400 ``fault_not_on_websocket``),
a server-wide one is skipped and journaled in ``skipped``. A repeated content comes from the
stream cache as on HTTP. ``send_turn`` is the writer: it returns what went out and how the turn
ended, and the journal records that (``ended: client gone``, with the events sent, when the
client left part way).
"""

from __future__ import annotations

import asyncio
import math
import traceback
from collections.abc import MutableMapping
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from ormock.cassette.matching import CassetteMiss
from ormock.engine.core import Engine
from ormock.engine.journal import wrote
from ormock.engine.namespaces import Namespaces
from ormock.engine.render import render_socket
from ormock.engine.replays import Replayed
from ormock.engine.store.memory import ResponseStore
from ormock.engine.wire import Wire, Written
from ormock.engine.writer import Tally
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Json
from ormock.server.body import decode_json
from ormock.server.socket_replay import replay_session

__all__ = ["ResponsesSocket"]



def _recorded_session(engine: Engine, scope: MutableMapping[str, Any]) -> Replayed | None:
    """The next recorded WebSocket session, when the namespace replays cassettes that hold
    one (else the connection is served live)."""
    if not engine.replays:
        return None
    query = scope.get("query_string", b"").decode("latin-1")
    try:
        with engine.lock:
            return engine.replays.take("GET", "/v1/responses", query, None, engine.speed,
                                       socket=True)
    except CassetteMiss:
        return None


def _error_event(status: int, error: Json) -> str:
    return encode_json({"type": "error", "status": status, "error": error})


class ResponsesSocket:
    """The ASGI endpoint of ``[/<namespace>]/v1/responses`` for WebSocket connections."""

    def __init__(self, namespaces: Namespaces) -> None:
        self.namespaces = namespaces

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        socket = WebSocket(scope, receive, send)
        try:
            engine = self.namespaces.serve(scope.get("path_params", {}).get("namespace", ""))
        except OpenResponsesError:
            await socket.close(code=1008, reason="namespace closed")
            return
        headers = dict(socket.headers)
        replayed = _recorded_session(engine, scope)
        local = engine.continuation_cache()
        await socket.accept()
        if replayed is not None:
            await replay_session(socket, engine, replayed, headers, scope["path"])
            return
        try:
            while True:
                message = await socket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                text = message.get("text")
                if text is None:  # a binary frame: not a message of this protocol
                    await socket.close(code=1003, reason="send response.create as a text frame")
                    return
                if not await self._guarded_turn(socket, engine, headers, local, scope["path"],
                                                text):
                    return
        except WebSocketDisconnect:
            return

    async def _guarded_turn(self, socket: WebSocket, engine: Any, headers: dict[str, str],
                            local: ResponseStore, path: str, text: str) -> bool:
        """A turn; a bug inside it is an ``error`` event (and reported), not a dropped socket."""
        try:
            return await self._turn(socket, engine, headers, local, path, text)
        except WebSocketDisconnect:
            raise
        except Exception as exc:
            engine.errors.append("".join(traceback.format_exception(exc)).rstrip())
            await socket.send_text(_error_event(500, OpenResponsesError(
                f"ormock failed on this message ({type(exc).__name__}); this is a bug in "
                "ormock, please report it with the message.", type="server_error",
                code="internal_error").envelope()["error"]))
            return True

    async def _turn(self, socket: WebSocket, engine: Any, headers: dict[str, str],
                    local: ResponseStore, path: str, text: str) -> bool:
        """Answer one client message; False when the connection was closed."""
        try:
            message = decode_json(text, param="message", what="message")
        except OpenResponsesError as error:
            await socket.send_text(_error_event(400, error.envelope()["error"]))
            return True
        if not isinstance(message, dict) or message.get("type") != "response.create":
            kind = message.get("type") if isinstance(message, dict) else None
            await socket.send_text(_error_event(400, OpenResponsesError(
                f"Unsupported client event {kind!r}: this server accepts response.create.",
                code="unsupported_event", param="type").envelope()["error"]))
            return True
        body = {k: v for k, v in message.items() if k != "type"}
        body["stream"] = True
        previous = body.get("previous_response_id")
        try:
            reply, entry = engine.answer(body, headers, path, local=local, size=len(text),
                                         transport="socket")
        except OpenResponsesError as error:
            if isinstance(previous, str):
                local.pop(previous, None)
            await socket.send_text(_error_event(error.status, error.envelope()["error"]))
            return True
        try:
            written, open_ = await send_turn(socket, render_socket(reply))
            wrote(entry, written)
            if not open_:
                return False
        finally:
            entry.finished_at = engine.elapsed()
        if isinstance(previous, str) and entry.response_status == "failed":
            local.pop(previous, None)
        return True


async def send_turn(socket: WebSocket, wire: Wire) -> tuple[Written, bool]:
    """Write a turn's wire (``render_socket``): each frame a text frame after its delay;
    ``close``/``reset`` close the connection with 1011; ``stall`` sends nothing for its time,
    or (``inf``) until the client leaves; ``end`` ends the turn there. Returns what was sent,
    and whether the connection is still open."""
    tally = Tally()
    try:
        for frame in wire.frames:
            if frame.action == "stall" and math.isinf(frame.delay):
                while (await socket.receive())["type"] != "websocket.disconnect":
                    pass  # the server has stopped answering: what the client sends goes unheard
                return tally.written("socket", "stalled"), False
            if frame.delay:
                await asyncio.sleep(frame.delay)
                tally.wait += frame.delay
            if frame.action in ("close", "reset"):
                await socket.close(code=1011,
                                   reason=f"ormock: disconnect fault ({frame.action})")
                return tally.written("socket", "closed" if frame.action == "close"
                                     else "reset"), False
            if frame.action == "end":
                break
            if frame.action is None:
                await socket.send_text(frame.data.decode())
                tally.add(frame)
    except WebSocketDisconnect:  # the client left part way
        return tally.written("socket", "client gone"), False
    return tally.written("socket", wire.ending), True
