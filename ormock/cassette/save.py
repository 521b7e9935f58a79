"""Writing a cassette atomically, and only when it holds no secret.

The text goes to a temporary file beside the target, is flushed and fsynced, then renamed over
the target (and the folder fsynced), so a recorder killed at any moment leaves the previous
file or the new one, never half of one. Before anything is written, the text is scanned
(``redact.scan``); a key-shaped value refuses the write (``SecretFound``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from ormock.cassette.fileformat import dump_cassette
from ormock.cassette.model import Cassette
from ormock.cassette.redact import Redaction, SecretFound, scan, scan_headers

__all__ = ["save_cassette", "write_atomically"]


def write_atomically(path: str | Path, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                             dir=target.parent)
    try:
        # mkstemp makes the file 0600; a cassette gets the mode of the one it replaces, or
        # what the umask gives a new file
        try:
            mode = target.stat().st_mode & 0o777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temporary, mode)
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):  # the rename itself durable (not on every platform)
        folder = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def save_cassette(cassette: Cassette, path: str | Path,
                  redaction: Redaction | None = None) -> Cassette:
    """Redact ``cassette``, check the text for secrets, write it atomically; returns what was
    written."""
    redacted = (redaction or Redaction()).cassette(cassette)
    text = dump_cassette(redacted)
    leaks = scan_headers(redacted) + scan(text)
    if leaks:
        raise SecretFound(str(path), leaks)
    write_atomically(path, text)
    return redacted
