"""Redis's own time in a create's one store call (issue 13): the ``PUT_MANY`` of a plain create
on a warm server (a stored response of 1.4 KB with a ttl and its journal entry of 600 bytes
without, guarded by the admin stamp), run alone in a loop at the caps (each write evicts the
oldest key), with the scripts of a git revision and with the working tree's, in interleaved
rounds on one ``redis-server`` (the tests' own, ``tests/stores.py``), each in a namespace of its
own.

For each: Redis's microseconds per call (``INFO commandstats``'s ``cmdstat_evalsha``, the
minimum and the median of the rounds: the machine is shared, so even the minimum moves with
the load) and the commands the script ran per call (every other ``cmdstat_*``). With
``--callgrind``, a ``redis-server`` of its own under valgrind instead: the instructions
Redis runs per call (everything it does for it, the socket and the reply too), the figure
that hardly moves with the load (its cron runs once a second, not ten times: what it does
counts the more the slower the calls go, under valgrind and the machine's load); the server is
emptied before each, so each fills its kinds to the caps from nothing.

    python bench/redis_scripts.py                  # against HEAD
    python bench/redis_scripts.py --base main --rounds 12
    python bench/redis_scripts.py --base main --callgrind

Needs ``redis-server`` (Debian: ``apt-get install -y redis-server``), git, and for
``--callgrind`` valgrind.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from stores import free_port, own_redis  # noqa: E402

from ormock.engine.store import redis_scripts  # noqa: E402

RESPONSE, ENTRY = b"r" * 1400, b"j" * 600  # a create's stored response and journal entry
CAP = 1000  # keys a kind keeps: the loop starts past it, so every write evicts one


def scripts_at(revision: str) -> ModuleType:
    """``redis_scripts`` as it is at a git revision."""
    source = subprocess.run(["git", "show", f"{revision}:ormock/engine/store/redis_scripts.py"],
                            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    module = ModuleType(f"redis_scripts_{revision}")
    exec(compile(source, f"{revision}:redis_scripts.py", "exec"), module.__dict__)
    return module


def create_args(base: str, number: int, now: float) -> list[str | bytes | int]:
    """The ARGV of ``PUT_MANY`` as ``RedisBackend.put_many`` builds it for a create."""
    day = 24 * 3600
    return [base, "admin", repr(now), "1", "stamp", "", CAP, 128 * 1024 * 1024,
            b"s1", "response", f"resp_{number:048x}", RESPONSE, str(30 * day * 1000),
            repr(now + 30 * day), "journal", f"0123456789ab:{number:012d}",
            ENTRY, "", ""]


def instructions(variants: dict[str, ModuleType], calls: int, rounds: int) -> None:
    """Each variant's instructions per call, on a ``redis-server`` under callgrind (zeroed
    before the calls, dumped after them: ``callgrind_control``)."""
    folder = Path(tempfile.mkdtemp(prefix="ormock-callgrind-"))
    port = free_port()
    process = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={folder}/out.%p", "redis-server",
         "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--hz", "1", "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port)
        deadline = time.monotonic() + 60
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

        def control(flag: str) -> None:  # -z: zero the counts, -d: dump them
            subprocess.run(["callgrind_control", flag, str(process.pid)], check=True,
                           capture_output=True)

        counts: dict[str, list[float]] = {name: [] for name in variants}
        number = 0
        for _ in range(rounds):
            for name, module in variants.items():
                client.flushall()
                base = "ormock:{ns:bench}:"
                client.set(f"{base}v:admin:stamp", b"s1")
                sha = client.script_load(module.PUT_MANY)
                for _ in range(CAP + 100):  # to the caps
                    number += 1
                    client.evalsha(sha, 0, *create_args(base, number, time.time()))
                control("-z")
                for _ in range(calls):
                    number += 1
                    client.evalsha(sha, 0, *create_args(base, number, time.time()))
                before = set(folder.glob("out.*"))
                control("-d")
                dumped = sorted(set(folder.glob("out.*")) - before)
                total = next(int(line.split()[1]) for line in dumped[-1].read_text().splitlines()
                             if line.startswith("summary:"))
                counts[name].append(total / calls)
    finally:
        process.terminate()
        process.wait()
    print(f"PUT_MANY of a create at the caps, Redis's instructions per call (callgrind), "
          f"{rounds} rounds of {calls} calls")
    for name, values in counts.items():
        print(f"{name:>12} min {min(values):10,.0f}  median {statistics.median(values):10,.0f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD", help="the git revision to compare with")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=500, help="calls per round")
    parser.add_argument("--callgrind", action="store_true",
                        help="count Redis's instructions under valgrind instead (slow: use "
                             "--rounds 2 --calls 200)")
    options = parser.parse_args(argv)
    variants = {options.base: scripts_at(options.base), "worktree": redis_scripts}
    if options.callgrind:
        instructions(variants, options.calls, options.rounds)
        return
    with own_redis() as server:
        client = redis.Redis.from_url(server.fresh_url())
        shas, numbers = {}, {}
        for n, (name, module) in enumerate(variants.items()):
            base = f"ormock:{{ns:bench{n}}}:"
            client.set(f"{base}v:admin:stamp", b"s1")
            shas[name] = (base, client.script_load(module.PUT_MANY))
            numbers[name] = 0
        usec: dict[str, list[float]] = {name: [] for name in variants}
        commands: dict[str, float] = {}
        for round_ in range(options.rounds + 1):  # the first fills the kinds to their caps
            for name, (base, sha) in shas.items():
                calls = 2 * CAP if round_ == 0 else options.calls
                client.config_resetstat()
                for _ in range(calls):
                    numbers[name] += 1
                    assert client.evalsha(sha, 0, *create_args(base, numbers[name],
                                                               time.time())) == 1
                stats = client.info("commandstats")
                if round_:
                    usec[name].append(stats["cmdstat_evalsha"]["usec"] / calls)
                    commands[name] = sum(
                        value["calls"] for key, value in stats.items()
                        if key not in ("cmdstat_evalsha", "cmdstat_config|resetstat")) / calls
    print(f"PUT_MANY of a create at the caps, {options.rounds} rounds of {options.calls} calls")
    print(f"{'scripts':>12} {'usec min':>9} {'median':>7} {'commands':>9}")
    for name, values in usec.items():
        print(f"{name:>12} {min(values):9.2f} {statistics.median(values):7.2f} "
              f"{commands[name]:9.1f}")


if __name__ == "__main__":
    main()
