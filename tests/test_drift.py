"""``ormock drift``: a cassette recorded (through the real recorder) from an ``OrmockServer`` on
127.0.0.1, then its requests sent again to a namespace of that server whose answers changed in
one way each (a field added, removed or of another type, an event added or moved, an item type,
the status, the error envelope, the rate-limit headers, ``sequence_number``, ``[DONE]``, the
terminal event) or only in value; every change named, with the exit status. ``--write``,
``--ignore``, vcrpy cassettes, chained requests and the usage errors too."""

from __future__ import annotations

import copy
import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from recordings import namespace, raw_upstream, recorded

from ormock import OrmockServer
from ormock.cassette import load, load_cassette, to_vcr
from ormock.cli import main
from ormock.server.recorder import RecorderServer

KEY = "sk-" + "drift-upstream-key-0123456789abcdef"
TEXT = {"name": "text", "steps": [{"times": "forever", "reply": {
    "items": [{"message": "one two three"}]}}]}
STREAM = {"model": "m", "input": "hi", "stream": True}
PLAIN = {"model": "m", "input": "hi"}

Changes = list[tuple[str, str, str | None, str | None]]


def _reply(reply: dict[str, Any]) -> dict[str, Any]:
    return {"name": "changed", "steps": [{"times": "forever", "reply": reply}]}


def _record(url: str, folder: Path, name: str, *bodies: dict[str, Any]) -> Path:
    """A cassette of ``bodies`` POSTed through the real recorder in front of ``url``."""
    with RecorderServer(url, folder, name=name, upstream_key=KEY, log=lambda _: None) as rec:
        for body in bodies:
            httpx.post(f"{rec.base_url}/responses", json=body, timeout=10,
                       headers={"authorization": "Bearer dummy"})
        recorded(rec, len(bodies))
        return Path(rec.cassette)


@pytest.fixture(scope="module")
def upstream() -> Iterator[OrmockServer]:
    with OrmockServer(seed=0, api_key=KEY) as server:
        yield server


@pytest.fixture(scope="module")
def base(upstream: OrmockServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One streamed and one JSON answer of ``TEXT``."""
    return _record(namespace(upstream, TEXT), tmp_path_factory.mktemp("base"), "base.yaml",
                   STREAM, PLAIN)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFT_KEY", KEY)


def _events(cassette: Path) -> list[dict[str, Any]]:
    response = load_cassette(cassette).interactions[0].response
    assert response is not None and response.messages is not None
    return [m.event for m in response.messages if m.event is not None]


def _literal(base: Path, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
             *breaks: str) -> dict[str, Any]:
    """The recorded events, changed, as a literal reply (the same ids, text and numbers)."""
    return _reply({"events": change(copy.deepcopy(_events(base))), "breaks": list(breaks)})


def _each(kinds: tuple[str, ...], edit: Callable[[dict[str, Any]], None]
          ) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def change(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for event in events:
            if event["type"] in kinds:
                edit(event)
        return events
    return change


def _swap_dones(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    at = [e["type"] for e in events].index("response.output_text.done")
    events[at], events[at + 1] = events[at + 1], events[at]
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def _no_numbers(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "sequence_number"} for e in events]


DELTA = ("response.output_text.delta",)
TEXT_EVENTS = ("response.output_text.delta", "response.output_text.done")


def drift(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["drift", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def report(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code, out, _ = drift([*argv, "--json", "--upstream-key-env", "DRIFT_KEY"], capsys)
    return code, json.loads(out)


def changes_of(data: dict[str, Any], cassette: int = 0) -> list[Changes]:
    return [[(c["kind"], c["where"], c["old"], c["new"]) for c in i["changes"]]
            for i in data["cassettes"][cassette]["interactions"]]


# the upstream's changed answer -> the changes of the streamed and of the JSON interaction
CASES: dict[str, tuple[Callable[[Path], dict[str, Any]], list[Changes]]] = {
    "field added": (lambda b: _literal(b, _each(DELTA, lambda e: e.update(obfuscation="xy"))),
                    [[("field added", "event response.output_text.delta: obfuscation", None,
                       "string")], []]),
    "field removed": (lambda b: _literal(b, _each(TEXT_EVENTS, lambda e: e.pop("logprobs"))),
                      [[("field removed", "event response.output_text.delta: logprobs",
                         "array", None),
                        ("field removed", "event response.output_text.done: logprobs", "array",
                         None)], []]),
    "type changed": (lambda b: _literal(b, _each(DELTA, lambda e: e.update(logprobs={})),
                                        "schema"),
                     [[("field type changed", "event response.output_text.delta: logprobs",
                        "array", "object")], []]),
    "event added": (lambda b: _reply({"items": [{"message": "other words"}],
                                      "faults": [{"vendor_event": {"type": "acme:trace"}}]}),
                    [[("event added", "acme:trace", None, None)], []]),
    "order changed": (lambda b: _literal(b, _swap_dones, "order"),
                      [[("event order", "event order",
                         "response.created response.in_progress response.output_item.added "
                         "response.content_part.added response.output_text.delta "
                         "response.output_text.done response.content_part.done "
                         "response.output_item.done response.completed",
                         "response.created response.in_progress response.output_item.added "
                         "response.content_part.added response.output_text.delta "
                         "response.content_part.done response.output_text.done "
                         "response.output_item.done response.completed")], []]),
    "sequence_number removed": (lambda b: _literal(b, _no_numbers, "schema", "sequence-number"),
                                [[("sequence_number", "sequence_number", "on every event",
                                   "on no event")], []]),
    "item type changed": (
        lambda b: _reply({"items": [{"function_call": {"name": "f", "arguments": {"a": 1}}}]}),
        [[("event added", "response.function_call_arguments.delta", None, None),
          ("event added", "response.function_call_arguments.done", None, None),
          ("event removed", "response.content_part.added", None, None),
          ("event removed", "response.output_text.delta", None, None),
          ("event removed", "response.output_text.done", None, None),
          ("event removed", "response.content_part.done", None, None),
          ("output items", "output items", "[message(output_text)]", "[function_call]")],
         [("output items", "output items", "[message(output_text)]", "[function_call]")]]),
    "status changed": (lambda b: _reply({"faults": [{"http_error": 500}]}),
                       [[("status", "status", "200", "500"), ("body", "body", "sse", "error"),
                         ("content-type", "content-type", "text/event-stream",
                          "application/json")],
                        [("status", "status", "200", "500"), ("body", "body", "json", "error")]]),
    "no [DONE]": (lambda b: _reply({"items": [{"message": "a b c d"}], "faults": ["no_done"]}),
                  [[("[DONE]", "[DONE]", "true", "false")], []]),
    "terminal event": (
        lambda b: _reply({"status": "incomplete", "incomplete_reason": "max_output_tokens",
                          "items": [{"message": "cut"}]}),
        [[("event added", "response.incomplete", None, None),
          ("event removed", "response.completed", None, None),
          ("field type changed", "object response: completed_at", "integer|null", "null"),
          ("field type changed", "object response: incomplete_details", "null",
           "null|object"),
          ("field added", "object response: incomplete_details.reason", None, "string"),
          ("terminal event", "terminal event", "response.completed", "response.incomplete")],
         [("field type changed", "object response: completed_at", "integer", "null"),
          ("field type changed", "object response: incomplete_details", "null", "object"),
          ("field added", "object response: incomplete_details.reason", None, "string")]]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_kind_of_drift_is_named(case: str, upstream: OrmockServer, base: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    scenario, expected = CASES[case]
    url = namespace(upstream, scenario(base))
    before = base.read_bytes()
    code, data = report([str(base), "--upstream", url], capsys)
    assert code == 1
    assert changes_of(data) == expected
    assert data["changed"] is True
    drifted = sum(1 for c in expected if c)
    assert data["summary"] == {"cassettes": 1, "changed_cassettes": 1, "interactions": 2,
                               "changed": drifted, "changes": sum(map(len, expected)),
                               "unchanged": 2 - drifted, "not_compared": 0}
    cassette = data["cassettes"][0]
    assert cassette["file"] == str(base) and cassette["written"] is None
    assert cassette["problem"] is None and cassette["changed"] is True
    assert [(i["interaction"], i["method"], i["path"], i["note"])
            for i in cassette["interactions"]] == [(1, "POST", "/v1/responses", None),
                                                   (2, "POST", "/v1/responses", None)]
    assert base.read_bytes() == before  # never written over


def test_values_only_is_no_drift(upstream: OrmockServer, base: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Other ids, text, usage numbers and timestamps: the same shape."""
    other = {"name": "other", "seed": 99, "steps": [{"times": "forever", "reply": {
        "items": [{"message": "a much longer answer with many more words in it than before"}],
        "usage": {"input_tokens": 77}}}]}
    url = namespace(upstream, other)
    code, out, err = drift([str(base), "--upstream", url, "--upstream-key-env", "DRIFT_KEY"],
                           capsys)
    assert code == 0
    assert out.splitlines() == [f"ormock drift against {url}",
                                f"{base}: no shape change (2 interactions)",
                                "1 cassette, 2 interactions: 0 changed shape (0 changes), "
                                "2 unchanged, 0 not compared"]
    assert err == f"ormock drift: {base}: sending 2 requests again\n"
    assert KEY not in out + err


def test_the_text_and_markdown_reports(upstream: OrmockServer, base: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    url = namespace(upstream, CASES["field added"][0](base))
    code, out, _ = drift([str(base), "--upstream", url, "--upstream-key-env", "DRIFT_KEY"],
                         capsys)
    assert code == 1
    assert out.splitlines()[1:] == [
        f"{base}: 1 of 2 interactions changed shape (1 change)",
        "  interaction 1 (line 7): POST /v1/responses",
        "    field added: event response.output_text.delta: obfuscation (string)",
        "1 cassette, 2 interactions: 1 changed shape (1 change), 1 unchanged, 0 not compared"]
    code, out, _ = drift([str(base), "--upstream", url, "--upstream-key-env", "DRIFT_KEY",
                          "--markdown"], capsys)
    assert code == 1
    assert out.splitlines() == [
        f"### ormock drift against {url}",
        "",
        "| cassette | interaction | request | change | where | was | now |",
        "|---|---|---|---|---|---|---|",
        f"| `{base}` | 1 (line 7) | `POST /v1/responses` | field added | "
        "`event response.output_text.delta: obfuscation` |  | `string` |",
        "",
        "**1 of 2 interactions changed shape (1 change) in 1 of 1 cassette**; 1 unchanged, "
        "0 not compared."]


def test_ignore_leaves_out_fields_and_events(upstream: OrmockServer, base: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    added = namespace(upstream, CASES["field added"][0](base))
    assert report([str(base), "--upstream", added, "--ignore", "obfuscation"], capsys)[0] == 0
    assert report([str(base), "--upstream", added, "--ignore",
                   "response.output_text.*.obfuscation"], capsys)[0] == 0
    assert report([str(base), "--upstream", added, "--ignore", "logprobs"], capsys)[0] == 1
    vendor = namespace(upstream, CASES["event added"][0](base))
    assert report([str(base), "--upstream", vendor, "--ignore", "acme:*"], capsys)[0] == 0


def test_rate_limit_headers_and_the_error_envelope(upstream: OrmockServer, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    limited = _record(namespace(upstream, _reply({"faults": [{"http_error": {
        "status": 429, "retry_after_ms": 20, "rate_limit_headers": False}}]})), tmp_path,
        "limited.yaml", PLAIN)
    url = namespace(upstream, _reply({"faults": [{"http_error": {
        "status": 429, "retry_after_ms": 20, "rate_limit_headers": True}}]}))
    code, data = report([str(limited), "--upstream", url], capsys)
    assert code == 1
    assert changes_of(data) == [[("header added", f"x-ratelimit-{name}", None, None)
                                 for name in ("limit-requests", "limit-tokens",
                                              "remaining-requests", "remaining-tokens",
                                              "reset-requests", "reset-tokens")]]
    assert report([str(limited), "--upstream", namespace(upstream, _reply({"faults": [
        {"http_error": {"status": 429, "retry_after_ms": 999, "rate_limit_headers": False}}]}))],
        capsys)[0] == 0

    async def openrouter(reader: Any, writer: Any) -> None:
        body = b'{"error":{"code":429,"message":"Rate limit exceeded"},"metadata":{"raw":"x"}}'
        # it closes each connection after one answer, and says so (``raw_upstream``)
        writer.write(b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n"
                     b"connection: close\r\nretry-after-ms: 20\r\ncontent-length: "
                     + str(len(body)).encode() + b"\r\n\r\n" + body)
        await writer.drain()

    with raw_upstream(openrouter) as (raw, heads):
        code, data = report([str(limited), "--upstream", raw], capsys)
    assert code == 1
    assert changes_of(data) == [[
        ("field type changed", "error envelope: error.code", "string", "integer"),
        ("field removed", "error envelope: error.param", "string", None),
        ("field removed", "error envelope: error.type", "string", None),
        ("field added", "error envelope: metadata", None, "object"),
        ("field added", "error envelope: metadata.raw", None, "string")]]
    assert f"authorization: Bearer {KEY}".encode() in heads[0]  # the key given, not the file's


def test_vcrpy_cassettes(upstream: OrmockServer, base: Path, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    vcr = tmp_path / "test_chat.yaml"
    to_vcr(load(base), vcr, base_url="https://api.openai.com")
    assert load(vcr).origin == "vcr"
    same = namespace(upstream, TEXT)
    code, data = report([str(vcr), "--upstream", same], capsys)
    assert code == 0 and changes_of(data) == [[], []]
    code, data = report([str(vcr), "--upstream", namespace(upstream, CASES["event added"][0](
        base))], capsys)
    assert code == 1 and changes_of(data) == [[("event added", "acme:trace", None, None)], []]
    lines = [i.line for i in load(vcr).interactions]
    assert [i["line"] for i in data["cassettes"][0]["interactions"]] == lines
    assert lines[0] == 2 and isinstance(lines[1], int)


def test_write_saves_the_new_recording_beside_the_old(upstream: OrmockServer, base: Path,
                                                      tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    folder = tmp_path / "cassettes"
    (folder / "nested").mkdir(parents=True)
    old = folder / "nested" / "chat.yaml"
    old.write_bytes(base.read_bytes())
    (folder / ".chat.yaml.tmp").write_text("not a cassette")  # dot-files are skipped
    before = old.read_bytes()
    url = namespace(upstream, CASES["event added"][0](base))
    code, data = report([str(folder), "--upstream", url, "--write"], capsys)
    assert code == 1
    new = folder / "nested" / "chat.drift.yaml"
    assert data["cassettes"][0]["written"] == str(new)
    assert old.read_bytes() == before
    written = load(new)
    assert [i.response.status for i in written.interactions if i.response] == [200, 200]
    assert written.upstream == url and written.profile == "openai"
    assert "ormock drift of chat.yaml" in str(written.recorded_with)
    assert any(m.event and m.event["type"] == "acme:trace"
               for m in written.interactions[0].response.messages or ())  # type: ignore[union-attr]
    text = new.read_text()
    assert KEY not in text and "Bearer" not in text
    # the next run skips the drift recording it finds in the folder, and writes it anew
    code, data = report([str(folder), "--upstream", url, "--write"], capsys)
    assert [c["file"] for c in data["cassettes"]] == [str(old)]
    assert not (folder / "nested" / "chat.drift.drift.yaml").exists()


def test_chained_requests_get_the_new_ids(upstream: OrmockServer, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A follow-up naming the first answer's id is sent naming the id the upstream gave this
    time (the recorded one does not exist there)."""
    url = namespace(upstream, TEXT)
    with RecorderServer(url, tmp_path, name="chain.yaml", upstream_key=KEY,
                        log=lambda _: None) as rec:
        first = httpx.post(f"{rec.base_url}/responses", json=PLAIN, timeout=10).json()
        httpx.post(f"{rec.base_url}/responses", timeout=10,
                   json={**PLAIN, "previous_response_id": first["id"]})
        recorded(rec, 2)
    with OrmockServer(seed=5, api_key=KEY) as other:  # other ids, none of the recorded ones
        code, data = report([str(rec.cassette), "--upstream", namespace(other, TEXT),
                             "--write"], capsys)
    assert code == 0 and changes_of(data) == [[], []]
    new = load(Path(rec.cassette).with_name("chain.drift.yaml"))
    body = new.interactions[0].response.body  # type: ignore[union-attr]
    assert body is not None and isinstance(body.json, dict)
    follow = new.interactions[1].request.body
    assert isinstance(follow, dict)
    assert follow["previous_response_id"] == body.json["id"] != first["id"]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_upstream_not_reached_is_exit_2(base: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    code, data = report([str(base), "--upstream", url], capsys)
    assert code == 2
    notes = [i["note"] for i in data["cassettes"][0]["interactions"]]
    assert all(n.startswith(f"POST /v1/responses: cannot reach the upstream {url}/responses")
               for n in notes), notes
    assert data["summary"]["not_compared"] == 2 and data["changed"] is False


@pytest.mark.parametrize(("argv", "message"), [
    (["missing.yaml", "--upstream", "http://127.0.0.1:9/v1"],
     "ormock drift: missing.yaml: no such file or folder"),
    (["BAD", "--upstream", "http://127.0.0.1:9/v1"],
     "ormock drift: BAD:6: interactions[0].response.ended: 'exploded' is not allowed; use one "
     "of 'whole', 'closed', 'reset', 'stalled'"),
    (["GOOD", "--upstream", "ftp://x"], "ormock drift: --upstream 'ftp://x': give an http:// or "
     "https:// URL, such as https://api.openai.com/v1"),
    (["GOOD", "--upstream", "http://127.0.0.1:9/v1", "--upstream-key-env", "NO_SUCH_KEY_33"],
     "ormock drift: --upstream-key-env NO_SUCH_KEY_33: that environment variable is not set"),
    (["GOOD", "--upstream", "http://127.0.0.1:9/v1", "--timeout", "0"],
     "ormock drift: --timeout 0.0: give a number of seconds above 0"),
])
def test_usage_and_cassette_errors_are_exit_2(argv: list[str], message: str, base: Path,
                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_SUCH_KEY_33", raising=False)
    Path("BAD").write_text("version: 1\ninteractions:\n- request: {method: POST, path: /v1/x}\n"
                           "  response:\n    status: 200\n    ended: exploded\n")
    Path("GOOD").write_bytes(base.read_bytes())
    code, out, err = drift(argv, capsys)
    assert (code, out) == (2, "")
    assert err.strip() == message


def test_write_redacts_and_refuses_a_key_shaped_value(upstream: OrmockServer, base: Path,
                                                      tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """The new recording goes through the redaction and the secret scan of every cassette
    ormock writes: a key in a request body refuses the write (exit 2, the report still
    printed) until ``--redact-path`` takes it out."""
    secret = "sk-" + "in-the-prompt-0123456789abcdefghij"
    old = tmp_path / "prompt.yaml"
    old.write_text(base.read_text().replace("input: hi", f"input: {secret}"))
    url = namespace(upstream, TEXT)
    code, data = report([str(old), "--upstream", url, "--write"], capsys)
    assert code == 2 and data["changed"] is False
    problem = data["cassettes"][0]["problem"]
    assert problem.startswith(f"the new recording was not written: refusing to write "
                              f"{tmp_path / 'prompt.drift.yaml'}: it would hold")
    assert data["cassettes"][0]["written"] is None
    assert not (tmp_path / "prompt.drift.yaml").exists()
    code, out, _ = drift([str(old), "--upstream", url, "--upstream-key-env", "DRIFT_KEY",
                          "--write", "--redact-path", "input"], capsys)
    assert code == 0
    new = tmp_path / "prompt.drift.yaml"
    assert f"  the new recording: {new}" in out.splitlines()
    assert secret not in new.read_text() and KEY not in new.read_text()
    assert load(new).interactions[0].request.body == {"model": "m", "input": "REDACTED",
                                                      "stream": True}


def test_no_key_is_sent_without_upstream_key_env(base: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The cassette's own (redacted) Authorization is never sent: without a key, none."""
    async def answer(reader: Any, writer: Any) -> None:
        # it closes each connection after one answer, and says so: the relay's pooled client
        # does not send the next request on a connection being closed
        writer.write(b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n"
                     b"connection: close\r\ncontent-length: 2\r\n\r\n{}")
        await writer.drain()

    with raw_upstream(answer) as (raw, heads):
        code, out, _ = drift([str(base), "--upstream", raw], capsys)
    assert code == 1 and "status: 200 -> 401" in out
    assert len(heads) == 2 and all(b"authorization" not in head.lower() for head in heads)
    assert all(b"content-type: application/json" in head for head in heads)


def test_a_query_key_recorded_redacted_gets_the_key_given_or_is_not_sent(
        base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A key the recorder took out of the query (Google's ``?key=``) is sent as the key of
    ``--upstream-key-env``; without one the request is not sent (``key=REDACTED`` would only
    earn a 400, reported as drift), its note saying what to give."""
    keyed = tmp_path / "keyed.yaml"
    text = base.read_text()
    assert text.count("path: /v1/responses\n") == 2
    keyed.write_text(text.replace("path: /v1/responses\n",
                                  "path: /v1/responses\n    query: alt=sse&key=REDACTED\n"))

    async def answer(reader: Any, writer: Any) -> None:
        writer.write(b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n"
                     b"connection: close\r\ncontent-length: 2\r\n\r\n{}")
        await writer.drain()

    with raw_upstream(answer) as (raw, heads):
        code, out, _ = drift([str(keyed), "--upstream", raw, "--json"], capsys)
        assert heads == []  # nothing sent with key=REDACTED
        assert code == 2
        notes = [i["note"] for i in json.loads(out)["cassettes"][0]["interactions"]]
        assert notes == ["not sent: its query's 'key' was recorded REDACTED (a key the "
                         "recorder took out); give --upstream-key-env NAME to send that key "
                         "in its place"] * 2
        code, out, _ = drift([str(keyed), "--upstream", raw, "--upstream-key-env", "DRIFT_KEY"],
                             capsys)
    assert len(heads) == 2
    for head in heads:
        assert head.startswith(f"POST /v1/responses?alt=sse&key={KEY} HTTP/1.1".encode())
    assert KEY not in out
