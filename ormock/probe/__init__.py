"""``ormock probe --upstream URL``: hold a live provider to the protocol, and record it doing so.

A fixed battery of requests (``BATTERY``: plain text, streamed text, a tool call and its round
trip, ``previous_response_id``, a forced tool, a ``max_output_tokens`` small enough to cut, an
invalid request) goes to the provider one after the other. Each exchange is recorded as it
arrives (``Recording``: the exact chunks and their times) into one cassette, saved after every
probe (atomically, redacted, scanned for secrets), so an interrupted probe keeps what it had.
Each exchange is then judged: a stream by every rule of the checker (order, sequence numbers,
done text against the deltas, lifecycle, schema), a JSON body as a Response object, an error
answer by the Open Responses error envelope, and each probe by what its request asks for (a
call of the forced tool, ``incomplete`` with ``max_output_tokens``, ...). Every finding is a
MUST (the protocol, the error envelope, the status semantics) or a SHOULD; ``ormock probe``
exits 1 when any MUST is broken.

The battery is data: a probe is a name, a request built from what the earlier probes got (the
round trip needs the call id and response id of the tool call), whether it streams, the status
class it expects, and its own checks.

``battery`` (the ``Probe`` declaration, an exchange and its context, ``BATTERY``), ``checks``
(findings and their severities, the checks every exchange gets and each probe's own),
``drive`` (sending the battery with httpx, recording each answer into the cassette),
``report`` (the run: its table and its JSON); the command, ``ormock probe``, is
``ormock.commands.probe``.
"""

from ormock.probe.battery import BATTERY, Context, Exchange, Probe, Skip
from ormock.probe.checks import (
    Finding,
    check_error,
    check_response_object,
    cut_by_max_output_tokens,
)
from ormock.probe.drive import Unreachable, base_url, default_cassette, run_probe
from ormock.probe.report import ProbeRun

__all__ = ["BATTERY", "Context", "Exchange", "Finding", "Probe", "ProbeRun", "Skip",
           "Unreachable", "base_url", "check_error", "check_response_object",
           "cut_by_max_output_tokens", "default_cassette", "run_probe"]
