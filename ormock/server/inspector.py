"""The inspector page under ``/_ormock/`` (and ``/<namespace>/_ormock/``), and its read-only data.

- ``GET /_ormock/``: the page (``ormock/server/page/``: plain HTML, CSS and one script, served
  with ``Content-Security-Policy: default-src 'self'``; no build step, no CDN).
- ``GET /_ormock/journal/stream``: the journal pushed live as Server-Sent Events: first every
  entry kept (``event: entry``), then each new or changed entry (``entry``), each event of a
  stream as it is written (``events``), and ``resync`` (then the stream ends; the page
  reconnects and gets the journal again) when the page read too slowly to keep up.
- ``GET /_ormock/journal/{id}``: one exchange (``ormock.server.exchange``): its timeline of
  events, what answered it, faults, the checker's findings, "copy as curl". At the root, an id
  of any namespace is found (ids are unique per server).
- ``GET /_ormock/journal/{id}/export?as=scenario|cassette``: the exchange as a file
  (``ormock.server.export``), as a download.

Every route is read-only and behind the admin API's guard (``guard.refusal``: loopback,
``Host``, ``Origin``). Everything sent is masked (``exchange``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ormock.engine.bounded import Bounded
from ormock.engine.core import Engine
from ormock.engine.feed import Watcher
from ormock.engine.journal import JournalEntry
from ormock.engine.namespaces import Namespaces
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.secrets import mask_json
from ormock.protocol.sse import encode_json
from ormock.server.answer_frames import kept_frames
from ormock.server.exchange import exchange, summary
from ormock.server.export import export_entry
from ormock.server.guard import refusal
from ormock.server.perimeter import address

__all__ = ["CSP", "inspector_routes"]

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
       "frame-ancestors 'none'")
_PAGE_FILES = {"": ("index.html", "text/html; charset=utf-8"),
               "inspector.js": ("inspector.js", "text/javascript; charset=utf-8"),
               "inspector.css": ("inspector.css", "text/css; charset=utf-8")}
_SECURITY = {"content-security-policy": CSP, "x-content-type-options": "nosniff",
             "referrer-policy": "no-referrer", "cache-control": "no-store",
             "x-frame-options": "DENY"}
_TICK = 0.25  # seconds between looks at entries still being answered (an error answer, say)
_PING = 15.0  # seconds between keep-alive comments
_PENDING = 200  # unfinished entries a live stream looks at each tick, at most

Endpoint = Callable[[Request], Coroutine[Any, Any, Response]]


def _page_file(name: str) -> bytes:
    return resources.files("ormock.server").joinpath("page").joinpath(name).read_bytes()


def _json(value: Any, status: int = 200) -> Response:
    return Response(encode_json(value), status_code=status, media_type="application/json",
                    headers=_SECURITY)


def _engines(namespaces: Namespaces, namespace: str | None) -> list[Engine]:
    names = [namespace] if namespace is not None else ["", *namespaces.names()]
    found = [namespaces.find(n) for n in dict.fromkeys(names)]
    return [e for e in found if e is not None]


def find_entry(namespaces: Namespaces, entry_id: str, namespace: str | None
               ) -> tuple[Engine, JournalEntry]:
    """The entry of that id (in ``namespace``, or in any for None), or a 404 that says so."""
    for engine in _engines(namespaces, namespace):
        entry = engine.journal.find(entry_id)
        if entry is not None:
            return engine, entry
    raise OpenResponsesError(
        f"No journal entry {entry_id!r}: ids are listed by GET /_ormock/journal (the journal "
        "keeps the newest entries only, and a reset empties it).", type="not_found",
        code="unknown_entry", param="id", status=404)


def _frame(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {encode_json(data)}\n\n".encode()


def inspector_routes(namespaces: Namespaces, admin_hosts: frozenset[str] = frozenset()
                     ) -> list[Route]:
    hosts = frozenset(address(h) for h in admin_hosts)
    feed = namespaces.feed

    def guarded(handler: Callable[[Request, str | None], Coroutine[Any, Any, Response]]
                ) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            refused = refusal(request, hosts)
            try:
                if refused is not None:
                    raise refused
                name = request.path_params.get("namespace")
                if name is not None:
                    namespaces.serve(name)  # 404 for a namespace nobody opened
                return await handler(request, name)
            except OpenResponsesError as error:
                return _json(error.envelope(), error.status)

        return endpoint

    async def page(request: Request, namespace: str | None) -> Response:
        name = request.url.path.rsplit("/", 1)[-1]
        data, kind = _page_file(_PAGE_FILES[name][0]), _PAGE_FILES[name][1]
        return Response(data, media_type=kind, headers=_SECURITY)

    async def detail(request: Request, namespace: str | None) -> Response:
        engine, entry = find_entry(namespaces, request.path_params["id"], namespace)
        base = str(request.base_url).rstrip("/")
        return _json(exchange(entry, kept_frames(engine, entry), base))

    async def export(request: Request, namespace: str | None) -> Response:
        engine, entry = find_entry(namespaces, request.path_params["id"], namespace)
        kind = request.query_params.get("as", "scenario")
        text, filename = export_entry(entry, kept_frames(engine, entry), kind)
        return Response(text, media_type="application/yaml", headers={
            **_SECURITY, "content-disposition": f'attachment; filename="{filename}"'})

    async def stream(request: Request, namespace: str | None) -> Response:
        headers = {**_SECURITY, "x-accel-buffering": "no"}
        if request.method == "HEAD":  # the headers only: a stream without end has no body to
            # drop, and would hold the connection (and a watcher) until the client leaves
            return Response(media_type="text/event-stream", headers=headers)
        watcher = Watcher(namespace)
        feed.watchers.add(watcher)

        async def messages() -> AsyncIterator[bytes]:
            # entries announced before their answer was done, the newest ones, looked at each
            # tick for a change no writer reports (an error answer, a Python caller's)
            pending: Bounded[str, tuple[JournalEntry, Any]] = Bounded(_PENDING)

            def state(entry: JournalEntry) -> Any:
                return (entry.status, entry.finished_at, entry.ended, entry.error is None)

            def announce(entry: JournalEntry) -> bytes:
                if entry.finished_at is None:
                    pending[entry.id] = (entry, state(entry))  # the newest: the last to go
                else:
                    pending.pop(entry.id, None)
                return _frame("entry", summary(entry))

            try:
                yield b"retry: 1000\n\n"
                for engine in _engines(namespaces, namespace):
                    for entry in list(engine.journal):
                        yield announce(entry)
                quiet = 0.0
                while not feed.closed:
                    message = await watcher.get(_TICK)
                    if message is None:
                        quiet += _TICK
                        for _, (entry, seen) in pending.entries():
                            if state(entry) != seen:
                                yield announce(entry)
                        if quiet >= _PING:
                            quiet = 0.0
                            yield b": ping\n\n"
                        continue
                    if message["kind"] == "resync":
                        yield _frame("resync", {"reason": "the page fell behind"})
                        return
                    owner = namespaces.find(message["namespace"])
                    found = owner.journal.find(message["id"]) if owner else None
                    if found is None or owner is None:
                        continue
                    if message["kind"] == "entry":
                        yield announce(found)
                    else:
                        yield _frame("events", {"id": found.id, "namespace": found.namespace,
                                                "offset_ms": message["offset_ms"],
                                                "events": mask_json(message["events"])})
            finally:
                feed.watchers.discard(watcher)

        return StreamingResponse(messages(), media_type="text/event-stream", headers=headers)

    routes: list[Route] = []
    for prefix in ("", "/{namespace:str}"):
        base = prefix + "/_ormock/"
        routes += [
            Route(base, guarded(page), methods=["GET"]),
            Route(base + "inspector.js", guarded(page), methods=["GET"]),
            Route(base + "inspector.css", guarded(page), methods=["GET"]),
            Route(base + "journal/stream", guarded(stream), methods=["GET"]),
            Route(base + "journal/{id:str}", guarded(detail), methods=["GET"]),
            Route(base + "journal/{id:str}/export", guarded(export), methods=["GET"]),
        ]
    return routes
