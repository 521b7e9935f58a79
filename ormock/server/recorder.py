"""``ormock record``: a proxy in front of a real provider that writes what it answers to a cassette.

Every request (any method and path) goes to the upstream through ``ormock.server.relay.Relay``
(where the path goes, how the answer is relayed as it arrives and recorded, how its end is
kept, the 502 for an unreachable upstream); each finished interaction is added to the session's
cassette file at once.

With ``upstream_key`` (``--upstream-key-env NAME``) the upstream gets ``Authorization: Bearer
KEY`` whatever the client sent, so a client can hold a dummy key. No key reaches the cassette:
secret headers are always redacted, and the file is scanned before every write
(``recorder_file``). WebSocket upgrades are proxied by ``recorder_socket``. ``/_ormock/`` is
not relayed: it is the inspector page over the proxy's own journal (``recorder_journal``).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import uvicorn

from ormock.cassette.model import Interaction
from ormock.cassette.redact import Redaction, SecretFound, scrubbed
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.secrets import mask_query, scrub_values, secret_values
from ormock.protocol.types import Message, Receive, Scope, Send
from ormock.server.body import DEFAULT_MAX_BODY, read_body, send_whole
from ormock.server.http_protocol import HttpProtocol
from ormock.server.perimeter import Perimeter
from ormock.server.recorder_file import CassetteFile, check_name, default_name
from ormock.server.recorder_journal import RecorderJournal
from ormock.server.relay import (
    Log,
    Relay,
    check_upstream,
    log_stderr,
    relayed_path,
    upstream_target,
)
from ormock.server.runner import best_loop
from ormock.server.shutdown import Server
from ormock.server.threaded import ThreadedServer, bound_socket, tell_stopping

__all__ = ["RecorderApp", "RecorderServer", "check_upstream", "upstream_target"]


class RecorderApp(Relay):
    """The ASGI app: relays to ``upstream`` (``Relay``) and adds each finished interaction to
    ``file``."""

    def __init__(self, upstream: str, file: CassetteFile, *, upstream_key: str | None = None,
                 log: Log = log_stderr, connect_timeout: float = 10.0,
                 max_body: int = DEFAULT_MAX_BODY) -> None:
        known = secret_values({}, "", upstream_key)  # never in a line it logs
        super().__init__(upstream, upstream_key=upstream_key,
                         log=lambda line: log(scrub_values(line, known)),
                         connect_timeout=connect_timeout)
        self.file = file
        self.max_body = max_body  # a request body past it is 413, never relayed
        # the journal of what was relayed, and the inspector page over it (/_ormock/)
        self.journal = RecorderJournal(file.path.name)
        self._sequence = itertools.count()
        self._saving: asyncio.Lock | None = None

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
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

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
        if self.journal.serves(scope):  # the inspector page and its data: never relayed
            await self.journal.app(scope, receive, send)
            return
        started = time.monotonic()
        sequence = self.next_sequence()  # its place in the cassette: in order of arrival
        gone = False

        async def watched() -> Message:
            nonlocal gone
            message = await receive()
            gone = gone or message["type"] == "http.disconnect"
            return message

        try:
            target = relayed_path(scope)
            declared = dict(scope["headers"]).get(b"content-length", b"").decode("latin-1")
            raw = await read_body(watched, declared, self.max_body)
        except OpenResponsesError as refusal:  # nothing of it relayed; a body left unread
            await send_whole(send, refusal.status, refusal.body(),  # ends the connection
                             {"connection": "close"} if refusal.status == 413 else None)
            return
        if gone:  # the client left before its body was in: nothing to relay
            return
        # the exact secrets it sends (the client's, or the key it puts in their place): taken
        # out of what it journals and records, in whatever form the upstream echoes them
        secrets = secret_values(
            {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]},
            scope.get("query_string", b"").decode("latin-1"), self.upstream_key)
        entry = self.journal.opened(scope, raw, secrets)
        interaction = await self.exchange(scope, raw, receive,
                                          self.journal.watch(entry, send, secrets),
                                          target=target, started=started)
        if interaction is not None:
            interaction = scrubbed(interaction, secrets)
        self.journal.closed(entry, interaction)
        if interaction is not None:
            await self.keep(sequence, interaction, progress(interaction))


def progress(interaction: Interaction) -> str:
    """``POST /v1/responses 200 14 events 523 ms``: one line per recorded interaction."""
    request, response = interaction.request, interaction.response
    assert response is not None
    if response.messages is not None:
        count = sum(1 for m in response.messages if m.event is not None)
        what = f"{count} event{'s' if count != 1 else ''}"
    else:
        what = "body"
    ended = "" if response.ended == "whole" else f" ({response.ended})"
    target = replace(request, query=mask_query(request.query)).target  # no key in a log
    return (f"{request.method} {target} {response.status} {what} "
            f"{response.end_at:.0f} ms{ended}")


class RecorderServer(ThreadedServer):
    """A running recorder on loopback, in a background thread (``start``/``stop``, or a context
    manager), or in this one (``serve_forever``). The socket is bound and the cassette file
    written (empty) when it is made: ``url`` and ``cassette`` are known at once.

    ``name``: the cassette's file name in ``cassettes`` (default ``recording-<UTC time>.yaml``);
    ``redact_headers``/``redact_paths``: taken out besides the secret headers; ``log``: where the
    per-interaction lines and refusals go (default stderr); ``max_body``: the largest request
    body relayed (``--max-body``); ``allowed_hosts``: names it answers to besides loopback
    names and addresses (``--allowed-host``; the perimeter of ``ormock.server.perimeter``)."""

    label = "ormock recorder"

    def __init__(self, upstream: str, cassettes: str | Path, port: int = 0,
                 host: str = "127.0.0.1", *, name: str | None = None,
                 upstream_key: str | None = None, redact_headers: Sequence[str] = (),
                 redact_paths: Sequence[str] = (), profile: str = "openai",
                 log: Log | None = None, log_level: str = "warning",
                 max_body: int = DEFAULT_MAX_BODY, allowed_hosts: Sequence[str] = ()) -> None:
        upstream = check_upstream(upstream)
        path = Path(cassettes) / check_name(name or default_name())
        self.file = CassetteFile(path, Redaction.of(redact_headers, redact_paths),
                                 profile=profile, upstream=upstream)
        self.app = RecorderApp(upstream, self.file, upstream_key=upstream_key,
                               log=log or log_stderr, max_body=max_body)
        self._socket = bound_socket(host, port)  # a client told the URL early waits
        try:
            self.file.create()
        except BaseException:
            self._socket.close()
            raise
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        # uvicorn's plain protocol noting its connections (an upstream's close or reset is
        # passed on: ``ormock.server.http_protocol``; no front: every request is relayed as it
        # came), behind the perimeter, with the lifespan on (the upstream client's) and no Date
        # or Server header of uvicorn's beside the upstream's
        # the answers in flight when it stops are cut short quietly, one line in the log saying
        # how many (``ormock.server.shutdown``)
        config = uvicorn.Config(Perimeter(self.app, allowed_hosts), log_level=log_level,
                                access_log=False, http=HttpProtocol,
                                loop=best_loop(), lifespan="on", proxy_headers=False,
                                server_header=False, date_header=False, host=host,
                                port=self.port, timeout_graceful_shutdown=1)
        self._server = tell_stopping(Server(config, say=log or log_stderr), self._stopping)

    @property
    def cassette(self) -> Path:
        return self.file.path

    def _stopping(self) -> None:
        """The inspector's live journal ends (a page open is no answer to cut short)."""
        self.app.journal.namespaces.feed.close()

    def __repr__(self) -> str:
        return f"RecorderServer({self.url!r} -> {self.app.upstream_public!r})"
