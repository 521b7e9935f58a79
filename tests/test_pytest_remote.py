"""The pytest plugin on a shared server (``--ormock-url``): a real ``ormock serve`` process, and
``pytester`` runs of small suites whose fakes are namespaces of it, opened, configured, read and
dropped through its admin API; with xdist, and with the server on Redis with two workers."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from ormock import OrmockServer
from tests.stores import RedisServer, free_port, serve

pytest_plugins = ["pytester"]

_ROOT = Path(__file__).resolve().parent.parent

SUITE = """
import os

import openai
import pytest

HELLO = {"name": "hello", "steps": [
    {"match": {"input_contains": "hi"}, "times": "forever",
     "reply": {"items": [{"message": "Hello there"}]}}]}


def test_one(ormock):
    if "ORMOCK_TEST_ROOT" in os.environ:  # on the shared server
        assert ormock.base_url.startswith(os.environ["ORMOCK_TEST_ROOT"] + "/")
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        assert ormock.namespace.startswith(worker + "-"), ormock.namespace
    ormock.use(HELLO)
    client = ormock.openai()
    reply = client.responses.create(model="m", input="hi from one")
    assert reply.output_text == "Hello there"
    assert [r.json["input"] for r in ormock.requests] == ["hi from one"]
    assert ormock.last_request.scenario == "hello" and ormock.last_request.step == 1


def test_two(ormock):
    ormock.use(HELLO)
    client = ormock.openai()
    for n in range(2):
        client.responses.create(model="m", input=f"hi from two {n}")
    assert [r.json["input"] for r in ormock.requests] == ["hi from two 0", "hi from two 1"]
    ormock.assert_called(times=2)
    ormock.assert_called_with(input_contains="two 1")


# after the reset the client gives up on the 429: the step's answer never goes out, which the
# after-test check would say (a faulted attempt uses no step)
@pytest.mark.ormock(assert_all_used=False)
def test_a_fault_and_the_verdict(ormock):
    ormock.use("text")  # a catalogue scenario, sent as its YAML
    fault = ormock.inject({"http_error": {"status": 429, "retry_after_ms": 50},
                           "when": {"nth": 1}})
    retrying = ormock.openai(max_retries=2)
    assert retrying.responses.create(model="m", input="first").status == "completed"
    first, second = ormock.requests
    assert (first.status, second.status) == (429, 200)
    assert first.faults and not second.faults, (first.faults, fault)
    verdict = ormock.verdict()
    assert verdict.requests == 2 and verdict.faults == 1
    assert verdict.ok, str(verdict)  # the SDK retried, after the retry-after-ms
    ormock.reset()
    assert ormock.requests == []
    with pytest.raises(openai.RateLimitError):  # reset: the fault counts start over
        ormock.openai().responses.create(model="m", input="third")
    verdict = ormock.verdict()
    assert verdict.codes == ["gave-up-too-early"], (
        str(verdict), [(r.at, r.status, r.json["input"], r.faults) for r in ormock.requests])
    with pytest.raises(AssertionError, match="allow=\\\\('gave-up-too-early',\\\\)"):
        ormock.assert_resilient()
    assert ormock.assert_resilient(allow=["gave-up-too-early"]).allowed


@pytest.mark.ormock(scenario="text", chaos="rate=1,seed=3,faults=http_error:503",
                    assert_all_used=False)  # every attempt faulted: no answer went out
def test_chaos_from_the_marker(ormock):
    with pytest.raises(openai.InternalServerError):
        ormock.openai().responses.create(model="m", input="anything")
    assert ormock.requests[0].status == 503 and ormock.requests[0].faults


def test_the_seed_gives_the_ids(ormock_factory):
    ids = []
    for seed in (7, 7, 8):
        fake = ormock_factory(scenario="text", seed=seed)
        ids.append(fake.openai().responses.create(model="m", input="x").id)
    assert ids[0] == ids[1] != ids[2]
"""


@pytest.fixture(scope="module")
def shared() -> Iterator[str]:
    """One ``ormock serve`` of this module's: its root URL."""
    with serve() as served:
        yield served.base_url.removesuffix("/v1")


def _namespaces(root: str) -> list[str]:
    with httpx.Client(base_url=root, timeout=10) as client:
        data = client.get("/_ormock/namespaces").json()["data"]
    assert isinstance(data, list)
    return data


def _run(pytester: pytest.Pytester, root: str, *args: str, body: str = SUITE,
         monkeypatch: pytest.MonkeyPatch | None = None) -> pytest.RunResult:
    pytester.makepyfile(test_suite=textwrap.dedent(body))
    return pytester.runpytest("-p", "no:randomly", "--ormock-url", root, *args)


@pytest.fixture
def suite_env(monkeypatch: pytest.MonkeyPatch, shared: str) -> str:
    monkeypatch.setenv("ORMOCK_TEST_ROOT", shared)
    monkeypatch.delenv("ORMOCK_URL", raising=False)
    return shared


def test_every_fake_is_a_namespace_of_the_shared_server(pytester: pytest.Pytester,
                                                         suite_env: str) -> None:
    before = _namespaces(suite_env)
    result = _run(pytester, suite_env)
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines([f"ormock: fakes on {suite_env}"])
    assert _namespaces(suite_env) == before  # each dropped after its test


def test_the_same_suite_passes_on_a_local_fake(pytester: pytest.Pytester,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ORMOCK_TEST_ROOT", raising=False)
    monkeypatch.delenv("ORMOCK_URL", raising=False)
    pytester.makepyfile(test_suite=textwrap.dedent(SUITE))
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=5)


def test_xdist_workers_share_the_server(pytester: pytest.Pytester, suite_env: str) -> None:
    pytest.importorskip("xdist")
    before = _namespaces(suite_env)
    result = _run(pytester, suite_env, "-n", "2")
    result.assert_outcomes(passed=5)
    assert _namespaces(suite_env) == before


STRICT = """
import pytest

TWO = {"name": "two-steps", "steps": [
    {"match": {"input_contains": "a"}, "reply": {"items": [{"message": "A"}]}},
    {"match": {"input_contains": "b"}, "reply": {"items": [{"message": "B"}]}}]}


def test_a_step_left_unused(ormock):
    ormock.use(TWO)
    ormock.openai().responses.create(model="m", input="a")


def test_a_file_step_left_unused(ormock):
    ormock.use("two.yaml")
    ormock.openai().responses.create(model="m", input="a")


def test_a_request_nothing_matched(ormock):
    ormock.use(TWO)
    client = ormock.openai()
    client.responses.create(model="m", input="a")
    client.responses.create(model="m", input="b")
    with pytest.raises(Exception):
        client.responses.create(model="m", input="zzz")


@pytest.mark.ormock(assert_all_used=False)
def test_opted_out(ormock):
    ormock.use(TWO)
    ormock.openai().responses.create(model="m", input="a")
"""

TWO_YAML = """\
name: two-in-a-file
steps:
  - match: {input_contains: a}
    reply:
      items:
        - message: A
  - match: {input_contains: b}
    reply:
      items:
        - message: B
"""


def test_the_after_test_checks_run_on_the_shared_server(pytester: pytest.Pytester,
                                                        suite_env: str) -> None:
    (pytester.path / "two.yaml").write_text(TWO_YAML)
    before = _namespaces(suite_env)
    result = _run(pytester, suite_env, "-rA", body=STRICT)
    result.assert_outcomes(passed=4, errors=3)  # three fail after their test passed
    out = result.stdout.str()
    assert "scenario 'two-steps' step 2 (<scenario>): expected 1 time, used 0" in out
    # a file is sent as its text; the report still names the file and the step's line
    assert f"scenario 'two-in-a-file' step 2 ({pytester.path / 'two.yaml'}:7): expected 1 " \
           "time, used 0" in out
    assert "Opt out for this test: @pytest.mark.ormock(assert_all_used=False), or " \
           "strict=False for no checks." in out
    assert "Requests that no scenario step matched (1)" in out
    assert "Opt out for this test: @pytest.mark.ormock(assert_all_matched=False)" in out
    assert _namespaces(suite_env) == before


CASSETTE = """
import pytest


@pytest.mark.ormock(cassette="streamed-text.yaml")
def test_replayed(ormock):
    stream = ormock.openai().responses.create(model="gpt-4.1-mini",
                                              input="Say something short.", stream=True)
    types = [event.type for event in stream]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert ormock.requests[0].cassette is not None and ormock.requests[0].interaction == 1


@pytest.mark.ormock(cassette="streamed-text.yaml")
def test_never_requested(ormock):
    pass
"""


def test_a_cassette_replays_on_the_shared_server(pytester: pytest.Pytester,
                                                 suite_env: str) -> None:
    shutil.copy(_ROOT / "cassettes" / "streamed-text.yaml", pytester.path)
    result = _run(pytester, suite_env, body=CASSETTE)
    result.assert_outcomes(passed=2, errors=1)
    cassette = pytester.path / "streamed-text.yaml"  # its name and lines, though sent as text
    result.stdout.fnmatch_lines(["*1 recorded interaction was never requested:*",
                                 f"  {cassette} interaction 1 (line 7): POST /v1/responses"])


LOCAL_ONLY = """
def test_engine(ormock):
    ormock.engine


def test_server(ormock_server):
    pass


def test_a_scenario_object_works(ormock):
    from ormock.scenario import load_scenario

    ormock.use(load_scenario({"name": "made", "steps": [{"reply": {"items": [
        {"message": "made here"}]}}]}))
    assert ormock.openai().responses.create(model="m", input="x").output_text == "made here"
"""


def test_what_only_a_local_fake_has_is_refused_naming_the_option(
        pytester: pytest.Pytester, suite_env: str) -> None:
    result = _run(pytester, suite_env, body=LOCAL_ONLY)
    result.assert_outcomes(failed=1, errors=1, passed=1)
    out = result.stdout.str()
    assert "ormock.engine is the engine of an in-process fake; this one is the namespace" in out
    assert "ormock_server: this session has no ormock server of its own" in out
    assert "--ormock-url" in out


def test_recording_is_refused_with_a_shared_server(pytester: pytest.Pytester,
                                                   suite_env: str) -> None:
    result = _run(pytester, suite_env, "--ormock-record=once", "--ormock-upstream",
                  "http://127.0.0.1:9/v1", body="def test_x(ormock):\n    pass\n")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ormock-record=once cannot be used with --ormock-url: a fake "
                                 "on a shared server cannot record*"])


def test_the_url_comes_from_the_option_then_the_environment_then_the_ini(
        pytester: pytest.Pytester, suite_env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    body = "def test_x(ormock):\n    print('AT', ormock.base_url)\n"
    pytester.makepyfile(test_where=body)
    pytester.makeini("[pytest]\normock_url = http://127.0.0.1:9\n")
    free = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("ORMOCK_URL", suite_env + "/v1")  # a /v1 at the end is dropped
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*AT {suite_env}/*-1/v1"])
    monkeypatch.setenv("ORMOCK_URL", free)  # the command line beats it
    result = pytester.runpytest("-s", "--ormock-url", suite_env)
    result.assert_outcomes(passed=1)
    monkeypatch.delenv("ORMOCK_URL")  # the ini's: nothing answers there
    monkeypatch.setenv("PYTHONPATH", str(_ROOT))
    # in a process of its own: an in-process run re-imports httpcore's modules, and httpx
    # then takes their connection errors for foreign ones
    result = pytester.runpytest_subprocess("-s", "-p", "no:xdist")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the ormock server at http://127.0.0.1:9 (--ormock-url) did "
                                 "not answer*"])
    result = pytester.runpytest("--ormock-url", "ftp://nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ormock-url must be the http:// URL of an `ormock serve`*"])


def test_a_namespace_opens_with_its_own_settings(shared: str) -> None:
    with httpx.Client(base_url=shared, timeout=10) as client:
        made = client.post("/_ormock/namespaces", json={"name": "own-1", "seed": 4, "speed": 0,
                                                        "profile": "openai"})
        assert made.status_code == 201, made.text
        assert made.json() == {"name": "own-1", "path": "/own-1/v1", "seed": 4, "speed": 0,
                               "profile": "openai"}
        again = client.post("/_ormock/namespaces", json={"name": "own-1", "seed": 5})
        assert again.status_code == 409
        assert again.json()["error"]["code"] == "namespace_exists"
        bad = client.post("/_ormock/namespaces", json={"name": "own-2", "seed": "many"})
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "seed"
        odd = client.post("/_ormock/namespaces", json={"name": "own-2", "colour": 1})
        assert odd.status_code == 400 and odd.json()["error"]["param"] == "colour"
        assert "the settings are seed, speed, profile, replay_speed" in \
            odd.json()["error"]["message"]
        checks = client.get("/own-1/_ormock/checks").json()
        assert checks == {"unused_steps": [], "unused_interactions": [], "bad_replies": [],
                          "not_recorded": [], "errors": []}
        dropped = client.delete("/_ormock/namespaces/own-1", headers={"X-Ormock-Admin": "1"})
        assert dropped.status_code == 200


def test_redis_and_two_workers(pytester: pytest.Pytester, redis_server: RedisServer,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    with serve("--store", redis_server.fresh_url(), "--workers", "2") as served:
        root = served.base_url.removesuffix("/v1")
        monkeypatch.setenv("ORMOCK_TEST_ROOT", root)
        monkeypatch.delenv("ORMOCK_URL", raising=False)
        before = _namespaces(root)
        (pytester.path / "two.yaml").write_text(TWO_YAML)
        # not the seed's test: on a shared store each process's engine of a namespace draws its
        # ids from a stream of its own (IdFactory's run), so a seed repeats them on one only
        result = _run(pytester, root, "-k", "not seed", body=SUITE)
        result.assert_outcomes(passed=4)
        pytester.makepyfile(test_suite=textwrap.dedent(STRICT))
        result = pytester.runpytest("-p", "no:randomly", "--ormock-url", root)
        result.assert_outcomes(passed=4, errors=3)
        out = result.stdout.str()  # what each worker served, errors too, in one journal
        assert "Requests that no scenario step matched (1)" in out
        assert "scenario 'two-steps' step 2 (<scenario>): expected 1 time, used 0" in out
        assert _namespaces(root) == before


def test_a_remote_journal_entry_is_the_local_one_read_back() -> None:
    """A shared server's journal, as the admin API gives it, reads back into ``JournalEntry``
    values equal to the server's own (events with their offsets, output ids, what answered):
    one entry type, local or remote."""
    from ormock.engine.journal import JournalEntry

    paced = {"name": "paced-remote", "steps": [{"times": "forever", "reply": {
        "pacing": {"per_event": 0.002}, "items": [{"message": "one two three"}]}}]}
    with OrmockServer() as server:
        server.engine().use(paced)
        openai.OpenAI(base_url=server.base_url, api_key="k").responses.create(
            model="m", input="hi")
        with httpx.Client(base_url=server.url) as client:
            rows = client.get("/_ormock/journal").json()["data"]
        (local,) = list(server.engine().journal)
    (remote,) = [JournalEntry.from_dict(row) for row in rows]
    assert remote.to_dict() == local.to_dict()
    assert rows[0]["answered_by"] == local.answered_by
    assert remote.answered_by == {"kind": "scenario", "scenario": "paced-remote", "step": 1}
    assert [e["type"] for e in remote.events][:2] == ["response.created",
                                                       "response.in_progress"]
    assert remote.output_ids == local.output_ids and remote.output_ids
