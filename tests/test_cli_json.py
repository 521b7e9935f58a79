"""``--json`` wherever a person would otherwise parse text: each command's output parsed as
JSON and held to what the text output says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from ormock.cli import main
from ormock.scenario import catalogue

ROOT = Path(__file__).resolve().parent.parent


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_scenarios_json_lists_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    code, listed = run_json(capsys, "scenarios", "--json")
    assert code == 0
    assert [row["name"] for row in listed] == list(catalogue())
    text = next(row for row in listed if row["name"] == "text")
    assert text["steps"] >= 1 and text["description"] and text["path"].endswith("text.yaml")


def test_show_json_gives_the_frames_and_where_the_fault_struck(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, shown = run_json(capsys, "show", "disconnect", "--json")
    assert code == 0
    assert (shown["scenario"], shown["step"], shown["seed"]) == ("disconnect", 1, 0)
    assert shown["request"]["stream"] is True
    assert shown["frames"][0]["data"].startswith("event: response.created")
    assert shown["frames"][-1]["action"] == "reset"
    strike = shown["struck"][0]
    assert strike["fault"] == "disconnect" and strike["what"] == "connection reset"
    # the byte offset is where the frames' bytes stop
    assert strike["byte"] == sum(len(f["data"].encode()) for f in shown["frames"])
    assert shown["timeline"][0]["type"] == "response.created"
    code, limited = run_json(capsys, "show", "rate-limited", "--json")
    assert limited["status"] == 429 and "retry-after-ms" in limited["headers"]
    assert json.loads(limited["body"])["error"]["code"]
    assert limited["struck"] == [{"fault": "http_error", "index": None, "frame": None,
                                  "byte": None, "what": "HTTP 429"}]


def test_check_json_reports_each_file(capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("name: good\nsteps:\n  - reply:\n      items:\n        - message: hi\n")
    broken = tmp_path / "broken.sse"
    broken.write_text('data: {"type":"response.created","sequence_number":3,'
                      '"response":{"id":"r","object":"response","status":"in_progress"}}\n\n')
    cassette = ROOT / "cassettes" / "streamed-text.yaml"
    code, report = run_json(capsys, "check", "--json", str(good), str(broken), str(cassette))
    assert code == 1 and report["ok"] is False
    by_kind = {r["kind"]: r for r in report["files"]}
    assert by_kind["scenario"] == {"path": str(good), "kind": "scenario", "ok": True,
                                   "name": "good", "steps": 1, "findings": []}
    capture = by_kind["capture"]
    assert capture["ok"] is False and capture["findings"]
    assert {"rule", "message", "index", "line"} <= set(capture["findings"][0])
    assert by_kind["cassette"]["ok"] is True and by_kind["cassette"]["interactions"] >= 1
    # the same findings as the text output
    assert main(["check", str(broken)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(capture["findings"])
    assert all(f["rule"] in line for f, line in zip(capture["findings"], lines, strict=True))


def test_cassette_list_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, listed = run_json(capsys, "cassette", "list", "--json",
                            str(ROOT / "cassettes" / "websocket-session.yaml"))
    assert code == 0
    kinds = {row["kind"] for row in listed["interactions"]}
    assert "websocket" in kinds
    socket = next(r for r in listed["interactions"] if r["kind"] == "websocket")
    assert socket["frames"] >= socket["events"] > 0
    code, streamed = run_json(capsys, "cassette", "list", "--json",
                              str(ROOT / "cassettes" / "streamed-text.yaml"))
    row = streamed["interactions"][0]
    assert (row["interaction"], row["method"], row["kind"], row["status"]) == \
        (1, "POST", "sse", 200)
    assert row["events"] > 0 and row["ended"] == "whole"


def test_serve_json_prints_where_it_listens() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "ormock", "serve", "--port", "0", "--json", "--seed", "7"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    try:
        assert process.stdout is not None
        ready = json.loads(process.stdout.readline())
        assert ready["seed"] == 7 and ready["workers"] == 1
        assert ready["base_url"].startswith("http://127.0.0.1:")
        answer = httpx.post(ready["base_url"] + "/responses", timeout=30,
                            json={"model": "m", "input": "hi"})
        assert answer.status_code == 200 and answer.json()["object"] == "response"
    finally:
        process.terminate()
        process.communicate(timeout=30)  # reads and closes its stdout
