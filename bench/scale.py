"""Scaling out (issue 13): ``ormock serve --workers 1, 2, 4`` on SQLite and on Redis against the
memory store's single process and the bare Starlette app, in one run, under ``wrk``.

For each server in turn (started, measured, stopped: one at a time, so idle workers of another
take nothing), streamed and JSON replies: requests per second, p50 and p99 latency, the ratio to
one worker on the same store and to the memory store; then one connection at a time (the
latency a request sees without queueing), where the difference to the memory store is what the
store adds to a request. For Redis, the round trips per request: ``INFO commandstats`` before
and after a fixed number of sequential requests on a warm server (every command counted but
``INFO`` itself). The servers, wrk's scripts and the parsing of its output are those of
``run.py``; the Redis server is the tests' own (``tests/stores.py``), unless ``--redis`` names
one (a database of it is flushed: give it one nobody uses).

    python bench/scale.py                       # about 3 minutes
    python bench/scale.py --duration 10 --rounds 2
    python bench/scale.py --only redis          # the Redis servers and the references

Needs ``wrk`` and ``redis-server`` (Debian: ``apt-get install -y wrk redis-server``).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import cases
import redis
import run

sys.path.insert(0, str(run.BENCH.parent / "tests"))
from stores import RedisServer, start_redis

RESULTS = run.BENCH / "results" / "scale.md"
WORKERS = (1, 2, 4)
ROUND_TRIPS = 200  # sequential requests per count of Redis calls
# issue 13's goals
STREAM_SPEEDUP = 1.6  # 2 workers, streamed: at least this times one worker
REDIS_MS = 0.3  # Redis adds less than this to a request (sequential p50, against memory)


@dataclass(frozen=True)
class Config:
    """One server: what it runs on (``bare``, ``memory``, ``sqlite``, ``redis``) and how many
    workers."""

    store: str
    workers: int = 1

    @property
    def name(self) -> str:
        if self.store == "bare":
            return "bare Starlette (1 write/event)"
        return f"{self.store}, {self.workers} worker{'s' if self.workers > 1 else ''}"

    def server(self, spec: str) -> run.Server:
        if self.store == "bare":
            return run.SERVERS["bare"]
        return run.Server(
            f"{self.store}-{self.workers}", self.name,
            (run.PY, "-m", "ormock", "serve", "--host", run.HOST, "--port", "{port}",
             "--seed", "0", "--workers", str(self.workers), "--store", spec))


CONFIGS = [Config("bare"), Config("memory"),
           *(Config(store, n) for store in ("sqlite", "redis") for n in WORKERS)]
SEQUENTIAL = {"bare", "memory-1", "sqlite-1", "redis-1"}  # also measured one request at a time


@dataclass
class Measured:
    config: Config
    results: dict[str, list[run.Result]] = field(default_factory=dict)  # by case: every round
    calls: dict[str, Calls] = field(default_factory=dict)  # by kind (stream, json): Redis only


def cases_of(config: Config) -> list[run.Case]:
    out = [run.Case(kind, config.store, "short", kind == "stream", None, kind)
           for kind in ("stream", "json")]
    if config.server("").key in SEQUENTIAL:
        out += [run.Case(f"{kind}, sequential", config.store, "short", kind == "stream", None,
                         "latency", connections=1) for kind in ("stream", "json")]
    return out


def commandstats(client: redis.Redis) -> dict[str, tuple[int, int]]:
    """Calls and microseconds so far of every command but INFO (``INFO commandstats``; the
    commands a script runs are counted too)."""
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): (int(value["calls"]), int(value["usec"]))
            for name, value in stats.items() if name != "cmdstat_info"}


@dataclass
class Calls:
    """Redis per request, on a warm server: the round trips (commands a client sent, by
    command: MONITOR's lines not from a script) and every command run (``INFO commandstats``,
    the scripts' own included)."""

    round_trips: dict[str, float]
    executed: dict[str, float]
    script_us: float  # Redis's time running the scripts (EVALSHA), per request


_END = "ormock-bench-end"


def calls_per_request(port: int, url: str, stream: bool) -> Calls:
    """Redis's work for ``ROUND_TRIPS`` sequential requests, per request, in two passes: the
    commands run and Redis's time in the scripts with nothing else watching (``INFO
    commandstats``), then the commands the server sent under ``MONITOR``. (``MONITOR`` makes
    Redis write out every command it runs, the scripts' own and their values included: under
    it the scripts took 760 to 1,100 µs a request where they take under 100.)"""
    body = cases.request_body("short", stream)
    client = redis.Redis.from_url(url)
    sent: dict[str, int] = {}
    ready = threading.Event()

    def requests() -> None:
        for _ in range(ROUND_TRIPS):
            status, _ = run.post(port, body)
            if status != 200:
                raise SystemExit(f"bench: HTTP {status} while counting Redis's commands")

    def watch() -> None:
        with client.monitor() as monitor:  # MONITOR answered: watching from here
            ready.set()
            for line in monitor.listen():
                command = str(line.get("command", ""))
                if command.endswith(_END):
                    return
                if line.get("client_type") != "lua":
                    name = command.split(" ", 1)[0].lower()
                    sent[name] = sent.get(name, 0) + 1

    try:
        before = commandstats(client)
        requests()
        time.sleep(0.2)  # the last request's journal write, made after its reply went out
        after = commandstats(client)
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        ready.wait(10)
        requests()
        client.echo(_END)
        watcher.join(30)
    finally:
        client.close()
    executed = {name: (calls - before.get(name, (0, 0))[0]) / ROUND_TRIPS
                for name, (calls, _) in sorted(after.items())
                if calls != before.get(name, (0, 0))[0]
                and name not in ("monitor", "echo", "hello", "select")}
    script_us = (after.get("evalsha", (0, 0))[1] - before.get("evalsha", (0, 0))[1]) / ROUND_TRIPS
    # (HELLO and SELECT: this function's own clients connecting; INFO, ECHO: its own commands)
    return Calls({name: n / ROUND_TRIPS for name, n in sorted(sent.items())
                  if name not in ("info", "monitor", "echo", "hello", "select")},
                 executed, script_us)


@contextmanager
def redis_for(url: str | None) -> Iterator[tuple[RedisServer | None, str]]:
    """A Redis URL of the benchmark's (a server of its own unless ``url``)."""
    if url is not None:
        yield None, url
        return
    server = start_redis()
    if server is None:
        raise SystemExit("bench: redis-server not found: apt-get install -y redis-server "
                         "(or give --redis URL)")
    try:
        yield server, server.url(0)
    finally:
        server.stop()


def spec_of(config: Config, folder: Path, redis_server: RedisServer | None, url: str) -> str:
    """The ``--store`` of a config: a fresh SQLite file, or a fresh Redis database."""
    if config.store == "sqlite":
        return f"sqlite:{folder / f'{config.workers}.db'}"
    if config.store == "redis":
        if redis_server is not None:
            return redis_server.url(redis_server.fresh_db())
        redis.Redis.from_url(url).flushdb()
        return url
    return "memory"


def measure_config(wrk: str, args: argparse.Namespace, config: Config, spec: str,
                   folder: Path, measured: Measured) -> None:
    running = run.start(config.server(spec), folder)
    try:
        run.wait_ready(running)
        for case in cases_of(config):
            result = run.measure(wrk, args, running, case, folder)
            measured.results.setdefault(case.name, []).append(result)
            print(f"bench: {config.name}: {case.name}: {result.rps:,.0f} req/s, p50 "
                  f"{result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms, other load "
                  f"{result.other_load:.0f}%{' ⚠ ' + result.errors if result.errors else ''}",
                  file=sys.stderr, flush=True)
        if config.store == "redis":
            for kind in ("stream", "json"):
                measured.calls[kind] = calls_per_request(running.port, spec, kind == "stream")
    finally:
        run.stop(running)


# --- report --------------------------------------------------------------------------------


def rps_cell(results: list[run.Result]) -> str:
    values = [r.rps for r in results]
    if len(values) == 1:
        return run.fmt(values[0])
    return f"{run.fmt(statistics.median(values))} ({run.fmt(min(values))}-{run.fmt(max(values))})"


def ms_cell(results: list[run.Result], attribute: str) -> str:
    values = [getattr(r, attribute) for r in results]
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def p50(results: list[run.Result]) -> float:
    return statistics.median(r.p50_ms for r in results)


def cpu_us(results: list[run.Result]) -> float:
    """The server's CPU time per request (one process: what the one worker spent)."""
    return statistics.median(r.cpu_us for r in results)


def median_rps(measured: dict[str, Measured], key: str, case: str) -> float | None:
    found = measured.get(key)
    results = found.results.get(case) if found else None
    return statistics.median(r.rps for r in results) if results else None


def throughput_table(measured: dict[str, Measured], case: str) -> list[str]:
    lines = [f"| {case}: server | req/s, median (min-max) | vs 1 worker, same store "
             "| vs memory | vs bare | p50 ms | p99 ms | other load |",
             "|---|--:|--:|--:|--:|--:|--:|--:|"]
    memory, bare = median_rps(measured, "memory-1", case), median_rps(measured, "bare", case)
    for key, m in measured.items():
        results = m.results.get(case)
        if not results:
            continue
        rps = statistics.median(r.rps for r in results)
        one = median_rps(measured, f"{m.config.store}-1", case)
        ratios = [f"{rps / ref:.2f}x" if ref and key not in ("bare",) else "-"
                  for ref in (one, memory, bare)]
        loads = [r.other_load for r in results]
        errors = "; ".join(r.errors for r in results if r.errors)
        lines.append(f"| {m.config.name}{' ⚠ ' + errors if errors else ''} | {rps_cell(results)} "
                     f"| {ratios[0]} | {ratios[1]} | {ratios[2]} | {ms_cell(results, 'p50_ms')} "
                     f"| {ms_cell(results, 'p99_ms')} | {min(loads):.0f}-{max(loads):.0f}% |")
    return lines


def latency_table(measured: dict[str, Measured]) -> list[str]:
    lines = ["| one connection: server | streamed p50 ms | streamed p99 ms | added to memory's p50 "
             "| server CPU µs/req (added) | JSON p50 ms | JSON p99 ms | added to memory's p50 "
             "| server CPU µs/req (added) |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for m in measured.values():
        cells = []
        for kind in ("stream", "json"):
            results = m.results.get(f"{kind}, sequential")
            base = measured.get("memory-1")
            memory = base.results.get(f"{kind}, sequential") if base else None
            if not results:
                cells += ["-", "-", "-", "-"]
                continue
            added, cpu = "-", f"{statistics.median(r.cpu_us for r in results):,.0f}"
            if memory and m.config.store not in ("memory", "bare"):
                added = f"{p50(results) - p50(memory):+.2f} ms"
                cpu += f" ({cpu_us(results) - cpu_us(memory):+,.0f})"
            cells += [ms_cell(results, "p50_ms"), ms_cell(results, "p99_ms"), added, cpu]
        if any(c != "-" for c in cells):
            lines.append(f"| {m.config.name} | " + " | ".join(cells) + " |")
    return lines


def calls_table(measured: dict[str, Measured]) -> list[str]:
    lines = ["| Redis, warm server, per request | streamed: round trips | commands run "
             "| scripts µs | JSON: round trips | commands run | scripts µs |",
             "|---|--:|--:|--:|--:|--:|--:|"]

    def total(by: dict[str, float]) -> str:
        detail = ", ".join(f"{name} {n:g}" for name, n in by.items())
        return f"{sum(by.values()):.2f} ({detail})" if by else "0"

    for m in measured.values():
        if m.calls:
            cells = [cell for kind in ("stream", "json") for cell in (
                total(m.calls[kind].round_trips), f"{sum(m.calls[kind].executed.values()):.1f}",
                f"{m.calls[kind].script_us:.0f}")]
            lines.append(f"| {m.config.name} | " + " | ".join(cells) + " |")
    return lines


def verdicts(measured: dict[str, Measured]) -> list[str]:
    out = []
    for store in ("sqlite", "redis"):
        one, two = (median_rps(measured, f"{store}-{n}", "stream") for n in (1, 2))
        if one and two:
            met = two / one >= STREAM_SPEEDUP
            out.append(f"- {store}: streamed replies with 2 workers {two / one:.2f}x one worker, "
                       f"goal >= {STREAM_SPEEDUP}x: **{'met' if met else 'MISSED'}**")
    redis_one, memory = measured.get("redis-1"), measured.get("memory-1")
    for kind in ("stream", "json"):
        case = f"{kind}, sequential"
        if redis_one and memory and redis_one.results.get(case) and memory.results.get(case):
            added = p50(redis_one.results[case]) - p50(memory.results[case])
            label = "streamed" if kind == "stream" else "JSON"
            out.append(f"- Redis adds {added:+.2f} ms to a {label} request (one connection, "
                       f"p50, 1 worker, against memory), goal < "
                       f"{REDIS_MS} ms: **{'met' if added < REDIS_MS else 'MISSED'}**")
    return out


def environment(args: argparse.Namespace, started_load: tuple[float, float, float]) -> str:
    return (f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
            f"{os.cpu_count()} CPUs; wrk -t{args.threads} -c{args.connections} "
            f"-d{args.duration}s after a {args.warmup}s warm-up (sequential cases: -c1), "
            f"{args.rounds} round(s), each server started fresh per round on a fresh store; "
            f"wrk, the servers and Redis share the CPUs (nothing pinned). Load average at start "
            f"{started_load[0]:.2f}, at the end {os.getloadavg()[0]:.2f}.")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ormock --workers 1, 2, 4 on SQLite and Redis, "
                                                 "against the memory store, under wrk.")
    parser.add_argument("--duration", type=int, default=5, help="seconds per case")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up seconds per case")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure every server this many times (the spread is reported)")
    parser.add_argument("--only", default="",
                        help="only the servers whose name contains this (and the references)")
    parser.add_argument("--redis", default=None,
                        help="a Redis URL to use (its database is flushed before each server) "
                             "instead of a redis-server of the benchmark's own")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    wrk = shutil.which("wrk")
    if wrk is None:
        print("bench: wrk is not installed or not on PATH (Debian/Ubuntu: apt-get install wrk)",
              file=sys.stderr)
        return 2
    configs = [c for c in CONFIGS
               if c.store in ("bare", "memory") or args.only in c.name]
    started_load = os.getloadavg()
    measured = {c.server("").key: Measured(c) for c in configs}
    with tempfile.TemporaryDirectory(prefix="ormock-scale-") as tmp, \
            redis_for(args.redis) as (redis_server, url):
        for round_ in range(1, args.rounds + 1):
            for config in configs:
                folder = Path(tmp) / f"{round_}-{config.server('').key}"
                folder.mkdir()
                spec = spec_of(config, folder, redis_server, url)
                measure_config(wrk, args, config, spec, folder, measured[config.server("").key])
    report = "\n".join([
        "# ormock scaling benchmark: latest run", "", environment(args, started_load), "",
        *throughput_table(measured, "stream"), "", *throughput_table(measured, "json"), "",
        *latency_table(measured), "", *calls_table(measured), "",
        "## Goals (issue 13)", "", *verdicts(measured), ""])
    run.write_report(report, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
