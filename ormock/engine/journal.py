"""The request journal: what each request was, what answered it, and what went back."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from operator import attrgetter, itemgetter
from typing import Any, ClassVar, NamedTuple

from ormock.engine.capped import Capped
from ormock.protocol.events import ITEM_ADDED, ITEM_DONE
from ormock.protocol.secrets import SECRET_HEADERS as SECRET_HEADERS  # the old import path
from ormock.protocol.secrets import mask_headers
from ormock.protocol.types import Json
from ormock.protocol.wire import Ended

__all__ = [
    "ENTRY_FIELDS",
    "FIELDS",
    "Ended",
    "Journal",
    "JournalEntry",
    "Sent",
    "counted",
    "entry_size",
    "events_of",
    "fields_of",
    "masked",
    "opened",
    "summarize",
]



def masked(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers with secrets replaced, as the journal keeps them (``ormock.protocol.secrets``)."""
    return mask_headers(headers)


class Sent(NamedTuple):
    """What a reply sent, in a few flat tuples whatever the size of the stream: the type and
    sequence number of each event, the planned delay before each (None: unpaced), and the ids
    of the output items (and call ids) the client saw. Immutable (a named tuple; one is made
    for every answer)."""

    types: tuple[str, ...]
    numbers: tuple[Any, ...]
    delays: tuple[float, ...] | None
    output_ids: tuple[str, ...]


_ITEM_EVENTS = frozenset((ITEM_ADDED, ITEM_DONE))
_TYPE, _NUMBER = itemgetter("type"), itemgetter("sequence_number")


def summarize(events: list[Json], delays: list[float] | None) -> Sent:
    """What ``events`` are: their types and numbers read all at once when every event has both
    (a built stream always does), else event by event, then the item events looked at for
    their ids."""
    kinds: tuple[Any, ...]
    try:
        kinds, numbers = tuple(map(_TYPE, events)), tuple(map(_NUMBER, events))
    except KeyError:  # a literal event may lack either
        kinds = tuple([e.get("type") for e in events])
        numbers = tuple([e.get("sequence_number") for e in events])
    # nor need a literal event's type be text: it is journaled as text
    types: tuple[str, ...] = kinds if set(map(type, kinds)) <= {str} else tuple(map(str, kinds))
    output_ids: list[str] = []
    for index, kind in enumerate(types):
        if kind in _ITEM_EVENTS and isinstance(item := events[index].get("item"), dict):
            output_ids += [v for k in ("id", "call_id")
                           if isinstance(v := item.get(k), str) and v not in output_ids]
    return Sent(
        types=types,
        numbers=numbers,
        delays=tuple(delays) if delays is not None else None,
        output_ids=tuple(output_ids),
    )


@dataclass
class JournalEntry:
    """One request the fake received and what it sent back.

    ``at``: seconds since the engine started when the request arrived. ``events``: each event
    sent, as ``{"type", "sequence_number", "offset_ms"}`` (planned offset from the first byte;
    after a wire fault, only the events that went out whole before the cut).
    ``reply_headers``: the headers the reply itself set (``retry-after``, ``retry-after-ms``,
    ``x-should-retry``, ...; not the server's usual ones). ``ended``: how the answer ended on
    the wire (``Ended``), as the writer reported it (for a Python caller, whose reply is never
    written, as planned). ``sent_bytes``: the bytes the writer sent (the HTTP body, or the
    WebSocket turn's text frames; None when nothing was written). ``output_ids``: the ids of
    the output items the client was sent, and the ``call_id`` of each function call among
    them. ``finished_at``: seconds since the engine started when the answer was all written,
    dropped, or the client left (``None`` for an error answer, and while it is being written).
    ``id``: stable and unique per server (``GET /_ormock/journal/{id}``).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float = 0.0
    # its id, unique across the server's namespaces (``e1``, ``e2``, ...: ``Feed.new_id``),
    # and its namespace ("" for /v1): set when the entry joins a journal
    id: str = ""
    namespace: str = ""
    size: int = 0  # the request body's length in bytes
    status: int = 0
    stream: bool = False
    response_id: str | None = None
    response_status: str | None = None
    error: dict[str, Any] | None = None
    scenario: str | None = None
    step: int | None = None
    # whether the answer used up a use of its step: False when a fault ended the attempt
    # and the step waits for the retry (``ormock.engine.step_uses``); None: no step answered
    step_used: bool | None = None
    # a replayed answer: the cassette file and the interaction's number in it (from 1)
    cassette: str | None = None
    interaction: int | None = None
    faults: list[str] = field(default_factory=list)
    # where each of them took effect, as the fault machinery recorded it when applying it
    # (``ormock.faults.Strike.to_dict``: fault, event index, frame, byte offset, what)
    struck: list[dict[str, Any]] = field(default_factory=list)
    # server-wide faults left out of this answer because they cannot exist on its transport
    # (an SSE framing fault drawn for a WebSocket turn)
    skipped: list[str] = field(default_factory=list)
    # what was sent, in flat tuples (memory per entry stays small whatever the stream)
    sent: Sent | None = field(default=None, repr=False, compare=False)
    reply_headers: dict[str, str] = field(default_factory=dict)
    ended: Ended = "whole"
    sent_bytes: int | None = None
    finished_at: float | None = None
    # what a journal counts it at (``counted``) and its ``request_size``, once counted: plain
    # attributes (no instance dict made for them), in no ``to_dict`` and no comparison
    _counted: int | None = field(default=None, init=False, repr=False, compare=False)
    _request_counted: int | None = field(default=None, init=False, repr=False, compare=False)
    # the fault lists as set on the entry (``faults``, ``struck``, ``skipped`` are properties
    # over them: ``_fault_list``); the class's None until one is set or read
    _faults: ClassVar[list[str] | None] = None
    _struck: ClassVar[list[dict[str, Any]] | None] = None
    _skipped: ClassVar[list[str] | None] = None

    @property
    def events(self) -> list[dict[str, Any]]:
        sent = self.sent
        return [] if sent is None else events_of(sent.types, sent.numbers, sent.delays)

    @property
    def output_ids(self) -> list[str]:
        return list(self.sent.output_ids) if self.sent else []

    @property
    def answered_by(self) -> dict[str, Any]:
        """What answered the request: a scenario's step, a cassette's interaction, the
        upstream of ``ormock record`` (recorded to a cassette), the embedded default, or
        nothing (an error; a miss names its closest step in the message)."""
        if self.cassette is not None and self.interaction is None:  # ormock record's
            return {"kind": "recorded", "cassette": self.cassette}
        if self.cassette is not None:
            return {"kind": "cassette", "cassette": self.cassette,
                    "interaction": self.interaction}
        if self.scenario is not None:
            return {"kind": "scenario", "scenario": self.scenario, "step": self.step}
        if self.error is not None:
            return {"kind": "error", "code": self.error.get("code")}
        if self.status == 0:
            return {"kind": "pending"}
        return {"kind": "default"}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JournalEntry:
        """The entry ``to_dict`` (or the admin API's journal) gave as plain data: a shared
        server's entry, read by the pytest plugin's remote backend, is the same type as a
        local one."""
        entry = cls(**{name: data[name] for name in FIELDS if name in data})
        events = data.get("events") or []
        offsets = [event.get("offset_ms", 0.0) for event in events]
        delays = (None if not any(offsets) else tuple(
            (after - before) / 1000 for before, after in zip([0.0, *offsets], offsets,
                                                                 strict=False)))
        if events or data.get("output_ids"):
            entry.sent = Sent(tuple(e["type"] for e in events),
                              tuple(e.get("sequence_number") for e in events), delays,
                              tuple(data.get("output_ids") or ()))
        return entry

    def to_dict(self) -> dict[str, Any]:
        """The entry as plain data (shallow: the request body is already plain JSON, however
        deeply nested)."""
        data = self.fields_dict()
        data["events"] = self.events
        data["output_ids"] = self.output_ids
        return data

    def fields_dict(self) -> dict[str, Any]:
        """``to_dict`` without what ``sent`` says (``events``, ``output_ids``)."""
        data = dict(zip(FIELDS, fields_of(self), strict=True))
        data["headers"], data["faults"] = dict(self.headers), list(self.faults)
        data["skipped"] = list(self.skipped)
        data["struck"] = [dict(strike) for strike in self.struck]
        return data

    @property
    def json(self) -> Any:
        """The request body (parsed JSON)."""
        return self.body


def _fault_list(name: str) -> property:
    """The property of one of an entry's fault lists (``faults``, ``struck``, ``skipped``), kept
    in ``_<name>``: an entry ``opened`` has none until a fault sets it or it is read (an empty
    one then, kept, which grows as a field's list does), so that the entries no fault touched
    keep no lists for the collector to track; a journal counts them without making them
    (``answer_size``)."""
    private = "_" + name

    def get(entry: JournalEntry) -> list[Any]:
        value: list[Any] | None = getattr(entry, private)
        if value is None:
            value = []
            setattr(entry, private, value)
        return value

    def put(entry: JournalEntry, value: list[Any]) -> None:
        setattr(entry, private, value)

    return property(get, put, doc=f"The entry's ``{name}`` field.")


for _name in ("faults", "struck", "skipped"):  # each still a field: init, eq, repr, to_dict
    setattr(JournalEntry, _name, _fault_list(_name))

_new = object.__new__


def opened(method: str, path: str, headers: dict[str, str], body: Any, at: float,
           size: int) -> JournalEntry:
    """``JournalEntry(method, path, headers, body, at=at, size=size)``, the entry every
    request opens, made without the dataclass's ``__init__`` of 29 parameters: its own
    fields and a fresh ``reply_headers`` set, its fault lists made when first set or read
    (``_fault_list``), every other field read from the class's default until it is set
    (tests/test_journal.py holds the two equal)."""
    entry: JournalEntry = _new(JournalEntry)
    entry.method, entry.path, entry.headers, entry.body, entry.at, entry.size = (
        method, path, headers, body, at, size)
    entry.reply_headers = {}
    return entry


# the fields to_dict copies, in their order (asked of ``fields`` once, not per entry), and
# what reads their values (a tuple in that order)
FIELDS = tuple(f.name for f in fields(JournalEntry) if f.init and f.name != "sent")
fields_of: Callable[[JournalEntry], tuple[Any, ...]] = attrgetter(*FIELDS)


def events_of(types: Sequence[Any], numbers: Sequence[Any], delays: Sequence[float] | None
              ) -> list[dict[str, Any]]:
    """``JournalEntry.events`` of what ``Sent`` says (its types, numbers and delays): each
    event with its planned offset from the first byte, in milliseconds."""
    if not delays:  # unpaced: every offset 0
        return [{"type": type_, "sequence_number": number, "offset_ms": 0.0}
                for type_, number in zip(types, numbers, strict=True)]
    out, offset = [], 0.0
    for index, (type_, number) in enumerate(zip(types, numbers, strict=True)):
        offset += delays[index]
        out.append({"type": type_, "sequence_number": number,
                    "offset_ms": round(offset * 1000, 3)})
    return out


ENTRY_FIELDS = 512  # what an entry's own fields are counted as, in bytes, roughly
_EVENT = 24  # what one event sent is counted as: its type's, number's and delay's places


def entry_size(entry: JournalEntry) -> int:
    """What an entry keeps, in bytes, roughly: its request (the body as read, its path, every
    header's name and value; ``request_size``), its answer (``answer_size``) and its own
    fields."""
    return request_size(entry) + answer_size(entry)


def request_size(entry: JournalEntry) -> int:
    """An entry's request and its own fields, in bytes, roughly (what its answer never
    changes, counted once: kept on the entry)."""
    size = entry._request_counted
    if size is None:
        size = entry._request_counted = (ENTRY_FIELDS + entry.size + len(entry.path)
                                     + _text_pairs(entry.headers))
    return size


def answer_size(entry: JournalEntry) -> int:
    """An entry's answer, in bytes, roughly: the reply's headers, the error, the faults and
    where they struck, the events sent and the output ids."""
    size = 0
    if entry.reply_headers:
        size += _text_pairs(entry.reply_headers)
    if entry.error:
        size += sum(len(str(value)) for value in entry.error.values())
    faults, skipped, struck = entry._faults, entry._skipped, entry._struck  # none made here
    if faults or skipped or struck:
        size += sum(map(len, faults or ())) + sum(map(len, skipped or ()))
        size += sum(len(str(strike)) for strike in struck or ())
    sent = entry.sent
    if sent is not None:
        size += _EVENT * len(sent.types) + sum(map(len, sent.output_ids))
    return size


def _text_pairs(headers: Mapping[str, str]) -> int:
    """The characters of ``headers``' names and values together."""
    return sum(map(len, headers)) + sum(map(len, headers.values()))


def counted(entry: JournalEntry) -> int:
    """The size a journal counts ``entry`` at: its ``request_size`` when it joined
    (``Journal.append``), its ``entry_size`` once ``Journal.recount`` counted its answer (or
    when first counted elsewhere); what joined the journal's bytes with it is what leaves them
    with it."""
    size = entry._counted
    if size is None:
        size = entry._counted = entry_size(entry)
    return size


class Journal(Capped[JournalEntry]):
    """An engine's journal: capped (``Capped``, each entry counted as its ``request_size``
    when it joins, and as its whole ``entry_size`` once its answer is in it: ``recount``);
    each entry appended is given its id and namespace by ``joined``, and ``added`` tells the
    server's feed once it is in."""

    def __init__(self, limit: int, max_bytes: int,
                 joined: Callable[[JournalEntry], None],
                 added: Callable[[JournalEntry], None]) -> None:
        super().__init__(limit, max_bytes, counted)
        self.joined, self.added = joined, added

    def append(self, item: JournalEntry) -> None:
        self.joined(item)  # its id and namespace, before anyone can see it
        # counted afresh in this journal, its request only: its answer is counted by
        # ``recount``, once it is made
        size = item._counted = request_size(item)
        list.append(self, item)  # ``Capped.append``'s steps, written out: every request appends
        self.bytes += size
        if len(self) > self.limit or self.bytes > self.max_bytes:
            self._trim()
        self.added(item)  # then the watchers are told: they find it

    def recount(self, entry: JournalEntry) -> None:
        """Count ``entry`` again now that its answer is in it: the journal's bytes follow (past
        its cap the oldest go); nothing for an entry it no longer holds."""
        before = entry._counted
        if before is None:
            return
        for found in reversed(self):  # by identity (two requests may be equal in every
            if found is entry:  # field), from the newest
                break
        else:
            return
        size = entry._counted = entry_size(entry)
        self.bytes += size - before
        if self.bytes > self.max_bytes:
            self._trim()

    def find(self, entry_id: str) -> JournalEntry | None:
        for entry in reversed(self):
            if entry.id == entry_id:
                return entry
        return None
