"""The pytest plugin, run with ``pytester``: the fixtures, the marker, every option (good and bad
values), the after-test checks and their opt-outs, and the clear errors."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import hypothesis.statistics  # noqa: F401
import openai  # noqa: F401
import pytest

# pytester's in-process runs forget the modules they import; what is imported here stays, so
# each run does not import (and assertion-rewrite) the openai SDK and hypothesis again.
pytest_plugins = ["pytester"]

HELLO = """
HELLO = {"name": "hello", "steps": [
    {"match": {"input_contains": "hi"}, "reply": {"items": [{"message": "Hello there"}]}}]}
"""
HELLO_YAML = """\
name: hello-file
steps:
  - match: {input_contains: hi}
    reply:
      items:
        - message: Hello from a file
"""


def _write(pytester: pytest.Pytester, body: str, **files: str) -> None:
    for name, text in files.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    pytester.makepyfile("import pytest\n" + HELLO + textwrap.dedent(body))


def _out(result: pytest.RunResult) -> str:
    return result.stdout.str()


def _contains(result: pytest.RunResult, *texts: str) -> None:
    """Each text is in the output (for lines with brackets, which fnmatch reads as patterns)."""
    out = _out(result)
    missing = [t for t in texts if t not in out]
    assert not missing, f"not in the output: {missing}\n{out}"


# -- the fixture ---------------------------------------------------------------------------------
def test_fixture_serves_a_scenario_and_keeps_the_journal(pytester: pytest.Pytester) -> None:
    _write(pytester, """
        import re

        def test_it(ormock):
            pattern = r"http://127\\.0\\.0\\.1:\\d+/t-[0-9a-f]{8}-\\d+/v1"
            assert re.fullmatch(pattern, ormock.base_url)
            assert ormock.base_url == ormock.url + "/v1"
            assert ormock.call_count == 0 and ormock.requests == []
            scenario = ormock.use({"name": "two", "steps": [
                {"match": {"input_contains": "hi"},
                 "reply": {"items": [{"message": "Hello there"}]}},
                {"match": {"previous_response_id": "step:1"},
                 "reply": {"items": [{"message": "And more"}]}}]})
            assert scenario.name == "two"
            client = ormock.openai()
            assert client.max_retries == 0 and client.api_key == "sk-ormock-test"
            first = client.responses.create(model="gpt-4o", input="hi")
            assert first.output_text == "Hello there"
            second = client.responses.create(model="gpt-4o", input="more",
                                             previous_response_id=first.id)
            ormock.assert_called(times=2)
            ormock.assert_any_call(input_contains="hi", previous_response_id=None)
            ormock.assert_called_with(input_contains="more", previous_response_id=first.id,
                                      model="gpt-4o")
            entry = ormock.requests[0]
            assert entry.path == f"/{ormock.namespace}/v1/responses"
            assert entry.json["input"] == "hi" and entry.headers["authorization"] == "***"
            assert (entry.status, entry.response_id) == (200, first.id)
            assert (entry.scenario, entry.step) == ("two", 1)
            assert entry.events and entry.faults == []
            assert (ormock.requests[1].scenario, ormock.requests[1].step) == ("two", 2)
            assert second.output_text == "And more"
            assert ormock.last_request.response_id == second.id
            assert ormock.engine.journal[0] is entry

        async def _stream(ormock):
            async with ormock.async_openai() as client:
                stream = await client.responses.create(model="m", input="x", stream=True)
                return [event.type async for event in stream]

        def test_async(ormock):
            import asyncio
            types = asyncio.run(_stream(ormock))
            assert types[0] == "response.created" and types[-1] == "response.completed"
            assert ormock.last_request.stream and ormock.last_request.events
    """)
    pytester.runpytest().assert_outcomes(passed=2)


def test_assertion_helpers_list_what_was_received(pytester: pytest.Pytester) -> None:
    _write(pytester, """
        def test_times(ormock):
            ormock.openai().responses.create(model="m", input="first question")
            ormock.assert_called(times=2)

        def test_with(ormock):
            ormock.openai().responses.create(model="m", input="first question")
            ormock.assert_called_with(input_contains="second", tool_outputs=["call_1"])

        def test_none(ormock):
            ormock.assert_any_call(model="m")
    """)
    result = pytester.runpytest()
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([
        "E       AssertionError: expected 2 requests to http://127.0.0.1:*, received 1 request:",
        "E         #1 POST /t-*/v1/responses model='m' input='first question' -> 200 resp_*",
    ])
    _contains(result,
              "AssertionError: expected the last request to have input_contains='second', "
              "tool_outputs=['call_1']; it does not:",
              "E             input does not contain 'second'",
              "E             no function_call_output for ['call_1'] (it carried [])",
              "E       AssertionError: expected a request with model='m'; received none")


def test_scenarios_and_the_assertion_helpers_read_the_same_input_text(
    pytester: pytest.Pytester,
) -> None:
    # two text parts: one input text, each part on a line, for matching, templates and asserts
    _write(pytester, """
        def test_it(ormock):
            ormock.use({"name": "parts", "steps": [
                {"match": {"input_contains": "hello\\nworld"},
                 "reply": {"items": [{"message": "got {{ request.input }}"}]}}]})
            answer = ormock.openai().responses.create(model="m", input=[
                {"role": "user", "content": [{"type": "input_text", "text": "hello"},
                                             {"type": "input_text", "text": "world"}]}])
            assert answer.output_text == "got hello\\nworld"
            ormock.assert_called_with(input_contains="hello\\nworld")
            ormock.assert_any_call(input_contains="hello\\nworld")
    """)
    pytester.runpytest().assert_outcomes(passed=1)


def test_use_finds_catalogue_names_and_files(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\normock_scenarios = shared\n")
    (pytester.path / "shared").mkdir()
    (pytester.path / "shared" / "in-folder.yaml").write_text(
        HELLO_YAML.replace("hello-file", "in-folder"))
    _write(pytester, """
        def test_paths(ormock):
            assert ormock.use("text").name == "text"
            ormock.engine.scenarios.remove("text")  # it answers anything: not in this test
            assert ormock.use("here/hello.yaml").name == "hello-file"   # the test's folder
            assert ormock.use("in-folder.yaml").name == "in-folder"     # ormock_scenarios
            assert ormock.use("in-folder").name == "in-folder"          # a name in the folder
            reply = ormock.openai().responses.create(model="m", input="hi")
            assert reply.output_text == "Hello from a file"
            ormock.engine.scenarios.remove("in-folder")
    """, **{"here/hello.yaml": HELLO_YAML})
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_missing_scenario_file_names_the_paths_searched(pytester: pytest.Pytester) -> None:
    _write(pytester, """
        def test_use(ormock):
            ormock.use("nowhere/missing.yaml")

        @pytest.mark.ormock(scenario="missing.yaml")
        def test_marker(ormock):
            pass

        def test_name(ormock):
            ormock.use("txet")
    """)
    result = pytester.runpytest()
    result.assert_outcomes(failed=2, errors=1)
    here = str(pytester.path)
    result.stdout.fnmatch_lines([
        f"ormock: @pytest.mark.ormock(...) could not be applied: missing.yaml: scenario file not "
        f"found; looked for {here}/missing.yaml (set the ini option ormock_scenarios to add a "
        "folder)",
        ">       ormock.use(\"nowhere/missing.yaml\")",
        f"E       ormock.scenario.source.ScenarioError: nowhere/missing.yaml: scenario file not "
        f"found; looked for {here}/nowhere/missing.yaml (set the ini option ormock_scenarios to "
        "add a folder)",
        "E       ormock.scenario.source.ScenarioError: *no scenario named 'txet' (did you mean "
        "'text'?); the catalogue has *",
    ])


def test_clients_need_openai(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    _write(pytester, """
        def test_it(ormock):
            ormock.openai()
    """)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ormock.openai() and ormock.async_openai() need the openai "
                                 "package: pip install openai*"])


def test_factory_fakes_are_independent(pytester: pytest.Pytester) -> None:
    _write(pytester, """
        @pytest.mark.ormock(scenario=HELLO, assert_all_used=False)
        def test_two(ormock, ormock_factory):
            other = ormock_factory()
            third = ormock_factory(scenario=HELLO)
            assert len({ormock.base_url, other.base_url, third.base_url}) == 3
            assert other.engine.scenarios.scenarios == []  # the marker's scenario is ormock's
            assert other.options.assert_all_used is False  # ... its checks are the test's
            reply = third.openai().responses.create(model="m", input="hi")
            assert reply.output_text == "Hello there"
            other.openai().responses.create(model="m", input="hi")
            assert (ormock.call_count, other.call_count, third.call_count) == (0, 1, 1)

        def test_factory_checks(ormock_factory):
            ormock_factory(scenario=HELLO)
            ormock_factory(scenario=HELLO, assert_all_used=False)

        def test_factory_bad_key(ormock_factory):
            ormock_factory(scenarios=HELLO)
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, failed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*-- ormock fake t-*",
        "*Opt out for this test: ormock_factory(assert_all_used=False), or strict=False*",
        "*ormock_factory: unknown key 'scenarios' (did you mean 'scenario'?)*",
    ])


def test_ormock_env_points_a_default_client_at_the_fake(pytester: pytest.Pytester) -> None:
    _write(pytester, """
        import os
        import openai

        def test_env(ormock_env):
            assert os.environ["OPENAI_BASE_URL"] == ormock_env.base_url
            assert os.environ["OPENAI_API_KEY"] == "sk-ormock-test"
            openai.OpenAI(max_retries=0).responses.create(model="m", input="hi")
            ormock_env.assert_called(times=1)
    """)
    pytester.runpytest().assert_outcomes(passed=1)


def test_namespaces_are_dropped_after_each_test(pytester: pytest.Pytester) -> None:
    _write(pytester, """
        @pytest.mark.parametrize("n", range(20))
        def test_many(ormock, n):
            ormock.openai().responses.create(model="m", input=str(n))
            assert ormock.call_count == 1

        def test_zz_last(ormock, ormock_server):
            ormock.engine
            assert ormock_server.namespaces.names() == [ormock.namespace]
            assert ormock.server is ormock_server
    """)
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=21)


# -- the marker and ormock_config ---------------------------------------------------------------
def test_marker_nearest_wins_and_configures_the_fake(pytester: pytest.Pytester) -> None:
    _write(pytester, """
        pytestmark = pytest.mark.ormock(scenario="text", strict=False)

        def test_module_marker(ormock):
            assert [s.name for s in ormock.engine.scenarios.scenarios] == ["text"]
            assert ormock.options.strict is False

        @pytest.mark.ormock(scenario=[HELLO, "text"], seed=5, speed=0)
        class TestClass:
            def test_class_marker(self, ormock):
                assert [s.name for s in ormock.engine.scenarios.scenarios] == ["hello", "text"]
                assert (ormock.engine.seed, ormock.engine.speed) == (5, 0)
                assert ormock.options.strict is True  # the nearest marker wins, whole
                client = ormock.openai()
                assert client.responses.create(model="m", input="hi").output_text == "Hello there"
                client.responses.create(model="m", input="anything else")  # "text" answers

            @pytest.mark.ormock(assert_all_used=False)
            def test_method_marker(self, ormock):
                assert ormock.engine.scenarios.scenarios == []
                assert (ormock.options.seed, ormock.options.assert_all_used) == (0, False)
    """)
    pytester.runpytest().assert_outcomes(passed=3)


def test_seed_gives_the_same_ids_and_text(pytester: pytest.Pytester) -> None:
    _write(pytester, """
        ids = []

        @pytest.mark.parametrize("n", range(3))
        @pytest.mark.ormock(seed=11)
        def test_seeded(ormock, n):
            reply = ormock.openai().responses.create(model="m", input="same")
            ids.append((reply.id, reply.output_text))

        def test_zz_compare():
            assert len(ids) == 3 and len(set(ids)) == 1
    """)
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=4)


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ("scenarios='text'", "@pytest.mark.ormock: unknown key 'scenarios' (did you mean "
                             "'scenario'?); the known keys are scenario, faults, chaos, cassette, "
                             "cassette_ignore, cassette_order, cassette_speed, "
                             "strict, assert_all_matched, assert_all_used, assert_valid_replies, "
                             "assert_no_server_errors, seed, speed, profile"),
        ("'text'", "@pytest.mark.ormock takes keywords only (scenario, *), not ('text',); "
                   "e.g. @pytest.mark.ormock(scenario='text')"),
        ("strict='no'", "@pytest.mark.ormock: strict must be True or False, not 'no'"),
        ("seed='x'", "@pytest.mark.ormock: seed must be an integer, not 'x'"),
        ("speed=-1", "@pytest.mark.ormock: speed must be a number >= 0 *, not -1"),
        ("scenario=3", "@pytest.mark.ormock: scenario takes a catalogue name, a file path, a "
                       "mapping or a Scenario (or a list), not 3"),
        ("faults=429", "@pytest.mark.ormock: faults takes faults: names ('no_done') or *"),
        ("chaos=1", "@pytest.mark.ormock: chaos must be a string, not 1"),
        ("scenario={'name': 'x', 'steps': []}",
         "ormock: @pytest.mark.ormock(...) could not be applied: steps: [] should be non-empty"),
    ],
)
def test_bad_marker_arguments_fail_the_test_clearly(
    pytester: pytest.Pytester, marker: str, message: str
) -> None:
    _write(pytester, f"""
        @pytest.mark.ormock({marker})
        def test_bad(ormock):
            pass

        def test_others_still_run(ormock):
            pass
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at setup of test_bad*", message])
    assert "During handling" not in _out(result)


def test_ormock_config_fixture_sits_under_the_marker(pytester: pytest.Pytester) -> None:
    _write(pytester, """
        @pytest.fixture(scope="module")
        def ormock_config():
            return {"strict": False, "seed": 3}

        def test_config(ormock):
            assert (ormock.options.strict, ormock.options.seed) == (False, 3)

        @pytest.mark.ormock(strict=True)
        def test_marker_beats_config(ormock):
            assert (ormock.options.strict, ormock.options.seed) == (True, 3)
    """)
    pytester.runpytest().assert_outcomes(passed=2)


def test_bad_ormock_config_is_reported(pytester: pytest.Pytester) -> None:
    _write(pytester, """
        @pytest.fixture
        def ormock_config():
            return {"stric": False}

        def test_it(ormock):
            pass
    """)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the ormock_config fixture: unknown key 'stric' (did you mean "
                                 "'strict'?)*"])


# -- the after-test checks -----------------------------------------------------------------------
CHECKED = """
LITERAL = {"name": "literal", "steps": [{"reply": {"breaks": ["schema", "terminal-count"],
    "events": [{"type": "response.created", "sequence_number": 0, "response": {
        "id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress",
        "model": "m", "output": []}}]}}]}

def boom(entry, reply):
    raise RuntimeError("boom inside the server")

def run(ormock):
    import openai
    client = ormock.openai()
    ormock.use(HELLO)
    if CASE == "unmatched":
        with pytest.raises(openai.BadRequestError):
            client.responses.create(model="m", input="bye")
        client.responses.create(model="m", input="hi")
    if CASE == "unused":
        pass
    if CASE == "literal":
        ormock.engine.scenarios.remove("hello")
        ormock.use(LITERAL)
        with pytest.raises(openai.InternalServerError):
            client.responses.create(model="m", input="hi")
    if CASE == "server":
        ormock.engine.scenarios.remove("hello")
        ormock.engine.on_reply.append(boom)
        with pytest.raises(openai.InternalServerError):
            client.responses.create(model="m", input="hi")

def test_it(ormock):
    run(ormock)

@pytest.mark.ormock(**{OPT_OUT: False})
def test_opted_out(ormock):
    run(ormock)

@pytest.mark.ormock(strict=False)
def test_lenient(ormock):
    run(ormock)
"""


@pytest.mark.parametrize(
    ("case", "lines", "opt_out"),
    [
        ("unmatched", ["ormock after-test checks: 1 request matched no step (docs/pytest.md)",
                       "Requests that no scenario step matched (1); each was answered HTTP 400 "
                       "no_matching_scenario:",
                       "  #1 POST /t-*/v1/responses model='m' input='bye' -> 400 "
                       "no_matching_scenario",
                       "      No scenario step matches this request. Closest: scenario 'hello' "
                       "step 1 (<scenario>): input 'bye' does not contain 'hi'.*"],
         "assert_all_matched"),
        ("unused", ["ormock after-test checks: 1 step not used (docs/pytest.md)",
                    "Scenario steps expected and not used (1):",
                    "  scenario 'hello' step 1 (<scenario>): expected 1 time, used 0"],
         "assert_all_used"),
        ("literal", ["ormock after-test checks: 1 broken reply (docs/pytest.md)",
                     "  scenario 'literal' step 1 (<scenario>) answered a non-streaming request "
                     "with literal events; the client got HTTP 500 unfoldable_reply: This reply "
                     "can only be streamed: its events do not fold into a Response "
                     "(terminal-count*"],
         "assert_valid_replies"),
        ("server", ["ormock after-test checks: 1 error inside the server (docs/pytest.md)",
                    "Errors raised inside the ormock server (1); the client got HTTP 500 "
                    "internal_error:",
                    "  Traceback (most recent call last):",
                    "  RuntimeError: boom inside the server"],
         "assert_no_server_errors"),
    ],
)
def test_after_test_checks_fail_in_teardown_with_an_opt_out(
    pytester: pytest.Pytester, case: str, lines: list[str], opt_out: str
) -> None:
    _write(pytester, f"CASE = {case!r}\nOPT_OUT = {opt_out!r}\n" + CHECKED)
    result = pytester.runpytest()
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_it*", *lines,
                                 f"  Opt out for this test: @pytest.mark.ormock({opt_out}=False), "
                                 "or strict=False for no checks."])


def test_a_failing_test_carries_the_report_instead_of_a_second_error(
    pytester: pytest.Pytester,
) -> None:
    _write(pytester, """
        @pytest.mark.ormock(scenario=HELLO)
        def test_fails(ormock):
            ormock.openai().responses.create(model="m", input="bye")
    """)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*BadRequestError*", "*- ormock after-test checks -*",
                                 "ormock after-test checks: 1 request matched no step, "
                                 "1 step not used (docs/pytest.md)"])



def test_finding4_secret_not_in_pytest_report(pytester: pytest.Pytester) -> None:
    # the inner test builds the key from pieces, so its source lines never hold it whole
    _write(pytester, """
        import httpx

        SECRET = "sk-" + "secret-" + "XYZ123"
        AUTH = {"name": "auth", "steps": [{"match": {"headers": {
            "Authorization": "Bearer sk-test-*"}}, "reply": {"items": [{"message": "ok"}]}}]}

        @pytest.mark.ormock(scenario=AUTH)
        def test_missed(ormock):
            with pytest.raises(Exception):
                ormock.openai(api_key=SECRET).responses.create(model="m", input="hi")
            httpx.post(ormock.base_url + "/responses", json={"model": "m", "input": "hi"},
                       headers={"x-goog-api-key": "AIza" + SECRET, "cookie": "s=" + SECRET})
            assert ormock.engine.journal[0].headers["authorization"] == "***"

        @pytest.mark.ormock(scenario=AUTH)
        def test_failed(ormock):
            ormock.openai(api_key=SECRET).responses.create(model="m", input="hi")
    """)
    result = pytester.runpytest("-vv", "-rA")
    result.assert_outcomes(passed=1, failed=1, errors=1)
    out = _out(result) + result.stderr.str()
    assert "sk-secret-XYZ123" not in out and "secret-XYZ123" not in out
    _contains(result, "ormock after-test checks: 2 requests matched no step",
              "header 'Authorization' is 'Bearer sk-\u2026' (masked, 23 chars), not "
              "'Bearer sk-test-*'")

def test_ini_strict_is_the_default_and_a_marker_overrides_it(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\normock_strict = false\n")
    _write(pytester, """
        @pytest.mark.ormock(scenario=HELLO)
        def test_lenient(ormock):
            assert ormock.options.strict is False

        @pytest.mark.ormock(scenario=HELLO, strict=True)
        def test_strict_again(ormock):
            pass
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_strict_again*"])


def test_skipped_and_xfailed_tests_are_not_checked(pytester: pytest.Pytester) -> None:
    _write(pytester, """
        @pytest.mark.ormock(scenario=HELLO)
        def test_skipped(ormock):
            pytest.skip("later")

        @pytest.mark.xfail(reason="known")
        @pytest.mark.ormock(scenario=HELLO)
        def test_xfail(ormock):
            raise AssertionError
    """)
    pytester.runpytest().assert_outcomes(skipped=1, xfailed=1)


# -- faults, chaos, cassettes --------------------------------------------------------------------
def test_faults_from_the_marker_and_from_use(pytester: pytest.Pytester) -> None:
    _write(pytester, """
        import openai
        from ormock.faults import parse_fault

        @pytest.mark.ormock(faults={"http_error": {"status": 429}})
        def test_marker(ormock):
            with pytest.raises(openai.RateLimitError):
                ormock.openai().responses.create(model="m", input="hi")
            assert ormock.requests[0].faults == ["http_error"]

        @pytest.mark.ormock(faults=["no_done", {"http_error": 503, "when": {"nth": 2}}])
        def test_marker_list(ormock):
            assert [f.name for f in ormock.engine.faults] == ["no_done", "http_error"]

        def test_use(ormock):
            fault = ormock.use({"http_error": {"status": 503}})
            assert ormock.engine.faults == [fault]
            assert ormock.use(parse_fault("no_done")).name == "no_done"
            with pytest.raises(openai.InternalServerError):
                ormock.openai().responses.create(model="m", input="hi")

        def test_retry_with_the_sdk(ormock):
            ormock.use({"http_error": {"status": 429, "retry_after_ms": 1}, "when": {"nth": 1}})
            reply = ormock.openai(max_retries=2).responses.create(model="m", input="hi")
            assert reply.status == "completed"
            assert [r.status for r in ormock.requests] == [429, 200]

        @pytest.mark.ormock(chaos="rate=1,seed=7,faults=http_error:429")
        def test_chaos(ormock):
            with pytest.raises(openai.RateLimitError):
                ormock.openai().responses.create(model="m", input="hi")
            assert ormock.requests[0].faults == ["http_error"]

        @pytest.mark.ormock(faults={"http_eror": {}})
        def test_bad_fault(ormock):
            pass

        @pytest.mark.ormock(chaos="rate=lots")
        def test_bad_chaos(ormock):
            pass
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=5, errors=2)
    result.stdout.fnmatch_lines([
        "ormock: @pytest.mark.ormock(...) could not be applied: faults?0?: unknown fault "
        "'http_eror' (did you mean 'http_error'?); known faults: *",
        "ormock: @pytest.mark.ormock(...) could not be applied: chaos spec 'rate=lots': rate "
        "must be a number from 0 to 1, not 'lots'",
    ])


# -- command-line and ini options ----------------------------------------------------------------
def test_options_are_grouped_under_one_heading(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines([
        "ormock: a fake Open Responses provider per test:",
        "  --ormock-record={none,once,new_episodes,all,rewrite,drift}",
        "*--ormock-upstream=URL*",
        "*--ormock-upstream-key-env=NAME*",
        "*--ormock-seed=N*",
        "*--ormock-speed=X*",
    ])
    result.stdout.fnmatch_lines(["*ormock_scenarios (string):*", "*ormock_plugins (linelist):*",
                                 "*ormock_strict (bool):*", "*ormock_seed (string):*",
                                 "*ormock_upstream (string):*", "*ormock_cassette_dir (string):*"])
    markers = pytester.runpytest("--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.ormock(scenario=None, faults=None, *): configure "
                                  "the test's ormock fake*"])


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--ormock-record=sometimes"], "",
         "*argument --ormock-record: invalid choice: 'sometimes' (choose from *none*, *once*, "
         "*new_episodes*, *all*, *rewrite*)"),
        (["--ormock-upstream", "api.openai.com"], "",
         "*--ormock-upstream must be an http:// or https:// URL, not 'api.openai.com'"),
        (["--ormock-seed", "x"], "", "*argument --ormock-seed: invalid int value: 'x'"),
        (["--ormock-speed", "-2"], "",
         "*argument --ormock-speed: speed must be a number >= 0 (0 is instant, 1 as scripted, "
         "2 twice as fast), not '-2'"),
        (["--ormock-speed", "fast"], "", "*argument --ormock-speed: speed must be a number*"),
        ([], "ormock_seed = seven", "*ini option ormock_seed: seed must be an integer, not "
                                    "'seven'"),
        ([], "ormock_strict = maybe", "*ini option ormock_strict: *maybe* (use true or false)"),
        ([], "ormock_scenarios = nowhere", "*ini option ormock_scenarios: */nowhere is not a "
                                           "folder"),
        ([], "ormock_plugins = no_such_ormock_extension",
         "*ini option ormock_plugins: plugin 'no_such_ormock_extension' failed to import: "
         "No module named 'no_such_ormock_extension'"),
    ],
)
def test_bad_options_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], ini: str, message: str
) -> None:
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_seed_and_speed_precedence(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Command line > marker > ormock_config > ini for a fake; the server takes the session's."""
    pytester.makeini("[pytest]\normock_seed = 4\n")
    _write(pytester, """
        import os

        @pytest.fixture
        def ormock_config():
            return {"seed": 5, "speed": 3}

        CLI = os.environ.get("CLI") == "1"

        def test_config(ormock, ormock_server):
            expected = (9, 0.5) if CLI else (5, 3)
            assert (ormock.options.seed, ormock.options.speed) == expected
            assert ormock_server.namespaces.seed == (9 if CLI else 4)

        @pytest.mark.ormock(seed=6, speed=2)
        def test_marker(ormock):
            assert (ormock.engine.seed, ormock.engine.speed) == (
                (9, 0.5) if CLI else (6, 2))
    """)
    pytester.runpytest().assert_outcomes(passed=2)
    monkeypatch.setenv("CLI", "1")
    result = pytester.runpytest("--ormock-seed", "9", "--ormock-speed", "0.5")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["ormock: seed=9, speed=0.5"])


def test_plugins_are_registered_at_the_start(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\normock_plugins =\n    my_ormock_extension\n")
    pytester.makepyfile(my_ormock_extension="LOADED = False\n\n\ndef register(registry):\n"
                        "    global LOADED\n    LOADED = True\n")
    pytester.syspathinsert()
    _write(pytester, """
        import sys

        def test_loaded(ormock):
            assert sys.modules["my_ormock_extension"].LOADED
    """)
    pytester.runpytest().assert_outcomes(passed=1)


# -- the docs ------------------------------------------------------------------------------------
def test_the_quick_start_and_recipes_in_the_docs_pass(pytester: pytest.Pytester) -> None:
    docs = (Path(__file__).parent.parent / "docs" / "pytest.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", docs, re.DOTALL)
    runnable = [b for b in blocks if b.startswith(("# recipe:", "def test_hello"))]
    assert len(runnable) == 5
    for index, block in enumerate(runnable):
        pytester.makepyfile(**{f"test_docs_{index}": block})
    result = pytester.runpytest()
    result.assert_outcomes(passed=6)
