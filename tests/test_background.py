"""Background mode through the real openai SDK: queued at once, run on the server's loop,
polled with ``responses.retrieve``, cancelled with ``responses.cancel``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from sdk_clients import (
    client_of,
    closed_clients,  # noqa: F401 (autouse: closes the clients)
)

from ormock import OrmockServer

PACED = {"name": "paced", "steps": [{"times": "forever", "reply": {
    "chunking": "words", "pacing": {"first_event": 0.0, "per_event": 0.05},
    "items": [{"message": "one two three four five six seven eight nine ten"}]}}]}
BODY: dict[str, Any] = {"model": "m", "input": "hello"}


@pytest.fixture
def server() -> Iterator[OrmockServer]:
    with OrmockServer(seed=7) as running:
        running.engine().use(PACED)
        yield running




def poll(client: openai.OpenAI, response_id: str, until: tuple[str, ...],
         timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        found = client.responses.retrieve(response_id)
        seen.append(found.status)
        if found.status in until:
            return found, seen
        time.sleep(0.01)  # a poll interval, not a wait for an event
    raise AssertionError(f"{response_id} never reached {until}: {seen[-5:]}")


def test_background_runs_to_completed_and_matches_a_foreground_answer(
        server: OrmockServer) -> None:
    client = client_of(server)
    created = client.responses.create(**BODY, background=True)
    assert created.status == "queued" and created.background is True
    assert created.output == []
    done, seen = poll(client, created.id, ("completed",))
    assert "in_progress" in seen
    assert done.output_text == "one two three four five six seven eight nine ten"
    with OrmockServer(seed=7) as fresh:
        fresh.engine().use(PACED)
        plain = client_of(fresh).responses.create(**BODY)
    assert plain.id == created.id and plain.created_at == done.created_at
    assert [o.model_dump() for o in done.output] == [o.model_dump() for o in plain.output]


def test_cancel_mid_run_stays_cancelled(server: OrmockServer) -> None:
    client = client_of(server)
    created = client.responses.create(**BODY, background=True)
    poll(client, created.id, ("in_progress",))
    cancelled = client.responses.cancel(created.id)
    assert cancelled.status == "cancelled"
    time.sleep(0.8)  # longer than the whole run: it must not come back to life
    assert client.responses.retrieve(created.id).status == "cancelled"
    assert client.responses.cancel(created.id).status == "cancelled"  # again: as it is


def test_cancel_a_finished_background_response_answers_it_as_it_is(
        server: OrmockServer) -> None:
    client = client_of(server)
    created = client.responses.create(**BODY, background=True)
    done, _ = poll(client, created.id, ("completed",))
    assert client.responses.cancel(created.id).model_dump() == done.model_dump()


def test_cancel_a_foreground_response_is_400(server: OrmockServer) -> None:
    client = client_of(server)
    plain = client.responses.create(**BODY)
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.cancel(plain.id)
    assert raised.value.code == "unsupported_operation"


def test_background_refusals() -> None:
    with OrmockServer(profile="platform") as platform:
        with pytest.raises(openai.BadRequestError) as raised:
            client_of(platform).responses.create(**BODY, background=True)
        assert raised.value.param == "background"
    with OrmockServer() as server:
        client = client_of(server)
        with pytest.raises(openai.BadRequestError) as store:
            client.responses.create(**BODY, background=True, store=False)
        assert store.value.param == "store"


def test_no_task_outlives_the_server() -> None:
    from ormock.engine.stateful import Background
    with OrmockServer() as server:
        server.engine().use(PACED)
        client_of(server).responses.create(**BODY, background=True)
        store = server.engine().responses
        tasks = Background.running(store)
        assert len(tasks) == 1
    assert all(task.done() for task in tasks)


def test_reset_cancels_running_tasks(server: OrmockServer) -> None:
    from ormock.engine.stateful import Background
    client_of(server).responses.create(**BODY, background=True)
    store = server.engine().responses
    tasks = Background.running(store)
    server.engine().reset()
    deadline = time.monotonic() + 5
    while not all(t.done() for t in tasks) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert all(t.done() for t in tasks)
