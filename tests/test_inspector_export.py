"""A JSON answer exported as a scenario step (``GET /_ormock/journal/{id}/export?as=scenario``,
``ormock journal export ID --as scenario``): its output items, usage and status, or its HTTP
error as an ``http_error`` fault; loaded into a fresh server, the same request gets the same
answer. What a step cannot say is refused by name."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import yaml

from ormock import OrmockServer
from ormock.cli import main
from ormock.protocol.profile import get_profile
from ormock.scenario import load_scenario

_names = itertools.count()
WEATHER_TOOL: Any = {"type": "function", "name": "get_weather", "description": "The weather.",
                     "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                    "required": ["city"]}}
# what a step's reply decides in a Response (the rest echoes the request, or is drawn anew)
SAID = ("status", "output", "usage", "incomplete_details", "error", "model")
# the headers an error answer sets itself
ERROR_HEADERS = ("retry-after", "retry-after-ms", "x-should-retry", "x-ratelimit-limit-requests",
                 "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests")


def namespace(server: OrmockServer) -> str:
    name = f"export{next(_names)}"
    server.namespaces.open(name)
    return name


def sdk(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="sk-" + "test", max_retries=0)


def last_entry(server: OrmockServer, ns: str) -> str:
    data = httpx.get(f"{server.url}/{ns}/_ormock/journal", timeout=10).json()["data"]
    return str(data[-1]["id"])


def export(server: OrmockServer, ns: str, entry_id: str) -> httpx.Response:
    return httpx.get(f"{server.url}/{ns}/_ormock/journal/{entry_id}/export",
                     params={"as": "scenario"}, timeout=10)


def load(server: OrmockServer, text: str) -> str:
    """A fresh namespace of ``server`` with the exported scenario loaded; its name."""
    fresh = namespace(server)
    loaded = httpx.post(f"{server.url}/{fresh}/_ormock/scenarios", content=text, timeout=10,
                        headers={"content-type": "application/yaml"})
    assert loaded.status_code == 201, loaded.text
    return fresh


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_text_answer_exports_as_items_that_replay_the_same_output(
        server: OrmockServer) -> None:
    ns = namespace(server)
    original = sdk(f"{server.url}/{ns}/v1").responses.create(model="gpt-4o-mini", input="hi")
    exported = export(server, ns, last_entry(server, ns))
    assert exported.status_code == 200, exported.text
    step = yaml.safe_load(exported.text)["steps"][0]
    assert step["match"] == {"model": "gpt-4o-mini"} and "sse" not in step["reply"]
    assert [next(iter(item)) for item in step["reply"]["items"]] == ["message"]
    fresh = load(server, exported.text)
    again = sdk(f"{server.url}/{fresh}/v1").responses.create(model="gpt-4o-mini", input="hi")
    assert again.output_text == original.output_text != ""
    assert [o.type for o in again.output] == [o.type for o in original.output] == ["message"]
    assert again.usage == original.usage
    answered = httpx.get(f"{server.url}/{fresh}/_ormock/journal", timeout=10).json()["data"]
    assert answered[-1]["answered_by"]["scenario"].startswith("exported-e")


def test_a_function_call_exported_by_the_cli_replays_the_same_call(
        capsys: pytest.CaptureFixture[str], server: OrmockServer, tmp_path: Path) -> None:
    ns = namespace(server)
    weather = tmp_path / "weather.yaml"
    weather.write_text(
        "name: weather\nsteps:\n  - match: {tools: [get_weather]}\n    times: forever\n"
        "    reply:\n      items:\n        - function_call: {name: get_weather, arguments: "
        "{city: Paris}}\n      usage: {input_tokens: 40, cached_tokens: 8}\n",
        encoding="utf-8")
    server.engine(ns).use(str(weather))
    ask: dict[str, Any] = {"model": "gpt-4o-mini", "input": "Weather in Paris?",
                           "tools": [WEATHER_TOOL]}
    original = sdk(f"{server.url}/{ns}/v1").responses.create(**ask)
    code, out, err = run(capsys, "journal", "export", last_entry(server, ns), "--as",
                         "scenario", "--url", server.url)
    assert code == 0, err
    reply = yaml.safe_load(out)["steps"][0]["reply"]
    assert reply["items"][0]["function_call"]["arguments"] == {"city": "Paris"}
    assert reply["usage"]["cached_tokens"] == 8
    with OrmockServer() as fresh:
        fresh.engine().use(load_scenario(out))
        again = sdk(f"{fresh.url}/v1").responses.create(**ask)
    call, first = again.output[0], original.output[0]
    assert call.type == first.type == "function_call"
    assert (call.name, call.arguments, call.call_id) == (first.name, first.arguments,
                                                          first.call_id)
    assert again.usage == original.usage
    assert again.usage is not None and again.usage.input_tokens_details.cached_tokens == 8


def test_a_reasoning_answer_exports_its_reasoning_item(server: OrmockServer) -> None:
    ns = namespace(server)
    ask: dict[str, Any] = {"model": "o4-mini", "input": "Why is the sky blue?",
                           "reasoning": {"effort": "low"}}
    original = sdk(f"{server.url}/{ns}/v1").responses.create(**ask)
    assert [o.type for o in original.output] == ["reasoning", "message"]
    exported = export(server, ns, last_entry(server, ns))
    assert exported.status_code == 200, exported.text
    again = sdk(f"{server.url}/{load(server, exported.text)}/v1").responses.create(**ask)
    assert [o.model_dump() for o in again.output] == [o.model_dump() for o in original.output]
    assert again.output_text == original.output_text
    assert again.usage == original.usage and again.usage is not None
    assert again.usage.output_tokens_details.reasoning_tokens > 0


def test_an_answer_cut_short_exports_its_status_and_reason(server: OrmockServer) -> None:
    ns = namespace(server)
    ask: dict[str, Any] = {"model": "m", "input": "Tell me a long story.",
                           "max_output_tokens": 16}
    original = sdk(f"{server.url}/{ns}/v1").responses.create(**ask)
    assert original.status == "incomplete"
    exported = export(server, ns, last_entry(server, ns))
    reply = yaml.safe_load(exported.text)["steps"][0]["reply"]
    assert (reply["status"], reply["incomplete_reason"]) == ("incomplete", "max_output_tokens")
    again = sdk(f"{server.url}/{load(server, exported.text)}/v1").responses.create(**ask)
    assert again.incomplete_details == original.incomplete_details
    assert again.output == original.output and again.usage == original.usage


@pytest.mark.parametrize("scenario", [
    "text", "tool-call", "parallel-tool-calls", "reasoning", "refusal", "annotations",
    "json-output", "vendor-item", "incomplete", "content-filtered", "vendor-events",
    "failed-midstream", "rate-limited", "server-error", "overloaded"])
def test_every_catalogue_json_answer_exports_as_a_step_that_answers_the_same(
        server: OrmockServer, scenario: str) -> None:
    ns = namespace(server)
    ask = {"model": "m", "input": "hi", "tools": [WEATHER_TOOL]}
    original = httpx.post(f"{server.url}/{ns}/v1/responses", json=ask, timeout=10,
                          headers={"x-ormock-scenario": scenario})
    exported = export(server, ns, last_entry(server, ns))
    assert exported.status_code == 200, exported.text
    again = httpx.post(f"{server.url}/{load(server, exported.text)}/v1/responses", json=ask,
                       timeout=10)
    assert again.status_code == original.status_code
    if original.status_code != 200:  # an HTTP error: the same envelope and headers
        assert again.json() == original.json()
        assert [again.headers.get(h) for h in ERROR_HEADERS] == \
            [original.headers.get(h) for h in ERROR_HEADERS]
        return
    assert {k: again.json()[k] for k in SAID} == {k: original.json()[k] for k in SAID}


def test_an_http_error_exports_as_an_http_error_fault_the_sdk_sees_alike(
        server: OrmockServer) -> None:
    ns = namespace(server)
    with pytest.raises(openai.RateLimitError) as original:
        sdk(f"{server.url}/{ns}/v1").responses.create(
            model="m", input="hi", extra_headers={"x-ormock-scenario": "rate-limited"})
    exported = export(server, ns, last_entry(server, ns))
    fault = yaml.safe_load(exported.text)["steps"][0]["reply"]["faults"][0]["http_error"]
    assert (fault["status"], fault["retry_after_ms"]) == (429, 20)
    with pytest.raises(openai.RateLimitError) as again:
        sdk(f"{server.url}/{load(server, exported.text)}/v1").responses.create(
            model="m", input="hi")
    assert again.value.message == original.value.message
    assert again.value.code == original.value.code == "rate_limit_exceeded"
    assert again.value.response.headers["retry-after-ms"] == "20"


def test_an_item_a_step_cannot_hold_is_refused_by_name(
        capsys: pytest.CaptureFixture[str], server: OrmockServer) -> None:
    ns = namespace(server)
    httpx.post(f"{server.url}/{ns}/v1/responses", json={"model": "m", "input": "hi"}, timeout=10)
    cassette = yaml.safe_load(httpx.get(
        f"{server.url}/{ns}/_ormock/journal/{last_entry(server, ns)}/export",
        params={"as": "cassette"}, timeout=10).text)
    answer = cassette["interactions"][0]["response"]
    del answer["chunks"]  # the body is edited below
    answer["body"]["json"]["output"] = [{"id": "pg_1", "type": "program", "call_id": "c",
                                         "code": "1", "fingerprint": "f"}]
    replayed = namespace(server)
    httpx.post(f"{server.url}/{replayed}/_ormock/cassettes", content=yaml.safe_dump(cassette),
               headers={"content-type": "application/yaml"}, timeout=10)
    sent = httpx.post(f"{server.url}/{replayed}/v1/responses", timeout=10,
                      json={"model": "m", "input": "hi"})
    assert sent.json()["output"][0]["type"] == "program"
    entry_id = last_entry(server, replayed)
    refused = export(server, replayed, entry_id)
    assert refused.status_code == 409 and refused.json()["error"]["param"] == "as"
    message = refused.json()["error"]["message"]
    assert "output[0] is a program item" in message and "as=cassette" in message
    code, _, err = run(capsys, "journal", "export", entry_id, "--url", server.url)
    assert code == 2 and "program" in err


def test_a_hosted_tool_answer_exports_as_a_step_of_the_openai_profile(
        server: OrmockServer) -> None:
    ns = namespace(server)
    server.engine(ns).profile = get_profile("openai")
    body = {"model": "m", "input": "Search the web for ducks",
            "tools": [{"type": "web_search"}], "tool_choice": "required"}
    served = httpx.post(f"{server.url}/{ns}/v1/responses", json=body, timeout=10).json()
    exported = export(server, ns, last_entry(server, ns))
    assert exported.status_code == 200, exported.text
    document = yaml.safe_load(exported.text)
    assert document["profile"] == "openai"
    items = document["steps"][0]["reply"]["items"]
    assert [next(iter(item)) for item in items] == ["web_search_call", "message"]
    again = load(server, exported.text)
    replayed = httpx.post(f"{server.url}/{again}/v1/responses", json=body, timeout=10).json()
    assert replayed["output"] == served["output"]


@pytest.mark.parametrize("scenario", ["malformed-json", "truncated"])
def test_a_json_body_a_fault_cut_is_refused(server: OrmockServer, scenario: str) -> None:
    ns = namespace(server)
    httpx.post(f"{server.url}/{ns}/v1/responses", json={"model": "m", "input": "hi"},
               headers={"x-ormock-scenario": scenario}, timeout=10)
    refused = export(server, ns, last_entry(server, ns))
    assert refused.status_code == 409
    assert "not whole JSON" in refused.json()["error"]["message"]
