"""Values that satisfy a JSON Schema, drawn from a seeded Faker, for tool arguments and JSON output.

Covers the JSON Schema a model is given in practice: objects, arrays with item counts, enums and
consts, strings with formats and lengths, numbers within bounds and steps, ``anyOf``/``oneOf``/
``allOf`` and local ``$ref``. ``hints`` supply values for properties by name (``location`` taken
from the user's words).

The values are what a model sends and a real agent accepts, since an agent runs what it gets
(the Codex CLI parses its tools' arguments strictly): an object has its required properties,
and an optional one only where asked (a hint names it, or ``minProperties`` needs it); a
``number`` is a whole number unless its bounds or ``multipleOf`` leave only fractions (a count
read as an integer then parses); formats, lengths and bounds (``exclusiveMinimum`` /
``exclusiveMaximum`` as numbers or, in draft 4, as flags) hold.

A value is made within ``MOST_VALUES``: a schema that asks for more (a ``minLength`` of 10^8,
arrays of ``minItems`` nested, ``$ref`` trees branching many ways) is a 400
``unsupported_schema`` naming the field it came from, before the server is held making it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from faker import Faker

from ormock.protocol.errors import invalid

__all__ = ["MOST_VALUES", "value_for"]

# the most one value may take: each value made counts one, a string its characters, an array
# its items before they are made
MOST_VALUES = 100_000

_Make = Callable[[Faker], Any]
_FORMATS: dict[str, _Make] = {
    "date-time": lambda f: f.date_time(tzinfo=None).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "date": lambda f: f.date(),
    "time": lambda f: f.time(),
    "email": lambda f: f.email(),
    "uri": lambda f: f.url(),
    "url": lambda f: f.url(),
    "uuid": lambda f: str(f.uuid4()),
    "hostname": lambda f: f.hostname(),
    "ipv4": lambda f: f.ipv4(),
    "ipv6": lambda f: f.ipv6(),
    "uri-reference": lambda f: f.uri_path(),
    "idn-email": lambda f: f.email(),
}
_NAMED: dict[str, _Make] = {
    "location": lambda f: f.city(),
    "city": lambda f: f.city(),
    "country": lambda f: f.country(),
    "name": lambda f: f.name(),
    "email": lambda f: f.email(),
    "query": lambda f: f.sentence(nb_words=4).rstrip("."),
    "url": lambda f: f.url(),
}


class _Budget:
    """What is left of ``MOST_VALUES`` for one value; spent past it, the 400 naming ``param``."""

    def __init__(self, param: str) -> None:
        self.param, self.left = param, MOST_VALUES

    def spend(self, amount: int) -> None:
        self.left -= amount
        if self.left < 0:
            raise invalid(f"The embedded default cannot make a value for '{self.param}': its "
                          f"schema asks for more than {MOST_VALUES} values, items or characters "
                          "(a large minLength or minItems, nested or repeated through $ref). "
                          "Lower them, or script the reply in a scenario.", self.param,
                          "unsupported_schema")


def value_for(
    schema: Any,
    faker: Faker,
    *,
    hints: Mapping[str, Any] | None = None,
    root: Mapping[str, Any] | None = None,
    name: str = "",
    depth: int = 0,
    param: str = "tools",
    budget: _Budget | None = None,
) -> Any:
    """A value valid against ``schema``; ``root`` resolves ``#/...`` references; ``param`` is
    the request field the schema came from, which a schema asking too much is a 400 naming."""
    budget = budget if budget is not None else _Budget(param)
    budget.spend(1)
    if not isinstance(schema, Mapping) or depth > 12:
        return faker.word() if depth <= 12 else None
    root = root if root is not None else schema
    hints = hints or {}

    def again(sub: Any, key: str = name) -> Any:
        return value_for(sub, faker, hints=hints, root=root, name=key, depth=depth + 1,
                         budget=budget)

    if "$ref" in schema:
        return again(_resolve(root, str(schema["$ref"])))
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return faker.random_element(list(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        options = [o for o in schema.get(key, []) if not (isinstance(o, Mapping)
                                                          and o.get("type") == "null")]
        if options:
            return again(options[0])
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            part = _resolve(root, part["$ref"]) if "$ref" in part else part
            for k, v in part.items():
                if k == "properties":
                    merged.setdefault("properties", {}).update(v)
                elif k == "required":
                    merged.setdefault("required", []).extend(v)
                else:
                    merged[k] = v
        return again(merged)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        return _object(schema, hints, again)
    if kind == "array":
        low = int(schema.get("minItems", 1))
        high = int(schema.get("maxItems", max(low, 2)))
        count = max(low, min(high, 2))
        budget.spend(count)
        return [again(schema.get("items", {"type": "string"})) for _ in range(count)]
    if kind == "string":
        budget.spend(int(schema.get("minLength", 0)))
        return _string(schema, faker, hints, name)
    if kind in ("integer", "number"):
        return _number(schema, faker, integer=kind == "integer")
    if kind == "boolean":
        return faker.pybool()
    return None


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    if not ref.startswith("#"):
        return {}
    node: Any = root
    for part in ref.lstrip("#/").split("/"):
        if not part:
            continue
        if not isinstance(node, Mapping):
            return {}
        node = node.get(part.replace("~1", "/").replace("~0", "~"), {})
    return node


def _string(schema: Mapping[str, Any], faker: Faker, hints: Mapping[str, Any], name: str) -> str:
    value: str
    if name in hints and isinstance(hints[name], str):
        value = str(hints[name])
    elif schema.get("format") in _FORMATS:
        value = str(_FORMATS[str(schema["format"])](faker))
    elif name.lower() in _NAMED:
        value = str(_NAMED[name.lower()](faker))
    else:
        value = str(faker.word())
    low = int(schema.get("minLength", 0))
    high = schema.get("maxLength")
    while len(value) < low:
        value += faker.word()
    if high is not None:
        value = value[: int(high)]
    return value


def _object(schema: Mapping[str, Any], hints: Mapping[str, Any],
            again: Callable[[Any, str], Any]) -> dict[str, Any]:
    """The required properties (in the order the schema lists them), an optional one only
    where a hint names it, then more optional ones until ``minProperties`` holds."""
    props: Mapping[str, Any] = schema.get("properties") or {}
    required = [name for name in schema.get("required") or () if isinstance(name, str)]
    out = {key: again(sub, key) for key, sub in props.items() if key in required or key in hints}
    extra = schema.get("additionalProperties")
    for key in required:  # required with no schema of its own: what any other property takes
        if key not in out:
            out[key] = again(extra if isinstance(extra, Mapping) else {"type": "string"}, key)
    wanted = schema.get("minProperties")
    for key, sub in props.items():
        if not isinstance(wanted, int) or len(out) >= wanted:
            break
        out.setdefault(key, again(sub, key))
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
        value)


def _bounds(schema: Mapping[str, Any]) -> tuple[float | None, bool, float | None, bool]:
    """(low, low excluded, high, high excluded): ``minimum``/``maximum`` with the 2020 numeric
    ``exclusiveMinimum``/``exclusiveMaximum`` or the draft-4 flags of the same names."""
    found: list[tuple[float | None, bool]] = []
    for plain, exclusive, tighter in (("minimum", "exclusiveMinimum", max),
                                      ("maximum", "exclusiveMaximum", min)):
        bound = schema.get(plain) if _is_number(schema.get(plain)) else None
        flag = schema.get(exclusive)
        opened = flag is True and bound is not None  # draft 4
        if _is_number(flag) and (bound is None or tighter(flag, bound) == flag):
            bound, opened = flag, True
        found.append((bound, opened))
    (low, low_open), (high, high_open) = found
    return low, low_open, high, high_open


def _number(schema: Mapping[str, Any], faker: Faker, integer: bool) -> int | float:
    given_low, low_open, given_high, high_open = _bounds(schema)
    # only a maximum (or neither): the hundred below it, or 0 to 100
    low: float = given_low if given_low is not None else (
        min(0, given_high - 100) if given_high is not None else 0)
    high: float = given_high if given_high is not None else low + 100
    low_open, high_open = low_open and given_low is not None, high_open and given_high is not None
    step = schema.get("multipleOf")
    if isinstance(step, (int, float)) and _is_number(step) and step > 0:
        return _multiple(step, low, low_open, high, high_open, faker)
    whole_low = math.floor(low) + 1 if low_open and float(low).is_integer() else math.ceil(low)
    whole_high = math.ceil(high) - 1 if high_open and float(high).is_integer() \
        else math.floor(high)
    if whole_low <= whole_high:  # a whole number fits: what a model sends for a count
        return faker.random_int(whole_low, whole_high)
    if integer:  # no integer fits: the nearest one is the best answer there is
        return whole_low
    return (low + high) / 2  # only a fraction fits


def _multiple(step: float, low: float, low_open: bool, high: float, high_open: bool,
              faker: Faker) -> int | float:
    """A multiple of ``step`` within the bounds: a whole one where one fits."""
    if not (math.isfinite(low / step) and math.isfinite(high / step)):
        return low  # too many steps to count to the bounds (1e300 in steps of 1e-300)
    first, last = math.ceil(low / step), math.floor(high / step)
    if low_open and first * step <= low:
        first += 1
    if high_open and last * step >= high:
        last -= 1
    if first > last:  # no multiple fits: the lower bound is the best answer there is
        return low
    places = max(0, -int(Decimal(str(step)).as_tuple().exponent))
    start = faker.random_int(first, last)
    tried = itertools.chain(range(start, last + 1), range(first, start))
    fraction: float | None = None
    for k in itertools.islice(tried, 1000):  # a whole multiple, looked for from the draw
        value = round(k * step, places)
        if float(value).is_integer():
            return int(value)
        # one a float division shows to be a multiple (0.3 / 0.1 is not 3 in floats, and a
        # validator reading it so would refuse it)
        if fraction is None and (value / step).is_integer():
            fraction = value
    return fraction if fraction is not None else round(start * step, places)
