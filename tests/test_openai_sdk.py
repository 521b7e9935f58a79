"""The real openai SDK against a real ormock server: create, stream, the stream helper, async."""

from __future__ import annotations

import asyncio
import json

import jsonschema
import openai
import pytest

# what the server writes: run again without the cork of ormock.server.http_protocol
# (ORMOCK_HTTP_CORK=0) by `make test`
pytestmark = pytest.mark.wire

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a location",
    "parameters": {
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["location"],
        "additionalProperties": False,
    },
}
TIME = {
    "type": "function",
    "name": "get_time",
    "description": "Get the local time in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "hour24": {"type": "boolean"}},
        "required": ["city"],
    },
}


def test_create_returns_a_completed_text_response(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o-mini", input="Say hello.")
    assert response.status == "completed"
    assert response.object == "response"
    assert response.output_text
    assert response.output[0].type == "message"
    usage = response.usage
    assert usage is not None
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.input_tokens > 0 and usage.output_tokens > 0


def test_stream_events_fold_to_the_same_answer_as_json(client: openai.OpenAI) -> None:
    request = {"model": "gpt-4o-mini", "input": "Tell me about ducks."}
    plain = client.responses.create(**request)  # type: ignore[call-overload]
    events = list(client.responses.create(**request, stream=True))  # type: ignore[call-overload]
    types = [e.type for e in events]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response
    # a repeated request gets the same content under a new id
    assert text == final.output_text == plain.output_text
    assert final.id != plain.id


def test_stream_helper_gives_the_final_response(client: openai.OpenAI) -> None:
    with client.responses.stream(model="gpt-4o-mini", input="Write a haiku.") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert final.status == "completed"
    assert "".join(deltas) == final.output_text


def test_async_create_and_stream(async_client: openai.AsyncOpenAI) -> None:
    async def run() -> tuple[str, str]:
        async with async_client:
            plain = await async_client.responses.create(model="m", input="Hi there")
            stream = await async_client.responses.create(model="m", input="Hi there", stream=True)
            text = ""
            async for event in stream:
                if event.type == "response.output_text.delta":
                    text += event.delta
            return plain.output_text, text

    plain, streamed = asyncio.run(run())
    assert plain == streamed and plain


def test_tool_call_arguments_follow_the_schema_and_the_user(client: openai.OpenAI) -> None:
    response = client.responses.create(
        model="m", input="What's the weather like in San Francisco?", tools=[WEATHER]  # type: ignore[list-item]
    )
    calls = [o for o in response.output if o.type == "function_call"]
    assert len(calls) == 1
    call = calls[0]
    assert call.name == "get_weather" and call.call_id.startswith("call_")
    arguments = json.loads(call.arguments)
    jsonschema.validate(arguments, WEATHER["parameters"])
    assert arguments["location"] == "San Francisco"


def test_parallel_calls_one_per_named_tool(client: openai.OpenAI) -> None:
    tools = [WEATHER, TIME]
    asked = "Use get_weather and get_time for Paris."
    parallel = client.responses.create(model="m", input=asked, tools=tools)  # type: ignore[arg-type]
    assert [o.name for o in parallel.output if o.type == "function_call"] == [
        "get_weather", "get_time"
    ]
    serial = client.responses.create(
        model="m", input=asked, tools=tools, parallel_tool_calls=False  # type: ignore[arg-type]
    )
    assert [o.type for o in serial.output] == ["function_call"]


@pytest.mark.parametrize(
    ("tool_choice", "expected"),
    [
        ("none", ["message"]),
        ("auto", ["function_call"]),
        ("required", ["function_call"]),
        ({"type": "function", "name": "get_time"}, ["function_call:get_time"]),
        (
            {"type": "allowed_tools", "mode": "required",
             "tools": [{"type": "function", "name": "get_time"}]},
            ["function_call:get_time"],
        ),
    ],
)
def test_tool_choice(client: openai.OpenAI, tool_choice: object, expected: list[str]) -> None:
    response = client.responses.create(
        model="m", input="What is the weather?", tools=[WEATHER, TIME],  # type: ignore[list-item]
        tool_choice=tool_choice,  # type: ignore[arg-type]
    )
    got = [
        f"function_call:{o.name}" if o.type == "function_call" and ":" in expected[0] else o.type
        for o in response.output
    ]
    assert got == expected
    assert response.to_dict()["tool_choice"] == tool_choice


def test_tool_outputs_get_a_final_answer_through_a_chain(client: openai.OpenAI) -> None:
    first = client.responses.create(model="m", input="Weather in Oslo?", tools=[WEATHER])  # type: ignore[list-item]
    call = next(o for o in first.output if o.type == "function_call")
    second = client.responses.create(
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id,
                "output": '{"temperature": 18}'}],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    assert second.model == "m"  # a continuation may omit the model
    assert second.previous_response_id == first.id
    assert [o.type for o in second.output] == ["message"]
    assert "get_weather returned" in second.output_text
    assert '"temperature": 18' in second.output_text


def test_unknown_previous_response(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="m", previous_response_id="resp_nope", input="x")
    error = raised.value.body
    assert isinstance(error, dict)
    assert error["code"] == "previous_response_not_found"
    assert error["param"] == "previous_response_id"


def test_max_output_tokens_ends_incomplete(client: openai.OpenAI) -> None:
    response = client.responses.create(model="m", input="Go on at length.", max_output_tokens=16)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.output[-1].status == "incomplete"
    assert response.usage is not None and response.usage.output_tokens <= 16


def test_max_output_tokens_below_minimum_is_refused(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="m", input="x", max_output_tokens=8)
    body = raised.value.body
    assert isinstance(body, dict) and body["param"] == "max_output_tokens"
    assert "at least 16" in body["message"]


def test_json_schema_output_is_valid(base_url: str) -> None:
    # The official Response schema wants the echoed text.format.schema as null, which the
    # openai SDK's strict validation refuses (it wants the schema echoed): a default client.
    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "kind": {"enum": ["a", "b"]},
        },
        "required": ["name", "age", "tags", "kind"],
        "additionalProperties": False,
    }
    response = client.responses.create(
        model="m", input="A person, please.",
        text={"format": {"type": "json_schema", "name": "person", "schema": schema,
                         "strict": True}},
    )
    jsonschema.validate(json.loads(response.output_text), schema)
    assert response.to_dict()["text"]["format"]["schema"] is None
    as_object = client.responses.create(
        model="m", input="JSON please", text={"format": {"type": "json_object"}}
    )
    assert isinstance(json.loads(as_object.output_text), dict)


def test_reasoning_adds_a_summarised_reasoning_item(client: openai.OpenAI) -> None:
    response = client.responses.create(
        model="m", input="Think first.", reasoning={"effort": "low", "summary": "auto"}
    )
    kinds = [o.type for o in response.output]
    assert kinds == ["reasoning", "message"]
    reasoning = response.output[0]
    assert reasoning.type == "reasoning" and reasoning.summary[0].text
    assert response.usage is not None
    assert response.usage.output_tokens_details.reasoning_tokens > 0


def test_parameters_are_echoed(client: openai.OpenAI) -> None:
    response = client.responses.create(
        model="m", input="x", instructions="Be brief.", temperature=0.2, top_p=0.5,
        metadata={"run": "7"}, store=False, service_tier="flex",
    )
    assert response.instructions == "Be brief."
    assert response.temperature == 0.2 and response.top_p == 0.5
    assert response.metadata == {"run": "7"}
    assert response.store is False and response.service_tier == "flex"


def test_loose_input_forms_are_accepted(client: openai.OpenAI) -> None:
    image = "data:image/png;base64,iVBORw0KGgo="
    response = client.responses.create(
        model="m",
        input=[
            {"role": "system", "content": "You are a pirate."},
            {"role": "developer", "content": [{"type": "input_text", "text": "Be terse."}]},
            {"role": "user", "content": [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": image},
                {"type": "input_file", "filename": "a.txt", "file_data": "aGk="},
            ]},
            {"type": "message", "role": "assistant", "phase": "commentary", "content": "Hmm."},
        ],  # type: ignore[list-item]
    )
    assert response.status == "completed"


def test_tool_outputs_must_answer_the_chain_calls(client: openai.OpenAI) -> None:
    first = client.responses.create(
        model="m", input="Use get_weather and get_time for Rome.", tools=[WEATHER, TIME]  # type: ignore[list-item]
    )
    calls = [o for o in first.output if o.type == "function_call"]
    assert len(calls) == 2
    with pytest.raises(openai.BadRequestError) as unknown:
        client.responses.create(
            model="m", previous_response_id=first.id,
            input=[{"type": "function_call_output", "call_id": "call_nope", "output": "x"}],
        )
    assert isinstance(unknown.value.body, dict)
    assert unknown.value.body["param"] == "input[0].call_id"
    with pytest.raises(openai.BadRequestError) as partial:
        client.responses.create(
            model="m", previous_response_id=first.id,
            input=[{"type": "function_call_output", "call_id": calls[0].call_id, "output": "x"}],
        )
    assert isinstance(partial.value.body, dict)
    assert partial.value.body["code"] == "missing_tool_output"
    both = client.responses.create(
        model="m", previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": c.call_id, "output": "ok"}
               for c in calls],
    )
    assert both.status == "completed"
