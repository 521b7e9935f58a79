"""The Codex CLI (npm ``@openai/codex``, pinned) against a real ormock server: the embedded
default's turn, a scripted shell loop, and each fault on a strict scenario (the loop completes),
over HTTP and WebSocket, with the verdict after each.

Codex is installed into the pytest cache once (``.pytest_cache/d/codex/VERSION``); the tests
skip, saying why, where node or npm is missing or the install fails (``.ci/run`` installs
nodejs). Each run is ``codex exec`` in an empty temporary folder with the read-only sandbox, its
own ``CODEX_HOME``, and nothing to reach but the fake: plugins and analytics off, the proxy
variables at a closed loopback port (``NO_PROXY`` for the fake itself). Whatever it left running
is ended by its process group (the session it was started in)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from ormock import OrmockServer

VERSION = "0.171.0"
MARKER = "ormock-was-here"
Json = dict[str, Any]
_names = itertools.count()
pytestmark = pytest.mark.codex

# the scripted loop: Codex's shell tool runs the echo, the answer is matched on its output
LOOP: Json = {"name": "codex-echo", "order": "sequence", "steps": [
    {"name": "call", "reply": {"items": [{"function_call": {
        "name": "exec_command", "arguments": {"cmd": f"echo {MARKER}"},
        "call_id": "call_echo"}}]}},
    {"name": "final", "match": {"function_call_output": "call_echo"},
     "reply": {"items": [{"message": "The command printed: {{ request.tool_outputs }}"}]}},
]}
# each fault on the first request that reaches it; "server": through POST /_ormock/faults
FAULTS: dict[str, tuple[str, Json]] = {
    "step-500": ("step", {"http_error": 500, "when": {"first": 1}}),
    "server-500": ("server", {"http_error": 500, "when": {"first": 1}}),
    "fail_midstream": ("step", {"fail_midstream": {"after_events": 3}, "when": {"first": 1}}),
    "disconnect": ("step", {"disconnect": {"mode": "reset", "after_events": 3},
                            "when": {"first": 1}}),
    "stall": ("step", {"stall": {"after_events": 3}, "when": {"first": 1}}),
}


@pytest.fixture(scope="session")
def codex(request: pytest.FixtureRequest) -> Path:
    """The ``codex`` launcher of ``@openai/codex@VERSION``, installed once into the cache."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("the Codex CLI tests need node and npm on PATH (.ci/run installs nodejs)")
    parent = request.config.cache.mkdir("codex")
    folder = parent / VERSION
    launcher = folder / "node_modules" / ".bin" / "codex"
    if not launcher.exists():
        staging = Path(tempfile.mkdtemp(prefix="install-", dir=parent))
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(staging),
             f"@openai/codex@{VERSION}"], capture_output=True, text=True, timeout=600,
            check=False)
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            pytest.skip(f"npm could not install @openai/codex@{VERSION}: "
                        f"{done.stderr.strip()[-300:]}")
        try:
            staging.rename(folder)  # whole or not at all (another worker may have won)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    if not launcher.exists():
        pytest.skip(f"no codex launcher at {launcher} after the install")
    return launcher


@pytest.fixture(scope="module")
def server() -> Iterator[OrmockServer]:
    """A server playing OpenAI, whose API Codex speaks, checking every answer it makes (the
    self-check sets aside the OpenAI tools Codex offers, which the official schema has no
    place for)."""
    with OrmockServer(seed=0, profile="openai", self_check=True) as running:
        yield running


@dataclass
class Run:
    exit_code: int
    events: list[Json]
    stderr: str

    def items(self, kind: str) -> list[Json]:
        return [e["item"] for e in self.events
                if e.get("type") == "item.completed" and e["item"].get("type") == kind]

    @property
    def answer(self) -> str:
        messages = self.items("agent_message")
        return str(messages[-1]["text"]) if messages else ""


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def run_codex(launcher: Path, base_url: str, prompt: str, tmp_path: Path, *,
              websocket: bool, model: str = "gpt-5") -> Run:
    work, home = tmp_path / "work", tmp_path / "codex-home"
    work.mkdir()
    home.mkdir()
    nowhere = f"http://127.0.0.1:{_closed_port()}"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "CODEX_HOME": str(home), "ORMOCK_KEY": "ormock-" + "test-key",
           "HTTP_PROXY": nowhere, "HTTPS_PROXY": nowhere, "ALL_PROXY": nowhere,
           "http_proxy": nowhere, "https_proxy": nowhere, "all_proxy": nowhere,
           "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    provider = (f'{{name="ormock", base_url="{base_url}", wire_api="responses", '
                f'env_key="ORMOCK_KEY", stream_idle_timeout_ms=1500, '
                f'supports_websockets={"true" if websocket else "false"}}}')
    # gpt-5: its tools in ``tools``; the newest family (gpt-6-luna, ...) sends them in an
    # additional_tools input item, grouped in namespace tools
    command = [str(launcher), "exec", "--skip-git-repo-check", "--ephemeral", "-s",
               "read-only", "--json", "-m", model, "-c", "model_provider=ormock",
               "-c", f"model_providers.ormock={provider}", "-c", "features.plugins=false",
               "-c", "analytics.enabled=false", prompt]
    process = subprocess.Popen(command, cwd=work, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=120)
    finally:  # whatever it started is in its session: ended by the group of its pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        if process.poll() is None:
            process.kill()
            process.communicate()
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert not any(work.iterdir()), "the read-only sandbox let Codex write"
    return Run(process.returncode, events, err)


def opened(server: OrmockServer) -> tuple[str, str]:
    name = f"codex{next(_names)}"
    server.namespaces.open(name)
    return name, f"{server.url}/{name}/v1"


def verdict(server: OrmockServer, name: str) -> Json:
    found: Json = httpx.get(f"{server.url}/{name}/_ormock/verdict", timeout=10).json()
    return found


def _transport(websocket: bool) -> str:
    return "websocket" if websocket else "http"


@pytest.mark.parametrize("websocket", [False, True], ids=_transport)
def test_a_scripted_shell_loop(codex: Path, server: OrmockServer, tmp_path: Path,
                               websocket: bool) -> None:
    name, base = opened(server)
    engine = server.engine(name)
    engine.use(LOOP)
    run = run_codex(codex, base, "Run the echo.", tmp_path, websocket=websocket)
    assert run.exit_code == 0, run.stderr[-2000:]
    (command,) = run.items("command_execution")
    assert MARKER in command["aggregated_output"] and command["exit_code"] == 0
    assert MARKER in run.answer.splitlines()
    assert [e.step for e in engine.journal if e.step is not None] == [1, 2]
    if websocket:  # the warm-up (generate: false) came first and used no step
        assert engine.journal[0].body.get("generate") is False
    assert engine.scenarios.unused() == []
    found = verdict(server, name)
    assert found["ok"], found["report"]


@pytest.mark.parametrize("websocket", [False, True], ids=_transport)
@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_on_a_strict_scenario(codex: Path, server: OrmockServer, tmp_path: Path,
                                         fault: str, websocket: bool) -> None:
    where, spec = FAULTS[fault]
    name, base = opened(server)
    engine = server.engine(name)
    first, final = LOOP["steps"]
    faulted = {**first, "reply": {**first["reply"], "faults": [spec]}} if where == "step" \
        else first
    engine.use({**LOOP, "steps": [faulted, final]})
    if where == "server":
        added = httpx.post(f"{server.url}/{name}/_ormock/faults", json=spec, timeout=10)
        assert added.status_code == 201, added.text
    run = run_codex(codex, base, "Run the echo.", tmp_path, websocket=websocket)
    assert run.exit_code == 0, run.stderr[-2000:]
    assert MARKER in run.answer.splitlines()
    # the faulted attempt used no step (a server-wide fault may strike the WebSocket warm-up,
    # which no step answers)
    (struck,) = [e for e in engine.journal if e.faults]
    assert struck.step_used is False or (struck.step is None and struck.body.get(
        "generate") is False)
    assert [e.step for e in engine.journal if e.step_used] == [1, 2]
    assert engine.scenarios.unused() == []
    found = verdict(server, name)
    assert found["ok"], found["report"]


def test_the_embedded_default_turn(codex: Path, server: OrmockServer, tmp_path: Path) -> None:
    # no scenario: the default calls Codex's shell tool with made-up (realistic) arguments,
    # which Codex accepts and runs in the empty read-only folder, then answers in prose
    name, base = opened(server)
    engine = server.engine(name)
    run = run_codex(codex, base, "What is in this folder?", tmp_path, websocket=False)
    assert run.exit_code == 0, run.stderr[-2000:]
    assert run.answer and run.events[-1]["type"] == "turn.completed"
    calls = [e for e in engine.journal if e.output_ids]
    assert calls, "the default answered nothing"
    sent_back = [item for e in engine.journal[1:] for item in e.body["input"]
                 if item.get("type") == "function_call_output"]
    assert sent_back and not any("failed to parse function arguments" in str(i["output"])
                                 for i in sent_back)
    found = verdict(server, name)
    assert found["ok"], found["report"]


def test_the_newest_models_tools_come_in_namespaces_and_the_loop_completes(
        codex: Path, server: OrmockServer, tmp_path: Path) -> None:
    # gpt-6-luna: Codex sends its tools as an additional_tools item of namespace tools (a 400
    # before issue 30); the default calls one of them, naming its namespace, Codex runs it and
    # sends its output back, and the default answers
    name, base = opened(server)
    engine = server.engine(name)
    run = run_codex(codex, base, "What is in this folder?", tmp_path, websocket=False,
                    model="gpt-6-luna")
    assert run.exit_code == 0, run.stderr[-2000:]
    assert run.answer and run.events[-1]["type"] == "turn.completed"
    first, *rest = [e for e in engine.journal if e.path.endswith("/responses")]
    assert first.status == 200 and first.body["input"][0]["type"] == "additional_tools"
    assert {t["type"] for t in first.body["input"][0]["tools"]} == {"namespace"}
    # under store: false Codex sends the call back with its output: as the default made it
    sent = [item for e in rest for item in e.body["input"]]
    (call,) = [i for i in sent if i.get("type") in ("function_call", "custom_tool_call")]
    assert call["namespace"] and call["id"] in first.output_ids
    outputs = [i for i in sent if i.get("type") in ("function_call_output",
                                                    "custom_tool_call_output")]
    assert [o["call_id"] for o in outputs] == [call["call_id"]]
    assert all(e.status == 200 for e in rest)
    found = verdict(server, name)
    assert found["ok"], found["report"]
