"""The real providers' profiles (``ormock.providers``) through the openai SDK against a real
server on 127.0.0.1: a create as JSON and streamed (``stream=True`` and ``responses.stream()``),
a continuation kept or refused the provider's way, an error in the provider's envelope (a
validation 400 and an injected fault), the raw SSE framing, the official checker on the stream,
and the same bytes from a full build, a fresh one and the stream cache."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from ormock import OrmockServer, check_stream
from ormock.probe import run_probe
from ormock.probe.likeness import BEHAVIOURS
from ormock.protocol.profile import get_profile, profile_names
from ormock.providers import PROVIDERS

NAMES = ("openrouter", "ollama", "vllm", "lmstudio", "hf-responses", "seed002")
# the raw framing of a streamed create: (event: lines, leading comment, ends with [DONE])
FRAMING = {
    "openrouter": (False, b": OPENROUTER PROCESSING\n\n", True),
    "ollama": (True, None, False),
    "vllm": (True, None, False),
    "lmstudio": (True, None, True),
    "hf-responses": (False, None, False),
    "seed002": (True, None, True),
}


@pytest.fixture(scope="module", params=NAMES)
def provider(request: pytest.FixtureRequest) -> Iterator[OrmockServer]:
    with OrmockServer(profile=request.param) as server:
        yield server


def _name(server: OrmockServer) -> str:
    return server.engine().profile.name


def _model(server: OrmockServer) -> str:
    return server.engine().profile.models[0].id


def _sdk(server: OrmockServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)


def _raw_stream(server: OrmockServer, **body: Any) -> bytes:
    answer = httpx.post(f"{server.base_url}/responses",
                        json={"model": _model(server), "input": "hi", "stream": True, **body})
    assert answer.status_code == 200
    return answer.content


def test_every_provider_is_registered_through_the_plugin_registry() -> None:
    assert set(NAMES) <= set(profile_names())
    assert profile_names()[:3] == ("openresponses", "openai", "platform")
    for module in PROVIDERS:
        assert "Sources:" in (module.__doc__ or "") or "seed 002" in (module.__doc__ or "")
        assert callable(module.register)


def test_a_create_as_json_and_streamed(provider: OrmockServer) -> None:
    sdk, model = _sdk(provider), _model(provider)
    made = sdk.responses.create(model=model, input="Say hello.")
    assert made.status == "completed" and made.output_text
    streamed = list(sdk.responses.create(model=model, input="Say hello.", stream=True))
    assert streamed[0].type == "response.created"
    assert streamed[-1].type == "response.completed"
    with sdk.responses.stream(model=model, input="Say hello.") as stream:
        final = stream.get_final_response()
    assert final.output_text == made.output_text
    assert made.store is get_profile(_name(provider)).stateful


def test_the_raw_sse_framing(provider: OrmockServer) -> None:
    raw = _raw_stream(provider)
    event_lines, comment, done = FRAMING[_name(provider)]
    assert (re.search(rb"^event: ", raw, re.MULTILINE) is not None) is event_lines
    if comment is None:
        assert raw.startswith(b"event: " if event_lines else b"data: ")
    else:
        assert raw.startswith(comment + b"data: {")
    assert raw.endswith(b"data: [DONE]\n\n") is done
    assert b"\r" not in raw


def test_the_checker_passes_the_stream_under_its_profile(provider: OrmockServer) -> None:
    """The events are spec-shaped under every provider: the official schema holds them."""
    report = check_stream(_raw_stream(provider), profile=_name(provider))
    assert report.ok, report.violations
    assert report.response is not None and report.response["status"] == "completed"


def test_the_fresh_the_cached_and_the_full_build_frame_alike(provider: OrmockServer) -> None:
    """The same content three ways (a fresh build, a stream-cache hit, a full build on a
    self-checking server): the same framing, the same bytes once ids and times are masked."""
    name = _name(provider)
    with OrmockServer(profile=name, seed=5) as fresh, \
            OrmockServer(profile=name, seed=5, self_check=True) as full:
        first = _raw_stream(fresh)
        _raw_stream(fresh)  # built again, and kept by the stream cache
        again = _raw_stream(fresh)  # a hit
        built = _raw_stream(full)
    assert first == built

    def masked(raw: bytes) -> bytes:
        return re.sub(rb'"(resp|msg)_[0-9a-f]+"', b'"ID"', re.sub(rb'"(created_at|completed_at)'
                                                                  rb'":\d+', b'"T":0', raw))
    assert masked(again) == masked(first)


@pytest.mark.parametrize("name", NAMES)
def test_a_continuation_kept_or_refused_the_providers_way(name: str) -> None:
    with OrmockServer(profile=name) as server:
        sdk, model = _sdk(server), _model(server)
        first = sdk.responses.create(model=model, input="Remember 7.")
        if name in ("lmstudio", "seed002"):  # stateful: the parent's context is there
            second = sdk.responses.create(model=model, input="And?",
                                          previous_response_id=first.id)
            assert second.previous_response_id == first.id
            assert sdk.responses.retrieve(second.id).id == second.id
            return
        if name in ("ollama", "hf-responses"):  # dropped unread: answered without a parent
            second = sdk.responses.create(model=model, input="And?",
                                          previous_response_id=first.id)
            assert second.previous_response_id is None and second.store is False
        elif name == "vllm":
            with pytest.raises(openai.NotFoundError) as raised:
                sdk.responses.create(model=model, input="And?", previous_response_id=first.id)
            assert raised.value.response.json() == {"error": {
                "message": f"Response with id '{first.id}' not found.",
                "type": "invalid_request_error", "param": "response_id", "code": 404}}
        else:  # openrouter
            with pytest.raises(openai.BadRequestError) as raised:
                sdk.responses.create(model=model, input="And?", previous_response_id=first.id)
            error = raised.value.response.json()["error"]
            assert error["code"] == 400 and "stateless" in error["message"]
            assert error["metadata"]["param"] == "previous_response_id"
        with pytest.raises(openai.NotFoundError):  # nothing was kept
            sdk.responses.retrieve(first.id)


@pytest.mark.parametrize("name", NAMES)
def test_a_validation_error_in_the_providers_envelope(name: str) -> None:
    with OrmockServer(profile=name) as server:
        answer = httpx.post(f"{server.base_url}/responses",
                            json={"model": _model(server), "input": 42})
    assert answer.status_code == 400
    body = answer.json()
    if name == "openrouter":
        assert set(body["error"]) == {"code", "message", "metadata"}
        assert body["error"]["code"] == 400 and body["error"]["metadata"]["param"] == "input"
    elif name == "hf-responses":
        assert body["success"] is False and body["details"] == body["error"]
        assert body["error"][0]["path"] == ["input"]
    elif name == "ollama":
        assert body["error"]["type"] == "invalid_request_error"
        assert (body["error"]["param"], body["error"]["code"]) == (None, None)
    elif name == "vllm":
        assert (body["error"]["type"], body["error"]["code"]) == ("invalid_request_error", 400)
    else:  # OpenAI's spelling of the error type
        assert (body["error"]["type"], body["error"]["param"]) == \
            ("invalid_request_error", "input")


@pytest.mark.parametrize(("name", "status", "error"), [
    ("openrouter", 402, openai.APIStatusError), ("ollama", 429, openai.RateLimitError),
    ("vllm", 503, openai.InternalServerError), ("hf-responses", 500, openai.InternalServerError),
])
def test_an_injected_fault_in_the_providers_envelope(name: str, status: int,
                                                     error: type[Exception]) -> None:
    with OrmockServer(profile=name) as server:
        server.engine().inject({"http_error": status})
        with pytest.raises(error) as raised:
            _sdk(server).responses.create(model=_model(server), input="hi")
    assert isinstance(raised.value, openai.APIStatusError)
    assert raised.value.status_code == status
    body = raised.value.response.json()
    if name == "openrouter":
        assert body["error"]["code"] == 402 and set(body["error"]) == {"code", "message",
                                                                       "metadata"}
    elif name == "hf-responses":
        assert body["success"] is False and isinstance(body["error"], str)
    elif name == "ollama":
        assert body["error"]["type"] == "api_error" and body["error"]["code"] is None
    else:
        assert body["error"]["code"] == 503


def test_background_the_providers_way() -> None:
    with OrmockServer(profile="vllm") as server:
        with pytest.raises(openai.BadRequestError) as raised:
            _sdk(server).responses.create(model=_model(server), input="hi", background=True)
        assert "VLLM_ENABLE_RESPONSES_API_STORE=1" in raised.value.response.json()["error"][
            "message"]
    with OrmockServer(profile="ollama") as server:  # dropped unread: answered at once
        made = _sdk(server).responses.create(model=_model(server), input="hi", background=True)
        assert made.status == "completed" and made.background is False


def test_lmstudio_refuses_remote_mcp_tools_and_conversations() -> None:
    with OrmockServer(profile="lmstudio") as server:
        sdk = _sdk(server)
        with pytest.raises(openai.BadRequestError) as raised:
            sdk.responses.create(model=_model(server), input="hi", tools=[{
                "type": "mcp", "server_label": "hf", "server_url": "https://huggingface.co/mcp"}])
        error = raised.value.response.json()["error"]
        assert error["param"] == "tools[0].type" and "Remote MCP" in error["message"]
        assert httpx.post(f"{server.base_url}/conversations", json={}).status_code == 404


@pytest.mark.parametrize(("name", "calls"), [("hf-responses", ["get_weather"]),
                                             ("ollama", ["get_weather", "get_weather"])])
def test_hf_responses_keeps_only_the_first_tool_call(name: str, calls: list[str]) -> None:
    with OrmockServer(profile=name) as server:
        server.engine().use("parallel-tool-calls")
        sdk = _sdk(server)
        made = sdk.responses.create(model=_model(server), input="weather?")
        with sdk.responses.stream(model=_model(server), input="weather?") as stream:
            streamed = stream.get_final_response()
        for final in (made, streamed):
            assert [i.name for i in final.output if i.type == "function_call"] == calls


def test_the_models_listed_are_the_providers() -> None:
    with OrmockServer(profile="hf-responses") as server:
        ids = [m.id for m in _sdk(server).models.list()]
    assert ids and all("@" in i for i in ids)


def test_seed002_is_platform_under_another_name() -> None:
    seed, platform = get_profile("seed002"), get_profile("platform")
    assert seed.name == "seed002" and platform.name == "platform"
    assert json.dumps(seed.models and [m.id for m in seed.models]) == \
        json.dumps([m.id for m in platform.models])
    assert (seed.refused_fields, seed.unstored, seed.background) == \
        (platform.refused_fields, platform.unstored, platform.background)


# -- ormock probe names the profile ------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_probe_names_the_profile_a_server_plays(name: str, tmp_path: Path) -> None:
    with OrmockServer(profile=name) as server:
        run = asyncio.run(run_probe(server.base_url, model=_model(server),
                                    cassette=tmp_path / "probe.yaml"))
    assert run.likeness is not None
    closest = run.likeness.closest
    # seed002 is platform under another name: the two are equally close (a plugin's profile
    # another test of this process registered, test_profiles.py's platform-like 'acme', too)
    ours = ("openresponses", "openai", "platform", *NAMES)
    assert [n for n in closest if n in ours] == \
        (["platform", "seed002"] if name == "seed002" else [name])
    assert run.likeness.matched[name] == list(BEHAVIOURS)
    table = run.table()
    assert f"closest profile: {' = '.join(closest)} (8 of 8 behaviours)" in table
    assert run.to_dict()["likeness"]["closest"] == closest


def test_probe_reports_the_evidence_per_behaviour(tmp_path: Path) -> None:
    with OrmockServer(profile="openrouter") as server:
        run = asyncio.run(run_probe(server.base_url, model=_model(server),
                                    cassette=tmp_path / "probe.yaml"))
    assert run.likeness is not None
    observed = run.likeness.observed
    assert observed["framing"] == "data only, comment 'OPENROUTER PROCESSING', [DONE]"
    assert observed["continuation"] == "refused 400"
    assert (observed["retrieve"], observed["store echoed"]) == ("404", "false")
    lines = run.likeness.lines()
    assert "    framing: data only, comment 'OPENROUTER PROCESSING', [DONE]  [openrouter]" \
        in lines


# -- one client test against every profile -----------------------------------------------------
pytest_plugins = ["pytester"]


def test_ormock_profile_runs_a_test_once_per_profile(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_every="""
        import pytest

        def test_client(ormock, ormock_profile):
            client = ormock.openai()
            made = client.responses.create(model="ormock-1", input="hi")
            assert made.output_text
            assert ormock.requests[0].status == 200
            print("PLAYED", ormock_profile, made.store)

        @pytest.mark.parametrize("ormock_profile", ["vllm", "lmstudio"])
        def test_chosen(ormock, ormock_profile):
            made = ormock.openai().responses.create(model="ormock-1", input="hi")
            assert made.store is (ormock_profile == "lmstudio")
    """)
    result = pytester.runpytest("-v", "-s")
    result.assert_outcomes(passed=len(profile_names()) + 2)
    for name in profile_names():  # each run played its own profile: stored or not
        result.stdout.fnmatch_lines([f"*test_client?{name}? PLAYED {name} "
                                     f"{get_profile(name).stateful}"])


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_the_report_says_what_differs_per_profile(pytester: pytest.Pytester,
                                                   xdist: list[str]) -> None:
    # a client that continues a conversation: the stateless providers refuse or drop it
    pytester.makepyfile(test_chain="""
        import pytest

        @pytest.mark.parametrize("ormock_profile", ["openai", "lmstudio", "openrouter", "ollama"])
        def test_continues(ormock, ormock_profile):
            client = ormock.openai()
            first = client.responses.create(model="ormock-1", input="hi")
            second = client.responses.create(model="ormock-1", input="and?",
                                             previous_response_id=first.id)
            assert second.previous_response_id == first.id, "the chain was dropped"
    """)
    result = pytester.runpytest_subprocess(*xdist)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines([
        "*= ormock profiles =*",
        "test_chain.py::test_continues: passed under openai, lmstudio; "
        "failed under openrouter, ollama",
        "  openrouter: openai.BadRequestError: *previous_response_id*",
        "  ollama: AssertionError: the chain was dropped*",
    ])
