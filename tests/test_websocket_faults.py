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

# what the server writes: run again without the cork of ormock.server.http_protocol
# (ORMOCK_HTTP_CORK=0) by `make test`
pytestmark = pytest.mark.wire

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
                    event = json.loads(text)
                except ValueError:
                    continue
                kind = event.get("type")
                if kind in ("response.completed", "response.failed", "response.incomplete") or (
                        kind == "error" and "sequence_number" not in event):
                    return out, None
        except TimeoutError:  # a turn that ends with no terminal event
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


def _types(events: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    return [(e.get("type"), e.get("sequence_number")) for e in events]


def _journaled(entry: Any) -> list[tuple[Any, Any]]:
    return [(e["type"], e["sequence_number"]) for e in entry.events]


@pytest.mark.parametrize(("spec", "ended", "closed"), [
    ({"disconnect": {"mode": "close", "after_events": 3}}, "closed", 1011),
    ({"disconnect": {"mode": "reset", "after_events": 3}}, "reset", 1011),
    ({"disconnect": {"after_bytes": 900}}, "closed", 1011),
    ({"stall": {"seconds": 0.05, "after_events": 2}}, "whole", None),
    ({"slow": {"first_event": 0.01, "tokens_per_second": 2000}}, "whole", None),
    ({"vendor_event": {"type": "acme:trace", "every": 3}}, "whole", None),
    ({"vendor_item": {}}, "whole", None),
    ({"sequence": {"kind": "gap", "at": 3}}, "whole", None),
    ({"sequence": {"kind": "duplicate", "at": 3}}, "whole", None),
    ({"fail_midstream": {"after_events": 4}}, "whole", None),
    ({"incomplete": {"reason": "content_filter", "deltas": 2}}, "whole", None),
    ({"truncate": {"after_events": 3}}, "truncated", None),
    ({"malformed": "invalid_json"}, "whole", None),
])
def test_each_fault_applies_on_a_websocket(fake: tuple[Engine, str], spec: dict[str, Any],
                                           ended: str, closed: int | None) -> None:
    engine, url = fake
    engine.inject(spec)
    frames, code = _frames(url, _create(), timeout=0.5 if ended == "truncated" else 10)
    entry = engine.journal[-1]
    assert entry.faults == [next(iter(spec))]
    assert code == closed
    assert entry.ended == ended
    assert _journaled(entry) == _types(_parsed(frames))


def test_truncate_on_a_websocket_ends_the_turn_without_a_terminal_event(
        fake: tuple[Engine, str]) -> None:
    engine, url = fake
    engine.inject({"truncate": {"after_events": 3}})
    with connect(url) as socket:
        socket.send(_create())
        got = [json.loads(socket.recv(timeout=10))["type"] for _ in range(3)]
        with pytest.raises(TimeoutError):
            socket.recv(timeout=0.3)
        socket.send(_create(input="again"))  # the connection is still there
        assert json.loads(socket.recv(timeout=10))["type"] == "response.created"
    assert "response.completed" not in got and engine.journal[0].ended == "truncated"


def test_a_stall_for_good_holds_the_websocket_until_the_client_leaves(
        fake: tuple[Engine, str]) -> None:
    engine, url = fake
    engine.inject({"stall": {"after_events": 2}})
    with connect(url) as socket:
        socket.send(_create())
        assert [json.loads(socket.recv(timeout=10))["type"] for _ in range(2)]
        with pytest.raises(TimeoutError):
            socket.recv(timeout=0.3)
    entry = engine.journal[-1]
    assert entry.ended == "stalled" and len(entry.events) == 2


@pytest.mark.parametrize("spec", [{"no_done": {}}, {"malformed": "crlf"},
                                  {"malformed": "missing_blank_line"},
                                  {"malformed": "type_mismatch"},
                                  {"malformed": "multiline_data"}])
def test_a_steps_sse_only_fault_is_refused_on_a_websocket(fake: tuple[Engine, str],
                                                         spec: dict[str, Any]) -> None:
    engine, url = fake
    engine.use({"name": "framing", "steps": [{"times": "forever", "reply": {
        "items": [{"message": "hello"}], "faults": [spec]}}]})
    frames, code = _frames(url, _create())
    assert code is None and len(frames) == 1
    error = json.loads(frames[0])
    assert error["type"] == "error" and error["status"] == 400
    assert error["error"]["code"] == "fault_not_on_websocket"
    assert "WebSocket" in error["error"]["message"] and "disconnect" in error["error"]["message"]
    assert engine.journal[-1].status == 400


@pytest.mark.parametrize("spec", [{"no_done": {}}, {"malformed": "crlf"}])
def test_a_server_wide_sse_only_fault_is_skipped_on_a_websocket(fake: tuple[Engine, str],
                                                               spec: dict[str, Any]) -> None:
    engine, url = fake
    engine.inject(spec)
    frames, code = _frames(url, _create())
    entry = engine.journal[-1]
    assert code is None and json.loads(frames[-1])["type"] == "response.completed"
    assert entry.faults == [] and entry.skipped == [next(iter(spec))]
    assert entry.to_dict()["skipped"] == [next(iter(spec))]


def _drain(connection: Any, seen: list[str]) -> None:
    for event in connection:
        seen.append(event.type)
        if event.type == "response.completed":
            return


def test_faults_reach_the_openai_sdk_on_a_websocket(fake: tuple[Engine, str]) -> None:
    import openai

    engine, url = fake
    # the bad frame just before the terminal event: a client that stops reading with many
    # frames still queued takes its close timeout (10 s) to leave, whatever the server does
    engine.inject({"malformed": {"kind": "invalid_json", "at": 99}, "when": {"nth": 1}})
    engine.inject({"disconnect": {"after_events": 3}, "when": {"nth": 2}})
    engine.inject({"vendor_event": {"type": "acme:trace", "every": 2}, "when": {"nth": 3}})
    seen: list[list[str]] = [[], [], []]
    with openai.OpenAI(base_url=url.replace("ws", "http", 1)[: -len("/responses")],
                       api_key="sk-test", max_retries=0) as client:
        with client.responses.connect() as connection:
            connection.response.create(model="m", input="one")
            with pytest.raises(json.JSONDecodeError):  # the SDK parses every text frame
                _drain(connection, seen[0])
        with client.responses.connect() as connection:
            connection.response.create(model="m", input="two")
            with pytest.raises(ConnectionClosed) as closed:
                _drain(connection, seen[1])
        with client.responses.connect() as connection:
            connection.response.create(model="m", input="three")
            _drain(connection, seen[2])
    assert seen[0] and "response.completed" not in seen[0] and len(seen[1]) == 3
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1011
    assert "acme:trace" in seen[2] and seen[2][-1] == "response.completed"


def test_a_repeated_websocket_turn_comes_from_the_stream_cache_byte_for_byte(
        issued_templates: list[Any]) -> None:
    """The third turn of a content is issued from the cache (its second was kept): the same
    frames a fresh build gives (a namespace whose cache is emptied between the turns), under
    fresh ids."""
    issued = issued_templates
    got = []
    with OrmockServer(seed=0) as server:  # no self-check: the cache is used
        for fresh in (False, True):
            name = f"wsc{next(_names)}"
            server.namespaces.open(name)
            engine = server.namespaces.serve(name)
            url = server.url.replace("http", "ws", 1) + f"/{name}/v1/responses"
            turns = []
            for _ in range(3):
                turns.append(_frames(url, _create())[0])
                if fresh:
                    engine.cache.clear()
            assert len(engine.journal) == 3
            assert _journaled(engine.journal[2]) == _types(_parsed(turns[2]))
            assert engine.journal[2].response_id == json.loads(turns[2][-1])["response"]["id"]
            got.append(turns)
            assert len(issued) == 1  # the first namespace's third turn only
    assert got[0] == got[1]
    assert got[0][0] != got[0][1] != got[0][2]  # fresh ids
    assert [json.loads(t)["type"] for t in got[0][0]] == [json.loads(t)["type"]
                                                          for t in got[0][2]]


def test_chaos_that_draws_an_sse_only_fault_for_a_websocket_turn_skips_it(
        fake: tuple[Engine, str]) -> None:
    from ormock.faults import NoDone
    from ormock.faults.chaos import Chaos

    engine, url = fake
    engine.chaos = Chaos(rate=1.0, faults=(NoDone(),))
    frames, code = _frames(url, _create())
    entry = engine.journal[-1]
    assert code is None and json.loads(frames[-1])["type"] == "response.completed"
    assert entry.status == 200 and entry.faults == [] and entry.skipped == ["no_done"]


def test_an_sse_only_fault_is_judged_on_a_websocket_only_when_its_trigger_fires(
    fake: tuple[Engine, str]
) -> None:
    engine, url = fake
    engine.inject({"no_done": {}, "when": {"nth": 2}})
    engine.use({"name": "later", "steps": [{"times": "forever", "reply": {
        "items": [{"message": "hello"}], "faults": [{"malformed": "crlf", "when": {"nth": 3}}]}}]})
    outcomes = []
    for _ in range(3):
        frames, _code = _frames(url, _create())
        outcomes.append(json.loads(frames[-1])["type"])
    # turn 1: neither fires; turn 2: the server-wide one fires and is skipped; turn 3: the
    # step's own fires and refuses the turn
    assert outcomes == ["response.completed", "response.completed", "error"]
    assert [e.skipped for e in engine.journal] == [[], ["no_done"], []]
    assert [e.status for e in engine.journal] == [200, 200, 400]
