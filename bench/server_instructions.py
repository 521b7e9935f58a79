"""Instructions per request of a whole server process (uvicorn, httptools, the app), counted by
valgrind's callgrind: ``run.py``'s servers and requests, one connection, a figure the rest of
the machine's load does not move (req/s and CPU time under wrk do, on a shared machine).

Each server of ``run.py``'s cases runs under ``valgrind --tool=callgrind`` with instrumentation
off; ``--warmup`` requests go first (over one keep-alive connection, as wrk's are), then
instrumentation is switched on and zeroed (``callgrind_control``), ``--requests`` more are sent,
and the count is dumped and divided by their number. User-space instructions only: the kernel's
work for the sockets is not in it, and both servers make the same number of socket writes for a
JSON reply (ormock's one joined write against uvicorn's two costs the bare app more), so the
figure leaves out a part of the CPU time that is about the same for both. Ratio: the
reference's instructions over this case's (as ``run.py``'s CPU ratio: above 1 is cheaper).

    python bench/server_instructions.py            # the unique-input cases and their references
    python bench/server_instructions.py --only "JSON" --requests 500
    python bench/server_instructions.py --all      # every case but 1,000-delta

Needs valgrind (with ``callgrind_control``) on PATH.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import cases
import run

# the cases counted by default: every reference run.py divides a unique-input case by
_DEFAULT = ("unique inputs",)


def bodies(case: run.Case, count: int, start: int) -> list[bytes]:
    """The request bodies of ``count`` requests (unique inputs: ``hi 1-<n>`` from ``start``, as
    wrk's script makes them)."""
    body = cases.request_body(case.body_case, case.stream)
    if not case.unique:
        raw = json.dumps(body, separators=(",", ":")).encode()
        return [raw] * count
    return [json.dumps({**body, "input": f"hi 1-{n}"}, separators=(",", ":")).encode()
            for n in range(start, start + count)]


def send(port: int, requests: list[bytes]) -> None:
    """POST each body over one keep-alive connection, reading every reply to its end."""
    connection = http.client.HTTPConnection(run.HOST, port, timeout=600)
    try:
        for body in requests:
            connection.request("POST", "/v1/responses", body,
                               {"Content-Type": "application/json"})
            reply = connection.getresponse()
            reply.read()
            if reply.status != 200:
                raise SystemExit(f"bench: a request got {reply.status}")
    finally:
        connection.close()


def control(*args: str) -> None:
    subprocess.run(["callgrind_control", *args], check=True, capture_output=True)


def counted(server: run.Server, case: run.Case, warmup: int, requests: int,
            folder: Path) -> int:
    """The instructions per request of ``case`` on ``server`` run under callgrind."""
    valgrind = ("valgrind", "--tool=callgrind", "--instr-atstart=no",
                f"--callgrind-out-file={folder}/{server.key}.%p")
    running = run.start(run.Server(server.key, server.label, (*valgrind, *server.argv)),
                        folder)
    try:
        run.wait_ready(running, timeout=600)
        pid = str(running.proc.pid)
        send(running.port, bodies(case, warmup, 0))
        control("--instr=on", pid)
        control("--zero", pid)
        send(running.port, bodies(case, requests, warmup))
        control("--dump", pid)
        control("--instr=off", pid)
    finally:
        run.stop(running)
    dump = folder / f"{server.key}.{pid}.1"
    match = re.search(r"^summary: (\d+)$", dump.read_text(), re.MULTILINE)
    if match is None:
        raise SystemExit(f"bench: no summary in {dump}")
    return int(match.group(1)) // requests


def chosen(only: str, every: bool) -> list[run.Case]:
    """The cases to count, with their references, once per distinct request (wrk's connections
    do not change what a request costs)."""
    picked = [c for c in run.CASES if c.kind != "long-text" and c.server != "bare-long-text-one"
              and c.server != "bare-long-text"]
    if only:
        picked = [c for c in picked if only in c.name]
    elif not every:
        picked = [c for c in picked if any(word in c.name for word in _DEFAULT)]
    names = {c.name for c in picked} | {c.reference for c in picked if c.reference}
    seen: set[tuple[str, str, bool, bool]] = set()
    out = []
    for c in run.CASES:
        key = (c.server, c.body_case, c.stream, c.unique)
        if c.name in names and key not in seen:
            seen.add(key)
            out.append(c)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Instructions per request of a whole server.")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--only", default="", help="the cases whose name contains this")
    parser.add_argument("--all", action="store_true", help="every case but 1,000-delta")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("bench: valgrind is not installed (Debian/Ubuntu: apt-get install valgrind)",
              file=sys.stderr)
        return 2
    counts: dict[str, int] = {}
    print("| case | instructions per request | ratio |\n|---|--:|--:|", flush=True)
    with tempfile.TemporaryDirectory(prefix="ormock-bench-") as tmp:
        for case in chosen(args.only, args.all):
            counts[case.name] = n = counted(run.SERVERS[case.server], case, args.warmup,
                                            args.requests, Path(tmp))
            reference = counts.get(case.reference or "")
            ratio = f"{reference / n:.2f}x" if reference else "(ref)"
            print(f"| {case.name} | {n:,} | {ratio} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
