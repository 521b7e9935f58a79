"""The recording proxy's journal and inspector page: ``ormock record`` serves ``/_ormock/`` as
``ormock serve`` does (the page, the live journal, one exchange, its export), read-only and
behind the same guard. Each relayed request is a journal entry from the moment it arrives; its
answer grows on the page as the upstream sends it, and once recorded the entry names the
cassette and interaction, with the frames as recorded."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette

from ormock.cassette.model import Interaction
from ormock.engine.entry_answer import final_response
from ormock.engine.feed import SentFrames
from ormock.engine.journal import JournalEntry, summarize
from ormock.engine.namespaces import Namespaces
from ormock.engine.replays import recorded_events, recorded_wire
from ormock.protocol.depth import loads
from ormock.protocol.secrets import MASK, mask_headers, scrub_json, scrub_values
from ormock.protocol.types import Message, Scope, Send
from ormock.server.inspector import inspector_routes

__all__ = ["RecorderJournal"]


class RecorderJournal:
    """A journal (one ``Engine``'s, the default namespace) and the inspector's routes over it."""

    def __init__(self, cassette: str) -> None:
        self.namespaces = Namespaces()
        self.engine = self.namespaces.get("")
        self.cassette = cassette
        self.app = Starlette(routes=inspector_routes(self.namespaces))

    @staticmethod
    def serves(scope: Scope) -> bool:
        """Whether the request is the inspector's (never relayed)."""
        return str(scope.get("path", "")).startswith("/_ormock/") or scope.get("path") == \
            "/_ormock"

    def opened(self, scope: Scope, raw: bytes, secrets: tuple[str, ...] = ()) -> JournalEntry:
        """A relayed request arrived; ``secrets``: the exact values taken out of all this
        entry shows (``secrets.secret_values``: the client's, the key the relay sends)."""
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        body: Any
        try:
            body = loads(raw) if raw else None
        except ValueError:  # (too deep to read as well: ``depth.loads``)
            body = raw.decode("utf-8", "replace")[:2000]
        shown = {name: scrub_values(value, secrets)
                 for name, value in mask_headers(headers).items()}
        entry = JournalEntry(scope["method"], scrub_values(scope["path"], secrets), shown,
                             scrub_json(body, secrets), at=self.engine.elapsed(),
                             size=len(raw))
        self.engine.journal.append(entry)
        return entry

    def watch(self, entry: JournalEntry, send: Send, secrets: tuple[str, ...] = ()) -> Send:
        """``send``, telling the live page each event as it goes out, ``secrets`` taken out of
        what the page is told (the client gets the bytes as the upstream sent them)."""
        if not secrets:
            return self.engine.feed.watch(entry, send, "sse")
        told = self.engine.feed.watch(entry, _unsent, "sse")
        if told is _unsent:  # nobody watches
            return send
        masks = [(s.encode("utf-8"), MASK.encode()) for s in secrets]

        async def watched(message: Message) -> None:
            await send(message)
            body = message.get("body")
            if body:
                for secret, mask in masks:
                    body = body.replace(secret, mask)
                message = {**message, "body": body}
            await told(message)

        return watched

    def closed(self, entry: JournalEntry, interaction: Interaction | None) -> None:
        """The exchange is over: what the upstream answered (None: nothing recordable), its
        secrets taken out already (``cassette.redact.scrubbed``)."""
        entry.finished_at = self.engine.elapsed()
        response = interaction.response if interaction is not None else None
        if response is None:
            entry.status = entry.status or 502
            entry.error = {"code": "not_recorded", "message": "nothing recordable came back"}
            self.engine.journal.recount(entry)  # its error counted too
            self.engine.feed.changed(entry)
            return
        entry.status, entry.stream, entry.ended = response.status, response.streamed, \
            response.ended
        entry.cassette = self.cassette  # recorded to it (its place there is known on saving)
        events = recorded_events(response)
        if events:
            entry.sent = summarize(events, None)
            final = final_response(events)
            if final is not None:
                entry.response_id, entry.response_status = final.get("id"), final.get("status")
        self.engine.journal.recount(entry)  # what the upstream sent counted too
        wire = recorded_wire(response, 1.0)
        self.engine.feed.keep(entry, SentFrames(
            wire.kind, wire.status, wire.headers,
            tuple((f.delay, f) for f in wire.frames if f.action is None)))


async def _unsent(message: Message) -> None:
    """A ``send`` that sends nothing: what the watchers are told through."""
