"""``ormock demo``, ``ormock show NAME --timeline`` and ``ormock journal list|export``, run in
process against real servers."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ormock import OrmockServer
from ormock.cassette.fileformat import load_cassette
from ormock.cli import main
from ormock.commands.demo import DEFAULT_SCENARIOS
from ormock.scenario import catalogue, load_scenario
from tests.inspector_helpers import StreamReader

ROOT = Path(__file__).resolve().parent.parent


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_default_scenarios_are_in_the_catalogue() -> None:
    assert set(DEFAULT_SCENARIOS) <= set(catalogue())


def test_demo_runs_the_default_scenarios_and_says_what_the_client_did(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "demo", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["inspector"] == data["url"] + "/_ormock/"
    by_name = {s["name"]: s for s in data["scenarios"]}
    assert list(by_name) == list(DEFAULT_SCENARIOS)
    assert [f"[{i}/6]" in err for i in range(1, 7)] == [True] * 6  # progress on stderr
    text = by_name["text"]["client"]
    assert text["outcome"] == "completed" and text["output_text"].startswith("Hello!")
    assert (text["requests"], text["retries"]) == (1, 0)
    tools = by_name["tool-roundtrip"]["client"]
    assert tools["outcome"] == "completed" and tools["requests"] == 2 and tools["turns"] == 2
    failed = by_name["failed-midstream"]["client"]
    assert failed["outcome"] == "raised" and "openai.APIError" in failed["exception"]
    limited = by_name["rate-limited-once"]
    assert limited["client"]["retries"] == 1 and limited["client"]["outcome"] == "completed"
    assert [r["status"] for r in limited["requests"]] == [429, 200]
    assert limited["requests"][0]["struck"][0]["fault"] == "http_error"
    broken = by_name["broken-sequence"]["requests"][0]
    assert broken["findings"][0]["rule"] == "sequence-number"
    vendor = by_name["vendor-events"]["requests"][0]
    assert any(r["type"] == "acme:trace" for r in vendor["timeline"])


def test_demo_prints_timelines_and_the_inspector_url(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "demo", "failed-midstream", "broken-sequence")
    assert code == 0
    assert "== failed-midstream:" in out and "== broken-sequence:" in out
    assert "!! fault fail_midstream (error sent)" in out
    assert "?? sequence-number: sequence_number is 6, expected 5" in out
    assert "client raised openai.APIError" in out
    assert "response.output_text.delta x" in out  # a run of deltas on one line
    assert out.rstrip().splitlines()[-1].startswith("inspector: http://127.0.0.1:")


def test_demo_refuses_an_unknown_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "demo", "no-such-scenario")
    assert code == 2 and "no-such-scenario" in err and "ormock scenarios" in err


def test_demo_serve_keeps_the_server_up_until_interrupted() -> None:
    with OrmockServer() as probe:  # a free port: bound, then released for the demo
        port = probe.port
    demo = subprocess.Popen([sys.executable, "-m", "ormock", "demo", "text", "--serve",
                             "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert demo.stderr is not None
        line = demo.stderr.readline()
        assert "until Ctrl-C" in line, line
        page = httpx.get(f"http://127.0.0.1:{port}/_ormock/", timeout=10)
        assert page.status_code == 200 and "ormock inspector" in page.text
        journal = httpx.get(f"http://127.0.0.1:{port}/demo-text/_ormock/journal").json()
        assert len(journal["data"]) == 1
        page_stream = StreamReader(f"http://127.0.0.1:{port}/_ormock/journal/stream")
        demo.send_signal(2)  # Ctrl-C, with the page's live stream open
        assert demo.wait(20) == 0
        page_stream.thread.join(10)
        assert not page_stream.thread.is_alive()
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
        if demo.stderr is not None:
            demo.stderr.close()


def test_show_timeline_marks_the_faults_and_findings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", "disconnect", "--timeline")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("--- scenario disconnect")
    assert any("response.created" in line and "#0" in line for line in lines)
    assert "!! fault disconnect (connection reset)" in out
    assert "?? terminal-count:" in out and lines[-1].strip().endswith("[reset]")
    code, out, _ = run(capsys, "show", "rate-limited", "--timeline")
    assert code == 0 and "HTTP 429 (fault http_error)" in out


def test_show_timeline_shows_offsets_of_a_paced_scenario(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", "slow", "--timeline")
    assert code == 0
    offsets = [float(line.split()[0]) for line in out.splitlines()[2:]
               if line.split()[0][0].isdigit()]
    assert offsets[0] > 500.0 and offsets == sorted(offsets)  # 1 s to the first event, jittered
    assert "!! fault slow" in out


def test_journal_list_and_export(capsys: pytest.CaptureFixture[str], server: OrmockServer,
                                 tmp_path: Path) -> None:
    server.namespaces.open("cli-export")
    sent = httpx.post(f"{server.url}/cli-export/v1/responses", timeout=10, json={
        "model": "m", "input": "hi", "stream": True},
        headers={"x-ormock-scenario": "tool-call"}).content
    code, out, _ = run(capsys, "journal", "list", "--url", server.url, "--namespace",
                       "cli-export")
    assert code == 0
    entry_id = out.split()[0]
    assert "tool-call step 1" in out and "200" in out
    code, out, _ = run(capsys, "journal", "list", "--url", server.url + "/v1", "--namespace",
                       "cli-export", "--json")
    assert code == 0 and json.loads(out)[0]["id"] == entry_id
    cassette = tmp_path / "one.yaml"
    code, _, err = run(capsys, "journal", "export", entry_id, "--as", "cassette", "--url",
                       server.url, "-o", str(cassette))
    assert code == 0 and "wrote" in err
    assert len(load_cassette(cassette).interactions) == 1
    code, out, _ = run(capsys, "journal", "export", entry_id, "--url", server.url)
    assert code == 0
    scenario = tmp_path / "step.yaml"
    scenario.write_text(out, encoding="utf-8")
    loaded = load_scenario(scenario)
    with OrmockServer() as fresh:
        fresh.engine().use(loaded)
        again = httpx.post(f"{fresh.url}/v1/responses", timeout=10,
                           json={"model": "m", "input": "hi", "stream": True}).content
    assert again == sent


def test_journal_export_says_what_went_wrong(capsys: pytest.CaptureFixture[str],
                                            server: OrmockServer) -> None:
    code, _, err = run(capsys, "journal", "export", "e999999", "--url", server.url)
    assert code == 2 and "No journal entry 'e999999'" in err
    with socket.socket() as held:  # a port bound and never listened on: nobody answers there
        held.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{held.getsockname()[1]}"
        code, _, err = run(capsys, "journal", "export", "e1", "--url", url)
    assert code == 2 and "is a server running there?" in err
