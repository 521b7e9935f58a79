"""A scenario step is used up only by an answer delivered whole: an attempt a fault ended (an
HTTP error, a failed, cut or stalled stream, a client that left a faulted stream) leaves the step
to the retry, for a step's own ``when:`` faults, server-wide faults and chaos alike; a step with
``count_faulted: true`` keeps the strict count. Driven by the openai SDK's own retries against a
real server, with a strict multi-step scenario (``order: sequence``, each step once)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

from ormock import Engine, OrmockServer

KEY = "sk-" + "test"
Json = dict[str, Any]
TOOL: Json = {"type": "function", "name": "echo", "description": "Run a command.",
              "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}},
                             "required": ["cmd"]}}


def loop(faults: list[Json] | None = None, **step: Any) -> Json:
    """A strict two-step loop: a tool call (with ``faults`` and the ``step`` keys), then the
    final answer matched on the call's output."""
    first: Json = {"name": "call", "reply": {"items": [{"function_call": {
        "name": "echo", "arguments": {"cmd": "echo hi"}, "call_id": "call_echo"}}],
        "faults": faults or []}, **step}
    return {"name": "echo-loop", "order": "sequence", "steps": [
        first,
        {"name": "final", "match": {"function_call_output": "call_echo"},
         "reply": {"items": [{"message": "The command said hi."}]}},
    ]}


def namespace_of(base_url: str) -> str:
    return base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]


@pytest.fixture
def engine(server: OrmockServer, base_url: str) -> Engine:
    return server.engine(namespace_of(base_url))


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the server never got there"
        time.sleep(0.01)


def finish(client: openai.OpenAI, call: Any) -> openai.types.responses.Response:
    return client.responses.create(model="gpt-4o-mini", tools=[TOOL], input=[
        {"type": "function_call", "call_id": call.call_id, "name": call.name,
         "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "hi"}])


@pytest.mark.parametrize("where", ["step", "server", "chaos"])
def test_the_sdk_retry_of_an_http_error_gets_the_step(where: str, base_url: str,
                                                      engine: Engine) -> None:
    fault: Json = {"http_error": {"status": 500}, "when": {"first": 1}}
    scenario = loop([fault] if where == "step" else None)
    if where == "chaos":  # every request draws a 500 until the seed says otherwise
        scenario["chaos"] = {"rate": 0.5, "seed": 3, "faults": ["http_error:500"]}
    engine.use(scenario)
    if where == "server":
        engine.inject(fault)
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=5) as client:
        first = client.responses.create(model="gpt-4o-mini", input="Say hi", tools=[TOOL])
        (call,) = first.output
        assert call.type == "function_call" and call.call_id == "call_echo"
        assert finish(client, call).output_text == "The command said hi."
    statuses = [e.status for e in engine.journal]
    assert 500 in statuses and statuses[-1] == 200
    assert [e.step_used for e in engine.journal] == [s == 200 for s in statuses]
    assert [e.step for e in engine.journal if e.status == 200] == [1, 2]
    assert engine.scenarios.unused() == []


@pytest.mark.parametrize("fault", [
    {"disconnect": {"mode": "reset", "after_events": 3}},
    {"disconnect": {"mode": "close", "after_events": 3}},
    {"fail_midstream": {"after_events": 3}},
    {"truncate": 3},
    {"stall": {"after_events": 3}},
], ids=["reset", "close", "fail_midstream", "truncate", "stall"])
def test_a_stream_cut_by_a_fault_leaves_the_step_to_the_retry(fault: Json, base_url: str,
                                                              engine: Engine) -> None:
    engine.use(loop([{**fault, "when": {"first": 1}}]))
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0, timeout=1.0) as client:
        seen: list[str] = []
        with pytest.raises(openai.APIError) if "truncate" not in fault else _nothing():
            for event in client.responses.create(model="gpt-4o-mini", input="Say hi",
                                                 tools=[TOOL], stream=True):
                seen.append(event.type)
        assert "response.completed" not in seen
        wait_for(lambda: engine.journal[0].finished_at is not None or "stall" not in fault)
        # the client sends the turn again, as an agent does after a broken stream
        again = client.responses.create(model="gpt-4o-mini", input="Say hi", tools=[TOOL])
        (call,) = again.output
        assert finish(client, call).output_text == "The command said hi."
    first = engine.journal[0]
    assert first.step == 1 and first.step_used is False and first.faults
    assert [(e.step, e.step_used) for e in engine.journal[1:]] == [(1, True), (2, True)]
    assert engine.scenarios.unused() == []


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_a_client_that_leaves_a_stalled_stream_leaves_the_step(base_url: str,
                                                                engine: Engine) -> None:
    # a finite stall the client does not wait for: only the writer can tell it left
    engine.use(loop([{"stall": {"seconds": 30, "after_events": 2}, "when": {"first": 1}}]))
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0, timeout=0.5) as client:
        with pytest.raises(openai.APITimeoutError):
            for _ in client.responses.create(model="gpt-4o-mini", input="Say hi",
                                             tools=[TOOL], stream=True):
                pass
        wait_for(lambda: engine.journal[0].finished_at is not None)
        assert engine.journal[0].ended == "client gone"
        assert engine.journal[0].step_used is False
        (call,) = client.responses.create(model="gpt-4o-mini", input="Say hi",
                                          tools=[TOOL]).output
        assert finish(client, call).output_text == "The command said hi."
    assert engine.scenarios.unused() == []


def test_count_faulted_keeps_the_strict_count(base_url: str, engine: Engine) -> None:
    engine.use(loop([{"http_error": 500, "when": {"first": 1}}], count_faulted=True))
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=1) as client, \
            pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="gpt-4o-mini", input="Say hi", tools=[TOOL])
    assert "step 2 (final)" in refused.value.message
    assert [(e.status, e.step_used) for e in engine.journal] == [(500, True), (400, None)]


def test_count_faulted_must_be_a_boolean(engine: Engine) -> None:
    with pytest.raises(ValueError, match="count_faulted"):
        engine.use(loop(count_faulted="yes"))


def test_a_scripted_failure_is_an_answer_and_uses_its_step(base_url: str,
                                                           engine: Engine) -> None:
    # no fault: the step's own ``status: failed`` is what the scenario answers
    engine.use({"name": "flaky", "order": "sequence", "steps": [
        {"reply": {"status": "failed"}}, {"reply": {"items": [{"message": "Fine now."}]}}]})
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        with pytest.raises(openai.APIError, match="failed to produce"):
            for _ in client.responses.create(model="m", input="Hi", stream=True):
                pass
        assert client.responses.create(model="m", input="Hi").output_text == "Fine now."
    assert [(e.response_status, e.step_used) for e in engine.journal] == [
        ("failed", True), ("completed", True)]


def test_a_fault_that_leaves_the_answer_whole_uses_the_step(base_url: str,
                                                            engine: Engine) -> None:
    engine.use(loop([{"vendor_event": {"type": "acme:trace", "every": 3}}]))
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        kinds = [e.type for e in client.responses.create(model="gpt-4o-mini", input="Say hi",
                                                         tools=[TOOL], stream=True)]
        assert "acme:trace" in kinds and kinds[-1] == "response.completed"
        with pytest.raises(openai.BadRequestError, match="step 2"):
            client.responses.create(model="gpt-4o-mini", input="Say hi", tools=[TOOL])
    assert engine.journal[0].faults == ["vendor_event"] and engine.journal[0].step_used


def test_a_request_refused_after_the_choice_uses_no_step(base_url: str, engine: Engine) -> None:
    # the platform profile refuses store: false once the step is chosen
    engine.use({**loop(), "profile": "platform"})
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        with pytest.raises(openai.BadRequestError, match="store"):
            client.responses.create(model="gpt-4o-mini", input="Say hi", store=False)
        first = client.responses.create(model="gpt-4o-mini", input="Say hi")
    assert first.output[0].type == "function_call"
    assert [(e.status, e.step, e.step_used) for e in engine.journal] == [
        (400, None, None), (200, 1, True)]


def test_the_strict_count_example_of_the_docs(base_url: str, engine: Engine) -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "faults.md").read_text()
    (example,) = [b for b in re.findall(r"^```yaml\n(.*?)^```$", docs, re.S | re.M)
                  if "name: strict-count" in b]
    engine.use(example)
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=1) as client:
        assert client.responses.create(model="m", input="Hi").output_text == "Second."
    assert [(e.status, e.step, e.step_used) for e in engine.journal] == [
        (500, 1, True), (200, 2, True)]


def _turn(connection: Any) -> list[Any]:
    """A WebSocket turn's events, up to its terminal event or an error."""
    events = []
    for event in connection:
        events.append(event)
        if event.type in ("response.completed", "response.failed", "error"):
            break
    return events


def test_over_websocket_a_warm_up_and_a_500_use_no_step(base_url: str, engine: Engine) -> None:
    engine.use(loop([{"http_error": 500, "when": {"first": 1}}]))
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client, \
            client.responses.connect() as connection:
        # Codex's warm-up: state prepared, nothing generated, no step used
        connection.response.create(model="gpt-4o-mini", input="Say hi", tools=[TOOL],
                                   store=False, generate=False)
        warm = _turn(connection)[-1]
        assert warm.type == "response.completed" and warm.response.output == []
        connection.response.create(model="gpt-4o-mini", input="Say hi", tools=[TOOL],
                                   store=False, previous_response_id=warm.response.id)
        failed = _turn(connection)[-1]
        assert failed.type == "error" and failed.to_dict()["status"] == 500
        connection.response.create(model="gpt-4o-mini", input="Say hi", tools=[TOOL],
                                   store=False, previous_response_id=warm.response.id)
        called = _turn(connection)[-1].response
        (call,) = called.output
        connection.response.create(model="gpt-4o-mini", tools=[TOOL], store=False,
                                   previous_response_id=called.id, input=[
                                       {"type": "function_call_output",
                                        "call_id": call.call_id, "output": "hi"}])
        assert _turn(connection)[-1].response.output_text == "The command said hi."
    assert [(e.status, e.step, e.step_used) for e in engine.journal] == [
        (200, None, None), (500, 1, False), (200, 1, True), (200, 2, True)]
    assert engine.scenarios.unused() == []
