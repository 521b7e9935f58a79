"""Recorded bodies decoded from their ``content-encoding`` with a bound on what they inflate to.

A few hundred kilobytes of gzip can inflate to gigabytes, so no recorded body is ever decoded in
one call: ``Inflater`` decodes a body given in pieces (the recorder's upstream chunks) and
``inflate`` a whole one (a vcrpy cassette's), each asking zlib (or brotli) for at most one byte
more than the room left and refusing with ``TooLarge`` past ``MAX_INFLATED``. Every place that
decodes a recorded body goes through them.
"""

from __future__ import annotations

import importlib
import zlib
from typing import Any

__all__ = [
    "DECODED",
    "MAX_INFLATED",
    "MIB",
    "InflateError",
    "Inflater",
    "TooLarge",
    "UnknownEncoding",
    "inflate",
]

MIB = 1024 * 1024
# the most bytes a recorded body may inflate to: twice the server's default body limit, far
# beyond any Responses answer
MAX_INFLATED = 32 * MIB

# how much one call to the decoder may give (a bound on what it holds besides the body)
STEP = MIB

# the encodings decoded here (``br`` only with the brotli package, as vcrpy decodes it)
DECODED = ("gzip", "x-gzip", "deflate", "br")


class InflateError(ValueError):
    """A recorded body that cannot be decoded: not what its encoding says, or too large."""


class UnknownEncoding(InflateError):
    """An encoding ormock does not decode (or ``br`` without the brotli package)."""


class TooLarge(InflateError):
    """A body that inflates past its limit (a "gzip bomb")."""

    def __init__(self, encoding: str, limit: int) -> None:
        self.encoding, self.limit = encoding, limit
        super().__init__(f"the {encoding} body inflates past {limit // MIB} MiB "
                         f"(MAX_INFLATED), the most a recorded body may be decoded to")


def _brotli(encoding: str) -> Any:
    """brotli's streaming decompressor, or ``UnknownEncoding`` when it cannot be bounded."""
    for name in ("brotli", "brotlicffi"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return module.Decompressor()
    raise UnknownEncoding(f"a {encoding} body needs the brotli package to be decoded")


class Inflater:
    """Decodes one body given in pieces; ``decompress`` and ``flush`` raise ``TooLarge`` once
    the bytes out pass ``limit``, ``InflateError`` for bytes that are not of the encoding."""

    def __init__(self, encoding: str, limit: int = MAX_INFLATED) -> None:
        self.encoding = encoding.strip().lower()
        self.limit = limit
        self.total = 0
        self._zlib: Any = None
        self._brotli: Any = None
        if self.encoding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self.encoding == "deflate":
            self._zlib = zlib.decompressobj()
        elif self.encoding == "br":
            self._brotli = _brotli(self.encoding)
        else:
            raise UnknownEncoding(f"ormock does not decode the content-encoding "
                                  f"{self.encoding!r} (only {', '.join(DECODED)})")

    def _counted(self, out: bytes) -> bytes:
        self.total += len(out)
        if self.total > self.limit:
            raise TooLarge(self.encoding, self.limit)
        return out

    def decompress(self, data: bytes) -> bytes:
        """The bytes ``data`` decodes to, taken a ``STEP`` at a time so that a bomb never
        holds more than the limit (and a byte) in memory."""
        parts: list[bytes] = []
        while True:
            step = min(self.limit - self.total + 1, STEP)
            out = self._zlib_part(data, step) if self._zlib is not None \
                else self._brotli_part(data, step)
            parts.append(self._counted(out))
            if len(out) < step:  # the decoder stopped short: every byte given is decoded
                return b"".join(parts)
            data = self._zlib.unconsumed_tail if self._zlib is not None else b""

    def _zlib_part(self, data: bytes, step: int) -> bytes:
        try:
            return bytes(self._zlib.decompress(data, step))
        except zlib.error as error:
            raise InflateError(f"the body is not valid {self.encoding}: {error}") from None

    def _brotli_part(self, data: bytes, step: int) -> bytes:
        try:  # brotli 1.2 bounds each call's output; an older one cannot be bounded
            return bytes(self._brotli.process(data, output_buffer_limit=step))
        except TypeError:
            raise UnknownEncoding("this brotli package cannot decode with a bound on the "
                                  "output; install brotli 1.2 or newer") from None
        except Exception as error:  # brotli.error, which has no common base
            raise InflateError(f"the body is not valid br: {error}") from None

    def flush(self) -> bytes:
        """What is left once every piece was given (nothing more for a brotli stream)."""
        if self._zlib is None:
            return b""
        try:
            return self._counted(self._zlib.flush())
        except zlib.error as error:
            raise InflateError(f"the body is not valid {self.encoding}: {error}") from None


def inflate(data: bytes, encoding: str, limit: int = MAX_INFLATED) -> bytes:
    """A whole body decoded from ``encoding``, refused (``TooLarge``) past ``limit`` bytes."""
    inflater = Inflater(encoding, limit)
    return inflater.decompress(data) + inflater.flush()
