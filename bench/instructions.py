"""Instructions per request through ormock's ASGI app, counted by valgrind's callgrind: a figure
other work on the machine does not move (wall-clock and CPU time do, on a shared machine).

    python bench/instructions.py                        # every in-process case (a few minutes)
    python bench/instructions.py short-json-unique --requests 200
    python bench/instructions.py short-json-unique --store redis   # on a redis-server of its own
    python bench/instructions.py --bare short-json-unique   # the bare Starlette app's, alike

Each case runs in its own ``valgrind --tool=callgrind`` process: 50 requests to warm up, then
``--requests`` more, counted alone (callgrind collects only inside ``math.fsum``, which the
measured loop runs under), divided by their number. Needs valgrind on PATH. ``--store``: the
app's store (``memory``, the default; ``redis``: a fresh database of a ``redis-server`` started
for the run, ``tests/stores.py``; or any ``--store`` spec); Redis's own work is in another
process, so not counted: what is counted is what the shared store adds to ormock's process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def measured(case: str, count: int, store: str, bare: bool = False) -> None:
    """Inside valgrind: warm up, then run ``count`` requests under ``math.fsum`` (``bare``:
    through the bare Starlette app instead of ormock's)."""
    import inprocess

    body_case, stream, unique = inprocess.CASES[case]
    bodies = inprocess.requests(body_case, stream, unique)
    loop = inprocess.new_loop()
    app = inprocess.bare(body_case, stream) if bare else inprocess.ormock_app(body_case, store)
    driver = inprocess.Driver(app, lambda: json.dumps(bodies()).encode())
    loop.run_until_complete(driver.many(50))

    def run() -> Iterator[float]:
        loop.run_until_complete(driver.many(count))
        yield 0.0

    math.fsum(run())  # callgrind counts only inside math_fsum: the measured requests
    if driver.status != 200:
        raise SystemExit(f"bench: the app answered {driver.status} for {case}")


def count(case: str, requests: int, store: str = "memory", bare: bool = False) -> int:
    """Instructions per request of ``case`` (on ``store``; ``bare``: the bare app's)."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=math_fsum",
         "--callgrind-out-file=/dev/null", sys.executable, __file__, "--inside", case,
         "--requests", str(requests), "--store", store, *(["--bare"] if bare else [])],
        capture_output=True, text=True, check=False, cwd=BENCH.parent)
    match = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or match is None:
        raise SystemExit(f"bench: callgrind failed for {case}:\n{done.stderr[-2000:]}")
    return int(match.group(1)) // requests


def main(argv: Sequence[str] | None = None) -> int:
    import inprocess

    parser = argparse.ArgumentParser(description="Instructions per request (callgrind).")
    parser.add_argument("cases", nargs="*", metavar="CASE",
                        help=f"in-process cases (default: all): {', '.join(inprocess.CASES)}")
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--store", default="memory",
                        help="memory (default), redis (a redis-server of the run's own), or a "
                             "--store spec")
    parser.add_argument("--bare", action="store_true",
                        help="count the bare Starlette app (bare_app.py) instead of ormock's")
    parser.add_argument("--inside", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = [case for case in args.cases if case not in inprocess.CASES]
    if unknown:
        parser.error(f"unknown case {unknown[0]!r}: choose from {', '.join(inprocess.CASES)}")
    if args.inside:
        measured(args.inside, args.requests, args.store, args.bare)
        return 0
    if shutil.which("valgrind") is None:
        print("bench: valgrind is not installed (Debian/Ubuntu: apt-get install valgrind)",
              file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        redis_server = None
        if args.store == "redis":
            sys.path.insert(0, str(BENCH.parent / "tests"))
            from stores import start_redis

            redis_server = start_redis()
            if redis_server is None:
                print("bench: redis-server not found: apt-get install -y redis-server",
                      file=sys.stderr)
                return 2
            stack.callback(redis_server.stop)
        print(f"| case ({args.store}) | instructions per request |\n|---|--:|")
        for case in args.cases or list(inprocess.CASES):
            store = args.store if redis_server is None else redis_server.fresh_url()
            print(f"| {case} | {count(case, args.requests, store, args.bare):,} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
