"""What the recorder and replay tests share: a fresh namespace of an upstream ``OrmockServer``,
and waiting for a recorder's cassette to hold the interactions it was sent (each is written
when it finishes)."""

from __future__ import annotations

import itertools
import time
from typing import Any

from ormock import OrmockServer
from ormock.cassette import load_cassette
from ormock.cassette.model import Cassette
from ormock.server.recorder import RecorderServer

_names = itertools.count()


def namespace(upstream: OrmockServer, scenario: Any = None) -> str:
    """The base URL of a fresh namespace of ``upstream``, with ``scenario`` loaded."""
    name = f"r{next(_names)}"
    upstream.namespaces.open(name)
    if scenario is not None:
        upstream.engine(name).use(scenario)
    return f"{upstream.url}/{name}/v1"


def recorded(recorder: RecorderServer, count: int, timeout: float = 5.0) -> Cassette:
    """The cassette once it holds ``count`` interactions."""
    deadline = time.monotonic() + timeout
    while True:
        cassette = load_cassette(recorder.cassette)
        if len(cassette.interactions) >= count or time.monotonic() > deadline:
            assert len(cassette.interactions) == count
            return cassette
        time.sleep(0.01)
