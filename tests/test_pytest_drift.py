"""``--ormock-record=drift`` with ``pytester``: an inner suite's cassettes recorded from an
``OrmockServer`` (``--ormock-record=once``), then recorded again and compared with the files: no
failure when only values changed; the one test whose answers changed shape fails naming the
change, its new recording beside the cassette, the cassettes themselves untouched."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai  # noqa: F401  (imported once for the in-process runs)
import pytest
from recordings import namespace

from ormock import OrmockServer
from ormock.cassette import load

pytest_plugins = ["pytester"]

REAL_KEY = "sk-" + "drift-pytest-real-key-0123456789abcdef"

INNER = """
import pytest


@pytest.mark.ormock(cassette=True)
def test_chat(ormock):
    stream = ormock.openai().responses.create(model="m", input="hello", stream=True)
    assert "".join(e.delta for e in stream if e.type == "response.output_text.delta")


@pytest.mark.ormock(cassette=True)
def test_other(ormock):
    assert ormock.openai().responses.create(model="m", input="other").output_text
"""

NEVER_RECORDED = """
import pytest


@pytest.mark.ormock(cassette=True)
def test_new(ormock):
    ormock.openai().responses.create(model="m", input="new")
"""


def _text(words: str, faults: list[object] | None = None) -> dict[str, object]:
    return {"times": "forever", "reply": {"items": [{"message": words}], "faults": faults or []}}


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[OrmockServer]:
    monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)
    with OrmockServer(seed=0, api_key=REAL_KEY) as server:
        yield server


def _cassettes(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.rglob("*.yaml"))}


def test_drift_fails_only_the_test_whose_cassette_changed_shape(
        pytester: pytest.Pytester, upstream: OrmockServer) -> None:
    pytester.makepyfile(test_suite=INNER)
    first = namespace(upstream, {"name": "a", "steps": [_text("one two three")]})
    pytester.runpytest("--ormock-record=once", "--ormock-upstream", first
                       ).assert_outcomes(passed=2)
    folder = pytester.path / "cassettes" / "test_suite"
    recorded = _cassettes(folder)
    assert sorted(recorded) == ["test_chat.yaml", "test_other.yaml"]

    # other words and ids, the same shape: both pass, nothing written
    values = namespace(upstream, {"name": "b", "seed": 4,
                                  "steps": [_text("quite other words this time")]})
    same = pytester.runpytest("--ormock-record=drift", "--ormock-upstream", values)
    same.assert_outcomes(passed=2)
    same.stdout.fnmatch_lines([f"ormock: record=drift from {values} (key from "
                               "$OPENAI_API_KEY)"])
    assert _cassettes(folder) == recorded

    # the streamed answer now carries an extension event
    changed = namespace(upstream, {"name": "c", "steps": [
        {**_text("one two three", faults=[{"vendor_event": {"type": "acme:trace"}}]),
         "match": {"input": "hello"}},
        _text("one two three")]})
    result = pytester.runpytest("--ormock-record=drift", "--ormock-upstream", changed)
    # as every after-test check: the test's teardown fails (test_chat's call itself passed)
    result.assert_outcomes(passed=2, errors=1)
    cassette = folder / "test_chat.yaml"
    new = folder / "test_chat.drift.yaml"
    result.stdout.fnmatch_lines([
        "*ERROR at teardown of test_chat*",
        f"ormock: the cassette {cassette} changed shape (--ormock-record=drift): "
        f"1 change in 1 of 1 interactions; the new recording is {new}",
        "  interaction 1 (line 7): POST /v1/responses",
        "    event added: acme:trace",
        "Review the new recording; when the change is expected, replace the cassette with "
        "it (or record it again: --ormock-record=rewrite).",
        "ERROR test_suite.py::test_chat - Failed: ormock: the cassette *"])
    assert "test_other" not in "".join(line for line in result.outlines if "ERROR" in line)
    assert _cassettes(folder) == {**recorded, "test_chat.drift.yaml": new.read_bytes()}
    events = [m.event["type"] for m in load(new).interactions[0].response.messages or ()
              if m.event]  # type: ignore[union-attr]
    assert "acme:trace" in events
    assert REAL_KEY not in new.read_text()


def test_drift_without_a_cassette_fails_saying_to_record_it(
        pytester: pytest.Pytester, upstream: OrmockServer) -> None:
    pytester.makepyfile(test_new=NEVER_RECORDED)
    url = namespace(upstream, {"name": "a", "steps": [_text("x")]})
    result = pytester.runpytest("--ormock-record=drift", "--ormock-upstream", url)
    result.assert_outcomes(errors=1)  # at setup, where the marker's cassette is taken
    result.stdout.fnmatch_lines([
        "*ERROR at setup of test_new*",
        f"ormock: no cassette at {pytester.path}/cassettes/test_new/test_new.yaml to compare "
        "with (--ormock-record=drift records every cassette again and compares it with the "
        "file). Record it first: pytest --ormock-record=once --ormock-upstream URL"])
    assert not list(pytester.path.rglob("*.yaml"))
    assert len(upstream.engine(url.split("/")[3]).journal) == 0  # nothing was sent
