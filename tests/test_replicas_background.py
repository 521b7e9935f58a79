"""Background jobs across servers on one store: two ``ormock serve`` replicas (processes of
their own) on one redis-server, and two servers on one SQLite file. A job started on one is
followed live from ``starting_after`` on the other through the openai SDK; a cancel served by
one stops the run on the other; a follower of a job whose server was killed ends with
``response.failed``. And the ``Idempotency-Key`` replay of a streamed background create."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from stores import RedisServer, serve

from ormock import OrmockServer, check_stream
from ormock.engine.event_log import LEASE, LOG_END, decode
from ormock.engine.stateful import Background
from ormock.protocol.sse import json_events, parse_sse

KEY = "sk-" + "test-replicas-background"
WORDS = " ".join(f"w{n}" for n in range(40))
BODY: dict[str, Any] = {"model": "m", "input": "hello"}


def paced(per_event: float) -> dict[str, Any]:
    return {"name": "paced", "steps": [{"times": "forever", "reply": {
        "chunking": "words", "pacing": {"first_event": 0.0, "per_event": per_event},
        "items": [{"message": WORDS}]}}]}


def _sdk(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0, timeout=60,
                         _strict_response_validation=True)


def _dumps(events: Any) -> list[dict[str, Any]]:
    return [e.model_dump(exclude_unset=True) for e in events]


@pytest.fixture
def replicas(redis_server: RedisServer, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """Two replicas with a paced scenario on one Redis database: (served, served)."""
    scenario = tmp_path / "paced.yaml"
    scenario.write_text(json.dumps(paced(0.1)))  # JSON is YAML
    url = redis_server.fresh_url()
    with serve("--store", url, "--scenario", str(scenario)) as first, \
            serve("--store", url, "--scenario", str(scenario)) as second:
        yield first, second


def _status(client: openai.OpenAI, response_id: str) -> str | None:
    return client.responses.retrieve(response_id).status


def test_a_job_on_one_replica_is_followed_live_from_starting_after_on_the_other(
        replicas: tuple[Any, Any]) -> None:
    first, second = replicas
    with _sdk(first.base_url) as one, _sdk(second.base_url) as two:
        head = []
        with one.responses.create(**BODY, background=True, stream=True) as stream:
            for event in stream:
                head.append(event)
                if len(head) == 6:
                    break  # the client drops: the run goes on
        response_id, last = head[0].response.id, head[-1].sequence_number
        assert _status(two, response_id) in ("queued", "in_progress")  # still running
        with two.responses.retrieve(response_id, stream=True, starting_after=last) as rest:
            tail = list(rest)
        assert _status(one, response_id) == "completed"
        with one.responses.retrieve(response_id, stream=True) as again:
            whole = list(again)
    assert tail[-1].type == "response.completed" and tail[0].sequence_number == last + 1
    assert _dumps(head) + _dumps(tail) == _dumps(whole)  # exact, and nothing twice
    assert [e.sequence_number for e in whole] == list(range(len(whole)))
    assert len(whole) > 40  # the tail was followed live: it is most of the stream


def test_a_cancel_on_one_replica_stops_the_run_on_the_other(
        replicas: tuple[Any, Any]) -> None:
    first, second = replicas
    with _sdk(first.base_url) as one, _sdk(second.base_url) as two:
        created = one.responses.create(**BODY, background=True)
        with two.responses.retrieve(created.id, stream=True) as stream:
            for event in stream:
                if event.type == "response.output_text.delta":
                    break  # it runs on the first replica
        cancelled = two.responses.cancel(created.id)
        assert cancelled.status == "cancelled"
        with one.responses.retrieve(created.id, stream=True) as stream:
            stored = list(stream)  # ends at the cancel: the log is closed
        time.sleep(1.0)  # many event intervals: a run that went on would store more
        with one.responses.retrieve(created.id, stream=True) as stream:
            later = list(stream)
        assert _status(one, created.id) == "cancelled"
    assert _dumps(later) == _dumps(stored)
    assert not any(e.type == "response.completed" for e in stored)
    assert stored[-1].sequence_number < 40  # stopped part way through the 40 words


def test_a_follower_ends_when_the_replica_running_the_job_is_killed(
        replicas: tuple[Any, Any]) -> None:
    first, second = replicas
    with _sdk(first.base_url) as one, _sdk(second.base_url) as two:
        created = one.responses.create(**BODY, background=True)
        events = []
        started = time.monotonic()
        with two.responses.retrieve(created.id, stream=True) as stream:
            for event in stream:
                events.append(event)
                if len(events) == 5:
                    os.kill(first.pid, signal.SIGKILL)  # no chance to store anything
                    killed = time.monotonic()
        ended = time.monotonic()
        found = two.responses.retrieve(created.id)
    assert events[-1].type == "response.failed"
    failed = events[-1].to_dict()
    assert failed["response"]["error"]["code"] == "server_error"
    assert "no heartbeat" in failed["response"]["error"]["message"]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert found.status == "failed" and found.error is not None
    # within the lease and a few waits of it (generous: the machine is shared), not for ever
    assert LEASE - 1 < ended - killed < LEASE + 20 and killed > started


def test_a_poller_of_a_job_whose_replica_was_killed_sees_it_failed(
        replicas: tuple[Any, Any]) -> None:
    first, second = replicas
    with _sdk(first.base_url) as one, _sdk(second.base_url) as two:
        created = one.responses.create(**BODY, background=True)
        assert _status(two, created.id) in ("queued", "in_progress")
        os.kill(first.pid, signal.SIGKILL)
        deadline = time.monotonic() + LEASE + 30
        while _status(two, created.id) in ("queued", "in_progress") and \
                time.monotonic() < deadline:
            time.sleep(0.2)  # a poll interval, as a client polls
        found = two.responses.retrieve(created.id)
    assert found.status == "failed" and found.error is not None
    assert found.error.code == "server_error"


def test_a_cancel_on_one_server_stops_the_run_on_the_other_over_sqlite(
        tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'shared.db'}"
    with OrmockServer(seed=3, store=store) as first, OrmockServer(seed=4, store=store) as second:
        first.engine().use(paced(0.05))
        one, two = _sdk(first.base_url), _sdk(second.base_url)
        created = one.responses.create(**BODY, background=True)
        with two.responses.retrieve(created.id, stream=True) as stream:
            for event in stream:
                if event.type == "response.output_text.delta":
                    break
        assert two.responses.cancel(created.id).status == "cancelled"
        runs = first.engine().responses
        deadline = time.monotonic() + 20
        while Background.running(runs) and time.monotonic() < deadline:
            time.sleep(0.01)  # the first server's run notices at its next event
        assert not Background.running(runs)
        entries = runs.backend.log_read(created.id, 0, 1000)
        one.close()
        two.close()
    assert entries[-1][0] == LOG_END  # closed by the cancel
    events = [e for _, value in entries for e in decode(value)]
    assert events and not any(e["type"] == "response.completed" for e in events)
    assert len(events) < 40


def test_the_idempotency_key_of_a_streamed_background_create_replays_its_bytes() -> None:
    with OrmockServer(seed=5) as server, httpx.Client(
            base_url=server.base_url, timeout=30,
            headers={"Authorization": f"Bearer {KEY}", "Idempotency-Key": "bg-1"}) as http:
        server.engine().use(paced(0.01))
        body = {**BODY, "background": True, "stream": True}
        with http.stream("POST", "/responses", json=body) as answer:
            first = b"".join(answer.iter_bytes())
        with http.stream("POST", "/responses", json=body) as again:
            second = b"".join(again.iter_bytes())
            replayed = again.headers.get("x-idempotent-replayed")
            kind = again.headers.get("content-type", "")
        other = http.post("/responses", json={**body, "input": "another"})
    assert replayed == "true" and kind.startswith("text/event-stream")
    assert second == first  # the very bytes, the same response: nothing run twice
    events = list(json_events(parse_sse(first)))
    assert events[-1]["type"] == "response.completed"
    assert check_stream(first).violations == []
    assert len(server.engine().responses) == 1
    assert other.status_code == 409 and other.json()["error"]["code"] == \
        "idempotency_key_conflict"


def test_a_follower_of_a_run_elsewhere_ends_when_its_own_server_stops(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'stop.db'}"
    with OrmockServer(seed=3, store=store) as first:
        first.engine().use(paced(0.5))  # a run of many seconds
        second = OrmockServer(seed=4, store=store).start()
        created = _sdk(first.base_url).responses.create(**BODY, background=True)
        got: dict[str, Any] = {}
        reading = threading.Event()

        def follow() -> None:
            chunks: list[bytes] = []
            with httpx.stream("GET", f"{second.base_url}/responses/{created.id}",
                              params={"stream": "true"}, timeout=60,
                              headers={"Authorization": f"Bearer {KEY}"}) as answer:
                try:
                    for chunk in answer.iter_bytes():
                        chunks.append(chunk)
                        reading.set()  # following: the first events are in
                except httpx.HTTPError as error:  # the server cut it: as good an end
                    got["error"] = error
            got["body"] = b"".join(chunks)
            reading.set()

        follower = threading.Thread(target=follow)
        follower.start()
        assert reading.wait(20)
        second.stop()  # the follower's server: its blocking read must not hold it up
        follower.join(20)
        assert not follower.is_alive()
        assert Background.running(first.engine().responses)  # the run goes on elsewhere
        assert b"response.queued" in got["body"]  # it followed, and ended early
        assert b"response.completed" not in got["body"]
