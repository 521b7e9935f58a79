"""The ``openrouter`` profile through OpenRouter's own Python SDK (``openrouter`` on PyPI), the
client its users use: its typed Responses models read the fake's JSON and its stream (a
``: OPENROUTER PROCESSING`` comment first, ``data:`` lines only, ``[DONE]``), and its typed
errors read the fake's error envelope, which under the Open Responses profile they cannot."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openrouter import OpenRouter, errors

from ormock import OrmockServer

MODEL = "openai/gpt-4o-mini"


@pytest.fixture(scope="module")
def server() -> Iterator[OrmockServer]:
    with OrmockServer(profile="openrouter", self_check=True) as running:
        yield running


def _client(server: OrmockServer) -> OpenRouter:
    return OpenRouter(api_key="ormock-" + "test-key", server_url=server.base_url,
                      retry_config=None)


def test_the_sdk_reads_a_response_and_its_stream(server: OrmockServer) -> None:
    with _client(server) as client:
        made = client.beta.responses.send(model=MODEL, input="hi")
        assert made.status == "completed" and made.model == MODEL
        assert made.output[0].content[0].text
        with client.beta.responses.send(model=MODEL, input="hi", stream=True) as events:
            kinds = [type(event).__name__ for event in events]
    # each event read as its own typed model, none left as an unknown one
    assert all(k.endswith("Event") or k.startswith("StreamEvents") for k in kinds), kinds
    assert kinds[0] == "OpenResponsesCreatedEvent"
    assert "TextDeltaEvent" in kinds and "StreamEventsResponseOutputItemDone" in kinds
    assert kinds[-1] == "StreamEventsResponseCompleted"


def test_a_continuation_is_refused_as_the_stateless_beta_refuses_it(server: OrmockServer
                                                                    ) -> None:
    with _client(server) as client, pytest.raises(errors.BadRequestResponseError) as refused:
        client.beta.responses.send(model=MODEL, input="and?", previous_response_id="resp_1")
    assert "stateless" in str(refused.value)


@pytest.mark.parametrize(("status", "error"), [
    (402, errors.PaymentRequiredResponseError),
    (429, errors.TooManyRequestsResponseError),
    (500, errors.InternalServerResponseError)])
def test_injected_errors_reach_the_sdk_as_its_typed_errors(
        server: OrmockServer, status: int, error: type[Exception]) -> None:
    name = f"or{status}"
    server.namespaces.open(name, {"profile": "openrouter"})
    server.engine(name).inject({"http_error": status})
    with OpenRouter(api_key="k", server_url=f"{server.url}/{name}/v1",
                    retry_config=None) as client, pytest.raises(error) as raised:
        client.beta.responses.send(model=MODEL, input="hi")
    assert raised.value.data.error.code == status  # type: ignore[attr-defined]


def test_the_open_responses_envelope_is_not_what_the_sdk_reads() -> None:
    # the reason for the profile: OpenRouter's error code is the HTTP status, a number
    with OrmockServer() as plain:
        plain.engine().inject({"http_error": 429})
        with OpenRouter(api_key="k", server_url=plain.base_url, retry_config=None) as client, \
                pytest.raises(errors.ResponseValidationError):
            client.beta.responses.send(model=MODEL, input="hi")
