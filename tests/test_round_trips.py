"""What a request costs in Redis round trips, counted on a real server (``INFO commandstats``:
every store call is one ``EVALSHA``), for ``ormock serve --store redis://...`` on a warm worker.
A plain create is one waited script: its writes (the response, its journal entry) are held
while it is answered and made in one ``PUT_MANY`` just before its first byte, guarded by the
admin stamp the worker applied instead of a read of it first (``ormock.engine.attempt``). A
paced reply's entry is also published when planned (in that same call), and again once
written, so that other workers see it while it runs (``ormock.engine.journal_sink``)."""

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
    url = server.fresh_url()
    client = redis.Redis.from_url(url)  # its database: the server's keys
    with serve("--store", url, *args) as running:
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


def test_a_plain_create_costs_one_round_trip(
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

    def refused() -> None:
        with pytest.raises(openai.BadRequestError):
            sdk.responses.create(model="gpt-5", input=[{"type": "nothing"}])  # type: ignore[list-item]

    # the response and its journal entry in one script, guarded by the admin stamp
    assert _per_request(client, plain) == 1
    assert _per_request(client, streamed) == 1
    assert _per_request(client, unstored) == 1  # the journal entry alone
    assert _per_request(client, refused) == 1  # an error answer's entry
    # the journal still has every one of them, finished, and the store every response
    entries = httpx.get(base_url.removesuffix("/v1") + "/_ormock/journal",
                        headers={"X-Ormock-Admin": "1"}).json()["data"]
    assert len(entries) == 4 * (REQUESTS + 1)
    assert all(e["finished_at"] is not None for e in entries if e["status"] == 200)
    assert [e["status"] for e in entries].count(400) == REQUESTS + 1
    assert client.zcard("ormock:{ns:}:o:response") == 2 * (REQUESTS + 1)


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
    # the stamp checked before the step's count is claimed (a write), the claim, then the
    # response and the entry in one script
    assert fast == 3
    assert slow == fast + 1  # the same step's counts, one journal write more (at its end)


def test_a_plain_create_at_the_caps_runs_seventeen_commands_in_redis(
        redis_alone: RedisServer) -> None:
    """Inside its one script: the sums of the kinds (the stamp's, the response's, its journal
    entry's) read in one command and written back, with the sizes of the values written, in
    one; the guard (the stamp: its expiry only if its kind has one); per kind written the
    write order, the value, and at the caps one eviction each (its sizes read and dropped);
    a response's ttl adds its expiry (20 with a kind's sums and sizes in hashes of its own, 31
    before the sums were kept with the count and the sweep waited for the first expiry)."""
    with _served(redis_alone, "--store-responses", "3") as (base_url, client):
        sdk = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)
        for _ in range(5):  # past the caps of both kinds
            assert sdk.responses.create(model="gpt-5", input="Hi there.").output_text
        _evalsha(client)
        client.config_resetstat()
        for _ in range(REQUESTS):
            assert sdk.responses.create(model="gpt-5", input="Hi there.").output_text
        scripts = _evalsha(client)
        stats = client.info("commandstats")
        run = sum(int(value["calls"]) for name, value in stats.items()
                  if name not in ("cmdstat_evalsha", "cmdstat_info", "cmdstat_config|resetstat"))
        assert scripts == REQUESTS  # one script a create
        assert run == 17 * REQUESTS
        assert stats["cmdstat_zpopmin"]["calls"] == 2 * REQUESTS  # an eviction per kind
        assert "cmdstat_zrangebyscore" not in stats and "cmdstat_zcard" not in stats
