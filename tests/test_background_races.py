"""The faults that only exist with state: a cancel racing the end of a background run (exactly
one final status, and the cancel's answer is it), and a reset or a dropped namespace racing a
run (no task writes after the store is cleared)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ormock import OrmockServer
from ormock.engine.event_log import LEASE_KIND, advance, decode
from ormock.engine.stateful import Background
from ormock.engine.store import MemoryBackend, ResponseStore, SqliteBackend, Stored
from ormock.protocol.events import TERMINAL_EVENTS
from ormock.server.background import cancel_background

BODY: dict[str, Any] = {"model": "m", "input": "hello", "background": True}


def paced(per_event: float) -> dict[str, Any]:
    return {"name": "paced", "steps": [{"times": "forever", "reply": {
        "chunking": "words", "pacing": {"first_event": 0.0, "per_event": per_event},
        "items": [{"message": "one two three four five six seven eight"}]}}]}


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_cancel_racing_the_final_write_stores_exactly_one(backend: str, tmp_path: Path) -> None:
    """The deterministic hook: two threads released at once by a barrier, one storing the
    run's end as the run does (``advance``), one cancelling (``cancel_background``), on one
    store; 200 times."""
    store = ResponseStore(backend=MemoryBackend() if backend == "memory"
                          else SqliteBackend(str(tmp_path / "race.db")))
    wins = {"completed": 0, "cancelled": 0}
    for n in range(200):
        response_id = f"resp_{n}"
        queued = {"id": response_id, "status": "in_progress", "background": True, "output": []}
        store.keep(response_id, Stored(queued, []))
        barrier = threading.Barrier(2)
        outcome: dict[str, Any] = {}

        def finish(rid: str = response_id, start: dict[str, Any] = queued,
                   got: dict[str, Any] = outcome, gate: threading.Barrier = barrier) -> None:
            gate.wait()
            got["finished"] = advance(store, rid, {**start, "status": "completed"})

        def cancel(rid: str = response_id, got: dict[str, Any] = outcome,
                   gate: threading.Barrier = barrier) -> None:
            gate.wait()
            got["answer"] = cancel_background(store, rid)

        threads = [threading.Thread(target=finish), threading.Thread(target=cancel)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stored = store.get(response_id)
        assert stored is not None
        status = stored.response["status"]
        assert status == ("completed" if outcome["finished"] else "cancelled")
        assert outcome["answer"] == stored.response  # the cancel answers what was stored
        wins[status] += 1
    assert sum(wins.values()) == 200
    store.backend.close()


def test_cancel_racing_completion_over_http() -> None:
    """Cancels sent while runs end, at offsets across the end of the run: whatever wins, the
    stored status, the cancel's answer and the stored events agree."""
    with OrmockServer(seed=2) as server, httpx.Client(base_url=server.base_url,
                                                      timeout=20) as http:
        server.engine().use(paced(0.002))
        for n in range(30):
            created = http.post("/responses", json=BODY).json()
            time.sleep(n * 0.002)  # the cancel lands before, during or after the run's end
            answer = http.post(f"/responses/{created['id']}/cancel").json()
            assert answer["status"] in ("cancelled", "completed")
            # once the run has ended (a cancelled one ends at once), nothing changes any more
            deadline = time.monotonic() + 10
            while Background.running(server.engine().responses) and \
                    time.monotonic() < deadline:
                time.sleep(0.01)
            stored = http.get(f"/responses/{created['id']}").json()
            assert stored == answer
            events = [e for _, value in server.engine().responses.backend.log_read(
                created["id"]) for e in decode(value)]
            ended = [e["type"] for e in events if e["type"] in TERMINAL_EVENTS]
            assert ended == (["response.completed"] if answer["status"] == "completed"
                             else [])


def _left(server: OrmockServer, tasks: list[asyncio.Task[None]], namespace: str = ""
          ) -> list[Any]:
    """What the namespace still holds: responses, leases, and the event logs of the runs."""
    backend = server.engine(namespace).responses.backend if namespace == "" else \
        server.namespaces.backend
    assert backend is not None
    view = backend.scoped(namespace) if namespace else backend
    ids = [task.get_name().removeprefix("ormock-background-") for task in tasks]
    assert ids and all(i.startswith("resp_") for i in ids)
    return [*view.list("response"), *view.list(LEASE_KIND),
            *[entry for i in ids for entry in view.log_read(i)]]


def test_reset_from_another_thread_waits_for_the_tasks_it_cancels() -> None:
    with OrmockServer(seed=4) as server, httpx.Client(base_url=server.base_url,
                                                      timeout=20) as http:
        server.engine().use(paced(0.02))
        for _ in range(3):
            assert http.post("/responses", json=BODY).status_code == 200
        store = server.engine().responses
        tasks = Background.running(store)
        assert len(tasks) == 3
        server.engine().reset(scenarios=False)  # from this thread, not the server's loop
        assert all(task.done() for task in tasks)  # ended before the store was cleared
        time.sleep(0.2)  # many event intervals: a task that outlived the clear would write
        assert _left(server, tasks) == []


def test_reset_through_the_admin_api_leaves_nothing_behind() -> None:
    with OrmockServer(seed=4) as server, httpx.Client(base_url=server.url,
                                                      timeout=20) as http:
        server.engine().use(paced(0.02))
        for _ in range(3):
            assert http.post("/v1/responses", json=BODY).status_code == 200
        tasks = Background.running(server.engine().responses)
        reset = http.post("/_ormock/reset", headers={"x-ormock-admin": "1"})
        assert reset.status_code == 200  # run on the server's loop
        deadline = time.monotonic() + 10
        while not all(task.done() for task in tasks) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert all(task.done() for task in tasks)
        assert _left(server, tasks) == []


def test_dropping_a_namespace_cancels_its_runs(tmp_path: Path) -> None:
    with OrmockServer(seed=4, store=f"sqlite:{tmp_path / 'drop.db'}") as server, \
            httpx.Client(base_url=server.url, timeout=20) as http:
        server.namespaces.open("gone")
        server.engine("gone").use(paced(0.02))
        assert http.post("/gone/v1/responses", json=BODY).status_code == 200
        tasks = Background.running(server.engine("gone").responses)
        assert len(tasks) == 1
        server.namespaces.drop("gone")
        assert all(task.done() for task in tasks)
        time.sleep(0.2)
        assert _left(server, tasks, "gone") == []


def test_stopping_the_server_ends_the_streams_that_follow_its_runs() -> None:
    server = OrmockServer(seed=1).start()
    server.engine().use(paced(1.0))  # a run of many seconds
    outcome: dict[str, Any] = {}

    def follow() -> None:
        with httpx.stream("POST", server.base_url + "/responses",
                          json={**BODY, "stream": True}, timeout=30) as answer:
            outcome["body"] = b"".join(answer.iter_bytes())

    follower = threading.Thread(target=follow)
    follower.start()
    store = server.engine().responses
    deadline = time.monotonic() + 10
    while not [s for s in store.values() if store.backend.log_read(s.response_id)] and \
            time.monotonic() < deadline:
        time.sleep(0.01)  # until the run has stored its first events
    (response_id,) = [s.response_id for s in store.values()]
    server.stop()
    follower.join(10)
    assert not follower.is_alive() and b"response.queued" in outcome["body"]
    stored = server.engine().responses.get(response_id)
    assert stored is not None and stored.response["status"] == "cancelled"
