"""The admin API under /_ormock/ (and /<namespace>/_ormock/), for clients in any language."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from ormock import OrmockServer
from ormock.app import create_app
from ormock.namespaces import Namespaces
from ormock.scenario import catalogue

Json = dict[str, Any]
GOOD = """\
name: greeter
description: Says hello.
steps:
  - name: hello
    match:
      input_contains: hello
    times: 2
    reply:
      items:
        - message: Hello there!
"""
BAD = """\
name: broken
steps:
  - match:
      input_contians: bye
    reply:
      items:
        - message: Bye.
"""


def namespace_of(base_url: str) -> str:
    return base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]


@pytest.fixture
def admin(server: OrmockServer, base_url: str) -> Iterator[httpx.Client]:
    """An HTTP client on the admin API of the test's namespace."""
    with httpx.Client(base_url=f"{server.url}/{namespace_of(base_url)}/_ormock") as raw:
        yield raw


def _load(admin: httpx.Client, text: str) -> httpx.Response:
    return admin.post("/scenarios", content=text, headers={"content-type": "application/yaml"})


def _error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    return str(error["message"])


def test_load_yaml_then_it_answers(admin: httpx.Client, client: openai.OpenAI) -> None:
    loaded = _load(admin, GOOD)
    assert loaded.status_code == 201 and loaded.json() == {"name": "greeter", "steps": 1}
    assert client.responses.create(model="m", input="hello!").output_text == "Hello there!"


def test_load_json(admin: httpx.Client, client: openai.OpenAI) -> None:
    scenario = {"name": "json-one", "steps": [{"times": "forever", "reply": {
        "items": [{"function_call": {"name": "f", "arguments": {"x": 1}}}]}}]}
    loaded = admin.post("/scenarios", json=scenario)
    assert loaded.status_code == 201 and loaded.json() == {"name": "json-one", "steps": 1}
    (call,) = client.responses.create(model="m", input="hi").output
    assert call.type == "function_call" and call.arguments == '{"x":1}'


@pytest.mark.parametrize(("body", "kind", "message"), [
    (BAD, "application/yaml",
     "The scenario was not loaded: <scenario>:4: steps[0].match.input_contians: unknown key "
     "'input_contians' (did you mean 'input_contains'?)"),
    ("name: x", "text/plain", "The scenario was not loaded: <scenario>:1: missing required key "
     "'steps'"),
    ("name: [unclosed", "application/yaml",
     "The scenario was not loaded: <scenario>:2: YAML syntax error"),
    (json.dumps([{"reply": {}}]), "application/json",
     "The scenario was not loaded: missing required key 'name'"),
    ("{not json", "application/json", "The scenario was not loaded: Expecting property name"),
], ids=["near miss", "missing key", "syntax", "json list", "bad json"])
def test_a_bad_scenario_is_refused_with_its_message(admin: httpx.Client, body: str, kind: str,
                                                    message: str) -> None:
    response = admin.post("/scenarios", content=body, headers={"content-type": kind})
    assert _error(response, 400, "invalid_scenario").startswith(message)
    assert response.json()["error"]["param"] == "body"


def test_the_server_keeps_serving_after_a_bad_scenario(admin: httpx.Client,
                                                       client: openai.OpenAI) -> None:
    assert _load(admin, GOOD).status_code == 201
    assert _load(admin, BAD).status_code == 400
    assert client.responses.create(model="m", input="hello").output_text == "Hello there!"
    assert [s["name"] for s in admin.get("/scenarios").json()["data"]] == ["greeter"]


def test_a_body_naming_a_file_is_not_read(admin: httpx.Client, tmp_path: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text("name: secret\nsteps:\n  - reply: {items: [{message: s3cr3t}]}\n")
    response = admin.post("/scenarios", content=str(secret),
                          headers={"content-type": "application/yaml"})
    message = _error(response, 400, "invalid_scenario")
    assert "a scenario is a mapping" in message and "s3cr3t" not in message


def test_list_shows_steps_and_uses(admin: httpx.Client, client: openai.OpenAI) -> None:
    _load(admin, GOOD)
    client.responses.create(model="m", input="hello")
    (listed,) = admin.get("/scenarios").json()["data"]
    assert listed == {"name": "greeter", "description": "Says hello.", "source": None,
                      "strict": True, "order": "first",
                      "steps": [{"index": 1, "name": "hello", "times": 2, "used": 1}]}


def test_delete(admin: httpx.Client, client: openai.OpenAI) -> None:
    _load(admin, GOOD)
    assert admin.delete("/scenarios/greeter").json() == {"name": "greeter", "deleted": True}
    assert admin.get("/scenarios").json()["data"] == []
    assert client.responses.create(model="m", input="hello").output_text != "Hello there!"
    message = _error(admin.delete("/scenarios/greeter"), 404, "unknown_scenario")
    assert message == "No loaded scenario named 'greeter'."


def test_reset_keeps_scenarios_with_fresh_counters(admin: httpx.Client, server: OrmockServer,
                                                   base_url: str,
                                                   client: openai.OpenAI) -> None:
    _load(admin, GOOD)
    first = client.responses.create(model="m", input="hello")
    client.responses.create(model="m", input="hello")
    assert admin.post("/reset").json() == {"reset": True, "scenarios_unloaded": False}
    assert admin.get("/journal").json()["data"] == []
    assert admin.get("/scenarios").json()["data"][0]["steps"][0]["used"] == 0
    again = client.responses.create(model="m", input="hello")  # times: 2 counts from zero
    assert again.output_text == "Hello there!"
    assert again.id == first.id  # ids start over too: the fake is as new
    assert server.engine(namespace_of(base_url)).responses.keys() == {again.id}


def test_reset_with_scenarios_unloads_them(admin: httpx.Client, client: openai.OpenAI) -> None:
    _load(admin, GOOD)
    assert admin.post("/reset", params={"scenarios": "true"}).json() == {
        "reset": True, "scenarios_unloaded": True}
    assert admin.get("/scenarios").json()["data"] == []
    assert client.responses.create(model="m", input="hello").output_text != "Hello there!"


def test_journal(admin: httpx.Client, http: httpx.Client) -> None:
    _load(admin, GOOD)
    http.post("/responses", json={"model": "m", "input": "hello", "stream": True},
              headers={"Authorization": "Bearer sk-secret", "api-key": "k2", "X-Trace": "t1",
                       "OpenAI-Organization": "org-1", "Cookie": "a=b"})
    http.post("/responses", json={"model": "m", "input": "bye"})
    answered, missed = admin.get("/journal").json()["data"]
    headers = answered["headers"]
    for secret in ("authorization", "api-key", "openai-organization", "cookie"):
        assert headers[secret] == "***"
    assert headers["x-trace"] == "t1"
    assert "sk-secret" not in json.dumps(answered)
    assert answered["method"] == "POST" and answered["path"].endswith("/v1/responses")
    assert answered["body"] == {"model": "m", "input": "hello", "stream": True}
    assert (answered["status"], answered["stream"], answered["scenario"], answered["step"],
            answered["response_status"]) == (200, True, "greeter", 1, "completed")
    assert answered["response_id"].startswith("resp_")
    events = answered["events"]
    assert events[0] == {"type": "response.created", "sequence_number": 0, "offset_ms": 0.0}
    assert events[-1]["type"] == "response.completed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert (missed["status"], missed["scenario"], missed["events"]) == (400, None, [])
    assert missed["error"]["code"] == "no_matching_scenario"
    assert "Closest: scenario 'greeter' step 1 (hello)" in missed["error"]["message"]


def test_journal_offsets_of_a_paced_reply(admin: httpx.Client, server: OrmockServer,
                                          base_url: str, http: httpx.Client) -> None:
    server.engine(namespace_of(base_url)).speed = 0  # the offsets are planned; do not wait
    paced = GOOD.replace("    reply:\n", "    reply:\n      pacing: {first_event: 0.25}\n")
    assert _load(admin, paced).status_code == 201
    http.post("/responses", json={"model": "m", "input": "hello"})
    (entry,) = admin.get("/journal").json()["data"]
    assert entry["events"][0]["offset_ms"] == 0.0  # speed 0: sent at once
    server.engine(namespace_of(base_url)).speed = 1000
    admin.post("/reset")
    http.post("/responses", json={"model": "m", "input": "hello"})
    (entry,) = admin.get("/journal").json()["data"]
    assert entry["events"][0]["offset_ms"] == 0.25  # 250 ms / 1000


def test_catalogue(admin: httpx.Client) -> None:
    listed = admin.get("/catalogue").json()
    assert listed["object"] == "list"
    assert [e["name"] for e in listed["data"]] == list(catalogue())
    assert all(e["description"] and "does not load" not in e["description"]
               for e in listed["data"])


def test_catalogue_says_which_entry_does_not_load(admin: httpx.Client,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text(BAD)
    monkeypatch.setattr("ormock.admin.catalogue", lambda: {"broken": tmp_path / "broken.yaml"})
    (entry,) = admin.get("/catalogue").json()["data"]
    assert entry["name"] == "broken"
    assert entry["description"].startswith(
        f"(does not load: {tmp_path / 'broken.yaml'}:4: steps[0].match.input_contians: ")


def test_namespaces_are_separate(server: OrmockServer, base_url: str,
                                 admin: httpx.Client) -> None:
    _load(admin, GOOD)
    namespace = namespace_of(base_url)
    with httpx.Client(base_url=server.url) as raw:
        other = raw.get(f"/{namespace}-other/_ormock/scenarios").json()["data"]
        assert other == []
        mine = raw.get(f"/{namespace}/_ormock/scenarios").json()["data"]
        assert [s["name"] for s in mine] == ["greeter"]
    assert server.engine(namespace).scenarios.get("greeter") is not None


def _asgi(client_host: str, admin_hosts: frozenset[str] = frozenset(),
          requests: list[tuple[str, str]] | None = None) -> list[httpx.Response]:
    """Requests to a fresh app in process, as if from ``client_host`` (no network)."""
    app = create_app(Namespaces(), admin_hosts=admin_hosts)
    transport = httpx.ASGITransport(app=app, client=(client_host, 123))

    async def run() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=transport, base_url="http://ormock") as raw:
            out = []
            for method, path in requests or [("GET", "/_ormock/scenarios")]:
                if method == "POST" and path.endswith("/scenarios"):
                    out.append(await raw.post(path, content=GOOD))
                elif method == "POST" and path.endswith("/responses"):
                    out.append(await raw.post(path, json={"model": "m", "input": "hello"}))
                else:
                    out.append(await raw.request(method, path))
            return out

    return asyncio.run(run())


ADMIN_ROUTES = [("GET", "/_ormock/scenarios"), ("POST", "/_ormock/scenarios"),
                ("DELETE", "/_ormock/scenarios/x"), ("GET", "/_ormock/catalogue"),
                ("POST", "/_ormock/reset"), ("GET", "/_ormock/journal"),
                ("GET", "/ns/_ormock/journal"), ("POST", "/ns/_ormock/scenarios")]


def test_admin_answers_only_loopback_clients() -> None:
    for response in _asgi("10.0.0.5", requests=ADMIN_ROUTES):
        assert _error(response, 403, "admin_forbidden") == (
            "The admin API answers only clients on loopback; start the server with "
            "--admin-host ADDRESS to allow another.")
        assert response.json()["error"]["type"] == "permission_denied"
    # the provider API itself is not guarded
    (answer,) = _asgi("10.0.0.5", requests=[("POST", "/v1/responses")])
    assert answer.status_code == 200


def test_loopback_and_allowed_hosts_may_use_the_admin_api() -> None:
    for host in ("127.0.0.1", "::1", "127.8.9.10"):
        (listed,) = _asgi(host)
        assert listed.status_code == 200, host
    (listed,) = _asgi("10.0.0.5", admin_hosts=frozenset({"10.0.0.5"}))
    assert listed.status_code == 200
    (refused,) = _asgi("10.0.0.6", admin_hosts=frozenset({"10.0.0.5"}))
    assert refused.status_code == 403


def test_root_namespace_admin_in_process() -> None:
    loaded, answered, listed, journal = _asgi("127.0.0.1", requests=[
        ("POST", "/_ormock/scenarios"), ("POST", "/v1/responses"),
        ("GET", "/_ormock/scenarios"), ("GET", "/_ormock/journal")])
    assert loaded.status_code == 201
    assert answered.json()["output"][0]["content"][0]["text"] == "Hello there!"
    assert listed.json()["data"][0]["steps"][0]["used"] == 1
    assert journal.json()["data"][0]["scenario"] == "greeter"


def _bomb(item: str = "") -> str:
    """A "billion laughs" of nine anchors, each a list of nine aliases of the one before."""
    rows = [f'{item}&a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    rows += [f"{item}&a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    return "\n".join(rows) + "\n"


DEEP_JSON = "[" * 5000 + "]" * 5000
CHAOS_KINDS = "chaos is a mapping {rate, seed, faults} or a string such as rate=0.2,seed=7,"


@pytest.mark.parametrize(("method", "path", "body", "kind", "code", "message"), [
    ("POST", "/scenarios", "name: bomb\nsteps:\n" + _bomb("  - reply: "), "application/yaml",
     "invalid_scenario",
     "The scenario was not loaded: <scenario>:8: the document grows past 100000 nodes here"),
    ("POST", "/scenarios", DEEP_JSON, "application/json", "invalid_scenario",
     "The scenario was not loaded: nested deeper than 64 levels; flatten the document"),
    ("PUT", "/chaos", _bomb("- "), "application/yaml", "invalid_chaos",
     "Chaos was not set: body:6: the document grows past 100000 nodes here (aliases count every "
     "time they are used); write it without so many nested aliases"),
    ("PUT", "/chaos", "[1, 2]", "application/yaml", "invalid_chaos",
     f"Chaos was not set: {CHAOS_KINDS}faults=http_error:429|disconnect, not a list"),
    ("PUT", "/chaos", "42", "application/json", "invalid_chaos",
     f"Chaos was not set: {CHAOS_KINDS}faults=http_error:429|disconnect, not a number"),
    ("PUT", "/chaos", DEEP_JSON, "application/json", "invalid_chaos",
     "Chaos was not set: body: nested deeper than 64 levels; flatten the document"),
    ("POST", "/faults", _bomb("- "), "application/yaml", "invalid_fault",
     "The fault was not added: body:6: the document grows past 100000 nodes here"),
    ("POST", "/faults", "[" * 5000, "application/yaml", "invalid_fault",
     "The fault was not added: body:1: nested deeper than 64 levels"),
], ids=["scenario bomb", "scenario deep json", "chaos bomb", "chaos list", "chaos number",
        "chaos deep json", "faults bomb", "faults deep yaml"])
def test_finding3_admin_refuses_alias_bombs_and_keeps_serving(
    admin: httpx.Client, client: openai.OpenAI, method: str, path: str, body: str, kind: str,
    code: str, message: str,
) -> None:
    response = admin.request(method, path, content=body, headers={"content-type": kind})
    assert _error(response, 400, code).startswith(message)
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["param"] == "body"
    assert admin.get("/faults").json() == {"faults": [], "chaos": None}
    assert _load(admin, GOOD).status_code == 201  # the server goes on serving
    assert client.responses.create(model="m", input="hello").output_text == "Hello there!"
