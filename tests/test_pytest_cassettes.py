"""The pytest plugin's cassettes, with ``pytester`` and real servers: an upstream (an
``OrmockServer`` holding a real key) recorded through the inner suite's fakes with
``--ormock-record``, then replayed with the upstream gone; the record modes, the default paths,
the strict check of interactions never requested, and the clear errors."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import openai  # noqa: F401  (imported once for the in-process runs)
import pytest

from ormock import OrmockServer
from ormock.cassette import load_cassette

pytest_plugins = ["pytester"]

REAL_KEY = "sk-" + "upstream-real-key-0123456789abcdef"

INNER = """
import os

import pytest

SKIP = os.environ.get("SKIP") == "1"
EXTRA = os.environ.get("EXTRA") == "1"


@pytest.mark.ormock(cassette=True)
def test_chat(ormock):
    client = ormock.openai()
    reply = client.responses.create(model="m", input="hello")
    print("OUT chat", reply.id, reply.output_text)
    if not SKIP:
        stream = client.responses.create(model="m", input="stream please", stream=True)
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        print("OUT stream", text)
    if EXTRA:
        extra = client.responses.create(model="m", input="one more")
        print("OUT extra", extra.output_text)


@pytest.mark.ormock(cassette=True)
def test_loop(ormock):
    client = ormock.openai()
    first = client.responses.create(model="m", input="again")
    second = client.responses.create(model="m", input="again")
    follow = client.responses.create(model="m", input="and then",
                                     previous_response_id=first.id)
    assert first.id != second.id
    print("OUT loop", first.id, first.output_text, second.id, second.output_text, follow.id,
          follow.previous_response_id, follow.output_text)


@pytest.mark.ormock(cassette=True)
@pytest.mark.parametrize("word", ["a b", "c/d"])
def test_param(ormock, word):
    reply = ormock.openai().responses.create(model="m", input=word)
    print("OUT param", word, reply.output_text)


def test_use(ormock):
    ormock.use(cassette="mine/use.yaml")
    reply = ormock.openai().responses.create(model="m", input="used")
    print("OUT use", reply.output_text)
"""


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[OrmockServer]:
    """The provider to record: it takes only the real key, which the inner suite's clients do
    not hold (they have the fixture's dummy one)."""
    monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)
    monkeypatch.delenv("SKIP", raising=False)
    monkeypatch.delenv("EXTRA", raising=False)
    with OrmockServer(seed=0, api_key=REAL_KEY) as server:
        yield server


def _outputs(result: pytest.RunResult) -> list[str]:
    """What the inner tests printed (``-s``: between pytest's progress marks)."""
    return re.findall(r"OUT .*", result.stdout.str())


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.yaml") if p.is_file())


def _no_key_in(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file() and path.suffix in (".yaml", ".yml"):
            text = path.read_text()
            assert REAL_KEY not in text and "sk-ormock-test" not in text, path


def _count(path: Path) -> int:
    return len(load_cassette(path).interactions)


def test_record_once_then_replay_with_the_upstream_gone(
    pytester: pytest.Pytester, upstream: OrmockServer
) -> None:
    pytester.makepyfile(test_suite=INNER)
    recorded = pytester.runpytest("-s", "-p", "no:randomly", "--ormock-record=once",
                                  "--ormock-upstream", upstream.base_url)
    recorded.assert_outcomes(passed=5)
    recorded.stdout.fnmatch_lines([f"ormock: record=once from {upstream.base_url} (key from "
                                   "$OPENAI_API_KEY)"])
    folder = pytester.path / "cassettes" / "test_suite"
    names = sorted(p.name for p in folder.iterdir())
    assert names[:2] == ["test_chat.yaml", "test_loop.yaml"]
    assert len(names) == 4 and all(re.fullmatch(r"test_param-(a-b|c-d)-[0-9a-f]{8}\.yaml", n)
                                   for n in names[2:]), names
    assert (pytester.path / "mine" / "use.yaml").is_file()
    assert _count(folder / "test_chat.yaml") == 2 and _count(folder / "test_loop.yaml") == 3
    chat = load_cassette(folder / "test_chat.yaml")
    assert chat.upstream == upstream.base_url and chat.interactions[0].request.path == \
        "/v1/responses"
    assert chat.interactions[1].response is not None and chat.interactions[1].response.streamed
    _no_key_in(pytester.path)
    assert len(upstream.engine().journal) == 8  # every request went there once

    upstream.stop()
    replayed = pytester.runpytest("-s", "-p", "no:randomly")  # --ormock-record=none
    replayed.assert_outcomes(passed=5)
    assert _outputs(replayed) == _outputs(recorded) and len(_outputs(recorded)) == 6
    loop = next(line for line in _outputs(replayed) if line.startswith("OUT loop"))
    first_id = loop.split()[2]
    assert loop.split().count(first_id) == 2  # the follow-up names the recorded first answer

    again = pytester.runpytest("-p", "no:randomly", "--ormock-record=once", "--ormock-upstream",
                               upstream.base_url)  # the cassettes exist: replayed, not recorded
    again.assert_outcomes(passed=5)


def test_a_recorded_request_never_made_fails_the_strict_check(
    pytester: pytest.Pytester, upstream: OrmockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_suite=INNER)
    pytester.runpytest("--ormock-record=once", "--ormock-upstream", upstream.base_url,
                       "-k", "test_chat").assert_outcomes(passed=1)
    upstream.stop()
    monkeypatch.setenv("SKIP", "1")
    result = pytester.runpytest("-k", "test_chat")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*ormock after-test checks: 1 recorded interaction never requested (docs/pytest.md)",
        "1 recorded interaction was never requested:",
        "  */cassettes/test_suite/test_chat.yaml interaction 2 (line *): POST /v1/responses",
        "  Opt out for this test: @pytest.mark.ormock(assert_all_used=False), or strict=False "
        "for no checks.",
    ])


def test_a_cassette_miss_is_a_400_and_reported(
    pytester: pytest.Pytester, upstream: OrmockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_suite=INNER)
    monkeypatch.setenv("SKIP", "1")
    pytester.runpytest("--ormock-record=once", "--ormock-upstream", upstream.base_url,
                       "-k", "test_chat").assert_outcomes(passed=1)
    monkeypatch.setenv("SKIP", "0")
    result = pytester.runpytest("-k", "test_chat")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*BadRequestError*cassette_miss*",
        "*Requests that no scenario step matched (1); each was answered HTTP 400 "
        "cassette_miss:*",
    ])


def test_new_episodes_appends_and_rewrite_replaces(
    pytester: pytest.Pytester, upstream: OrmockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_suite=INNER)
    chat = pytester.path / "cassettes" / "test_suite" / "test_chat.yaml"
    record = ["--ormock-upstream", upstream.base_url, "-k", "test_chat"]
    pytester.runpytest("--ormock-record=once", *record).assert_outcomes(passed=1)
    before = load_cassette(chat).interactions
    monkeypatch.setenv("EXTRA", "1")
    pytester.runpytest("--ormock-record=new_episodes", *record).assert_outcomes(passed=1)
    after = load_cassette(chat).interactions
    assert len(after) == 3
    assert [i.request.body for i in after[:2]] == [i.request.body for i in before]
    assert after[2].request.body is not None and after[2].request.body["input"] == "one more"
    assert len(upstream.engine().journal) == 3  # the two replayed, the new one forwarded
    pytester.runpytest("-k", "test_chat").assert_outcomes(passed=1)  # all three replay

    monkeypatch.setenv("EXTRA", "0")
    monkeypatch.setenv("SKIP", "1")
    pytester.runpytest("--ormock-record=rewrite", *record).assert_outcomes(passed=1)
    rewritten = load_cassette(chat).interactions
    assert len(rewritten) == 1 and len(upstream.engine().journal) == 4
    pytester.runpytest("-k", "test_chat").assert_outcomes(passed=1)  # none unused: strict ok

    monkeypatch.setenv("SKIP", "0")
    pytester.runpytest("--ormock-record=all", *record).assert_outcomes(passed=1)
    assert _count(chat) == 2 and len(upstream.engine().journal) == 6  # nothing replayed
    _no_key_in(pytester.path)


def test_a_missing_cassette_names_the_command_that_records_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_suite=INNER)
    result = pytester.runpytest("-k", "test_chat or test_use")
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*ormock: no cassette at */cassettes/test_suite/test_chat.yaml (--ormock-record=none "
        "replays only). Record it with: pytest --ormock-record=once --ormock-upstream URL "
        "'test_suite.py::test_chat'",
        "*ormock: no cassette at */mine/use.yaml*'test_suite.py::test_use'",
    ])
    assert not (pytester.path / "cassettes").exists()


def test_the_cassette_folder_is_an_ini_option(
    pytester: pytest.Pytester, upstream: OrmockServer
) -> None:
    pytester.makeini("[pytest]\normock_cassette_dir = recorded\n"
                     f"ormock_upstream = {upstream.base_url}\n")
    pytester.makepyfile(test_suite=INNER)
    pytester.runpytest("--ormock-record=once", "-k", "test_loop").assert_outcomes(passed=1)
    assert _files(pytester.path) == [pytester.path / "recorded" / "test_suite" / "test_loop.yaml"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ormock-record=once"], "ERROR: --ormock-record=once records from a real provider: "
                                   "give it with --ormock-upstream URL (or the ini option "
                                   "ormock_upstream)*"),
        (["--ormock-record=rewrite", "--ormock-upstream", "http://127.0.0.1:9/v1",
          "--ormock-upstream-key-env", "ORMOCK_NO_SUCH_KEY"],
         "ERROR: --ormock-record=rewrite: the environment variable ORMOCK_NO_SUCH_KEY holds no "
         "key for the upstream*"),
    ],
)
def test_recording_without_an_upstream_or_key_is_a_usage_error(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_key_in_an_answer_refuses_the_cassette_and_fails_the_test(
    pytester: pytest.Pytester, upstream: OrmockServer
) -> None:
    upstream.engine().use({"name": "leak", "steps": [
        {"reply": {"items": [{"message": "your key is sk-proj-" "leakedleakedleaked1234"}]}}]})
    pytester.makepyfile(test_suite=INNER)
    result = pytester.runpytest("--ormock-record=once", "--ormock-upstream", upstream.base_url,
                                "-k", "test_use")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*ormock: the cassette */mine/use.yaml was not written: *"
                                 "an API key (sk-...)*"])
    assert not (pytester.path / "mine" / "use.yaml").exists()


IGNORING = """
import os

import pytest

MARK = pytest.mark.ormock(cassette=True, cassette_ignore=os.environ.get("IGNORE") or ())


@MARK
def test_meta(ormock):
    reply = ormock.openai().responses.create(model="m", input="hi",
                                             metadata={"run": os.environ["RUN"]})
    print("OUT meta", reply.id)
"""


def test_cassette_ignore_leaves_volatile_paths_out_of_the_match(
    pytester: pytest.Pytester, upstream: OrmockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_suite=IGNORING)
    monkeypatch.setenv("RUN", "1")
    pytester.runpytest("--ormock-record=once", "--ormock-upstream",
                       upstream.base_url).assert_outcomes(passed=1)
    upstream.stop()
    monkeypatch.setenv("RUN", "2")
    missed = pytester.runpytest()  # metadata differs: a miss naming it
    missed.assert_outcomes(failed=1)
    missed.stdout.fnmatch_lines(["*metadata.run: recorded '1', sent '2'*"])
    monkeypatch.setenv("IGNORE", "metadata")
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize(("marker", "words"), [
    ("cassette_ignore=[1]", "cassette_ignore takes JSON paths"),
    ("cassette_order='sideways'", "cassette_order must be 'any'"),
    ("cassette_speed=-1", "speed must be a number >= 0"),
])
def test_bad_cassette_options_say_what_to_write(pytester: pytest.Pytester, marker: str,
                                                words: str) -> None:
    pytester.makepyfile(f"""
import pytest

@pytest.mark.ormock(cassette=True, {marker})
def test_x(ormock):
    pass
""")
    result = pytester.runpytest()
    assert words in result.stdout.str()
    assert result.ret != 0
