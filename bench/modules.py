"""How many of ormock's modules run while one new ``POST /v1/responses`` create is answered.

The method of issue 29: a profile hook set before the server's thread starts, counting the
distinct files under ``ormock/`` whose code runs. An ``OrmockServer`` is started under the hook
(``threading.setprofile`` for the threads it starts, ``sys.setprofile`` for this one), warmed
with a few creates of the same kind and other inputs, left to settle, and then the files seen
are cleared; one create with an input never sent before goes out (``http.client``, on the
warm-up's keep-alive connection), its answer is read, the server is left to settle again (what
a create does after its last byte counts), and what ran is read. Only the server's threads
count (this thread's calls, the client's, are left out), and only files under the ``ormock``
package's folder: the warm-up, the client and the connection's opening and closing are
outside what is counted, so the same tree gives the same list every run.

    python bench/modules.py                   # a new JSON create, the embedded default
    python bench/modules.py --stream          # a new streamed create
    python bench/modules.py --scenario text   # answered by the catalogue's ``text`` scenario
    python bench/modules.py --json            # the count and the paths as JSON

Cheap (a second or two): no load, nothing timed.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import ormock
from ormock import OrmockServer

PACKAGE = Path(ormock.__file__).resolve().parent
WARMUP = 5  # creates before the measured one: past a compiled template's second sighting
SETTLE = 0.2  # seconds with nothing new seen before the set is read or cleared


class Seen:
    """The files whose code ran in the server's threads while the hook was set."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        self._caller = threading.get_ident()

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and threading.get_ident() != self._caller:
            self.files.add(frame.f_code.co_filename)

    def settle(self, longest: float = 5.0) -> None:
        """Wait until the server's threads have run no new file for ``SETTLE`` seconds (what a
        create does after its answer's last byte, the journal and the feed, is part of it)."""
        end = time.monotonic() + longest
        count = -1
        while count != len(self.files) and time.monotonic() < end:
            count = len(self.files)
            time.sleep(SETTLE)

    def modules(self) -> list[str]:
        """The files under ``ormock/``, as ``ormock/...`` paths, sorted."""
        found = set()
        for name in list(self.files):
            path = Path(name)
            if path.is_absolute() and path.resolve().is_relative_to(PACKAGE):
                found.add(path.resolve().relative_to(PACKAGE.parent).as_posix())
        return sorted(found)


@contextmanager
def hooked(seen: Seen) -> Iterator[None]:
    """The hook on this thread and on every thread started meanwhile (the server's); the
    hooks there were before are put back after."""
    before, threads_before = sys.getprofile(), threading.getprofile()
    threading.setprofile(seen.hook)
    sys.setprofile(seen.hook)
    try:
        yield
    finally:
        sys.setprofile(before)
        threading.setprofile(threads_before)


def create(connection: http.client.HTTPConnection, text: str, *, stream: bool,
           scenario: str | None) -> None:
    """One create on ``connection`` (kept alive), its whole answer read; an error unless 200."""
    body: dict[str, Any] = {"model": f"ormock:{scenario}" if scenario else "m", "input": text}
    if stream:
        body["stream"] = True
    connection.request("POST", "/v1/responses", json.dumps(body).encode(),
                       {"Content-Type": "application/json"})
    answer = connection.getresponse()
    data = answer.read()
    if answer.status != 200:
        raise RuntimeError(f"create answered {answer.status}: {data[:300]!r}")


def modules_for_create(*, stream: bool = False, scenario: str | None = None,
                       warmup: int = WARMUP) -> list[str]:
    """The ``ormock/...`` files whose code ran while one new create was answered, sorted."""
    seen = Seen()
    with hooked(seen):
        server = OrmockServer(seed=0).start()
        connection = http.client.HTTPConnection(server.host, server.port, timeout=10)
        try:
            for number in range(warmup):
                create(connection, f"warm-up {number}", stream=stream, scenario=scenario)
            seen.settle()
            seen.files.clear()
            create(connection, "a new input, never sent before", stream=stream,
                   scenario=scenario)
            seen.settle()
            return seen.modules()
        finally:
            connection.close()
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stream", action="store_true", help="a streamed create")
    parser.add_argument("--scenario", metavar="NAME",
                        help="answered by this catalogue scenario (model ormock:NAME)")
    parser.add_argument("--warmup", type=int, default=WARMUP,
                        help=f"creates before the measured one (default {WARMUP})")
    parser.add_argument("--json", action="store_true", help="the count and paths as JSON")
    args = parser.parse_args()
    paths = modules_for_create(stream=args.stream, scenario=args.scenario, warmup=args.warmup)
    if args.json:
        print(json.dumps({"stream": args.stream, "scenario": args.scenario,
                          "count": len(paths), "modules": paths}, indent=2))
        return
    kind = "streamed" if args.stream else "JSON"
    by = f"the `{args.scenario}` scenario" if args.scenario else "the embedded default"
    print(f"{len(paths)} ormock modules ran for one new {kind} create answered by {by}:")
    for path in paths:
        print(f"  {path}")


if __name__ == "__main__":
    main()
