"""Builders for items and content parts, shaped exactly as the official schema wants them.

Optional properties of nested objects are left out, never sent as null; ``logprobs`` is always
``[]`` on output text (the launch schema requires it).
"""

from __future__ import annotations

from ormock.protocol.types import Json

__all__ = [
    "function_call_item",
    "message_item",
    "output_text_part",
    "reasoning_item",
    "reasoning_text_part",
    "refusal_part",
    "summary_text_part",
    "url_citation",
    "vendor_item",
]


def output_text_part(text: str = "", annotations: list[Json] | None = None) -> Json:
    return {"type": "output_text", "text": text, "annotations": annotations or [], "logprobs": []}


def refusal_part(refusal: str = "") -> Json:
    return {"type": "refusal", "refusal": refusal}


def summary_text_part(text: str = "") -> Json:
    return {"type": "summary_text", "text": text}


def reasoning_text_part(text: str = "") -> Json:
    return {"type": "reasoning_text", "text": text}


def url_citation(url: str, start_index: int, end_index: int, title: str) -> Json:
    return {
        "type": "url_citation",
        "url": url,
        "start_index": start_index,
        "end_index": end_index,
        "title": title,
    }


def message_item(
    id: str,
    status: str,
    content: list[Json],
    role: str = "assistant",
    phase: str | None = None,
) -> Json:
    item: Json = {"id": id, "type": "message", "status": status, "role": role, "content": content}
    if phase is not None:
        item["phase"] = phase
    return item


def function_call_item(id: str, status: str, call_id: str, name: str, arguments: str,
                       namespace: str | None = None) -> Json:
    """A ``function_call`` item; ``namespace``: the namespace tool its function is in (OpenAI's
    field, only there when the call names one)."""
    item = {
        "id": id,
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }
    if namespace is not None:
        item["namespace"] = namespace
    return item


def reasoning_item(
    id: str,
    status: str,
    summary: list[Json],
    content: list[Json] | None = None,
    encrypted_content: str | None = None,
) -> Json:
    item: Json = {"id": id, "type": "reasoning", "status": status, "summary": summary}
    if content is not None:
        item["content"] = content
    if encrypted_content is not None:
        item["encrypted_content"] = encrypted_content
    return item


def vendor_item(type: str, id: str, status: str, fields: Json | None = None) -> Json:
    """An extension item; ``fields`` cannot override its id, type or status."""
    extra = {k: v for k, v in (fields or {}).items() if k not in ("id", "type", "status")}
    return {"id": id, "type": type, "status": status, **extra}
