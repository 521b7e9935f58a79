"""Cassettes: recorded exchanges with a real provider, replayed exactly.

``model`` (the cassette in memory), ``fileformat`` (its YAML, checked against ``schema``),
``framing`` (bytes to messages and back, exactly), ``recording`` (an interaction built as an
upstream answers), ``redact`` and ``save`` (no secret reaches a file; atomic writes),
``matching`` (which interaction answers a request; near misses), ``replay`` (a recorded answer
as frames for the writers). ``load`` reads any cassette file, ormock's or vcrpy's (``vcr``:
``from_vcr``, ``to_vcr``), told apart by their shape. ``validation`` checks every cassette that
gets in (offsets, statuses, headers; framing headers dropped), ``encoding`` decodes a recorded
body with a bound on what it inflates to.
"""

from ormock.cassette.fileformat import CassetteError, dump_cassette, load_cassette, parse_cassette
from ormock.cassette.matching import CassetteMiss, Player
from ormock.cassette.model import (
    CASSETTE_VERSION,
    Cassette,
    Interaction,
    Message,
    RecordedRequest,
    RecordedResponse,
)
from ormock.cassette.recording import Recording
from ormock.cassette.redact import Redaction, SecretFound
from ormock.cassette.save import save_cassette
from ormock.cassette.shape import load
from ormock.cassette.vcr import from_vcr, to_vcr

__all__ = [
    "CASSETTE_VERSION",
    "Cassette",
    "CassetteError",
    "CassetteMiss",
    "Interaction",
    "Message",
    "Player",
    "RecordedRequest",
    "RecordedResponse",
    "Recording",
    "Redaction",
    "SecretFound",
    "dump_cassette",
    "from_vcr",
    "load",
    "load_cassette",
    "parse_cassette",
    "save_cassette",
    "to_vcr",
]
