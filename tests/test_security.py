"""Safe by default (issue 8): what a request can never make the server do. One test (or a
parametrized group) per finding of the outside probe, named after it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from layouts import scenario_layout

from ormock import OrmockServer, Settings
from ormock.engine.limits import Limits
from ormock.scenario import catalogue
from ormock.scenario.catalogue import _load_file

EVIL = """\
name: evil
steps:
  - reply:
      items:
        - message: "served from outside the scenario folders: topsecret-value"
"""
MINE = """\
name: mine
steps:
  - reply:
      items:
        - message: "mine"
"""


def _error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``root/scenarios/mine.yaml`` (the configured folder), ``root/outside/evil.yaml``, and a
    link in the folder that leads outside it."""
    return scenario_layout(tmp_path_factory.mktemp("layout"), MINE, EVIL)


@pytest.fixture(scope="module")
def folder_server(layout: Path) -> Iterator[OrmockServer]:
    with OrmockServer(scenario_dirs=[layout / "scenarios"], speed=0) as running:
        yield running


@pytest.fixture
def raw(folder_server: OrmockServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=folder_server.base_url, timeout=10) as client:
        yield client


def _spellings(layout: Path) -> list[str]:
    evil = layout / "outside" / "evil.yaml"
    return [str(evil), str(evil.with_suffix("")), "../outside/evil.yaml", "../outside/evil",
            "../../outside/evil", f"{layout.name}/outside/evil", "linked", "linked.yaml",
            "./mine", "mine.yaml", "scenarios/mine", "%2e%2e/outside/evil", "..", "", "x" * 300]


@pytest.mark.parametrize("how", ["header", "model"])
def test_finding1_request_chosen_scenario_names_never_read_a_path(
    raw: httpx.Client, layout: Path, how: str
) -> None:
    for name in _spellings(layout):
        request: dict[str, Any] = {"model": "m", "input": "x"}
        headers = {}
        if how == "header":
            headers["X-Ormock-Scenario"] = name
        else:
            request["model"] = f"ormock:{name}"
        response = raw.post("/responses", json=request, headers=headers)
        text = response.text
        if how == "header" and name == "":
            assert response.status_code == 200  # an empty header names nothing: the default
            continue
        assert response.status_code == 400, (name, text)
        error = _error(response)
        assert error["code"] == "unknown_scenario"
        assert error["param"] == ("x-ormock-scenario" if how == "header" else "model")
        # it lists what may be named, and reveals nothing of the disk beyond the name asked
        message = error["message"].replace(repr(name[:100]), "")
        assert "mine" in message and "text" in message
        for leak in ("topsecret", str(layout), os.getcwd(), "outside", "linked",
                     "not found", "looked in"):
            assert leak not in message, (name, leak, text)


def test_finding1_plain_names_in_the_folders_and_the_catalogue_still_serve(
    raw: httpx.Client
) -> None:
    mine = raw.post("/responses", json={"model": "ormock:mine", "input": "x"}).json()
    assert mine["output"][0]["content"][0]["text"] == "mine"
    text = raw.post("/responses", json={"model": "m", "input": "x"},
                    headers={"X-Ormock-Scenario": "text"})
    assert text.status_code == 200 and "text" in catalogue()


def test_finding1_distinct_names_are_not_kept(
    folder_server: OrmockServer, raw: httpx.Client
) -> None:
    engine = folder_server.engine()
    before = _load_file.cache_info().currsize
    for n in range(1, 300):
        spelling = "./" * n + "mine"  # the same file, spelled anew each time
        response = raw.post("/responses", json={"model": f"ormock:{spelling}", "input": "x"})
        assert response.status_code == 400
        response = raw.post("/responses", json={"model": f"ormock:no-such-{n}", "input": "x"})
        assert response.status_code == 400
    assert set(engine.named_by_request) <= {"mine", "text"}  # names of real files only
    assert _load_file.cache_info().currsize == before


def test_finding1_a_long_name_is_a_400_not_a_500(raw: httpx.Client) -> None:
    for name in ("a" * 300, "a/" * 150, "é" * 300):
        response = raw.post("/responses", json={"model": f"ormock:{name}", "input": "x"})
        assert response.status_code == 400
        assert _error(response)["code"] == "unknown_scenario"


# -- finding 5: --api-key guards every /v1 endpoint ---------------------------------------------
KEY = "sk-right-0123456789"


@pytest.fixture(scope="module")
def locked() -> Iterator[OrmockServer]:
    with OrmockServer(api_key=KEY, speed=0) as running:
        running.namespaces.open("ns")
        yield running


@pytest.mark.parametrize("prefix", ["", "/ns"])
def test_finding5_api_key_guards_every_v1_endpoint(locked: OrmockServer, prefix: str) -> None:
    good = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=locked.url + prefix, timeout=10) as raw:
        made = raw.post("/v1/responses", json={"model": "m", "input": "x"}, headers=good)
        assert made.status_code == 200
        response_id = made.json()["id"]
        for method, path in [("GET", f"/v1/responses/{response_id}"), ("GET", "/v1/models"),
                             ("POST", "/v1/responses"), ("GET", "/v1/responses/resp_none"),
                             ("DELETE", f"/v1/responses/{response_id}")]:
            for headers in ({}, {"Authorization": "Bearer sk-wrong-0123456789"},
                            {"Authorization": KEY}):
                refused = raw.request(method, path, headers=headers)
                assert refused.status_code == 401, (method, path, refused.text)
                error = _error(refused)
                assert error["code"] == "invalid_api_key" and error["param"] == "authorization"
                assert KEY not in refused.text and response_id not in refused.text
        assert raw.get(f"/v1/responses/{response_id}", headers=good).json()["id"] == response_id
        assert raw.get("/v1/models", headers=good).status_code == 200


def test_finding5_api_key_guards_the_websocket_upgrade(locked: OrmockServer) -> None:
    import openai

    for key, works in (("sk-wrong-0123456789", False), (KEY, True)):
        with openai.OpenAI(base_url=locked.base_url, api_key=key, max_retries=0) as client:
            if works:
                with client.responses.connect() as connection:
                    connection.response.create(model="m", input="hi")
                    types = []
                    for event in connection:
                        types.append(event.type)
                        if event.type == "response.completed":
                            break
                assert types[0] == "response.created" and types[-1] == "response.completed"
                continue
            from websockets.exceptions import InvalidStatus

            with pytest.raises(InvalidStatus, match="HTTP 403"):
                client.responses.connect().enter()


# -- finding 6: memory stays bounded --------------------------------------------------------------
def test_finding6_requests_never_create_namespaces(server: OrmockServer) -> None:
    before = server.namespaces.opened()
    with httpx.Client(base_url=server.url, timeout=10) as raw:
        for n in range(200):
            response = raw.post(f"/probe-{n}/v1/responses", json={"model": "m", "input": "x"})
            assert response.status_code == 404
            assert _error(response)["code"] == "unknown_namespace"
            assert raw.get(f"/probe-{n}/_ormock/journal").status_code == 404
    assert server.namespaces.opened() == before


def test_finding6_open_namespaces_are_capped_least_recently_used_first() -> None:
    from ormock.engine.namespaces import Namespaces

    namespaces = Namespaces(Settings(limits=Limits(namespaces=3)))
    for name in ("a", "b", "c"):
        namespaces.open(name)
    namespaces.serve("a")  # used: b is now the one used longest ago
    namespaces.open("d")
    assert namespaces.opened() == ["a", "c", "d"]
    with pytest.raises(Exception, match="closed") as caught:
        namespaces.serve("b")
    assert getattr(caught.value, "code", None) == "namespace_closed"


def test_finding6_the_journal_is_capped_in_bytes(server: OrmockServer) -> None:
    from ormock import Engine

    engine = Engine(limits=Limits(journal_bytes=1_000_000, journal_entries=1000))
    big = "x" * 200_000
    for _ in range(30):
        engine.respond({"model": "m", "input": big}, {})
    assert engine.journal.bytes <= 1_000_000
    assert 1 <= len(engine.journal) <= 5 and engine.journal.dropped >= 25
    assert engine.responses.bytes <= engine.limits.store_bytes


def test_finding6_stored_responses_are_capped_in_bytes() -> None:
    from ormock import Engine

    engine = Engine(limits=Limits(store_bytes=2_000_000))
    for _ in range(40):
        engine.respond({"model": "m", "input": "y" * 200_000}, {})
    assert engine.responses.bytes <= 2_000_000 and len(engine.responses) < 10


def test_finding6_server_errors_are_capped() -> None:
    from ormock import Engine

    engine = Engine()
    for n in range(1000):
        engine.errors.append(f"Traceback {n}\n" + "frame\n" * 100)
    assert len(engine.errors) <= 100 and engine.errors.bytes <= 1024 * 1024
    assert engine.errors[-1].startswith("Traceback 999")


def test_finding6_the_websocket_store_false_cache_is_capped() -> None:
    from ormock import Engine

    engine = Engine()
    local = engine.continuation_cache()
    for n in range(300):
        engine.answer({"model": "m", "input": f"turn {n}", "store": False, "stream": True}, {},
                      local=local)
    assert len(local) <= 256 and len(engine.responses) == 0


def test_finding6_a_chain_counts_each_item_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from ormock import Engine
    from ormock.engine import context as engine_module

    counted: list[int] = []
    real = engine_module.count_tokens

    def counting(text: str) -> int:
        counted.append(1)
        return real(text)

    monkeypatch.setattr(engine_module, "count_tokens", counting)
    engine = Engine()
    previous = None
    per_turn, usage = [], []
    for n in range(60):
        counted.clear()
        body: dict[str, Any] = {"model": "m", "input": f"turn {n} " * 3}
        if previous is not None:
            body["previous_response_id"] = previous
        reply = engine.respond(body, {})
        final = reply.events[-1]["response"]  # type: ignore[union-attr]
        previous = final["id"]
        per_turn.append(len(counted))
        usage.append(final["usage"]["input_tokens"])
    assert max(per_turn[2:]) <= per_turn[1] + 2  # not growing with the chain
    # the kept counts are the counts: the whole context recounted at the end agrees
    stored = engine.responses[previous]
    recount = sum(real(engine_module.item_text(i)) for i in stored.context)
    assert usage[-1] == recount and usage == sorted(usage)


# -- finding 7: bad input gets a clear answer -----------------------------------------------------
@pytest.mark.parametrize(("parameters", "where"), [
    ({"type": "object", "properties": 5}, "tools[0].parameters.properties"),
    ({"type": "object", "properties": {"a": {"type": "nope"}}},
     "tools[0].parameters.properties.a.type"),
    ({"type": "object", "required": "city"}, "tools[0].parameters.required"),
    ({"type": 7}, "tools[0].parameters.type"),
])
@pytest.mark.parametrize("tool_choice", ["required", "auto"])
def test_finding7_invalid_tool_parameters_schema_is_a_400(
    http: httpx.Client, parameters: dict[str, Any], where: str, tool_choice: str
) -> None:
    response = http.post("/responses", json={
        "model": "m", "input": "x", "tool_choice": tool_choice,
        "tools": [{"type": "function", "name": "f", "parameters": parameters}]})
    assert response.status_code == 400, response.text
    error = _error(response)
    assert error["code"] == "invalid_function_parameters" and error["param"] == where
    assert "not a valid JSON Schema" in error["message"]
    assert http.post("/responses", json={"model": "m", "input": "x"}).status_code == 200


schema_keywords = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["object", "string", "integer", "number", "boolean", "array",
                             "null"]) | st.lists(st.sampled_from(["string", "null"]), max_size=2),
    "enum": st.lists(st.integers() | st.text(max_size=3), min_size=1, max_size=3),
    "const": st.integers() | st.text(max_size=3),
    "minimum": st.integers(-5, 5), "maximum": st.integers(-5, 5),
    "minLength": st.integers(0, 5), "maxLength": st.integers(0, 5),
    "minItems": st.integers(0, 3), "maxItems": st.integers(0, 3),
    "pattern": st.sampled_from(["^a+$", "[0-9]{2}", "x"]),
    "format": st.sampled_from(["date", "email", "uuid", "date-time", "weird"]),
    "$ref": st.sampled_from(["#", "#/properties/a", "#/$defs/x", "#/nowhere"]),
    "additionalProperties": st.booleans(),
})
schemas = st.recursive(schema_keywords, lambda inner: st.fixed_dictionaries({}, optional={
    "type": st.just("object"), "properties": st.dictionaries(st.sampled_from("abc"), inner,
                                                             max_size=3),
    "required": st.lists(st.sampled_from("abcd"), max_size=3, unique=True),
    "items": inner, "anyOf": st.lists(inner, min_size=1, max_size=2),
    "oneOf": st.lists(inner, min_size=1, max_size=2), "allOf": st.lists(inner, max_size=2),
    "$defs": st.dictionaries(st.just("x"), inner, max_size=1), "not": inner,
}), max_leaves=6)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parameters=schemas, stream=st.booleans())
def test_finding7_no_tool_schema_crashes_the_server(
    http: httpx.Client, parameters: dict[str, Any], stream: bool
) -> None:
    response = http.post("/responses", json={
        "model": "m", "input": "x", "tool_choice": "required", "stream": stream,
        "tools": [{"type": "function", "name": "f", "parameters": parameters}]})
    assert response.status_code in (200, 400), response.text
    if response.status_code == 400:
        assert _error(response)["code"] == "invalid_function_parameters"


def _socket_url(server: OrmockServer) -> str:
    return server.url.replace("http://", "ws://") + "/v1/responses"


@pytest.mark.parametrize("frame", [
    "[" * 100_000 + "]" * 100_000,
    '{"type": "response.create", "model": "m", "input": ' + "[" * 50_000 + "]" * 50_000 + "}",
    "{not json", '{"type": "response.create", "temperature": NaN}',
])
def test_finding7_a_bad_websocket_frame_is_an_error_event(server: OrmockServer,
                                                          frame: str) -> None:
    import json

    from websockets.sync.client import connect

    with connect(_socket_url(server)) as socket:
        socket.send(frame)
        answer = json.loads(socket.recv(timeout=10))
        assert answer["type"] == "error" and answer["status"] == 400
        assert answer["error"]["code"] == "invalid_json" and answer["error"]["param"] == "message"
        socket.send('{"type": "response.create", "model": "m", "input": "still there?"}')
        types = [json.loads(socket.recv(timeout=10))["type"]]
        while types[-1] != "response.completed":
            types.append(json.loads(socket.recv(timeout=10))["type"])
        assert types[0] == "response.created"


def test_finding7_a_binary_websocket_frame_is_closed_with_1003(server: OrmockServer) -> None:
    from websockets.exceptions import ConnectionClosedError
    from websockets.sync.client import connect

    with connect(_socket_url(server)) as socket:
        socket.send(b"\x00\x01 not text")
        with pytest.raises(ConnectionClosedError) as closed:
            socket.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1003


def test_finding6_a_chain_holds_each_input_once() -> None:
    from ormock import Engine

    engine = Engine()
    previous = None
    for n in range(300):
        body: dict[str, Any] = {"model": "m", "input": f"turn {n}"}
        if previous is not None:
            body["previous_response_id"] = previous
        previous = engine.answer(body, {})[1].response_id
    assert previous is not None
    stored = list(engine.responses.values())
    # each stored response holds its own input (one message), never a copy of the context
    assert all(len(s.input) == 1 for s in stored)
    context = engine.responses[previous].context
    assert len(context) == 2 * 300 - 1
    assert [i["content"] for i in context[::2]][:2] == ["turn 0", "turn 1"]


@pytest.mark.parametrize("parameters", [
    {"type": "number", "maximum": 0}, {"type": "number", "maximum": -5},
    {"type": "integer", "maximum": -5}, {"type": "number", "minimum": 3, "maximum": 3},
    {"type": "object", "properties": {"n": {"type": "number", "exclusiveMaximum": 0}},
     "required": ["n"]},
])
def test_finding7_number_bounds_that_leave_one_value_are_answered(
    http: httpx.Client, parameters: dict[str, Any]
) -> None:
    response = http.post("/responses", json={
        "model": "m", "input": "x", "tool_choice": "required",
        "tools": [{"type": "function", "name": "f", "parameters": parameters}]})
    assert response.status_code == 200, response.text
