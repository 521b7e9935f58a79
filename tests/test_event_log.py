"""``ormock.engine.event_log``: the entry numbers that make a resume a range read (exact under
faulted numbering too), and the reap of a run whose server died (exactly once)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from ormock.engine.event_log import (
    LEASE,
    LOG_END,
    alive,
    append,
    beat,
    decode,
    entry_numbers,
    reap,
    start_of,
)
from ormock.engine.store import MemoryBackend, ResponseStore, SqliteBackend, Stored
from ormock.server.resume import settled

NUMBERINGS = {
    "well numbered": [[0, 1], [2], [3], [4, 5, 6], [7]],
    "a gap": [[0, 1], [2], [5], [6, 7], [8]],
    "a duplicate": [[0, 1], [2], [2], [3], [4]],
    "reordered": [[0, 1], [3], [2], [4], [5]],
    "a restart": [[0, 1], [2], [3], [0], [1], [2]],
    "no numbers": [[0], [None], [1], [None, 2]],
}


@pytest.mark.parametrize("name", sorted(NUMBERINGS))
def test_a_range_read_from_after_plus_one_misses_no_event_after(name: str) -> None:
    groups = [[{"type": "x", "sequence_number": n} if n is not None else {"type": "x"}
               for n in group] for group in NUMBERINGS[name]]
    numbers = entry_numbers(groups)
    assert numbers == sorted(set(numbers))  # each above the one before
    every = [e for group in groups for e in group]

    def later(events: list[dict[str, Any]], after: int) -> list[dict[str, Any]]:
        return [e for e in events if not isinstance(e.get("sequence_number"), int)
                or e["sequence_number"] > after]

    for after in range(-1, 12):
        start = start_of(after)
        read = [e for number, group in zip(numbers, groups, strict=True)
                if number >= start for e in group]
        assert later(read, after) == later(every, after), (name, after)


def _running(store: ResponseStore, response_id: str) -> None:
    store.keep(response_id, Stored({"id": response_id, "status": "in_progress",
                                    "background": True, "output": []}, []))
    append(store, response_id, 1, [{"type": "response.created", "sequence_number": 0},
                                   {"type": "response.queued", "sequence_number": 1}])


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_lapsed_run_is_reaped_exactly_once(backend: str, tmp_path: Path) -> None:
    store = ResponseStore(backend=MemoryBackend() if backend == "memory"
                          else SqliteBackend(str(tmp_path / "reap.db")))
    for n in range(50):
        response_id = f"resp_{n}"
        _running(store, response_id)
        assert not alive(store, response_id)
        gate, won = threading.Barrier(4), []

        def race(rid: str = response_id, gate: threading.Barrier = gate,
                 won: list[bool] = won) -> None:
            gate.wait()
            won.append(reap(store, rid))

        threads = [threading.Thread(target=race) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(won) == [False, False, False, True]
        stored = store[response_id].response
        assert stored["status"] == "failed" and stored["error"]["code"] == "server_error"
        entries = store.backend.log_read(response_id)
        assert entries[-1][0] == LOG_END
        (failed,) = decode(entries[-1][1])
        assert (failed["type"], failed["sequence_number"]) == ("response.failed", 2)
        assert failed["response"] == stored
        # a run that was only slow: its next event is refused
        assert not append(store, response_id, 2, [{"type": "x", "sequence_number": 2}])


def test_get_reaps_a_running_response_only_once_its_lease_has_lapsed() -> None:
    clock = [1_000.0]
    store = ResponseStore(backend=MemoryBackend(clock=lambda: clock[0]))
    _running(store, "resp_live")
    beat(store, "resp_live")
    assert settled(store, store["resp_live"]).response["status"] == "in_progress"
    clock[0] += LEASE - 0.5  # not yet
    assert settled(store, store["resp_live"]).response["status"] == "in_progress"
    clock[0] += 1.0  # no beat for longer than the lease
    assert settled(store, store["resp_live"]).response["status"] == "failed"
    assert store["resp_live"].response["status"] == "failed"  # stored so
