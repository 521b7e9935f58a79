"""The one way in of a create (``ormock.server.front`` ``Front.create``): every request to
``[/<namespace>]/v1/responses`` passes the perimeter, the API key guard, the cassettes' claim,
the engine's answer (or the 405 and the trailing-slash 307 Starlette's router gave), the
profile's error spelling and the request id, over a real socket."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ormock import OrmockServer

BODY = {"model": "m", "input": "hi"}
CASSETTE = Path(__file__).parent.parent / "cassettes" / "streamed-text.yaml"


@pytest.fixture(scope="module")
def server() -> Iterator[OrmockServer]:
    with OrmockServer(seed=0, api_key="sekret") as running:
        running.namespaces.open("plain")
        running.namespaces.open("taped")
        running.namespaces.serve("taped").use_cassette(CASSETTE)
        yield running


@pytest.fixture
def client(server: OrmockServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, follow_redirects=False,
                      headers={"Authorization": "Bearer sekret"}) as http:
        yield http


@pytest.mark.parametrize("prefix", ["", "/plain"])
def test_a_create_is_answered_with_its_request_id(client: httpx.Client, prefix: str) -> None:
    answer = client.post(prefix + "/v1/responses", json=BODY, headers={"X-Request-ID": "mine"})
    assert answer.status_code == 200 and answer.json()["status"] == "completed"
    assert answer.headers["x-request-id"] == "mine"


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS", "PUT"])
@pytest.mark.parametrize("prefix", ["", "/plain", "/nobody"])
def test_another_method_is_405_allowing_post(client: httpx.Client, method: str,
                                             prefix: str) -> None:
    answer = client.request(method, prefix + "/v1/responses")
    assert answer.status_code == 405
    assert answer.headers["allow"] == "POST" and answer.headers["x-request-id"].startswith("req_")
    if method != "HEAD":
        assert answer.json()["error"] == {
            "message": f"{method} is not allowed on {prefix}/v1/responses.",
            "type": "method_not_allowed", "param": "method", "code": "method_not_allowed"}


@pytest.mark.parametrize(("path", "target"), [("/v1/responses/", "/v1/responses"),
                                              ("/plain/v1/responses//", "/plain/v1/responses")])
def test_a_trailing_slash_is_redirected_to_the_create_path(
        client: httpx.Client, server: OrmockServer, path: str, target: str) -> None:
    answer = client.post(path + "?x=1", json=BODY)
    assert answer.status_code == 307
    assert answer.headers["location"] == f"{server.url}{target}?x=1"
    assert answer.headers["x-request-id"].startswith("req_")


def test_the_guard_and_the_perimeter_come_first(server: OrmockServer) -> None:
    with httpx.Client(base_url=server.url) as http:
        keyless = http.post("/plain/v1/responses", json=BODY)
        assert keyless.status_code == 401
        assert keyless.headers["www-authenticate"] == 'Bearer realm="ormock"'
        assert keyless.headers["x-request-id"].startswith("req_")
        foreign = http.get("/plain/v1/responses", headers={
            "Authorization": "Bearer sekret", "Origin": "http://evil.example"})
        assert foreign.status_code == 403  # before the 405 another method would get
        assert foreign.json()["error"]["code"] == "origin_not_allowed"
        assert foreign.headers["x-request-id"].startswith("req_")


def test_the_profile_spells_every_error_of_a_create(client: httpx.Client,
                                                   server: OrmockServer) -> None:
    # the first create of a namespace opened with the profile (its engine not made yet) too
    server.namespaces.open("spelled", {"profile": "openrouter"})
    invalid = client.post("/spelled/v1/responses", content=b"{bad",
                          headers={"content-type": "application/json"})
    assert invalid.status_code == 400 and set(invalid.json()["error"]) == {
        "code", "message", "metadata"}
    assert invalid.headers["x-request-id"].startswith("req_")
    wrong = client.get("/spelled/v1/responses")
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
    assert wrong.json()["error"]["code"] == 405


def test_a_namespace_with_cassettes_replays_its_creates(client: httpx.Client) -> None:
    miss = client.post("/taped/v1/responses", json={"model": "m", "input": "not recorded"})
    assert miss.status_code == 400 and miss.json()["error"]["code"] == "cassette_miss"
    assert miss.headers["x-request-id"].startswith("req_")
    slashed = client.get("/taped/v1/responses/")  # claimed before the redirect, as routed
    assert slashed.status_code == 400 and slashed.json()["error"]["code"] == "cassette_miss"


def test_the_claim_is_the_replay_routes_whether_or_not_it_is_asked() -> None:
    """``Front._claimed`` skips the route for an engine that neither replays nor records (no
    shared store): for every namespace, made or not, with cassettes, recording or neither, it
    says what ``ReplayRoute.claimed`` says."""
    from ormock.engine.namespaces import Namespaces
    from ormock.engine.replays import Upstream
    from ormock.server.app import create_app

    namespaces = Namespaces(seed=0)
    front = create_app(namespaces)
    for name in ("plain", "taped", "recording", "openai", "unmade"):
        namespaces.open(name)
    namespaces.get("")
    namespaces.get("plain")
    namespaces.get("openai")
    namespaces.get("taped").use_cassette(CASSETTE)
    namespaces.get("recording").record_to(Upstream("http://127.0.0.1:9/v1"))
    said = {}
    for name in ("", "plain", "taped", "recording", "openai", "unmade", "nobody"):
        found = namespaces.find(name)
        said[name] = front._claimed(name, found)
        assert said[name] == front.replay.claimed(name, lazily=True, found=found)
    assert said == {"": None, "plain": None, "taped": "taped", "recording": "recording",
                    "openai": None, "unmade": None, "nobody": None}
