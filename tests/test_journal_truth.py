"""The journal and the envelopes tell the truth: the envelope an injected error sent is the one
journaled; a stream that did not end whole is not journaled ``completed``; a body field is
masked only when it holds a secret (never ``prompt_cache_key``); an injected status carries the
``type``, ``code`` and ``param`` of the provider the namespace plays (OpenAI's under ``openai``,
the spec's under the default). All against a real server, with the openai SDK and plain HTTP."""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from ormock import OrmockServer
from ormock.protocol.profile import OPENAI_STATUS_ERRORS
from ormock.protocol.secrets import is_secret_field, mask_json

# what the server writes: run again without the cork of ormock.server.http_protocol
# (ORMOCK_HTTP_CORK=0) by `make test`
pytestmark = pytest.mark.wire

KEY = "sk-" + "test"
Json = dict[str, Any]
_names = itertools.count()


def opened(server: OrmockServer, profile: str | None = None) -> tuple[str, str]:
    """A fresh namespace (playing ``profile``): its name and base URL."""
    name = f"truth{next(_names)}"
    server.namespaces.open(name, {"profile": profile} if profile else None)
    return name, f"{server.url}/{name}/v1"


def journal(server: OrmockServer, name: str) -> list[Json]:
    answer = httpx.get(f"{server.url}/{name}/_ormock/journal", timeout=10)
    assert answer.status_code == 200, answer.text
    entries: list[Json] = answer.json()["data"]
    return entries


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the server never got there"
        time.sleep(0.01)


def test_an_injected_error_is_journaled_with_the_envelope_it_sent(server: OrmockServer) -> None:
    name, base = opened(server)
    server.engine(name).inject({"http_error": 500})
    answer = httpx.post(f"{base}/responses", json={"model": "m", "input": "Hi"}, timeout=10)
    assert answer.status_code == 500
    (entry,) = journal(server, name)
    assert entry["error"] == answer.json()["error"]
    assert entry["error"]["type"] == "server_error" and entry["status"] == 500
    assert entry["answered_by"] == {"kind": "error", "code": "server_error"}


@pytest.mark.parametrize("status", [400, 401, 403, 404, 429, 500, 502, 503, 524, 418, 599])
def test_injected_statuses_carry_openais_envelope_under_the_openai_profile(
        server: OrmockServer, status: int) -> None:
    name, base = opened(server, "openai")
    server.engine(name).inject({"http_error": status})
    with httpx.Client(timeout=10) as http:
        answer = http.post(f"{base}/responses", json={"model": "m", "input": "Hi"})
    assert answer.status_code == status
    error = answer.json()["error"]
    expected = OPENAI_STATUS_ERRORS.get(status) or OPENAI_STATUS_ERRORS[
        500 if status >= 500 else 400]
    assert (error["type"], error["code"], error["param"]) == (*expected, None)
    assert isinstance(error["message"], str) and error["message"]
    assert journal(server, name)[0]["error"] == error


def test_the_openai_sdk_sees_openais_rate_limit(server: OrmockServer) -> None:
    name, base = opened(server, "openai")
    server.engine(name).inject({"http_error": {"status": 429, "retry_after_ms": 1}})
    with openai.OpenAI(base_url=base, api_key=KEY, max_retries=0) as client, \
            pytest.raises(openai.RateLimitError) as limited:
        client.responses.create(model="m", input="Hi")
    assert (limited.value.type, limited.value.code, limited.value.param) == (
        "requests", "rate_limit_exceeded", None)
    body = limited.value.body
    assert isinstance(body, dict) and sorted(body) == ["code", "message", "param", "type"]
    assert body["message"].startswith("Rate limit reached for requests")


def test_the_spec_profile_keeps_the_spec_spelling(server: OrmockServer) -> None:
    name, base = opened(server)
    engine = server.engine(name)
    engine.inject({"http_error": 429, "when": {"first": 1}})
    engine.inject({"http_error": 503, "when": {"first": 1}})  # reached by the 2nd request
    with httpx.Client(timeout=10) as http:
        errors = [http.post(f"{base}/responses", json={"model": "m", "input": "Hi"}).json()[
            "error"] for _ in range(2)]
    assert [(e["type"], e["code"], e["param"]) for e in errors] == [
        ("too_many_requests", "rate_limit_exceeded", ""),
        ("service_unavailable", "service_unavailable", "")]


def test_fields_the_fault_sets_win_over_the_profile(server: OrmockServer) -> None:
    name, base = opened(server, "openai")
    server.engine(name).inject({"http_error": {"status": 429, "type": "tokens",
                                               "param": "input", "code": "quota"}})
    error = httpx.post(f"{base}/responses", json={"model": "m", "input": "Hi"},
                       timeout=10).json()["error"]
    assert (error["type"], error["code"], error["param"]) == ("tokens", "quota", "input")


def test_over_websocket_the_error_event_carries_the_profiles_envelope(
        server: OrmockServer) -> None:
    name, base = opened(server, "openai")
    server.engine(name).inject({"http_error": 429, "when": {"first": 1}})
    with openai.OpenAI(base_url=base, api_key=KEY, max_retries=0) as client, \
            client.responses.connect() as connection:
        connection.response.create(model="m", input="Hi")
        event = next(iter(connection)).to_dict()
    assert event["type"] == "error" and event["status"] == 429
    assert (event["error"]["type"], event["error"]["code"], event["error"]["param"]) == (
        "requests", "rate_limit_exceeded", None)
    assert journal(server, name)[0]["error"] == event["error"]


@pytest.mark.parametrize(("fault", "ended"), [
    ({"disconnect": {"mode": "reset", "after_events": 4}}, "reset"),
    ({"disconnect": {"mode": "close", "after_events": 4}}, "closed"),
    ({"truncate": 4}, "truncated"),
])
def test_a_stream_that_did_not_end_whole_is_not_journaled_completed(
        server: OrmockServer, fault: Json, ended: str) -> None:
    name, base = opened(server)
    server.engine(name).inject(fault)
    # the connection may be dropped: what the fault is for
    with httpx.Client(timeout=10) as http, contextlib.suppress(httpx.HTTPError):
        http.post(f"{base}/responses", json={"model": "m", "input": "Hi", "stream": True})
    wait_for(lambda: journal(server, name)[0]["finished_at"] is not None)
    (entry,) = journal(server, name)
    assert entry["ended"] == ended and len(entry["events"]) == 4
    # the last snapshot the client had (response.in_progress), not the planned completed
    assert entry["response_status"] == "in_progress"
    assert "response.completed" not in [e["type"] for e in entry["events"]]


def test_a_json_body_cut_short_has_no_response_status(server: OrmockServer) -> None:
    name, base = opened(server)
    server.engine(name).inject({"disconnect": "reset"})
    with httpx.Client(timeout=10) as http, pytest.raises(httpx.HTTPError):
        http.post(f"{base}/responses", json={"model": "m", "input": "Hi"})
    wait_for(lambda: journal(server, name)[0]["finished_at"] is not None)
    (entry,) = journal(server, name)
    assert entry["ended"] == "reset" and entry["response_status"] is None


def test_a_stream_the_client_left_is_journaled_as_the_store_keeps_it(
        server: OrmockServer) -> None:
    name, base = opened(server)
    server.engine(name).inject({"stall": {"seconds": 30, "after_events": 3}})
    with openai.OpenAI(base_url=base, api_key=KEY, max_retries=0, timeout=0.5) as client, \
            pytest.raises(openai.APITimeoutError):
        for _ in client.responses.create(model="m", input="Hi", stream=True):
            pass
    wait_for(lambda: journal(server, name)[0]["finished_at"] is not None)
    (entry,) = journal(server, name)
    assert entry["ended"] == "client gone" and entry["response_status"] == "cancelled"
    stored = httpx.get(f"{base}/responses/{entry['response_id']}",
                       headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    assert stored.json()["status"] == "cancelled"


def test_a_whole_stream_is_journaled_with_its_terminal_status(server: OrmockServer) -> None:
    name, base = opened(server)
    server.engine(name).inject({"vendor_event": {"every": 3}})
    with openai.OpenAI(base_url=base, api_key=KEY, max_retries=0) as client:
        list(client.responses.create(model="m", input="Hi", stream=True))
    (entry,) = journal(server, name)
    assert (entry["ended"], entry["response_status"]) == ("whole", "completed")


def test_prompt_cache_key_is_shown_and_a_secret_is_masked(server: OrmockServer) -> None:
    name, base = opened(server)
    secret = "sk-" + "proj-" + "a1b2c3d4e5f6g7h8i9j0"
    with openai.OpenAI(base_url=base, api_key=KEY, max_retries=0) as client:
        client.responses.create(model="m", input="Hi", prompt_cache_key="thread-01a2-b3c4",
                                safety_identifier="user-7",
                                extra_body={"api_key": "plain-credential",
                                            "note": f"my key is {secret}",
                                            "password": "hunter2",
                                            "secret": "a sentence about a secret"})
    body = journal(server, name)[0]["body"]
    assert body["prompt_cache_key"] == "thread-01a2-b3c4"
    assert body["safety_identifier"] == "user-7"
    assert body["api_key"] == "***" and body["password"] == "***"
    assert body["note"] == "my key is ***"
    assert body["secret"] == "a sentence about a secret"  # prose, no credential


@pytest.mark.parametrize(("name", "value", "secret"), [
    ("api_key", "plain-credential", True), ("x-api-key", "abcd", True),
    ("client_secret", "cs_123456", True), ("refresh_token", "rt_abcdef", True),
    ("password", "hunter2", True), ("authorization", "Bearer abcdefgh", True),
    ("prompt_cache_key", "01a245e6-5b65-7ec1-b252", False),
    ("idempotency_key", "k-12345678", False), ("next_page_token", "abcdefgh", False),
    ("password", "my password", False), ("api_key", "abc", False), ("api_key", 12345, False),
    ("api_key", None, False), ("model", "gpt-4o-mini", False), ("user", "alice1", False),
])
def test_a_body_field_is_a_secret_by_name_and_value_shape(name: str, value: Any,
                                                          secret: bool) -> None:
    assert is_secret_field(name, value) is secret
    assert (mask_json({name: value}) == {name: "***"}) is secret
