"""The cassettes an engine replays, and a recorded answer turned into the wire the writers send.

Each engine (each namespace) has its own ``Replays``: one ``Player`` per cassette, so the
positions of one test never move another's; on a shared store its plays are claims every worker
and replica makes together (``Player.claims``, ``ormock.engine.shared_counters``). A request under
``/v1`` is tried against them before anything else (``Engine.replay``): the first cassette with
an unused matching interaction answers, with the recorded status, headers, bytes and pauses
(divided by the engine's ``speed``; a vcrpy cassette, which has no timing, unpaced). Faults and
chaos are layered on a recorded 2xx answer as on a built one: a wire fault cuts or breaks the
recorded frames, an event fault changes the recorded events (and so re-frames them), an HTTP
error replaces the answer.

A namespace that records (the pytest plugin's ``--ormock-record``) has an ``Upstream``: a request
no interaction answers (every request, in the ``all`` and ``rewrite`` modes) raises ``Forward``,
and the server relays it to the upstream (``ormock.server.relay``) and gives the recorded
interaction back (``Engine.recorded``), kept in ``Replays.recorded`` in the order the requests
came.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ormock.cassette.fileformat import CassetteError, response_bytes
from ormock.cassette.matching import CassetteMiss, Order, Player
from ormock.cassette.model import Cassette, Interaction, RecordedResponse
from ormock.cassette.replay import answer_frames, header_pairs
from ormock.cassette.shape import load
from ormock.engine.entry_answer import answering, final_response, record
from ormock.engine.faulting import fault_reply, faults_for
from ormock.engine.journal import JournalEntry, summarize
from ormock.engine.render import render
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.reply import Reply
from ormock.protocol.secrets import mask_headers
from ormock.protocol.sse import json_events, parse_sse
from ormock.protocol.types import Json
from ormock.protocol.wire import Kind, Wire
from ormock.scenario.counters import Counters

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = [
    "CASSETTE_HEADER",
    "FORWARD_ALL",
    "ORIGIN_HEADER",
    "CassetteSkipped",
    "Forward",
    "Replayed",
    "Replays",
    "Upstream",
    "cassette_of",
    "cassettes_in",
    "recorded_wire",
    "replay",
]

# record modes that replay nothing: every request goes to the upstream
FORWARD_ALL = frozenset({"all", "rewrite"})
# where a request routed in process was going (``https://host[:port]``), and which cassette of
# those loaded a client wants its request answered from
ORIGIN_HEADER = "x-ormock-origin"
CASSETTE_HEADER = "x-ormock-cassette"


def _named(cassette: Cassette, name: str) -> bool:
    """Whether ``cassette``'s file is called ``name`` (with or without its suffix)."""
    if cassette.file is None:
        return False
    file = Path(cassette.file)
    return name in (file.name, file.stem)


class CassetteSkipped(UserWarning):
    """A file of a cassettes folder that could not be read (the others load)."""


def cassettes_in(path: str | PathLike[str], serializer: Any = None) -> list[Cassette]:
    """The cassettes of a file, or of every ``*.yaml``/``*.yml``/``*.json`` file in a folder
    (sorted; names starting with ``.`` are left out: temporary files of an atomic write). In a
    folder, a file that cannot be read is left out with a ``CassetteSkipped`` warning naming it
    and why; a file given by name that cannot be read is a ``CassetteError``. ``serializer``: a
    project's vcrpy serializer, which reads every file."""
    target = Path(path)
    if not target.is_dir():
        return [load(target, serializer)]
    files = sorted(p for p in target.iterdir() if p.is_file()
                   and p.suffix in (".yaml", ".yml", ".json") and not p.name.startswith("."))
    out = []
    for file in files:
        try:
            out.append(load(file, serializer))
        except CassetteError as error:
            warnings.warn(CassetteSkipped(f"skipped {error}"), stacklevel=2)
    return out


def cassette_of(source: Cassette | str | PathLike[str]) -> Cassette:
    return source if isinstance(source, Cassette) else load(source)


def _pairs(response: RecordedResponse) -> tuple[tuple[bytes, bytes], ...]:
    return tuple((name.encode("latin-1"), value.encode("latin-1"))
                 for name, value in header_pairs(response))


def recorded_wire(response: RecordedResponse, speed: float, timed: bool = True) -> Wire:
    """The wire of a recorded answer: its status, headers, and frames as recorded."""
    frames = tuple(answer_frames(response, speed, timed))
    kind: Kind = "sse" if response.streamed else "json"
    if kind == "json" and len(frames) == 1 and frames[0].action is None:
        return Wire("json", frames, response.status, _pairs(response))
    wire = Wire(kind, frames, response.status, _pairs(response))
    if kind == "sse" and response.ended == "whole" and not wire.has_terminal():
        return Wire(kind, frames, response.status, _pairs(response), "truncated")
    return wire


def recorded_events(response: RecordedResponse) -> list[Json]:
    if response.messages is None:
        return []
    return list(json_events(parse_sse(response_bytes(response))))


@dataclass(frozen=True)
class Replayed:
    """A request a cassette answered: which one, which interaction, and its wire."""

    cassette: Cassette
    index: int
    interaction: Interaction
    response: RecordedResponse
    headers_delay: float  # seconds before the status line, as recorded (over the speed)

    @property
    def timed(self) -> bool:
        return self.cassette.origin != "vcr"

    def wire(self, speed: float) -> Wire:
        return recorded_wire(self.response, speed, self.timed)

    def reply(self, speed: float) -> Reply:
        """The recorded answer as a planned reply, for faults to act on: the recorded events,
        sent as the recorded frames until a fault changes them."""
        headers = {name: value if isinstance(value, str) else value[-1]
                   for name, value in self.response.headers.items()
                   if name != "content-type"}
        events = recorded_events(self.response)
        if self.response.streamed:
            frames = answer_frames(self.response, speed, self.timed, per_message=True)
            return Reply(events=events, stream=True, headers=headers, frames=frames)
        return Reply(events=[], stream=False, headers=headers, body=response_bytes(
            self.response))


@dataclass(frozen=True)
class Upstream:
    """Where a recording namespace sends what its cassettes do not answer: ``url`` (a base URL
    such as ``https://api.openai.com/v1``), ``key`` (replaces the client's ``Authorization``
    towards it; None: the client's goes through), ``mode`` (the record mode: ``once`` and
    ``new_episodes`` forward the misses, ``all`` and ``rewrite`` every request)."""

    url: str
    key: str | None = None
    mode: str = "new_episodes"

    @property
    def forwards_all(self) -> bool:
        return self.mode in FORWARD_ALL


class Forward(Exception):
    """``Engine.replay``'s answer for a request to relay to the upstream; ``entry`` is its
    journal entry (filled in by ``Engine.recorded``), ``sequence`` its place among the
    requests."""

    def __init__(self, upstream: Upstream, entry: JournalEntry, sequence: int) -> None:
        super().__init__(f"forward {entry.method} {entry.path} to {upstream.mode} upstream")
        self.upstream = upstream
        self.entry = entry
        self.sequence = sequence


@dataclass
class Replays:
    """An engine's cassettes and how far each has been played; when it records, its upstream
    and what it recorded (``(sequence, interaction)``), and what could not be recorded."""

    players: list[Player] = field(default_factory=list)
    upstream: Upstream | None = None
    recorded: list[tuple[int, Interaction]] = field(default_factory=list)
    not_recorded: list[str] = field(default_factory=list)
    forwarded: int = 0

    @property
    def pending(self) -> int:
        """Forwarded requests whose answers are not all relayed yet (the client may have read
        the last byte before the server thread hands the interaction over)."""
        return self.forwarded - len(self.recorded) - len(self.not_recorded)

    def new_interactions(self) -> list[Interaction]:
        """What this namespace recorded, in the order its requests came."""
        return [interaction for _, interaction in sorted(self.recorded, key=lambda r: r[0])]

    def use(self, cassette: Cassette, ignore: Iterable[str] = (), order: Order = "any",
            claims: Counters | None = None, tag: str = "") -> Player:
        """Replay ``cassette`` too; ``claims`` and ``tag``: its plays are shared with other
        processes (``Player``)."""
        player = Player.of(cassette, ignore, order, claims, tag)
        self.players.append(player)
        return player

    def __bool__(self) -> bool:
        return bool(self.players)

    def take(self, method: str, path: str, query: str, body: Any, speed: float,
             socket: bool = False, headers: Mapping[str, str] | None = None) -> Replayed:
        """The interaction that answers, marked played; ``CassetteMiss`` (the closest one of
        all the cassettes) when none does. ``headers``: the request's, for where it was going
        (``X-Ormock-Origin``, set when it is routed in process) and which cassette it is for
        (``X-Ormock-Cassette: NAME``: only the cassettes of that file name, with or without
        its suffix)."""
        sent = {k.lower(): v for k, v in (headers or {}).items()}
        origin = sent.get(ORIGIN_HEADER)
        players = self.players
        wanted = sent.get(CASSETTE_HEADER)
        if wanted:
            players = [p for p in players if _named(p.cassette, wanted)]
            if not players:
                loaded = ", ".join(Path(p.cassette.file or "<cassette>").name
                                   for p in self.players)
                raise CassetteMiss(f"{method} {path}", reason=f"{CASSETTE_HEADER}: {wanted} "
                                   f"names no loaded cassette; loaded: {loaded}")
        misses: list[CassetteMiss] = []
        for player in players:
            try:
                index, interaction = player.take(method, path, query, body, socket, origin,
                                                 sent)
            except CassetteMiss as miss:
                misses.append(miss)
                continue
            response = interaction.response
            if response is None:  # a socket session, taken by the WebSocket path
                return Replayed(player.cassette, index, interaction,
                                RecordedResponse(101), 0.0)
            delay = 0.0 if speed <= 0 or player.cassette.origin == "vcr" \
                else response.headers_at / 1000 / speed
            return Replayed(player.cassette, index, interaction, response, delay)
        if not misses:
            raise CassetteMiss(f"{method} {path}")
        raise min(misses, key=lambda m: (m.closest is None, not m.used_up,
                                         len(m.differences)))

    def release(self, replayed: Replayed) -> None:
        """Play ``replayed``'s interaction again for the next request that matches it (a
        fault kept its answer from the client); in one process only (a shared store's claims
        only count up)."""
        for player in self.players:
            if player.cassette is replayed.cassette:
                player.unplay(replayed.index)

    def unused(self) -> list[tuple[Cassette, int, Interaction]]:
        for player in self.players:
            player.refresh()
        return [(p.cassette, i, p.cassette.interactions[i]) for p in self.players
                for i in p.unused()]

    def summary(self) -> list[Json]:
        """What the admin API shows of each cassette (what every worker played): how many
        interactions were played, which were not, and how often each was (``plays``: more
        than once in ``repeat`` order)."""
        return [{"file": p.cassette.file, "origin": p.cassette.origin,
                 "profile": p.cassette.profile, "order": p.order,
                 "interactions": len(p.used), "plays": counts,
                 "played": sum(1 for n in counts if n), "unused": p.unused()}
                for p in self.players for counts in [p.counts()]]


def replay(engine: Engine, method: str, path: str, query: str, body: Any,
           headers: Mapping[str, str], size: int) -> tuple[Replayed, Wire, JournalEntry]:
    """``Engine.replay`` (under the engine's lock): journal, match, faults, wire."""
    entry = JournalEntry(method, path, mask_headers(headers), body, at=engine.elapsed(),
                         size=size)
    engine.journal.append(entry)
    try:
        return _replayed(engine, entry, method, path, query, body, headers)
    finally:
        engine.journal.recount(entry)  # its answer's parts, or its error, counted too


def _replayed(engine: Engine, entry: JournalEntry, method: str, path: str, query: str,
              body: Any, headers: Mapping[str, str]) -> tuple[Replayed, Wire, JournalEntry]:
    """``replay``'s answer to a request journaled as ``entry``."""
    replays = engine.replays
    upstream = replays.upstream
    if upstream is not None and upstream.forwards_all:
        raise _forward(replays, upstream, entry)
    speed = engine.replay_speed if engine.replay_speed is not None else engine.speed
    try:
        replayed = replays.take(method, path, query, body, speed, headers=headers)
    except CassetteMiss as miss:
        if upstream is not None:
            raise _forward(replays, upstream, entry) from None
        with answering(entry, headers):
            raise _miss(miss) from None
    response = replayed.response
    faults = faults_for(engine, None, None) if 200 <= response.status < 300 else []
    out = (fault_reply(engine, replace(replayed.reply(speed), profile=engine.profile), faults,
                       entry) if faults else None)
    if out is not None and entry.faults:  # a fault struck: its answer, not the recorded one
        wire = render(out, "sse" if isinstance(out, Reply) and out.stream else "json")
        record(entry, out)
        replays.release(replayed)  # not delivered whole: left to the client's retry
    else:
        wire = replayed.wire(speed)
        events = [e for frame in wire.frames for e in frame.carried(wire.kind)]
        entry.status, entry.stream = response.status, response.streamed
        entry.sent = summarize(events, None) if wire.kind == "sse" else None
        final = final_response(events) if events else _json_response(response)
        if final is not None:
            entry.response_id, entry.response_status = final.get("id"), final.get("status")
        entry.ended = wire.ending
    entry.cassette, entry.interaction = replayed.cassette.file, replayed.index + 1
    return replayed, wire, entry


def _forward(replays: Replays, upstream: Upstream, entry: JournalEntry) -> Forward:
    replays.forwarded += 1
    return Forward(upstream, entry, replays.forwarded)


def recorded(engine: Engine, forward: Forward, interaction: Interaction | None,
             problem: str | None = None) -> None:
    """``Engine.recorded`` (under the engine's lock): keep what the upstream answered, and say
    so in the journal entry; ``interaction`` None: nothing was recordable (``problem`` why)."""
    try:
        _recorded(engine, forward, interaction, problem)
    finally:
        engine.journal.recount(forward.entry)  # what came back counted too


def _recorded(engine: Engine, forward: Forward, interaction: Interaction | None,
              problem: str | None) -> None:
    entry = forward.entry
    entry.finished_at = engine.elapsed()
    if interaction is None or interaction.response is None:
        engine.replays.not_recorded.append(
            f"{entry.method} {entry.path}: {problem or 'not recorded'}")
        entry.error = {"code": "not_recorded", "message": problem or "not recorded"}
        return
    engine.replays.recorded.append((forward.sequence, interaction))
    response = interaction.response
    entry.status, entry.stream, entry.ended = response.status, response.streamed, response.ended
    events = recorded_events(response)
    final = final_response(events) if events else _json_response(response)
    if final is not None:
        entry.response_id, entry.response_status = final.get("id"), final.get("status")
    if events:
        entry.sent = summarize(events, None)


def _miss(miss: CassetteMiss) -> OpenResponsesError:
    first = miss.differences[0].split(":", 1)[0] if miss.differences else "path"
    return OpenResponsesError(
        f"{miss.describe()}. Record it ({miss.how_to_record}), or make the request match "
        "the recording.",
        code="cassette_miss", param=first, status=400)


def _json_response(response: RecordedResponse) -> Json | None:
    body = response.body
    if body is None or not isinstance(body.json, dict):
        return None
    return body.json if body.json.get("object") == "response" else None
