"""HTTP behaviour of the server over a real socket: errors, headers, routes, robustness."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ormock import OrmockServer, check_stream

# what the server writes: run again without the cork of ormock.server.http_protocol
# (ORMOCK_HTTP_CORK=0) by `make test`
pytestmark = pytest.mark.wire


def _error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and isinstance(error["code"], str)
    assert isinstance(error["type"], str)
    return error


def test_streamed_body_is_framed_exactly(http: httpx.Client) -> None:
    response = http.post("/responses", json={"model": "m", "input": "hi", "stream": True})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    body = response.content
    assert body.endswith(b"data: [DONE]\n\n") and b"\r" not in body
    for frame in body.split(b"\n\n")[:-2]:
        event_line, data_line = frame.split(b"\n")
        assert event_line.startswith(b"event: ") and data_line.startswith(b"data: ")
        assert json.loads(data_line[6:])["type"] == event_line[7:].decode()
    report = check_stream(body)
    assert report.ok, report.violations


def test_request_id_is_echoed_or_generated(http: httpx.Client) -> None:
    mine = http.post("/responses", json={"model": "m", "input": "x"},
                     headers={"X-Request-ID": "trace-42"})
    assert mine.headers["x-request-id"] == "trace-42"
    generated = http.get("/models")
    assert generated.headers["x-request-id"].startswith("req_")
    missing = http.get("/nothing-here")
    assert missing.headers["x-request-id"].startswith("req_")


_ID_CHARS = "abcXYZ019-_.:~"
_request_ids = st.one_of(st.text(alphabet=_ID_CHARS, max_size=6), st.just("a b"),
                         st.just("x" * 201), st.just("x" * 200))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sent=st.lists(st.tuples(st.sampled_from(["x-request-id", "X-Request-ID", "x-other"]),
                               _request_ids), max_size=3))
def test_the_create_route_takes_the_request_id_as_every_route_does(
        http: httpx.Client, sent: list[tuple[str, str]]) -> None:
    # the create route decodes its headers once and finds the id among them; any other route
    # looks for the first one: both answer with the first x-request-id sent when it is 1 to
    # 200 visible characters, else a generated one
    first = next((value for name, value in sent if name.lower() == "x-request-id"), None)
    valid = first is not None and 1 <= len(first) <= 200 and " " not in first
    for response in (http.post("/responses", json={"model": "m", "input": "x"}, headers=sent),
                     http.get("/models", headers=sent)):
        assert response.status_code == 200
        given_id = response.headers.get_list("x-request-id")
        assert given_id == [first] if valid else given_id[0].startswith("req_")
        assert len(given_id) == 1


@pytest.mark.parametrize(
    ("body", "param", "fragment"),
    [
        ({"input": "x"}, "model", "'model' is required"),
        ({"model": 3, "input": "x"}, "model", "must be a string"),
        ({"model": "m", "input": 5}, "input", "a string or an array"),
        ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0].role",
         "must be one of"),
        ({"model": "m", "input": [{"role": "user", "content": [{"type": "input_sound"}]}]},
         "input[0].content[0].type", "not a content part type"),
        ({"model": "m", "input": [{"type": "function_call_output", "output": "x"}]},
         "input[0].call_id", "is required"),
        ({"model": "m", "input": "x", "tool_choice": {"type": "function", "name": "nope"}},
         "tool_choice", "not in 'tools'"),
        ({"model": "m", "input": "x", "tool_choice": "required"}, "tool_choice", "no tools"),
        ({"model": "m", "input": "x", "max_output_tokens": 15}, "max_output_tokens",
         "at least 16"),
        ({"model": "m", "input": "x", "temperature": 3}, "temperature", "between 0 and 2"),
        ({"model": "m", "input": "x", "stream": "yes"}, "stream", "true or false"),
        ({"model": "m", "input": "x", "metadata": {"a": 1}}, "metadata.a", "must be a string"),
        ({"model": "m", "input": "x", "text": {"format": {"type": "yaml"}}}, "text.format.type",
         "must be 'text'"),
        ({"model": "m", "input": "x", "tools": [{"type": "function"}]}, "tools[0].name",
         "is required"),
        ({"model": "m", "input": "x", "reasoning": {"effort": "max"}}, "reasoning.effort",
         "not a reasoning effort"),
        ([1, 2], None, "must be a JSON object"),
    ],
)
def test_bad_fields_name_the_param(
    http: httpx.Client, body: Any, param: str | None, fragment: str
) -> None:
    response = http.post("/responses", json=body)
    assert response.status_code == 400
    error = _error(response)
    assert error["type"] == "invalid_request"
    assert error["param"] == param
    assert fragment in error["message"]


def test_invalid_json_says_where(http: httpx.Client) -> None:
    response = http.post("/responses", content=b'{"model": "m",, }',
                         headers={"content-type": "application/json"})
    assert response.status_code == 400
    error = _error(response)
    assert error["code"] == "invalid_json" and "line 1 column" in error["message"]


def test_non_json_numbers_are_refused(http: httpx.Client) -> None:
    response = http.post("/responses", content=b'{"model": "m", "temperature": NaN}',
                         headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert "NaN is not a JSON value" in _error(response)["message"]


def test_wrong_content_type(http: httpx.Client) -> None:
    response = http.post("/responses", content=b"model=m", headers={"content-type": "text/plain"})
    assert response.status_code == 415
    assert "application/json" in _error(response)["message"]


def test_unknown_route_and_wrong_method(http: httpx.Client) -> None:
    missing = http.get("/chat/completions")
    assert missing.status_code == 404 and _error(missing)["type"] == "not_found"
    wrong = http.get("/responses")
    assert wrong.status_code == 405 and _error(wrong)["type"] == "method_not_allowed"


def test_body_over_the_limit() -> None:
    with OrmockServer(max_body=1024) as small, httpx.Client() as raw:
        response = raw.post(small.base_url + "/responses",
                            json={"model": "m", "input": "x" * 2000})
        assert response.status_code == 413
        assert "--max-body" in _error(response)["message"]
        # still serving
        assert raw.post(small.base_url + "/responses",
                        json={"model": "m", "input": "x"}).status_code == 200


def test_api_key_is_enforced_when_given() -> None:
    with OrmockServer(api_key="secret") as locked, httpx.Client() as raw:
        url = locked.base_url + "/responses"
        denied = raw.post(url, json={"model": "m", "input": "x"},
                          headers={"Authorization": "Bearer other"})
        assert denied.status_code == 401
        error = _error(denied)
        assert error["code"] == "invalid_api_key" and "secret" not in error["message"]
        allowed = raw.post(url, json={"model": "m", "input": "x"},
                           headers={"Authorization": "Bearer secret"})
        assert allowed.status_code == 200


def test_models_and_stored_responses(http: httpx.Client) -> None:
    models = http.get("/models").json()
    assert models["object"] == "list" and models["data"][0]["object"] == "model"
    created = http.post("/responses", json={"model": "m", "input": "x"}).json()
    fetched = http.get(f"/responses/{created['id']}")
    assert fetched.json() == created
    unstored = http.post("/responses", json={"model": "m", "input": "x", "store": False}).json()
    assert http.get(f"/responses/{unstored['id']}").status_code == 404


def test_namespaces_are_isolated(server: OrmockServer) -> None:
    server.namespaces.open("ns-a")
    server.namespaces.open("ns-b")
    with httpx.Client(base_url=server.url) as raw:
        made = raw.post("/ns-a/v1/responses", json={"model": "m", "input": "x"}).json()
        assert raw.get(f"/ns-a/v1/responses/{made['id']}").status_code == 200
        assert raw.get(f"/ns-b/v1/responses/{made['id']}").status_code == 404


def test_same_seed_same_bytes_and_repeats_keep_content() -> None:
    requests = [
        {"model": "m", "input": "one", "stream": True},
        {"model": "m", "input": "two", "tools": [{"type": "function", "name": "f"}]},
        {"model": "m", "input": "one", "stream": True},
    ]

    def run() -> list[bytes]:
        with OrmockServer(seed=7) as fresh, httpx.Client(base_url=fresh.base_url) as raw:
            return [raw.post("/responses", json=r).content for r in requests]

    first, second = run(), run()
    assert first == second
    one, again = check_stream(first[0]).response, check_stream(first[2]).response
    assert one is not None and again is not None
    assert one["id"] != again["id"]
    assert one["output"][0]["content"] == again["output"][0]["content"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8,
)
field_names = st.sampled_from(
    ["model", "input", "tools", "tool_choice", "text", "reasoning", "max_output_tokens",
     "metadata", "previous_response_id", "stream", "instructions", "temperature",
     "parallel_tool_calls", "store", "include"]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=st.dictionaries(field_names, json_values, max_size=6))
def test_no_body_crashes_the_server(http: httpx.Client, body: dict[str, Any]) -> None:
    response = http.post("/responses", json={"model": "m", **body})
    assert response.status_code in (200, 400), response.text
    if response.status_code == 400:
        _error(response)
    elif body.get("stream") is True:
        assert check_stream(response.content, schema=False).ok


def test_a_dropped_namespace_answers_404_and_stays_gone(server: OrmockServer) -> None:
    server.namespaces.get("gone-ns")
    server.namespaces.drop("gone-ns")
    with httpx.Client(base_url=server.url) as raw:
        late = raw.post("/gone-ns/v1/responses", json={"model": "m", "input": "x"})
        assert late.status_code == 404
        assert _error(late)["code"] == "namespace_closed"
        assert raw.get("/gone-ns/_ormock/journal").status_code == 404
    assert server.namespaces.find("gone-ns") is None


def test_a_bug_inside_the_server_is_a_500_envelope_and_reported(
    server: OrmockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = server.namespaces.get("buggy")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(engine, "answer", broken)
    with httpx.Client(base_url=server.url) as raw:
        response = raw.post("/buggy/v1/responses", json={"model": "m", "input": "x"})
        assert response.status_code == 500
        error = _error(response)
        assert error["code"] == "internal_error" and "RuntimeError: boom" in error["message"]
        assert response.headers["x-request-id"].startswith("req_")
        assert raw.post("/v1/responses", json={"model": "m", "input": "x"}).status_code == 200
    assert "RuntimeError: boom" in engine.errors[-1]


def test_deeply_nested_bodies_are_answered_and_journaled(
    http: httpx.Client, base_url: str
) -> None:
    # deep, but within the 256 levels a body may have (``ormock.server.body.MAX_DEPTH``)
    nested = b'{"model": "m", "input": "x", "include": ' + b"[" * 200 + b"]" * 200 + b"}"
    accepted = http.post("/responses", content=nested,
                         headers={"content-type": "application/json"})
    assert accepted.status_code == 400  # include holds arrays, not strings
    too_deep = b'{"include": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    refused = http.post("/responses", content=too_deep,
                        headers={"content-type": "application/json"})
    assert refused.status_code == 400 and _error(refused)["code"] == "invalid_json"
    journal = http.get(base_url.replace("/v1", "/_ormock/journal"))
    assert journal.status_code == 200
    assert [e["status"] for e in journal.json()["data"]] == [400]  # refused JSON is not read


def test_a_bug_while_rendering_before_the_answer_starts_is_a_500_envelope(
    server: OrmockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ormock.engine.create_answer as prepared_module  # where the create route renders

    server.namespaces.open("writer-bug")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom in the writer")

    monkeypatch.setattr(prepared_module, "render", broken)
    with httpx.Client(base_url=server.url) as raw:
        response = raw.post("/writer-bug/v1/responses", json={"model": "m", "input": "x"})
        assert response.status_code == 500
        assert _error(response)["code"] == "internal_error"
        monkeypatch.undo()
        again = raw.post("/writer-bug/v1/responses", json={"model": "m", "input": "x"})
        assert again.status_code == 200  # the same keep-alive connection still serves
    engine = server.namespaces.serve("writer-bug")
    assert "boom in the writer" in engine.errors[-1] and engine.journal[0].status == 500


def test_a_bug_that_escapes_the_create_endpoint_is_still_a_500_envelope(
    server: OrmockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``POST /v1/responses`` skips Starlette's middleware; what escapes its endpoint before
    anything was sent is answered as Starlette's error middleware would."""
    import ormock.server.create as create_module

    server.namespaces.open("escape-bug")

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom in the background run")

    monkeypatch.setattr(create_module, "answer_background", broken)
    with httpx.Client(base_url=server.url) as raw:
        response = raw.post("/escape-bug/v1/responses",
                            json={"model": "m", "input": "x", "background": True})
    assert response.status_code == 500
    error = _error(response)
    assert error["code"] == "internal_error" and "boom in the background run" in error["message"]
    assert response.headers["x-request-id"].startswith("req_")
    assert "boom in the background run" in server.namespaces.serve("escape-bug").errors[-1]


def test_the_front_decodes_every_header_of_a_create(
        http: httpx.Client, base_url: str, server: OrmockServer) -> None:
    # many made-up names and a long one (within --max-header-bytes): each is in the journal
    # as sent, and the front keeps none of them once the create is answered
    many = {f"x-made-up-{n}": str(n) for n in range(300)}
    long = "x-long-" + "a" * 30_000
    response = http.post("/responses", json={"model": "m", "input": "names"},
                         headers={**many, long: "1"})
    assert response.status_code == 200
    namespace = base_url.rsplit("/", 2)[-2]
    entry = server.engine(namespace).journal[-1]
    assert {k: v for k, v in entry.headers.items() if k.startswith("x-made-up-")} == many
    assert entry.headers[long] == "1"


@pytest.mark.parametrize("profile", ["openai", "platform"])
def test_a_reset_fault_resets_the_connection_on_either_path(profile: str) -> None:
    # ``openai``: the front hands the create to its route; ``platform`` (its error types
    # respelled) goes through Starlette, whose wrapped sends hide the transport: the reset
    # finds it noted by ormock's HTTP protocol (``ormock.engine.writer.connection``)
    with OrmockServer(profile=profile) as running, httpx.Client() as raw:
        running.engine().inject({"disconnect": {"mode": "reset", "after_events": 2}})
        body = {"model": "m", "input": "reset me", "stream": True}
        url = running.base_url + "/responses"
        with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)), \
                raw.stream("POST", url, json=body) as response:
            for _ in response.iter_raw():
                pass
        assert running.engine().journal[-1].ended == "reset"
