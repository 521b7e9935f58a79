"""The recorder's cost: time to first byte and streamed throughput through ``ormock record``
against talking to the upstream directly, in one run, as differences and ratios.

The upstream is ``ormock serve`` (its own process) with a scenario of 1,000 text deltas written
one event per write (``pacing: per_event`` of 1 microsecond, so each event is its own write);
the recorder is ``ormock record`` (its own process) in front of it, writing its cassette to a
temporary folder. The client (this process, httpx, keep-alive) alternates direct and proxied
requests, so both see the same machine load. After each proxied request it waits for the
recorder's progress line, i.e. for the cassette write to finish, so the write (which comes after
the interaction) is not measured inside the next one.

    python bench/recorder.py                 # 300 TTFB samples, 30 long streams each way
    python bench/recorder.py --ttfb 1000 --streams 50
"""

from __future__ import annotations

import argparse
import os
import queue
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from cases import long_scenario  # noqa: E402


@contextmanager
def process(args: list[str], pattern: str) -> Iterator[tuple[str, queue.Queue[str]]]:
    """``python -m ormock ARGS``; yields the URL its first stderr line names (``pattern``) and a
    queue of its later stderr lines."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "ormock", *args], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True, env=env)
    assert proc.stderr is not None
    first = proc.stderr.readline()
    found = re.search(pattern, first)
    if not found:
        proc.kill()
        raise SystemExit(f"ormock {args[0]} did not start: {first}{proc.stderr.read()}")
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr or ()],
                              daemon=True)
    reader.start()
    try:
        yield found.group(1), lines
    finally:
        proc.terminate()
        proc.wait(10)


def first_byte(client: httpx.Client, url: str) -> float:
    """Seconds from sending a short streamed request to its first body byte."""
    body = {"model": "m", "input": "hi", "stream": True}
    start = time.perf_counter()
    with client.stream("POST", url + "/responses", json=body) as answer:
        took = None
        for _ in answer.iter_raw():
            if took is None:
                took = time.perf_counter() - start
    assert took is not None, "an empty body"
    return took


def long_stream(client: httpx.Client, url: str) -> tuple[float, int]:
    """Seconds to read the whole 1,000-delta stream, and its bytes."""
    start = time.perf_counter()
    size = 0
    with client.stream("POST", url + "/responses",
                       json={"model": "long", "input": "hi", "stream": True}) as answer:
        for data in answer.iter_raw():
            size += len(data)
    return time.perf_counter() - start, size


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ttfb", type=int, default=300, help="TTFB samples each way")
    parser.add_argument("--streams", type=int, default=30, help="long streams each way")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        scenario = long_scenario()
        step = scenario["steps"][0]
        step["reply"]["pacing"] = {"per_event": 0.000001}  # one write per event
        step["match"] = {"model": "long"}  # other requests get the embedded default
        path = Path(folder) / "long.yaml"
        path.write_text(yaml.safe_dump(scenario, sort_keys=False, width=1_000_000))
        with process(["serve", "--port", "0", "--scenario", str(path)],
                     r" on (http://\S+/v1)") as (direct, _), \
                process(["record", "--upstream", direct, "--port", "0", "--cassettes",
                         str(Path(folder) / "cassettes"), "--name", "bench"],
                        r" on (http://\S+/v1) into ") as (proxied, progress), \
                httpx.Client(timeout=30) as client:

            def through(kind: str, measure: object) -> object:
                result = measure(client, proxied)  # type: ignore[operator]
                line = progress.get(timeout=30)  # the cassette write is done
                if not line.startswith("POST "):
                    raise SystemExit(f"the recorder said: {line}")
                return result

            for _ in range(20):  # warm both paths (connections, caches)
                first_byte(client, direct)
                through("ttfb", first_byte)
            ttfb_direct, ttfb_proxied = [], []
            for _ in range(args.ttfb):
                ttfb_direct.append(first_byte(client, direct))
                ttfb_proxied.append(through("ttfb", first_byte))  # type: ignore[arg-type]
            rate_direct, rate_proxied = [], []
            size = 0
            for _ in range(args.streams):
                seconds, size = long_stream(client, direct)
                rate_direct.append(size / seconds)
                seconds, size = through("stream", long_stream)  # type: ignore[misc]
                rate_proxied.append(size / seconds)
    ms = 1000
    d50, p50 = statistics.median(ttfb_direct) * ms, statistics.median(ttfb_proxied) * ms
    d90, p90 = percentile(ttfb_direct, 0.9) * ms, percentile(ttfb_proxied, 0.9) * ms
    r_direct, r_proxied = statistics.median(rate_direct), statistics.median(rate_proxied)
    print(f"| measure | direct | through ormock record | added / ratio |\n|---|---|---|---|\n"
          f"| TTFB p50 (ms), short stream | {d50:.2f} | {p50:.2f} | +{p50 - d50:.2f} ms |\n"
          f"| TTFB p90 (ms) | {d90:.2f} | {p90:.2f} | +{p90 - d90:.2f} ms |\n"
          f"| 1,000-delta stream ({size:,} bytes, one write per event), MB/s p50 | "
          f"{r_direct / 1e6:.2f} | {r_proxied / 1e6:.2f} | {r_proxied / r_direct:.2f}x |\n\n"
          f"({args.ttfb} TTFB samples and {args.streams} streams each way, alternated; "
          f"Python {sys.version.split()[0]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
