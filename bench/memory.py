"""Show that ``ormock serve`` keeps its memory flat under hostile request patterns.

Each case starts a fresh ``ormock serve`` (``bench/run.py``'s server, helpers and RSS reading),
sends its requests from this process over loopback (httpx keep-alive clients, or WebSocket
connections, a few threads), samples the server's RSS (``/proc/PID/status`` VmRSS) once the
first 10 % of the requests are answered, half-way (given below the table: growth that stops
before then is a cap filling up) and at the end, and counts every answer: an answer a case
does not expect (a 500 above all) fails the run, as does growth past 20 MiB.

    python bench/memory.py                  # every case, full counts (a few minutes)
    python bench/memory.py --scale 0.1      # a tenth of the requests, quickly
    python bench/memory.py --only chain     # the cases whose name contains this

Cases: requests to 20,000 namespaces nobody opened (404 ``unknown_namespace``); 20,000 scenario
names that are unknown, paths or very long (400 ``unknown_scenario``); 2,000 WebSocket turns,
``store: false``, some continued on their connection; 2,000 requests with 400 KB inputs; a
3,000-turn ``previous_response_id`` chain, with the time per request at turn 100 and at the end.
Loopback only; bounded in count and in time (``--max-seconds`` per case). Linux (reads /proc).
"""

from __future__ import annotations

import argparse
import collections
import json
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx
import run
from websockets.sync.client import ClientConnection, connect

GOAL_MIB = 20.0  # a case is flat when the server's RSS grows by no more than this
WARMUP = 0.10  # the share of a case's requests sent before the first RSS sample
BIG_BODY = 400_000  # bytes of each request of the large-bodies case
TIMEOUT = 30.0  # seconds per request


class Session(Protocol):
    """One worker's connection: it sends request ``index`` and names the answer."""

    def send(self, index: int) -> str: ...

    def close(self) -> None: ...


@dataclass
class Context:
    """What a session may need of its case: the server, and somewhere to put its findings."""

    running: run.Running
    total: int
    notes: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        return self.running.port

    @property
    def pid(self) -> int:
        return self.running.proc.pid


@dataclass(frozen=True)
class Case:
    name: str
    count: int  # at --scale 1
    workers: int
    expected: frozenset[str]  # the answers this case may get
    session: Callable[[Context, int], Session]  # (context, worker number) -> a session
    what: str
    # the share of requests before the first sample: past the caps' filling where a case fills
    # them (the journal and the store hold their newest entries up to their limits, by design)
    warmup: float = WARMUP


@dataclass
class Outcome:
    case: Case
    requests: int = 0
    sent: int = 0
    rss_warm: float = 0.0
    rss_half: float = 0.0  # half-way through: growth that stops early is a cap filling up
    rss_end: float = 0.0
    seconds: float = 0.0
    answers: collections.Counter[str] = field(default_factory=collections.Counter)
    notes: list[str] = field(default_factory=list)
    died: str = ""

    @property
    def growth(self) -> float:
        return self.rss_end - self.rss_warm

    @property
    def unexpected(self) -> dict[str, int]:
        return {k: v for k, v in self.answers.items() if k not in self.case.expected}

    @property
    def ok(self) -> bool:
        return (not self.died and self.sent == self.requests and not self.unexpected
                and self.growth <= GOAL_MIB)


# --- sessions -------------------------------------------------------------------------------


def _answer(response: httpx.Response) -> str:
    """``200``, or the status and the error code: ``404 unknown_namespace``."""
    if response.status_code < 400:
        return str(response.status_code)
    try:
        code = response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        code = "(no error code)"
    return f"{response.status_code} {code}"


class HttpSession:
    """A keep-alive client posting the body ``body(index)`` to ``path(index)``."""

    def __init__(self, context: Context, path: Callable[[int], str],
                 body: Callable[[int], bytes]) -> None:
        self.client = httpx.Client(base_url=f"http://{run.HOST}:{context.port}",
                                   timeout=TIMEOUT, headers={"Content-Type": "application/json"})
        self.path, self.body = path, body

    def send(self, index: int) -> str:
        try:
            return _answer(self.client.post(self.path(index), content=self.body(index)))
        except httpx.HTTPError as error:
            return f"client error {type(error).__name__}"

    def close(self) -> None:
        self.client.close()


def _json(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode()


def namespaces(context: Context, worker: int) -> Session:
    return HttpSession(context, lambda n: f"/ns-{n}/v1/responses",
                       lambda n: _json({"model": "m", "input": "x"}))


def scenario_name(n: int) -> str:
    """Cycles through the spellings: unknown, a path up and back down, a path of many ``./``
    ending in a real scenario's name, a 300-character name."""
    kind = n % 4
    if kind == 0:
        return f"s-{n}"
    if kind == 1:
        return f"../x/{n}"
    if kind == 2:
        return "./" * (1 + n // 4 % 50) + "text"
    return f"long-{n}-".ljust(300, "a")


def scenario_names(context: Context, worker: int) -> Session:
    return HttpSession(context, lambda n: "/v1/responses",
                       lambda n: _json({"model": f"ormock:{scenario_name(n)}", "input": "x"}))


def big_bodies(context: Context, worker: int) -> Session:
    pad = "x" * BIG_BODY

    def body(n: int) -> bytes:
        head = f'{{"model": "m", "input": "{n} '.encode()
        return head + pad[: BIG_BODY - len(head) - 2].encode() + b'"}'

    return HttpSession(context, lambda n: "/v1/responses", body)


class SocketSession:
    """One WebSocket connection; every 10th turn starts afresh, the others continue the turn
    before (``store: false``: only this connection can continue it)."""

    def __init__(self, context: Context, worker: int) -> None:
        self.socket: ClientConnection = connect(f"ws://{run.HOST}:{context.port}/v1/responses",
                                                open_timeout=TIMEOUT, max_size=None)
        self.previous: str | None = None
        self.turns = 0

    def send(self, index: int) -> str:
        message: dict[str, Any] = {"type": "response.create", "model": "m",
                                   "input": f"turn {index}", "store": False}
        if self.turns % 10 and self.previous is not None:
            message["previous_response_id"] = self.previous
        self.turns += 1
        try:
            self.socket.send(json.dumps(message))
            while True:
                event = json.loads(self.socket.recv(timeout=TIMEOUT))
                kind = event.get("type")
                if kind == "response.completed":
                    self.previous = event["response"]["id"]
                    return "completed"
                if kind in ("error", "response.failed", "response.incomplete"):
                    self.previous = None
                    status = event.get("status", "")
                    code = (event.get("error") or {}).get("code", "")
                    return f"{kind} {status} {code}".strip()
        except Exception as error:  # a closed connection, a timeout: an answer to count
            self.previous = None
            return f"client error {type(error).__name__}"

    def close(self) -> None:
        self.socket.close()


class ChainSession:
    """One chain: every request continues the last response; times each request and samples
    RSS at turn 100 and at the last turn."""

    def __init__(self, context: Context, worker: int) -> None:
        self.client = httpx.Client(base_url=f"http://{run.HOST}:{context.port}",
                                   timeout=TIMEOUT, headers={"Content-Type": "application/json"})
        self.context = context
        self.previous: str | None = None
        self.times: list[float] = []
        self.rss: dict[int, float] = {}

    def send(self, index: int) -> str:
        body: dict[str, Any] = {"model": "m", "input": f"turn {index + 1}"}
        if self.previous is not None:
            body["previous_response_id"] = self.previous
        began = time.perf_counter()
        try:
            response = self.client.post("/v1/responses", content=_json(body))
        except httpx.HTTPError as error:
            return f"client error {type(error).__name__}"
        self.times.append(time.perf_counter() - began)
        turn = index + 1
        if turn in (100, self.context.total):
            self.rss[turn] = run.rss_mib(self.context.pid)
        if response.status_code == 200:
            self.previous = response.json()["id"]
        return _answer(response)

    def close(self) -> None:
        self.client.close()
        total, times = self.context.total, self.times
        if len(times) < total or total < 40:
            return
        early = statistics.median(times[90:110]) * 1000
        late = statistics.median(times[total - 20:total]) * 1000
        self.context.notes.append(
            f"turn 100: {early:.2f} ms per request (median of turns 91-110), RSS "
            f"{self.rss.get(100, 0):.1f} MiB; turn {total:,}: {late:.2f} ms (median of the last "
            f"20), RSS {self.rss.get(total, 0):.1f} MiB; ratio {late / early:.2f}x")


CASES = [
    Case("namespaces", 20_000, 4, frozenset({"404 unknown_namespace"}), namespaces,
         "POST /ns-<n>/v1/responses, a namespace nobody opened"),
    Case("scenario names", 20_000, 4, frozenset({"400 unknown_scenario"}), scenario_names,
         "model ormock:<name>: s-<n>, ../x/<n>, ./ x k + text, 300 characters"),
    Case("websocket turns", 2_000, 4, frozenset({"completed"}), SocketSession,
         "4 connections, store: false, 9 turns in 10 continue the one before"),
    Case("400 KB bodies", 2_000, 2, frozenset({"200"}), big_bodies,
         "input a 400 KB string, a new one each request; sampled once the caps are full",
         warmup=0.4),
    Case("chain", 3_000, 1, frozenset({"200"}), ChainSession,
         "each request continues the last (previous_response_id)"),
]


# --- driving a case -------------------------------------------------------------------------


def drive(sessions: Sequence[Session], start: int, stop: int, deadline: float,
          answers: collections.Counter[str]) -> int:
    """Send requests ``start`` to ``stop - 1``, worker ``w`` taking every ``len(sessions)``-th;
    returns how many were sent before the deadline."""
    lock = threading.Lock()
    sent = [0]

    def work(worker: int, session: Session) -> None:
        for index in range(start + worker, stop, len(sessions)):
            if time.monotonic() > deadline:
                return
            answer = session.send(index)
            with lock:
                answers[answer] += 1
                sent[0] += 1

    threads = [threading.Thread(target=work, args=(w, s), daemon=True)
               for w, s in enumerate(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sent[0]


def measure(case: Case, scale: float, max_seconds: float, logdir: Path) -> Outcome:
    total = max(1, round(case.count * scale))
    outcome = Outcome(case, requests=total)
    warm = max(1, int(total * case.warmup))
    with run.servers(["ormock"], logdir) as started:
        running = started["ormock"]
        context = Context(running, total)
        began = time.monotonic()
        deadline = began + max_seconds
        sessions = [case.session(context, w) for w in range(case.workers)]
        try:
            outcome.sent = drive(sessions, 0, warm, deadline, outcome.answers)
            outcome.rss_warm = run.rss_mib(running.proc.pid)
            half = max(warm, total // 2)
            outcome.sent += drive(sessions, warm, half, deadline, outcome.answers)
            outcome.rss_half = run.rss_mib(running.proc.pid)
            outcome.sent += drive(sessions, half, total, deadline, outcome.answers)
            outcome.rss_end = run.rss_mib(running.proc.pid)
        finally:
            for session in sessions:
                session.close()
        outcome.seconds = time.monotonic() - began
        outcome.notes = context.notes
        if running.proc.poll() is not None:
            outcome.died = f"the server exited with status {running.proc.returncode}"
    if outcome.sent < total:
        outcome.notes.append(f"only {outcome.sent:,} of {total:,} sent in {max_seconds:.0f} s")
    return outcome


def verdict(outcome: Outcome) -> str:
    if outcome.died:
        return "**FAIL**: server died"
    problems = []
    if outcome.growth > GOAL_MIB:
        problems.append("grew")
    if outcome.unexpected:
        problems.append("unexpected answers")
    if outcome.sent < outcome.requests:
        problems.append("timed out")
    return f"**FAIL**: {', '.join(problems)}" if problems else "flat"


def table(outcomes: Sequence[Outcome]) -> str:
    rows = ["| case | requests | RSS after warm-up (MiB) | RSS at end (MiB) | growth (MiB) | goal "
            "| verdict |", "|---|--:|--:|--:|--:|---|---|"]
    for o in outcomes:
        rows.append(f"| {o.case.name} | {o.sent:,} | {o.rss_warm:.1f} | {o.rss_end:.1f} | "
                    f"{o.growth:+.1f} | within {GOAL_MIB:.0f} MiB | {verdict(o)} |")
    return "\n".join(rows)


def details(outcomes: Sequence[Outcome]) -> list[str]:
    lines = []
    for o in outcomes:
        answers = ", ".join(f"{k}: {v:,}" for k, v in o.answers.most_common())
        lines.append(f"* **{o.case.name}** ({o.case.what}; {o.seconds:.0f} s, "
                     f"{o.sent / max(o.seconds, 1e-9):,.0f} req/s): {answers or 'no answers'}; "
                     f"RSS half-way {o.rss_half:.1f} MiB")
        lines.extend(f"  * {note}" for note in o.notes)
        if o.unexpected:
            lines.append(f"  * unexpected: {o.unexpected}")
        if o.died:
            lines.append(f"  * {o.died}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ormock serve's memory under hostile requests.")
    parser.add_argument("--only", default="", help="run only the cases whose name contains this")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply every case's request count (0.1: a quick check)")
    parser.add_argument("--max-seconds", type=float, default=600.0,
                        help="stop a case's requests after this long (and fail it)")
    args = parser.parse_args(argv)
    if not 0 < args.scale <= 10:
        parser.error("--scale must be above 0 and at most 10")
    # SIGTERM (a CI timeout, kill) stops the run through the finally that stops the server
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    chosen = [c for c in CASES if args.only in c.name]
    if not chosen:
        parser.error(f"no case matches {args.only!r}: {', '.join(c.name for c in CASES)}")
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="ormock-memory-") as tmp:
        for case in chosen:
            print(f"memory: {case.name}: {max(1, round(case.count * args.scale)):,} requests",
                  file=sys.stderr, flush=True)
            outcome = measure(case, args.scale, args.max_seconds, Path(tmp))
            print(f"memory: {case.name}: {outcome.rss_warm:.1f} -> {outcome.rss_end:.1f} MiB "
                  f"in {outcome.seconds:.0f} s: {verdict(outcome)}", file=sys.stderr, flush=True)
            outcomes.append(outcome)
    print(table(outcomes))
    print()
    print("\n".join(details(outcomes)))
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
