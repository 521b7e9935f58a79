"""One reply in the making (``Turn``), and the faults a WebSocket turn can carry.

``ormock.engine.building`` makes a reply in small steps (context, echo, choice, build or the
stream cache, faults, keep); a ``Turn`` holds what they share. ``socket_check`` sorts the faults
of a WebSocket turn: one that cannot exist there (``Fault.not_on_socket``) refuses the turn when
the step chose it, and is skipped (journaled in ``skipped``) when it came from the server;
``background_check`` does the same for a background response's faults on the bytes of one
connection (the ``WIRE`` stage), which a run tied to no connection cannot carry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from ormock.engine.journal import JournalEntry
from ormock.engine.store.responses import ResponseStore, Stored
from ormock.faults import Fault
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.openai_items import call_outputs
from ormock.protocol.profile import Profile
from ormock.protocol.request import ResponseRequest, inherit_extensions, item_text
from ormock.protocol.types import Json
from ormock.scenario import Selection
from ormock.scenario.replies import StepReply

__all__ = ["NO_FIELDS", "RequestFields", "Turn", "background_check", "socket_check"]



class Turn:
    """What one reply is being made of: the request, its journal entry, the chosen step, the
    context (and its parent), the extension fields in effect and the echoed fields."""

    __slots__ = ("context", "context_tokens", "echo", "entry", "extensions", "literal", "local",
                 "parent", "profile", "request", "selection", "socket", "step_reply")

    def __init__(self, request: ResponseRequest, entry: JournalEntry,
                 selection: Selection | None, context: list[Json], parent: Stored | None,
                 context_tokens: int, local: ResponseStore | None, socket: bool,
                 profile: Profile) -> None:
        self.request, self.entry, self.selection = request, entry, selection
        self.context, self.parent, self.context_tokens = context, parent, context_tokens
        self.local, self.socket = local, socket
        # the extension fields in effect: the parent's with the request's own laid over them
        # (without a parent, the request's own, as they are: neither is changed)
        self.extensions: Json = request.extensions if parent is None else \
            inherit_extensions(parent.extensions, request.extensions)
        step_reply: StepReply | None = selection.step.reply if selection else None
        self.step_reply = step_reply
        self.literal = step_reply is not None and step_reply.literal
        self.echo: Json = {}
        # the provider played: the chosen scenario's profile, else the namespace's
        self.profile = profile


def socket_check(step_reply: StepReply | None, entry: JournalEntry) -> Callable[[Fault], bool]:
    """For a WebSocket turn, what to do with a fault whose trigger fired: False, send it; True,
    leave it out (a server-wide one, ``inject`` or chaos, that cannot exist on a WebSocket: the
    journal lists it in ``skipped``); a step's own such fault refuses the turn with a 400
    ``fault_not_on_websocket``. Faults whose trigger does not fire are never looked at, so they
    count their requests as over HTTP."""
    own = {id(f) for f in (step_reply.faults if step_reply else ())}

    def unfit(fault: Fault) -> bool:
        why = fault.not_on_socket()
        if why is None:
            return False
        if id(fault) in own:
            from ormock.faults import FAULTS

            applies = sorted(name for name, cls in FAULTS.items()
                             if cls.not_on_socket is Fault.not_on_socket)
            raise OpenResponsesError(
                f"This step's fault {fault.name!r} cannot be sent on a WebSocket: {why}. On a "
                f"WebSocket these apply: {', '.join(applies)}, and malformed invalid_json; "
                "send the request over HTTP (SSE) for this one.",
                code="fault_not_on_websocket", param="faults",
            )
        entry.skipped.append(fault.name)
        return True

    return unfit


def background_check(step_reply: StepReply | None, entry: JournalEntry
                     ) -> Callable[[Fault], bool]:
    """For a background response (``background: true``), what to do with a fault whose
    trigger fired, as ``socket_check`` does: a fault on the bytes of one connection (the
    ``WIRE`` stage: drops, stalls, framing, truncation) has no connection to act on, since the
    run goes on without one; the step's own is a 400 ``fault_not_in_background``, a
    server-wide one is skipped (journaled in ``skipped``)."""
    from ormock.faults import FAULTS, WIRE

    own = {id(f) for f in (step_reply.faults if step_reply else ())}

    def unfit(fault: Fault) -> bool:
        if fault.stage != WIRE:
            return False
        if id(fault) in own:
            applies = sorted(name for name, cls in FAULTS.items() if cls.stage != WIRE)
            raise OpenResponsesError(
                f"This step's fault {fault.name!r} acts on the bytes of one connection, and a "
                "background response runs on the server without one. In background mode these "
                f"apply: {', '.join(applies)}; send the request without 'background': true "
                "for this one.", code="fault_not_in_background", param="faults")
        entry.skipped.append(fault.name)
        return True

    return unfit


class RequestFields(Mapping[str, Any]):
    """The request fields a step's templates may read (``request.<field>``:
    ``scenario.templates.REQUEST_FIELDS``), each made the first time it is read: most steps'
    templates read none (the input's text and the tool outputs are walks over the input)."""

    __slots__ = ("_made", "_turn")

    def __init__(self, turn: Turn) -> None:
        self._turn = turn
        self._made: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        made = self._made
        if name not in made:
            made[name] = _FIELDS[name](self._turn)  # KeyError: no such field
        return made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_FIELDS)

    def __len__(self) -> int:
        return len(_FIELDS)


NO_FIELDS: Mapping[str, Any] = MappingProxyType({})  # what a step reading none is offered
_FIELDS: dict[str, Callable[[Turn], Any]] = {
    "model": lambda turn: turn.echo.get("model"),
    "input": lambda turn: turn.request.new_input_text,
    "instructions": lambda turn: turn.echo.get("instructions"),
    "previous_response_id": lambda turn: turn.request.previous_response_id,
    "tool_outputs": lambda turn: " ".join(item_text(i) for _, i, _ in
                                          call_outputs(turn.request.input)),
    "extensions": lambda turn: turn.extensions,
}
