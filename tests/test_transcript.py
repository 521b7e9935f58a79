"""``ormock.scenario.transcript``: a served Response written back as a step's reply, and what
the scenario format cannot say named, never dropped."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from ormock.engine.core import Engine
from ormock.protocol.reply import Reply
from ormock.scenario.transcript import Inexpressible, needs_openai, reply_of


def served(scenario: str | None = None, **request: Any) -> dict[str, Any]:
    """The Response a fresh engine answers ``request`` with (through ``scenario`` if named)."""
    headers = {"x-ormock-scenario": scenario} if scenario else {}
    reply = Engine().respond({"model": "m", "input": "hi", **request}, headers)
    assert isinstance(reply, Reply)
    return copy.deepcopy(reply.response)


def test_each_item_kind_is_written_with_its_own_ids() -> None:
    response = served("vendor-item")
    reply = reply_of(response, "m")
    vendor, message = reply["items"]
    assert vendor["vendor_item"]["type"] == "acme:web_search_call"
    assert vendor["vendor_item"]["id"] == response["output"][0]["id"]
    assert message["message"]["id"] == response["output"][1]["id"]
    assert "model" not in reply and "status" not in reply  # the request's, and completed


def test_compact_arguments_become_a_mapping_and_others_stay_a_string() -> None:
    response = served("tool-call")
    call = reply_of(response, "m")["items"][0]["function_call"]
    assert call["arguments"] == {"location": "Paris", "unit": "celsius"}
    assert call["call_id"] == response["output"][0]["call_id"]
    response["output"][0]["arguments"] = '{"location": "Paris"}'  # not compact: kept as sent
    assert reply_of(response, "m")["items"][0]["function_call"]["arguments"] == \
        '{"location": "Paris"}'


def test_a_model_other_than_the_requests_is_named() -> None:
    assert reply_of(served(), "gpt-4o")["model"] == "m"


def break_logprobs(response: dict[str, Any]) -> None:
    response["output"][0]["content"][0]["logprobs"] = [{"token": "a", "logprob": -0.1}]


def break_annotation(response: dict[str, Any]) -> None:
    response["output"][0]["content"][0]["annotations"] = [
        {"type": "file_citation", "file_id": "file_1", "filename": "a.txt", "index": 0}]


def break_template(response: dict[str, Any]) -> None:
    response["output"][0]["content"][0]["text"] = "use {{ name }} here"


def break_item_status(response: dict[str, Any]) -> None:
    response["output"][0]["status"] = "in_progress"


def break_total(response: dict[str, Any]) -> None:
    response["usage"]["total_tokens"] += 1


def break_role(response: dict[str, Any]) -> None:
    response["output"][0]["role"] = "system"


def break_status(response: dict[str, Any]) -> None:
    response["status"] = "queued"


@pytest.mark.parametrize(("change", "named"), [
    (break_logprobs, "output[0].content[0] carries logprobs"),
    (break_annotation, "output[0].content[0].annotations[0] is a file_citation annotation"),
    (break_template, "output[0].content[0].text holds '{{'"),
    (break_item_status, "output[0].status is \"in_progress\""),
    (break_total, "usage.total_tokens is"),
    (break_role, "output[0].role is \"system\""),
    (break_status, "the response's status is 'queued'"),
])
def test_what_a_step_cannot_say_is_named(change: Any, named: str) -> None:
    response = served()
    change(response)
    with pytest.raises(Inexpressible, match="^" + re.escape(named)):
        reply_of(response, "m")


def test_a_hosted_tool_item_is_written_back_as_an_item_of_its_type() -> None:
    response = served()
    call = {"id": "ci_1", "type": "code_interpreter_call", "status": "completed",
            "code": "1+1", "container_id": "cntr_1", "outputs": [{"type": "logs", "logs": "2"}]}
    response["output"].insert(0, call)
    reply = reply_of(response, "m")
    assert reply["items"][0] == {"code_interpreter_call": {
        "id": "ci_1", "code": "1+1", "container_id": "cntr_1",
        "outputs": [{"type": "logs", "logs": "2"}]}}
    assert needs_openai(reply)


def test_an_item_type_a_step_cannot_hold_is_refused_naming_them() -> None:
    response = served()
    response["output"].insert(0, {"id": "pg_1", "type": "program", "call_id": "c",
                                  "code": "1", "fingerprint": "f"})
    with pytest.raises(Inexpressible) as refused:
        reply_of(response, "m")
    assert str(refused.value).startswith("output[0] is a program item")
    assert "message, function_call, reasoning" in str(refused.value)
