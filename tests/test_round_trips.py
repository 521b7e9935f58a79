"""What a request costs in Redis round trips, counted on a real server (``INFO commandstats``:
every store call is one ``EVALSHA``), for ``ormock serve --store redis://...`` on a warm worker.
A reply written at once publishes its journal entry once (when written); a paced one also when
planned, so that other workers see it while it runs (``ormock.engine.journal_sink``). The
journal's writes are sent without waiting for Redis's answer (``put_nowait``: that they do not
wait is ``test_store_redis``'s), so of a plain create's 3 scripts the server waits for 2."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import openai
import pytest
import redis
from stores import RedisServer, own_redis, serve

KEY = "sk-" + "test-round-trips"
REQUESTS = 6  # per kind of request counted

SCENARIO = """\
name: counted
steps:
  - match:
      input_contains: slow
    times: forever
    reply:
      pacing:
        per_event: 0.005
      items:
        - message: "Slowly."
  - match:
      input_contains: fast
    times: forever
    reply:
      items:
        - message: "Fast."
"""


@pytest.fixture
def redis_alone() -> Iterator[RedisServer]:
    """A redis-server of this test's own: ``INFO commandstats`` counts the whole server, and
    the session's one may still be serving what an earlier test left running."""
    with own_redis() as running:
        yield running


@contextlib.contextmanager
def _served(server: RedisServer, *args: str) -> Iterator[tuple[str, redis.Redis]]:
    """One ormock server on that Redis (``args``: more of its options); a client of the same
    Redis to count with."""
    client = redis.Redis(host="127.0.0.1", port=server.port)
    with serve("--store", server.fresh_url(), *args) as running:
        try:
            yield running.base_url, client
        finally:
            client.close()


def _evalsha(client: redis.Redis) -> int:
    """The scripts run so far, once the server has made its last call: a reply's journal entry
    is written after its bytes went out, so the client may have them first."""
    def calls() -> int:
        stats = client.info("commandstats").get("cmdstat_evalsha", {})
        return int(stats.get("calls", 0))

    last, now = -1, calls()
    while now != last:  # settled: nothing more for a while (generous: the machine is loaded)
        time.sleep(0.3)
        last, now = now, calls()
    return now


def _per_request(client: redis.Redis, send: Callable[[], object]) -> float:
    send()  # warm: this kind's first request may load scripts, count a start
    before = _evalsha(client)
    for _ in range(REQUESTS):
        send()
    return (_evalsha(client) - before) / REQUESTS


def test_a_plain_create_costs_three_round_trips_and_store_false_two(
        redis_alone: RedisServer) -> None:
    with _served(redis_alone) as (base_url, client):
        _count_creates(base_url, client)


def _count_creates(base_url: str, client: redis.Redis) -> None:
    sdk = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    default = {"model": "gpt-5", "input": "Hi there."}  # no step matches: the embedded default

    def streamed() -> None:
        with sdk.responses.create(**default, stream=True) as stream:
            assert [e.type for e in stream][-1] == "response.completed"

    def plain() -> None:
        assert sdk.responses.create(**default).output_text

    def unstored() -> None:
        assert sdk.responses.create(**default, store=False).output_text

    # the admin stamp read, the response stored (both waited for), the journal entry written
    # once (not waited for)
    assert _per_request(client, plain) == 3
    assert _per_request(client, streamed) == 3
    assert _per_request(client, unstored) == 2  # no response stored
    # the journal still has every one of them, finished
    entries = httpx.get(base_url.removesuffix("/v1") + "/_ormock/journal",
                        headers={"X-Ormock-Admin": "1"}).json()["data"]
    assert len(entries) == 3 * (REQUESTS + 1)
    assert all(e["finished_at"] is not None for e in entries)


def test_a_paced_reply_is_published_when_planned_too(redis_alone: RedisServer,
                                                     tmp_path: Path) -> None:
    scenario = tmp_path / "counted.yaml"
    scenario.write_text(SCENARIO)
    with _served(redis_alone, "--scenario", str(scenario)) as (base_url, client):
        _count_paced(base_url, client)


def _count_paced(base_url: str, client: redis.Redis) -> None:
    sdk = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)

    def say(text: str) -> Callable[[], None]:
        def send() -> None:
            with sdk.responses.create(model="gpt-5", input=text, stream=True) as stream:
                assert [e.type for e in stream][-1] == "response.completed"
        return send

    fast, slow = _per_request(client, say("fast")), _per_request(client, say("slow"))
    assert slow == fast + 1  # the same step's counts, one journal write more
