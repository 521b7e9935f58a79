"""Relaying one HTTP request to a real provider and recording the answer as it arrives.

``Relay.exchange`` sends a request to the upstream and writes its answer to the client as it
comes: each chunk the upstream's socket gives is written at once, the same bytes
(``aiter_raw``), never buffered, and noted with its time (``ormock.cassette.recording``,
``time.monotonic``). It returns the interaction to record, or None when there is none. Both
recorders use it: ``ormock record`` (``recorder.RecorderApp``, which writes each interaction to
its cassette file) and a namespace of the ormock server that records (the pytest plugin's
``--ormock-record``: a cassette miss goes to the upstream, ``server.replay``).

A path under ``/v1`` replaces the upstream's own ``/v1`` (``/v1/responses`` with upstream
``http://host/v1`` or ``http://host`` goes to ``http://host/v1/responses``), any other path is
appended to the upstream URL as given.

Encoding: the relay asks the upstream for ``accept-encoding: identity``, so the bytes relayed
are the bytes recorded. An upstream that compresses anyway is relayed as it sent it (with its
``content-encoding``) and recorded decoded (gzip, deflate); another encoding is relayed and not
recorded.

How an answer ended is recorded as the upstream ended it: ``whole``; ``closed`` (the upstream
closed mid-body: the client's connection is closed there too); ``reset`` (the upstream reset
the connection: the client's is reset); ``stalled`` (the client left before the upstream
finished: a replay then sends nothing more until its client leaves). An upstream that cannot be
reached answers 502 with the Open Responses error envelope (``code: upstream_unreachable``); that
is the relay's failure, not the provider's answer, so it is not recorded (nor is a request whose
client left before the upstream answered).

With ``upstream_key`` the upstream gets ``Authorization: Bearer KEY`` whatever the client sent,
so a client can hold a dummy key.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from ormock.cassette.encoding import InflateError, Inflater
from ormock.cassette.model import Ended, Interaction, RecordedRequest
from ormock.cassette.recording import HOP_BY_HOP, Recording, header_map
from ormock.engine.writer import close_connection, cut_short
from ormock.protocol.depth import loads
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.types import Receive, Scope, Send
from ormock.server.recorder_file import public_url

__all__ = ["Log", "Relay", "check_upstream", "escaped_path", "relayed_path", "upstream_target"]

Log = Callable[[str], None]

# request headers that belong to the client's connection to the relay, not to the upstream
NOT_FORWARDED = frozenset({"host", "connection", "keep-alive", "proxy-connection", "te",
                           "trailer", "transfer-encoding", "upgrade", "content-length",
                           "accept-encoding", "proxy-authorization",
                           # ormock's own: where a request routed in process was going, and
                           # the cassette it asks for (``ormock.engine.replays``)
                           "x-ormock-origin", "x-ormock-cassette"})
# answer headers that belong to the upstream's connection to the relay
_NOT_RELAYED = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer",
                          "transfer-encoding", "upgrade"})
NOT_RECORDED = HOP_BY_HOP | {"host", "accept-encoding", "x-ormock-origin", "x-ormock-cassette"}


def check_upstream(url: str) -> str:
    """An upstream base URL: http(s) with a host. ``ValueError`` says what to change."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--upstream {public_url(url)!r}: give an http:// or https:// URL, "
                         "such as https://api.openai.com/v1")
    return url.rstrip("/")


def relayed_path(scope: Scope, prefix: str = "") -> str:
    """The path the upstream gets: exactly the one the client sent (its ``raw_path``, each
    escape kept: a ``%3F`` stays in the path, never becomes a query), less a namespace's
    ``/<prefix>``. 400 ``invalid_path`` for a target that is no path (``*``) or one with a
    ``.`` or ``..`` segment, escaped or not, which could reach past the upstream's base URL."""
    path = scope["path"]
    if not path.startswith("/"):
        raise _bad_path(f"The request target {path[:100]!r} is not a path; the relay sends "
                        "only paths that start with '/' to the upstream.")
    if any(segment in (".", "..") for segment in re.split(r"[/\\]", path)):
        raise _bad_path(f"The path {path[:200]!r} has a '.' or '..' segment (escaped or not), "
                        "which could reach past the upstream's base URL; send the path "
                        "without it.")
    raw = scope.get("raw_path") or escaped_path(path).encode("ascii")
    text = raw.decode("latin-1")
    return text[len(prefix) + 1:] if prefix and text.startswith(f"/{prefix}/") else text


def escaped_path(path: str) -> str:
    """A decoded path as a URL writes it: RFC 3986's path characters kept, anything else
    escaped (a ``?`` or ``#`` the path held stays in the path, never a query or fragment)."""
    return quote(path, safe="/:@!$&'()*+,;=")


def _bad_path(message: str) -> OpenResponsesError:
    return OpenResponsesError(message, code="invalid_path", param="path", status=400)


def upstream_target(upstream: str, path: str) -> str:
    """Where a request for ``path`` goes: ``/v1...`` replaces the upstream's own ``/v1``."""
    base = upstream.rstrip("/")
    if path == "/v1" or path.startswith("/v1/"):
        return base.removesuffix("/v1") + path
    return base + path


def log_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _json_or_text(body: bytes) -> tuple[Any, str | None]:
    """A request body as a cassette keeps it: a JSON object, or text."""
    if not body:
        return None, None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None, body.decode("utf-8", "replace")
    try:
        document = loads(text)
    except ValueError:  # (too deep to read as well: ``depth.loads``)
        return None, text
    return (document, None) if isinstance(document, dict) else (None, text)


def _decoder(encoding: str) -> Inflater | None:
    """A bounded decoder for a ``content-encoding``, or None when it is not gzip or deflate."""
    return Inflater(encoding) if encoding in ("gzip", "x-gzip", "deflate") else None


@dataclass
class _Exchange:
    """One request's state, shared by its relay and the watch on its client."""

    recording: Recording
    path: str  # as the cassette keeps it (decoded)
    target: str  # as the upstream gets it (``relayed_path``)
    ended: Ended | None = None  # decided by the relay, before its last write
    answered: bool = False
    recordable: bool = True


class Relay:
    """Relays requests to ``upstream``. ``pooled``: one HTTP client for every request (made on
    first use in the serving loop, closed by ``aclose``); otherwise one per request, closed when
    its answer ends (for a server whose lifespan the relay does not own)."""

    def __init__(self, upstream: str, *, upstream_key: str | None = None,
                 log: Log = log_stderr, connect_timeout: float = 10.0, pooled: bool = True,
                 name: str = "ormock record") -> None:
        self.upstream = check_upstream(upstream)
        self.upstream_key = upstream_key
        self.log = log
        self.connect_timeout = connect_timeout
        self.pooled = pooled
        self.name = name  # how log lines and the 502 name the relay
        self.client: httpx.AsyncClient | None = None

    @property
    def upstream_public(self) -> str:
        return public_url(self.upstream)

    def _new_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            timeout=httpx.Timeout(self.connect_timeout, read=None, write=60.0, pool=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
            follow_redirects=False)

    def _client(self) -> httpx.AsyncClient:
        if self.client is None:
            self.client = self._new_client()
        return self.client

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None

    def forwarded_headers(self, scope: Scope, drop: frozenset[str] = NOT_FORWARDED
                          ) -> list[tuple[str, str]]:
        """The client's headers as the upstream gets them (the key replaced, when given)."""
        pairs = [(name.decode("latin-1"), value.decode("latin-1"))
                 for name, value in scope["headers"]]
        out = [(n, v) for n, v in pairs if n.lower() not in drop
               and not (self.upstream_key is not None and n.lower() == "authorization")]
        if self.upstream_key is not None:
            out.append(("authorization", f"Bearer {self.upstream_key}"))
        return out

    def recorded_request(self, scope: Scope, body: bytes = b"",
                         drop: frozenset[str] = NOT_RECORDED,
                         path: str | None = None) -> RecordedRequest:
        pairs = [(name.decode("latin-1"), value.decode("latin-1"))
                 for name, value in scope["headers"]]
        document, text = _json_or_text(body)
        return RecordedRequest(method=scope.get("method", "GET"), path=path or scope["path"],
                               query=scope.get("query_string", b"").decode("latin-1"),
                               headers=header_map(pairs, drop), body=document, text=text)

    async def exchange(self, scope: Scope, body: bytes, receive: Receive, send: Send, *,
                       path: str | None = None, target: str | None = None,
                       started: float | None = None) -> Interaction | None:
        """Relay one request (its ``body`` read already) and its answer; the interaction to
        record, or None (unreachable upstream, client gone before the answer, an encoding not
        recorded, an answer the server cut short as it stopped: ``writer.cut_short``).
        ``path``: the path recorded when it is not the scope's (a namespace's ``/<ns>/v1/...``
        is ``/v1/...`` there); ``target``: the path the upstream gets
        (``relayed_path``, checked by the caller; the scope's own by default)."""
        path = path or scope["path"]
        began = time.monotonic() if started is None else started
        exchange = _Exchange(Recording(self.recorded_request(scope, body, path=path),
                                       started=began), path, target or relayed_path(scope))
        relay = asyncio.create_task(self._relay(scope, body, send, exchange))
        watch = asyncio.create_task(_client_gone(receive))
        try:
            await asyncio.wait((relay, watch), return_when=asyncio.FIRST_COMPLETED)
            if not relay.done() and exchange.ended is None:  # the client left first
                relay.cancel()
                exchange.ended = "stalled"
            with contextlib.suppress(asyncio.CancelledError):
                await relay
        finally:
            watch.cancel()
            relay.cancel()
        if cut_short():  # the server stopped mid-answer, not the client: nothing to say of it
            return None
        ended = exchange.ended
        if ended is None or not exchange.answered:
            if ended == "stalled":
                self.log(f"{self.name}: {scope['method']} {path}: the client left before the "
                         "upstream answered: not recorded")
            return None
        if not exchange.recordable:
            return None
        return exchange.recording.interaction(ended)

    async def _relay(self, scope: Scope, body: bytes, send: Send, exchange: _Exchange) -> None:
        target = upstream_target(self.upstream, exchange.target)
        query = scope.get("query_string", b"").decode("latin-1")
        own = None if self.pooled else self._new_client()
        client = own or self._client()
        try:
            request = client.build_request(
                scope["method"], target + (f"?{query}" if query else ""),
                headers=[*self.forwarded_headers(scope), ("accept-encoding", "identity")],
                content=body)
            try:
                response = await client.send(request, stream=True)
            except httpx.HTTPError as error:
                await self._unreachable(scope, send, exchange, error)
                return
            try:
                await self._answer(scope, send, exchange, response)
            finally:
                await response.aclose()
        finally:
            if own is not None:
                await own.aclose()

    async def _answer(self, scope: Scope, send: Send, exchange: _Exchange,
                      response: httpx.Response) -> None:
        recording = exchange.recording
        pairs = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in response.headers.raw]
        recording.answer(response.status_code, pairs, time.monotonic())
        exchange.answered = True
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        decoder = None if encoding == "identity" else _decoder(encoding)
        if encoding != "identity" and decoder is None:
            exchange.recordable = False
            self.log(f"{self.name}: {scope['method']} {exchange.path}: the upstream answered "
                     f"with content-encoding {encoding}: relayed, not recorded")
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": [(n, v) for n, v in response.headers.raw
                                if n.decode("latin-1").lower() not in _NOT_RELAYED]})
        try:
            async for chunk in response.aiter_raw():
                now = time.monotonic()
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if not exchange.recordable:  # relayed only: nothing more kept of it
                    continue
                try:
                    recording.chunk(chunk if decoder is None else decoder.decompress(chunk), now)
                except InflateError as error:  # a bomb, or not the encoding: relayed only
                    decoder, exchange.recordable = None, False
                    self.log(f"{self.name}: {scope['method']} {exchange.path}: {error}: "
                             "relayed, not recorded")
        except httpx.ReadError:  # ECONNRESET
            exchange.ended = "reset"
        except httpx.HTTPError:  # closed mid-body (RemoteProtocolError), or a timeout
            exchange.ended = "closed"
        else:
            if decoder is not None:
                recording.chunk(decoder.flush(), time.monotonic())
            exchange.ended = "whole"
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        if close_connection(reset=exchange.ended == "reset"):
            await asyncio.sleep(0)  # let the server see the connection go
        else:  # no connection noted (not ormock's HTTP protocol): the body ends cleanly
            with contextlib.suppress(RuntimeError):
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _unreachable(self, scope: Scope, send: Send, exchange: _Exchange,
                           error: httpx.HTTPError) -> None:
        where = public_url(upstream_target(self.upstream, exchange.target))
        reason = str(error) or type(error).__name__
        exchange.ended = "whole"  # answered by the relay itself: nothing to record
        self.log(f"{self.name}: {scope['method']} {exchange.path}: cannot reach the upstream "
                 f"{where} ({reason}): answered 502, not recorded")
        failure = OpenResponsesError(
            f"{self.name} could not reach the upstream {where}: {reason}",
            type="server_error", code="upstream_unreachable", status=502)
        data = failure.body()
        await send({"type": "http.response.start", "status": 502,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data, "more_body": False})


async def _client_gone(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
