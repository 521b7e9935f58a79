"""Provider profiles as plugins: the platform profile's rules (seed 002's stateful subset) through
the openai SDK and raw HTTP against a real server (create, compact and input_tokens), a plugin's
own profile, and choosing a profile per server, namespace and scenario. (The openai profile's
spellings: test_profile.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from ormock import OrmockServer
from ormock.plugins import Registry
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.profile import (
    DEFAULT_MODELS,
    PLATFORM,
    PROFILES,
    get_profile,
    profile_names,
)
from ormock.scenario import ScenarioError, load_scenario

ASSISTANT = "assistant:asst_ormock_text"
ROOT = Path(__file__).resolve().parents[1]

PLUGIN = '''
from dataclasses import replace

from ormock.protocol.profile import Model, get_profile


def register(registry):
    registry.profile(replace(get_profile("platform"), name="acme",
                             description="Acme's assistants (a test plugin)",
                             models=(Model("assistant:asst_acme", "acme", ("responses",)),)))
'''


@pytest.fixture(scope="module")
def platform() -> Iterator[OrmockServer]:
    with OrmockServer(profile="platform", self_check=True) as server:
        yield server


def _sdk(server: OrmockServer | str) -> openai.OpenAI:
    base = server if isinstance(server, str) else server.base_url
    return openai.OpenAI(base_url=base, api_key="sk-rt-test", max_retries=0)


def _refused(call: Any) -> dict[str, Any]:
    """The error envelope's ``error`` of a call the server refuses with 400."""
    with pytest.raises(openai.BadRequestError) as raised:
        call()
    assert raised.value.status_code == 400
    error: dict[str, Any] = raised.value.response.json()["error"]
    return error


# -- the platform profile's rules ---------------------------------------------------------------
def test_store_must_be_true_or_left_out(platform: OrmockServer) -> None:
    sdk = _sdk(platform)
    error = _refused(lambda: sdk.responses.create(model=ASSISTANT, input="hi", store=False))
    assert (error["param"], error["code"], error["type"]) == \
        ("store", "unsupported_parameter", "invalid_request_error")
    assert "store" in error["message"]
    for kept in (sdk.responses.create(model=ASSISTANT, input="hi", store=True),
                 sdk.responses.create(model=ASSISTANT, input="hi")):
        assert sdk.responses.retrieve(kept.id).id == kept.id


def test_no_background_mode(platform: OrmockServer) -> None:
    sdk = _sdk(platform)
    error = _refused(lambda: sdk.responses.create(model=ASSISTANT, input="hi", background=True))
    assert (error["param"], error["type"]) == ("background", "invalid_request_error")
    # what the cancel endpoint reads (400 unsupported_operation under this profile)
    assert platform.engine().profile.background is False
    assert get_profile("openresponses").background is True


def test_refusing_background_is_the_profiles_rule_too() -> None:
    from ormock.protocol.request import parse_request

    request = parse_request({"model": "m", "input": "x"})
    request.body["background"] = True
    with pytest.raises(OpenResponsesError, match="no background mode") as raised:
        PLATFORM.check_request(request)
    assert (raised.value.param, raised.value.status) == ("background", 400)
    get_profile("openresponses").check_request(request)  # no rule of its own


def test_only_text_messages_and_tool_outputs_are_input(platform: OrmockServer) -> None:
    sdk = _sdk(platform)
    error = _refused(lambda: sdk.responses.create(model=ASSISTANT, input=[
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
    ]))
    assert (error["param"], error["code"]) == ("input[1].type", "unsupported_value")
    assert "function_call" in error["message"]
    error = _refused(lambda: sdk.responses.create(model=ASSISTANT, input=[
        {"role": "user", "content": [
            {"type": "input_text", "text": "what is this?"},
            {"type": "input_image", "image_url": "https://example.com/a.png"}]},
    ]))
    assert error["param"] == "input[0].content[1].type"
    taken = sdk.responses.create(model=ASSISTANT, input=[
        {"role": "user", "content": [{"type": "input_text", "text": "Confirm?"}]},
        {"type": "function_call_output", "call_id": "call_1", "output": '{"status":"ok"}'},
    ])
    assert taken.status == "completed"


@pytest.mark.parametrize(("field", "value"), [
    ("instructions", "Be terse."),
    ("tools", [{"type": "function", "name": "show_message", "parameters": {"type": "object"}}]),
])
def test_no_caller_instructions_or_tools(platform: OrmockServer, field: str, value: Any) -> None:
    sdk = _sdk(platform)
    error = _refused(lambda: sdk.responses.create(model=ASSISTANT, input="hi", **{field: value}))
    assert (error["param"], error["code"]) == (field, "unsupported_parameter")
    assert f"'{field}'" in error["message"]



@pytest.mark.parametrize("endpoint", ["/responses/compact", "/responses/input_tokens"])
@pytest.mark.parametrize("extra", [
    {"instructions": "Be terse."},
    {"tools": [{"type": "function", "name": "show_message", "parameters": {"type": "object"}}]},
    {"input": [{"role": "user", "content": "hi"},
               {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}]},
    {"input": [{"role": "user", "content": [
        {"type": "input_text", "text": "what is this?"},
        {"type": "input_image", "image_url": "https://example.com/a.png"}]}]},
])
def test_compact_and_input_tokens_refuse_what_create_refuses(
        platform: OrmockServer, endpoint: str, extra: dict[str, Any]) -> None:
    body = {"model": ASSISTANT, "input": "hi", **extra}
    with httpx.Client(base_url=platform.base_url) as raw:
        created = raw.post("/responses", json=body)
        refused = raw.post(endpoint, json=body)
        taken = raw.post(endpoint, json={"model": ASSISTANT, "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Confirm?"}]},
            {"type": "function_call_output", "call_id": "call_1", "output": "{}"}]})
    assert created.status_code == refused.status_code == 400
    assert refused.json()["error"] == created.json()["error"]
    assert refused.json()["error"]["type"] == "invalid_request_error"
    assert taken.status_code == 200, taken.text


@pytest.mark.parametrize("path", ["/responses", "/responses/input_tokens"])
def test_a_conversation_is_refused_not_looked_up(platform: OrmockServer, path: str) -> None:
    with httpx.Client(base_url=platform.base_url) as raw:
        refused = raw.post(path, json={"model": ASSISTANT, "input": "hi",
                                       "conversation": "conv_anything"})
    error = refused.json()["error"]
    assert refused.status_code == 400
    assert (error["param"], error["code"]) == ("conversation", "unsupported_parameter")


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/conversations"), ("GET", "/conversations/conv_x"),
    ("GET", "/conversations/conv_x/items"), ("DELETE", "/conversations/conv_x")])
def test_the_platform_has_no_conversations_api(platform: OrmockServer, method: str,
                                               path: str) -> None:
    with httpx.Client(base_url=platform.base_url) as raw:
        answer = raw.request(method, path, json={} if method == "POST" else None)
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "unknown_route"
    assert "'platform' profile has no conversations API" in answer.json()["error"]["message"]


def test_usage_is_null_not_estimated(platform: OrmockServer) -> None:
    sdk = _sdk(platform)
    response = sdk.responses.create(model=ASSISTANT, input="Tell me about the product.")
    assert response.usage is None and response.output_text
    assert sdk.responses.retrieve(response.id).usage is None
    events = list(sdk.responses.create(model=ASSISTANT, input="Stream it.", stream=True))
    assert [e.type for e in events][-1] == "response.completed"
    assert events[-1].response.usage is None  # type: ignore[union-attr]
    # the default profile still counts
    with OrmockServer() as default:
        assert _sdk(default).responses.create(model="m", input="hi").usage is not None


def test_a_reply_with_its_own_counts_keeps_them() -> None:
    scenario = {"name": "counted", "steps": [
        {"match": {"input_contains": "counted"},
         "reply": {"items": [{"message": "ok"}], "usage": {"input_tokens": 7,
                                                            "output_tokens": 3}}},
        {"reply": {"items": [{"message": "estimated"}]}}]}
    with OrmockServer(profile="platform") as server:
        server.engine().use(scenario)
        sdk = _sdk(server)
        usage = sdk.responses.create(model=ASSISTANT, input="counted").usage
        assert usage is not None and (usage.input_tokens, usage.output_tokens) == (7, 3)
        assert sdk.responses.create(model=ASSISTANT, input="other").usage is None


def test_continuations_may_omit_the_model(platform: OrmockServer) -> None:
    sdk = _sdk(platform)
    first = sdk.responses.create(model=ASSISTANT, input="First turn")
    second = sdk.responses.create(previous_response_id=first.id, input="Second turn")
    assert (second.model, second.previous_response_id) == (ASSISTANT, first.id)


def test_models_lists_the_assistants_with_capabilities(platform: OrmockServer) -> None:
    listed = _sdk(platform).models.list()
    data = [m.to_dict() for m in listed.data]
    assert [(m["id"], m["capabilities"]) for m in data] == [
        ("assistant:asst_ormock_text", ["responses"]),
        ("assistant:asst_ormock_voice", ["responses", "realtime"]),
        ("assistant:asst_ormock_realtime", ["realtime"]),
    ]
    assert {m["object"] for m in data} == {"model"}


def test_models_of_the_default_profile_are_unchanged(http: httpx.Client) -> None:
    assert http.get("/models").json() == {"object": "list", "data": [
        {"id": m, "object": "model", "created": 1767225600, "owned_by": "ormock"}
        for m in ("ormock-1", "gpt-4o-mini", "gpt-4.1", "gpt-5")]}
    assert [m.id for m in DEFAULT_MODELS] == ["ormock-1", "gpt-4o-mini", "gpt-4.1", "gpt-5"]


def test_the_error_envelope_spells_openais_types(platform: OrmockServer) -> None:
    with httpx.Client(base_url=platform.base_url) as raw:
        missing = raw.get("/responses/resp_missing")
        bad = raw.post("/responses", json={"model": ASSISTANT, "input": 3})
    assert missing.status_code == 404
    error = missing.json()["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "response_not_found")
    assert set(error) == {"type", "code", "message", "param"}
    assert missing.headers["content-length"] == str(len(missing.content))
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"


def test_the_default_error_envelope_is_unchanged(http: httpx.Client) -> None:
    error = http.get("/responses/resp_missing").json()["error"]
    assert (error["type"], error["code"]) == ("not_found", "response_not_found")


# -- a plugin's own profile ---------------------------------------------------------------------
@pytest.fixture
def acme_plugin(tmp_path: Path) -> Iterator[Path]:
    """The plugin's file; the profiles it registers in this process are forgotten after the
    test (a later test in the same process finds no ``acme``)."""
    path = tmp_path / "acme_profile.py"
    path.write_text(PLUGIN)
    before = dict(PROFILES)
    yield path
    PROFILES.clear()
    PROFILES.update(before)


def test_a_plugin_registers_a_profile(acme_plugin: Path) -> None:
    with OrmockServer(profile="acme", plugins=[str(acme_plugin)]) as server:
        assert "acme" in profile_names()
        assert [m.id for m in _sdk(server).models.list().data] == ["assistant:asst_acme"]
        error = _refused(lambda: _sdk(server).responses.create(
            model="assistant:asst_acme", input="hi", store=False))
        assert error["param"] == "store"


def test_registry_profile_returns_what_it_registered() -> None:
    from dataclasses import replace

    mine = replace(get_profile("openresponses"), name="test-registry", description="mine")
    assert Registry().profile(mine) is mine
    assert get_profile("test-registry") is mine
    with pytest.raises(TypeError, match="Profile"):
        Registry().profile("nope")  # type: ignore[arg-type]


def _when_up(url: str) -> httpx.Response:
    """GET ``url`` once the server listens (it says where before it does)."""
    deadline = time.monotonic() + 20
    while True:
        try:
            return httpx.get(url, timeout=10)
        except httpx.ConnectError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_serve_selects_a_plugins_profile(acme_plugin: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "ormock", "serve", "--port", "0", "--plugin", str(acme_plugin),
         "--profile", "acme"], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "ormock serving Open Responses on " in line, line
        base = line.split(" on ", 1)[1].split(" ")[0]
        models = _when_up(f"{base}/models").json()["data"]
        assert [m["id"] for m in models] == ["assistant:asst_acme"]
    finally:
        process.terminate()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


# -- per namespace and per scenario -------------------------------------------------------------
def test_a_namespace_plays_its_own_profile() -> None:
    with OrmockServer() as server:
        server.namespaces.open("plat")
        server.engine("plat").profile = get_profile("platform")
        plat = _sdk(f"{server.url}/plat/v1")
        assert _refused(lambda: plat.responses.create(model="m", input="x", store=False)
                        )["param"] == "store"
        assert _sdk(server).responses.create(model="m", input="x", store=False).store is False


SCENARIO = """
name: platform-assistant
profile: platform
strict: false
steps:
  - match: {model: "assistant:asst_scenario"}
    times: forever
    reply:
      items: [{message: "From the assistant."}]
"""


def test_a_scenario_plays_its_own_profile() -> None:
    with OrmockServer() as server:
        server.engine().use(SCENARIO)
        sdk = _sdk(server)
        answered = sdk.responses.create(model="assistant:asst_scenario", input="hi")
        assert (answered.output_text, answered.usage) == ("From the assistant.", None)
        assert _refused(lambda: sdk.responses.create(
            model="assistant:asst_scenario", input="hi", instructions="Be brief."))["param"] \
            == "instructions"
        # other requests: the server's profile (instructions taken, usage counted)
        other = sdk.responses.create(model="m", input="hi", instructions="Be brief.")
        assert other.usage is not None


def test_a_scenario_naming_an_unknown_profile_is_refused() -> None:
    with pytest.raises(ScenarioError, match="unknown profile 'nope'") as raised:
        load_scenario(SCENARIO.replace("profile: platform", "profile: nope"))
    assert raised.value.key == "profile"
    assert load_scenario(SCENARIO).profile is PLATFORM


pytest_plugins = ["pytester"]


def test_a_marker_gives_a_fake_its_profile(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import openai
        import pytest

        @pytest.mark.ormock(profile="platform")
        def test_platform(ormock):
            with pytest.raises(openai.BadRequestError) as raised:
                ormock.openai().responses.create(model="m", input="x", store=False)
            assert raised.value.response.json()["error"]["param"] == "store"
            assert ormock.openai().models.list().data[0].id.startswith("assistant:")

        def test_default(ormock):
            assert ormock.openai().responses.create(model="m", input="x",
                                                    store=False).store is False

        def test_factory(ormock_factory):
            fake = ormock_factory(profile="platform")
            assert fake.openai().models.list().data[0].id.startswith("assistant:")

        @pytest.mark.ormock(profile="nope")
        def test_unknown(ormock):
            pass
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*unknown profile 'nope'*use one of openresponses*"])
