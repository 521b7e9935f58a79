"""A warm worker answers an HTTP create without reading the admin stamp first: its writes are made
in one call guarded by the stamp it applied (``ormock.engine.attempt``). Two ``ormock serve``
replicas on one redis-server: whatever replica B changes in the admin state, replica A's very
next request is answered as B would answer it (had A skipped the guard, it would answer with
the state it had: each test below fails then), and the stale first attempt leaves no trace (one
journal entry per request, no response stored but the ones the clients got)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest
import redis
from stores import RedisServer, serve
from test_shared_state import _cassette_text

KEY = "sk-" + "test-optimistic"
ADMIN = {"X-Ormock-Admin": "1"}
SEEDED_EPOCH = 1_767_225_600  # a fresh engine's first clock reading (protocol.ids)
SCENARIO = """\
name: greeting
steps:
  - match: {input: "hello?"}
    times: forever
    reply:
      items:
        - message: "Hello from the scenario."
"""


class Replicas:
    """Replica A (answers), replica B (changes the admin state), their Redis."""

    def __init__(self, a: str, b: str, url: str) -> None:
        self.a, self.b = a, b
        self.sdk = openai.OpenAI(base_url=a, api_key=KEY, max_retries=0)
        self.admin_b = httpx.Client(base_url=b.removesuffix("/v1"), headers=ADMIN, timeout=30)
        self.admin_a = httpx.Client(base_url=a.removesuffix("/v1"), headers=ADMIN, timeout=30)
        self.redis = redis.Redis.from_url(url)

    def close(self) -> None:
        self.sdk.close()
        self.admin_a.close()
        self.admin_b.close()
        self.redis.close()

    def journal(self, namespace: str = "") -> list[dict[str, object]]:
        prefix = f"/{namespace}" if namespace else ""
        data: list[dict[str, object]] = self.admin_a.get(
            prefix + "/_ormock/journal").json()["data"]
        return data

    def stored(self, namespace: str = "") -> int:
        """The responses the namespace's keyspace holds."""
        return int(self.redis.zcard(f"ormock:{{ns:{namespace}}}:o:response"))

    def warm(self) -> None:
        """A has applied the admin state and answered (its next request is optimistic)."""
        for _ in range(2):
            assert self.sdk.responses.create(model="gpt-5", input="Warm up.").output_text


@pytest.fixture
def replicas(redis_server: RedisServer) -> Iterator[Replicas]:
    url = redis_server.fresh_url()
    with serve("--store", url) as a, serve("--store", url) as b:
        both = Replicas(a.base_url, b.base_url, url)
        try:
            yield both
        finally:
            both.close()


def test_a_scenario_loaded_on_b_answers_a_s_very_next_request(replicas: Replicas) -> None:
    replicas.warm()
    loaded = replicas.admin_b.post("/_ormock/scenarios", content=SCENARIO,
                                   headers={"Content-Type": "application/yaml"})
    assert loaded.status_code == 201, loaded.text
    answer = replicas.sdk.responses.create(model="gpt-5", input="hello?")
    assert answer.output_text == "Hello from the scenario."
    journal = replicas.journal()
    assert len(journal) == 3  # the stale attempt left no entry
    assert journal[-1]["scenario"] == "greeting" and journal[-1]["response_id"] == answer.id
    assert replicas.stored() == 3  # and no response of its own
    assert replicas.sdk.responses.retrieve(answer.id).output_text == answer.output_text


def test_a_fault_injected_on_b_applies_on_a_s_next_request(replicas: Replicas) -> None:
    replicas.warm()
    added = replicas.admin_b.post("/_ormock/faults", json={"http_error": 503})
    assert added.status_code == 201, added.text
    with pytest.raises(openai.InternalServerError) as failed:
        replicas.sdk.responses.create(model="gpt-5", input="Faulted?")
    assert failed.value.status_code == 503
    assert [e["status"] for e in replicas.journal()] == [200, 200, 503]
    assert replicas.stored() == 2


def test_a_reset_on_b_is_seen_by_a_s_next_request(replicas: Replicas) -> None:
    replicas.warm()
    assert replicas.admin_b.post("/_ormock/reset").status_code == 200
    answer = replicas.sdk.responses.create(model="gpt-5", input="After the reset.")
    # A started over too: its clock's first reading (had it answered as before the reset,
    # its clock would be four readings on)
    assert answer.created_at == SEEDED_EPOCH
    journal = replicas.journal()
    assert [e["response_id"] for e in journal] == [answer.id]  # as B's would be: this one only
    assert replicas.stored() == 1
    assert replicas.admin_b.get("/_ormock/journal").json()["data"] == journal


def test_a_namespace_dropped_on_b_is_closed_for_a_s_next_request(replicas: Replicas) -> None:
    assert replicas.admin_b.post("/_ormock/namespaces", json={"name": "team"}).status_code == 201
    team = openai.OpenAI(base_url=replicas.a.removesuffix("/v1") + "/team/v1", api_key=KEY,
                         max_retries=0)
    with team:
        for _ in range(2):  # A warm on it
            assert team.responses.create(model="gpt-5", input="Hi.").output_text
        assert replicas.admin_b.delete("/_ormock/namespaces/team").status_code == 200
        with pytest.raises(openai.NotFoundError) as closed:
            team.responses.create(model="gpt-5", input="Still there?")
    assert closed.value.code == "namespace_closed"
    assert replicas.stored("team") == 0  # the stale attempt wrote nothing into it


def test_a_bad_body_on_a_namespace_dropped_on_b_is_404_first(replicas: Replicas) -> None:
    """Refused before it is answered (a body that is not JSON: raw httpx, which the SDK
    cannot send), on a namespace another process dropped: 404, as a stamp read first says."""
    assert replicas.admin_b.post("/_ormock/namespaces", json={"name": "gone"}).status_code == 201
    url = replicas.a.removesuffix("/v1") + "/gone/v1/responses"
    with httpx.Client(timeout=30) as http:
        for _ in range(2):  # A warm on it
            assert http.post(url, json={"model": "gpt-5", "input": "Hi."}).status_code == 200
        assert http.post(url, content=b"{", headers={"Content-Type": "application/json"}
                         ).status_code == 400  # while it is open: the body's error
        assert replicas.admin_b.delete("/_ormock/namespaces/gone").status_code == 200
        refused = http.post(url, content=b"{", headers={"Content-Type": "application/json"})
    assert refused.status_code == 404
    assert refused.json()["error"]["code"] == "namespace_closed"


def test_an_error_answer_is_answered_again_when_stale(replicas: Replicas) -> None:
    """A scenario unloaded on B: A's request that only matched nothing there (400) is
    answered by the embedded default."""
    loaded = replicas.admin_a.post("/_ormock/scenarios", content=SCENARIO,
                                   headers={"Content-Type": "application/yaml"})
    assert loaded.status_code == 201, loaded.text
    with pytest.raises(openai.BadRequestError):  # no step matches it while it is loaded
        replicas.sdk.responses.create(model="gpt-5", input="Something else.")
    assert replicas.sdk.responses.create(model="gpt-5", input="hello?").output_text
    assert replicas.admin_b.delete("/_ormock/scenarios/greeting").status_code == 200
    answer = replicas.sdk.responses.create(model="gpt-5", input="Something else.")
    assert answer.output_text  # the embedded default's
    assert [e["status"] for e in replicas.journal()] == [400, 200, 200]
    assert replicas.stored() == 2


def test_a_cassette_loaded_on_b_plays_a_s_next_request(replicas: Replicas) -> None:
    """A's route was chosen with what A knew (no cassette): the stale attempt finds one and
    hands the request to the replay."""
    replicas.warm()
    loaded = replicas.admin_b.post("/_ormock/cassettes", content=_cassette_text(["Play me."]),
                                   headers={"Content-Type": "application/yaml"})
    assert loaded.status_code == 201, loaded.text
    answer = replicas.sdk.responses.create(model="gpt-5", input="Play me.")
    assert answer.output_text == "played 1"
    journal = replicas.journal()
    assert len(journal) == 3 and journal[-1]["interaction"] == 1  # the attempt left nothing
    assert replicas.stored() == 2
