"""Chaos mode: a fault drawn per request from a seed, so a failing run replays exactly.

``Chaos.parse("rate=0.2,seed=7,faults=http_error:429|fail_midstream|disconnect:reset")``: for
each request, ``draw()`` first decides whether a fault hits (probability ``rate``), then which
one (uniformly over ``faults``). Draw k is a function of the seed and k alone (not of a random
stream), so the same seed and the same sequence of requests give the same faults, whether one
process draws them or many workers each draw the numbers a shared counter hands them.
A fault is written ``name`` or ``name:value``, the value setting the fault's main parameter
(``http_error:429`` is an http_error with status 429, ``disconnect:reset`` a reset);
from YAML or Python any fault spec ``parse_fault`` accepts will do.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ormock.faults import FAULTS, Fault, FaultSpecError, parse_fault
from ormock.protocol.hints import suggest

__all__ = ["CHAOS_SCHEMA", "DEFAULT_FAULTS", "Chaos"]

DEFAULT_FAULTS = ("http_error:429", "http_error:500", "fail_midstream", "disconnect:reset",
                  "truncate")
_KEYS = ("rate", "seed", "faults")

CHAOS_SCHEMA: dict[str, Any] = {
    "description": "Chaos mode: a fault drawn per request from a seed.",
    "anyOf": [
        {"type": "string", "description": "rate=0.2,seed=7,faults=http_error:429|disconnect"},
        {
            "type": "object",
            "properties": {
                "rate": {"type": "number", "minimum": 0, "maximum": 1,
                         "description": "the probability that a request gets a fault"},
                "seed": {"type": "integer", "description": "the seed of the draws"},
                "faults": {
                    "description": "the faults drawn from: 'name' or 'name:value' strings, "
                                   "or fault specs",
                    "anyOf": [{"type": "string"}, {"type": "array", "minItems": 1}],
                },
            },
            "required": ["rate"],
            "additionalProperties": False,
        },
    ],
}


def _coerce(name: str, text: str) -> Any:
    """``http_error:429`` -> 429: the text as the fault's main parameter wants it."""
    cls = FAULTS.get(name)
    if cls is None or cls.main is None:
        return text
    kind = cls.params[cls.main].kind
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        return text  # parse_fault says what it wants
    if kind == "boolean" and text in ("true", "false"):
        return text == "true"
    return text


def _fault(entry: Any, where: str) -> Fault:
    if isinstance(entry, str) and ":" in entry:
        name, _, value = entry.partition(":")
        name = name.strip()
        if name not in FAULTS:
            raise FaultSpecError(where, f"unknown fault {name!r}" + suggest(name, FAULTS)
                                 + f"; known faults: {', '.join(sorted(FAULTS))}")
        if FAULTS[name].main is None:
            raise FaultSpecError(where, f"{name} takes no value; write just {name!r}")
        return parse_fault({name: _coerce(name, value.strip())}, where)
    return parse_fault(entry.strip() if isinstance(entry, str) else entry, where)


@dataclass
class Chaos:
    """Seeded chaos: ``rate`` (0..1) of requests get one of ``faults``, drawn from ``seed``."""

    rate: float
    seed: int = 0
    faults: tuple[Fault, ...] = ()
    specs: tuple[str, ...] = field(default=(), repr=False)  # as written, for str()
    _drawn: int = field(init=False, repr=False, compare=False, default=0)
    _lock: threading.Lock = field(init=False, repr=False, compare=False,
                                  default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if isinstance(self.rate, bool) or not isinstance(self.rate, (int, float)) or not (
            0 <= self.rate <= 1
        ):
            raise ValueError(f"chaos rate must be a number from 0 to 1, not {self.rate!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"chaos seed must be a whole number, not {self.seed!r}")
        if not self.faults:
            self.faults = tuple(_fault(s, f"chaos faults[{i}]")
                                for i, s in enumerate(DEFAULT_FAULTS))
            self.specs = DEFAULT_FAULTS
        self.reset()

    def reset(self) -> None:
        """Start the draws again from the seed."""
        with self._lock:
            self._drawn = 0

    def fresh(self) -> Chaos:
        """The same chaos with draws of its own (one per namespace)."""
        return Chaos(self.rate, self.seed, self.faults, self.specs)

    def draw(self, index: int | None = None) -> Fault | None:
        """The fault for the next request, or None; one call per request, in request order.
        ``index``: the request's number (from 1) when a counter shared by several processes
        hands it out; by default this chaos counts its own draws."""
        if index is None:
            with self._lock:
                self._drawn += 1
                index = self._drawn
        rng = random.Random(f"ormock:chaos:{self.seed}:{index}")
        if rng.random() >= self.rate:
            return None
        return self.faults[rng.randrange(len(self.faults))]

    @classmethod
    def parse(cls, text: str) -> Chaos:
        """From ``rate=0.2,seed=7,faults=http_error:429|fail_midstream|disconnect``; raises
        ``ValueError`` saying what to change."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("a chaos spec looks like rate=0.2,seed=7,faults=http_error:429|"
                             "disconnect (seed and faults are optional)")
        values: dict[str, str] = {}
        for part in text.split(","):
            key, sep, value = (s.strip() for s in part.partition("="))
            if not sep or not key:
                raise ValueError(f"chaos spec {text!r}: {part.strip()!r} is not key=value "
                                 "(keys: rate, seed, faults; faults are separated by |)")
            if key not in _KEYS:
                raise ValueError(f"chaos spec {text!r}: unknown key {key!r}"
                                 + suggest(key, _KEYS) + "; keys: rate, seed, faults")
            if key in values:
                raise ValueError(f"chaos spec {text!r}: {key} is given twice")
            values[key] = value
        mapping: dict[str, Any] = {}
        for key, number in (("rate", float), ("seed", int)):
            if key in values:
                try:
                    mapping[key] = number(values[key])
                except ValueError:
                    raise ValueError(f"chaos spec {text!r}: {key} must be a "
                                     f"{'number from 0 to 1' if key == 'rate' else 'whole number'}"
                                     f", not {values[key]!r}") from None
        if "faults" in values:
            mapping["faults"] = values["faults"]
        try:
            return cls.from_mapping(mapping)
        except ValueError as error:
            raise ValueError(f"chaos spec {text!r}: {error}") from None

    @classmethod
    def from_mapping(cls, spec: Mapping[str, Any]) -> Chaos:
        """From ``{rate, seed, faults}`` (YAML, pytest); ``faults`` is a ``|``-separated string
        or a list of ``name[:value]`` strings and fault specs."""
        unknown = [k for k in spec if k not in _KEYS]
        if unknown:
            raise ValueError(f"unknown chaos key {unknown[0]!r}" + suggest(str(unknown[0]), _KEYS)
                             + "; keys: rate, seed, faults")
        if "rate" not in spec:
            raise ValueError("chaos needs a rate (the probability that a request gets a fault)")
        entries: Sequence[Any] = spec.get("faults") or DEFAULT_FAULTS
        if isinstance(entries, str):
            entries = [e for e in entries.split("|") if e.strip()] or DEFAULT_FAULTS
        if not isinstance(entries, Sequence):
            raise ValueError(f"chaos faults must be a list or a |-separated string, not "
                             f"{entries!r}")
        faults = tuple(_fault(e, f"chaos faults[{i}]") for i, e in enumerate(entries))
        specs = tuple(e.strip() if isinstance(e, str) else _label(f)
                      for e, f in zip(entries, faults, strict=True))
        return cls(spec["rate"], spec.get("seed", 0), faults, specs)

    def __str__(self) -> str:
        return f"rate={self.rate:g},seed={self.seed},faults={'|'.join(self.specs)}"


def _label(fault: Fault) -> str:
    spec = fault.to_spec()[fault.name]
    if fault.main is not None and set(spec) == {fault.main}:
        return f"{fault.name}:{spec[fault.main]}"
    return fault.name if not spec else f"{fault.name}{spec}"
