"""Where ormock's time goes per request, measured in-process (no HTTP, no wrk).

For each benchmark case it times, per request, in CPU time of this process (other work on the
machine does not inflate it):

* the whole ASGI app (ormock's ``create_app``, and the bare app of ``bare_app.py``) driven
  directly with a scope, the request body and a ``send`` that drops the bytes: the app's own cost
  without uvicorn, httptools or sockets;
* ``Engine.respond`` (parse the request, plan, build the events, store, journal);
* the body: ``Reply.sse_body()`` (frame every event) or ``Reply.json_body()`` (fold the events);
  these two are a full build; the server's own path may reuse an earlier reply instead.

The collector is set as ``ormock serve`` sets it (``ormock.commands.collector``: the youngest
generation collected after 20,000 allocations), for ormock's app and the bare one alike;
``--collector python`` keeps Python's thresholds (700), as in a test suite's own process, where an
``OrmockServer`` leaves them be.

The ``-unique`` cases send a different input with every request (``hi 1``, ``hi 2``, ...), so no
reply can be reused from an earlier one. Memory is judged by ``run.py``, from the server's RSS
under load.

    python bench/inprocess.py                 # the table
    python bench/inprocess.py --json          # for run.py
    python bench/inprocess.py --profile short-json   # cProfile of ormock's app, top functions
    python bench/inprocess.py --breakdown short-json-unique   # where its µs go, a table
    python bench/inprocess.py --collector python   # at Python's collector thresholds
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import itertools
import json
import os
import pstats
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

import cases

from ormock.commands.collector import tune_for_serving

Message = MutableMapping[str, Any]
App = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[Message]],
                Callable[[Message], Awaitable[None]]], Awaitable[None]]

# name -> (body case, stream, unique: every request has a different input)
CASES: dict[str, tuple[str, bool, bool]] = {
    "short-stream": ("short", True, False),
    "short-json": ("short", False, False),
    "short-stream-unique": ("short", True, True),
    "short-json-unique": ("short", False, True),
    "long-text": ("long-text", True, False),
    "scenario-stream-unique": ("scenario", True, True),
    "scenario-json-unique": ("scenario", False, True),
    "fixed-stream-unique": ("fixed", True, True),
    "fixed-json-unique": ("fixed", False, True),
}
HEADERS = {"content-type": "application/json", "host": "127.0.0.1"}


def new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


class Driver:
    """Calls an ASGI app as uvicorn would for one ``POST /v1/responses``."""

    def __init__(self, app: App, bodies: Callable[[], bytes]) -> None:
        self.app = app
        self.bodies = bodies
        self.sent = 0
        self.status = 0

    def scope(self, body: bytes) -> MutableMapping[str, Any]:
        return {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": "/v1/responses", "raw_path": b"/v1/responses", "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode())],
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8787),
        }

    async def one(self) -> None:
        body = self.bodies()
        delivered = False

        async def receive() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Future()  # the client never leaves; a watcher task gets cancelled
            raise AssertionError("unreachable")

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.status = message["status"]
            else:
                self.sent += len(message.get("body", b""))

        await self.app(self.scope(body), receive, send)

    async def many(self, count: int) -> None:
        for _ in range(count):
            await self.one()


def ormock_app(case: str, store: str = "memory") -> App:
    """ormock's app as ``ormock serve --seed 0 [--scenario FILE] [--store STORE]`` builds it
    (a case of ``cases.SCENARIOS``: its scenario loaded)."""
    from ormock.engine.namespaces import Namespaces
    from ormock.server.app import create_app

    namespaces = Namespaces(seed=cases.SEED, store=store)
    if case in cases.SCENARIOS:
        scenario = cases.SCENARIOS[case]()

        def setup(engine: Any) -> None:
            engine.use(scenario)

        namespaces.setup.append(setup)
    app: App = create_app(namespaces)
    return app


def new_engine(case: str) -> Any:
    from ormock.engine.core import Engine

    engine = Engine(seed=cases.SEED)
    if case in cases.SCENARIOS:
        engine.use(cases.SCENARIOS[case]())
    return engine


def bare(case: str, stream: bool) -> App:
    from bare_app import create_bare_app

    app: App = create_bare_app(case, "event")
    return app


def per_request(run: Callable[[int], None], budget: float) -> float:
    """CPU microseconds per call of ``run(n)`` / n, calibrated to take about ``budget`` seconds.

    CPU time of this process, not wall time: other work on the machine does not count."""
    run(5)  # warm-up
    count = 10
    while True:
        start = time.process_time()
        run(count)
        elapsed = time.process_time() - start
        if elapsed >= budget / 4 or count >= 200_000:
            break
        count *= 4
    total = max(1, int(count * budget / max(elapsed, 1e-9) / 2))
    start = time.process_time()
    run(total)
    return (time.process_time() - start) / total * 1e6


def calls(fn: Callable[[], object]) -> Callable[[int], None]:
    def run(count: int) -> None:
        for _ in range(count):
            fn()

    return run


def requests(case: str, stream: bool, unique: bool) -> Callable[[], dict[str, Any]]:
    """The request bodies to send one after the other: the same one, or each one new."""
    if not unique:
        body = cases.request_body(case, stream)
        return lambda: body
    counter = itertools.count()
    return lambda: cases.request_body(case, stream, unique=next(counter))


def engine_us(case: str, bodies: Callable[[], dict[str, Any]], budget: float
              ) -> tuple[float, Any]:
    """µs per ``Engine.respond`` on a fresh engine, and one reply."""
    engine = new_engine(case)
    gc.collect()
    result = per_request(calls(lambda: engine.respond(bodies(), HEADERS)), budget)
    return result, engine.respond(bodies(), HEADERS)


def measure_case(name: str, budget: float) -> dict[str, float]:
    """Each stage starts from fresh objects and a collected heap, so no stage pays for the
    garbage of the one before."""
    body_case, stream, unique = CASES[name]
    loop = new_loop()
    out: dict[str, float] = {}

    def raw(bodies: Callable[[], dict[str, Any]]) -> Callable[[], bytes]:
        return lambda: json.dumps(bodies()).encode()

    def app_us(app: App) -> float:
        driver = Driver(app, raw(requests(body_case, stream, unique)))
        gc.collect()
        result = per_request(lambda n: loop.run_until_complete(driver.many(n)), budget)
        if driver.status != 200:
            raise SystemExit(f"bench: the app answered {driver.status} in-process for {name}")
        return result

    out["ormock_app_us"] = app_us(ormock_app(body_case))

    out["respond_us"], reply = engine_us(body_case, requests(body_case, stream, unique), budget)
    render = reply.sse_body if stream else reply.json_body
    gc.collect()
    out["body_us"] = per_request(calls(render), budget)

    out["bare_app_us"] = app_us(bare(body_case, stream))
    loop.close()
    return out


def profile(name: str, top: int) -> None:
    body_case, stream, unique = CASES[name]
    bodies = requests(body_case, stream, unique)
    loop = new_loop()
    driver = Driver(ormock_app(body_case), lambda: json.dumps(bodies()).encode())
    count = 60 if body_case == "long-text" else 2000
    loop.run_until_complete(driver.many(10))
    profiler = cProfile.Profile()
    profiler.enable()
    loop.run_until_complete(driver.many(count))
    profiler.disable()
    print(f"cProfile of {count} requests through ormock's ASGI app ({name}):")
    pstats.Stats(profiler).sort_stats(os.environ.get("BENCH_SORT", "cumulative")).print_stats(top)


# Where a request's time goes: (label, depth, (file suffix, function) of each function whose
# cumulative time it is). Depth 1 parts add up to the whole; deeper ones are within the part
# above them.
STAGES: list[tuple[str, int, tuple[tuple[str, str], ...]]] = [
    ("read and check the body (`read_body`, `_parse`)", 1,
     (("server/body.py", "read_body"), ("server/app.py", "_parse"))),
    ("Idempotency-Key lookup (`idempotent`)", 1, (("server/responses_api.py", "idempotent"),)),
    ("`Engine.answer`", 1, (("engine/core.py", "answer"),)),
    ("`building.respond`", 2, (("engine/building.py", "respond"),)),
    ("context and owner (`context_of`, `owner_of`)", 3,
     (("engine/context.py", "context_of"), ("engine/stateful.py", "owner_of"))),
    ("choose the reply (`choose`)", 3, (("engine/choose.py", "choose"),)),
    ("plan and events (`build`)", 3, (("engine/building.py", "build"),)),
    ("a new content over HTTP, no fault (`fresh`)", 3, (("engine/building.py", "fresh"),)),
    ("the text: default plan or scenario step", 4,
     (("engine/embedded.py", "default_plan"), ("scenario/replies.py", "plan"))),
    ("the compiled template: look-up (`Compiled.template`)", 4,
     (("engine/compiled.py", "template"),)),
    ("the template filled (`Template.fill`)", 4, (("engine/compiled.py", "fill"),)),
    ("the event dicts (`build_events`)", 4, (("protocol/stream.py", "build_events"),)),
    ("the terminal snapshot and event types (`build_final`)", 4,
     (("protocol/stream.py", "build_final"),)),
    ("the events, deltas framed (`build_frames`)", 4, (("protocol/stream.py", "build_frames"),)),
    ("framing the rest (`Framed`)", 4, (("protocol/sse.py", "__init__"),)),
    ("the stream cache: look-up (`cache.get`)", 3, (("engine/cache.py", "get"),)),
    ("bytes and journal summary of a new content (`remember`)", 3,
     (("engine/building.py", "remember"),)),
    ("a repeated content's bytes (`issue`)", 3, (("engine/building.py", "issue"),)),
    ("store the response (`keep`)", 3, (("engine/building.py", "keep"),)),
    ("render the wire (`render`)", 1, (("engine/render.py", "render"),)),
    ("write it (`send_wire`)", 1, (("engine/writer.py", "send_wire"),)),
    ("journal and idempotency after the write (`wrote`, `settle`)", 1,
     (("engine/journal.py", "wrote"), ("server/responses_api.py", "settle"))),
]


def breakdown(name: str, budget: float) -> str:
    """A markdown table of where one case's app time goes: each stage's share of the
    cumulative time under cProfile, scaled to the app µs measured without it (the profiler
    slows Python calls more than C, so the shares are approximate)."""
    body_case, stream, unique = CASES[name]
    loop = new_loop()
    driver = Driver(ormock_app(body_case), lambda: json.dumps(bodies()).encode())
    bodies = requests(body_case, stream, unique)
    gc.collect()
    total_us = per_request(lambda n: loop.run_until_complete(driver.many(n)), budget)
    profiler = cProfile.Profile()
    count = 60 if body_case == "long-text" else 2000
    profiler.enable()
    loop.run_until_complete(driver.many(count))
    profiler.disable()
    stats: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]

    def cumulative(functions: tuple[tuple[str, str], ...]) -> float:
        return sum(value[3] for (path, _, function), value in stats.items()
                   if any(path.endswith(suffix) and function == wanted
                          for suffix, wanted in functions))

    whole = cumulative((("bench/inprocess.py", "one"),))
    lines = [f"`{name}`: {total_us:,.0f} µs of app time a request (cProfile shares of "
             f"{count} requests, scaled)", "", "| stage | µs | share |", "|---|--:|--:|"]
    top = 0.0
    for label, depth, functions in STAGES:
        share = cumulative(functions) / whole if whole else 0.0
        if share < 0.005:
            continue
        top += share if depth == 1 else 0.0
        lines.append(f"| {'· ' * (depth - 1)}{label} | {share * total_us:,.0f} "
                     f"| {share:.0%} |")
    lines.append(f"| the rest: Starlette's middleware and router, the request-id wrapper, "
                 f"the namespace, the driver | {(1 - top) * total_us:,.0f} | {1 - top:.0%} |")
    return "\n".join(lines)


def table(results: dict[str, dict[str, float]]) -> str:
    lines = [
        "| case | ormock app µs/req | Engine.respond µs (uncached) | body µs | bare app µs/req |",
        "|---|--:|--:|--:|--:|",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['ormock_app_us']:,.0f} | {r['respond_us']:,.0f} "
            f"| {r['body_us']:,.0f} | {r['bare_app_us']:,.0f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ormock's per-request costs, in-process.")
    parser.add_argument("--json", action="store_true", help="print JSON (for run.py)")
    parser.add_argument("--budget", type=float, default=0.6, help="seconds per measurement")
    parser.add_argument("--profile", choices=sorted(CASES), help="cProfile one case instead")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--breakdown", nargs="+", choices=sorted(CASES),
                        help="where each case's app time goes, a table per case")
    parser.add_argument("--collector", choices=("serve", "python"), default="serve",
                        help="the garbage collector as `ormock serve` sets it (default), or at "
                             "Python's own thresholds")
    args = parser.parse_args(argv)
    if args.collector == "serve":
        tune_for_serving()
    if args.profile:
        profile(args.profile, args.top)
        return 0
    if args.breakdown:
        print("\n\n".join(breakdown(name, args.budget) for name in args.breakdown))
        return 0
    results = {name: measure_case(name, args.budget) for name in CASES}
    print(json.dumps(results, indent=1) if args.json else table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
