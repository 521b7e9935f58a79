"""Benchmark ``ormock serve`` against a bare Starlette app serving the same precomputed bytes.

Starts every server as its own process on 127.0.0.1 (a free port each), checks that each answers
the benchmark request with the expected stream, then loads each case with ``wrk`` (a separate
process: 16 connections, 2 threads, a POST script) after a warm-up, and reports requests per
second, latency p50/p99, events per second for 1,000-delta streams, server CPU per request and
server memory (RSS) before and after, with ratios to the bare app. Writes the markdown table to
stdout and to ``bench/results/latest.md``.

    make bench                      # or: python bench/run.py [--duration 10] [--only ormock]

Needs ``wrk`` on PATH (Debian/Ubuntu: ``apt-get install wrk``; macOS: ``brew install wrk``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import http.client
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cases

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results" / "latest.md"
HOST = "127.0.0.1"
CLK_TCK = os.sysconf("SC_CLK_TCK")
FLAT_MIB = 4.0  # "memory flat": the server's RSS grows by no more than this over a case

# Targets (issues 12 and 29), as ratios to the bare app (JSON: to the bare JSON reply);
# "latency": ormock's p50 over the bare app's, at most. By (kind, unique inputs, body case).
TARGETS: dict[tuple[str, bool, str], float] = {
    ("stream", False, "short"): 1.5, ("stream", True, "short"): 1.5,
    ("stream", True, "scenario"): 1.5, ("stream", True, "fixed"): 1.5,
    ("json", False, "short"): 0.8, ("json", True, "short"): 0.6,
    ("json", True, "scenario"): 0.8, ("json", True, "fixed"): 0.55,
    ("long-text", False, "long-text"): 5.0, ("latency", True, "scenario"): 1.0,
}
# how a report names where a case's reply comes from
SOURCES = {"scenario": ", from the text scenario", "fixed": ", from a fixed-text scenario"}


@dataclass(frozen=True)
class Server:
    """A server process: its key, what it runs and which answers it gives."""

    key: str
    label: str
    argv: tuple[str, ...]  # {port}: the port; {long-text}, {fixed}: those cases' scenario files

    def command(self, port: int, scenarios: dict[str, Path]) -> list[str]:
        out = []
        for arg in self.argv:
            arg = arg.replace("{port}", str(port))
            for case, path in scenarios.items():
                arg = arg.replace("{" + case + "}", str(path))
            out.append(arg)
        return out


@dataclass(frozen=True)
class Case:
    name: str
    server: str
    body_case: str  # short | scenario (model: ormock:text) | fixed | long-text
    stream: bool
    reference: str | None  # the case whose req/s the ratio divides by (None: the reference)
    kind: str  # ref | stream | json | long-text | latency: which target applies
    unique: bool = False  # every request has its own input (hi 1-1, hi 1-2, ...)
    connections: int | None = None  # wrk's, when not --connections (1: sequential requests)



PY = sys.executable
SERVERS = {
    s.key: s
    for s in [
        Server("ormock", "ormock serve",
               (PY, "-m", "ormock", "serve", "--host", HOST, "--port", "{port}", "--seed", "0")),
        Server("bare", "bare, one write per event",
               (PY, str(BENCH / "bare_app.py"), "--port", "{port}", "--writes", "event")),
        Server("bare-one", "bare, whole stream in one write",
               (PY, str(BENCH / "bare_app.py"), "--port", "{port}", "--writes", "one")),
        Server("ormock-long", "ormock serve --scenario (1,000-word message)",
               (PY, "-m", "ormock", "serve", "--host", HOST, "--port", "{port}", "--seed", "0",
                "--scenario", "{long-text}")),
        Server("bare-scenario", "bare, the text scenario's bytes, one write per event",
               (PY, str(BENCH / "bare_app.py"), "--port", "{port}", "--case", "scenario")),
        Server("ormock-fixed", "ormock serve --scenario (a fixed text)",
               (PY, "-m", "ormock", "serve", "--host", HOST, "--port", "{port}", "--seed", "0",
                "--scenario", "{fixed}")),
        Server("bare-fixed", "bare, the fixed-text scenario's bytes, one write per event",
               (PY, str(BENCH / "bare_app.py"), "--port", "{port}", "--case", "fixed")),
        Server("bare-long-text", "bare, 1,000-word stream, one write per event",
               (PY, str(BENCH / "bare_app.py"), "--port", "{port}", "--case", "long-text")),
        Server("bare-long-text-one", "bare, 1,000-word stream in one write",
               (PY, str(BENCH / "bare_app.py"), "--port", "{port}", "--case", "long-text",
                "--writes", "one")),
    ]
}

# Run order interleaves each reference with its ormock case, so drift hits both alike.
CASES = [
    Case("bare streamed (1 write/event)", "bare", "short", True, None, "ref"),
    Case("ormock streamed", "ormock", "short", True, "bare streamed (1 write/event)", "stream"),
    Case("bare streamed (1 write)", "bare-one", "short", True,
         "bare streamed (1 write/event)", "ref"),
    Case("bare JSON", "bare", "short", False, None, "ref"),
    Case("ormock JSON", "ormock", "short", False, "bare JSON", "json"),
    Case("ormock streamed, unique inputs", "ormock", "short", True,
         "bare streamed (1 write/event)", "stream", unique=True),
    Case("ormock JSON, unique inputs", "ormock", "short", False, "bare JSON", "json",
         unique=True),
    Case("bare scenario streamed (1 write/event)", "bare-scenario", "scenario", True, None,
         "ref"),
    Case("ormock scenario streamed, unique inputs", "ormock", "scenario", True,
         "bare scenario streamed (1 write/event)", "stream", unique=True),
    Case("bare scenario JSON", "bare-scenario", "scenario", False, None, "ref"),
    Case("ormock scenario JSON, unique inputs", "ormock", "scenario", False,
         "bare scenario JSON", "json", unique=True),
    Case("bare fixed streamed (1 write/event)", "bare-fixed", "fixed", True, None, "ref"),
    Case("ormock fixed streamed, unique inputs", "ormock-fixed", "fixed", True,
         "bare fixed streamed (1 write/event)", "stream", unique=True),
    Case("bare fixed JSON", "bare-fixed", "fixed", False, None, "ref"),
    Case("ormock fixed JSON, unique inputs", "ormock-fixed", "fixed", False,
         "bare fixed JSON", "json", unique=True),
    Case("bare scenario streamed, sequential", "bare-scenario", "scenario", True, None, "ref",
         connections=1),
    Case("ormock scenario streamed, sequential, unique inputs", "ormock", "scenario", True,
         "bare scenario streamed, sequential", "latency", unique=True, connections=1),
    Case("bare 1,000-delta (1 write/event)", "bare-long-text", "long-text", True, None,
         "ref"),
    Case("ormock 1,000-delta", "ormock-long", "long-text", True,
         "bare 1,000-delta (1 write/event)", "long-text"),
    Case("bare 1,000-delta (1 write)", "bare-long-text-one", "long-text", True,
         "bare 1,000-delta (1 write/event)", "ref"),
]


@dataclass
class Result:
    case: Case
    requests: int = 0
    seconds: float = 0.0
    rps: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    errors: str = ""
    events: int = 0  # per reply (streams)
    deltas: int = 0
    reply_bytes: int = 0
    cpu_us: float = 0.0  # server CPU time per request
    rss_before: float = 0.0  # MiB, after the warm-up
    rss_after: float = 0.0
    other_load: float = 0.0  # % of all CPUs busy with neither this server nor wrk


# --- processes ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Running:
    server: Server
    port: int
    proc: subprocess.Popen[bytes]
    log: Path


def start(server: Server, logdir: Path) -> Running:
    port = free_port()
    log = logdir / f"{server.key}.log"
    scenarios = {case: logdir / f"bench-{case}.yaml" for case in cases.SCENARIOS}
    for case, path in scenarios.items():
        if not path.exists():
            cases.write_scenario(case, path)
    with log.open("wb") as out:
        proc = subprocess.Popen(server.command(port, scenarios), stdout=out,
                                stderr=subprocess.STDOUT, cwd=BENCH.parent)
    return Running(server, port, proc, log)


def wait_ready(running: Running, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if running.proc.poll() is not None:
            break
        with contextlib.suppress(OSError), socket.create_connection((HOST, running.port), 0.2):
            return
        time.sleep(0.05)
    tail = running.log.read_text(errors="replace")[-2000:]
    raise SystemExit(f"bench: {running.server.label} did not start on port {running.port}:\n{tail}")


def stop(running: Running) -> None:
    if running.proc.poll() is None:
        running.proc.terminate()
        try:
            running.proc.wait(10)
        except subprocess.TimeoutExpired:
            running.proc.kill()
            running.proc.wait()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def foreign_cpu() -> float:
    """CPU seconds used so far by every process outside this benchmark (not this process, its
    servers or wrk), their reaped children included (/proc/PID/stat utime, stime, cutime,
    cstime). The difference over a case is the load other work put on the machine meanwhile:
    a process that ends moves its time into its parent's cutime, so nothing is lost."""
    table: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        table[int(entry)] = (int(fields[1]), sum(int(f) for f in fields[11:15]))
    me = os.getpid()

    def ours(pid: int) -> bool:
        seen = 0
        while pid > 1 and seen < 64:
            if pid == me:
                return True
            pid, seen = table.get(pid, (0, 0))[0], seen + 1
        return False

    return sum(total for pid, (_, total) in table.items() if not ours(pid)) / CLK_TCK


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


# --- one request, to check the answer -------------------------------------------------------


def post(port: int, body: dict[str, Any]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        conn.request("POST", "/v1/responses", json.dumps(body),
                     {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def check_answer(result: Result, port: int) -> None:
    case = result.case
    status, body = post(port, cases.request_body(case.body_case, case.stream))
    if status != 200:
        raise SystemExit(f"bench: {case.name}: HTTP {status}: {body[:300]!r}")
    result.reply_bytes = len(body)
    if case.stream:
        if not body.endswith(b"data: [DONE]\n\n"):
            raise SystemExit(f"bench: {case.name}: the stream does not end with data: [DONE]")
        result.events, result.deltas = cases.count_events(body)
        if case.body_case == "long-text" and result.deltas != cases.LONG_DELTAS:
            raise SystemExit(f"bench: {case.name}: {result.deltas} deltas, not "
                             f"{cases.LONG_DELTAS}")
    else:
        status_field = json.loads(body).get("status")
        if status_field != "completed":
            raise SystemExit(f"bench: {case.name}: JSON reply has status {status_field!r}")


# --- wrk -----------------------------------------------------------------------------------

_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def wrk_script(path: Path, body: dict[str, Any], unique: bool) -> Path:
    """wrk's Lua script: POST ``body``; ``unique``: with the input ``hi <thread>-<n>``, a
    different one for every request."""
    payload = json.dumps(body, separators=(",", ":"))
    script = ('wrk.method = "POST"\n'
              f"wrk.body = [==[{payload}]==]\n"
              'wrk.headers["Content-Type"] = "application/json"\n')
    if unique:
        head, tail = payload.split('"input":"hi"')
        script += (
            "local threads = 0\n"
            "function setup(thread)\n"
            "  threads = threads + 1\n"
            '  thread:set("tid", threads)\n'
            "end\n"
            "local n = 0\n"
            "function request()\n"
            "  n = n + 1\n"
            f"  local body = [==[{head}]==] .. '\"input\":\"hi ' .. tid .. '-' .. n "
            f"  .. '\"' .. [==[{tail}]==]\n"
            "  return wrk.format(nil, nil, nil, body)\n"
            "end\n"
        )
    path.write_text(script)
    return path


def run_wrk(wrk: str, args: argparse.Namespace, port: int, script: Path, seconds: int,
            connections: int | None = None) -> str:
    connections = connections or args.connections
    threads = min(args.threads, connections)
    command = [wrk, f"-t{threads}", f"-c{connections}", f"-d{seconds}s",
               "--timeout", "10s", "--latency", "-s", str(script),
               f"http://{HOST}:{port}/v1/responses"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench: wrk failed ({done.returncode}): {done.stderr or done.stdout}")
    return done.stdout


def parse_wrk(output: str, result: Result) -> None:
    def latency(percent: str) -> float:
        match = re.search(rf"^\s*{percent}%\s+([\d.]+)(us|ms|s|m)\s*$", output, re.MULTILINE)
        return float(match.group(1)) * _UNIT_MS[match.group(2)] if match else float("nan")

    total = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", output)
    if total is None:
        raise SystemExit(f"bench: cannot read wrk's output:\n{output}")
    result.requests = int(total.group(1))
    result.seconds = float(total.group(2)) * _UNIT_MS[total.group(3)] / 1000
    result.rps = result.requests / result.seconds
    result.p50_ms, result.p99_ms = latency("50"), latency("99")
    problems = [m.group(0).strip() for m in re.finditer(
        r"^\s*(Socket errors:.*|Non-2xx or 3xx responses:.*)$", output, re.MULTILINE)]
    if result.requests < 200:
        problems.append(f"only {result.requests} requests: run longer (--duration)")
    result.errors = "; ".join(problems)


def measure(wrk: str, args: argparse.Namespace, running: Running, case: Case,
            scripts: Path) -> Result:
    result = Result(case)
    check_answer(result, running.port)
    script = wrk_script(
        scripts / f"{running.server.key}-{case.body_case}-{case.stream}-{case.unique}.lua",
        cases.request_body(case.body_case, case.stream), case.unique)
    if args.warmup > 0:
        run_wrk(wrk, args, running.port, script, args.warmup, case.connections)
    pid = running.proc.pid
    result.rss_before = rss_mib(pid)
    cpu, other = cpu_seconds(pid), foreign_cpu()
    started = time.monotonic()
    parse_wrk(run_wrk(wrk, args, running.port, script, args.duration, case.connections),
              result)
    wall = time.monotonic() - started
    server = cpu_seconds(pid) - cpu
    other = foreign_cpu() - other
    result.other_load = max(other, 0.0) / (wall * (os.cpu_count() or 1)) * 100
    result.cpu_us = server / max(result.requests, 1) * 1e6
    result.rss_after = rss_mib(pid)
    return result


# --- report --------------------------------------------------------------------------------


def fmt(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


def ratio_of(result: Result, by_name: dict[str, Result], cpu: bool = False) -> float | None:
    """req/s over the reference's req/s; ``cpu``: the reference's CPU per request over ours."""
    if result.case.reference is None:
        return None
    reference = by_name.get(result.case.reference)
    if reference is None:
        return None
    if cpu:
        return reference.cpu_us / result.cpu_us if result.cpu_us else None
    if result.case.kind == "latency":  # p50 over the reference's: lower is better
        return result.p50_ms / reference.p50_ms if reference.p50_ms else None
    return result.rps / reference.rps if reference.rps else None


def table(results: list[Result]) -> str:
    by_name = {r.case.name: r for r in results}
    lines = [
        "| case | req/s | ratio | p50 ms | p99 ms | events/reply | events/s | bytes/reply "
        "| server CPU µs/req | CPU ratio | RSS MiB before → after | other load |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        ratio, cpu_ratio = ratio_of(r, by_name), ratio_of(r, by_name, cpu=True)
        events = r.events if r.case.stream else 0
        lines.append(
            f"| {r.case.name}{' ⚠ ' + r.errors if r.errors else ''} | {fmt(r.rps)} "
            f"| {'1.00x (ref)' if ratio is None else f'{ratio:.2f}x'} "
            f"| {r.p50_ms:.2f} | {r.p99_ms:.2f} | {events or '-'} "
            f"| {fmt(r.rps * events) if events else '-'} | {fmt(r.reply_bytes)} "
            f"| {fmt(r.cpu_us)} | {'-' if cpu_ratio is None else f'{cpu_ratio:.2f}x'} "
            f"| {r.rss_before:.1f} → {r.rss_after:.1f} | {r.other_load:.0f}% |"
        )
    return "\n".join(lines)


def verdicts(results: list[Result]) -> list[str]:
    by_name = {r.case.name: r for r in results}
    out = []
    labels = {"stream": "streamed replies", "json": "JSON replies",
              "long-text": "1,000-delta streams", "latency": "sequential streamed p50 latency"}
    for r in results:
        case = r.case
        target = TARGETS.get((case.kind, case.unique, case.body_case))
        ratio = ratio_of(r, by_name)
        if target is None or ratio is None:
            continue
        op = "≤" if case.kind == "latency" else "≥"
        met = ratio <= target if op == "≤" else ratio >= target
        cpu_ratio = ratio_of(r, by_name, cpu=True) or 0.0
        label = labels[case.kind] + SOURCES.get(case.body_case, "") \
            + (", unique inputs" if case.unique else "")
        out.append(f"- {label}: {ratio:.2f}x (CPU ratio {cpu_ratio:.2f}x), "
                   f"target {op} {target}x: **{'met' if met else 'MISSED'}**")
    for r in results:
        reference = by_name.get(r.case.reference or "")
        if reference is not None and r.case.server.startswith("ormock") \
                and reference.reply_bytes != r.reply_bytes:
            out.append(f"- note: {r.case.name} sent {r.reply_bytes:,} bytes per reply, the bare "
                       f"app {reference.reply_bytes:,}: they no longer serve the same bytes")
    growth = {r.case.name: r for r in results if r.case.server.startswith("ormock")}
    if growth:
        flat = all(r.rss_after - r.rss_before <= FLAT_MIB for r in growth.values())
        detail = "; ".join(
            f"{name} {r.rss_after - r.rss_before:+.1f} MiB over {r.requests:,} requests "
            f"({(r.rss_after - r.rss_before) * 1024 * 1024 / max(r.requests, 1):,.0f} B/req)"
            for name, r in growth.items())
        out.append(f"- memory flat (server RSS grows ≤ {FLAT_MIB:g} MiB over a case): "
                   f"**{'met' if flat else 'MISSED'}**: {detail}")
    return out


def environment(args: argparse.Namespace) -> str:
    def version(module: str) -> str:
        try:
            from importlib.metadata import version as v

            return v(module)
        except Exception:
            return "absent"

    try:
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=BENCH.parent,
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return (
        f"{datetime.date.today().isoformat()}, ormock at {commit}, {os.cpu_count()} CPUs "
        f"({platform.machine()}, {platform.system()} {platform.release()}), "
        f"Python {platform.python_version()}, uvicorn {version('uvicorn')}, "
        f"starlette {version('starlette')}, uvloop {version('uvloop')}, "
        f"httptools {version('httptools')}; wrk -t{args.threads} -c{args.connections} "
        f"-d{args.duration}s after a {args.warmup}s warm-up, best of {args.rounds} round(s) by "
        f"least other load; wrk and the server share the "
        f"CPUs (nothing pinned); load average at start {os.getloadavg()[0]:.2f}."
    )


# --- where the time goes --------------------------------------------------------------------

INPROCESS_CASE = {("stream", False, "short"): "short-stream",
                  ("json", False, "short"): "short-json",
                  ("stream", True, "short"): "short-stream-unique",
                  ("json", True, "short"): "short-json-unique",
                  ("stream", True, "scenario"): "scenario-stream-unique",
                  ("json", True, "scenario"): "scenario-json-unique",
                  ("stream", True, "fixed"): "fixed-stream-unique",
                  ("json", True, "fixed"): "fixed-json-unique",
                  ("long-text", False, "long-text"): "long-text"}


def inprocess(budget: float) -> dict[str, dict[str, float]]:
    """``bench/inprocess.py --json``: per-request costs of the ASGI apps without HTTP."""
    done = subprocess.run([PY, str(BENCH / "inprocess.py"), "--json", "--budget", str(budget)],
                          capture_output=True, text=True, check=False, cwd=BENCH.parent)
    if done.returncode != 0:
        print(f"bench: inprocess.py failed:\n{done.stderr}", file=sys.stderr)
        return {}
    data: dict[str, dict[str, float]] = json.loads(done.stdout)
    return data


def breakdown(results: list[Result], costs: dict[str, dict[str, float]]) -> str:
    by_name = {r.case.name: r for r in results}
    lines = [
        "| case | server CPU µs/req under wrk: ormock / bare | in-process app µs/req: "
        "ormock / bare | a full build, uncached: Engine.respond µs + body µs |",
        "|---|--:|--:|--:|",
    ]
    for r in results:
        cost = costs.get(INPROCESS_CASE.get((r.case.kind, r.case.unique, r.case.body_case), ""))
        reference = by_name.get(r.case.reference or "")
        if cost is None or reference is None:
            continue
        lines.append(
            f"| {r.case.name} | {fmt(r.cpu_us)} / {fmt(reference.cpu_us)} "
            f"| {fmt(cost['ormock_app_us'])} / {fmt(cost['bare_app_us'])} "
            f"| {fmt(cost['respond_us'])} + {fmt(cost['body_us'])} |"
        )
    return "\n".join(lines) if len(lines) > 2 else ""


# --- main ----------------------------------------------------------------------------------


@contextlib.contextmanager
def servers(keys: Sequence[str], logdir: Path) -> Iterator[dict[str, Running]]:
    started: dict[str, Running] = {}
    try:
        for key in keys:
            started[key] = start(SERVERS[key], logdir)
        for running in started.values():
            wait_ready(running)
        yield started
    finally:
        for running in started.values():
            stop(running)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ormock vs a bare Starlette app, under wrk.")
    parser.add_argument("--duration", type=int, default=10, help="seconds per case")
    parser.add_argument("--warmup", type=int, default=2,
                        help="warm-up seconds per case (wrk takes whole seconds)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every case this many times; keep the run with the least "
                             "other load on the machine")
    parser.add_argument("--only", default="",
                        help="run only the cases whose name contains this (and their references)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--no-inprocess", action="store_true",
                        help="skip the in-process breakdown of where ormock's time goes")
    args = parser.parse_args(argv)

    # SIGTERM (a CI timeout, kill) stops the run through the finally that stops the servers
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    wrk = shutil.which("wrk")
    if wrk is None:
        print("bench: wrk is not installed or not on PATH; the benchmark drives load with it.\n"
              "  Debian/Ubuntu: sudo apt-get install wrk    macOS: brew install wrk",
              file=sys.stderr)
        return 2

    chosen = [c for c in CASES if args.only in c.name]
    names = {c.name for c in chosen} | {c.reference for c in chosen if c.reference}
    chosen = [c for c in CASES if c.name in names]
    keys = list(dict.fromkeys(c.server for c in chosen))
    seconds = len(chosen) * (args.duration + args.warmup) * args.rounds
    print(f"bench: {len(chosen)} cases x {args.rounds} round(s), about {seconds}s of load",
          file=sys.stderr, flush=True)

    best: dict[str, Result] = {}
    with tempfile.TemporaryDirectory(prefix="ormock-bench-") as tmp, \
            servers(keys, Path(tmp)) as running:
        for round_ in range(1, args.rounds + 1):
            for case in chosen:
                result = measure(wrk, args, running[case.server], case, Path(tmp))
                kept = best.get(case.name)
                if kept is None or result.other_load < kept.other_load:
                    best[case.name] = result
                print(f"bench: round {round_}: {case.name}: {result.rps:,.0f} req/s, p50 "
                      f"{result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms, other load "
                      f"{result.other_load:.0f}%{' ⚠ ' + result.errors if result.errors else ''}",
                      file=sys.stderr, flush=True)
    results = [best[c.name] for c in chosen]

    costs = {} if args.no_inprocess else inprocess(budget=0.8)
    where = breakdown(results, costs)
    report = "\n".join([
        "# ormock benchmark: latest run", "", environment(args), "", table(results), "",
        "Ratio: req/s over the bare app writing one event per write (JSON: over bare JSON). "
        "CPU ratio: the reference's server CPU per request over this one's (what the ratio "
        "would be if each server were CPU-bound; it ignores load from elsewhere). events/s: "
        "req/s x events per reply (deltas and the other events, not [DONE]). Other load: CPU "
        "used by neither the server nor wrk during the case (other processes on the machine); "
        "above ~10% the req/s of that case are understated.", "",
        "## Targets", "", *verdicts(results), "",
        *(["## Where ormock's time goes", "", where, "",
           "In-process (bench/inprocess.py, CPU time): each app driven directly through ASGI "
           "with no HTTP server, fresh objects per measurement. A full build: "
           "Engine.respond (parse, plan, build every event, store, journal) and then "
           "Reply.sse_body() or json_body(), with no reuse of an earlier reply; the server's "
           "own path may instead reuse one (ormock's stream cache). The server CPU under wrk "
           "also pays for uvicorn, httptools and the sockets.",
           ""] if where else []),
    ])
    write_report(report, args.output)
    return 0


def write_report(report: str, output: Path) -> None:
    """Print a benchmark's report and write it to ``output`` (its folder made if need be)."""
    print(report)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report)
    print(f"bench: written to {output}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
