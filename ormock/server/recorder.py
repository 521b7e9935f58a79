"""``ormock record``: a proxy in front of a real provider that writes what it answers to a cassette.

Every request (any method and path) goes to the upstream: a path under ``/v1`` replaces the
upstream's own ``/v1`` (``/v1/responses`` with ``--upstream http://host/v1`` or
``http://host`` goes to ``http://host/v1/responses``), any other path is appended to the
upstream URL as given. The answer is relayed as it arrives: each chunk the upstream's socket
gives is written to the client at once, the same bytes (``aiter_raw``), never buffered, and
noted with its time (``ormock.cassette.recording.Recording``, ``time.monotonic``).

Encoding: the recorder asks the upstream for ``accept-encoding: identity``, so the bytes relayed
are the bytes recorded. An upstream that compresses anyway is relayed as it sent it (with its
``content-encoding``) and recorded decoded (gzip, deflate); another encoding is relayed and not
recorded.

How an answer ended is recorded as the upstream ended it: ``whole``; ``closed`` (the upstream
closed mid-body: the client's connection is closed there too); ``reset`` (the upstream reset
the connection: the client's is reset); ``stalled`` (the client left before the upstream
finished: a replay then sends nothing more until its client leaves). An upstream that cannot be
reached answers 502 with the Open Responses error envelope (``code: upstream_unreachable``); that
is the recorder's failure, not the provider's answer, so it is not recorded (nor is a request
whose client left before the upstream answered).

With ``upstream_key`` (``--upstream-key-env NAME``) the upstream gets ``Authorization: Bearer
KEY`` whatever the client sent, so a client can hold a dummy key. No key reaches the cassette:
secret headers are always redacted, and the file is scanned before every write
(``recorder_file``). WebSocket upgrades are proxied by ``recorder_socket``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import httpx
import uvicorn

from ormock.cassette.model import Ended, Interaction, RecordedRequest
from ormock.cassette.recording import HOP_BY_HOP, Recording, header_map
from ormock.cassette.redact import Redaction, SecretFound
from ormock.engine.writer import close_connection
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.types import Receive, Scope, Send
from ormock.server.recorder_file import CassetteFile, check_name, default_name, public_url
from ormock.server.runner import best_loop

__all__ = ["RecorderApp", "RecorderServer", "upstream_target"]

Log = Callable[[str], None]

# request headers that belong to the client's connection to the recorder, not to the upstream
_NOT_FORWARDED = frozenset({"host", "connection", "keep-alive", "proxy-connection", "te",
                            "trailer", "transfer-encoding", "upgrade", "content-length",
                            "accept-encoding", "proxy-authorization"})
# answer headers that belong to the upstream's connection to the recorder
_NOT_RELAYED = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer",
                          "transfer-encoding", "upgrade"})
_NOT_RECORDED = HOP_BY_HOP | {"host", "accept-encoding"}


def check_upstream(url: str) -> str:
    """An upstream base URL: http(s) with a host. ``ValueError`` says what to change."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--upstream {public_url(url)!r}: give an http:// or https:// URL, "
                         "such as https://api.openai.com/v1")
    return url.rstrip("/")


def upstream_target(upstream: str, path: str) -> str:
    """Where a request for ``path`` goes: ``/v1...`` replaces the upstream's own ``/v1``."""
    base = upstream.rstrip("/")
    if path == "/v1" or path.startswith("/v1/"):
        return base.removesuffix("/v1") + path
    return base + path


def _log_stderr(line: str) -> None:
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
        document = json.loads(text)
    except ValueError:
        return None, text
    return (document, None) if isinstance(document, dict) else (None, text)


def _decoder(encoding: str) -> Any:
    """A zlib decoder for a ``content-encoding``, or None when it is not gzip or deflate."""
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    return None


@dataclass
class _Exchange:
    """One request's state, shared by its relay and the watch on its client."""

    recording: Recording
    ended: Ended | None = None  # decided by the relay, before its last write
    answered: bool = False
    recordable: bool = True


class RecorderApp:
    """The ASGI app: relays to ``upstream`` and adds each finished interaction to ``file``."""

    def __init__(self, upstream: str, file: CassetteFile, *, upstream_key: str | None = None,
                 log: Log = _log_stderr, connect_timeout: float = 10.0) -> None:
        self.upstream = check_upstream(upstream)
        self.file = file
        self.upstream_key = upstream_key
        self.log = log
        self.connect_timeout = connect_timeout
        self.client: httpx.AsyncClient | None = None
        self._sequence = itertools.count()
        self._saving: asyncio.Lock | None = None

    @property
    def upstream_public(self) -> str:
        return public_url(self.upstream)

    def _client(self) -> httpx.AsyncClient:
        if self.client is None:
            self.client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.connect_timeout, read=None, write=60.0,
                                      pool=None),
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
                follow_redirects=False)
        return self.client

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            from ormock.server.recorder_socket import proxy_socket

            await proxy_socket(self, scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._client()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.client is not None:
                    await self.client.aclose()
                    self.client = None
                await send({"type": "lifespan.shutdown.complete"})
                return

    def forwarded_headers(self, scope: Scope, drop: frozenset[str] = _NOT_FORWARDED
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
                         drop: frozenset[str] = _NOT_RECORDED) -> RecordedRequest:
        pairs = [(name.decode("latin-1"), value.decode("latin-1"))
                 for name, value in scope["headers"]]
        document, text = _json_or_text(body)
        return RecordedRequest(method=scope.get("method", "GET"), path=scope["path"],
                               query=scope.get("query_string", b"").decode("latin-1"),
                               headers=header_map(pairs, drop), body=document, text=text)

    async def keep(self, sequence: int, interaction: Interaction, line: str) -> None:
        """Add a finished interaction to the file (in a thread: the write fsyncs), and log it;
        a refusal of the secret scan is logged, and the proxy goes on."""
        if self._saving is None:
            self._saving = asyncio.Lock()
        async with self._saving:
            try:
                await asyncio.to_thread(self.file.add, sequence, interaction)
            except SecretFound as refusal:
                self.log(f"ormock record: {line}: not recorded: {refusal}")
                return
            except OSError as error:
                self.log(f"ormock record: {line}: cannot write {self.file.path} ({error})")
                return
        self.log(line)

    def next_sequence(self) -> int:
        return next(self._sequence)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.monotonic()
        sequence = self.next_sequence()
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        exchange = _Exchange(Recording(self.recorded_request(scope, body), started=started))
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
        ended = exchange.ended
        if ended is None or not exchange.answered:
            if ended == "stalled":
                self.log(f"ormock record: {scope['method']} {scope['path']}: the client left "
                         "before the upstream answered: not recorded")
            return
        if not exchange.recordable:
            return
        interaction = exchange.recording.interaction(ended)
        await self.keep(sequence, interaction, _progress(interaction))

    async def _relay(self, scope: Scope, body: bytes, send: Send, exchange: _Exchange) -> None:
        target = upstream_target(self.upstream, scope["path"])
        query = scope.get("query_string", b"").decode("latin-1")
        client = self._client()
        request = client.build_request(
            scope["method"], target + (f"?{query}" if query else ""),
            headers=[*self.forwarded_headers(scope), ("accept-encoding", "identity")],
            content=body)
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as error:
            await self._unreachable(scope, send, exchange, error)
            return
        recording = exchange.recording
        try:
            pairs = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in response.headers.raw]
            recording.answer(response.status_code, pairs, time.monotonic())
            exchange.answered = True
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            decoder = None if encoding == "identity" else _decoder(encoding)
            if encoding != "identity" and decoder is None:
                exchange.recordable = False
                self.log(f"ormock record: {scope['method']} {scope['path']}: the upstream "
                         f"answered with content-encoding {encoding}: relayed, not recorded")
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": [(n, v) for n, v in response.headers.raw
                                    if n.decode("latin-1").lower() not in _NOT_RELAYED]})
            try:
                async for chunk in response.aiter_raw():
                    now = time.monotonic()
                    await send({"type": "http.response.body", "body": chunk,
                                "more_body": True})
                    recording.chunk(chunk if decoder is None else decoder.decompress(chunk),
                                    now)
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
            if close_connection(send, reset=exchange.ended == "reset"):
                await asyncio.sleep(0)  # let the server see the connection go
            else:  # not uvicorn: the body ends cleanly
                with contextlib.suppress(RuntimeError):
                    await send({"type": "http.response.body", "body": b"",
                                "more_body": False})
        finally:
            await response.aclose()

    async def _unreachable(self, scope: Scope, send: Send, exchange: _Exchange,
                           error: httpx.HTTPError) -> None:
        where = public_url(upstream_target(self.upstream, scope["path"]))
        reason = str(error) or type(error).__name__
        exchange.ended = "whole"  # answered by the recorder itself: nothing to record
        self.log(f"ormock record: {scope['method']} {scope['path']}: cannot reach the upstream "
                 f"{where} ({reason}): answered 502, not recorded")
        failure = OpenResponsesError(
            f"ormock record could not reach the upstream {where}: {reason}",
            type="server_error", code="upstream_unreachable", status=502)
        data = failure.body()
        await send({"type": "http.response.start", "status": 502,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data, "more_body": False})


async def _client_gone(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _progress(interaction: Interaction) -> str:
    """``POST /v1/responses 200 14 events 523 ms``: one line per recorded interaction."""
    request, response = interaction.request, interaction.response
    assert response is not None
    if response.messages is not None:
        count = sum(1 for m in response.messages if m.event is not None)
        what = f"{count} event{'s' if count != 1 else ''}"
    else:
        what = "body"
    ended = "" if response.ended == "whole" else f" ({response.ended})"
    return (f"{request.method} {request.target} {response.status} {what} "
            f"{response.end_at:.0f} ms{ended}")


class RecorderServer:
    """A running recorder on loopback, in a background thread (``start``/``stop``, or a context
    manager), or in this one (``serve_forever``). The socket is bound and the cassette file
    written (empty) when it is made: ``url`` and ``cassette`` are known at once.

    ``name``: the cassette's file name in ``cassettes`` (default ``recording-<UTC time>.yaml``);
    ``redact_headers``/``redact_paths``: taken out besides the secret headers; ``log``: where the
    per-interaction lines and refusals go (default stderr)."""

    def __init__(self, upstream: str, cassettes: str | Path, port: int = 0,
                 host: str = "127.0.0.1", *, name: str | None = None,
                 upstream_key: str | None = None, redact_headers: Sequence[str] = (),
                 redact_paths: Sequence[str] = (), profile: str = "openai",
                 log: Log | None = None, log_level: str = "warning") -> None:
        upstream = check_upstream(upstream)
        path = Path(cassettes) / check_name(name or default_name())
        self.file = CassetteFile(path, Redaction.of(redact_headers, redact_paths),
                                 profile=profile, upstream=upstream)
        self.app = RecorderApp(upstream, self.file, upstream_key=upstream_key,
                               log=log or _log_stderr)
        self._socket = socket.socket(
            socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._socket.bind((host, port))
            # listening at once: a client told the URL before uvicorn runs waits in the backlog
            self._socket.listen(2048)
            self.file.create()
        except BaseException:
            self._socket.close()
            raise
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        # as ``ormock serve`` runs (runner.uvicorn_config), with the lifespan on (the upstream
        # client's) and no Date or Server header of uvicorn's beside the upstream's
        config = uvicorn.Config(self.app, log_level=log_level, access_log=False,
                                loop=best_loop(), lifespan="on", proxy_headers=False,
                                server_header=False, date_header=False, host=host,
                                port=self.port, timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def cassette(self) -> Path:
        return self.file.path

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def start(self) -> RecorderServer:
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._server.run,
                                        kwargs={"sockets": [self._socket]},
                                        name="ormock-recorder", daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"ormock recorder on {self.url} failed to start")
            self._thread.join(0.005)
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until stopped (Ctrl-C: ``KeyboardInterrupt`` once stopped)."""
        try:
            self._server.run(sockets=[self._socket])
        finally:
            self._socket.close()
        if not self._server.started:
            raise RuntimeError(f"ormock recorder on {self.url} failed to start")

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        self._socket.close()

    def __enter__(self) -> RecorderServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"RecorderServer({self.url!r} -> {self.app.upstream_public!r})"
