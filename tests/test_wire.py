"""The wire and its writers: coalescing, pacing, offsets, what a writer reports, and ending
cleanly when the client goes away."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from ormock import OrmockServer
from ormock.engine.core import Engine
from ormock.engine.entry_answer import wrote
from ormock.engine.namespaces import Namespaces
from ormock.engine.render import render_socket
from ormock.protocol.reply import Reply
from ormock.protocol.sse import DONE_FRAME, frame_event
from ormock.protocol.wire import Frame, Pacing, Wire, Written, coalesced, frames_for
from ormock.server.app import create_app
from ormock.server.websocket import send_turn


def test_unpaced_frames_coalesce_into_one_write() -> None:
    frames = frames_for([{"type": "a", "sequence_number": 0}, {"type": "b", "sequence_number": 1}])
    merged = coalesced(frames)
    assert len(merged) == 1
    assert merged[0].data == b"".join(f.data for f in frames)


def test_paced_frames_keep_each_event_whole_and_waits_apart() -> None:
    frames = [Frame(b"1", 0.0), Frame(b"2", 0.1), Frame(b"3", 0.0), Frame(action="stall", delay=1)]
    assert coalesced(frames) == [Frame(b"1"), Frame(b"23", 0.1), Frame(action="stall", delay=1)]


def test_pacing_delays_are_seeded_and_scaled() -> None:
    events = [{"type": "response.created"}, {"type": "response.output_text.delta", "delta": "a b"}]
    pacing = Pacing(first_event=0.5, tokens_per_second=10, jitter=0.5)
    assert pacing.delays(events, 1) == pacing.delays(events, 1)
    assert pacing.delays(events, 1) != pacing.delays(events, 2)
    fast = Pacing(first_event=0.5, tokens_per_second=10, jitter=0.5, speed=10)
    assert fast.delays(events, 1) == pytest.approx([d / 10 for d in pacing.delays(events, 1)])
    assert not Pacing(first_event=1, speed=0).paced


@pytest.mark.parametrize("bad", [{"first_event": -1}, {"jitter": 2}, {"tokens_per_second": 0}])
def test_bad_pacing_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="pacing"):
        Pacing(**bad)


def test_a_client_that_leaves_ends_the_paced_reply() -> None:
    with OrmockServer(scenarios=["long-text"]) as server:
        with httpx.Client(timeout=10) as raw, raw.stream(
            "POST", server.base_url + "/responses",
            json={"model": "m", "input": "go", "stream": True},
        ) as response:
            assert "content-length" not in response.headers  # paced: written as it goes
            lines = response.iter_lines()
            assert next(lines) == "event: response.created"
            assert server.namespaces.in_flight.count == 1
        # the client is gone; the reply must end now, not after the ~20 s it was paced for
        deadline = time.monotonic() + 5
        while server.namespaces.in_flight.count and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.namespaces.in_flight.count == 0


def test_a_wire_from_offsets_keeps_them_and_knows_how_it_ends() -> None:
    created = {"type": "response.created", "sequence_number": 0}
    done = {"type": "response.completed", "sequence_number": 1}
    wire = Wire.from_offsets("sse", 200, {"Content-Type": "text/event-stream"},
                             [(0.0, frame_event(created), None), (0.25, frame_event(done), None),
                              (0.25, DONE_FRAME, ())])
    assert wire.offsets() == (0.0, 0.25, 0.25)
    assert [f.delay for f in wire.frames] == [0.0, 0.25, 0.0]
    assert wire.headers == ((b"content-type", b"text/event-stream"),)
    assert wire.ending == "whole" and wire.body.endswith(DONE_FRAME)
    assert wire.frames[0].carried("sse") == (created,)  # parsed from its bytes when asked
    cut = Wire.from_offsets("sse", 200, {}, [(0.1, frame_event(created), (created,))])
    assert cut.ending == "truncated" and cut.offsets() == (0.1,)
    with pytest.raises(ValueError, match="go back"):
        Wire.from_offsets("socket", 200, {}, [(0.5, b"{}", ()), (0.2, b"{}", ())])


def test_what_was_written_says_each_events_wait() -> None:
    one, two, three = ({"type": t} for t in ("a", "b", "c"))
    written = Written("sse", "client gone", 6, ((0.5, Frame(b"ab", events=(one, two))),
                                                (0.0, Frame(b"--")),
                                                (0.25, Frame(b"cc", events=(three,)))))
    assert written.events == (one, two, three) and not written.complete
    assert written.delays() == [0.5, 0.0, 0.25]
    assert Written("sse", "whole", 2, ((0.0, Frame(b"ab", events=(one,))),)).delays() is None


def test_a_reset_that_falls_back_to_a_clean_end_is_journaled_as_truncated() -> None:
    """Under another server than ormock's HTTP protocol (here Starlette's test client) no
    connection is noted and a drop cannot happen: the writer ends the body cleanly where it was
    to drop, and the journal says what it did, not what was planned."""
    namespaces = Namespaces()
    with TestClient(create_app(namespaces), base_url="http://127.0.0.1") as http:
        answer = http.post("/v1/responses", json={"model": "ormock:disconnect", "input": "hi",
                                                   "stream": True})
    (entry,) = namespaces.serve("").journal
    assert answer.status_code == 200 and entry.faults == ["disconnect"]
    assert entry.ended == "truncated"  # planned: reset
    assert entry.sent_bytes == len(answer.content)
    assert len(entry.events) == 5


class _LeavingSocket:
    """A WebSocket whose client leaves after ``frames`` text frames."""

    def __init__(self, frames: int) -> None:
        self.left, self.texts = frames, []

    async def send_text(self, text: str) -> None:
        if not self.left:
            raise WebSocketDisconnect(1001)
        self.left -= 1
        self.texts.append(text)


def test_a_cached_websocket_turn_whose_client_leaves_journals_the_events_it_sent() -> None:
    engine = Engine(seed=0)
    body = {"model": "m", "input": "hi", "stream": True}
    for _ in range(2):  # the second kept
        engine.answer(body, {}, transport="socket")
    reply, entry = engine.answer(body, {}, transport="socket")
    assert isinstance(reply, Reply) and reply.body is not None and not reply.events  # cached
    socket = _LeavingSocket(3)
    written, open_ = asyncio.run(send_turn(socket, render_socket(reply)))  # type: ignore[arg-type]
    wrote(entry, written)
    assert not open_ and entry.ended == "client gone"
    sent = [json.loads(text) for text in socket.texts]
    assert [(e["type"], e["sequence_number"]) for e in entry.events] == [
        (e["type"], e["sequence_number"]) for e in sent]
    assert entry.sent_bytes == sum(len(text.encode()) for text in socket.texts)
    assert entry.output_ids == [e["item"]["id"] for e in sent if "item" in e]


def test_the_renderers_frames_and_wires_are_the_dataclasses_own() -> None:
    """``render``'s frames and wires, made without the frozen dataclasses' ``__init__``, hold
    the fields and values ``Frame(...)`` and ``Wire(...)`` give."""
    from ormock.engine.render import render_json, render_sse

    event = {"type": "response.completed", "response": {"status": "completed"}}
    cases = [
        (render_json(Reply(events=[], stream=False, body=b"{}")),
         Wire("json", (Frame(b"{}", 0, events=None),), 200,
              ((b"content-type", b"application/json"),))),
        (render_json(Reply(events=[event], stream=False, body=b"{}")),
         Wire("json", (Frame(b"{}", 0.0, events=(event,)),), 200,
              ((b"content-type", b"application/json"),))),
        (render_sse(Reply(events=[], stream=True, body=b"data: x\n\n", headers={"A": "b"})),
         Wire("sse", (Frame(b"data: x\n\n", 0.0, events=None),), 200,
              (*render_sse(Reply(events=[], stream=True, body=b"")).headers, (b"a", b"b")))),
    ]
    for made_wire, slow_wire in cases:
        assert made_wire == slow_wire and vars(made_wire) == vars(slow_wire)
        for made_frame, slow_frame in zip(made_wire.frames, slow_wire.frames, strict=True):
            assert vars(made_frame) == vars(slow_frame)
            assert type(made_frame.delay) is type(slow_frame.delay)
