"""The wire writer: coalescing, pacing, and ending cleanly when the client goes away."""

from __future__ import annotations

import time

import httpx
import pytest

from ormock import OrmockServer
from ormock.engine.wire import Frame, Pacing, coalesced, frames_for


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
            assert server.namespaces.replies_in_flight == 1
        # the client is gone; the reply must end now, not after the ~20 s it was paced for
        deadline = time.monotonic() + 5
        while server.namespaces.replies_in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.namespaces.replies_in_flight == 0
