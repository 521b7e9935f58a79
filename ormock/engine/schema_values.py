"""Values that satisfy a JSON Schema, drawn from a seeded Faker, for tool arguments and JSON output.

Covers the JSON Schema a model is given in practice: objects (required and optional
properties), arrays with item counts, enums and consts, strings with formats and lengths,
numbers within bounds, ``anyOf``/``oneOf``/``allOf`` and local ``$ref``. ``hints`` supply values
for properties by name (``location`` taken from the user's words).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from faker import Faker

__all__ = ["value_for"]

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


def value_for(
    schema: Any,
    faker: Faker,
    *,
    hints: Mapping[str, Any] | None = None,
    root: Mapping[str, Any] | None = None,
    name: str = "",
    depth: int = 0,
) -> Any:
    """A value valid against ``schema``; ``root`` resolves ``#/...`` references."""
    if not isinstance(schema, Mapping) or depth > 12:
        return faker.word() if depth <= 12 else None
    root = root if root is not None else schema
    hints = hints or {}

    def again(sub: Any, key: str = name) -> Any:
        return value_for(sub, faker, hints=hints, root=root, name=key, depth=depth + 1)

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
        props: Mapping[str, Any] = schema.get("properties") or {}
        return {key: again(sub, key) for key, sub in props.items()}
    if kind == "array":
        low = int(schema.get("minItems", 1))
        high = int(schema.get("maxItems", max(low, 2)))
        count = max(low, min(high, 2))
        return [again(schema.get("items", {"type": "string"})) for _ in range(count)]
    if kind == "string":
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


def _number(schema: Mapping[str, Any], faker: Faker, integer: bool) -> int | float:
    given_low = schema.get("minimum", schema.get("exclusiveMinimum"))
    given_high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if given_low is None:  # only a maximum (or neither): the hundred below it, or 0 to 100
        given_low = min(0, given_high - 100) if given_high is not None else 0
    low = given_low
    high = given_high if given_high is not None else low + 100
    if "exclusiveMinimum" in schema and "minimum" not in schema:
        low += 1 if integer else 0.5
    if "exclusiveMaximum" in schema and "maximum" not in schema:
        high -= 1 if integer else 0.5
    if integer:
        value: int | float = faker.random_int(int(low), max(int(low), int(high)))
        step = schema.get("multipleOf")
        if isinstance(step, int) and step > 0:
            value = (int(value) // step) * step
            if value < low:
                value += step
        return value
    if high <= low:  # one value fits (or none does: the lower bound is the best answer)
        return float(low)
    return round(faker.pyfloat(min_value=float(low), max_value=float(high)), 2)
