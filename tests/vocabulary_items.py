"""A minimal instance of each input item type of the openai SDK, made from the generated
vocabulary (``ormock/protocol/openai_vocabulary.json``): its required fields only."""

from __future__ import annotations

from typing import Any

from ormock.protocol.vocabulary import openai_vocabulary

Json = dict[str, Any]
VOCABULARY = openai_vocabulary()


def minimal(shape: Any) -> Any:
    """The smallest value ``shape`` (the vocabulary's) takes: required fields only."""
    if isinstance(shape, str):
        return {"string": "x", "integer": 1, "number": 1, "boolean": True, "null": None,
                "any": {}}[shape]
    if "enum" in shape:
        return shape["enum"][0]
    if "array" in shape:
        return []
    if "map" in shape:
        return {}
    if "model" in shape:
        model = VOCABULARY["models"][shape["model"]]
        return {name: minimal(model["fields"][name]) for name in model["required"]}
    return minimal(next((s for s in shape["any_of"] if s != "null"), "null"))


def minimal_item(kind: str) -> Json:
    item: Json = minimal({"model": VOCABULARY["input_items"][kind][0]})
    item["type"] = kind
    if kind == "message":
        item["content"] = "hi"
    if kind == "function_call_output":  # the SDK declares call_id optional; no provider does
        item["call_id"] = "call_1"
    return item
