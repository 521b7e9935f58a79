"""The SDK's HTTP routed, in process, to a test's own fake over a real socket, as vcrpy and respx
reach it: at the transport.

While a ``Route`` is active (``routed``), ``HTTPTransport.handle_request`` and
``AsyncHTTPTransport.handle_async_request`` of httpx and of httpx2 (the fork the openai SDK
speaks through), both public methods, send each request the route takes to
``http://127.0.0.1:PORT/<namespace><its path and query>`` instead: the method, headers and body
as the client made them, ``Host`` the fake's, and ``X-Ormock-Origin`` the scheme, host and port
it was going to (what a vcrpy cassette's ``scheme``, ``host`` and ``port`` matchers compare).
The answer is the fake's, byte for byte and in time: exact streams, faults, resets and stalls
reach the client as they would from a provider. Each routed request has a transport of its own,
closed with its answer, so nothing is pooled across tests or event loops.

What a route leaves alone goes out as it would have: requests to the fake's own server, those
the fake's server makes itself (its recording relay's, to the provider), and those to the hosts
the route ignores (vcrpy's ``ignore_hosts``, ``ignore_localhost``).
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = ["ORIGIN_HEADER", "Route", "routed"]

ORIGIN_HEADER = "x-ormock-origin"
LOCALHOST = frozenset({"localhost", "127.0.0.1", "0.0.0.0", "::1"})
_LIBRARIES = ("httpx", "httpx2")


@dataclass
class Route:
    """Where the routed requests go (``root``: ``http://127.0.0.1:PORT``, ``namespace``), what
    is left alone (``ignore_hosts``, ``ignore_localhost``), and ``seen``: called with each
    routed request's origin (``https://api.openai.com``) before it is sent; what it raises
    fails that request."""

    root: str
    namespace: str
    ignore_hosts: frozenset[str] = frozenset()
    ignore_localhost: bool = False
    seen: Callable[[str], None] = lambda origin: None
    # the request as it is to be matched (vcrpy's before_record_request: method, URL, headers,
    # body), or None for one to leave alone; unset: the request as it was made
    matched_as: Callable[[str, str, dict[str, str], bytes], Any] | None = None
    # whether the caller is the fake's server itself (a recording relay's request to the
    # provider goes out, never back to the fake)
    own_thread: Callable[[], bool] = lambda: False
    routed: int = field(default=0)

    def takes(self, url: Any) -> bool:
        if self.own_thread():
            return False
        host = str(url.host).lower()
        own = urlsplit(self.root)
        if host == own.hostname and url.port == own.port:
            return False  # the fake's own server (its base_url, its admin API)
        if self.ignore_localhost and host in LOCALHOST:
            return False
        return host not in self.ignore_hosts

    def request(self, library: Any, request: Any) -> Any:
        """``request`` as the fake gets it; None when ``matched_as`` leaves it alone."""
        url = request.url
        origin = f"{url.scheme}://{url.netloc.decode('ascii')}"
        self.seen(origin)
        if self.matched_as is not None:
            try:
                body = request.content
            except library.RequestNotRead:  # a streamed upload: sent as it was made
                pass
            else:
                return self._matched(library, request, body)
        self.routed += 1
        target = f"{self.root}/{self.namespace}{url.raw_path.decode('ascii')}"
        return library.Request(request.method, target, headers=self._headers(
            request.headers.raw, origin), stream=request.stream, extensions=request.extensions)

    def _headers(self, raw: Any, origin: str) -> list[tuple[bytes, bytes]]:
        netloc = urlsplit(self.root).netloc
        headers = [(name, value) for name, value in raw
                   if name.lower() not in (b"host", ORIGIN_HEADER.encode())]
        return [(b"host", netloc.encode("ascii")), *headers,
                (ORIGIN_HEADER.encode(), origin.encode("ascii"))]

    def _matched(self, library: Any, request: Any, body: bytes) -> Any:
        """The request as ``matched_as`` makes it (its own length), or None."""
        assert self.matched_as is not None
        view = self.matched_as(request.method, str(request.url), dict(request.headers), body)
        if view is None:
            return None
        self.routed += 1
        parts = urlsplit(view.uri)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        raw = [(str(name).encode(), str(value).encode()) for name, value in view.headers.items()
               if str(name).lower() not in ("content-length", "transfer-encoding")]
        return library.Request(view.method, f"{self.root}/{self.namespace}{path}",
                               headers=self._headers(raw, f"{parts.scheme}://{parts.netloc}"),
                               content=view.body or b"", extensions=request.extensions)


_active: list[Route] = []
_patched: dict[str, tuple[Any, Any, Any]] = {}  # library -> (module, sync, async) originals


def _route_for(url: Any) -> Route | None:
    route = _active[-1] if _active else None
    return route if route is not None and route.takes(url) else None


def _closing(library: Any) -> tuple[type, type]:
    """The library's answer bodies that close their own transport when they are closed."""

    class Closing(library.SyncByteStream):  # type: ignore[misc]
        def __init__(self, stream: Any, transport: Any) -> None:
            self._stream, self._transport = stream, transport

        def __iter__(self) -> Iterator[bytes]:
            yield from self._stream

        def close(self) -> None:
            try:
                self._stream.close()
            finally:
                self._transport.close()

    class AsyncClosing(library.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, stream: Any, transport: Any) -> None:
            self._stream, self._transport = stream, transport

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._stream:
                yield chunk

        async def aclose(self) -> None:
            try:
                await self._stream.aclose()
            finally:
                await self._transport.aclose()

    return Closing, AsyncClosing


def _patch(name: str) -> None:
    try:
        library = importlib.import_module(name)
    except ImportError:
        return
    closing, async_closing = _closing(library)
    sync = library.HTTPTransport.handle_request
    asynchronous = library.AsyncHTTPTransport.handle_async_request

    def handle_request(self: Any, request: Any) -> Any:
        route = _route_for(request.url)
        sent = None if route is None else route.request(library, request)
        if sent is None:
            return sync(self, request)
        transport = library.HTTPTransport()
        try:
            response = sync(transport, sent)
        except BaseException:
            transport.close()
            raise
        response.stream = closing(response.stream, transport)
        return response

    async def handle_async_request(self: Any, request: Any) -> Any:
        route = _route_for(request.url)
        sent = None if route is None else route.request(library, request)
        if sent is None:
            return await asynchronous(self, request)
        transport = library.AsyncHTTPTransport()
        try:
            response = await asynchronous(transport, sent)
        except BaseException:
            await transport.aclose()
            raise
        response.stream = async_closing(response.stream, transport)
        return response

    library.HTTPTransport.handle_request = handle_request
    library.AsyncHTTPTransport.handle_async_request = handle_async_request
    _patched[name] = (library, sync, asynchronous)


def _unpatch() -> None:
    for library, sync, asynchronous in _patched.values():
        library.HTTPTransport.handle_request = sync
        library.AsyncHTTPTransport.handle_async_request = asynchronous
    _patched.clear()


@contextmanager
def routed(route: Route) -> Iterator[Route]:
    """Send what ``route`` takes to its fake while the block runs (nested routes: the
    innermost one decides)."""
    if not _active:
        for name in _LIBRARIES:
            _patch(name)
    _active.append(route)
    try:
        yield route
    finally:
        _active.remove(route)
        if not _active:
            _unpatch()
