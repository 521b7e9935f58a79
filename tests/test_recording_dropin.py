"""ormock as a drop-in for pytest-recording (``ormock_vcr``), shown on a project written as a
pytest-recording user writes one: its cassettes recorded by vcrpy itself (through
pytest-recording) from a provider (an ``OrmockServer``), with the project's own serializer
(bodies kept as ``parsed_body``) registered through ``pytest_recording_configure`` and a
``vcr_config``; then replayed, the provider gone, by pytest-recording and by ormock's mode (with
and without pytest-recording installed): the same outcomes and the same output. ormock's mode
then adds what vcrpy cannot: a 429 layered on a replayed cassette."""

from __future__ import annotations

import re
from collections.abc import Iterator

import openai  # noqa: F401  (imported once for the in-process runs)
import pytest
import yaml

from ormock import OrmockServer

pytest_plugins = ["pytester"]

KEY = "sk-" + "project-key-0123456789abcdef"

CONFTEST = '''
import json

import pytest
import yaml


class ParsedBodySerializer:
    """The project's serializer: JSON bodies kept as documents (``parsed_body``)."""

    @staticmethod
    def serialize(cassette):
        for interaction in cassette["interactions"]:
            for part in ("request", "response"):
                holder = interaction[part]
                body = holder.get("body")
                text = body.get("string") if isinstance(body, dict) else body
                if isinstance(text, bytes):
                    text = text.decode("utf-8")
                try:
                    parsed = json.loads(text) if text else None
                except ValueError:
                    continue
                if isinstance(parsed, dict):
                    holder["parsed_body"] = parsed
                    holder.pop("body")
        return yaml.safe_dump(cassette, sort_keys=False)

    @staticmethod
    def deserialize(text):
        cassette = yaml.safe_load(text)
        for interaction in cassette["interactions"]:
            for part in ("request", "response"):
                holder = interaction[part]
                if "parsed_body" in holder:
                    body = json.dumps(holder.pop("parsed_body"))
                    holder["body"] = {"string": body} if part == "response" else body
        return cassette


def pytest_recording_configure(config, vcr):
    vcr.register_serializer("yaml", ParsedBodySerializer)


@pytest.fixture(scope="module")
def vcr_config():
    return {"filter_headers": ["authorization"], "decode_compressed_response": True}
'''

PROJECT = '''
import asyncio
import os

import openai
import pytest


def client(**kw):
    return openai.OpenAI(base_url=os.environ["PROVIDER_URL"],
                         api_key=os.environ["OPENAI_API_KEY"], max_retries=0, **kw)


@pytest.mark.vcr
def test_text():
    reply = client().responses.create(model="m", input="hello")
    print("OUT text", reply.id, reply.output_text)


@pytest.mark.vcr
def test_stream():
    stream = client().responses.create(model="m", input="stream please", stream=True)
    text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
    print("OUT stream", text)


@pytest.mark.vcr
def test_async():
    async def run():
        async with openai.AsyncOpenAI(base_url=os.environ["PROVIDER_URL"],
                                      api_key=os.environ["OPENAI_API_KEY"]) as aclient:
            return await aclient.responses.create(model="m", input="async")
    reply = asyncio.run(run())
    print("OUT async", reply.id, reply.output_text)


class TestAgent:
    @pytest.mark.vcr
    def test_loop(self, vcr):
        first = client().responses.create(model="m", input="again")
        second = client().responses.create(model="m", input="again")
        print("OUT loop", first.id, second.id, first.output_text == second.output_text)
        print("OUT counts", vcr.play_count, vcr.all_played, len(vcr.requests))


@pytest.mark.vcr(additional_matchers=["body"])
def test_changed_input():
    reply = client().responses.create(model="m", input=os.environ.get("INPUT", "as recorded"))
    print("OUT changed", reply.output_text)
'''

FAULTED = '''
import os

import openai
import pytest


@pytest.mark.vcr(os.path.join(os.path.dirname(__file__), "cassettes/test_project/test_text.yaml"))
def test_rate_limited_then_replayed(vcr):
    vcr.ormock.inject({"http_error": {"status": 429, "retry_after_ms": 1}, "when": {"nth": 1}})
    client = openai.OpenAI(base_url=os.environ["PROVIDER_URL"],
                           api_key=os.environ["OPENAI_API_KEY"], max_retries=2)
    reply = client.responses.create(model="m", input="hello")
    print("OUT faulted", [e.status for e in vcr.ormock.requests], reply.output_text)
'''


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[OrmockServer]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("INPUT", raising=False)
    with OrmockServer(seed=0) as server:
        monkeypatch.setenv("PROVIDER_URL", server.base_url)
        yield server


def _out(result: pytest.RunResult) -> list[str]:
    return sorted(line[line.index("OUT "):] for line in result.outlines if "OUT " in line)


def test_the_same_suite_passes_alike_under_pytest_recording_and_ormock(
    pytester: pytest.Pytester, provider: OrmockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_project=PROJECT)
    recorded = pytester.runpytest("-s", "--record-mode=once", "-p", "no:cacheprovider")
    recorded.assert_outcomes(passed=5)
    cassette = pytester.path / "cassettes" / "test_project" / "test_text.yaml"
    text = cassette.read_text()
    assert "parsed_body:" in text and KEY not in text  # the project's serializer, filtered
    assert (pytester.path / "cassettes/test_project/TestAgent.test_loop.yaml").exists()
    provider.stop()  # nothing can reach the provider from here on

    monkeypatch.setenv("INPUT", "changed since")
    vcrpy = pytester.runpytest("-s", "-p", "no:cacheprovider")
    vcrpy.assert_outcomes(passed=4, failed=1)
    ormock = pytester.runpytest("-s", "-p", "no:cacheprovider", "--ormock-vcr")
    ormock.assert_outcomes(passed=4, failed=1)
    alone = pytester.runpytest("-s", "-p", "no:cacheprovider", "-p", "no:recording",
                               "-o", "ormock_vcr=true")
    alone.assert_outcomes(passed=4, failed=1)
    assert _out(vcrpy) == _out(ormock) == _out(alone)
    assert "OUT counts 2 True 2" in _out(ormock)
    # the miss says what changed, at the character where it did
    ormock.stdout.fnmatch_lines(["*BadRequestError*closest is interaction 1: input: recorded "
                                 "'as recorded', sent 'changed since'*"])
    assert re.search(r"OUT stream \S", "\n".join(_out(ormock)))


def _text_recorded(pytester: pytest.Pytester) -> None:
    """The project, and its ``test_text`` cassette recorded by vcrpy from the provider."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_project=PROJECT)
    pytester.runpytest("-p", "no:cacheprovider", "--record-mode=once",
                       "-k", "test_text").assert_outcomes(passed=1)


def test_a_fault_is_layered_on_a_replayed_cassette(
    pytester: pytest.Pytester, provider: OrmockServer
) -> None:
    _text_recorded(pytester)
    provider.stop()
    pytester.makepyfile(test_faulted=FAULTED)
    result = pytester.runpytest("-s", "-p", "no:cacheprovider", "--ormock-vcr",
                                "test_faulted.py")
    result.assert_outcomes(passed=1)
    line = next(line for line in _out(result) if line.startswith("OUT faulted"))
    assert line.startswith("OUT faulted [429, 200] ")


def test_ormock_records_what_pytest_recording_replays(
    pytester: pytest.Pytester, provider: OrmockServer
) -> None:
    """Recorded through ormock's recorder (``--ormock-vcr --record-mode=once``): the project's
    serializer writes the cassettes, the key never reaches them, and vcrpy replays them."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_project=PROJECT)
    recorded = pytester.runpytest("-s", "-p", "no:cacheprovider", "--ormock-vcr",
                                  "--record-mode=once")
    recorded.assert_outcomes(passed=5)
    assert provider.engine().journal  # the provider was asked, through the fakes' relay
    text = (pytester.path / "cassettes/test_project/test_stream.yaml").read_text()
    assert "parsed_body:" in text and KEY not in text and "event: response.created" in text
    provider.stop()
    replayed = pytester.runpytest("-s", "-p", "no:cacheprovider")
    replayed.assert_outcomes(passed=5)
    again = pytester.runpytest("-s", "-p", "no:cacheprovider", "--ormock-vcr")
    again.assert_outcomes(passed=5)
    assert _out(replayed) == _out(again)
    assert [line for line in _out(recorded) if not line.startswith("OUT counts")] == \
        [line for line in _out(again) if not line.startswith("OUT counts")]


LIMITS = """
import os
import socket

import openai
import pytest


def client():
    return openai.OpenAI(base_url=os.environ["PROVIDER_URL"], api_key="k", max_retries=0)


@pytest.mark.vcr("../test_project/test_text.yaml", record_on_exception=False)
def test_unserved_setting(vcr):
    pass


@pytest.mark.block_network
@pytest.mark.vcr(os.path.join(os.path.dirname(__file__), "cassettes/test_project/test_text.yaml"))
def test_blocked_but_replayed(vcr):
    assert client().responses.create(model="m", input="hello").output_text
    with pytest.raises(AttributeError, match="has no '_path': it gives play_count"):
        vcr._path


@pytest.mark.block_network
def test_blocked_without_a_cassette():
    port = int(os.environ["PROVIDER_URL"].split(":")[2].split("/")[0])
    with socket.socket() as sock, pytest.raises(RuntimeError, match="Network is disabled"):
        sock.connect(("127.0.0.1", port))  # another server on loopback: blocked
"""


def test_what_is_not_served_is_said_and_the_network_block_lets_the_fake_through(
    pytester: pytest.Pytester, provider: OrmockServer
) -> None:
    _text_recorded(pytester)
    before = len(provider.engine().journal)
    pytester.runpytest("-p", "no:cacheprovider", "--ormock-vcr", "--disable-recording",
                       "-k", "test_text", "test_project.py").assert_outcomes(passed=1)
    assert len(provider.engine().journal) == before + 1  # not routed: the provider answered
    pytester.makepyfile(test_unserved=LIMITS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--ormock-vcr", "test_unserved.py")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*the vcrpy setting 'record_on_exception' of vcr_config or "
                                 "@pytest.mark.vcr cannot be served by an ormock fake*"])


GZIPPED = '''
import gzip
from pathlib import Path

import pytest
from vcr.persisters.filesystem import CassetteNotFoundError
from vcr.serialize import deserialize, serialize


class GzipPersister:
    """The project's persister: cassettes kept gzip-compressed (``.yaml.gz``)."""

    @staticmethod
    def load_cassette(path, serializer):
        if not Path(path).is_file():
            raise CassetteNotFoundError(path)
        return deserialize(gzip.decompress(Path(path).read_bytes()).decode(), serializer)

    @staticmethod
    def save_cassette(path, cassette, serializer):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(gzip.compress(serialize(cassette, serializer).encode()))


def pytest_recording_configure(config, vcr):
    vcr.register_persister(GzipPersister)


@pytest.fixture(scope="module")
def vcr_config():
    return {"filter_headers": ["authorization"], "path_transformer": lambda p: p + ".yaml.gz"}
'''


def test_the_project_persister_reads_the_cassettes_it_wrote(
    pytester: pytest.Pytester, provider: OrmockServer
) -> None:
    # ormock read each cassette with vcrpy's file persister, whatever the project registered:
    # a compressed cassette was "not a vcrpy cassette" to it, and the test failed
    pytester.makeconftest(GZIPPED)
    pytester.makepyfile(test_project=PROJECT)
    pytester.runpytest("-p", "no:cacheprovider", "--record-mode=once",
                       "-k", "test_text or test_stream").assert_outcomes(passed=2)
    assert (pytester.path / "cassettes/test_project/test_stream.yaml.gz").read_bytes()[:2] \
        == b"\x1f\x8b"
    provider.stop()
    vcrpy = pytester.runpytest("-s", "-p", "no:cacheprovider", "-k", "test_text or test_stream")
    vcrpy.assert_outcomes(passed=2)
    ormock = pytester.runpytest("-s", "-p", "no:cacheprovider", "--ormock-vcr",
                                "-k", "test_text or test_stream")
    ormock.assert_outcomes(passed=2)
    assert _out(vcrpy) == _out(ormock)


FILTERED = '''
import os

import openai
import pytest


@pytest.fixture(scope="module")
def vcr_config():
    return {"filter_headers": ["authorization"], "filter_query_parameters": ["api-version"],
            "filter_post_data_parameters": ["user"]}


@pytest.mark.vcr(additional_matchers=["body"])
def test_filtered():
    client = openai.OpenAI(base_url=os.environ["PROVIDER_URL"], max_retries=0,
                           api_key=os.environ["OPENAI_API_KEY"],
                           default_query={"api-version": "2025-04-01-preview"})
    reply = client.responses.create(model="m", input="hello", user="user-" + os.urandom(4).hex())
    print("OUT filtered", reply.output_text)
'''


def test_a_replayed_request_is_matched_as_the_filters_make_it(
    pytester: pytest.Pytester, provider: OrmockServer
) -> None:
    # vcrpy matches the request as before_record_request (filter_query_parameters, ...) makes
    # it, as the cassette holds it; ormock matched the request as sent: a miss
    pytester.makepyfile(test_filtered=FILTERED)
    pytester.runpytest("-p", "no:cacheprovider", "--record-mode=once").assert_outcomes(passed=1)
    recorded = yaml.safe_load((pytester.path / "cassettes/test_filtered/test_filtered.yaml")
                              .read_text())["interactions"][0]["request"]
    assert "api-version" not in recorded["uri"] and "user-" not in recorded["body"]
    provider.stop()
    vcrpy = pytester.runpytest("-s", "-p", "no:cacheprovider")
    vcrpy.assert_outcomes(passed=1)
    ormock = pytester.runpytest("-s", "-p", "no:cacheprovider", "--ormock-vcr")
    ormock.assert_outcomes(passed=1)
    assert _out(vcrpy) == _out(ormock)


REPEATS = '''
import os

import openai
import pytest


@pytest.fixture(scope="module")
def vcr_config():
    # langchain-openai's shared vcr_config; the repeats allowed once the cassettes are recorded
    return {"filter_headers": ["authorization"], "match_on": ["method", "uri", "body"],
            "allow_playback_repeats": os.environ.get("REPEATS") == "1"}


def ask(text):
    client = openai.OpenAI(base_url=os.environ["PROVIDER_URL"], max_retries=0,
                           api_key=os.environ["OPENAI_API_KEY"])
    return client.responses.create(model="m", input=text).id


def counts(vcr):
    return vcr.play_count, sorted(vcr.play_counts.items()), vcr.all_played, len(vcr)


@pytest.mark.vcr
def test_same_three_times(vcr):
    print("OUT same", [ask("again") for _ in range(int(os.environ["TIMES"]))], counts(vcr))


@pytest.mark.vcr
def test_interleaved(vcr):
    print("OUT interleaved", [ask(text) for text in ["a", "b"] * int(os.environ["TIMES"])],
          counts(vcr))
'''


def test_allow_playback_repeats_replays_the_first_match_as_vcrpy_does(
    pytester: pytest.Pytester, provider: OrmockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``allow_playback_repeats: True`` with ``match_on: [method, uri, body]``: each request is
    answered by the first interaction it matches, again and again, though identical ones were
    recorded after it (vcrpy's ``Cassette.play_response``); the counts are vcrpy's."""
    pytester.makepyfile(test_repeats=REPEATS)
    monkeypatch.setenv("TIMES", "2")  # recorded without repeats: each request its own answer
    recorded = pytester.runpytest("-s", "-p", "no:cacheprovider", "--record-mode=once")
    recorded.assert_outcomes(passed=2)
    provider.stop()
    monkeypatch.setenv("REPEATS", "1")
    monkeypatch.setenv("TIMES", "3")  # more requests than were recorded
    vcrpy = pytester.runpytest("-s", "-p", "no:cacheprovider")
    vcrpy.assert_outcomes(passed=2)
    ormock = pytester.runpytest("-s", "-p", "no:cacheprovider", "--ormock-vcr")
    ormock.assert_outcomes(passed=2)
    alone = pytester.runpytest("-s", "-p", "no:cacheprovider", "-p", "no:recording",
                               "-o", "ormock_vcr=true")
    alone.assert_outcomes(passed=2)
    assert _out(vcrpy) == _out(ormock) == _out(alone)
    first = {line.split()[1]: line for line in _out(recorded)}
    same = re.findall(r"resp_\w+", first["same"])
    a, b = re.findall(r"resp_\w+", first["interleaved"])[:2]
    assert len(set(same)) == 2  # two answers recorded; the first plays three times
    assert _out(ormock) == sorted([
        f"OUT interleaved {[a, b] * 3} (6, [(0, 3), (1, 3)], False, 4)",
        f"OUT same {[same[0]] * 3} (3, [(0, 3)], False, 2)"])
