"""Project extension fields (top-level ``x_...``): inherited along a ``previous_response_id``
chain, overridable key by key, kept in the store (every backend, through a deleted ancestor),
echoed on the Response and seen by scenario templates."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from stores import BACKENDS, store_spec

from ormock import OrmockServer
from ormock.engine.store import Stored
from ormock.protocol.request import inherit_extensions, parse_request
from ormock.protocol.types import Json
from ormock.scenario import load_scenario


def _media(**variables: Any) -> dict[str, Any]:
    return {"x_interactive_media": {"variables": variables}}


def _extensions(response: Any) -> Any:
    return (response.model_extra or {}).get("x_interactive_media")


@pytest.fixture(params=BACKENDS)
def sdk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[openai.OpenAI]:
    spec = store_spec(request.param, request, tmp_path)
    with OrmockServer(seed=0, self_check=True, store=spec) as server, openai.OpenAI(
            base_url=server.base_url, api_key="sk-test", max_retries=0,
            _strict_response_validation=True) as client:
        yield client


def test_three_generations_inherit_and_override_piecewise(sdk: openai.OpenAI) -> None:
    first = sdk.responses.create(model="gpt-4o-mini", input="one",
                                 extra_body=_media(a=1, b=2, tier={"level": "gold", "x": 1}))
    second = sdk.responses.create(previous_response_id=first.id, input="two",
                                  extra_body=_media(b=3, tier={"level": "platinum"}))
    third = sdk.responses.create(previous_response_id=second.id, input="three")
    assert _extensions(first) == {"variables": {"a": 1, "b": 2,
                                                "tier": {"level": "gold", "x": 1}}}
    expected = {"variables": {"a": 1, "b": 3, "tier": {"level": "platinum", "x": 1}}}
    assert _extensions(second) == expected
    assert _extensions(third) == expected
    # what the store kept: a GET sees the same, and so does the next generation
    assert _extensions(sdk.responses.retrieve(third.id)) == expected
    fourth = sdk.responses.create(previous_response_id=third.id, input="four",
                                  extra_body=_media(tier="none"))
    assert _extensions(fourth) == {"variables": {"a": 1, "b": 3, "tier": "none"}}


def test_a_branch_does_not_see_its_siblings_override(sdk: openai.OpenAI) -> None:
    root = sdk.responses.create(model="gpt-4o-mini", input="root", extra_body=_media(a=1, b=2))
    left = sdk.responses.create(previous_response_id=root.id, input="left",
                                extra_body=_media(b="left"))
    right = sdk.responses.create(previous_response_id=root.id, input="right")
    assert _extensions(left) == {"variables": {"a": 1, "b": "left"}}
    assert _extensions(right) == {"variables": {"a": 1, "b": 2}}
    below_right = sdk.responses.create(previous_response_id=right.id, input="below")
    assert _extensions(below_right) == {"variables": {"a": 1, "b": 2}}


def test_a_deleted_ancestor_keeps_its_fields_for_its_children(sdk: openai.OpenAI) -> None:
    root = sdk.responses.create(model="gpt-4o-mini", input="root", extra_body=_media(a=1))
    child = sdk.responses.create(previous_response_id=root.id, input="child",
                                 extra_body=_media(b=2))
    sdk.responses.delete(root.id)
    grandchild = sdk.responses.create(previous_response_id=child.id, input="grandchild")
    assert _extensions(grandchild) == {"variables": {"a": 1, "b": 2}}


def test_a_response_without_extension_fields_echoes_none(sdk: openai.OpenAI) -> None:
    first = sdk.responses.create(model="gpt-4o-mini", input="plain")
    second = sdk.responses.create(previous_response_id=first.id, input="still plain")
    assert not any(key.startswith("x_") for key in (second.model_extra or {}))
    third = sdk.responses.create(previous_response_id=second.id, input="now",
                                 extra_body={"x_other": [1, 2]})
    assert (third.model_extra or {}).get("x_other") == [1, 2]


def test_a_reply_from_the_stream_cache_echoes_them() -> None:
    """Without self-check the third of three same bodies comes from the stream cache (whose
    key holds the fields in effect): it echoes them as the first did."""
    with OrmockServer(seed=0) as server, openai.OpenAI(
            base_url=server.base_url, api_key="sk-test", max_retries=0) as client:
        for value in (1, 2):
            sdk_reply = client.responses.create(model="gpt-4o-mini", input="same",
                                                extra_body=_media(a=value))
            for _ in range(2):  # the second kept, the third from the cache
                again = client.responses.create(model="gpt-4o-mini", input="same",
                                                extra_body=_media(a=value))
            assert _extensions(sdk_reply) == _extensions(again) == {"variables": {"a": value}}


def test_templates_read_the_fields_in_effect(server: OrmockServer, client: openai.OpenAI,
                                             base_url: str) -> None:
    namespace = base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]
    server.engine(namespace).use(load_scenario("""
name: greeting
steps:
  - reply:
      items:
        - message: "Hello {{ request.extensions.x_interactive_media.variables.name }},
            {{ request.extensions.x_interactive_media.variables.level }}
            {{ request.extensions.x_interactive_media.variables.missing }}|
            {{ request.extensions.x_interactive_media }}"
    times: forever
"""))
    first = client.responses.create(model="gpt-4o-mini", input="hi",
                                    extra_body=_media(name="Wang", level="gold"))
    second = client.responses.create(previous_response_id=first.id, input="again",
                                     extra_body=_media(level=3))
    assert first.output_text == ('Hello Wang, gold | {"variables":{"level":"gold",'
                                 '"name":"Wang"}}')
    assert second.output_text == 'Hello Wang, 3 | {"variables":{"level":3,"name":"Wang"}}'


def test_parse_and_merge() -> None:
    request = parse_request({"model": "m", "input": "hi", "x_a": {"b": 1}, "metadata": {}})
    assert request.extensions == {"x_a": {"b": 1}}
    assert "x_a" not in request.echo
    base: Json = {"x_a": {"b": {"c": 1, "d": 2}, "e": [1]}, "x_f": 1}
    assert inherit_extensions(base, {"x_a": {"b": {"d": 3}, "e": [2]}, "x_g": None}) == {
        "x_a": {"b": {"c": 1, "d": 3}, "e": [2]}, "x_f": 1, "x_g": None}
    assert base == {"x_a": {"b": {"c": 1, "d": 2}, "e": [1]}, "x_f": 1}  # unchanged


def test_stored_records_keep_them_and_older_records_read_as_none() -> None:
    stored = Stored({"id": "resp_1", "output": []}, [], extensions={"x_a": {"b": 1}})
    assert Stored.decode(stored.encode()).extensions == {"x_a": {"b": 1}}
    plain = Stored({"id": "resp_2", "output": []}, []).encode()
    assert b"extensions" not in plain.partition(b"\n")[0]  # an old record's bytes, unchanged
    assert Stored.decode(plain).extensions == {}
