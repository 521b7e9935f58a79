"""Event faults that add to a stream or renumber it: ``vendor_event``, ``vendor_item``,
``sequence``."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from ormock.faults.base import EVENTS, NUMBERING, Fault, Param, register
from ormock.faults.endings import body_end, renumbered
from ormock.protocol import events as ev
from ormock.protocol.items import vendor_item
from ormock.protocol.reply import Reply
from ormock.protocol.types import Json

__all__ = ["BrokenSequence", "VendorEvent", "VendorItem", "delta_pairs", "pick_pair"]



def _where(event: Json) -> tuple[Any, ...]:
    return (event.get("type"), event.get("output_index"), event.get("content_index"),
            event.get("summary_index"))


def delta_pairs(events: list[Json], differing: bool = False, spare: bool = False) -> list[int]:
    """Indexes ``i`` where events ``i`` and ``i + 1`` are deltas of one part, with different
    text when ``differing``, in a part that has more deltas than these two when ``spare``."""
    counts = Counter(_where(e) for e in events if e.get("type") in ev.DELTAS)
    return [
        i for i in range(len(events) - 1)
        if events[i].get("type") in ev.DELTAS and _where(events[i]) == _where(events[i + 1])
        and not (differing and events[i].get("delta") == events[i + 1].get("delta"))
        and not (spare and counts[_where(events[i])] < 3)
    ]


def pick_pair(pairs: list[int], at: int) -> int | None:
    """The first pair at or after ``at``, else the first one."""
    return next((i for i in pairs if i >= at), pairs[0] if pairs else None)


@register
@dataclass(frozen=True, kw_only=True)
class VendorEvent(Fault):
    """Unknown extension events (``type`` with a vendor prefix) inserted in the stream.

    Clients must ignore them; the JS SDK's stream helper throws instead. ``type``: the event
    type (default ``ormock:trace``). ``fields``: more payload. ``at``: positions, each the index
    the event takes in the original stream (1 = right after ``response.created``; past the end:
    just before the terminal event). ``every``: one after every N events instead. Default: one
    at 1. Sequence numbers stay consecutive. A JSON body (the fold) does not change.
    """

    name = "vendor_event"
    stage = EVENTS
    main = "type"
    exclusive = (("at", "every"),)
    params = {
        "type": Param("string", "the event type, with a vendor prefix", vendor=True),
        "fields": Param("object", "more payload fields", reserved=("type", "sequence_number")),
        "at": Param("integers", "positions in the original stream (>= 1)", minimum=1,
                    nullable=True),
        "every": Param("integer", "one after every N events", minimum=1, nullable=True),
    }

    type: str = "ormock:trace"
    fields: dict[str, Any] = field(default_factory=dict)
    at: tuple[int, ...] | None = None
    every: int | None = None

    def apply(self, reply: Reply, rng: random.Random) -> Reply:
        if not reply.stream:
            return reply
        events = reply.events
        end = body_end(events)
        if self.every is not None:
            spots = list(range(self.every, end + 1, self.every))
        else:
            spots = [min(p, end) for p in (self.at or (1,))]
        out: list[Json] = []
        for index, event in enumerate([*events, None]):
            for _ in range(spots.count(index)):
                out.append({"type": self.type, "sequence_number": 0, **self.fields})
            if event is not None:
                out.append(event)
        return replace(reply, events=renumbered(out), frames=None)


@register
@dataclass(frozen=True, kw_only=True)
class VendorItem(Fault):
    """An extension item (``acme:web_search_call``) with its own lifecycle.

    ``response.output_item.added`` (status ``in_progress``), then ``response.output_item.done``
    (status ``completed``, with ``fields``), inserted so the item sits at ``output_index``;
    later items' output indexes shift, and the terminal snapshot lists it. ``id``: the item id
    (default: drawn from the rng). Valid under the protocol; JSON answers list it too.
    """

    name = "vendor_item"
    main = "type"
    params = {
        "type": Param("string", "the item type, with a vendor prefix", vendor=True),
        "fields": Param("object", "the done item's other fields",
                        reserved=("id", "type", "status")),
        "output_index": Param("integer", "where the item sits in the output", minimum=0),
        "id": Param("string", "the item id (default: drawn from the seed)", nullable=True),
    }

    type: str = "acme:web_search_call"
    fields: dict[str, Any] = field(default_factory=dict)
    output_index: int = 0
    id: str | None = None

    def apply(self, reply: Reply, rng: random.Random) -> Reply:
        events = reply.events
        end = body_end(events)
        added = [i for i in range(end) if events[i].get("type") == ev.ITEM_ADDED]
        done = {events[i].get("output_index") for i in range(end)
                if events[i].get("type") == ev.ITEM_DONE}
        position = min(self.output_index, len(added))
        open_items = [i for i in added if events[i].get("output_index") not in done]
        terminal = events[-1] if events else {}
        last_incomplete = terminal.get("type") == ev.INCOMPLETE and bool(added)
        if position == len(added) and (open_items or last_incomplete):
            position = len(added) - 1  # never after an open or incomplete last item
        at = added[position] if position < len(added) else end
        item_id = self.id or f"item_{rng.getrandbits(192):048x}"
        final = vendor_item(self.type, item_id, "completed", self.fields)
        new = [
            {"type": ev.ITEM_ADDED, "sequence_number": 0, "output_index": position,
             "item": vendor_item(self.type, item_id, "in_progress")},
            {"type": ev.ITEM_DONE, "sequence_number": 0, "output_index": position,
             "item": final},
        ]
        out = [_shifted(e, position) for e in events[:at]]
        out += new + [_shifted(e, position) for e in events[at:]]
        response = out[-1].get("response")
        if isinstance(response, dict) and isinstance(response.get("output"), list):
            output = list(response["output"])
            output.insert(min(position, len(output)), final)
            out[-1] = {**out[-1], "response": {**response, "output": output}}
        return replace(reply, events=renumbered(out), frames=None)


def _shifted(event: Json, position: int) -> Json:
    index = event.get("output_index")
    if isinstance(index, int) and not isinstance(index, bool) and index >= position:
        return {**event, "output_index": index + 1}
    return event


@register
@dataclass(frozen=True, kw_only=True)
class BrokenSequence(Fault):
    """Broken ``sequence_number``s from event ``at`` on (default: the middle of the stream).

    ``gap``: a number is skipped; ``duplicate``: a number comes twice; ``restart``: numbering
    starts again at 0; ``reorder``: two deltas of one part arrive swapped, each with its own
    number (a client that orders by ``sequence_number`` recovers the text; one that does not
    shows it garbled). ``reorder`` picks the first pair of differing deltas at or after ``at``
    (else the first in the stream; with none, only the numbers are swapped). Applied after the
    other event faults, so none renumbers it away. JSON answers have no numbers: unchanged.
    """

    name = "sequence"
    stage = NUMBERING
    main = "kind"
    params = {
        "kind": Param("string", "how the numbers break",
                      choices=("gap", "duplicate", "reorder", "restart")),
        "at": Param("integer", "the event where it happens (>= 1; default: the middle)",
                    minimum=1, nullable=True),
    }

    kind: str = "gap"
    at: int | None = None

    def breaks(self) -> frozenset[str]:
        if self.kind == "reorder":
            return frozenset({"sequence-number", "done-mismatch"})
        return frozenset({"sequence-number"})

    def apply(self, reply: Reply, rng: random.Random) -> Reply:
        if not reply.stream or len(reply.events) < 2:
            return reply
        events = list(reply.events)
        at = max(1, min(self.at if self.at is not None else len(events) // 2, len(events) - 1))
        if self.kind == "reorder":
            pair = pick_pair(delta_pairs(events, differing=True), at)
            if pair is None:
                at = min(at, len(events) - 2)
                first, second = events[at], events[at + 1]
                events[at] = {**first, "sequence_number": second.get("sequence_number")}
                events[at + 1] = {**second, "sequence_number": first.get("sequence_number")}
            else:
                events[pair], events[pair + 1] = events[pair + 1], events[pair]
            return replace(reply, events=events, frames=None)
        base = events[at - 1].get("sequence_number")
        base = base if isinstance(base, int) else at - 1
        first_number = {"gap": base + 2, "duplicate": base, "restart": 0}[self.kind]
        out = events[:at] + [{**e, "sequence_number": first_number + i}
                             for i, e in enumerate(events[at:])]
        return replace(reply, events=out, frames=None)
