"""What the ``ormock`` fixture costs a test: setup + teardown, median over N tests, against the
same tests without it.

Generates two test modules in a temporary folder (N tests that take the ``ormock`` fixture, N that
take nothing), runs pytest on each in a subprocess, and reads every test's setup and teardown
durations (pytest's own timings, from ``pytest_runtest_logreport``). The first test of each run
is left out: it pays for starting the session's server once.

    python bench/bench_fixture_overhead.py [-n 1000] [--repeat 3]

Variants: ``plain`` (the fixture only), ``base_url`` (reads ``ormock.base_url``), ``request``
(one ``POST /responses`` through httpx, for scale: that cost is the server's, not the fixture's).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

CONFTEST = '''
import json, os

_times = {}

def pytest_runtest_logreport(report):
    if report.when in ("setup", "teardown"):
        _times[report.nodeid] = _times.get(report.nodeid, 0.0) + report.duration

def pytest_sessionfinish(session):
    with open(os.environ["ORMOCK_BENCH_OUT"], "w") as out:
        json.dump(list(_times.values()), out)
'''

BODIES = {
    "none": ("", "    pass"),
    "plain": ("ormock", "    pass"),
    "base_url": ("ormock", "    assert ormock.base_url"),
    "request": ("ormock", "    httpx.post(ormock.base_url + '/responses', "
                          "json={'model': 'm', 'input': 'hi'}).raise_for_status()"),
}


def module(variant: str, count: int) -> str:
    argument, body = BODIES[variant]
    tests = "\n\n".join(f"def test_{i}({argument}):\n{body}" for i in range(count))
    return "import httpx\n\n\n" + tests + "\n"


def run(variant: str, count: int, folder: Path) -> list[float]:
    target = folder / variant
    target.mkdir(exist_ok=True)
    (target / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (target / f"test_{variant}.py").write_text(module(variant, count))
    out = target / "times.json"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-W", "ignore::DeprecationWarning", str(target)],
        cwd=target, check=True, capture_output=True,
        env={**_env(), "ORMOCK_BENCH_OUT": str(out)},
    )
    times: list[float] = json.loads(out.read_text())
    return times[1:]  # the first test starts the server


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000, help="tests per run (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per variant; best median")
    parser.add_argument("--variants", default="none,plain,base_url,request")
    args = parser.parse_args()
    variants = args.variants.split(",")
    medians: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for variant in variants:
            runs = [statistics.median(run(variant, args.n, Path(tmp))) for _ in range(args.repeat)]
            medians[variant] = min(runs)
    base = medians.get("none", 0.0)
    print(f"fixture overhead, setup + teardown per test, median of {args.n} tests "
          f"(best of {args.repeat} runs)")
    for variant, value in medians.items():
        extra = "" if variant == "none" else f"   (+{(value - base) * 1e3:.3f} ms over none)"
        print(f"  {variant:<9} {value * 1e3:8.3f} ms{extra}")


if __name__ == "__main__":
    main()
