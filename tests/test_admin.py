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
from ormock.engine.namespaces import Namespaces
from ormock.scenario import catalogue
from ormock.server.app import create_app

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


YAML = {"content-type": "application/yaml"}
BODILESS = {"x-ormock-admin": "1"}  # a request without a body says it is no browser's form


def namespace_of(base_url: str) -> str:
    return base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]


@pytest.fixture
def admin(server: OrmockServer, base_url: str) -> Iterator[httpx.Client]:
    """An HTTP client on the admin API of the test's namespace."""
    with httpx.Client(base_url=f"{server.url}/{namespace_of(base_url)}/_ormock") as raw:
        yield raw


def _load(admin: httpx.Client, text: str) -> httpx.Response:
    return admin.post("/scenarios", content=text, headers=YAML)


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
    ("name: x", "text/yaml", "The scenario was not loaded: <scenario>:1: missing required key "
     "'steps'"),
    ("name: [unclosed", "application/yaml",
     "The scenario was not loaded: <scenario>:2: YAML syntax error"),
    (json.dumps([{"reply": {}}]), "application/json",
     "The scenario was not loaded: missing required key 'name'"),
], ids=["near miss", "missing key", "syntax", "json list"])
def test_a_bad_scenario_is_refused_with_its_message(admin: httpx.Client, body: str, kind: str,
                                                    message: str) -> None:
    response = admin.post("/scenarios", content=body, headers={"content-type": kind})
    assert _error(response, 400, "invalid_scenario").startswith(message)
    assert response.json()["error"]["param"] == "body"


def test_a_body_that_is_not_json_is_invalid_json(admin: httpx.Client) -> None:
    response = admin.post("/scenarios", content="{not json",
                          headers={"content-type": "application/json"})
    message = _error(response, 400, "invalid_json")
    assert message.startswith("The request body is not valid JSON (Expecting property name")
    assert "line 1 column 2" in message and response.json()["error"]["param"] == "body"


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
    deleted = admin.delete("/scenarios/greeter", headers=BODILESS)
    assert deleted.json() == {"name": "greeter", "deleted": True}
    assert admin.get("/scenarios").json()["data"] == []
    assert client.responses.create(model="m", input="hello").output_text != "Hello there!"
    again = admin.delete("/scenarios/greeter", headers=BODILESS)
    message = _error(again, 404, "unknown_scenario")
    assert message == "No loaded scenario named 'greeter'."


def test_reset_keeps_scenarios_with_fresh_counters(admin: httpx.Client, server: OrmockServer,
                                                   base_url: str,
                                                   client: openai.OpenAI) -> None:
    _load(admin, GOOD)
    first = client.responses.create(model="m", input="hello")
    client.responses.create(model="m", input="hello")
    reset = admin.post("/reset", headers=BODILESS)
    assert reset.json() == {"reset": True, "scenarios_unloaded": False}
    assert admin.get("/journal").json()["data"] == []
    assert admin.get("/scenarios").json()["data"][0]["steps"][0]["used"] == 0
    again = client.responses.create(model="m", input="hello")  # times: 2 counts from zero
    assert again.output_text == "Hello there!"
    assert again.id == first.id  # ids start over too: the fake is as new
    assert server.engine(namespace_of(base_url)).responses.keys() == {again.id}


def test_reset_with_scenarios_unloads_them(admin: httpx.Client, client: openai.OpenAI) -> None:
    _load(admin, GOOD)
    assert admin.post("/reset", params={"scenarios": "true"}, headers=BODILESS).json() == {
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
    admin.post("/reset", headers=BODILESS)
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
    monkeypatch.setattr("ormock.server.admin.catalogue",
                        lambda: {"broken": tmp_path / "broken.yaml"})
    (entry,) = admin.get("/catalogue").json()["data"]
    assert entry["name"] == "broken"
    assert entry["description"].startswith(
        f"(does not load: {tmp_path / 'broken.yaml'}:4: steps[0].match.input_contians: ")


def test_namespaces_are_separate(server: OrmockServer, base_url: str,
                                 admin: httpx.Client) -> None:
    _load(admin, GOOD)
    namespace = namespace_of(base_url)
    server.namespaces.open(f"{namespace}-other")
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
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as raw:
            out = []
            for method, path in requests or [("GET", "/_ormock/scenarios")]:
                if method == "POST" and path.endswith("/scenarios"):
                    out.append(await raw.post(path, content=GOOD, headers=YAML))
                elif method == "POST" and path.endswith("/responses"):
                    out.append(await raw.post(path, json={"model": "m", "input": "hello"}))
                else:
                    out.append(await raw.request(method, path, headers=BODILESS))
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


def test_finding4_secret_not_in_journal(server: OrmockServer, base_url: str,
                                        admin: httpx.Client, http: httpx.Client) -> None:
    engine = server.engine(namespace_of(base_url))
    engine.use({"name": "auth", "steps": [{"match": {"headers": {
        "Authorization": "Bearer sk-test-*"}}, "reply": {"items": [{"message": "ok"}]}}]})
    secrets = {"Authorization": "Bearer sk-secret-XYZ", "x-goog-api-key": "AIzaSecretGoog123",
               "X-Auth-Token": "tok-secret-789", "my-service-key": "svc-secret-000",
               "x-client-secret": "client-secret-111", "Cookie": "session=cookie-secret-456"}
    answer = http.post("/responses", json={"model": "m", "input": "hi"},
                       headers={**secrets, "X-Request-ID": "req-visible"})
    assert answer.status_code == 400
    (listed,) = admin.get("/journal").json()["data"]
    (entry,) = engine.journal
    for data in (listed, entry.to_dict()):
        text = json.dumps(data)
        assert not [v for v in secrets.values() if v in text or v[4:] in text], text
        assert data["error"]["code"] == "no_matching_scenario"
        assert "header 'Authorization' is 'Bearer sk-\u2026' (masked, 20 chars)" in (
            data["error"]["message"])
        assert {data["headers"][k.lower()] for k in secrets} == {"***"}
        assert data["headers"]["x-request-id"] == "req-visible"


# -- findings of the security probe -------------------------------------------------------------


def test_finding8_admin_body_limit() -> None:
    yaml_body = {"content-type": "application/yaml"}
    with OrmockServer(max_body=1024) as small, httpx.Client(base_url=small.url) as raw:
        small.namespaces.open("ns")
        big = "name: big\n# " + "x" * 2000 + "\nsteps: []\n"
        for path in ("/_ormock/scenarios", "/_ormock/faults", "/ns/_ormock/scenarios"):
            declared = raw.post(path, content=big, headers=yaml_body)
            assert _error(declared, 413, "request_too_large").endswith("--max-body.")
            chunked = raw.post(path, content=iter([big.encode()[:1000], big.encode()[1000:]]),
                               headers=yaml_body)
            assert _error(chunked, 413, "request_too_large")
            assert chunked.json()["error"]["param"] == "body"
        assert raw.put("/_ormock/chaos", content="rate=0.1," * 200,
                       headers=yaml_body).status_code == 413
        # under the limit, still served
        assert raw.post("/_ormock/scenarios", content=GOOD, headers=yaml_body).status_code == 201


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/scenarios"), ("POST", "/faults"), ("PUT", "/chaos")])
def test_finding7_deep_json_admin_is_400(admin: httpx.Client, method: str, path: str) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    response = admin.request(method, path, content=deep,
                             headers={"content-type": "application/json"})
    assert _error(response, 400, "invalid_json").startswith("The request body nests too deeply")
    assert response.json()["error"]["param"] == "body"
    # nested, but within the 256 levels a body may have: the usual refusal of what it says
    shallow = b"[" * 200 + b"]" * 200
    answer = admin.request(method, path, content=shallow,
                           headers={"content-type": "application/json"})
    assert answer.status_code == 400 and answer.json()["error"]["code"] != "invalid_json"


def _refused(response: httpx.Response, param: str) -> str:
    message = _error(response, 403, "admin_forbidden")
    assert response.json()["error"] == {"message": message, "type": "permission_denied",
                                        "param": param, "code": "admin_forbidden"}
    return message


SPEC = json.dumps({"http_error": 429})
CHANGES = [("POST", "/faults", SPEC), ("POST", "/scenarios", GOOD), ("PUT", "/chaos", "rate=1"),
           ("POST", "/reset", ""), ("DELETE", "/faults", ""), ("DELETE", "/scenarios/x", "")]


@pytest.mark.parametrize("kind", [
    "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x", None])
def test_finding2_text_plain_post_is_refused(admin: httpx.Client, server: OrmockServer,
                                             base_url: str, kind: str | None) -> None:
    """What a web page may send cross-site without a preflight changes nothing."""
    engine = server.engine(namespace_of(base_url))
    for method, path, body in CHANGES:
        headers = {} if kind is None else {"content-type": kind}
        response = admin.request(method, path, content=body, headers=headers)
        message = _refused(response, "content-type")
        assert "'X-Ormock-Admin: 1'" in message and "application/json" in message
        assert "text/plain" not in message and "form" not in message
    assert engine.faults == [] and engine.chaos is None and engine.scenarios.scenarios == []
    # the same without a browser's content type, or with the header, is answered
    assert admin.post("/faults", content=SPEC, headers=YAML).status_code == 201
    assert admin.post("/faults", json={"http_error": 500}).status_code == 201
    assert admin.put("/chaos", content="rate=1", headers={"content-type": "text/yaml"}
                     ).status_code == 201
    assert admin.delete("/faults", headers=BODILESS).status_code == 200
    assert admin.post("/reset", headers={**BODILESS, "content-type": "text/plain"}
                      ).status_code == 200


def test_finding2_foreign_host_cannot_read_journal(admin: httpx.Client,
                                                   server: OrmockServer) -> None:
    """DNS rebinding: a page of evil.example, resolved to 127.0.0.1, reads nothing."""
    for host in ("evil.example:8787", "evil.example", f"evil.example:{server.port}",
                 "localhost.evil.example", "127.0.0.1.evil.example", "[::1", "10.0.0.1:80",
                 "127.0.0.1:port", ""):
        for method, path in (("GET", "/journal"), ("GET", "/verdict"), ("POST", "/reset")):
            response = admin.request(method, path, headers={"host": host, **BODILESS})
            message = _refused(response, "host")
            assert "evil" not in message and "localhost, 127.0.0.1, [::1]" in message
    for host in (f"127.0.0.1:{server.port}", "localhost:1234", "LOCALHOST", "127.9.9.9:80",
                 "[::1]:8787", "[::1]"):
        assert admin.get("/journal", headers={"host": host}).status_code == 200, host


def test_finding2_foreign_host_allowed_when_it_is_the_server_or_an_admin_host() -> None:
    app = create_app(Namespaces(), admin_hosts=frozenset({"10.0.0.5"}))

    async def status(url: str, host: str) -> int:
        transport = httpx.ASGITransport(app=app, client=("10.0.0.5", 123))
        async with httpx.AsyncClient(transport=transport) as raw:
            answer = await raw.get(url + "/_ormock/journal", headers={"host": host})
            return answer.status_code

    assert asyncio.run(status("http://10.1.1.1:8787", "10.1.1.1:8787")) == 200  # the server's
    assert asyncio.run(status("http://10.1.1.1:8787", "10.1.1.1:8788")) == 403  # not its port
    assert asyncio.run(status("http://10.1.1.1:8787", "10.0.0.5:9")) == 200  # --admin-host
    assert asyncio.run(status("http://10.1.1.1:8787", "10.0.0.6:8787")) == 403


def test_finding2_foreign_origin_refused(admin: httpx.Client, server: OrmockServer,
                                         base_url: str) -> None:
    port = server.port
    for origin in ("http://evil.example", f"http://evil.example:{port}", "null",
                   f"https://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}",
                   "http://127.0.0.1", f"file://127.0.0.1:{port}", f"127.0.0.1:{port}"):
        read = admin.get("/journal", headers={"origin": origin})
        assert "evil" not in _refused(read, "origin")
        write = admin.post("/faults", json={"http_error": 429}, headers={"origin": origin})
        _refused(write, "origin")
    assert server.engine(namespace_of(base_url)).faults == []
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):  # its own pages
        assert admin.get("/journal", headers={"origin": origin}).status_code == 200
    assert admin.post("/faults", json={"http_error": 429},
                      headers={"origin": f"http://localhost:{port}"}).status_code == 201


def test_finding8_ipv4_mapped_loopback_allowed() -> None:
    """A dual-stack server (bound to ``::``) sees a 127.0.0.1 client as ``::ffff:127.0.0.1``."""
    try:
        dual = OrmockServer(host="::")
    except OSError as error:
        pytest.skip(f"cannot bind :: on this machine ({error})")
    with dual, httpx.Client(base_url=f"http://127.0.0.1:{dual.port}", timeout=10) as raw:
        try:
            answer = raw.get("/_ormock/journal")
        except httpx.ConnectError as error:
            pytest.skip(f"a server bound to :: takes no IPv4 clients here ({error})")
        assert answer.status_code == 200, answer.text
        assert raw.post("/_ormock/reset", headers=BODILESS).status_code == 200
    for client, hosts, status in [("::ffff:127.0.0.1", frozenset(), 200),
                                  ("::ffff:127.1.2.3", frozenset(), 200),
                                  ("::ffff:10.0.0.5", frozenset({"10.0.0.5"}), 200),
                                  ("::ffff:10.0.0.5", frozenset({"::ffff:10.0.0.5"}), 200),
                                  ("::ffff:10.0.0.5", frozenset(), 403),
                                  ("::ffff:10.0.0.6", frozenset({"10.0.0.5"}), 403)]:
        (listed,) = _asgi(client, admin_hosts=hosts)
        assert listed.status_code == status, client


def test_finding8_proxy_headers_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """With FORWARDED_ALLOW_IPS=* uvicorn would take X-Forwarded-For for the client: a remote
    client could say 127.0.0.1. Here a loopback one says 10.1.2.3, and stays on loopback."""
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "*")
    with OrmockServer() as fake, httpx.Client(base_url=fake.url) as raw:
        assert fake._config.proxy_headers is False
        for header in ("x-forwarded-for", "forwarded"):
            value = "10.1.2.3" if header == "x-forwarded-for" else "for=10.1.2.3"
            answer = raw.get("/_ormock/journal", headers={header: value})
            assert answer.status_code == 200, answer.text


def test_namespaces_are_opened_listed_and_dropped_through_the_admin_api(
    server: OrmockServer, admin: httpx.Client
) -> None:
    with httpx.Client(base_url=server.url) as raw:
        json_body = {"content-type": "application/json"}
        opened = raw.post("/_ormock/namespaces", content='{"name": "opened-by-admin"}',
                          headers=json_body)
        assert opened.status_code == 201, opened.text
        assert "opened-by-admin" in raw.get("/_ormock/namespaces").json()["data"]
        made = raw.post("/opened-by-admin/v1/responses", json={"model": "m", "input": "x"})
        assert made.status_code == 200
        bad = raw.post("/_ormock/namespaces", content='{"name": "../x"}', headers=json_body)
        assert _error(bad, 400, "invalid_namespace")
        dropped = raw.delete("/_ormock/namespaces/opened-by-admin",
                             headers={"X-Ormock-Admin": "1"})
        assert dropped.status_code == 200
        late = raw.post("/opened-by-admin/v1/responses", json={"model": "m", "input": "x"})
        assert _error(late, 404, "namespace_closed")


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
    ("POST", "/scenarios", DEEP_JSON, "application/json", "invalid_json",
     "The request body nests too deeply to read"),
    ("PUT", "/chaos", _bomb("- "), "application/yaml", "invalid_chaos",
     "Chaos was not set: body:6: the document grows past 100000 nodes here (aliases count every "
     "time they are used); write it without so many nested aliases"),
    ("PUT", "/chaos", "[1, 2]", "application/yaml", "invalid_chaos",
     f"Chaos was not set: {CHAOS_KINDS}faults=http_error:429|disconnect, not a list"),
    ("PUT", "/chaos", "42", "application/json", "invalid_chaos",
     f"Chaos was not set: {CHAOS_KINDS}faults=http_error:429|disconnect, not a number"),
    ("PUT", "/chaos", DEEP_JSON, "application/json", "invalid_json",
     "The request body nests too deeply to read"),
    ("PUT", "/chaos", "[" * 100 + "]" * 100, "application/json", "invalid_chaos",
     "Chaos was not set: body: "),
    ("POST", "/faults", _bomb("- "), "application/yaml", "invalid_fault",
     "The fault was not added: body:6: the document grows past 100000 nodes here"),
    ("POST", "/faults", "[" * 5000, "application/yaml", "invalid_fault",
     "The fault was not added: body:1: nested deeper than 64 levels"),
], ids=["scenario bomb", "scenario deep json", "chaos bomb", "chaos list", "chaos number",
        "chaos deep json", "chaos 100 deep json", "faults bomb", "faults deep yaml"])
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
