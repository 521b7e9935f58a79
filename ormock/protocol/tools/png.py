"""Small valid PNG images (a colour gradient), base64: what image generation and the code
interpreter's image outputs carry. Made with the standard library (zlib, CRC-32)."""

from __future__ import annotations

import base64
import struct
import zlib

__all__ = ["png_base64"]


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def png_base64(width: int, height: int, colour: tuple[int, int, int], sharpness: int = 4) -> str:
    """A ``width`` x ``height`` RGB PNG, a gradient from ``colour``; ``sharpness`` (1..4): how
    much of it is drawn (a partial image is a blurrier one)."""
    step = max(1, 5 - sharpness)
    rows = []
    for y in range(height):
        row = bytearray([0])  # filter type 0 (none) for each scanline
        for x in range(width):
            shade = (x // step * step + y // step * step) * 255 // max(1, width + height - 2)
            row += bytes(((c + shade) % 256) for c in colour)
        rows.append(bytes(row))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    raw = (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
           + _chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + _chunk(b"IEND", b""))
    return base64.b64encode(raw).decode("ascii")
