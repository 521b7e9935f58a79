"""Every cassette in ``cassettes/`` replays: the client that recorded it (``cassettes/record.py``)
runs unmodified against ``ormock serve --cassette FILE`` and gets every recorded interaction, in
order, with the recorded statuses; each recorded stream passes the checker under the cassette's
profile."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import openai
import pytest

from ormock import OrmockServer
from ormock.cassette import load_cassette
from ormock.cassette.lint import check_cassette

FOLDER = Path(__file__).resolve().parent.parent / "cassettes"
FILES = sorted(FOLDER.glob("*.yaml"))


def _recorder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("record_examples", FOLDER / "record.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_example_has_a_cassette_and_a_recipe() -> None:
    assert {f.stem for f in FILES} == set(_recorder().EXAMPLES)
    assert len(FILES) >= 5


@pytest.mark.parametrize("file", FILES, ids=[f.stem for f in FILES])
def test_the_recording_client_replays_unmodified(file: Path) -> None:
    cassette = load_cassette(file)
    drive = _recorder().EXAMPLES[file.stem][0]
    with OrmockServer(cassettes=[file], speed=0) as replay:
        drive(openai.OpenAI(base_url=f"{replay.url}/v1", api_key="anything", max_retries=0))
        engine = replay.engine()
        assert engine.replays.unused() == []
        served = [e for e in engine.journal if e.method != "WS"]
        recorded = [i.response.status for i in cassette.interactions if i.response is not None]
        assert [e.status for e in served] == recorded
        assert all(e.cassette == str(file) for e in engine.journal)


@pytest.mark.parametrize("file", FILES, ids=[f.stem for f in FILES])
def test_each_recorded_stream_passes_the_checker_under_its_profile(file: Path) -> None:
    reports = list(check_cassette(load_cassette(file)))
    assert reports or file.stem == "tool-loop"  # the tool loop is two JSON answers
    for checked in reports:
        assert checked.report.ok, [str(v) for v in checked.report.violations]
