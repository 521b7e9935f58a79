"""The cassette file of one recording session, rewritten atomically after every interaction.

The file is written when the session starts (no interactions yet), then again each time an
interaction finishes, through ``ormock.cassette.save.write_atomically``: a temporary
``.NAME.<random>.tmp`` beside it, fsynced, renamed over it. A recorder killed at any moment
leaves the previous complete file (and perhaps a dot-file temporary, which is never a cassette:
whatever reads a folder of cassettes skips dot-files).

Each interaction is redacted, dumped to YAML and scanned for secrets once, when it finishes; the
file is its header and those texts joined, so a long session does not dump every interaction
again on every write. The text is the same ``dump_cassette`` gives for the whole cassette
(``tests/test_recorder_file.py`` holds them equal). An interaction the scan refuses is not
kept: the refusal (``SecretFound``, the same message ``save_cassette`` gives) goes to the caller,
the file stays as it was, and later interactions are written without it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ormock import __version__
from ormock.cassette.fileformat import dump_cassette
from ormock.cassette.model import Cassette, Interaction
from ormock.cassette.redact import Redaction, scan, scan_headers
from ormock.cassette.save import save_cassette, write_atomically

__all__ = ["CassetteFile", "default_name", "public_url"]

_LIST = "interactions:\n"
_EMPTY = "interactions: []\n"


def public_url(url: str) -> str:
    """``url`` with no credentials in it: no user or password, no query, no fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def default_name(now: datetime | None = None) -> str:
    """``recording-20250102T030405Z.yaml``: the file name of a session started ``now``."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"recording-{moment:%Y%m%dT%H%M%SZ}.yaml"


def check_name(name: str) -> str:
    """A cassette file name as ``--name`` may give it: a plain name, ``.yaml`` added when it has
    no YAML suffix. ``ValueError`` says what to change."""
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        raise ValueError(f"--name {name!r}: give a file name (it goes in --cassettes DIR)")
    if name.startswith("."):
        raise ValueError(f"--name {name!r}: a cassette's name cannot start with '.' (dot-files "
                         "in a cassettes folder are temporary files, never read)")
    return name if name.endswith((".yaml", ".yml")) else name + ".yaml"


def _fragment(text: str) -> str:
    """The list items of a dumped one-interaction cassette (what follows ``interactions:``)."""
    head, found, items = text.partition("\n" + _LIST)
    if not found:
        raise AssertionError(f"a dumped cassette has no interactions list: {head[:80]!r}")
    return items


@dataclass
class CassetteFile:
    """The file of one session: ``path``, what its header says, and the interactions so far in
    the order their requests came (``add`` takes the request's sequence number)."""

    path: Path
    redaction: Redaction = field(default_factory=Redaction)
    profile: str = "openai"
    upstream: str | None = None
    recorded_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(
        timespec="seconds").replace("+00:00", "Z"))
    recorded_with: str = f"ormock {__version__}"
    _items: list[tuple[int, Interaction, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _meta(self, interactions: tuple[Interaction, ...] = ()) -> Cassette:
        return Cassette(interactions, profile=self.profile,
                        upstream=None if self.upstream is None else public_url(self.upstream),
                        recorded_at=self.recorded_at, recorded_with=self.recorded_with)

    def _head(self) -> str:
        text = dump_cassette(self._meta())
        if not text.endswith(_EMPTY):
            raise AssertionError(f"a dumped empty cassette ends otherwise: {text[-80:]!r}")
        return text[: -len(_EMPTY)]

    def create(self) -> None:
        """Write the empty cassette; ``FileExistsError`` when the file is there already."""
        if self.path.exists():
            raise FileExistsError(f"{self.path} exists already; choose another --name, or "
                                  "move it away")
        with self._lock:
            save_cassette(self._meta(), self.path)

    @property
    def interactions(self) -> tuple[Interaction, ...]:
        """What the file holds, redacted, in order."""
        return tuple(interaction for _, interaction, _ in self._items)

    def text(self) -> str:
        if not self._items:
            return self._head() + _EMPTY
        return self._head() + _LIST + "".join(text for _, _, text in self._items)

    def add(self, sequence: int, interaction: Interaction) -> Interaction:
        """Keep ``interaction`` (redacted) at its place and rewrite the file. ``SecretFound``
        when its text would still hold a secret: then nothing changes."""
        redacted = self.redaction.interaction(interaction)
        text = _fragment(dump_cassette(self._meta((redacted,))))
        with self._lock:
            index = len(self._items)
            while index and self._items[index - 1][0] > sequence:
                index -= 1
            items = [*self._items[:index], (sequence, redacted, text), *self._items[index:]]
            if scan_headers(self._meta((redacted,))) or scan(text):
                # the refusal as ``save_cassette`` words it, line numbers of the whole file;
                # it raises, and writes nothing
                save_cassette(self._meta(tuple(i for _, i, _ in items)), self.path)
                raise AssertionError("save_cassette wrote a text the scan refused")
            self._items = items
            write_atomically(self.path, self.text())
        return redacted
