"""The collector of a serving process (``ormock.commands.collector``): ``ormock serve`` and
each of its workers tune their own; an ``OrmockServer`` in this process leaves it alone."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from dataclasses import asdict

import pytest

from ormock import OrmockServer
from ormock.commands import workers
from ormock.commands.collector import YOUNG, tune_for_serving
from ormock.engine.limits import Limits


@pytest.fixture
def threshold() -> Iterator[tuple[int, int, int]]:
    """This process's thresholds, put back after the test."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield before
    gc.set_threshold(*before)


def test_the_youngest_generation_waits_longer_and_the_older_keep_theirs(
        threshold: tuple[int, int, int]) -> None:
    gc.set_threshold(700, 11, 12)
    tune_for_serving()
    assert gc.get_threshold() == (YOUNG, 11, 12) and YOUNG > 700


def test_a_worker_tunes_its_own_process(threshold: tuple[int, int, int],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(workers.ENV, json.dumps({"seed": 0, "limits": asdict(Limits())}))
    assert workers.app() is not None
    assert gc.get_threshold()[0] == YOUNG


def test_a_server_in_a_test_process_leaves_its_collector_alone(
        threshold: tuple[int, int, int]) -> None:
    with OrmockServer(seed=0):
        assert gc.get_threshold() == (700, 10, 10)


def test_ormock_serve_tunes_its_process_before_it_serves(
        threshold: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    from ormock.cli import main

    seen: list[tuple[int, int, int]] = []

    def serve_forever(self: OrmockServer) -> None:  # what it would serve with, then stop
        seen.append(gc.get_threshold())
        self.stop()

    monkeypatch.setattr(OrmockServer, "serve_forever", serve_forever)
    assert main(["serve", "--host", "127.0.0.1", "--port", "0"]) == 0
    assert seen == [(YOUNG, 10, 10)]
