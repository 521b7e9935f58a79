"""When an answer uses up its scenario step: only when the client had it whole.

A step's use is counted when the step is chosen (``ScenarioSet.select``), before the reply is
built. An attempt a fault ended never reached the client as an answer: an HTTP error, a stream
that ends in a ``response.failed`` the faults made, a stream or JSON body cut, dropped or stalled
for good, or a paced one the client left before its end. Such an attempt gives its use back
(``ScenarioSet.release``), so the client's retry finds the same step: a strict scenario
(``order: sequence``, each step once) survives chaos and a step's own ``when: {first: 1}``
fault delivers its reply on the retry. A step with ``count_faulted: true`` keeps the strict
count (every attempt uses it). The journal entry says which it was (``step_used``).

Most such attempts are known when the reply is made (``after_faults``); one whose faults only
pace it (a finite ``stall``, ``slow``) is known when its writer reports that the client left
(``settled``): until then it waits in ``engine.pending_steps``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ormock.engine.choose import set_of
from ormock.engine.entry_answer import final_response, on_the_wire, raw_ended
from ormock.engine.journal import JournalEntry
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.wire import Written
from ormock.scenario import Selection

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = ["after_faults", "ended_by_fault", "refused", "settled"]


def ended_by_fault(planned: Reply, out: Reply | RawReply) -> bool | None:
    """Whether the faults that struck ``planned`` (giving ``out``) end the attempt: True (an
    HTTP error, a cut or stalled answer, a ``response.failed`` the plan did not have), False
    (it goes out whole as planned), None (whole unless the client leaves first: a paced
    answer)."""
    if isinstance(out, RawReply):
        return out.status >= 400 or raw_ended(out) != "whole"
    if out.frames is not None and on_the_wire(out)[1] != "whole":
        return True
    if out.events and out is not planned:
        after, before = final_response(out.events), final_response(planned.events)
        if after is not None and after.get("status") == "failed" and (
                before is None or before.get("status") != "failed"):
            return True
    if (out.pacing is not None and out.pacing.paced) or (
            out.frames is not None and any(frame.delay for frame in out.frames)):
        return None  # the client may leave while it waits
    return False


def _give_back(engine: Engine, selection: Selection, entry: JournalEntry) -> None:
    set_of(engine, selection.scenario).release(selection)
    entry.step_used = False


def after_faults(engine: Engine, selection: Selection, planned: Reply, out: Reply | RawReply,
                 entry: JournalEntry, written: bool) -> None:
    """The faults struck (the caller holds the engine's lock): give the step's use back when
    they end the attempt; a paced answer that will be ``written`` waits for its end."""
    if selection.step.count_faulted:
        return
    ended = ended_by_fault(planned, out)
    if ended:
        _give_back(engine, selection, entry)
    elif ended is None and written:
        engine.pending_steps[id(entry)] = (entry, selection)


def refused(engine: Engine, selection: Selection, entry: JournalEntry) -> None:
    """The chosen step's request was refused after the choice (a 400 of the profile's rules,
    a fault that cannot go over a WebSocket): the error used nothing (the caller holds the
    engine's lock); its entry names no step."""
    set_of(engine, selection.scenario).release(selection)
    entry.step_used = None


def settled(engine: Engine, entry: JournalEntry, written: Written | None) -> None:
    """An answer is over: a faulted one the client left before its end (or that was never
    written) gives its step's use back."""
    pending = engine.pending_steps.pop(id(entry), None)
    if pending is None or (written is not None and written.ended == "whole"):
        return
    with engine.lock:
        _give_back(engine, pending[1], entry)
