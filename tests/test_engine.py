"""``ormock.engine.core.Engine`` in process: answering a request, continuing a chain,
``store: false``, the journal entry of each request, and ``reset``. Only ``respond(body,
headers)``, the journal, the store and the final Response of a reply are used."""

from __future__ import annotations

from typing import Any

import pytest

from ormock import Engine, OpenResponsesError, Reply
from ormock.engine.limits import Limits

Json = dict[str, Any]
GOOD = "name: good\nsteps:\n  - times: forever\n    reply:\n      items:\n        - message: hi\n"


def final(reply: object) -> Json:
    """The Response a reply ends with (what a non-streamed request gets)."""
    assert isinstance(reply, Reply)
    response: Json = reply.response
    return response


def text_of(response: Json) -> str:
    return "".join(part["text"] for item in response["output"] if item["type"] == "message"
                   for part in item["content"] if part["type"] == "output_text")


def test_an_answer_is_a_completed_response_echoing_the_request() -> None:
    engine = Engine(seed=0)
    response = final(engine.respond({"model": "gpt-5", "input": "Hello", "instructions": "Hi",
                                     "metadata": {"k": "v"}}, {}))
    assert response["object"] == "response" and response["status"] == "completed"
    assert response["model"] == "gpt-5" and response["instructions"] == "Hi"
    assert response["metadata"] == {"k": "v"} and response["store"] is True
    assert response["id"].startswith("resp_") and text_of(response)
    assert response["usage"]["total_tokens"] == (response["usage"]["input_tokens"]
                                                 + response["usage"]["output_tokens"])
    assert response["id"] in engine.responses


def test_the_same_seed_answers_the_same() -> None:
    body = {"model": "m", "input": "What is the weather in Paris?"}
    first, again = final(Engine(seed=4).respond(body, {})), final(Engine(seed=4).respond(body, {}))
    other = final(Engine(seed=5).respond(body, {}))
    assert first == again
    assert other["id"] != first["id"]


def test_a_continuation_builds_on_the_stored_response() -> None:
    engine = Engine()
    first = final(engine.respond({"model": "gpt-5", "input": "One"}, {}))
    second = final(engine.respond({"previous_response_id": first["id"], "input": "Two"}, {}))
    assert second["previous_response_id"] == first["id"]
    assert second["model"] == "gpt-5"  # a continuation without a model keeps the parent's
    assert second["usage"]["input_tokens"] > first["usage"]["input_tokens"]
    stored = engine.responses[second["id"]]
    assert [i.get("content") for i in stored.context if i["type"] == "message"
            and i["role"] == "user"] == ["One", "Two"]
    assert stored.context[1] == first["output"][0]


def test_store_false_is_answered_but_not_kept() -> None:
    engine = Engine()
    response = final(engine.respond({"model": "m", "input": "x", "store": False}, {}))
    assert response["store"] is False and response["status"] == "completed"
    assert response["id"] not in engine.responses
    with pytest.raises(OpenResponsesError) as raised:
        engine.respond({"model": "m", "previous_response_id": response["id"]}, {})
    assert (raised.value.code, raised.value.param, raised.value.status) == (
        "previous_response_not_found", "previous_response_id", 400)
    entry = engine.journal[-1]
    assert entry.status == 400 and entry.error is not None
    assert entry.error["code"] == "previous_response_not_found"
    assert entry.response_id is None


def test_journal_entry_fields() -> None:
    engine = Engine()
    body = {"model": "m", "input": "Hello", "stream": True}
    reply = engine.respond(body, {"authorization": "Bearer sk-secret-123456",  # as ASGI has them
                                  "x-ormock-scenario": "text", "x-trace": "t1"})
    (entry,) = engine.journal
    assert (entry.method, entry.path, entry.status, entry.stream) == (
        "POST", "/v1/responses", 200, True)
    assert entry.body == body and entry.json == body
    assert entry.size > 0 and entry.at >= 0
    assert (entry.scenario, entry.step) == ("text", 1)
    assert entry.response_id == final(reply)["id"] and entry.response_status == "completed"
    assert entry.headers["x-trace"] == "t1"
    assert "sk-secret-123456" not in entry.headers["authorization"]
    assert entry.faults == [] and entry.ended == "whole" and entry.error is None
    types = [e["type"] for e in entry.events]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert [e["sequence_number"] for e in entry.events] == list(range(len(types)))
    assert all(e["offset_ms"] == 0.0 for e in entry.events)
    assert entry.output_ids == [item["id"] for item in final(reply)["output"]]
    data = entry.to_dict()
    assert data["events"] == entry.events and data["output_ids"] == entry.output_ids
    assert "sent" not in data and data["headers"] == entry.headers


def test_an_invalid_request_is_journaled_with_its_error() -> None:
    engine = Engine()
    with pytest.raises(OpenResponsesError) as raised:
        engine.respond({"model": "m", "temperature": 9}, {})
    assert raised.value.param == "temperature"
    (entry,) = engine.journal
    assert entry.status == 400 and entry.error == raised.value.envelope()["error"]


def test_an_unknown_scenario_header_is_a_400() -> None:
    engine = Engine()
    with pytest.raises(OpenResponsesError) as raised:
        engine.respond({"model": "m", "input": "x"}, {"x-ormock-scenario": "txet"})
    assert (raised.value.code, raised.value.param) == ("unknown_scenario", "x-ormock-scenario")


def test_a_loaded_scenario_answers_and_is_journaled() -> None:
    engine = Engine()
    scenario = engine.use(GOOD)
    assert scenario.name == "good"
    assert text_of(final(engine.respond({"model": "m", "input": "x"}, {}))) == "hi"
    assert (engine.journal[-1].scenario, engine.journal[-1].step) == ("good", 1)


def test_reset_starts_over() -> None:
    engine = Engine(seed=1)
    engine.use(GOOD)
    first = final(engine.respond({"model": "m", "input": "x"}, {}))
    engine.reset(scenarios=False)  # keeps the scenarios, with fresh counters
    assert list(engine.journal) == [] and len(engine.responses) == 0
    again = final(engine.respond({"model": "m", "input": "x"}, {}))
    assert again == first  # the same ids and clock: a fresh start
    engine.reset()
    assert not engine.scenarios.scenarios
    assert text_of(final(engine.respond({"model": "m", "input": "x"}, {}))) != "hi"


def test_limits_cap_the_journal_and_the_store() -> None:
    engine = Engine(limits=Limits(journal_entries=4, store_responses=2))
    ids = [final(engine.respond({"model": "m", "input": str(n)}, {}))["id"] for n in range(6)]
    assert len(engine.journal) <= 4 and engine.journal[-1].response_id == ids[-1]
    assert list(engine.responses) == ids[-2:]
