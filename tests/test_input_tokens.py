"""``POST /v1/responses/input_tokens`` (``client.responses.input_tokens.count``) through the real
openai SDK, strictly validated, against a real server: the count is the ``usage.input_tokens``
a create of the same body reports, with ``previous_response_id`` context; errors; the journal;
nothing drawn from the seeded ids or clock."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from openai.types.responses.input_token_count_response import InputTokenCountResponse

from ormock import OrmockServer
from ormock.engine.core import Engine
from ormock.engine.token_count import count_input_tokens
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.schema import validate_error

LOOKUP = {"type": "function", "name": "lookup", "description": "Look a word up.",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}},
                         "required": ["q"]}}


def _usage_in(response: Any) -> int:
    assert response.usage is not None
    value: int = response.usage.input_tokens
    return value


def test_the_count_is_what_a_create_of_the_same_body_reports(client: openai.OpenAI) -> None:
    body: dict[str, Any] = {
        "model": "gpt-4o-mini", "instructions": "Be brief and precise.", "tools": [LOOKUP],
        "input": [{"role": "user", "content": "Look up the word 'slate', please."},
                  {"role": "assistant", "content": [{"type": "output_text", "text": "OK."}]}]}
    counted = client.responses.input_tokens.count(**body)
    assert isinstance(counted, InputTokenCountResponse)
    assert counted.object == "response.input_tokens"
    created = client.responses.create(**body)
    assert counted.input_tokens == _usage_in(created) > 0


def test_previous_response_id_counts_the_chain(client: openai.OpenAI) -> None:
    first = client.responses.create(model="gpt-4o-mini", input="Remember the word: ember.")
    counted = client.responses.input_tokens.count(previous_response_id=first.id,
                                                  input="What was the word?")
    alone = client.responses.input_tokens.count(input="What was the word?")
    assert counted.input_tokens > alone.input_tokens
    second = client.responses.create(previous_response_id=first.id, input="What was the word?")
    assert counted.input_tokens == _usage_in(second)


def test_model_may_be_left_out_and_an_empty_body_counts_nothing(client: openai.OpenAI) -> None:
    # "Hello", " there", ",", " world", "."
    assert client.responses.input_tokens.count(input="Hello there, world.").input_tokens == 5
    assert client.responses.input_tokens.count().input_tokens == 0


@pytest.mark.parametrize(("body", "param", "code", "status"), [
    ({"previous_response_id": "resp_nope", "input": "x"}, "previous_response_id",
     "previous_response_not_found", 400),
    ({"input": 5}, "input", "invalid_type", 400),
    ({"input": [{"type": "nope"}]}, "input[0].type", "invalid_value", 400),
    ({"input": [{"type": "compaction"}]}, "input[0].encrypted_content",
     "missing_required_parameter", 400),
    ({"model": 3}, "model", "invalid_type", 400),
    ({"tools": [{"type": "function"}]}, "tools[0].name", "missing_required_parameter", 400),
])
def test_a_bad_request_names_the_field(http: httpx.Client, body: dict[str, Any], param: str,
                                       code: str | None, status: int) -> None:
    response = http.post("/responses/input_tokens", json=body)
    assert response.status_code == status
    envelope = response.json()
    assert validate_error(envelope) is None
    assert envelope["error"]["param"] == param
    if code is not None:
        assert envelope["error"]["code"] == code


def test_the_sdk_raises_for_an_unknown_previous_response(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.input_tokens.count(previous_response_id="resp_nope")
    assert caught.value.body["code"] == "previous_response_not_found"  # type: ignore[index]


def test_counting_draws_no_id_and_is_journaled(server: OrmockServer) -> None:
    def run(name: str, count: bool) -> tuple[bytes, list[tuple[str, int]]]:
        server.namespaces.open(name)
        with httpx.Client(base_url=f"{server.url}/{name}/v1") as raw:
            if count:
                assert raw.post("/responses/input_tokens", json={"input": "x"}).json() == {
                    "object": "response.input_tokens", "input_tokens": 1}
            answer = raw.post("/responses", json={"model": "m", "input": "x"}).content
        return answer, [(e.path, e.status) for e in server.engine(name).journal]

    counted, journal = run("count-a", True)
    plain, _ = run("count-b", False)
    assert counted == plain  # the same ids and timestamps: counting drew none
    assert journal == [("/count-a/v1/responses/input_tokens", 200),
                       ("/count-a/v1/responses", 200)]


def test_the_root_path_and_python_callers() -> None:
    engine = Engine(seed=0)
    data, entry = count_input_tokens(engine, {"input": "two words"})
    assert data == {"object": "response.input_tokens", "input_tokens": 2}
    assert entry.status == 200 and entry.path == "/v1/responses/input_tokens"
    with pytest.raises(OpenResponsesError) as caught:
        count_input_tokens(engine, {"input": 1})
    assert caught.value.param == "input" and engine.journal[-1].status == 400


def test_the_root_v1_path_is_served(server: OrmockServer) -> None:
    with httpx.Client(base_url=server.url) as raw:
        response = raw.post("/v1/responses/input_tokens", json={"input": "one"})
        assert response.status_code == 200
        assert response.json() == {"object": "response.input_tokens", "input_tokens": 1}
