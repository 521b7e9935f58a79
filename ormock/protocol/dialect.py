"""How a provider frames its streams and words its refusals: the parts of a profile that real
providers spell their own way (``ormock.providers`` holds the providers that use them).

``SseFraming``: Open Responses frames each event as ``event: <type>`` then ``data: <json>``
and ends the stream with ``data: [DONE]``. Real providers differ: Hugging Face's
``responses.js`` writes ``data:`` lines only and no ``[DONE]``; OpenRouter begins with a comment
(``: OPENROUTER PROCESSING``); vLLM and Ollama end without ``[DONE]``. A framing respells the
frames of a rendered stream: the events, their order and their JSON stay as built, so the
stream cache, the compiled templates and a full build still agree byte for byte before it.

``Refusal``: an error a provider answers in a situation the protocol leaves to it (a
``previous_response_id`` it cannot resolve, a background request it cannot run), with its
status and wording. ``ErrorBody``: a provider's error envelope made from Open Responses' one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.sse import DONE_FRAME
from ormock.protocol.types import Json
from ormock.protocol.wire import Frame

__all__ = ["SPEC_FRAMING", "ErrorBody", "Refusal", "SseFraming"]

# an error envelope as ormock builds it ({"error": {message, type, param, code}}) and the HTTP
# status it goes with -> the body the provider sends instead
ErrorBody = Callable[[Json, int], Json]

_EVENT_LINE = re.compile(rb"^event:[^\n]*\n", re.MULTILINE)


@dataclass(frozen=True)
class SseFraming:
    """How a provider frames a stream: ``event_lines`` (an ``event:`` line before each data
    line), ``comment`` (a comment line sent first, e.g. ``OPENROUTER PROCESSING``), ``done``
    (the stream ends with ``data: [DONE]``)."""

    event_lines: bool = True
    comment: str | None = None
    done: bool = True
    # frames as Open Responses does (nothing to respell), known when the framing is made
    spec: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "spec", self.event_lines and self.comment is None and self.done)

    def respell(self, frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
        """The frames of a stream framed this way (actions and delays as they were; a frame
        left empty by a dropped ``[DONE]`` is dropped)."""
        if self.spec:
            return frames
        out: list[Frame] = []
        for frame in frames:
            data = frame.data
            if frame.action is None and data:
                if not self.event_lines:
                    data = _EVENT_LINE.sub(b"", data)
                if not self.done and data.endswith(DONE_FRAME):
                    data = data[:-len(DONE_FRAME)]
                    if not data:
                        continue
            out.append(frame if data is frame.data else replace(frame, data=data))
        if self.comment is not None:
            first = out[0] if out else None
            head = f": {self.comment}\n\n".encode()
            if first is not None and first.action is None and first.delay == 0:
                out[0] = replace(first, data=head + first.data)
            else:
                out.insert(0, Frame(head, events=()))
        return tuple(out)


SPEC_FRAMING = SseFraming()


@dataclass(frozen=True)
class Refusal:
    """An error a provider answers: its status, ``message`` (``{id}`` and ``{field}`` are
    filled in), ``code`` and ``param``; the type is the profile's spelling of
    ``invalid_request`` (or of ``not_found`` for a 404)."""

    status: int
    message: str
    code: str
    param: str | None = None

    def error(self, spell: Callable[[str], str], **values: str) -> OpenResponsesError:
        kind = "not_found" if self.status == 404 else "invalid_request"
        return OpenResponsesError(self.message.format(**values), type=spell(kind),
                                  code=self.code, param=self.param, status=self.status)
