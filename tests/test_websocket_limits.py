"""WebSocket mode's connection rules: one response in flight per connection (a second
``response.create`` is refused and the connection stays open), the connection-local
``store: false`` cache and its eviction, and the connection time limit
(``Limits.socket_seconds``: the ``websocket_connection_limit_reached`` error, then close 1000).
With the openai SDK's ``client.responses.connect()`` and a raw WebSocket client."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from ormock import Limits, OrmockServer
from ormock.engine.core import Engine
from ormock.engine.journal import JournalEntry

_names = itertools.count()


def _namespace(server: OrmockServer) -> tuple[Engine, str]:
    """A fresh namespace of ``server``: its engine and its base URL (``.../v1``)."""
    name = f"wsl{next(_names)}"
    server.namespaces.open(name)
    return server.namespaces.serve(name), f"{server.url}/{name}/v1"


def _ws(base: str) -> str:
    return base.replace("http", "ws", 1) + "/responses"


def _sdk(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base, api_key="sk-test", max_retries=0)


@pytest.fixture
def fake(server: OrmockServer) -> tuple[Engine, str]:
    return _namespace(server)


@pytest.fixture(scope="module")
def brief() -> Iterator[OrmockServer]:
    """A server whose WebSocket connections last 0.5 seconds."""
    with OrmockServer(seed=0, limits=Limits(socket_seconds=0.5)) as running:
        yield running


def _create(**extra: Any) -> str:
    return json.dumps({"type": "response.create", "model": "m", "input": "Tell me a story.",
                       **extra})


def _event(socket: ClientConnection) -> dict[str, Any]:
    text = socket.recv(timeout=10)
    assert isinstance(text, str)
    event: dict[str, Any] = json.loads(text)
    return event


def _until_terminal(socket: ClientConnection) -> list[dict[str, Any]]:
    events = []
    while True:
        events.append(_event(socket))
        if events[-1]["type"] in ("response.completed", "response.failed",
                                  "response.incomplete"):
            return events


def _close_code(socket: ClientConnection) -> int | None:
    """Read on until the server closes the connection: its close code."""
    extra = []
    try:
        while True:
            extra.append(socket.recv(timeout=10))
    except ConnectionClosed as closed:
        assert extra == []  # nothing after the error event
        return closed.rcvd.code if closed.rcvd is not None else None


def _written(engine: Engine, index: int = -1) -> JournalEntry:
    """The journal entry once its writer has reported (the server's side of a connection
    the client has just closed may still be finishing)."""
    for _ in range(200):
        entry = engine.journal[index]
        if entry.finished_at is not None:
            return entry
        time.sleep(0.05)
    raise AssertionError("the turn's writer never reported")


# the first turn waits after two events: what the client sends then arrives while it is in flight
_SLOW = {"stall": {"seconds": 2, "after_events": 2}, "when": {"first": 1}}


# -- one response in flight --------------------------------------------------------------------


def test_a_create_while_a_turn_is_in_flight_is_refused_and_the_connection_stays_open(
        fake: tuple[Engine, str]) -> None:
    engine, base = fake
    engine.inject(_SLOW)
    with _sdk(base) as client, client.responses.connect() as connection:
        connection.response.create(model="m", input="Tell me a story.")
        assert [connection.recv().type for _ in range(2)] == ["response.created",
                                                             "response.in_progress"]
        connection.response.create(model="m", input="And another.")  # during the stall
        rest = []
        for event in connection:  # the refusal, and the first turn going on to its end
            rest.append(event)
            if event.type == "response.completed":
                break
        refused = [e for e in rest if e.type == "error"]
        assert len(refused) == 1
        details: dict[str, Any] = refused[0].to_dict()
        assert details["status"] == 400
        assert details["error"]["code"] == "response_already_in_flight"
        assert rest[-1].type == "response.completed" and len(rest) > 2
        connection.response.create(model="m", input="Now the next one.")
        nxt = []
        for event in connection:
            nxt.append(event)
            if event.type in ("response.completed", "error"):
                break
    assert nxt[-1].type == "response.completed"
    assert nxt[-1].response.id != rest[-1].response.id
    # the refused create was never answered: two requests in the journal
    assert len(engine.journal) == 2


def test_other_messages_during_a_turn_still_get_their_error(fake: tuple[Engine, str]) -> None:
    engine, base = fake
    engine.inject(_SLOW)
    with connect(_ws(base)) as socket:
        socket.send(_create())
        assert [_event(socket)["type"] for _ in range(2)] == ["response.created",
                                                             "response.in_progress"]
        socket.send(json.dumps({"type": "session.update"}))
        socket.send("not json")
        codes = [_event(socket)["error"]["code"] for _ in range(2)]
        assert codes == ["unsupported_event", "invalid_json"]
        assert _until_terminal(socket)[-1]["type"] == "response.completed"
    assert len(engine.journal) == 1


def test_a_client_that_leaves_during_a_wait_stops_the_writer(fake: tuple[Engine, str]) -> None:
    """The receive loop notices the client leaving while the turn waits, and the turn stops
    there: the journal says so, with the events that went out."""
    engine, base = fake
    engine.inject({"stall": {"seconds": 30, "after_events": 2}})
    with connect(_ws(base)) as socket:
        socket.send(_create())
        sent = [_event(socket)["type"] for _ in range(2)]
    entry = _written(engine)
    assert entry.ended == "client gone"
    assert [e["type"] for e in entry.events] == sent


def test_a_stall_for_good_still_leaves_what_the_client_sends_unheard(
        fake: tuple[Engine, str]) -> None:
    engine, base = fake
    engine.inject({"stall": {"after_events": 2}})
    with connect(_ws(base)) as socket:
        socket.send(_create())
        assert len([_event(socket) for _ in range(2)]) == 2
        socket.send(_create())  # no refusal: the server has stopped answering
        with pytest.raises(TimeoutError):
            socket.recv(timeout=0.3)
    entry = _written(engine)
    assert entry.ended == "stalled" and len(engine.journal) == 1


def test_a_binary_frame_during_a_turn_closes_with_1003_and_stops_the_writer(
        fake: tuple[Engine, str]) -> None:
    engine, base = fake
    engine.inject({"stall": {"seconds": 30, "after_events": 2}})
    with connect(_ws(base)) as socket:
        socket.send(_create())
        assert len([_event(socket) for _ in range(2)]) == 2
        socket.send(b"\x00binary")
        assert _close_code(socket) == 1003
    entry = _written(engine)
    assert entry.ended == "client gone" and len(entry.events) == 2
    assert list(engine.errors) == []  # no bug reported: the writer saw the connection end


# -- the connection-local cache ----------------------------------------------------------------


def test_a_continuation_that_ends_failed_evicts_its_store_false_parent(
        fake: tuple[Engine, str]) -> None:
    engine, base = fake
    with connect(_ws(base)) as socket:
        socket.send(_create(store=False))
        parent = _until_terminal(socket)[-1]["response"]["id"]
        engine.inject({"fail_midstream": {}, "when": {"first": 1}})
        socket.send(_create(store=False, previous_response_id=parent, input="go on"))
        assert _until_terminal(socket)[-1]["type"] == "response.failed"
        socket.send(_create(store=False, previous_response_id=parent, input="again"))
        error = _event(socket)
    assert error["type"] == "error"
    assert error["error"]["code"] == "previous_response_not_found"


def test_the_cache_keeps_socket_responses_at_most() -> None:
    with OrmockServer(seed=0, limits=Limits(socket_responses=1)) as small:
        engine, base = _namespace(small)
        with connect(_ws(base)) as socket:
            socket.send(_create(store=False, input="one"))
            first = _until_terminal(socket)[-1]["response"]["id"]
            socket.send(_create(store=False, input="two"))
            second = _until_terminal(socket)[-1]["response"]["id"]
            socket.send(_create(store=False, previous_response_id=first, input="?"))
            gone = _event(socket)
            socket.send(_create(store=False, previous_response_id=second, input="?"))
            kept = _until_terminal(socket)[-1]
    assert gone["type"] == "error" and gone["error"]["code"] == "previous_response_not_found"
    assert kept["type"] == "response.completed"
    assert len(engine.responses) == 0  # store: false: nothing reached the namespace's store


# -- the connection time limit -----------------------------------------------------------------


def _limit_error(event: dict[str, Any]) -> None:
    assert event["type"] == "error" and event["status"] == 400
    assert event["error"]["code"] == "websocket_connection_limit_reached"
    assert event["error"]["type"] == "invalid_request"
    assert "0.5 seconds" in event["error"]["message"]


def test_an_idle_connection_gets_the_limit_error_then_close_1000(brief: OrmockServer) -> None:
    _, base = _namespace(brief)
    with connect(_ws(base)) as socket:
        _limit_error(_event(socket))
        assert _close_code(socket) == 1000


def test_a_turn_in_flight_at_the_limit_finishes_first(brief: OrmockServer) -> None:
    engine, base = _namespace(brief)
    engine.inject({"stall": {"seconds": 1.0, "after_events": 2}})
    with connect(_ws(base)) as socket:
        socket.send(_create())
        events = _until_terminal(socket)
        _limit_error(_event(socket))
        assert _close_code(socket) == 1000
    assert events[-1]["type"] == "response.completed"
    assert _written(engine).ended == "whole"


def test_a_stall_for_good_ends_at_the_limit(brief: OrmockServer) -> None:
    engine, base = _namespace(brief)
    engine.inject({"stall": {"after_events": 2}})
    with connect(_ws(base)) as socket:
        socket.send(_create())
        assert len([_event(socket) for _ in range(2)]) == 2
        _limit_error(_event(socket))
        assert _close_code(socket) == 1000
    entry = _written(engine)
    assert entry.ended == "stalled" and len(entry.events) == 2


def test_the_sdk_sees_the_limit_error_and_the_connection_end(brief: OrmockServer) -> None:
    _, base = _namespace(brief)
    with _sdk(base) as client, client.responses.connect() as connection:
        connection.response.create(model="m", input="Count to three.")
        events = list(connection)  # to the end of the connection: close 1000 ends iteration
    types = [e.type for e in events]
    assert types[0] == "response.created" and "response.completed" in types
    assert types[-1] == "error"
    assert events[-1].to_dict()["error"]["code"] == "websocket_connection_limit_reached"


def test_the_limit_is_per_connection(brief: OrmockServer) -> None:
    """A new connection gets its own time: the error names the limit, the next connection
    answers again."""
    _, base = _namespace(brief)
    with connect(_ws(base)) as socket:
        _limit_error(_event(socket))
    with connect(_ws(base)) as socket:
        socket.send(_create())
        assert _until_terminal(socket)[-1]["type"] == "response.completed"


def test_the_default_limit_is_an_hour() -> None:
    assert Limits().socket_seconds == 3600


@pytest.mark.parametrize("value", [0, -1, float("inf"), float("nan"), True, "60", None])
def test_socket_seconds_is_a_time_above_0(value: Any) -> None:
    with pytest.raises(ValueError, match="limit socket_seconds must be a number of seconds "
                                         "above 0"):
        Limits(socket_seconds=value)


def test_serve_takes_socket_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    from ormock.cli import build_parser

    args = build_parser().parse_args(["serve", "--socket-seconds", "0.3"])
    assert args.socket_seconds == 0.3
    assert build_parser().parse_args(["serve"]).socket_seconds == 3600
    bad = build_parser().parse_args(["serve", "--socket-seconds", "0"])
    assert bad.func(bad) == 2
    assert "limit socket_seconds must be a number of seconds above 0" in capsys.readouterr().err


# -- no task outlives the connection (the endpoint driven in-process) --------------------------


def _drive(limits: Limits, fault: dict[str, Any] | None,
           leave_after: int | None) -> tuple[list[dict[str, Any]], set[Any]]:
    """Run ``ResponsesSocket`` on an in-process ASGI connection that sends one
    ``response.create`` and leaves after ``leave_after`` events (None: stays). Returns what the
    server sent and the tasks still alive when the endpoint returned."""
    import asyncio

    from ormock.engine.namespaces import Namespaces
    from ormock.server.websocket import ResponsesSocket

    namespaces = Namespaces(limits=limits)
    if fault is not None:
        namespaces.serve("").inject(fault)

    async def main() -> tuple[list[dict[str, Any]], set[Any]]:
        incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        incoming.put_nowait({"type": "websocket.connect"})
        incoming.put_nowait({"type": "websocket.receive", "text": _create()})
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "websocket.close":
                incoming.put_nowait({"type": "websocket.disconnect", "code": message["code"]})
            elif leave_after is not None and sum(
                    m["type"] == "websocket.send" for m in sent) == leave_after:
                incoming.put_nowait({"type": "websocket.disconnect", "code": 1001})

        scope = {"type": "websocket", "path": "/v1/responses", "path_params": {},
                 "headers": [], "query_string": b""}
        await asyncio.wait_for(ResponsesSocket(namespaces)(scope, incoming.get, send), 20)
        return sent, asyncio.all_tasks() - {asyncio.current_task()}

    return asyncio.run(main())


@pytest.mark.parametrize("fault", [{"stall": {"seconds": 30, "after_events": 2}},
                                   {"stall": {"after_events": 2}}], ids=["wait", "for-good"])
def test_a_client_that_leaves_mid_turn_leaves_no_task(fault: dict[str, Any]) -> None:
    sent, alive = _drive(Limits(), fault, leave_after=2)
    assert alive == set()
    assert [m["type"] for m in sent] == ["websocket.accept", "websocket.send", "websocket.send"]


def test_the_limit_in_a_stall_for_good_closes_and_leaves_no_task() -> None:
    sent, alive = _drive(Limits(socket_seconds=0.05), {"stall": {"after_events": 2}}, None)
    assert alive == set()
    texts = [json.loads(m["text"]) for m in sent if m["type"] == "websocket.send"]
    assert [e["type"] for e in texts] == ["response.created", "response.in_progress", "error"]
    assert texts[-1]["error"]["code"] == "websocket_connection_limit_reached"
    assert sent[-1] == {"type": "websocket.close", "code": 1000,
                        "reason": "websocket_connection_limit_reached"}


def test_a_client_that_never_stops_sending_still_meets_the_limit() -> None:
    """Messages always waiting to be read do not postpone the limit."""
    import asyncio

    from ormock.engine.namespaces import Namespaces
    from ormock.server.websocket import ResponsesSocket

    chatter = {"type": "websocket.receive", "text": json.dumps({"type": "session.update"})}

    async def main() -> tuple[list[dict[str, Any]], set[Any]]:
        incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        incoming.put_nowait({"type": "websocket.connect"})
        incoming.put_nowait(chatter)
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "websocket.close":
                incoming.put_nowait({"type": "websocket.disconnect", "code": message["code"]})
            elif message["type"] == "websocket.send":
                incoming.put_nowait(chatter)  # the next message is there before it is read

        scope = {"type": "websocket", "path": "/v1/responses", "path_params": {},
                 "headers": [], "query_string": b""}
        endpoint = ResponsesSocket(Namespaces(limits=Limits(socket_seconds=0.05)))
        await asyncio.wait_for(endpoint(scope, incoming.get, send), 20)
        return sent, asyncio.all_tasks() - {asyncio.current_task()}

    sent, alive = asyncio.run(main())
    assert alive == set()
    texts = [json.loads(m["text"]) for m in sent if m["type"] == "websocket.send"]
    assert {e["error"]["code"] for e in texts[:-1]} == {"unsupported_event"}
    assert texts[-1]["error"]["code"] == "websocket_connection_limit_reached"
    assert sent[-1]["type"] == "websocket.close" and sent[-1]["code"] == 1000
