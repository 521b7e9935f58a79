"""One answer's life while it is written, the same for a create over HTTP, a WebSocket turn and
a replayed cassette: ``begin`` before its first byte, ``over`` after its last (or once the
client left); an answer written in one go with nothing to wait for is ``at_once``, over before its
one write. The writers (``ormock.server``) call these and nothing else of the engine's.

``over`` records what went out in the journal's entry, finishes the entry (on a shared
journal, ``ahead`` did so just before the last write when the answer ended as planned), keeps
the frames for the inspector (bounded) and tells its watchers; for an answer with a stored
response (``stateful``) it also settles the response and its idempotency claim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ormock.engine.entry_answer import wrote
from ormock.engine.journal import JournalEntry
from ormock.engine.journal_sink import WrittenAhead
from ormock.engine.stateful import Claim
from ormock.protocol.types import Send
from ormock.protocol.wire import Frame, Wire, Written

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = ["Delivery", "InFlight"]


class InFlight:
    """How many answers a server is writing now (the tests check that none outlives its
    client)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


class Delivery:
    """The journal's ``entry`` of an answer, the ``wire`` it writes, and what its end settles
    (``claim``: an idempotency key's; ``stateful``: its response is a stored one)."""

    __slots__ = ("ahead", "claim", "engine", "entry", "flight", "stateful", "wire")

    def __init__(self, engine: Engine, entry: JournalEntry, wire: Wire | None = None, *,
                 claim: Claim | None = None, stateful: bool = True,
                 flight: InFlight | None = None) -> None:
        self.engine, self.entry, self.wire = engine, entry, wire
        self.claim, self.stateful, self.flight = claim, stateful, flight
        # a shared journal has the entry whole before the client has the answer's last bytes
        self.ahead = (WrittenAhead(entry, engine.finished) if engine.sharing.shared
                      else None)

    def begin(self) -> None:
        """The answer is about to be written: its response is generating."""
        if self.flight is not None:
            self.flight.count += 1
        if self.stateful:
            self.engine.writing(self.entry)

    def watch(self, send: Send) -> Send:
        """``send``, or, while the inspector watches, a ``send`` that tells it each event."""
        feed = self.engine.feed
        if not feed.watchers or self.wire is None:
            return send
        return feed.watch(self.entry, send, self.wire.kind)

    def told(self) -> Callable[[Frame], None] | None:
        """For a WebSocket turn's writer: what tells the inspector each frame (None when
        nobody watches)."""
        return self.engine.feed.told(self.entry)

    def at_once(self, written: Written) -> None:
        """The answer goes out in one write, made just after this call with nothing to wait
        for (``written``: what it will be, ``writer.at_once``): over before its first byte,
        not begun (its response is never seen generating, and it is in no flight)."""
        if self.ahead is not None:
            self.ahead(written)
        self._ended(written)

    def over(self, written: Written | None) -> None:
        """The answer is over (``written``: what went out; None: nothing did)."""
        if self.flight is not None:
            self.flight.count -= 1
        self._ended(written)

    def _ended(self, written: Written | None) -> None:
        """What the end of an answer settles: the entry, the response, the frames kept."""
        entry, ahead, engine = self.entry, self.ahead, self.engine
        covered = ahead is not None and ahead.covers(written)
        try:
            if written is not None and not covered:
                wrote(entry, written)
        finally:
            if self.stateful:
                engine.settle(entry, written, self.claim)
            if not covered:
                engine.finished(entry)
            wire = self.wire
            if written is not None and wire is not None:
                engine.feed.sent(entry, wire.status, wire.headers, written)
