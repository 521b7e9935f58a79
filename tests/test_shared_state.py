"""Shared scenario state on real servers: ``ormock serve --workers N`` on one SQLite file or one
Redis, and two replicas on one redis-server, behave as one fake. A scenario's steps come in
order whichever worker or replica takes a request, ``rate-limited-once`` fails exactly once,
a chaos seed gives the same faults with one worker and with four, an admin change made on one
replica is in effect on the other when the call returns, and the journal and the verdict of
either show every request. A cassette's interactions are played once each, in order, across
workers and replicas, whether it was given with ``--cassette`` or loaded through the admin
API."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import openai
import pytest
from stores import RedisServer, serve, store_spec

from ormock.cassette.fileformat import dump_cassette, parse_cassette
from ormock.cassette.matching import CassetteMiss, Order, Player
from ormock.cassette.model import Body, Cassette, Interaction, RecordedRequest, RecordedResponse
from ormock.engine.limits import Limits
from ormock.engine.shared_counters import StoreCounters
from ormock.engine.store import SqliteBackend, open_backend
from ormock.faults import HttpError
from ormock.faults.chaos import Chaos
from ormock.scenario import RequestView, ScenarioSet, Selection, load_scenario

KEY = "sk-" + "test-shared-state"
STEPS = 120  # at most this many requests, until both workers have served
CHAOS = "rate=0.5,seed=11,faults=http_error:429|http_error:503|http_error:500"
ADMIN = {"X-Ormock-Admin": "1"}


def _sequence(path: Path, name: str = "counted", steps: int = STEPS) -> Path:
    lines = [f"name: {name}", "order: sequence", "steps:"]
    for n in range(1, steps + 1):
        lines += ["  - reply:", "      items:", f"        - message: \"step {n}\""]
    path.write_text("\n".join(lines) + "\n")
    return path


def _root(base_url: str) -> str:
    return base_url.removesuffix("/v1")


def _text(base_url: str, text: str = "Next.", model: str = "gpt-5") -> str:
    """One request on a fresh connection (so the workers take them as the kernel hands them
    out); the reply's text, or the HTTP status of an error."""
    with httpx.Client(base_url=base_url, timeout=60,
                      headers={"Authorization": f"Bearer {KEY}"}) as http:
        got = http.post("/responses", json={"model": model, "input": text})
    if got.status_code != 200:
        return str(got.status_code)
    return str(got.json()["output"][0]["content"][0]["text"])


def _starts(spec: str) -> int:
    store = open_backend(spec, Limits())
    try:
        found = store.get("meta", "starts")
        return int(found) if found is not None else 0
    finally:
        store.close()


def _until_both_served(spec: str, send: Callable[[], str], at_least: int) -> list[str]:
    """``send`` called at least ``at_least`` times, then until both workers have served
    (each counts its engine's start in the store), at most ``STEPS`` times."""
    got: list[str] = []
    while len(got) < at_least or (_starts(spec) < 2 and len(got) < STEPS):
        got.append(send())
    assert _starts(spec) == 2  # both workers answered some of them
    return got


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_two_workers_take_a_scenarios_steps_in_order(kind: str, tmp_path: Path,
                                                     request: pytest.FixtureRequest) -> None:
    spec = store_spec(kind, request, tmp_path)
    scenario = _sequence(tmp_path / "counted.yaml")
    with serve("--workers", "2", "--store", spec, "--scenario", str(scenario)) as served:
        got = _until_both_served(spec, lambda: _text(served.base_url), STEPS)
        assert got == [f"step {n}" for n in range(1, len(got) + 1)]
        with httpx.Client(base_url=_root(served.base_url), timeout=30) as admin:
            listed = admin.get("/_ormock/scenarios").json()["data"][0]["steps"]
            journal = admin.get("/_ormock/journal").json()["data"]
        assert [s["used"] for s in listed] == [1] * len(got) + [0] * (STEPS - len(got))
        assert [e["scenario"] for e in journal] == ["counted"] * len(got)
        assert [e["step"] for e in journal] == list(range(1, len(got) + 1))


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_rate_limited_once_fails_once_across_workers(kind: str, tmp_path: Path,
                                                     request: pytest.FixtureRequest) -> None:
    spec = store_spec(kind, request, tmp_path)
    with serve("--workers", "2", "--store", spec) as served:
        got = _until_both_served(
            spec, lambda: _text(served.base_url, model="ormock:rate-limited-once"), 16)
    assert got[0] == "429"
    assert got[1:] == ["Thanks for waiting: this answer came on the retry."] * (len(got) - 1)


def _statuses(base_url: str, requests: int) -> list[int]:
    """The status of each of ``requests`` creates, each on a fresh connection: with several
    workers the kernel hands them to one worker or another (one kept-alive connection would
    stay with one worker)."""
    out = []
    for n in range(requests):
        with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0, timeout=60) as sdk:
            try:
                sdk.responses.create(model="gpt-5", input=f"Hi {n}.")
                out.append(200)
            except openai.APIStatusError as error:
                out.append(error.status_code)
    return out


def test_a_chaos_seed_gives_the_same_faults_with_one_worker_and_with_four(
        tmp_path: Path) -> None:
    requests = 30
    expected = []
    chaos = Chaos.parse(CHAOS)
    for _ in range(requests):
        drawn = chaos.draw()
        assert drawn is None or isinstance(drawn, HttpError)
        expected.append(200 if drawn is None else drawn.status)
    assert 200 in expected and len(set(expected)) > 2  # a sequence worth comparing
    runs = {}
    for workers in ("1", "4"):
        spec = f"sqlite:{tmp_path / f'chaos{workers}.db'}"
        with serve("--workers", workers, "--store", spec, "--chaos", CHAOS) as served:
            runs[workers] = _statuses(served.base_url, requests)
    with serve("--chaos", CHAOS) as single:  # one process, the memory store
        runs["memory"] = _statuses(single.base_url, requests)
    assert runs == {"1": expected, "4": expected, "memory": expected}


def test_a_probability_fault_draws_the_same_with_one_worker_and_with_four(
        redis_server: RedisServer) -> None:
    """Draw k of a ``probability`` trigger is a function of (seed, the fault's place, k), k
    from the fault's shared count, as chaos draws are: the same faults with 1 and 4 workers."""
    requests = 30
    fault = {"http_error": 503, "when": {"probability": 0.5}}
    runs, starts = {}, {}
    for workers in ("1", "4"):
        url = redis_server.fresh_url()
        with serve("--workers", workers, "--store", url, "--seed", "5") as served:
            added = httpx.post(_root(served.base_url) + "/_ormock/faults", json=fault,
                               timeout=30)
            assert added.status_code == 201, added.text
            runs[workers] = _statuses(served.base_url, requests)
        starts[workers] = int(open_backend(url, Limits()).get("meta", "starts") or 0)
    assert starts["1"] == 1 and starts["4"] > 1  # several of the four served
    assert 200 in runs["1"] and 503 in runs["1"]  # a sequence worth comparing
    assert runs["4"] == runs["1"]


@pytest.fixture
def two(redis_server: RedisServer, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two replicas on one Redis, started with the same --scenario file, the second one
    after the first has answered two requests."""
    url = redis_server.fresh_url()
    scenario = str(_sequence(tmp_path / "counted.yaml", steps=6))
    with serve("--store", url, "--scenario", scenario) as first:
        assert [_text(first.base_url) for _ in range(2)] == ["step 1", "step 2"]
        with serve("--store", url, "--scenario", scenario) as second:
            yield first.base_url, second.base_url


def test_a_later_replica_joins_the_counts_and_admin_changes_reach_it(
        two: tuple[str, str]) -> None:
    one, other = two
    # it joined the first one's counts: the steps go on in order, alternating replicas
    assert [_text(url) for url in (other, one, other, one)] == [
        "step 3", "step 4", "step 5", "step 6"]
    with httpx.Client(base_url=_root(one), timeout=30) as a, \
            httpx.Client(base_url=_root(other), timeout=30) as b:
        loaded = a.post("/_ormock/scenarios", content=_sequence_text("fresh", 3),
                        headers={"Content-Type": "application/yaml"})
        assert loaded.status_code == 201, loaded.text
        # in effect on the other replica as soon as the call returned
        assert [e["name"] for e in b.get("/_ormock/scenarios").json()["data"]] == [
            "counted", "fresh"]
        with httpx.Client(base_url=other, timeout=30,
                          headers={"Authorization": f"Bearer {KEY}"}) as http:
            answer = http.post("/responses", json={"model": "gpt-5", "input": "fresh?"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["output"][0]["content"][0]["text"] == "fresh 1"
        assert _text(one, "fresh?") == "fresh 2"
        # a reload through the admin API starts its counts over, for both
        assert b.post("/_ormock/scenarios", content=_sequence_text("fresh", 3),
                      headers={"Content-Type": "application/yaml"}).status_code == 201
        assert _text(one, "fresh?") == "fresh 1"
        # faults and chaos too
        assert b.post("/_ormock/faults", json={"http_error": 503}).status_code == 201
        assert _text(one, "fresh?") == "503"  # an attempt the fault ended: no step used
        assert a.delete("/_ormock/faults", headers=ADMIN).status_code == 200
        assert _text(other, "fresh?") == "fresh 2"  # the other replica answers step 2
        # the journal and the verdict of either show the requests both served
        journals = [c.get("/_ormock/journal").json()["data"] for c in (a, b)]
        assert journals[0] == journals[1]
        assert len(journals[0]) == 2 + 4 + 5
        assert [e["status"] for e in journals[0]].count(503) == 1
        verdicts = [c.get("/_ormock/verdict").json() for c in (a, b)]
        assert verdicts[0] == verdicts[1]
        # a reset on one starts the counts over for both (the scenarios stay)
        assert a.post("/_ormock/reset", headers=ADMIN).status_code == 200
        assert b.get("/_ormock/journal").json()["data"] == []
        assert _text(other) == "step 1"


def _sequence_text(name: str, steps: int) -> str:
    lines = [f"name: {name}", "order: sequence", "steps:"]
    for n in range(1, steps + 1):
        lines += ["  - match: {input: \"fresh?\"}", "    reply:", "      items:",
                  f"        - message: \"{name} {n}\""]
    return "\n".join(lines) + "\n"


def test_a_namespace_opened_or_dropped_on_one_replica_is_so_on_the_other(
        two: tuple[str, str]) -> None:
    one, other = two
    with httpx.Client(base_url=_root(one), timeout=30) as a, \
            httpx.Client(base_url=_root(other), timeout=30) as b:
        assert a.post("/_ormock/namespaces", json={"name": "team"}).status_code == 201
        assert "team" in b.get("/_ormock/namespaces").json()["data"]
        team_one, team_other = _root(one) + "/team/v1", _root(other) + "/team/v1"
        # its --scenario counts are its own (the default namespace is at step 2 already)
        assert [_text(team_other), _text(team_one), _text(team_other)] == [
            "step 1", "step 2", "step 3"]
        assert a.delete("/_ormock/namespaces/team", headers=ADMIN).status_code == 200
        with httpx.Client(base_url=team_other, timeout=30) as http:
            gone = http.post("/responses", json={"model": "gpt-5", "input": "x"})
        assert gone.status_code == 404, gone.text
        assert gone.json()["error"]["code"] == "namespace_closed"
        assert "team" not in b.get("/_ormock/namespaces").json()["data"]


def test_two_sets_racing_on_one_store_share_out_the_steps(tmp_path: Path) -> None:
    """Two processes' views, in threads: each its own SQLite connection to one file, its own
    ``ScenarioSet`` (and its own knowledge of which steps are spent); every step is claimed
    once, and a set that lost the race for a step's last use takes the next one."""
    scenario = load_scenario(_sequence(tmp_path / "counted.yaml", steps=40))
    stores = [SqliteBackend(tmp_path / "s.db") for _ in range(2)]
    sets = [ScenarioSet(counters=StoreCounters(store)) for store in stores]
    for each in sets:
        each.add(scenario, tag="counted:0")
    start = threading.Barrier(2)
    got: list[list[int]] = [[], []]

    def take(n: int) -> None:
        start.wait()
        for _ in range(20):
            chosen = sets[n].select(_view())
            assert isinstance(chosen, Selection)
            got[n].append(chosen.step.index)

    threads = [threading.Thread(target=take, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got[0] + got[1]) == list(range(1, 41))
    assert got[0] == sorted(got[0]) and got[1] == sorted(got[1])  # in order in each
    assert [sets[0].used(scenario, s) for s in scenario.steps] == [1] * 40
    for store in stores:
        store.close()


def _view() -> RequestView:
    return RequestView(model="gpt-5", input_text="Next.")


def _cassette_text(inputs: list[str]) -> str:
    """An ormock cassette answering ``{"model": "gpt-5", "input": inputs[n]}`` with the text
    ``played N`` (N from 1), in that order."""
    interactions = []
    for n, text in enumerate(inputs, 1):
        body = {"id": f"resp_played{n}", "object": "response", "status": "completed",
                "model": "gpt-5", "output": [
                    {"type": "message", "id": f"msg_played{n}", "role": "assistant",
                     "status": "completed", "content": [
                         {"type": "output_text", "text": f"played {n}", "annotations": []}]}]}
        interactions.append(Interaction(
            RecordedRequest("POST", "/v1/responses", body={"model": "gpt-5", "input": text}),
            RecordedResponse(200, {"content-type": "application/json"},
                             body=Body(json=body, style="compact"))))
    return dump_cassette(Cassette(tuple(interactions)))


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_two_workers_play_a_cassettes_interactions_once_in_order(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    spec = store_spec(kind, request, tmp_path)
    cassette = tmp_path / "played.yaml"
    cassette.write_text(_cassette_text(["Next."] * STEPS))  # identical requests: in order
    with serve("--workers", "2", "--store", spec, "--cassette", str(cassette)) as served:
        got = _until_both_served(spec, lambda: _text(served.base_url), 8)
        assert got == [f"played {n}" for n in range(1, len(got) + 1)]
        with httpx.Client(base_url=_root(served.base_url), timeout=30) as admin:
            listed = admin.get("/_ormock/cassettes").json()["data"]
            journal = admin.get("/_ormock/journal").json()["data"]
    assert [(c["played"], c["unused"]) for c in listed] == [
        (len(got), list(range(len(got), STEPS)))]
    assert [e["interaction"] for e in journal] == list(range(1, len(got) + 1))


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_two_workers_in_repeat_order_play_the_first_match_every_time(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    spec = store_spec(kind, request, tmp_path)
    cassette = tmp_path / "repeated.yaml"
    cassette.write_text(_cassette_text(["Next.", "Other.", "Next."]))
    with serve("--workers", "2", "--store", spec, "--cassette", str(cassette),
               "--cassette-order", "repeat") as served:
        got = _until_both_served(spec, lambda: _text(served.base_url), 8)
        assert got == ["played 1"] * len(got)
        assert _text(served.base_url, "Other.") == "played 2"
        with httpx.Client(base_url=_root(served.base_url), timeout=30) as admin:
            listed = admin.get("/_ormock/cassettes").json()["data"]
    assert [(c["order"], c["plays"], c["played"], c["unused"]) for c in listed] == [
        ("repeat", [len(got), 1, 0], 2, [2])]


def test_a_cassette_loaded_on_one_replica_is_played_by_both_once(
        redis_server: RedisServer) -> None:
    url = redis_server.fresh_url()
    text = _cassette_text(["a", "b", "c", "d"])
    yaml = {"Content-Type": "application/yaml"}
    with serve("--store", url) as first, serve("--store", url) as second:
        one, other = first.base_url, second.base_url
        with httpx.Client(base_url=_root(one), timeout=30) as a, \
                httpx.Client(base_url=_root(other), timeout=30) as b:
            loaded = a.post("/_ormock/cassettes?order=recorded", content=text, headers=yaml)
            assert loaded.status_code == 201, loaded.text
            # in effect on the other replica as soon as the call returned; in recorded order
            assert [_text(other, "a"), _text(one, "b"), _text(other, "c")] == [
                "played 1", "played 2", "played 3"]
            listed = b.get("/_ormock/cassettes").json()["data"]
            assert [(c["played"], c["unused"]) for c in listed] == [(3, [3])]
            assert _text(one, "a") == "400"  # played already, on the other replica
            assert _text(one, "d") == "played 4"
            # a reload through the admin API plays it afresh, for both
            assert b.post("/_ormock/cassettes", content=text, headers=yaml).status_code == 201
            assert [c["played"] for c in a.get("/_ormock/cassettes").json()["data"]] == [
                4, 0]
            assert _text(one, "a") == "played 1"
            assert _text(other, "a") == "400"  # the reload's own "a" was played on one
            assert _text(other, "b") == "played 2"
            # dropped on one: the other answers as if it had never had one
            assert a.delete("/_ormock/cassettes", headers=ADMIN).status_code == 200
            assert b.get("/_ormock/cassettes").json()["data"] == []
            assert not _text(other, "c").startswith("played")


@pytest.mark.parametrize("order", ["any", "recorded"])
def test_two_players_racing_on_one_store_play_each_interaction_once(
        order: Order, tmp_path: Path) -> None:
    """Two processes' players of one cassette, in threads, each its own SQLite connection and
    its own knowledge of what was played: every interaction is played once, and a player that
    lost the race for one (or finds it played by the other) takes the next."""
    cassette = parse_cassette(_cassette_text(["Next."] * 40))
    stores = [SqliteBackend(tmp_path / "c.db") for _ in range(2)]
    players = [Player.of(cassette, order=order, claims=StoreCounters(store),
                         tag="cassette:raced:0") for store in stores]
    start = threading.Barrier(2)
    got: list[list[int]] = [[], []]

    def take(n: int) -> None:
        start.wait()
        for _ in range(20):
            got[n].append(players[n].take("POST", "/v1/responses", "",
                                          {"model": "gpt-5", "input": "Next."})[0])

    threads = [threading.Thread(target=take, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got[0] + got[1]) == list(range(40))
    assert got[0] == sorted(got[0]) and got[1] == sorted(got[1])  # in order in each
    with pytest.raises(CassetteMiss) as caught:  # all played, whichever player is asked
        players[0].take("POST", "/v1/responses", "", {"model": "gpt-5", "input": "Next."})
    assert caught.value.used_up
    assert players[0].refresh() is False  # the miss found out all the other one played
    players[1].refresh()
    assert players[0].unused() == players[1].unused() == []
    for store in stores:
        store.close()


def test_two_players_racing_on_one_store_in_repeat_order_count_every_play(
        tmp_path: Path) -> None:
    """``order="repeat"`` (vcrpy's ``allow_playback_repeats``) on a shared store: whichever
    process takes it, every request plays the first interaction it matches, none is lost to
    a race, and the store's count is how often both played it."""
    cassette = parse_cassette(_cassette_text(["Next.", "Other.", "Next."]))
    stores = [SqliteBackend(tmp_path / "c.db") for _ in range(2)]
    players = [Player.of(cassette, order="repeat", claims=StoreCounters(store),
                         tag="cassette:repeated:0") for store in stores]
    start = threading.Barrier(2)
    got: list[list[int]] = [[], []]

    def take(n: int) -> None:
        start.wait()
        for turn in range(20):
            text = "Other." if turn % 4 == 3 else "Next."
            got[n].append(players[n].take("POST", "/v1/responses", "",
                                          {"model": "gpt-5", "input": text})[0])

    threads = [threading.Thread(target=take, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got[0] == got[1] == [1 if turn % 4 == 3 else 0 for turn in range(20)]
    assert players[0].counts() == players[1].counts() == [30, 10, 0]  # both workers' plays
    assert players[0].unused() == players[1].unused() == [2]  # never played: as vcrpy
    for store in stores:
        store.close()


def _continue(base_url: str, previous: str | None, text: str) -> tuple[str, str]:
    """A request (continuing ``previous``): the reply's id and text, or its HTTP status."""
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as sdk:
        try:
            got = sdk.with_options(timeout=60).responses.create(
                model="gpt-5", input=text, previous_response_id=previous or openai.omit)
        except openai.APIStatusError as error:
            return "", f"{error.status_code} {error.message}"
    return got.id, got.output_text


def test_step_n_is_matched_on_a_replica_other_than_the_one_that_answered_the_step(
        redis_server: RedisServer, tmp_path: Path) -> None:
    url = redis_server.fresh_url()
    scenario = tmp_path / "chained.yaml"
    scenario.write_text("\n".join([
        "name: chained", "steps:",
        "  - match: {input: start}", "    times: 2", "    reply:", "      items:",
        "        - message: started",
        "  - match: {previous_response_id: 'step:1'}", "    times: 2", "    reply:", "      items:",
        "        - message: continued"]) + "\n")
    with serve("--store", url, "--scenario", str(scenario)) as first, \
            serve("--store", url, "--scenario", str(scenario)) as second:
        one, other = first.base_url, second.base_url
        started, text = _continue(one, None, "start")
        assert text == "started"
        assert _continue(other, started, "go on")[1] == "continued"
        again, text = _continue(other, None, "start")  # step 1 answers again, on the other
        assert text == "started"
        assert _continue(one, again, "go on")[1] == "continued"
        # the first one's response is no longer step 1's last: step 2 does not answer it
        missed = _continue(other, started, "go on")[1]
        assert missed.startswith("400") and "No scenario step matches" in missed
