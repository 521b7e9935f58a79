"""Deterministic identifiers and timestamps.

Every id and timestamp the fake hands out comes from here, drawn from a seed, so that the same
requests sent in the same order to a fresh server with the same seed give the same bytes.
"""

from __future__ import annotations

import random
import string
import time
from collections.abc import Sequence

__all__ = ["CLOCK_MODES", "Clock", "IdFactory"]

# Prefixes follow what real providers send; the checker does not depend on them.
PREFIXES = frozenset({"resp", "msg", "fc", "call", "rs", "req", "item", "err"})
_CALL_ALPHABET = string.ascii_letters + string.digits

# 2026-01-01T00:00:00Z: the start of the seeded clock.
SEEDED_EPOCH = 1_767_225_600
CLOCK_MODES = ("seeded", "real")


class IdFactory:
    """Hands out ids such as ``resp_0f3c...`` from a seeded stream. ``run``: how many times a
    persistent store was started before (0: a fresh one), so that a restart on the same file
    never hands out an id it already holds."""

    def __init__(self, seed: int = 0, run: int = 0) -> None:
        self.seed = seed
        self._rng = random.Random(f"ormock:ids:{seed}" if not run else f"ormock:ids:{seed}:{run}")
        self._bits = self._rng.getrandbits

    def new(self, prefix: str) -> str:
        if prefix == "call":
            return "call_" + "".join(self._rng.choices(_CALL_ALPHABET, k=24))
        # 192 random bits as 48 hex digits: the same text as f"{bits:048x}"
        return prefix + "_" + self._bits(192).to_bytes(24, "big").hex()

    def many(self, prefixes: Sequence[str]) -> list[str]:
        """``[self.new(prefix) for prefix in prefixes]``, with the random bits of ids of hex
        digits drawn in one call: ``getrandbits(192 * n)`` is the n draws of 192 bits, the
        first the lowest (Python's ``Random`` fills the number from its lowest 32 bits up,
        one generator output at a time), so the end of its hex text is the first id's."""
        count = len(prefixes)
        if count < 2 or "call" in prefixes:  # a call id draws its letters another way
            return [self.new(prefix) for prefix in prefixes]
        text = self._bits(192 * count).to_bytes(24 * count, "big").hex()
        drawn = []
        end = 48 * count
        for prefix in prefixes:  # each id's digits 48 before the previous one's
            drawn.append(f"{prefix}_{text[end - 48:end]}")
            end -= 48
        return drawn


class Clock:
    """Unix timestamps in seconds: seeded (a fixed start, one second per reading) or real."""

    def __init__(self, mode: str = "seeded", start: int = SEEDED_EPOCH) -> None:
        if mode not in CLOCK_MODES:
            raise ValueError(f"clock mode must be 'seeded' or 'real', not {mode!r}")
        self.mode = mode
        self._next = start

    def pair(self) -> tuple[int, int]:
        """Two readings, one after the other (``now(), now()``: a reply's ``created_at`` and
        ``completed_at``), in one call."""
        if self.mode == "real":
            return int(time.time()), int(time.time())
        value = self._next
        self._next += 2
        return value, value + 1

    def now(self) -> int:
        if self.mode == "real":
            return int(time.time())
        value = self._next
        self._next += 1
        return value
