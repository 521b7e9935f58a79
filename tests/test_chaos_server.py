"""Chaos on a real server: faults drawn per request from a seed, recorded in the journal, and
replayed exactly by a fresh server with the same seed (from ``OrmockServer(chaos=...)``, the
admin API, and a scenario's ``chaos:``)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ormock import Engine, OrmockServer
from ormock.faults.chaos import Chaos

SPEC = "rate=0.3,seed=7,faults=http_error:429|fail_midstream|disconnect:reset|truncate|stall:0.01"
Run = list[tuple[Any, ...]]


def send(http: httpx.Client, index: int, path: str = "/responses", **extra: Any) -> None:
    """One streamed request, read to its end, a drop, or whatever comes."""
    body = {"model": "gpt-4o-mini", "input": f"Question {index}: what is {index} squared?",
            "stream": True, **extra}
    try:
        with http.stream("POST", path, json=body) as response:
            for _ in response.iter_raw():
                pass
    except (httpx.ReadError, httpx.RemoteProtocolError):
        pass  # a reset


def journal_run(engine: Engine) -> Run:
    """What the journal says each request got: status, faults, how it ended, what went out."""
    return [(e.status, tuple(e.faults), e.ended, e.response_id,
             tuple(ev["type"] for ev in e.events)) for e in engine.journal]


def chaos_run(spec: str, requests: int = 200) -> Run:
    with OrmockServer(chaos=spec) as server, httpx.Client(base_url=server.base_url,
                                                          timeout=10) as http:
        for index in range(requests):
            send(http, index)
        return journal_run(server.engine())


def expected_faults(spec: str | dict[str, Any], requests: int) -> list[tuple[str, ...]]:
    """The faults a fresh chaos draws for ``requests`` requests, computed off the server."""
    chaos = Chaos.parse(spec) if isinstance(spec, str) else Chaos.from_mapping(spec)
    out: list[tuple[str, ...]] = []
    for _ in range(requests):
        fault = chaos.draw()
        out.append((fault.name,) if fault is not None else ())
    return out


def test_a_chaos_run_of_200_requests_replays_exactly() -> None:
    first = chaos_run(SPEC)
    assert chaos_run(SPEC) == first  # a fresh server, the same seed: the same run
    faults = [r[1] for r in first]
    assert faults == expected_faults(SPEC, 200)
    hit = [f for f in faults if f]
    assert 40 <= len(hit) <= 80  # about 30 %
    assert {f[0] for f in hit} == {"http_error", "fail_midstream", "disconnect", "truncate",
                                   "stall"}
    for status, names, ended, _, events in first:  # the journal says what each one did
        if names == ("http_error",):
            assert (status, ended, events) == (429, "whole", ())
        elif names == ("disconnect",):
            assert ended == "reset" and "response.completed" not in events
        elif names == ("truncate",):
            assert ended == "truncated" and events[-1] == "response.output_text.delta"
        elif names == ("fail_midstream",):
            assert ended == "whole" and events[-2:] == ("error", "response.failed")
        else:
            assert ended == "whole" and events[-1] == "response.completed"
    other = chaos_run(SPEC.replace("seed=7", "seed=8"))
    assert [r[1] for r in other] != faults
    assert [r[1] for r in other] == expected_faults(SPEC.replace("seed=7", "seed=8"), 200)


BODILESS = {"x-ormock-admin": "1"}  # the admin API's mark of a request without a body


def namespace_of(base_url: str) -> str:
    return base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]


def test_chaos_from_the_admin_api_replays_after_a_reset(
    server: OrmockServer, base_url: str, http: httpx.Client
) -> None:
    admin = base_url.removesuffix("/v1") + "/_ormock"
    spec = "rate=0.5,seed=3,faults=http_error:503|truncate"
    answer = httpx.put(admin + "/chaos", content=spec, headers={"content-type": "application/yaml"})
    assert answer.status_code == 201 and answer.json() == {"chaos": spec}
    assert httpx.get(admin + "/faults").json()["chaos"] == spec
    engine = server.engine(namespace_of(base_url))
    for index in range(40):
        send(http, index)
    first = journal_run(engine)
    assert [r[1] for r in first] == expected_faults(spec, 40)
    # draws start again from the seed
    assert httpx.post(admin + "/reset", headers=BODILESS).status_code == 200
    for index in range(40):
        send(http, index)
    assert journal_run(engine) == first
    # the journal over the admin API says the same
    data = httpx.get(admin + "/journal").json()["data"]
    assert [tuple(e["faults"]) for e in data] == [r[1] for r in first]
    cleared = httpx.delete(admin + "/faults", headers=BODILESS)
    assert cleared.json() == {"faults": [], "chaos": None}
    send(http, 99)
    assert engine.journal[-1].faults == []


CHAOS_SCENARIO = {
    "name": "chaotic",
    "description": "Chaos for the requests this scenario answers.",
    "strict": False,
    "chaos": {"rate": 0.5, "seed": 11,
              "faults": ["http_error:429", {"fail_midstream": {"after_events": 3}}]},
    "steps": [{"times": "forever", "match": {"model": "chaos-*"},
               "reply": {"items": [{"message": "A chaotic answer."}]}}],
}


def test_chaos_from_a_scenario_draws_only_for_its_requests(
    server: OrmockServer, base_url: str, http: httpx.Client
) -> None:
    engine = server.engine(namespace_of(base_url))
    engine.use(CHAOS_SCENARIO)
    for index in range(30):
        send(http, index, model="chaos-1")
        send(http, index)  # the default reply: no scenario, no chaos, no draw
    journal = engine.journal
    ours = [tuple(e.faults) for e in journal if e.scenario == "chaotic"]
    assert ours == expected_faults(CHAOS_SCENARIO["chaos"], 30)  # type: ignore[arg-type]
    assert all(e.faults == [] for e in journal if e.scenario is None)
    failed = [e for e in journal if e.faults == ["fail_midstream"]]
    assert failed and all(e.response_status == "failed" and len(e.events) == 5 for e in failed)
    # the same scenario in another namespace draws the same sequence, from its own seed
    other = server.engine(namespace_of(base_url) + "-again")
    other.use(CHAOS_SCENARIO)
    with httpx.Client(base_url=f"{server.url}/{namespace_of(base_url)}-again/v1") as again:
        for index in range(30):
            send(again, index, model="chaos-1")
    assert [tuple(e.faults) for e in other.journal] == ours


def test_the_server_chaos_spec_is_checked() -> None:
    with pytest.raises(ValueError, match="unknown fault 'disconect'"):
        OrmockServer(chaos="rate=0.2,faults=disconect")
