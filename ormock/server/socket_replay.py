"""Replaying a recorded WebSocket session: the client's messages are matched, in order, against
the recorded client frames, and each is answered with the server frames recorded after it, each
after its recorded pause (over the server's ``--speed``), as the same text.

A client message that differs from the recorded one gets an ``error`` event (400
``cassette_miss``, the differences by JSON path) and the session waits for the right one. When
the recording ends with the server closing, the connection is closed with the recorded code.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from ormock.cassette.framing import event_text
from ormock.cassette.matching import json_diff
from ormock.cassette.model import SocketFrame, SocketSession, sendable_close
from ormock.engine.journal import JournalEntry, summarize
from ormock.engine.replays import Replayed
from ormock.protocol.depth import loads
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.secrets import mask_headers
from ormock.protocol.sse import encode_json

__all__ = ["replay_session"]


def _text(frame: SocketFrame) -> str:
    return frame.text if frame.text is not None else event_text(frame.event)


def _parsed(text: str) -> Any:
    try:
        return loads(text)
    except ValueError:  # (too deep to read as well: ``depth.loads``)
        return text


async def replay_session(socket: WebSocket, engine: Any, replayed: Replayed,
                         headers: dict[str, str], path: str) -> None:
    session = replayed.interaction.socket
    assert session is not None
    pace = engine.replay_speed if engine.replay_speed is not None else engine.speed
    speed = 0.0 if not replayed.timed else pace
    frames = list(session.frames)
    position, last = 0, 0.0
    try:
        while position < len(frames):
            frame = frames[position]
            if frame.sender == "client":
                message = await socket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                text = message.get("text")
                if text is None:  # a binary frame: not a message of this protocol (as live)
                    await socket.close(code=1003, reason="send response.create as a text frame")
                    return
                sent, wanted = _parsed(text), _parsed(_text(frame))
                entry = JournalEntry("WS", path, mask_headers(headers), sent,
                                     at=engine.elapsed(), size=len(text))
                entry.cassette, entry.interaction = replayed.cassette.file, replayed.index + 1
                engine.journal.append(entry)
                if sent != wanted:
                    error = _mismatch(replayed, position, wanted, sent)
                    entry.status, entry.error = 400, error.envelope()["error"]
                    engine.journal.recount(entry)  # its error counted too
                    await socket.send_text(encode_json(
                        {"type": "error", "status": 400, "error": entry.error}))
                    continue
                position, last = position + 1, frame.at
                position, last = await _answer(socket, frames, position, last, speed, entry)
                entry.status = 200
                engine.journal.recount(entry)  # what it was sent counted too
                engine.finished(entry)
            else:  # the server spoke first
                position, last = await _answer(socket, frames, position, last, speed, None)
        await _close(socket, session, last, speed)
    except WebSocketDisconnect:
        return


async def _answer(socket: WebSocket, frames: list[SocketFrame], position: int, last: float,
                  speed: float, entry: JournalEntry | None) -> tuple[int, float]:
    """Send the server frames from ``position`` up to the next client frame."""
    events: list[Any] = []
    sent_bytes = 0
    while position < len(frames) and frames[position].sender == "server":
        frame = frames[position]
        if speed > 0 and frame.at > last:
            await asyncio.sleep((frame.at - last) / 1000 / speed)
        text = _text(frame)
        await socket.send_text(text)
        sent_bytes += len(text.encode())
        if frame.event is not None:
            events.append(frame.event)
        position, last = position + 1, frame.at
    if entry is not None:
        entry.stream, entry.sent, entry.sent_bytes = True, summarize(events, None), sent_bytes
        done = [e for e in events if isinstance(e.get("response"), dict)]
        if done:
            entry.response_id = done[-1]["response"].get("id")
            entry.response_status = done[-1]["response"].get("status")
    return position, last


async def _close(socket: WebSocket, session: SocketSession, last: float, speed: float) -> None:
    if session.closed_by == "server":
        if speed > 0 and session.close_at > last:
            await asyncio.sleep((session.close_at - last) / 1000 / speed)
        # a code no close frame carries (1006: the upstream dropped the connection) reached
        # the client as the recorder's 1011
        code = session.close_code
        await socket.close(code=1000 if code is None else sendable_close(code, 1011))
        return
    while (await socket.receive())["type"] != "websocket.disconnect":
        pass  # the recording has nothing more to say; the client closes


def _mismatch(replayed: Replayed, position: int, wanted: Any, sent: Any) -> OpenResponsesError:
    differences = json_diff(wanted, sent)
    where = f"interaction {replayed.index + 1}"
    if replayed.interaction.line is not None:
        where += f" (line {replayed.interaction.line})"
    return OpenResponsesError(
        f"this message is not the one recorded next in the WebSocket session of {where} of "
        f"{replayed.cassette.file or 'the cassette'} (frame {position + 1}): "
        + "; ".join(differences) + ". Send the recorded message, or record the session again.",
        code="cassette_miss", param=differences[0].split(":", 1)[0] if differences else "body")
