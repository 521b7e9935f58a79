"""WebSocket mode: ``GET /v1/responses`` upgraded, as the Responses API and the openai SDK's
``client.responses.connect()`` speak it.

The client sends ``{"type": "response.create", ...request}`` messages; each is answered with the
same events a stream would carry, one JSON text frame each, with no ``[DONE]``. A request that
fails gets ``{"type": "error", "status", "error": {...}}`` and the connection stays open.
``store: false`` responses can be continued on the connection that made them, and only there;
a continuation that fails evicts its parent from that connection's cache. One response is in
flight at a time: the turn is sent by a task of its own while the connection keeps reading, so
a ``response.create`` meanwhile is refused (``response_already_in_flight``) and a client that
leaves stops the writer at once. A connection lasts ``Limits.socket_seconds``: then the
``websocket_connection_limit_reached`` error and close 1000 (a turn in flight finishes first).

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
client left part way); a turn's stored response is then ``cancelled``, as on HTTP (``settle``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, MutableMapping
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from ormock.cassette.matching import CassetteMiss
from ormock.engine.core import Engine
from ormock.engine.delivery import Delivery
from ormock.engine.journal import JournalEntry
from ormock.engine.namespaces import Namespaces
from ormock.engine.render import render_socket
from ormock.engine.replays import Replayed
from ormock.engine.store import StoreUnavailable
from ormock.engine.writer import Ahead, Tally
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Json
from ormock.protocol.wire import Ended, Frame, Wire, Written
from ormock.server.body import decode_json
from ormock.server.create import bug_error
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
        connection = _Connection(socket, engine, headers, scope["path"])
        await socket.accept()
        if replayed is not None:
            await replay_session(socket, engine, replayed, headers, scope["path"])
            return
        await connection.serve()


class _Ends:
    """What a turn's writer watches besides its wire: ``gone``, the client has left (stop
    there); ``over``, gone or the connection's time is up (ends a stall for good); and it
    sets ``stalled`` when it has stopped answering (what the client sends then goes unheard)."""

    __slots__ = ("gone", "over", "stalled")

    def __init__(self) -> None:
        self.gone = asyncio.Event()
        self.over = asyncio.Event()
        self.stalled = False

    def leave(self) -> None:
        self.gone.set()
        self.over.set()


class _Connection:
    """One live connection: a receive loop that reads every message while at most one turn
    is being sent (a task of its own), refuses a ``response.create`` that comes meanwhile
    (``response_already_in_flight``), and closes the connection when ``Limits.socket_seconds``
    have passed since it opened: a turn in flight then finishes first (a stall for good ends
    there), then the ``websocket_connection_limit_reached`` error, then close 1000. When the
    loop ends (the client left, a fault closed the connection, the limit) the turn is told to
    stop and awaited: no task outlives the connection."""

    def __init__(self, socket: WebSocket, engine: Engine, headers: dict[str, str],
                 path: str) -> None:
        self.socket, self.engine, self.headers, self.path = socket, engine, headers, path
        self.local = engine.continuation_cache()
        self.ends = _Ends()
        self.turn: asyncio.Task[bool] | None = None

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.engine.limits.socket_seconds
        expired = False
        receiving: asyncio.Future[Any] | None = None
        try:
            while True:
                if receiving is None:
                    receiving = asyncio.ensure_future(self.socket.receive())
                waiting: set[asyncio.Future[Any]] = {receiving}
                if self.turn is not None:
                    waiting.add(self.turn)
                done, _ = await asyncio.wait(
                    waiting, timeout=None if expired else max(0.0, deadline - loop.time()),
                    return_when=asyncio.FIRST_COMPLETED)
                if self.turn is not None and self.turn in done:
                    open_, self.turn = self.turn.result(), None
                    if not open_:
                        return
                    if expired:
                        await self._limit_reached()
                        return
                if receiving in done:
                    message, receiving = receiving.result(), None
                    if message["type"] == "websocket.disconnect":
                        return
                    if not await self._message(message):
                        return
                if not expired and loop.time() >= deadline:  # the connection's time is up
                    expired = True
                    if self.turn is None:
                        await self._limit_reached()
                        return
                    self.ends.over.set()  # the turn finishes first; a stall for good ends now
        except WebSocketDisconnect:
            return
        finally:
            self.ends.leave()
            if receiving is not None:
                receiving.cancel()
                await asyncio.gather(receiving, return_exceptions=True)
            if self.turn is not None:
                await _stopped(self.turn)

    async def _limit_reached(self) -> None:
        seconds = self.engine.limits.socket_seconds
        lasted = (f"{seconds / 60:g} minutes" if seconds >= 60 and not seconds % 60
                  else f"{seconds:g} seconds")
        await self._say(_error_event(400, OpenResponsesError(
            f"Responses websocket connection limit reached ({lasted}). Create a new websocket "
            "connection to continue.", code="websocket_connection_limit_reached",
        ).envelope()["error"]))
        await self.socket.close(code=1000, reason="websocket_connection_limit_reached")

    async def _message(self, message: Any) -> bool:
        """Answer one client message; False when the connection was closed."""
        text = message.get("text")
        if text is None:  # a binary frame: not a message of this protocol
            self.ends.leave()  # a turn in flight stops at its next frame
            if self.socket.application_state == WebSocketState.CONNECTED:
                await self.socket.close(code=1003, reason="send response.create as a text frame")
            return False
        if self.turn is not None and self.ends.stalled:
            return True  # the server has stopped answering: what the client sends goes unheard
        try:
            await self._create(text)
        except WebSocketDisconnect:
            raise
        except Exception as exc:  # a bug: an error event (and reported), not a dropped socket
            await self._say(self._bug(exc))
        return True

    async def _say(self, text: str) -> None:
        """A frame from the receive loop (an error event), unless the turn's writer has closed
        the connection meanwhile (a ``disconnect`` fault): then the connection is over."""
        if self.socket.application_state != WebSocketState.CONNECTED:
            raise WebSocketDisconnect(1006)
        await self.socket.send_text(text)

    def _bug(self, exc: Exception) -> str:
        if isinstance(exc, StoreUnavailable):  # no bug: the store's 503
            return _error_event(503, bug_error(exc).envelope()["error"])
        self.engine.failed_inside(exc)
        return _error_event(500, OpenResponsesError(
            f"ormock failed on this message ({type(exc).__name__}); this is a bug in ormock, "
            "please report it with the message.", type="server_error",
            code="internal_error").envelope()["error"])

    async def _create(self, text: str) -> None:
        """A ``response.create``: answered, and its turn started; anything else an error."""
        try:
            message = decode_json(text, param="message", what="message")
        except OpenResponsesError as error:
            await self._say(_error_event(400, error.envelope()["error"]))
            return
        if not isinstance(message, dict) or message.get("type") != "response.create":
            kind = message.get("type") if isinstance(message, dict) else None
            await self._say(_error_event(400, OpenResponsesError(
                f"Unsupported client event {kind!r}: this server accepts response.create.",
                code="unsupported_event", param="type").envelope()["error"]))
            return
        if self.turn is not None:
            await self._say(_error_event(400, OpenResponsesError(
                "A response is already in flight on this connection: wait for its terminal "
                "event before sending the next response.create, or open another connection.",
                code="response_already_in_flight").envelope()["error"]))
            return
        body = {k: v for k, v in message.items() if k != "type"}
        if body.get("background") is True:  # as OpenAI's WebSocket mode (docs/stateful.md)
            await self._say(_error_event(400, OpenResponsesError(
                "background is not supported over WebSocket: send the request with "
                "background: true as POST /v1/responses, or leave it out here.",
                code="unsupported_parameter", param="background").envelope()["error"]))
            return
        body["stream"] = True
        previous = body.get("previous_response_id")
        try:
            reply, entry = self.engine.answer(body, self.headers, self.path, local=self.local,
                                              size=len(text), transport="socket")
        except OpenResponsesError as error:
            if isinstance(previous, str):
                self.local.pop(previous, None)
            await self._say(_error_event(error.status, error.envelope()["error"]))
            return
        self.ends.stalled = False
        self.turn = asyncio.create_task(self._send(reply, entry, previous))

    async def _send(self, reply: Reply | RawReply, entry: JournalEntry,
                    previous: object) -> bool:
        """The turn's task: its wire written, the journal told, and the response settled as
        on HTTP (``settle``: a client that left before the terminal event leaves it
        ``cancelled``); True while the connection is open."""
        try:
            delivery = Delivery(self.engine, entry)
            delivery.begin()
            written: Written | None = None
            try:
                delivery.wire = wire = render_socket(reply)
                written, open_ = await send_turn(self.socket, wire, self.ends, delivery.told(),
                                                 delivery.ahead)
            finally:
                delivery.over(written)
            if isinstance(previous, str) and entry.response_status == "failed":
                self.local.pop(previous, None)
            return open_
        except Exception as exc:
            try:
                await self._say(self._bug(exc))
            except WebSocketDisconnect:
                return False
            return True


async def _stopped(turn: asyncio.Task[bool]) -> None:
    """Wait for a turn told to stop (``_Ends.leave``): it notices at its next frame or wait;
    one stuck in a send is cancelled after a second."""
    await asyncio.wait({turn}, timeout=1.0)
    if not turn.done():
        turn.cancel()
    await asyncio.gather(turn, return_exceptions=True)


async def _left_during(gone: asyncio.Event, seconds: float) -> bool:
    """Wait ``seconds``, or less if the client leaves meanwhile (then True)."""
    try:
        await asyncio.wait_for(gone.wait(), seconds)
    except TimeoutError:
        return False
    return True


async def send_turn(socket: WebSocket, wire: Wire, ends: _Ends | None = None,
                    told: Callable[[Frame], None] | None = None,
                    ahead: Ahead | None = None) -> tuple[Written, bool]:
    """Write a turn's wire (``render_socket``): each frame a text frame after its delay;
    ``close``/``reset`` close the connection with 1011; ``stall`` sends nothing for its time,
    or (``inf``) until the client leaves or the connection's time is up; ``end`` ends the turn
    there. Returns what was sent, and whether the connection is still open. ``ends`` is what
    the connection's receive loop tells the writer (without it, an endless stall reads the
    socket itself until the client leaves). ``told``: called with each frame once sent (the
    inspector's live feed, only while a page watches: ``Feed.told``). ``ahead``: as
    ``send_wire``'s, told before the turn's last frame, or its close or end."""
    tally = Tally()
    last = len(wire.frames) - 1

    def ends_as(ended: Ended) -> Written:
        written = tally.written("socket", ended)
        if ahead is not None:
            ahead(written)
        return written

    try:
        for index, frame in enumerate(wire.frames):
            if ends is not None and ends.gone.is_set():
                return tally.written("socket", "client gone"), False
            if frame.action == "stall" and math.isinf(frame.delay):
                if ends is not None:
                    ends.stalled = True
                    await ends.over.wait()
                    return tally.written("socket", "stalled"), not ends.gone.is_set()
                while (await socket.receive())["type"] != "websocket.disconnect":
                    pass  # the server has stopped answering: what the client sends goes unheard
                return tally.written("socket", "stalled"), False
            if frame.delay:
                if ends is None:
                    await asyncio.sleep(frame.delay)
                elif await _left_during(ends.gone, frame.delay):
                    return tally.written("socket", "client gone"), False
                tally.wait += frame.delay
            if frame.action in ("close", "reset"):
                written = ends_as("closed" if frame.action == "close" else "reset")
                await socket.close(code=1011,
                                   reason=f"ormock: disconnect fault ({frame.action})")
                return written, False
            if frame.action == "end":
                break
            if frame.action is None:
                if index == last:  # the turn's last frame: whole once it is sent
                    tally.add(frame)
                    written = ends_as(wire.ending)
                    await socket.send_text(frame.data.decode())
                    if told is not None:
                        told(frame)
                    return written, True
                await socket.send_text(frame.data.decode())
                tally.add(frame)
                if told is not None:
                    told(frame)
    except WebSocketDisconnect:  # the client left part way
        return tally.written("socket", "client gone"), False
    return ends_as(wire.ending), True
