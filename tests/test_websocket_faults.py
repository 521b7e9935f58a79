"""Faults on a WebSocket: each one that can exist there applies, and the journal says what went
out; the ones that belong to SSE framing are refused (a step's) or skipped (server-wide)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from ormock import OrmockServer
from ormock.engine.core import Engine

_names = itertools.count()


@pytest.fixture
def fake(server: OrmockServer) -> tuple[Engine, str]:
    """A fresh namespace: its engine and its WebSocket URL."""
    name = f"wsf{next(_names)}"
    server.namespaces.open(name)
    url = server.url.replace("http", "ws", 1) + f"/{name}/v1/responses"
    return server.namespaces.serve(name), url


def _create(**extra: Any) -> str:
    return json.dumps({"type": "response.create", "model": "m", "input": "Tell me a story.",
                       **extra})


def _frames(url: str, message: str, timeout: float = 10) -> tuple[list[str], int | None]:
    """Every text frame of one turn (up to a terminal event or an error), and the close code
    if the server closed the connection."""
    out: list[str] = []
    with connect(url) as socket:
        socket.send(message)
        try:
            while True:
                text = socket.recv(timeout=timeout)
                assert isinstance(text, str)
                out.append(text)
                try:
                    kind = json.loads(text).get("type")
                except ValueError:
                    continue
                if kind in ("response.completed", "response.failed", "response.incomplete",
                            "error"):
                    return out, None
        except ConnectionClosed as closed:
            return out, closed.rcvd.code if closed.rcvd is not None else None


def _parsed(frames: list[str]) -> list[dict[str, Any]]:
    out = []
    for text in frames:
        try:
            out.append(json.loads(text))
        except ValueError:
            continue
    return out


def test_malformed_on_a_websocket_sends_a_bad_json_frame(fake: tuple[Engine, str]) -> None:
    """The reproduction: the client got a clean stream while the journal said ``malformed``."""
    engine, url = fake
    engine.inject({"malformed": {"kind": "invalid_json", "at": 2}})
    frames, code = _frames(url, _create())
    assert code is None
    bad = [t for t in frames if not _is_json(t)]
    assert len(bad) == 1, frames
    assert frames.index(bad[0]) == 2
    entry = engine.journal[-1]
    assert entry.faults == ["malformed"]
    good = _parsed(frames)
    assert [e["type"] for e in entry.events] == [e["type"] for e in good]
    assert [e["sequence_number"] for e in entry.events] == [e["sequence_number"] for e in good]


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
