"""The ``ormock`` command, run in process: scenarios, show, check, and serve's scenario loading."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import jsonschema
import pytest

from ormock import OrmockServer, check_stream
from ormock.cli import main
from ormock.plugins import PluginError
from ormock.scenario import catalogue
from ormock.scenario.catalogue import load_file

ROOT = Path(__file__).resolve().parent.parent
SLOW = """\
name: slow-typist
description: Half a second to the first byte, then about 50 tokens per second.
steps:
  - times: forever
    reply:
      chunking: words
      pacing:
        first_event: 0.5
        per_event: 0.02
        tokens_per_second: 50
      items:
        - message: "Let me think about that for a moment. Here is my answer."
"""
GOOD = "name: good\nsteps:\n  - reply:\n      items:\n        - message: hi\n"
BAD = "name: bad\nsteps:\n  - reply:\n      itmes:\n        - message: hi\n"


def namespace_of(base_url: str) -> str:
    return base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _shown(out: str) -> tuple[list[float], str]:
    """The offsets (ms) and the bytes ``ormock show`` printed."""
    offsets = [float(m) for m in re.findall(r"^--- \+([0-9.]+) ms", out, re.M)]
    body = "".join(line for line in out.splitlines(keepends=True) if not line.startswith("--- "))
    return offsets, body


def _header(out: str) -> tuple[str, dict[str, object]]:
    """The scenario line and the request ``ormock show`` printed above the bytes."""
    scenario, request = out.splitlines()[:2]
    assert scenario.startswith("--- scenario ") and request.startswith("--- request {")
    return scenario.removeprefix("--- scenario "), json.loads(request.removeprefix("--- request "))


def _after_header(out: str) -> str:
    return out.split("\n", 2)[2]


# -- ormock scenarios ---------------------------------------------------------------------------


def test_scenarios_lists_every_entry_with_its_description(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = run(capsys, "scenarios")
    assert status == 0
    lines = out.splitlines()
    entries = catalogue()
    assert len(lines) == len(entries)
    width = max(len(name) for name in entries)
    for line, (name, path) in zip(lines, entries.items(), strict=True):
        assert line == f"{name.ljust(width)}  {load_file(path).description}"


def test_scenarios_says_which_entry_does_not_load(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    (tmp_path / "fine.yaml").write_text(GOOD.replace("name: good", "name: fine"))
    (tmp_path / "broken.yaml").write_text(BAD)
    entries = {p.stem: p for p in sorted(tmp_path.glob("*.yaml"))}
    monkeypatch.setattr("ormock.scenario.catalogue", lambda: entries)
    status, out, _ = run(capsys, "scenarios")
    assert status == 1
    assert out.splitlines() == [
        f"broken  DOES NOT LOAD: {tmp_path / 'broken.yaml'}:4: steps[0].reply.itmes: unknown key "
        f"'itmes' (did you mean 'items'?); known keys: {_reply_keys()}",
        "fine    ",
    ]


def _reply_keys() -> str:
    from ormock.scenario import scenario_schema

    reply = scenario_schema()["properties"]["steps"]["items"]["properties"]["reply"]
    return ", ".join(sorted(reply["properties"]))


def test_scenarios_schema_prints_the_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "scenarios", "--schema")
    assert status == 0
    schema = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["title"] == "ormock scenario"
    assert out == (ROOT / "ormock" / "scenario" / "scenario.schema.json").read_text()


# -- ormock show --------------------------------------------------------------------------------


def test_show_prints_the_exact_bytes_the_server_sends(
    capsys: pytest.CaptureFixture[str], server: OrmockServer, base_url: str,
    http: httpx.Client,
) -> None:
    status, out, _ = run(capsys, "show", "text")
    assert status == 0
    offsets, body = _shown(out)
    assert _header(out) == ("text, step 1 of 1, seed 0",
                            {"model": "ormock-1", "input": "Hello", "stream": True})
    served = http.post("/responses", headers={"X-Ormock-Scenario": "text"}, json=_header(out)[1])
    assert body.encode() == served.content
    assert set(offsets) == {0.0} and len(offsets) == body.count("\n\n")
    assert check_stream(body).ok


REQUEST_FILE = {"model": "gpt-5", "instructions": "Be brief.", "stream": True,
                "input": [{"role": "user", "content": "What is the weather in Paris?"}]}


@pytest.mark.parametrize(("argv", "request_sent"), [
    ([], {"model": "ormock-1", "input": "Hello", "stream": True}),
    (["--input", "Tell me a story about a lighthouse"],
     {"model": "ormock-1", "input": "Tell me a story about a lighthouse", "stream": True}),
    (["--request", '{"model": "gpt-4.1", "input": "Hi", "temperature": 0.2}', "--model", "m"],
     {"model": "m", "input": "Hi", "temperature": 0.2, "stream": True}),
    (["--request", "@FILE"], REQUEST_FILE),
    (["--request", '{"model": "ormock-1", "input": "Hi", "stream": false}'],
     {"model": "ormock-1", "input": "Hi", "stream": False}),
], ids=["default", "input", "request-and-model", "request-file", "not-streamed"])
def test_show_prints_what_a_fresh_server_sends_for_the_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str],
    request_sent: dict[str, object],
) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST_FILE))
    argv = [f"@{path}" if a == "@FILE" else a for a in argv]
    status, out, err = run(capsys, "show", "text", *argv)
    assert (status, err) == (0, "")
    assert _header(out) == ("text, step 1 of 1, seed 0", request_sent)
    with OrmockServer(seed=0, speed=0) as fresh:  # its first request, as show's engine is fresh
        served = httpx.post(fresh.base_url + "/responses", json=request_sent,
                            headers={"X-Ormock-Scenario": "text"})
    assert served.status_code == 200
    shown = _shown(out)[1]
    if request_sent["stream"]:
        assert shown.encode() == served.content  # ids included
        assert check_stream(shown).ok
    else:
        assert shown.encode() == served.content + b"\n"
        assert json.loads(shown)["output"][0]["content"][0]["text"]


def test_show_depends_on_the_request(capsys: pytest.CaptureFixture[str]) -> None:
    """The text scenario's words come from the request: another input, other deltas."""
    bodies = set()
    for text in ("Hello", "What is the capital of France?", "Write me a long poem please"):
        status, out, _ = run(capsys, "show", "text", "--input", text)
        assert status == 0
        bodies.add(_shown(out)[1])
    assert len(bodies) == 3


def test_show_lists_each_events_planned_offset(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    path = tmp_path / "slow-typist.yaml"
    path.write_text(SLOW)
    status, out, _ = run(capsys, "show", str(path))
    assert status == 0
    offsets, body = _shown(out)
    assert offsets[:2] == [500.0, 520.0]
    assert offsets == sorted(offsets) and len(offsets) == body.count("\n\n")
    assert _after_header(out).startswith("--- +500.0 ms\nevent: response.created\ndata: {")
    assert out.endswith("data: [DONE]\n\n")
    docs = (ROOT / "docs" / "scenarios.md").read_text()
    assert "--- +500.0 ms\nevent: response.created\n" in docs
    assert "--- +520.0 ms\nevent: response.in_progress\n" in docs
    delta = out.index('"delta":"Let"')
    header = out.rindex("--- +", 0, delta)
    assert out[header:].startswith("--- +600.0 ms\nevent: response.output_text.delta\n")
    assert "--- +600.0 ms\nevent: response.output_text.delta\n" in docs
    coalesced_status, coalesced, _ = run(capsys, "show", str(path), "--coalesce")
    assert coalesced_status == 0
    assert _shown(coalesced)[1] == body  # the same bytes, in fewer writes
    assert len(_shown(coalesced)[0]) <= len(offsets)


def test_show_long_text_has_its_pacing(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "show", "long-text")
    assert status == 0
    offsets, _ = _shown(out)
    assert 240.0 <= offsets[0] <= 360.0  # first_event 0.3 s, jitter 0.2
    assert offsets[-1] > 5000.0


def test_show_step_input_model_and_seed(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "show", "tool-roundtrip", "--step", "2", "--input", "Hi",
                         "--model", "gpt-5", "--seed", "3")
    assert status == 0
    report = check_stream(_shown(out)[1])
    assert report.ok and report.response is not None
    assert report.response["model"] == "gpt-5"
    assert report.response["output"][0]["type"] == "message"
    _, again, _ = run(capsys, "show", "tool-roundtrip", "--step", "2", "--input", "Hi",
                      "--model", "gpt-5", "--seed", "4")
    assert again != out  # another seed, other ids


def test_show_a_literal_sse_body(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    sse = "event: response.created\\ndata: {not json\\n\\ndata: [DONE]\\n\\n"
    path = tmp_path / "garbled.yaml"
    path.write_text("name: garbled\nsteps:\n  - reply:\n"
                    "      breaks: [sse-invalid-json, terminal-count]\n"
                    f'      sse: "{sse}"\n')
    status, out, _ = run(capsys, "show", str(path))
    assert status == 0
    assert _after_header(out) == (
        "--- +0.0 ms\nevent: response.created\ndata: {not json\n\ndata: [DONE]\n\n")


@pytest.mark.parametrize(("argv", "message"), [
    (["show", "txet"], "ormock: no scenario named 'txet' (did you mean 'text'?)"),
    (["show", "text", "--step", "2"], "ormock: text has 1 steps"),
    (["show", "/nowhere/x.yaml"], "ormock: /nowhere/x.yaml: scenario file not found"),
    (["show", "text", "--request", "{model: m}"],
     "ormock: --request: not JSON (Expecting property name enclosed in double quotes: line 1 "
     "column 2 (char 1)); give a JSON object such as '{\"model\": \"ormock-1\", \"input\": "
     "\"Hello\"}', or @FILE to read it from a file"),
    (["show", "text", "--request", "@/nowhere/request.json"],
     "ormock: --request: cannot read /nowhere/request.json (No such file or directory); after @ "
     "give the path of a file that holds the request body"),
    (["show", "text", "--request", "[]"],
     "ormock: --request: a request body is a JSON object such as '{\"model\": \"ormock-1\", "
     "\"input\": \"Hello\"}', not an array"),
    (["show", "text", "--request", '{"input": "x"}'],
     "ormock: --request: 'model' is required"),
    (["show", "text", "--request", '{"model": "m", "input": "x", "previous_response_id": "r"}'],
     "ormock: --request: Previous response with id 'r' not found"),
])
def test_show_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.startswith(message)


# -- ormock check -------------------------------------------------------------------------------


def test_check_good_and_bad_scenarios(capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(GOOD)
    bad.write_text(BAD)
    assert run(capsys, "check", str(good)) == (
        0, f"{good}: ok (scenario 'good', 1 step)\n", "")
    status, out, _ = run(capsys, "check", str(good), str(bad))
    assert status == 1
    assert out.splitlines() == [
        f"{good}: ok (scenario 'good', 1 step)",
        f"{bad}:4: steps[0].reply.itmes: unknown key 'itmes' (did you mean 'items'?); known "
        f"keys: {_reply_keys()}",
    ]


def test_finding7_check_goes_on_after_bad_files(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    latin, deep, nested, good = (tmp_path / n for n in ("latin.yaml", "deep.yaml",
                                                         "nested.yaml", "good.yaml"))
    latin.write_bytes(b"name: caf\xe9\n")
    deep.write_text("[" * 5000)
    nested.write_text("".join(f"{' ' * i}k{i}:\n" for i in range(5000)))
    good.write_text(GOOD)
    status, out, err = run(capsys, "check", str(latin), str(deep), str(nested), str(good))
    assert (status, err) == (1, "")
    assert out.splitlines() == [
        f"{latin}:1: not UTF-8 text: byte 0xe9 at offset 9; save the file as UTF-8",
        f"{deep}:1: nested deeper than 64 levels; flatten this part of the document",
        f"{nested}:64: nested deeper than 64 levels; flatten this part of the document",
        f"{good}: ok (scenario 'good', 1 step)",
    ]


def test_check_every_catalogue_file(capsys: pytest.CaptureFixture[str]) -> None:
    paths = [str(p) for p in catalogue().values()]
    status, out, _ = run(capsys, "check", *paths)
    assert status == 0
    assert [line.split(": ok ")[0] for line in out.splitlines()] == paths


def _capture(http: httpx.Client) -> str:
    response = http.post("/responses", json={"model": "m", "input": "One two three",
                                             "stream": True})
    return response.text


def test_check_sse_captures(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                           http: httpx.Client) -> None:
    body = _capture(http)
    events = body.count("\nevent: ") + 1
    good = tmp_path / "good.sse"
    good.write_text(body)
    assert run(capsys, "check", str(good)) == (0, f"{good}: ok ({events} events)\n", "")

    gap = tmp_path / "gap.sse"
    gap.write_text(body.replace('"sequence_number":5,', '"sequence_number":7,', 1))
    crlf = tmp_path / "crlf.sse"
    crlf.write_bytes(body.replace("\n", "\r\n").encode())
    truncated = tmp_path / "truncated.sse"
    truncated.write_text(body[: body.index("event: response.completed")])
    status, out, _ = run(capsys, "check", str(good), str(gap), str(crlf), str(truncated))
    assert status == 1
    lines = out.splitlines()
    assert lines[0] == f"{good}: ok ({events} events)"
    assert lines[1].startswith(f"{gap}:16: sequence-number: ") and lines[1].endswith("(event 5)")
    assert lines[2].startswith(f"{crlf}:1: sse-crlf: ") and lines[2].endswith("(event 0)")
    rules = {line.split(": ")[1] for line in lines[3:]}
    assert all(line.startswith(f"{truncated}") for line in lines[3:])
    assert "terminal-count" in rules or "no-done" in rules
    for line in lines[1:]:  # one line per broken rule: file, line, rule, message
        assert re.match(r"^\S+?(:\d+)?: [a-z-]+: .+ \(event \d+\)$", line), line


def test_check_an_unreadable_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.sse"
    assert run(capsys, "check", str(missing)) == (
        1, f"{missing}: cannot read (No such file or directory)\n", "")


# -- ormock serve -------------------------------------------------------------------------------


def test_serve_refuses_to_start_with_a_bad_scenario(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD)
    status, out, err = run(capsys, "serve", "--port", "0", "--scenario", str(bad))
    assert status == 2 and out == ""
    assert err.startswith(f"ormock: {bad}:4: steps[0].reply.itmes: unknown key 'itmes'")
    status, _, err = run(capsys, "serve", "--port", "0", "--scenario", "no-such-thing")
    assert status == 2 and "no scenario named 'no-such-thing'" in err


def test_finding7_serve_names_a_non_utf8_scenario(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: x\nsteps: []\n# caf\xe9\n")
    status, out, err = run(capsys, "serve", "--port", "0", "--scenario", str(latin))
    assert (status, out) == (2, "")
    assert err == (f"ormock: {latin}:3: not UTF-8 text: byte 0xe9 at offset 23; save the file "
                   "as UTF-8\n")


def test_a_server_started_with_scenarios_serves_them(tmp_path: Path) -> None:
    path = tmp_path / "good.yaml"
    path.write_text(GOOD)
    with OrmockServer(scenarios=[str(path), "json-output"], speed=0) as fake, httpx.Client(
        base_url=fake.base_url
    ) as raw:
        first = raw.post("/responses", json={"model": "m", "input": "x"}).json()
        assert first["output"][0]["content"][0]["text"] == "hi"
        second = raw.post("/responses", json={"model": "m", "input": "x"}).json()
        assert json.loads(second["output"][0]["content"][0]["text"])["city"] == "Paris"
        # every namespace starts with them loaded
        fake.namespaces.open("ns")
        other = raw.post(fake.url + "/ns/v1/responses", json={"model": "m", "input": "x"})
        assert other.json()["output"][0]["content"][0]["text"] == "hi"


def test_finding8_proxy_headers_ignored_by_serve(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import uvicorn

    seen: list[uvicorn.Config] = []

    class Server:
        started = True

        def __init__(self, config: uvicorn.Config, **options: object) -> None:
            seen.append(config)

        def run(self, sockets: list[object] | None = None) -> None:
            assert sockets is not None  # the socket OrmockServer bound

    def run_with_defaults(*args: object, **kwargs: object) -> None:
        raise AssertionError("uvicorn.run reads proxy headers unless told not to")

    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "*")
    # the uvicorn server ormock makes (``ormock.server.shutdown.Server``, a subclass)
    monkeypatch.setattr("ormock.server.runner.Server", Server)
    monkeypatch.setattr(uvicorn, "run", run_with_defaults)
    status, _, _ = run(capsys, "serve", "--port", "0")
    (config,) = seen
    assert status == 0 and config.proxy_headers is False
    assert config.host == "127.0.0.1" and config.port > 0  # --port 0: a free port, bound


@pytest.mark.parametrize(("where", "raised", "said"), [
    ("register", "SystemExit()", "failed to register: it raised SystemExit()"),
    ("register", "SystemExit(0)", "failed to register: it raised SystemExit(0)"),
    ("register", "GeneratorExit()", "failed to register: it raised GeneratorExit()"),
    ("import", "SystemExit(0)", "failed to import: it raised SystemExit(0)"),
])
def test_finding8_plugin_system_exit_fails_loudly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, where: str, raised: str, said: str
) -> None:
    plugin = tmp_path / "exits.py"  # a fresh path each time: never registered before
    plugin.write_text(f"raise {raised}\n" if where == "import"
                      else f"def register(registry):\n    raise {raised}\n")
    status, out, err = run(capsys, "serve", "--port", "0", "--plugin", str(plugin))
    assert status == 2 and out == ""
    assert err == f"ormock: --plugin: plugin {str(plugin)!r} {said}\n"
    with pytest.raises(PluginError, match=re.escape(f"plugin {str(plugin)!r} {said}")):
        OrmockServer(plugins=[str(plugin)])


def test_a_plugin_interrupted_by_ctrl_c_is_interrupted(tmp_path: Path) -> None:
    plugin = tmp_path / "interrupted.py"
    plugin.write_text("def register(registry):\n    raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        OrmockServer(plugins=[str(plugin)])


def test_serve_exits_3_when_the_port_is_taken(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, out, err = run(capsys, "serve", "--port", str(port))
    assert (status, out) == (3, "")
    assert err.startswith(f"ormock: cannot listen on 127.0.0.1:{port} (")


def test_serve_refuses_an_unknown_profile_naming_the_profiles(
        capsys: pytest.CaptureFixture[str]) -> None:
    # not argparse choices: a --plugin may register a profile, known once it is loaded
    from ormock.protocol.profile import profile_names

    assert main(["serve", "--profile", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ormock: --profile: unknown profile 'nope'")
    assert f"use one of {', '.join(profile_names())}" in err



@pytest.mark.parametrize(("store", "says"), [
    ("redis", "ormock: --store: unknown store 'redis': write 'memory'"),
    ("sqlite:", "ormock: --store: store 'sqlite:' names no file: write 'sqlite:PATH'"),
    ("redis://:6379/0", "ormock: --store: store 'redis://:6379/0' names no host"),
])
def test_serve_refuses_a_store_it_does_not_know(capsys: pytest.CaptureFixture[str],
                                                store: str, says: str) -> None:
    status, out, err = run(capsys, "serve", "--store", store)
    assert (status, out) == (2, "") and err.startswith(says)


def test_serve_refuses_a_store_file_it_cannot_open(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    status, out, err = run(capsys, "serve", "--port", "0",
                           "--store", f"sqlite:{tmp_path / 'no' / 'such' / 'dir.db'}")
    assert (status, out) == (2, "") and err.startswith("ormock: --store sqlite:")
