"""The fault catalogue: transforms of the event stream and of the HTTP exchange.

Each fault is a frozen dataclass registered under its YAML name in ``FAULTS``; it declares the
checker rules it breaks on a stream (``breaks()``), and ``apply`` returns a new reply (never
mutating the events it was given). ``apply_faults`` runs a list of faults for one request with
their triggers; ``parse_fault`` reads one from YAML; ``FAULT_SCHEMA`` is its JSON Schema.

=================  ======================================================================
http_error         an HTTP error with the Open Responses envelope (stream and JSON alike)
fail_midstream     ``error`` event then ``response.failed`` (JSON: HTTP 500 envelope)
incomplete         the open item ends ``incomplete``, ``response.incomplete``
vendor_event       unknown ``vendor:`` events inserted (JSON: unchanged)
vendor_item        an extension item with its own lifecycle
sequence           sequence numbers: gap, duplicate, reorder, restart (JSON: unchanged)
disconnect         the connection closes (FIN) or resets (RST) mid-body
stall              nothing sent for a while, or until the client gives up
slow               time to first event, token rate, per-event delay, jitter
malformed          invalid JSON, CRLF, ``event:``/type mismatch, missing blank line,
                   multi-line data (JSON: only invalid_json)
no_done            no ``data: [DONE]`` (JSON: unchanged)
truncate           the body ends cleanly with no terminal event (JSON: a cut body)
=================  ======================================================================

On a JSON request, ``disconnect`` and ``stall`` return a ``Reply`` with ``stream=False`` and
``frames`` set: the frames are the JSON body's, to be sent after the status line (no
Content-Length) with ``ormock.engine.writer.send_wire``. On a WebSocket turn (``reply.socket``)
the frames are text frames, one event's JSON each: wire faults act on them the same way, and a
fault that cannot exist there says why in ``not_on_socket()`` (the SSE framing ``malformed``
kinds, ``no_done``): the engine refuses it for a step, skips it when it is server-wide.
"""

from __future__ import annotations

from typing import Any

from ormock.faults.base import (
    EVENTS,
    FAULTS,
    HTTP,
    NUMBERING,
    PACING,
    WIRE,
    Fault,
    FaultSpecError,
    Param,
    Trigger,
    apply_faults,
    register,
    strike_faults,
)
from ormock.faults.endings import FailMidstream, Incomplete
from ormock.faults.extensions import BrokenSequence, VendorEvent, VendorItem
from ormock.faults.framing import Malformed
from ormock.faults.http import HttpError
from ormock.faults.spec import TRIGGER_SCHEMA, fault_schema, parse_fault, parse_trigger
from ormock.faults.strikes import Strike
from ormock.faults.transport import Disconnect, NoDone, Slow, Stall, Truncate

__all__ = [
    "EVENTS",
    "FAULTS",
    "FAULT_SCHEMA",
    "HTTP",
    "NUMBERING",
    "PACING",
    "TRIGGER_SCHEMA",
    "WIRE",
    "BrokenSequence",
    "Disconnect",
    "FailMidstream",
    "Fault",
    "FaultSpecError",
    "HttpError",
    "Incomplete",
    "Malformed",
    "NoDone",
    "Param",
    "Slow",
    "Stall",
    "Strike",
    "Trigger",
    "Truncate",
    "VendorEvent",
    "VendorItem",
    "apply_faults",
    "fault_schema",
    "parse_fault",
    "parse_trigger",
    "register",
    "strike_faults",
]

# The schema of the built-in faults; call fault_schema() again after a plugin registers more.
FAULT_SCHEMA: dict[str, Any] = fault_schema()
