"""``ormock.protocol.request.parse_request``: the loose input forms a request may take, the
fault each bad field is (its ``param`` and ``code``), and what the Response echoes."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ormock.protocol.errors import OpenResponsesError, invalid
from ormock.protocol.fields import MAX_INPUT_TEXT, bounded_string, expect, type_name
from ormock.protocol.input_items import parse_input
from ormock.protocol.request import (
    _OPTIONAL,
    _PLAIN,
    EXTENSION_PREFIX,
    ResponseRequest,
    _flags,
    _optional_fields,
    content_seed,
    parse_request,
)
from ormock.protocol.request_tools import check_tool_choice, check_tools, echo_tool
from ormock.protocol.sse import encode_json
from ormock.protocol.tokens import count_tokens

WEATHER = {
    "type": "function", "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]},
}


def _fault(body: Any) -> OpenResponsesError:
    with pytest.raises(OpenResponsesError) as raised:
        parse_request(body)
    return raised.value


# -- loose input forms --------------------------------------------------------------------------


def test_a_string_input_is_one_user_message() -> None:
    request = parse_request({"model": "m", "input": "Hello"})
    assert request.input == [{"type": "message", "role": "user", "content": "Hello"}]
    assert request.model == "m" and request.stream is False
    assert request.previous_response_id is None


def test_no_input_is_an_empty_list() -> None:
    assert parse_request({"model": "m"}).input == []


def test_a_message_may_lack_its_type_and_have_parts() -> None:
    parts = [{"type": "input_text", "text": "Hi"}]
    request = parse_request({"model": "m", "input": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": parts},
    ]})
    assert request.input == [
        {"type": "message", "role": "system", "content": "Be brief."},
        {"type": "message", "role": "user", "content": parts},
    ]


def test_items_other_than_messages_are_kept_as_given() -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    vendor = {"type": "acme:search_call", "query": "x"}
    request = parse_request({"model": "m", "input": [call, output, vendor]})
    assert request.input == [call, output, vendor]


def test_an_id_alone_is_an_item_reference() -> None:
    # the spec's ItemReferenceParam and the SDK's ItemReference: ``type`` may be left out, or
    # null; only ``id`` is required
    request = parse_request({"model": "m", "input": [{"id": "msg_1"},
                                                     {"type": None, "id": "rs_1"}]})
    assert request.input == [{"id": "msg_1", "type": "item_reference"},
                             {"type": "item_reference", "id": "rs_1"}]


def test_each_spec_item_takes_its_declared_optional_fields() -> None:
    items = [
        {"type": "message", "role": "user", "id": "msg_1", "status": "completed",
         "content": [{"type": "input_text", "text": "Hi"}]},
        {"type": "message", "role": "assistant", "id": None, "status": None,
         "content": [{"type": "output_text", "text": "Yes", "annotations": []},
                     {"type": "refusal", "refusal": "No"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "s"}],
         "content": [{"type": "reasoning_text", "text": "r"}], "encrypted_content": None,
         "status": "incomplete"},
        {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "e"},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f",
         "arguments": "{}", "status": "in_progress"},
        {"type": "function_call_output", "id": "fco_1", "call_id": "c1", "status": "completed",
         "output": [{"type": "input_text", "text": "ok"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AA"}]},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "e"},
        {"type": "item_reference", "id": "msg_0"},
    ]
    assert parse_request({"model": "m", "input": items}).input == items


def test_a_continuation_needs_no_model() -> None:
    request = parse_request({"previous_response_id": "resp_1", "input": "more"})
    assert request.model is None and request.previous_response_id == "resp_1"
    assert "model" not in request.echo


def test_stream_true() -> None:
    assert parse_request({"model": "m", "stream": True}).stream is True


def test_the_echo_holds_what_the_response_repeats() -> None:
    request = parse_request({
        "model": "m", "instructions": "Be brief.", "temperature": 1, "top_p": 0.5,
        "store": False, "metadata": {"k": "v"}, "max_output_tokens": 16,
        "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}}},
        "reasoning": {"effort": "low"}, "truncation": "auto",
    })
    echo = request.echo
    assert echo["model"] == "m" and echo["instructions"] == "Be brief."
    assert echo["temperature"] == 1.0 and isinstance(echo["temperature"], float)
    assert echo["top_p"] == 0.5 and echo["store"] is False
    assert echo["metadata"] == {"k": "v"} and echo["max_output_tokens"] == 16
    assert echo["text"] == {"format": {"type": "json_schema", "name": "out",
                                       "description": None, "schema": None, "strict": False}}
    assert echo["reasoning"] == {"effort": "low", "summary": None}
    assert echo["truncation"] == "auto"
    assert echo["tool_choice"] == "auto" and echo["tools"] == []


# -- tools --------------------------------------------------------------------------------------


def test_a_function_tool_with_parameters() -> None:
    request = parse_request({"model": "m", "input": "Weather?", "tools": [
        {**WEATHER, "strict": True}, {"type": "web_search"}],
        "tool_choice": {"type": "function", "name": "get_weather"}})
    assert request.function_tools == [{**WEATHER, "strict": True}]
    assert request.echo["tools"] == [{**WEATHER, "strict": True}, {"type": "web_search"}]
    assert request.tool_choice == {"type": "function", "name": "get_weather"}


def test_allowed_tools_choice_is_normalised() -> None:
    request = parse_request({"model": "m", "tools": [WEATHER], "tool_choice": {
        "type": "allowed_tools", "tools": [{"type": "function", "name": "get_weather"}]}})
    assert request.tool_choice == {"type": "allowed_tools", "mode": "auto",
                                   "tools": [{"type": "function", "name": "get_weather"}]}


def test_invalid_tool_parameters_name_where() -> None:
    error = _fault({"model": "m", "tools": [
        {**WEATHER, "parameters": {"type": "object", "properties": {"city": {"type": 3}}}}]})
    assert error.code == "invalid_function_parameters"
    assert error.param is not None and error.param.startswith("tools[0].parameters")


# -- faults: each field's param and code --------------------------------------------------------


@pytest.mark.parametrize(("body", "param", "code"), [
    ([], None, "invalid_json"),
    ({"input": "x"}, "model", "missing_required_parameter"),
    ({"model": ""}, "model", "invalid_value"),
    ({"model": 3}, "model", "invalid_type"),
    ({"model": "m", "previous_response_id": 1}, "previous_response_id", "invalid_type"),
    ({"model": "m", "input": 3}, "input", "invalid_type"),
    ({"model": "m", "input": ["x"]}, "input[0]", "invalid_type"),
    ({"model": "m", "input": [{"type": "nope"}]}, "input[0].type", "invalid_value"),
    ({"model": "m", "input": [{"type": 1}]}, "input[0].type", "invalid_type"),
    ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0].role",
     "invalid_value"),
    ({"model": "m", "input": [{"role": "user", "content": 1}]}, "input[0].content",
     "invalid_type"),
    ({"model": "m", "input": [{"role": "user", "content": [{"type": "x"}]}]},
     "input[0].content[0].type", "invalid_value"),
    ({"model": "m", "input": [{"type": "function_call_output", "output": "x"}]},
     "input[0].call_id", "missing_required_parameter"),
    ({"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "f"}]},
     "input[0].arguments", "missing_required_parameter"),
    # an item with neither ``type`` nor ``role``: an item reference needs its ``id``, a message
    # its ``role``
    ({"model": "m", "input": [{}]}, "input[0].type", "missing_required_parameter"),
    ({"model": "m", "input": [{"content": "x"}]}, "input[0].role",
     "missing_required_parameter"),
    ({"model": "m", "input": [{"type": None}]}, "input[0].type", "invalid_type"),
    ({"model": "m", "input": [{"type": "item_reference"}]}, "input[0].id",
     "missing_required_parameter"),
    ({"model": "m", "input": [{"type": "item_reference", "id": 5}]}, "input[0].id",
     "invalid_type"),
    ({"model": "m", "input": [{"id": ["msg_1"]}]}, "input[0].id", "invalid_type"),
    ({"model": "m", "input": [{"type": "reasoning"}]}, "input[0].summary",
     "missing_required_parameter"),
    ({"model": "m", "input": [{"type": "reasoning", "summary": 5}]}, "input[0].summary",
     "invalid_type"),
    ({"model": "m", "input": [{"type": "reasoning", "summary": [5]}]}, "input[0].summary[0]",
     "invalid_type"),
    ({"model": "m", "input": [{"type": "reasoning", "summary": [{"type": "input_text",
                                                                 "text": "s"}]}]},
     "input[0].summary[0].type", "invalid_value"),
    ({"model": "m", "input": [{"type": "reasoning", "summary": [{"type": "summary_text",
                                                                 "text": 1}]}]},
     "input[0].summary[0].text", "invalid_type"),
    ({"model": "m", "input": [{"type": "reasoning", "summary": [], "content": 5}]},
     "input[0].content", "invalid_type"),
    ({"model": "m", "input": [{"type": "reasoning", "summary": [], "content": [
        {"type": "reasoning_text"}]}]}, "input[0].content[0].text",
     "missing_required_parameter"),
    ({"model": "m", "input": [{"type": "reasoning", "summary": [], "encrypted_content": 5}]},
     "input[0].encrypted_content", "invalid_type"),
    ({"model": "m", "input": [{"role": "user", "content": [{"type": "input_text",
                                                            "text": 5}]}]},
     "input[0].content[0].text", "invalid_type"),
    ({"model": "m", "input": [{"role": "user", "content": [{"type": "input_text",
                                                            "text": {"a": 1}}]}]},
     "input[0].content[0].text", "invalid_type"),
    ({"model": "m", "input": [{"role": "user", "content": [{"type": "input_text"}]}]},
     "input[0].content[0].text", "missing_required_parameter"),
    ({"model": "m", "input": [{"role": "assistant", "content": [{"type": "refusal"}]}]},
     "input[0].content[0].refusal", "missing_required_parameter"),
    ({"model": "m", "input": [{"type": "function_call_output", "call_id": "c", "output": 5}]},
     "input[0].output", "invalid_type"),
    ({"model": "m", "input": [{"type": "function_call_output", "call_id": "c",
                               "output": {"a": 1}}]}, "input[0].output", "invalid_type"),
    ({"model": "m", "input": [{"type": "function_call_output", "call_id": "c",
                               "output": [{"type": "input_text", "text": 1}]}]},
     "input[0].output[0].text", "invalid_type"),
    ({"model": "m", "input": [{"type": "function_call_output", "call_id": "c",
                               "output": [{"type": "output_text", "text": "x"}]}]},
     "input[0].output[0].type", "invalid_value"),
    ({"model": "m", "input": [{"role": "user", "content": "x", "id": 5}]}, "input[0].id",
     "invalid_type"),
    ({"model": "m", "input": [{"role": "user", "content": "x", "status": "done"}]},
     "input[0].status", "invalid_value"),
    ({"model": "m", "input": [{"role": "user", "content": "x", "status": 1}]},
     "input[0].status", "invalid_type"),
    ({"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "f",
                               "arguments": "{}", "status": "nope"}]}, "input[0].status",
     "invalid_value"),
    ({"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "f",
                               "arguments": "{}", "id": 3}]}, "input[0].id", "invalid_type"),
    ({"model": "m", "input": [{"type": "reasoning", "summary": [], "status": "x"}]},
     "input[0].status", "invalid_value"),
    ({"model": "m", "input": [{"type": "compaction", "id": 3, "encrypted_content": "x"}]},
     "input[0].id", "invalid_type"),
    ({"model": "m", "stream": "yes"}, "stream", "invalid_type"),
    ({"model": "m", "store": 1}, "store", "invalid_type"),
    ({"model": "m", "background": True, "store": False}, "store", "invalid_value"),
    ({"model": "m", "temperature": 3}, "temperature", "invalid_value"),
    ({"model": "m", "temperature": True}, "temperature", "invalid_type"),
    ({"model": "m", "top_logprobs": 1.5}, "top_logprobs", "invalid_type"),
    ({"model": "m", "max_output_tokens": 8}, "max_output_tokens", "integer_below_min_value"),
    ({"model": "m", "max_tool_calls": 0}, "max_tool_calls", "integer_below_min_value"),
    ({"model": "m", "truncation": "never"}, "truncation", "invalid_value"),
    ({"model": "m", "instructions": 1}, "instructions", "invalid_type"),
    ({"model": "m", "metadata": {"k": 1}}, "metadata.k", "invalid_type"),
    ({"model": "m", "metadata": {str(i): "v" for i in range(17)}}, "metadata", "invalid_value"),
    ({"model": "m", "metadata": {"k": "v" * 513}}, "metadata.k", "string_above_max_length"),
    ({"model": "m", "metadata": {"k" * 65: "v"}}, "metadata." + "k" * 65,
     "string_above_max_length"),
    ({"model": "m", "include": ["reasoning.nope"]}, "include[0]", "invalid_value"),
    ({"model": "m", "text": {"format": {"type": "xml"}}}, "text.format.type", "invalid_value"),
    ({"model": "m", "text": {"format": {"type": "json_schema", "schema": {}}}},
     "text.format.name", "missing_required_parameter"),
    ({"model": "m", "text": {"verbosity": "loud"}}, "text.verbosity", "invalid_value"),
    ({"model": "m", "reasoning": {"effort": "max"}}, "reasoning.effort", "invalid_value"),
    ({"model": "m", "include": [1]}, "include[0]", "invalid_type"),
    ({"model": "m", "tools": {}}, "tools", "invalid_type"),
    ({"model": "m", "tools": [{"type": "function"}]}, "tools[0].name",
     "missing_required_parameter"),
    ({"model": "m", "tools": [WEATHER, WEATHER]}, "tools[1].name", "duplicate_tool"),
    ({"model": "m", "tools": [{}]}, "tools[0].type", "missing_required_parameter"),
    ({"model": "m", "tool_choice": "always"}, "tool_choice", "invalid_value"),
    ({"model": "m", "tool_choice": "required"}, "tool_choice", "invalid_value"),
    ({"model": "m", "tool_choice": {"type": "function", "name": "f"}}, "tool_choice",
     "unknown_tool"),
    ({"model": "m", "tools": [WEATHER], "tool_choice": {
        "type": "allowed_tools", "tools": [{"name": "f"}]}}, "tool_choice.tools[0]",
     "unknown_tool"),
    ({"model": "m", "tools": [WEATHER], "tool_choice": {
        "type": "allowed_tools", "tools": [], "mode": "none"}}, "tool_choice.mode",
     "invalid_value"),
    ({"model": "m", "tool_choice": {"type": "mcp"}}, "tool_choice.server_label",
     "missing_required_parameter"),
    ({"model": "m", "tool_choice": {"type": "nope"}}, "tool_choice.type", "invalid_value"),
    # the official schema's StreamOptionsParam: an object, and OpenAI takes it only with a
    # stream (the openai SDK: "Only set this when you set `stream: true`")
    ({"model": "m", "stream": True, "stream_options": 1}, "stream_options", "invalid_type"),
    ({"model": "m", "stream": True, "stream_options": "x"}, "stream_options", "invalid_type"),
    ({"model": "m", "stream_options": []}, "stream_options", "invalid_type"),
    ({"model": "m", "stream": True, "stream_options": {"include_obfuscation": "no"}},
     "stream_options.include_obfuscation", "invalid_type"),
    ({"model": "m", "stream_options": {"include_obfuscation": False}}, "stream_options",
     "invalid_value"),
    ({"model": "m", "stream": False, "stream_options": {}}, "stream_options", "invalid_value"),
    ({"model": "m", "text": {"format": ""}}, "text.format", "invalid_type"),
    ({"model": "m", "text": {"format": 0}}, "text.format", "invalid_type"),
    ({"model": "m", "text": {"format": []}}, "text.format", "invalid_type"),
    # the official schema's maxLength of a string input, a safety_identifier, a prompt_cache_key
    ({"model": "m", "input": "x" * 10_485_761}, "input", "string_above_max_length"),
    ({"model": "m", "safety_identifier": "s" * 65}, "safety_identifier",
     "string_above_max_length"),
    ({"model": "m", "prompt_cache_key": "k" * 65}, "prompt_cache_key",
     "string_above_max_length"),
])
def test_each_fault_names_its_field(body: Any, param: str | None, code: str) -> None:
    error = _fault(body)
    assert (error.param, error.code, error.type, error.status) == (
        param, code, "invalid_request", 400)
    assert error.message.endswith((".", ")")), error.message  # a sentence saying what to change


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(-2**80, 2**80)
    | st.floats(allow_nan=True) | st.text(max_size=8)
    | st.text(st.characters(exclude_categories=()), max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=20)


@settings(max_examples=1000, deadline=None)
@given(body=st.dictionaries(
    st.sampled_from(["model", "input", "stream", "stream_options", "background", "x_é", "b"]),
    _json_values, max_size=6))
def test_the_content_seed_is_that_of_the_sorted_json_dump(body: dict[str, Any]) -> None:
    # the canonical text is ``json.dumps(sort_keys=True, default=str)``'s, byte for byte: the
    # same request gets the same content as it always has
    stable = {k: v for k, v in body.items() if k not in ("stream", "stream_options")
              and not (k == "background" and v is True)}
    expected = hashlib.sha256(
        f"7:{json.dumps(stable, sort_keys=True, default=str)}".encode()).digest()[:8]
    assert content_seed(7, body) == int.from_bytes(expected, "big")


@pytest.mark.parametrize(("body", "seed"), [
    ({"model": "m", "input": "hi"}, 2569213396174538285),
    ({"model": "m", "input": "hi", "stream": True}, 2569213396174538285),
    ({"model": "gpt-4o", "input": [{"role": "user", "content": "h\u00e9llo \u2028"}],
      "temperature": 0.7, "tools": [], "metadata": {"n": 2**70}}, 5602593431885904951),
])
def test_the_content_seed_of_a_body_is_what_it_always_was(body: Any, seed: int) -> None:
    # pinned under seed 0 as the C encoder and ``_sha256`` gave them: the same requests keep
    # getting the same generated content
    assert content_seed(0, body) == seed


def test_the_content_seed_is_sha256_on_either_side_of_the_short_texts_length() -> None:
    # SHA-256 of the seed and the canonical text, short or long (``_seed_of``)
    for length in (0, 100, 104, 105, 106, 119, 120, 121, 500):
        body = {"input": "x" * length}
        text = f"7:{json.dumps(body, sort_keys=True)}".encode()
        expected = int.from_bytes(hashlib.sha256(text).digest()[:8], "big")
        assert content_seed(7, body) == expected, len(text)


def test_the_content_key_is_the_hash_of_the_canonical_text_the_seed_digests() -> None:
    """``content_key`` (the stream cache's part of a content) hashes the text ``content_seed``
    digests: equal for bodies whose canonical texts are (the stream flag left out), unequal
    for others, and made without the digest."""
    body = {"model": "m", "input": "hi", "stream": True}
    request = parse_request(body)
    assert request.content_key() == hash(json.dumps({"model": "m", "input": "hi"},
                                                     sort_keys=True))
    assert request._seeds == {}  # no seed was made for it
    assert parse_request({"input": "hi", "model": "m"}).content_key() == request.content_key()
    assert parse_request({"model": "m", "input": "hi 2"}).content_key() != \
        request.content_key()


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=24))
def test_a_text_inputs_json_is_what_the_encoder_writes_for_its_message(text: str) -> None:
    """``input_json`` of a text input encodes only the text (non-ASCII kept, line separators
    and lone surrogates escaped, as ``encode_json`` does), made once."""
    request = parse_request({"model": "m", "input": text})
    assert request.input_json == encode_json(request.input)
    assert request.input_json is request.input_json


def test_an_item_inputs_json_is_what_the_encoder_writes() -> None:
    items = [{"role": "user", "content": [{"type": "input_text", "text": "a\u2028"}]},
             {"type": "message", "role": "user", "content": "b", "id": "msg_1"}]
    request = parse_request({"model": "m", "input": items})
    assert request.input_json == encode_json(request.input)
    lone = parse_request({"model": "m", "input": "a\ud800\u0085b"})  # a lone surrogate
    assert lone.input_json == encode_json(lone.input) and "\\ud800" in lone.input_json


def test_the_longest_values_the_spec_allows_are_taken() -> None:
    request = parse_request({"model": "m", "input": "x" * 10_485_760, "stream": True,
                             "stream_options": {"include_obfuscation": False},
                             "safety_identifier": "s" * 64, "prompt_cache_key": "k" * 64,
                             "text": {"format": None}})
    assert request.echo["safety_identifier"] == "s" * 64
    assert request.echo["prompt_cache_key"] == "k" * 64
    assert request.echo["text"] == {"format": {"type": "text"}}
    assert parse_request({"model": "m", "stream_options": None}).stream is False


def _parse_as_before(body: Any, *, require_model: bool = True) -> ResponseRequest:
    """``parse_request`` as it was before its usual cases were checked inline: every field
    through its check (``expect``, ``check_tools``, ``parse_input``)."""
    if not isinstance(body, dict):
        raise invalid(f"The request body must be a JSON object, not {type_name(body)}.", None,
                      "invalid_json")
    model = body.get("model")
    previous = body.get("previous_response_id")
    if previous is not None:
        expect(previous, str, "previous_response_id", "a response id string")
    if model is None and previous is None and require_model:
        raise invalid("'model' is required: name the model to answer, e.g. \"gpt-4o-mini\".",
                      "model", "missing_required_parameter")
    if model is not None:
        expect(model, str, "model", "a string")
        if not model:
            raise invalid("'model' must not be empty.", "model")
    tools = check_tools(body.get("tools"))
    echo: dict[str, Any] = {"tools": [echo_tool(t) for t in tools] if tools else []}
    if model is not None:
        echo["model"] = model
    echo["previous_response_id"] = previous
    tool_choice = body.get("tool_choice")
    echo["tool_choice"] = "auto" if tool_choice is None else check_tool_choice(
        tool_choice, tools, body.get("input"))
    instructions = body.get("instructions")
    if instructions is not None:
        expect(instructions, str, "instructions", "a string")
        echo["instructions"] = instructions
    parallel, store, background, stream = (body.get("parallel_tool_calls"), body.get("store"),
                                           body.get("background"), body.get("stream"))
    for value in (parallel, store, background, stream):
        if value is not None and value.__class__ is not bool:
            _flags(body)
    if parallel is not None:
        echo["parallel_tool_calls"] = parallel
    if store is not None:
        echo["store"] = store
    if background:
        echo["background"] = True
        if store is False:
            raise invalid("Background mode keeps the response: send 'store': true or leave "
                          "it out with 'background': true.", "store", "invalid_value")
    if not _OPTIONAL.isdisjoint(body):
        _optional_fields(body, echo)
    extensions = {k: v for k, v in body.items() if k.startswith(EXTENSION_PREFIX)}
    if isinstance(body.get("input"), str):
        bounded_string(body["input"], "input", MAX_INPUT_TEXT)
    return ResponseRequest(body, model, parse_input(body.get("input")), bool(stream), previous,
                           tools, echo, extensions)


class _Str(str):
    """A ``str`` that is not exactly one (a Python caller's): checked as a string."""


_field_values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "m", "resp_1", "auto"]),
    st.builds(_Str, st.sampled_from(["", "m"])), st.just([]), st.just({}),
    st.just([WEATHER]), st.just([{"type": "function"}]), st.just(["hi"]),
    st.just([{"role": "user", "content": "hi"}]), st.just({"type": "function", "name": "x"}),
)


@settings(max_examples=500, deadline=None)
@given(body=st.one_of(
    st.dictionaries(st.sampled_from([
        "model", "previous_response_id", "input", "tools", "tool_choice", "instructions",
        "parallel_tool_calls", "store", "background", "stream", "temperature", "x_own",
        "other"]), _field_values, max_size=7),
    st.none(), st.just([]), st.just("body")),
    require_model=st.booleans())
def test_parse_request_is_the_field_by_field_checks(body: Any, require_model: bool) -> None:
    # the usual cases checked inline: the same request, or the same fault, as checking every
    # field through its own check did
    refused: OpenResponsesError | None = None
    try:
        expected = _parse_as_before(body, require_model=require_model)
    except OpenResponsesError as error:
        refused = error
    if refused is None:
        assert parse_request(body, require_model=require_model) == expected
        return
    with pytest.raises(OpenResponsesError) as raised:
        parse_request(body, require_model=require_model)
    assert (raised.value.param, raised.value.code, raised.value.message) == (
        refused.param, refused.code, refused.message)


def test_a_body_of_plain_fields_sends_no_optional_field_and_no_extension() -> None:
    # what lets ``parse_request`` skip both looks for a body of only these fields
    assert _PLAIN.isdisjoint(_OPTIONAL)
    assert not any(name.startswith(EXTENSION_PREFIX) for name in _PLAIN)
    assert parse_request({"model": "m", "input": "hi", "x_own": 1}).extensions == {"x_own": 1}
    assert parse_request({"model": "m", "temperature": 1}).echo["temperature"] == 1.0


def test_a_parsed_request_is_the_one_its_init_makes() -> None:
    body = {"model": "m", "input": "hi", "x_own": {"a": 1}, "stream": True}
    parsed = parse_request(body)
    made = ResponseRequest(body, "m", parsed.input, True, None, [], parsed.echo,
                           {"x_own": {"a": 1}})
    assert parsed == made and repr(parsed) == repr(made)
    for field in dataclasses.fields(ResponseRequest):  # every field, the hidden ones too
        assert getattr(parsed, field.name) == getattr(made, field.name), field.name
    assert parsed.content_seed(3) == made.content_seed(3) == content_seed(3, body)
    assert parse_request(body)._seeds is not parsed._seeds  # each its own


@pytest.mark.parametrize("body", [
    {"model": "m", "input": "hi there, you"},
    {"model": "m", "input": [{"role": "user", "content": "hi there"}], "tools": [WEATHER]},
    {"model": "m", "tools": [WEATHER, {"type": "web_search"}]},
    {"model": "m", "input": "look it up", "tools": [{"type": "web_search"}]},
    {"model": "m", "input": "hi", "tool_choice": "none"},
    {"model": "m", "input": "hi", "tools": [WEATHER], "tool_choice": {
        "type": "function", "name": "get_weather"}},
    {"model": "m", "input": [{"type": "additional_tools", "tools": [WEATHER]},
                             {"role": "user", "content": "hi"}]},
    {"model": "m", "input": "hi", "instructions": "be brief", "tools": [WEATHER]},
    {"model": "m", "input": "hi", "instructions": ""},
    {"model": "m", "input": [{"type": "reasoning", "summary": []},
                             {"role": "user", "content": "hi"}]},
])
def test_the_values_made_at_parse_time_are_those_made_on_a_first_read(
        body: dict[str, Any]) -> None:
    parsed = parse_request(body)
    made = ResponseRequest(body, "m", parsed.input, False, None, parsed.tools, parsed.echo, {})
    assert (parsed.function_tools, parsed.input_tokens) == (made.function_tools,
                                                           made.input_tokens)
    assert (parsed.offered_tools, parsed.beyond_spec) == (made.offered_tools,
                                                         made.beyond_spec)
    assert (parsed.prompt_tokens, parsed.sends_reasoning) == (made.prompt_tokens,
                                                             made.sends_reasoning)


def test_the_prompt_tokens_count_the_instructions_and_the_function_tools() -> None:
    plain = parse_request({"model": "m", "input": "hi"})
    told = parse_request({"model": "m", "input": "hi", "instructions": "be brief and kind",
                          "tools": [WEATHER, {"type": "web_search"}]})
    assert plain.prompt_tokens == 0 and not plain.sends_reasoning
    assert told.prompt_tokens == count_tokens("be brief and kind") + count_tokens(
        encode_json(told.function_tools[0]))
