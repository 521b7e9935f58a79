"""What a shared store adds to a create in ormock's own process (issue 13): the app driven in
process as uvicorn would (``inprocess.Driver``), on the memory store and on a Redis of the
run's own (``tests/stores.py``), the two taking turns.

For each case and store, per create: the user and system CPU of this process
(``resource.getrusage``: Redis's own time is in another process, so not in it), and, on Redis,
the ``EVALSHA`` calls and the bytes Redis received (``INFO commandstats`` and ``INFO stats``
``total_net_input_bytes`` before and after, the ``INFO`` calls themselves left out). The
lowest of ``--rounds`` rounds counts (the machine's other work only ever adds). A Redis
database is filled to the caps first (2,000 keys a kind), as on a server that has run a while.

    python bench/shared_cost.py                          # short-json-unique, short-stream-unique
    python bench/shared_cost.py short-json --requests 4000 --rounds 5

For instructions (a figure the machine's load does not move): ``bench/instructions.py CASE
--store redis``.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import inprocess
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from stores import RedisServer, start_redis

WARMUP = 2100  # past the caps of 2,000 keys: each write then evicts the oldest, as it will


class Cost(NamedTuple):
    user_us: float
    system_us: float
    calls: float  # EVALSHA per create
    bytes_in: float  # bytes Redis received per create


# what the two INFO requests of a reading send Redis (``*2 $4 INFO $12 commandstats``, ``*2
# $4 INFO $5 stats``): a reading's are received after the one before it, so counted once
_INFO_BYTES = 33 + 25


def _redis_counts(client: redis.Redis) -> tuple[int, int]:
    """EVALSHA calls and bytes received by Redis so far."""
    stats = client.info("commandstats")
    received = int(client.info("stats")["total_net_input_bytes"])
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0)), received


def measure(case: str, store: str, requests: int, client: redis.Redis | None) -> Cost:
    """One round: a fresh app on ``store``, warmed past the caps, then ``requests`` creates."""
    body_case, stream, unique = inprocess.CASES[case]
    bodies = inprocess.requests(body_case, stream, unique)
    loop = inprocess.new_loop()
    driver = inprocess.Driver(inprocess.ormock_app(body_case, store),
                              lambda: json.dumps(bodies()).encode())
    loop.run_until_complete(driver.many(WARMUP))
    before = _redis_counts(client) if client is not None else (0, 0)
    start = resource.getrusage(resource.RUSAGE_SELF)
    loop.run_until_complete(driver.many(requests))
    end = resource.getrusage(resource.RUSAGE_SELF)
    after = _redis_counts(client) if client is not None else (0, 0)
    loop.close()
    if driver.status != 200:
        raise SystemExit(f"bench: the app answered {driver.status} for {case} on {store}")
    info_bytes = _INFO_BYTES if client is not None else 0
    return Cost((end.ru_utime - start.ru_utime) / requests * 1e6,
                (end.ru_stime - start.ru_stime) / requests * 1e6,
                (after[0] - before[0]) / requests,
                (after[1] - before[1] - info_bytes) / requests)


def best(costs: list[Cost]) -> Cost:
    return min(costs, key=lambda cost: cost.user_us + cost.system_us)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="What a shared store adds to a create.")
    parser.add_argument("cases", nargs="*", metavar="CASE",
                        help=f"in-process cases (default: short-json-unique, "
                             f"short-stream-unique): {', '.join(inprocess.CASES)}")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    cases = args.cases or ["short-json-unique", "short-stream-unique"]
    unknown = [case for case in cases if case not in inprocess.CASES]
    if unknown:
        parser.error(f"unknown case {unknown[0]!r}: choose from {', '.join(inprocess.CASES)}")
    server: RedisServer | None = start_redis()
    if server is None:
        print("bench: redis-server not found: apt-get install -y redis-server",
              file=sys.stderr)
        return 2
    try:
        print("| case | memory: user / sys µs | Redis: user / sys µs | added user + sys "
              "| EVALSHA | bytes to Redis |\n|---|--:|--:|--:|--:|--:|")
        for case in cases:
            memory: list[Cost] = []
            shared: list[Cost] = []
            for _ in range(args.rounds):  # taking turns: the machine's load hits both alike
                memory.append(measure(case, "memory", args.requests, None))
                url = server.fresh_url()
                client = redis.Redis.from_url(url)
                shared.append(measure(case, url, args.requests, client))
                client.close()
            m, r = best(memory), best(shared)
            added = r.user_us + r.system_us - m.user_us - m.system_us
            print(f"| {case} | {m.user_us:.0f} / {m.system_us:.0f} | {r.user_us:.0f} / "
                  f"{r.system_us:.0f} | +{added:.0f} µs | {r.calls:.2f} | {r.bytes_in:,.0f} |",
                  flush=True)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
