"""Secret headers (``ormock.protocol.secrets``): one list of names, masked everywhere ormock
shows or keeps a header value (journal, near-miss messages, pytest reports)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ormock.engine.journal import masked
from ormock.protocol.secrets import (
    KEY_PATTERNS,
    KEY_STARTS,
    is_secret_header,
    mask_headers,
    mask_value,
    scrub,
    scrub_json,
    secret_values,
    shown_value,
)
from ormock.scenario import RequestView, ScenarioSet, load_scenario

SECRET = "sk-secret-XYZ123456"


@pytest.mark.parametrize(("name", "secret"), [
    ("x-goog-api-key", True), ("X-Auth-Token", True), ("my-service-key", True),
    ("refresh-token", True), ("x-client-secret", True), ("Cookie", True), ("set-cookie", True),
    ("Authorization", True), ("OpenAI-Organization", True), ("proxy-authorization", True),
    ("x-api-key", True), ("openai-project", True), ("x-db-password", True),
    ("x-request-id", False), ("user-agent", False), ("content-type", False),
    ("x-tenant", False),
])
def test_finding4_masked_header_names(name: str, secret: bool) -> None:
    value = f"Bearer {SECRET}"
    assert is_secret_header(name) is secret
    assert masked({name: value}) == mask_headers({name: value})
    assert (masked({name: value})[name] == "***") is secret
    scenarios = ScenarioSet()
    scenarios.add(load_scenario({"name": "s", "steps": [
        {"match": {"headers": {name: "Bearer sk-test-*"}}, "reply": {"items": [
            {"message": "ok"}]}}]}))
    misses = scenarios.select(RequestView(model="m", input_text="hi",
                                          headers={name.lower(): value}))
    assert isinstance(misses, list)
    described = misses[0].describe()
    assert f"header {name!r} is " in described and "'Bearer sk-test-*'" in described
    assert (SECRET in described) is not secret
    if secret:
        assert f"'Bearer sk-\u2026' (masked, {len(value)} chars)" in described


def test_masked_headers_are_a_copy_with_only_the_secret_values_replaced() -> None:
    headers = {"host": "h", "Authorization": f"Bearer {SECRET}", "content-type": "json",
               "X-Api-Key": SECRET, "x-request-id": "r1"}
    shown = mask_headers(headers)
    assert shown == {"host": "h", "Authorization": "***", "content-type": "json",
                     "X-Api-Key": "***", "x-request-id": "r1"}
    assert list(shown) == list(headers) and shown is not headers
    assert headers["X-Api-Key"] == SECRET  # the request's own headers untouched


def test_a_key_under_a_header_name_of_its_own_is_masked_in_the_journal() -> None:
    """A gateway's own header (Helicone-Auth, cf-aig-authorization) or any other name: the
    journal, the admin API and the inspector once showed the key as it came."""
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"
    headers = {"Helicone-Auth": f"Bearer {SECRET}", "x-tenant": f"team {SECRET} a",
               "x-session": jwt, "cf-aig-authorization": "Bearer abcdefghijklmnop",
               "x-request-id": "task-1", "user-agent": "OpenAI/Python 1.99.0"}
    assert masked(headers) == mask_headers(headers) == {
        "Helicone-Auth": "Bearer ***", "x-tenant": "team *** a", "x-session": "***",
        "cf-aig-authorization": "***", "x-request-id": "task-1",
        "user-agent": "OpenAI/Python 1.99.0"}


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_every_key_shaped_text_holds_a_key_start(data: st.DataObject) -> None:
    # ``mask_headers`` looks for the patterns only in headers holding one of KEY_STARTS
    for _, pattern in KEY_PATTERNS:
        text = data.draw(st.from_regex(pattern))
        assert any(start in text for start in KEY_STARTS), (pattern.pattern, text)


@pytest.mark.parametrize(("value", "shown"), [
    ("Bearer sk-secret-XYZ", "Bearer sk-\u2026"),  # the scheme and 3 characters
    ("Basic   dXNlcjpwYXNz", "Basic   dXN\u2026"),
    ("sk-abcdefghijkl", "sk-\u2026"),  # no scheme: 3 characters of the key
    ("sk-secret with space", "sk-\u2026"),  # a first word that is no auth scheme is not kept
    ("abcdefg", "a\u2026"),  # a short secret keeps fewer
    ("abc", "\u2026"),
    ("Bearer ", "Bearer \u2026"),
    ("", "\u2026"),
])
def test_a_masked_value_keeps_at_most_the_scheme_and_3_characters(value: str, shown: str
                                                                     ) -> None:
    assert mask_value("authorization", value) == shown
    assert shown_value("authorization", value) == f"{shown!r} (masked, {len(value)} chars)"
    assert mask_value("x-tenant", value) == value and shown_value("x-tenant", value) == repr(value)


def test_scrub_takes_secret_values_out_of_any_message() -> None:
    headers = {"authorization": f"Bearer {SECRET}", "x-tenant": "acme-12345678",
               "cookie": "a=1"}
    text = f"got Bearer {SECRET} then {SECRET} for acme-12345678 with a=1"
    assert scrub(text, headers) == "got *** then *** for acme-12345678 with a=1"


def test_secret_values_are_a_requests_exact_secrets_longest_first() -> None:
    # its secret headers' values and credentials, its secret query values (escaped and not),
    # a key known besides (what a relay sends in their place); none shorter than 8
    google = "AIzaSy%2Bnot-shaped-0123"
    values = secret_values({"authorization": f"Bearer {SECRET}", "x-tenant": "acme-12345678",
                            "cookie": "a=1"}, f"a=1&key={google}", "relayed-key-000", "short",
                           None)
    assert values == tuple(sorted({f"Bearer {SECRET}", SECRET, google, "AIzaSy+not-shaped-0123",
                                   "relayed-key-000"}, key=len, reverse=True))
    assert scrub_json({"m": [f"quoted relayed-key-000 and {SECRET}"], SECRET: 1}, values) == {
        "m": ["quoted *** and ***"], "***": 1}


def test_mask_json_masks_secret_named_and_key_shaped_values() -> None:
    from ormock.protocol.secrets import mask_json

    key = "sk-" + "test-abcdefghijklmnopqrstuv"
    data = {"api_key": key, "password": "hunter2", "note": f"use {key} here", "n": 3,
            "items": [{"x-api-key": "plain"}, "Bearer " + "abcdefghijklmnopqrstuvwxyz"]}
    assert mask_json(data) == {"api_key": "***", "password": "***", "note": "use *** here",
                               "n": 3, "items": [{"x-api-key": "***"}, "***"]}


def test_mask_json_does_not_walk_or_show_what_is_nested_too_deep() -> None:
    from ormock.protocol.secrets import TOO_DEEP, mask_json

    deep: list[object] = ["sk-" + "test-abcdefghijklmnopqrstuv"]
    for _ in range(5000):
        deep = [deep]
    shown = mask_json({"include": deep})
    level = shown["include"]
    for _ in range(63):
        level = level[0]
    assert level == TOO_DEEP
