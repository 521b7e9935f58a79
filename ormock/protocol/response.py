"""The Response object: all 31 properties, nullable ones as null, in the schema's order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULT_ECHO", "RESPONSE_PROPERTIES", "new_response", "usage_object"]

RESPONSE_PROPERTIES = (
    "id",
    "object",
    "created_at",
    "completed_at",
    "status",
    "incomplete_details",
    "model",
    "previous_response_id",
    "instructions",
    "output",
    "error",
    "tools",
    "tool_choice",
    "truncation",
    "parallel_tool_calls",
    "text",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "top_logprobs",
    "temperature",
    "reasoning",
    "usage",
    "max_output_tokens",
    "max_tool_calls",
    "store",
    "background",
    "service_tier",
    "metadata",
    "safety_identifier",
    "prompt_cache_key",
)

# What a response says about request parameters the client did not send.
DEFAULT_ECHO: dict[str, Any] = {
    "model": "ormock-1",
    "previous_response_id": None,
    "instructions": None,
    "tools": [],
    "tool_choice": "auto",
    "truncation": "disabled",
    "parallel_tool_calls": True,
    "text": {"format": {"type": "text"}},
    "top_p": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "top_logprobs": 0,
    "temperature": 1.0,
    "reasoning": None,
    "max_output_tokens": None,
    "max_tool_calls": None,
    "store": True,
    "background": False,
    "service_tier": "default",
    "metadata": {},
    "safety_identifier": None,
    "prompt_cache_key": None,
}


def new_response(
    id: str, created_at: int, echo: Mapping[str, Any], status: str = "in_progress"
) -> dict[str, Any]:
    """A response snapshot with no output yet; ``echo`` holds the request's parameters."""
    fixed = {
        "id": id,
        "object": "response",
        "created_at": created_at,
        "completed_at": None,
        "status": status,
        "incomplete_details": None,
        "output": [],
        "error": None,
        "usage": None,
    }
    response = {
        key: fixed[key] if key in fixed else echo.get(key, DEFAULT_ECHO[key])
        for key in RESPONSE_PROPERTIES
    }
    if "conversation" in echo:  # OpenAI's: only on a response that belongs to a conversation
        response["conversation"] = echo["conversation"]
    for key, value in echo.items():  # a project's extension fields (``x_...``), after the rest
        if key.startswith("x_"):
            response[key] = value
    return response


def usage_object(
    input_tokens: int, output_tokens: int, reasoning_tokens: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": input_tokens + output_tokens,
    }
