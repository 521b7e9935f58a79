"""The embedded default's tool arguments are what a real agent accepts: required properties
always, optional ones only where asked (a hint, ``minProperties``); whole numbers for ``number``
unless the bounds or ``multipleOf`` leave only fractions; formats and bounds satisfied."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import openai
import pytest
from faker import Faker

from ormock.engine.schema_values import value_for
from ormock.protocol.errors import OpenResponsesError

Json = dict[str, Any]
# the Codex CLI 0.171's exec_command, as it offers it (its Rust side reads the numbers as usize)
EXEC_COMMAND: Json = {
    "type": "object",
    "properties": {
        "cmd": {"type": "string", "description": "Shell command to execute."},
        "justification": {"type": "string"},
        "login": {"type": "boolean"},
        "max_output_tokens": {"type": "number"},
        "prefix_rule": {"type": "array", "items": {"type": "string"}},
        "sandbox_permissions": {"type": "string"},
        "shell": {"type": "string"},
        "tty": {"type": "boolean"},
        "workdir": {"type": "string"},
        "yield_time_ms": {"type": "number"},
    },
    "required": ["cmd"],
    "additionalProperties": False,
}
SCHEMAS: list[Json] = [
    EXEC_COMMAND,
    {"type": "number"},
    {"type": "number", "minimum": 0.1, "maximum": 0.9},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    {"type": "number", "minimum": 2, "maximum": 2},
    {"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 0.25},
    {"type": "number", "minimum": 0.1, "maximum": 0.35, "multipleOf": 0.1},
    {"type": "number", "exclusiveMaximum": -3.5},
    {"type": "integer", "minimum": 1, "maximum": 9, "multipleOf": 5},
    {"type": "integer", "exclusiveMinimum": 10},
    {"type": "string", "format": "date-time"}, {"type": "string", "format": "email"},
    {"type": "string", "format": "uuid"}, {"type": "string", "format": "ipv6"},
    {"type": "string", "format": "date"}, {"type": "string", "minLength": 30, "maxLength": 31},
    {"type": "array", "items": {"type": "integer", "minimum": 3, "maximum": 4},
     "minItems": 3, "maxItems": 5},
    {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"},
                                      "c": {"type": "boolean"}}, "minProperties": 2},
    {"type": "object", "required": ["id"], "additionalProperties": {"type": "integer"}},
    {"type": "object", "properties": {"when": {"$ref": "#/$defs/day"}}, "required": ["when"],
     "$defs": {"day": {"type": "string", "format": "date"}}},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:60] for s in SCHEMAS])
@pytest.mark.parametrize("seed", range(8))
def test_the_values_satisfy_the_schema_formats_and_bounds(schema: Json, seed: int) -> None:
    faker = Faker()
    faker.seed_instance(seed)
    value = value_for(schema, faker)
    jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize("seed", range(20))
def test_codexs_exec_command_gets_only_what_it_requires(seed: int) -> None:
    faker = Faker()
    faker.seed_instance(seed)
    arguments = value_for(EXEC_COMMAND, faker)
    assert list(arguments) == ["cmd"] and isinstance(arguments["cmd"], str)


@pytest.mark.parametrize("seed", range(20))
def test_a_number_is_whole_unless_only_a_fraction_fits(seed: int) -> None:
    faker = Faker()
    faker.seed_instance(seed)
    for schema in ({"type": "number"}, {"type": "number", "minimum": 0.5, "maximum": 3},
                   {"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 0.25},
                   {"type": "number", "minimum": -10, "exclusiveMaximum": 0}):
        value = value_for(schema, faker)
        # an int: json.dumps writes 7, not 7.0, which a strict parser reads as a count
        assert type(value) is int, (schema, value)
    assert value_for({"type": "number", "minimum": 0.1, "maximum": 0.9}, faker) == 0.5
    assert value_for({"type": "number", "minimum": 0.1, "maximum": 0.35, "multipleOf": 0.1},
                     faker) in (0.1, 0.2)


def test_draft_4_exclusive_flags_hold() -> None:
    faker = Faker()
    for seed in range(10):
        faker.seed_instance(seed)
        assert value_for({"type": "integer", "minimum": 5, "exclusiveMinimum": True,
                          "maximum": 6}, faker) == 6
        assert value_for({"type": "integer", "minimum": 5, "maximum": 6,
                          "exclusiveMaximum": True}, faker) == 5


def test_an_optional_property_is_filled_only_where_asked() -> None:
    faker = Faker()
    schema = {"type": "object", "properties": {"location": {"type": "string"},
                                               "unit": {"type": "string"}}}
    assert value_for(schema, faker) == {}
    assert value_for(schema, faker, hints={"location": "Paris"}) == {"location": "Paris"}
    nested = {"type": "object", "required": ["place"], "properties": {"place": schema}}
    assert value_for(nested, faker) == {"place": {}}


def test_the_embedded_default_calls_codexs_tool_as_an_agent_accepts(
        client: openai.OpenAI) -> None:
    tool = {"type": "function", "name": "exec_command", "description": "Runs a command.",
            "parameters": EXEC_COMMAND, "strict": False}
    for words in ("List the files.", "Show the date.", "What is in here?"):
        response = client.responses.create(model="gpt-5", input=words, tools=[tool],  # type: ignore[list-item]
                                           tool_choice="required")
        (call,) = response.output
        assert call.type == "function_call"
        arguments = json.loads(call.arguments)
        jsonschema.validate(arguments, EXEC_COMMAND)
        assert list(arguments) == ["cmd"]


# schemas whose value would hold the server (a string of 10^8 characters, 10^9 array items,
# a tree of $refs branching ten ways twelve deep) or whose steps overflow a float
_HUGE = {"type": "object", "required": ["a"], "properties": {"a": {"type": "string",
                                                                    "minLength": 10**8}}}
_ENDLESS: list[Json] = [
    _HUGE,
    {"type": "array", "minItems": 10**9},
    {"type": "array", "minItems": 1000, "items": {"type": "array", "minItems": 1000,
                                                  "items": {"type": "array", "minItems": 1000}}},
    {"$defs": {"n": {"type": "object", "required": [f"p{i}" for i in range(10)],
                     "properties": {f"p{i}": {"$ref": "#/$defs/n"} for i in range(10)}}},
     "$ref": "#/$defs/n"},
]


@pytest.mark.parametrize("schema", _ENDLESS, ids=[json.dumps(s)[:60] for s in _ENDLESS])
def test_a_value_too_large_to_make_is_a_400_naming_the_field(schema: Json) -> None:
    with pytest.raises(OpenResponsesError) as caught:
        value_for(schema, Faker(), param="text.format.schema")
    assert caught.value.status == 400 and caught.value.param == "text.format.schema"
    assert caught.value.code == "unsupported_schema" and "100000" in caught.value.message


def test_a_step_too_small_to_count_in_gives_its_bound() -> None:
    schema = {"type": "number", "minimum": 1e300, "multipleOf": 1e-300}
    assert value_for(schema, Faker()) == 1e300


def test_a_tool_whose_arguments_are_too_large_is_refused_and_the_server_goes_on(
        client: openai.OpenAI) -> None:
    tool = {"type": "function", "name": "f", "parameters": _HUGE}
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="m", input="Hi", tools=[tool],  # type: ignore[list-item]
                                tool_choice="required")
    assert caught.value.code == "unsupported_schema" and caught.value.param == "tools"
    assert client.responses.create(model="m", input="Hi").status == "completed"
