"""What the recorder and replay tests share: a fresh namespace of an upstream ``OrmockServer``,
a raw upstream that runs a script of handwritten HTTP/1.1, and waiting for a recorder's
cassette to hold the interactions it was sent (each is written when it finishes)."""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ormock import OrmockServer
from ormock.cassette import load_cassette
from ormock.cassette.model import Cassette
from ormock.server.recorder import RecorderServer

_names = itertools.count()

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextmanager
def raw_upstream(script: Script) -> Iterator[tuple[str, list[bytes]]]:
    """A TCP server on 127.0.0.1 that reads one request head and runs ``script``; yields its
    URL and the request heads it read."""
    loop = asyncio.new_event_loop()
    heads: list[bytes] = []
    ready = threading.Event()
    holder: dict[str, Any] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        heads.append(head)
        length = re.search(rb"(?i)content-length: *(\d+)", head)
        if length:
            await reader.readexactly(int(length.group(1)))
        try:
            await script(reader, writer)
        finally:
            writer.close()

    async def serve() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        holder["stop"] = stop = asyncio.Event()
        holder["port"] = server.sockets[0].getsockname()[1]
        ready.set()
        async with server:
            await stop.wait()

    thread = threading.Thread(target=lambda: loop.run_until_complete(serve()), daemon=True)
    thread.start()
    ready.wait(5)
    try:
        yield f"http://127.0.0.1:{holder['port']}/v1", heads
    finally:
        loop.call_soon_threadsafe(holder["stop"].set)
        thread.join(5)
        loop.close()


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
