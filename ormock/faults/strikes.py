"""Where each applied fault took effect: a ``Strike``, recorded as the fault is applied.

``apply_faults`` (``ormock.faults.base``) holds the reply before and after each fault it
applies; ``Fault.struck`` turns the two into a ``Strike``: the event index (in the events a
reader gets whole), the frame index and byte offset (in the planned frames, for a fault that
changed the bytes or their timing) where the two first differ, or the answer itself for a fault
that replaced it (an ``http_error``). This runs only for faults that fired: a reply with no
fault never comes here. The journal keeps the strikes (``JournalEntry.struck``), the inspector
page draws its markers from them.

The indexes are those of the reply as it stood after the fault; a later fault of an earlier
stage cannot move them (faults run stage by stage: answer, events, numbering, pacing, bytes),
but a later event fault that inserts events before one that struck earlier in the same stage
does (``vendor_event`` listed after ``fail_midstream``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.wire import Frame

if TYPE_CHECKING:
    from ormock.protocol.wire import Kind

__all__ = ["Strike", "strike_between"]


@dataclass(frozen=True)
class Strike:
    """Where one fault took effect. ``event``: the index of the first event it changed,
    inserted or removed (``len(events)`` for one that acts after the last); None when it
    replaced the whole answer. ``frame`` and ``byte``: the first planned frame, and the byte
    offset in the body, where the wire differs (None for a fault on the events alone, which are
    framed afterwards). ``what``: a few words on what it did there."""

    fault: str
    event: int | None
    what: str
    frame: int | None = None
    byte: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"fault": self.fault, "index": self.event, "frame": self.frame,
                "byte": self.byte, "what": self.what}


def strike_between(name: str, before: Reply | RawReply, after: Reply | RawReply) -> Strike:
    """The strike of fault ``name``, which made ``after`` of ``before``."""
    if isinstance(after, RawReply):
        if isinstance(before, RawReply) and before.status == after.status:
            return Strike(name, None, _raw_change(before, after))
        if after.status < 300:  # a body made by hand (a JSON answer broken on purpose)
            return Strike(name, None, f"body replaced (HTTP {after.status})")
        return Strike(name, None, f"HTTP {after.status}")
    assert isinstance(before, Reply)
    if after.frames is not None and after.frames is not before.frames:
        return _frames_strike(name, before, after)
    at = _first_difference(before.events, after.events)
    if at is None and after.pacing != before.pacing:
        return Strike(name, 0, "paced from the first event")
    if at is None:
        return Strike(name, 0, "the whole answer")
    return Strike(name, at, _event_change(before.events, after.events, at))


def _raw_change(before: RawReply, after: RawReply) -> str:
    if after.delay != before.delay:
        return f"answer delayed {after.delay * 1000:g} ms"
    return "the answer changed"


def _first_difference(old: list[Any], new: list[Any]) -> int | None:
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        if a is not b and a != b:
            return index
    return None if len(old) == len(new) else min(len(old), len(new))


def _event_change(old: list[Any], new: list[Any], at: int) -> str:
    if at >= len(new):
        return f"stream ends after {at} events"
    kind = new[at].get("type") if isinstance(new[at], dict) else None
    if at < len(old) and isinstance(old[at], dict) and old[at].get("type") == kind:
        was, now = old[at].get("sequence_number"), new[at].get("sequence_number")
        if was != now and {**old[at], "sequence_number": now} == new[at]:
            return f"sequence_number {now}, was {was}"
        return f"{kind} changed"
    return f"{kind} sent" if kind else "event changed"


def _frames_strike(name: str, before: Reply, after: Reply) -> Strike:
    assert after.frames is not None
    kind: Kind = "socket" if after.socket else "sse" if after.stream else "json"
    old = before.wire() if after.stream or before.frames is not None else []
    events = byte = 0
    for index, frame in enumerate(after.frames):
        prior = old[index] if index < len(old) else None
        if prior is None or prior != frame:
            return Strike(name, events, _frame_change(frame, prior),
                          frame=index, byte=byte + _common_prefix(prior, frame))
        events += len(frame.carried(kind))
        byte += len(frame.data)
    return Strike(name, events, f"stream ends after {events} events",
                  frame=len(after.frames), byte=byte)


def _common_prefix(prior: Frame | None, frame: Frame) -> int:
    if prior is None:
        return 0
    a, b = prior.data, frame.data
    low, high = 0, min(len(a), len(b))  # the longest common prefix, by halving (slices in C)
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _frame_change(frame: Frame, prior: Frame | None) -> str:
    if frame.action == "stall":
        return "stall" if frame.delay == float("inf") else f"stall {frame.delay * 1000:g} ms"
    if frame.action in ("close", "reset"):
        return f"connection {'closed' if frame.action == 'close' else 'reset'}"
    if frame.action == "end":
        return "stream ends"
    if prior is not None and prior.data == frame.data:
        return f"waits {frame.delay * 1000:g} ms"
    return "bytes changed"
