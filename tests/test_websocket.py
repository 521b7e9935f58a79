"""WebSocket mode with the openai SDK's ``client.responses.connect()``."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from ormock import check_stream

# what the server writes: run again without the cork of ormock.server.http_protocol
# (ORMOCK_HTTP_CORK=0) by `make test`
pytestmark = pytest.mark.wire


def _turn(connection: Any) -> list[Any]:
    """Events up to and including the terminal one (or an error)."""
    events = []
    for event in connection:
        events.append(event)
        if event.type in ("response.completed", "response.incomplete", "response.failed",
                          "error"):
            return events
    return events


def test_turns_on_one_connection_stream_the_same_events(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        connection.response.create(model="m", input="Count to three.")
        first = _turn(connection)
        connection.response.create(model="m", input="Count to three.")
        second = _turn(connection)
    assert first[0].type == "response.created" and first[-1].type == "response.completed"
    report = check_stream([e.to_dict() for e in first])
    assert report.ok, report.violations
    # the same request gets the same content under a new id
    assert first[-1].response.output_text == second[-1].response.output_text
    assert first[-1].response.id != second[-1].response.id


def test_store_false_continues_on_its_connection_only(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        connection.response.create(model="m", input="Remember: cobalt.", store=False)
        first = _turn(connection)[-1].response
        connection.response.create(model="m", input="Which word?", store=False,
                                   previous_response_id=first.id)
        assert _turn(connection)[-1].type == "response.completed"
    with client.responses.connect() as other:
        other.response.create(model="m", input="Which word?", previous_response_id=first.id)
        error = _turn(other)[-1]
    assert error.type == "error"
    assert error.to_dict()["error"]["code"] == "previous_response_not_found"


def test_bad_request_keeps_the_connection_open(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        connection.response.create(model="m", input="x", max_output_tokens=4)
        error = _turn(connection)[-1]
        assert error.type == "error"
        details: dict[str, Any] = error.to_dict()
        assert details["status"] == 400
        assert details["error"]["param"] == "max_output_tokens"
        connection.response.create(model="m", input="again")
        assert _turn(connection)[-1].type == "response.completed"


@pytest.mark.parametrize("store", [True, False])
def test_a_failed_continuation_evicts_the_parent(client: openai.OpenAI, store: bool) -> None:
    with client.responses.connect() as connection:
        connection.response.create(model="m", input="Remember: ember.", store=store)
        first = _turn(connection)[-1].response
        connection.response.create(
            model="m", previous_response_id=first.id,
            input=[{"type": "function_call_output", "call_id": "call_missing", "output": "x"}],
        )
        assert _turn(connection)[-1].type == "error"
        connection.response.create(model="m", previous_response_id=first.id, input="stale?")
        last = _turn(connection)[-1]
    # a stored parent is still there for everyone; a connection-cached one is gone
    assert last.type == ("response.completed" if store else "error")


def test_background_is_refused_over_websocket(client: openai.OpenAI) -> None:
    # OpenAI's WebSocket mode: "background is not supported over WebSocket" (its reference of
    # the response.create client event); the connection stays open
    with client.responses.connect() as connection:
        connection.response.create(model="m", input="x", background=True)
        error = _turn(connection)[-1]
        assert error.type == "error"
        details: dict[str, Any] = error.to_dict()
        assert details["status"] == 400
        assert (details["error"]["code"], details["error"]["param"]) == (
            "unsupported_parameter", "background")
        connection.response.create(model="m", input="again", background=False)
        assert _turn(connection)[-1].type == "response.completed"
