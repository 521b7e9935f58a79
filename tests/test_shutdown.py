"""``ormock.server.shutdown``: a server stopped (Ctrl-C, SIGTERM, ``stop()``) while streams are
open cuts them short quietly: no traceback per open stream (uvicorn's "Exception in ASGI
application ... CancelledError"), one line saying how many, the exit code of a clean stop."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ormock import OrmockServer
from ormock.engine.replays import Upstream

ROOT = Path(__file__).resolve().parent.parent
STREAM = {"model": "m", "input": "hi", "stream": True}


def _open_streams(url: str, count: int) -> tuple[list[threading.Thread], list[str]]:
    """``count`` streams of ``url`` (a server answering with the ``stall`` scenario), each
    read until the server cuts it; what each client saw in the end."""
    seen: list[str] = []
    started = threading.Barrier(count + 1)

    def read() -> None:
        try:
            with httpx.stream("POST", url + "/responses", json=STREAM, timeout=30) as answer:
                started.wait(10)
                for _ in answer.iter_bytes():
                    pass
            seen.append("ended")
        except httpx.HTTPError as error:
            seen.append(type(error).__name__)

    threads = [threading.Thread(target=read) for _ in range(count)]
    for thread in threads:
        thread.start()
    started.wait(10)  # every stream's head is in: each is stalled now
    return threads, seen


def _quiet(err: str) -> None:
    assert "Traceback" not in err and "CancelledError" not in err, err
    assert "Exception in ASGI application" not in err and "ERROR" not in err, err


@pytest.fixture
def serving() -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "ormock", "serve", "--port", "0", "--json", "--scenario",
         "stall"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert process.stdout is not None
        yield process, json.loads(process.stdout.readline())["base_url"]
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


@pytest.mark.parametrize(("sig", "code"), [
    (signal.SIGINT, 0),  # Ctrl-C: ``ormock serve`` exits 0 (docs/server.md)
    (signal.SIGTERM, -signal.SIGTERM),  # uvicorn stops, then dies of the signal it was sent
])
def test_serve_stopped_with_open_streams_cuts_them_quietly(
        serving: tuple[subprocess.Popen[str], str], sig: int, code: int) -> None:
    process, url = serving
    threads, seen = _open_streams(url, 3)
    began = time.monotonic()
    process.send_signal(sig)
    _, err = process.communicate(timeout=30)
    for thread in threads:
        thread.join(10)
    assert process.returncode == code
    assert time.monotonic() - began < 5  # within uvicorn's graceful shutdown, no hang
    _quiet(err)
    assert err.count("cut short") == 1, err
    assert "stopped with 3 answers still in flight, cut short" in err
    assert seen == ["RemoteProtocolError"] * 3  # each stream's connection closed mid-body


def test_serve_stopped_with_nothing_in_flight_says_nothing_of_it(
        serving: tuple[subprocess.Popen[str], str]) -> None:
    process, url = serving
    assert httpx.get(url + "/models", timeout=30).status_code == 200
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0
    _quiet(err)
    assert "cut short" not in err


def test_record_stopped_with_open_streams_cuts_them_quietly(tmp_path: Path) -> None:
    with OrmockServer(scenarios=["stall"]) as upstream:
        process = subprocess.Popen(
            [sys.executable, "-m", "ormock", "record", "--upstream", upstream.base_url,
             "--port", "0", "--cassettes", str(tmp_path), "--name", "cut"],
            stderr=subprocess.PIPE, text=True, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            assert process.stderr is not None
            found = re.search(r" on (http://\S+/v1) into ", process.stderr.readline())
            assert found
            threads, seen = _open_streams(found.group(1), 2)
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
        for thread in threads:
            thread.join(10)
    assert process.returncode == 0
    _quiet(err)
    assert "stopped with 2 answers still in flight, cut short" in err
    assert seen == ["RemoteProtocolError"] * 2
    # the stop cut them, not their clients: no "(stalled)" interaction logged nor recorded
    assert "stalled" not in err and "client left" not in err, err
    assert "request:" not in (tmp_path / "cut.yaml").read_text()


def test_a_server_stopped_from_python_with_open_streams_logs_no_traceback(
        capfd: pytest.CaptureFixture[str]) -> None:
    lines: list[str] = []
    server = OrmockServer(scenarios=["stall"], say=lines.append).start()
    threads, seen = _open_streams(server.base_url, 2)
    server.stop()
    for thread in threads:
        thread.join(10)
    _quiet(capfd.readouterr().err)
    assert lines == ["ormock: stopped with 2 answers still in flight, cut short"]
    assert seen == ["RemoteProtocolError"] * 2


def test_a_forward_cut_by_the_stop_is_not_recorded_as_stalled() -> None:
    lines: list[str] = []
    with OrmockServer(scenarios=["stall"]) as upstream:
        server = OrmockServer(say=lines.append).start()
        server.engine().record_to(Upstream(upstream.base_url, None, "all"))
        threads, seen = _open_streams(server.base_url, 1)
        server.stop()
        for thread in threads:
            thread.join(10)
    assert lines == ["ormock: stopped with 1 answer still in flight, cut short"]
    assert seen == ["RemoteProtocolError"]
    replays = server.engine().replays
    # left as it was when the stop came: neither a stalled interaction nor a miss
    assert (replays.recorded, replays.not_recorded, replays.pending) == ([], [], 1)
