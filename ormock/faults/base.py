"""The fault machinery: triggers, declared parameters, the registry, and applying faults.

A fault is a frozen dataclass whose parameters are declared once (``params``): the same
declaration validates a fault built from Python, parses one from YAML and writes its JSON Schema.
Faults are pure: ``apply`` returns a new reply and never mutates the events it was given.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, TypeVar

from ormock.faults.strikes import Strike, strike_between
from ormock.protocol.events import is_vendor_type
from ormock.protocol.hints import suggest
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.sse import encode_json

__all__ = [
    "EVENTS",
    "FAULTS",
    "HTTP",
    "NUMBERING",
    "PACING",
    "WIRE",
    "Fault",
    "FaultSpecError",
    "Param",
    "Trigger",
    "apply_faults",
    "register",
    "strike_faults",
]

# The stages faults are applied in, whatever order a scenario lists them: the HTTP answer, the
# events, their numbering, the pacing, then the bytes. So ``slow`` + ``fail_midstream`` is a slow
# stream that then fails, and a ``sequence`` fault survives a fault that renumbers the events.
HTTP, EVENTS, NUMBERING, PACING, WIRE = range(5)

_keys = itertools.count(1)
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_HEADER_VALUE = re.compile(r"^[\x20-\x7e\t]*$")


class FaultSpecError(ValueError):
    """A fault spec that cannot be used; ``path`` names the part at fault
    (``faults[0].http_error.status``) and the message says what to change."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


TriggerKind = Literal["always", "nth", "first", "probability"]


@dataclass(frozen=True)
class Trigger:
    """When a fault fires. ``always`` (the default); ``nth``: only the ``value``-th request that
    reaches the fault; ``first``: the first ``value`` requests; ``probability``: each request
    with probability ``value``, drawn from the rng ``apply_faults`` is given."""

    kind: TriggerKind = "always"
    value: float = 0

    def __post_init__(self) -> None:
        value = self.value
        if self.kind in ("nth", "first"):
            if isinstance(value, bool) or not float(value).is_integer() or value < 1:
                raise FaultSpecError(f"when.{self.kind}", f"must be a whole number >= 1, not "
                                     f"{value!r}")
            object.__setattr__(self, "value", int(value))
        elif self.kind == "probability":
            if isinstance(value, bool) or not 0 <= value <= 1:
                raise FaultSpecError("when.probability", f"must be a number from 0 to 1, not "
                                     f"{value!r}")
        elif self.kind != "always":
            raise FaultSpecError("when", f"unknown trigger {self.kind!r}")

    def fires(self, count: int, rng: random.Random) -> bool:
        """Whether the fault fires for the ``count``-th request (1-based) that reached it."""
        if self.kind == "nth":
            return count == self.value
        if self.kind == "first":
            return count <= self.value
        if self.kind == "probability":
            return rng.random() < self.value
        return True

    def to_spec(self) -> str | dict[str, float]:
        return "always" if self.kind == "always" else {self.kind: self.value}


ParamKind = Literal["integer", "number", "boolean", "string", "object", "integers", "headers"]


@dataclass(frozen=True)
class Param:
    """One declared parameter: how it is checked, and its JSON Schema.

    ``object`` is a mapping of JSON values (``reserved`` keys refused); ``integers`` a non-empty
    list of whole numbers; ``headers`` a mapping of header names to printable ASCII values.
    ``vendor``: a vendor-prefixed type (``acme:trace``). ``nullable``: ``null`` is accepted.
    """

    kind: ParamKind
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None  # an exclusive minimum
    choices: tuple[str, ...] = ()
    vendor: bool = False
    reserved: tuple[str, ...] = ()
    nullable: bool = False

    def check(self, value: Any, path: str) -> Any:
        """The value, normalised (whole floats become ints, lists tuples); raises
        ``FaultSpecError`` saying what to write instead."""
        if value is None:
            if self.nullable:
                return None
            raise FaultSpecError(path, f"needs a value ({self.doc})")
        if self.kind == "integer":
            return self._number(value, path, whole=True)
        if self.kind == "number":
            return self._number(value, path, whole=False)
        if self.kind == "boolean":
            if not isinstance(value, bool):
                raise FaultSpecError(path, f"must be true or false, not {value!r}")
            return value
        if self.kind == "string":
            return self._string(value, path)
        if self.kind == "integers":
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
                raise FaultSpecError(path, f"must be a non-empty list of whole numbers, not "
                                     f"{value!r}")
            return tuple(self._number(v, f"{path}[{i}]", whole=True) for i, v in enumerate(value))
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise FaultSpecError(path, f"must be a mapping with string keys, not {value!r}")
        if self.kind == "headers":
            for name, text in value.items():
                if not _HEADER_NAME.match(name):
                    raise FaultSpecError(f"{path}.{name}", "is not a valid HTTP header name")
                if not isinstance(text, str) or not _HEADER_VALUE.match(text):
                    raise FaultSpecError(f"{path}.{name}", "must be a string of printable ASCII")
            return dict(value)
        for name in value:
            if name in self.reserved:
                raise FaultSpecError(f"{path}.{name}", f"is set by ormock; the names "
                                     f"{', '.join(self.reserved)} cannot be given in {path}")
        try:
            encode_json(value)
        except (TypeError, ValueError) as error:
            raise FaultSpecError(path, f"must hold JSON values only ({error})") from None
        return dict(value)

    def _number(self, value: Any, path: str, whole: bool) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value
        ):
            raise FaultSpecError(path, f"must be a {'whole ' if whole else ''}number, not "
                                 f"{value!r}")
        if whole:
            if not float(value).is_integer():
                raise FaultSpecError(path, f"must be a whole number, not {value!r}")
            value = int(value)
        number = float(value) if not whole else value
        if self.minimum is not None and value < self.minimum:
            raise FaultSpecError(path, f"must be at least {_num(self.minimum)}, not {value!r}")
        if self.above is not None and value <= self.above:
            raise FaultSpecError(path, f"must be more than {_num(self.above)}, not {value!r}")
        if self.maximum is not None and value > self.maximum:
            raise FaultSpecError(path, f"must be at most {_num(self.maximum)}, not {value!r}")
        return number

    def _string(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise FaultSpecError(path, f"must be a string, not {value!r}")
        if self.choices and value not in self.choices:
            raise FaultSpecError(path, f"must be one of {', '.join(self.choices)}, not "
                                 f"{value!r}" + suggest(value, self.choices))
        if self.vendor and not is_vendor_type(value):
            raise FaultSpecError(path, f"must carry a vendor prefix, as in 'acme:{value}', not "
                                 f"{value!r}")
        return value

    def schema(self, default: Any) -> dict[str, Any]:
        """This parameter's JSON Schema (draft 2020-12)."""
        out: dict[str, Any] = {"description": self.doc}
        bounds = {"minimum": self.minimum, "maximum": self.maximum,
                  "exclusiveMinimum": self.above}
        if self.kind in ("integer", "number"):
            out["type"] = self.kind
            out.update({k: v for k, v in bounds.items() if v is not None})
        elif self.kind == "integers":
            item = {"type": "integer", **{k: v for k, v in bounds.items() if v is not None}}
            out.update(type="array", items=item, minItems=1)
        elif self.kind == "headers":
            out.update(type="object", propertyNames={"pattern": _HEADER_NAME.pattern},
                       additionalProperties={"type": "string", "pattern": _HEADER_VALUE.pattern})
        elif self.kind == "object":
            out["type"] = "object"
            if self.reserved:
                out["propertyNames"] = {"not": {"enum": list(self.reserved)}}
        else:
            out["type"] = self.kind
            if self.choices:
                out["enum"] = list(self.choices)
            if self.vendor:
                out["pattern"] = "^[^:]+:[\\s\\S]+$"
        if self.nullable:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        if default is not None and not isinstance(default, (dict, tuple)):
            out["default"] = default
        return out


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@dataclass(frozen=True, kw_only=True)
class Fault:
    """A transform of a reply: of its events, its pacing, its bytes, or the whole HTTP answer.

    Subclasses set ``name`` (their YAML name), ``stage``, ``params`` (one ``Param`` per
    dataclass field), ``main`` (the parameter a scalar sets: ``http_error: 429``) and
    ``exclusive`` (pairs of parameters that cannot both be given), and register with
    ``@register``. ``key`` is a process-unique serial, the key of the request counts that
    ``apply_faults`` keeps (unlike ``id()``, never reused by another fault).
    """

    name: ClassVar[str] = ""
    stage: ClassVar[int] = EVENTS
    params: ClassVar[Mapping[str, Param]] = {}
    main: ClassVar[str | None] = None
    exclusive: ClassVar[tuple[tuple[str, str], ...]] = ()

    trigger: Trigger = field(default_factory=Trigger)
    key: int = field(default_factory=lambda: next(_keys), compare=False, repr=False)

    def __post_init__(self) -> None:
        for name, param in self.params.items():
            object.__setattr__(self, name, param.check(getattr(self, name),
                                                       f"{self.name}.{name}"))
        for first, second in self.exclusive:
            if getattr(self, first) is not None and getattr(self, second) is not None:
                raise FaultSpecError(self.name, f"give {first} or {second}, not both")

    def breaks(self) -> frozenset[str]:
        """The checker rules (``ormock.protocol.checker.RULES``) this fault breaks on a stream."""
        return frozenset()

    def apply(self, reply: Reply, rng: random.Random) -> Reply | RawReply:
        """The reply with this fault in it; ``reply`` itself when the fault has nothing to do
        (a stream-only fault on a JSON answer)."""
        raise NotImplementedError

    def apply_raw(self, raw: RawReply) -> RawReply:
        """This fault on an answer already replaced (by ``http_error``): most do nothing."""
        return raw

    def struck(self, before: Reply | RawReply, after: Reply | RawReply) -> Strike:
        """Where this fault took effect, given the reply before and after it (recorded as it
        is applied, only for a fault that fired): by default, where the two first differ."""
        return strike_between(self.name, before, after)

    def not_on_socket(self) -> str | None:
        """Why this fault cannot exist on a WebSocket (it belongs to SSE framing), or None when
        it applies there. A step's fault that cannot is refused on a socket; a server-wide one
        (``inject``, chaos) is skipped there, and the journal says so."""
        return None

    def to_spec(self) -> dict[str, Any]:
        """The YAML form: only the parameters that differ from their defaults."""
        changed = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name in self.params and getattr(self, f.name) != _default(f)
        }
        spec: dict[str, Any] = {self.name: {k: list(v) if isinstance(v, tuple) else v
                                            for k, v in changed.items()}}
        if self.trigger.kind != "always":
            spec["when"] = self.trigger.to_spec()
        return spec


def _default(f: Any) -> Any:
    from dataclasses import MISSING

    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


FAULTS: dict[str, type[Fault]] = {}
F = TypeVar("F", bound=type[Fault])


def register(cls: F) -> F:
    """Register a fault class under its YAML ``name`` (a decorator; plugins use it too)."""
    if not cls.name or not re.match(r"^[a-z][a-z0-9_]*$", cls.name):
        raise ValueError(f"a fault needs a snake_case name, not {cls.name!r}")
    if FAULTS.get(cls.name, cls) is not cls:
        raise ValueError(f"a fault named {cls.name!r} is already registered")
    names = {f.name for f in fields(cls)}
    missing = set(cls.params) - names
    if missing or (cls.main is not None and cls.main not in cls.params) or "when" in cls.params:
        raise ValueError(f"fault {cls.name!r}: every param needs a dataclass field, and main "
                         f"must be a param ({sorted(missing)}, main={cls.main!r})")
    FAULTS[cls.name] = cls
    return cls


def apply_faults(
    reply: Reply,
    faults: Sequence[Fault],
    counts: MutableMapping[int, int] | Callable[[Fault], int],
    rng: random.Random,
    unfit: Callable[[Fault], bool] | None = None,
) -> tuple[Reply | RawReply, list[str]]:
    """Apply the faults whose trigger fires; return the reply and the names of those applied
    (``strike_faults`` without where they struck)."""
    out, strikes = strike_faults(reply, faults, counts, rng, unfit)
    return out, [strike.fault for strike in strikes]


def strike_faults(
    reply: Reply,
    faults: Sequence[Fault],
    counts: MutableMapping[int, int] | Callable[[Fault], int],
    rng: random.Random,
    unfit: Callable[[Fault], bool] | None = None,
    draws: Callable[[Fault, int], random.Random | None] | None = None,
) -> tuple[Reply | RawReply, list[Strike]]:
    """Apply the faults whose trigger fires; return the reply and, for each fault applied (in
    the order listed), where it took effect (``Fault.struck``).

    Each fault reached counts one more request in ``counts[fault.key]`` (keep one mapping per
    namespace; or a function that counts one more for the fault and answers the new count, as
    a store every worker shares does). Faults are reached in order, and an ``http_error``
    that fires ends the walk: the faults after it are not reached, and the ones before it
    that fired act on its answer
    (``slow`` delays it). Otherwise the fired faults are applied stage by stage (see ``HTTP``
    ...``WIRE``), in list order within a stage. A fault that had nothing to do for this reply
    (a stream-only fault on a JSON answer) is not named. ``unfit``: asked of each fault that
    fired; True leaves it out (a WebSocket turn's faults that only exist over SSE). ``draws``:
    the random stream of a fault's ``count``-th reach (its ``probability`` draw and its own
    choices), where the counts are shared by several processes: a function of the count, so
    every process draws alike (None for a fault it has none for: ``rng`` then).
    """
    fired: list[Fault] = []
    own: dict[int, random.Random] = {}  # by fault: its draws for this reach
    for fault in faults:
        if callable(counts):
            count = counts(fault)
        else:
            count = counts[fault.key] = counts.get(fault.key, 0) + 1
        chance = draws(fault, count) if draws is not None else None
        if chance is None:
            chance = rng
        else:
            own[fault.key] = chance
        if not fault.trigger.fires(count, chance):
            continue
        if unfit is not None and unfit(fault):
            continue
        if fault.stage == HTTP:
            raw = fault.apply(reply, chance)
            if not isinstance(raw, RawReply):
                raise TypeError(f"fault {fault.name!r} has the HTTP stage, so its apply() must "
                                f"return a RawReply, not {type(raw).__name__}")
            hit = {fault.key: fault.struck(reply, raw)}
            for earlier in sorted(fired, key=lambda f: f.stage):
                changed = earlier.apply_raw(raw)
                if changed is not raw:
                    hit[earlier.key] = earlier.struck(raw, changed)
                raw = changed
            return raw, [hit[f.key] for f in [*fired, fault] if f.key in hit]
        fired.append(fault)
    out: Reply | RawReply = reply
    applied: dict[int, Strike] = {}
    for fault in sorted(fired, key=lambda f: f.stage):
        new = (fault.apply(out, own.get(fault.key, rng)) if isinstance(out, Reply)
               else fault.apply_raw(out))
        if new is not out:
            applied[fault.key] = fault.struck(out, new)
        out = new
    return out, [applied[f.key] for f in fired if f.key in applied]
