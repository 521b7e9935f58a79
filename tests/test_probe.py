"""``ormock probe``: the battery against a real ormock server on loopback, clean and broken.

ormock itself must hold every MUST under ``--profile openresponses``; a namespace given faults
(a sequence gap on every stream, an error without the envelope, a connection closed
mid-stream) must be reported rule by rule and exit 1; every exchange is in the cassette, which
loads, and the key is not.
"""

from __future__ import annotations

import itertools
import json
import random
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ormock import OrmockServer
from ormock.cassette import load_cassette
from ormock.cassette.fileformat import response_bytes
from ormock.cli import main
from ormock.faults import HTTP, Fault, register
from ormock.faults.base import FAULTS
from ormock.probe import (
    BATTERY,
    Context,
    Exchange,
    base_url,
    check_error,
    check_response_object,
    cut_by_max_output_tokens,
    default_cassette,
)
from ormock.protocol.checker import check_stream
from ormock.protocol.reply import RawReply, Reply

KEY = "sk-" + "probe0123456789abcdefghijklmnop"
_names = itertools.count()


@dataclass(frozen=True, kw_only=True)
class BareError(Fault):
    """An error answer a broken provider gives: a status and a body that is no envelope."""

    name = "probe_bare_error"
    stage = HTTP

    def apply(self, reply: Reply, rng: random.Random) -> RawReply:
        return RawReply(502, b'{"detail": "upstream broke"}')


@pytest.fixture
def bare_error() -> Iterator[None]:
    """``BareError`` registered for one test (the fault catalogue feeds the scenario schema
    other tests compare with the shipped file)."""
    register(BareError)
    try:
        yield
    finally:
        FAULTS.pop(BareError.name)


@pytest.fixture
def namespace(server: OrmockServer) -> tuple[str, str]:
    """A fresh namespace of the session's (self-checking) server: its name and URL."""
    name = f"probe{next(_names)}"
    server.namespaces.open(name)
    return name, f"{server.url}/{name}"


def _probe(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = main(["probe", "--model", "ormock-1", "--json", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def _by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in report["exchanges"]}


def test_ormock_holds_every_must(server: OrmockServer, namespace: tuple[str, str], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "ormock.yaml"
    code, report, err = _probe(capsys, "--upstream", namespace[1] + "/v1/", "--profile",
                               "openresponses", "--cassette", str(out))
    assert code == 0, report
    assert report["ok"] and report["must"] == 0 and report["should"] == 0
    exchanges = _by_name(report)
    assert list(exchanges) == [p.name for p in BATTERY]
    assert all(e["findings"] == [] and e["skipped"] is None for e in exchanges.values())
    assert exchanges["invalid-request"]["status"] == 400
    assert all(e["status"] == 200 for n, e in exchanges.items() if n != "invalid-request")
    assert exchanges["text-stream"]["events"] > 5 and exchanges["text"]["events"] is None
    for probe in BATTERY:  # progress on stderr, one line per probe
        assert f"] {probe.name}: " in err

    cassette = load_cassette(out)
    assert len(cassette.interactions) == len(BATTERY)
    assert cassette.profile == "openresponses" and cassette.upstream == namespace[1] + "/v1"
    assert cassette.recorded_with is not None and cassette.recorded_with.startswith("ormock probe")
    requests = [i.request for i in cassette.interactions]
    assert {r.path for r in requests} == {f"/{namespace[0]}/v1/responses"}
    assert [r.body.get("stream", False) if isinstance(r.body, dict) else None
            for r in requests] == [p.stream for p in BATTERY]
    text = out.read_text()
    assert KEY not in text and "Bearer" not in text and "authorization: REDACTED" in text
    # the recording is exact: each streamed body the checker passes as it passed over the wire
    for interaction, probe in zip(cassette.interactions, BATTERY, strict=True):
        answer = interaction.response
        assert answer is not None and answer.ended == "whole" and answer.chunks
        if probe.stream and probe.expect == "2xx":
            assert answer.streamed and check_stream(response_bytes(answer),
                                                    profile="openresponses").ok
    # the round trip answered the tool call the probe before it got
    names = [p.name for p in BATTERY]
    tool_call = cassette.interactions[names.index("tool-call")].response
    assert tool_call is not None and tool_call.messages is not None
    call = next(m for m in tool_call.messages
                if m.event and m.event.get("type") == "response.output_item.done")
    sent = cassette.interactions[names.index("tool-round-trip")].request.body
    assert isinstance(sent, dict) and call.event is not None
    assert sent["input"][0]["call_id"] == call.event["item"]["call_id"]


@pytest.mark.usefixtures("bare_error")
def test_a_broken_provider_is_named_rule_by_rule(
        server: OrmockServer, namespace: tuple[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROBE_TEST_KEY", KEY)
    engine = server.engine(namespace[0])
    # faults count the requests that reach them: the valid ones, in battery order
    valid = [p.name for p in BATTERY if p.expect == "2xx"]
    # (an HTTP error ends the walk: the faults after it would not count that request)
    engine.inject({"sequence": {"kind": "gap", "at": 3}})
    engine.inject({"disconnect": {"mode": "close", "after_events": 4},
                   "when": {"nth": valid.index("forced-tool") + 1}})
    engine.inject({"probe_bare_error": {}, "when": {"nth": valid.index("previous-response")
                                                     + 1}})
    out = tmp_path / "broken.yaml"
    code, report, _ = _probe(capsys, "--upstream", namespace[1], "--profile", "openresponses",
                             "--cassette", str(out), "--key-env", "PROBE_TEST_KEY")
    assert code == 1 and not report["ok"]
    exchanges = _by_name(report)

    def rules(name: str, severity: str = "MUST") -> set[str]:
        return {f["rule"] for f in exchanges[name]["findings"] if f["severity"] == severity}

    for name in ("text-stream", "tool-call", "tool-round-trip", "max-output-tokens"):
        assert rules(name) == {"sequence-number"}, exchanges[name]
        gap = exchanges[name]["findings"][0]
        assert gap["index"] == 3 and gap["line"] and "expected" in gap["message"]
    assert rules("text") == set() and rules("invalid-request") == set()  # no stream: no gap
    assert rules("previous-response") == {"status", "error-envelope"}
    envelope = next(f for f in exchanges["previous-response"]["findings"]
                    if f["rule"] == "error-envelope")
    assert "HTTP 502" in envelope["message"] and "detail" in envelope["message"]
    assert exchanges["forced-tool"]["ended"] == "closed"
    assert {"transport", "terminal-count"} <= rules("forced-tool")
    assert report["must"] == sum(len(rules(n)) for n in ("text-stream", "tool-call",
                                                          "tool-round-trip",
                                                          "max-output-tokens",
                                                          "previous-response")) + len(
        [f for f in exchanges["forced-tool"]["findings"] if f["severity"] == "MUST"])

    cassette = load_cassette(out)
    assert len(cassette.interactions) == len(BATTERY)  # the broken ones too
    answers = [i.response for i in cassette.interactions]
    assert all(a is not None for a in answers)
    forced = answers[[p.name for p in BATTERY].index("forced-tool")]
    assert forced is not None and forced.ended == "closed" and forced.streamed
    bare = answers[[p.name for p in BATTERY].index("previous-response")]
    assert bare is not None and bare.status == 502 and bare.body is not None
    assert bare.body.json == {"detail": "upstream broke"}
    text = out.read_text()
    assert KEY not in text and "Bearer" not in text


def test_the_human_report_lists_each_finding_under_its_exchange(
        server: OrmockServer, namespace: tuple[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    server.engine(namespace[0]).inject({"malformed": "type_mismatch"})
    code = main(["probe", "--upstream", namespace[1], "--model", "ormock-1", "--profile",
                 "openresponses", "--cassette", str(tmp_path / "c.yaml")])
    out = capsys.readouterr().out
    assert code == 1
    lines = out.splitlines()
    assert lines[1].split() == ["probe", "status", "events", "ms", "findings"]
    row = lines.index(next(line for line in lines if line.startswith("text-stream ")))
    assert lines[row].split()[1] == "200" and "1 MUST, 0 SHOULD" in lines[row]
    assert lines[row + 1].startswith("    MUST event-type-mismatch at event ")
    assert f"cassette: {tmp_path / 'c.yaml'}" in out


def test_a_tool_the_model_does_not_call_skips_the_round_trip(
        server: OrmockServer, namespace: tuple[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # a model that answers the weather question in words: its choice under tool_choice auto
    server.engine(namespace[0]).use({
        "name": "no-tools", "strict": False,
        "steps": [{"times": "forever", "match": {"input_contains": "weather"},
                   "reply": {"items": [{"message": "It is sunny in Paris."}]}}]})
    out = tmp_path / "c.yaml"
    code, report, err = _probe(capsys, "--upstream", namespace[1], "--cassette", str(out))
    exchanges = _by_name(report)
    assert code == 0 and report["ok"] and report["profile"] == "openai"
    assert [f["rule"] for f in exchanges["tool-call"]["findings"]] == ["tool-call"]
    assert exchanges["tool-call"]["findings"][0]["severity"] == "SHOULD"
    assert exchanges["tool-round-trip"]["skipped"] == "tool-call gave no function_call to answer"
    assert "tool-round-trip: " in err and "skipped" in err
    assert len(load_cassette(out).interactions) == len(BATTERY) - 1  # nothing sent, nothing kept


def test_an_unreachable_upstream_exits_2(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = main(["probe", "--upstream", f"http://127.0.0.1:{port}", "--cassette",
                 str(tmp_path / "c.yaml"), "--timeout", "5"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"cannot reach http://127.0.0.1:{port}/v1" in err
    assert not (tmp_path / "c.yaml").exists()


@pytest.mark.parametrize("args", [["--upstream", "api.openai.com"],
                                  ["--upstream", "ftp://host/v1"],
                                  ["--upstream", "http://127.0.0.1:1", "--timeout", "0"]])
def test_usage_errors_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", *args]) == 2
    assert capsys.readouterr().err.startswith("ormock probe: ")


def test_base_url_takes_the_upstream_with_or_without_v1() -> None:
    assert base_url("https://api.openai.com") == "https://api.openai.com/v1"
    assert base_url("https://api.openai.com/v1/") == "https://api.openai.com/v1"
    assert base_url("http://127.0.0.1:8787/ns") == "http://127.0.0.1:8787/ns/v1"
    assert default_cassette("http://127.0.0.1:8787/v1").name.startswith("probe-127.0.0.1-8787-")


def test_the_error_envelope_rules() -> None:
    full = {"error": {"message": "bad", "type": "invalid_request", "param": "input",
                      "code": "invalid_type"}}
    assert check_error(400, full, "openresponses") == []
    nulls = {"error": {"message": "bad", "type": "invalid_request_error", "param": None,
                       "code": None}}
    assert [(f.severity, f.rule) for f in check_error(400, nulls, "openai")] == [
        ("SHOULD", "error-fields"), ("SHOULD", "error-fields")]
    assert {f.rule for f in check_error(400, nulls, "openresponses")} == {
        "error-fields", "error-type"}
    wrong_status = check_error(500, full, "openresponses")
    assert [f.message for f in wrong_status] == [
        "error.type 'invalid_request' goes with HTTP 400, not 500"]
    for broken in ({"error": "bad"}, {"error": {"message": "bad", "type": "x"}}, None, []):
        found = check_error(400, broken, "openai")
        assert [(f.severity, f.rule) for f in found] == [("MUST", "error-envelope")]


def test_a_json_body_must_be_a_response() -> None:
    found = check_response_object({"id": 3, "object": "thing", "status": "done",
                                   "output": [{}]}, "openresponses")
    shape = [f.message for f in found if f.rule == "response-object"]
    assert len(shape) == 4 and all(f.severity == "MUST" for f in found)
    assert {f.rule for f in found} == {"response-object", "schema"}
    under_openai = check_response_object({"id": "r", "object": "response",
                                          "status": "completed", "output": []}, "openai")
    assert [(f.severity, f.rule) for f in under_openai] == [("SHOULD", "schema")]


@pytest.mark.parametrize(("response", "expected"), [
    ({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
      "usage": {"output_tokens": 16}}, []),
    ({"status": "incomplete", "incomplete_details": {"reason": "content_filter"}},
     [("MUST", "max-output-tokens")]),
    ({"status": "completed", "usage": {"output_tokens": 9}}, [("SHOULD", "max-output-tokens")]),
    ({"status": "completed", "usage": {"output_tokens": 400}},
     [("MUST", "max-output-tokens"), ("MUST", "max-output-tokens")]),
    ({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
      "usage": {"output_tokens": 17}}, [("MUST", "max-output-tokens")]),
])
def test_max_output_tokens_must_cut(response: dict[str, Any],
                                    expected: list[tuple[str, str]]) -> None:
    probe = next(p for p in BATTERY if p.name == "max-output-tokens")
    exchange = Exchange(probe, request=probe.build(Context("m", "openai")), response=response)
    found = list(cut_by_max_output_tokens(exchange, Context("m", "openai")))
    assert [(f.severity, f.rule) for f in found] == expected


def test_a_stream_that_stalls_is_cut_at_the_timeout_and_kept(
        server: OrmockServer, namespace: tuple[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    valid = [p.name for p in BATTERY if p.expect == "2xx"]
    server.engine(namespace[0]).inject({"stall": {"after_events": 3},
                                        "when": {"nth": valid.index("text-stream") + 1}})
    out = tmp_path / "c.yaml"
    code, report, _ = _probe(capsys, "--upstream", namespace[1], "--cassette", str(out),
                             "--timeout", "0.5")
    stalled = _by_name(report)["text-stream"]
    assert code == 1 and stalled["ended"] == "stalled" and stalled["events"] == 3
    assert {f["rule"] for f in stalled["findings"]} == {"transport", "terminal-count"}
    answer = load_cassette(out).interactions[valid.index("text-stream")].response
    assert answer is not None and answer.ended == "stalled" and answer.messages is not None
    assert len(answer.messages) == 3


def test_a_key_in_an_answer_refuses_the_cassette_and_exits_2(
        server: OrmockServer, namespace: tuple[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    server.engine(namespace[0]).use({
        "name": "leaky", "strict": False,
        "steps": [{"times": "forever", "match": {"input_contains": "five words"},
                   "reply": {"items": [{"message": f"Your key is {KEY}."}]}}]})
    out = tmp_path / "c.yaml"
    code = main(["probe", "--upstream", namespace[1], "--model", "ormock-1", "--cassette",
                 str(out)])
    printed = capsys.readouterr()
    assert code == 2 and not out.exists()
    assert "cassette NOT written: refusing to write" in printed.out
    assert "an API key (sk-...)" in printed.err and KEY not in printed.err + printed.out
