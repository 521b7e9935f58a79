"""Profiles: the openai profile's spellings pass the openai SDK's strict validation."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import openai
import pytest

from ormock import OrmockServer, check_stream
from ormock.protocol.profile import get_profile

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
          "additionalProperties": False}


@pytest.fixture(scope="module")
def openai_server() -> Iterator[OrmockServer]:
    with OrmockServer(profile="openai", self_check=True) as server:
        yield server


def _strict(server: OrmockServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0,
                         _strict_response_validation=True)


def test_reasoning_text_streams_under_strict_validation(openai_server: OrmockServer) -> None:
    client = _strict(openai_server)
    events = list(client.responses.create(model="ormock:reasoning", input="Why?", stream=True))
    types = [e.type for e in events]
    assert "response.reasoning_text.delta" in types and "response.reasoning.delta" not in types
    assert events[-1].type == "response.completed"
    assert [o.type for o in events[-1].response.output] == ["reasoning", "message"]


def test_json_schema_is_echoed_for_strict_clients(openai_server: OrmockServer) -> None:
    response = _strict(openai_server).responses.create(
        model="m", input="A city.",
        text={"format": {"type": "json_schema", "name": "city", "schema": SCHEMA,
                         "strict": True}},
    )
    assert response.to_dict()["text"]["format"]["schema"] == SCHEMA
    assert set(json.loads(response.output_text)) == {"city"}


def test_the_checker_reads_a_profile(openai_server: OrmockServer) -> None:
    with httpx.Client(base_url=openai_server.base_url) as raw:
        body = raw.post("/responses", json={"model": "ormock:reasoning", "input": "x",
                                            "stream": True}).content
    assert check_stream(body, profile="openai").ok
    assert "unknown-event" in check_stream(body).rules


def test_the_default_profile_keeps_the_open_responses_names(http: httpx.Client) -> None:
    body = http.post("/responses", json={"model": "ormock:reasoning", "input": "x",
                                         "stream": True}).content
    assert b"event: response.reasoning.delta\n" in body
    assert check_stream(body).ok


def test_unknown_profiles_are_refused() -> None:
    with pytest.raises(ValueError, match="use one of openresponses, openai"):
        get_profile("anthropic")


pytest_plugins = ["pytester"]


def test_the_pytest_plugin_takes_a_profile(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\normock_profile = openai\n")
    pytester.makepyfile("""
        def test_strict(ormock):
            client = ormock.openai(_strict_response_validation=True)
            events = list(client.responses.create(model="ormock:reasoning", input="x",
                                                  stream=True))
            assert "response.reasoning_text.delta" in [e.type for e in events]
    """)
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)
    pytester.makeini("[pytest]\normock_profile = anthropic\n")
    result = pytester.runpytest()
    result.stderr.fnmatch_lines(
        ["*ini option ormock_profile: unknown profile 'anthropic': use one of*"])


def test_accepts_all_is_each_profiles_own_found_once() -> None:
    from dataclasses import replace

    spec = get_profile("openresponses")
    assert spec.accepts_all and spec.accepts_all  # the second read: the value kept
    stored_only = replace(spec, unstored=False)
    assert not stored_only.accepts_all and spec.accepts_all
    assert not get_profile("platform").accepts_all


def test_respells_errors_is_kept_per_profile_and_made_anew_for_a_changed_one() -> None:
    from dataclasses import replace

    from ormock.protocol.profile import get_profile

    plain = get_profile("openai")
    assert plain.respells_errors is False and plain.respells_errors is False  # read again
    spelled = replace(plain, error_types={"invalid_request_error": "bad_request"})
    assert spelled.respells_errors is True and plain.respells_errors is False
    assert spelled == replace(plain, error_types={"invalid_request_error": "bad_request"})
