"""vLLM's OpenAI-compatible Responses API (``vllm serve``), with its response store off, as it
is unless ``VLLM_ENABLE_RESPONSES_API_STORE=1`` is set.

Sources:
- vllm-project/vllm ``vllm/entrypoints/openai/responses/serving.py``: "If False (default), the
  "store" option is (silently) ignored and the response is not stored"; ``store`` and
  ``background`` together: 400 ``invalid_request_error`` "This vLLM engine does not support
  `store=True` and therefore does not support the background mode. To enable these features,
  set the environment variable `VLLM_ENABLE_RESPONSES_API_STORE=1` when launching the vLLM
  server." (param ``background``); an unknown ``previous_response_id``:
  ``_make_not_found_error``, 404 "Response with id '...' not found." (param ``response_id``)
- ``vllm/entrypoints/openai/responses/api_router.py`` ``_convert_stream_to_sse_events``
  (``event: <type>\\ndata: <json>\\n\\n`` per event, no ``[DONE]``)
- https://docs.vllm.ai/en/latest/api/vllm/entrypoints/openai/responses/api_router/ (the same
  ``_convert_stream_to_sse_events``)
- ``vllm/entrypoints/openai/protocol.py``: ``ErrorResponse`` is ``{"error": {"message",
  "type", "param", "code": int}}``, ``code`` the HTTP status; ``OpenAIBaseModel`` logs "The
  following fields were present in the request but ignored" and drops them

What the profile does: ``store`` is echoed false and nothing is kept; a
``previous_response_id`` is 404 with vLLM's wording (none can be found); ``background: true``
is 400 with vLLM's wording; errors carry the status as ``code``; streams end without
``[DONE]``; no conversations API (404), and ``conversation`` dropped unread (vLLM's request
model ignores fields it does not know).

Choices: ``background`` is refused even beside ``store: false`` (vLLM refuses it only when
``store`` is true, its default); the model listed is the one ``vllm serve`` was given, here a
Hugging Face repo id.
"""

from __future__ import annotations

from typing import Any

from ormock.protocol.dialect import Refusal, SseFraming
from ormock.protocol.profile import Model, Profile
from ormock.protocol.types import Json

__all__ = ["VLLM", "error_body", "register"]


def error_body(data: Json, status: int) -> Json:
    """vLLM's ``ErrorResponse``: the status as ``code``."""
    error = data["error"]
    return {"error": {"message": error.get("message", ""), "type": error.get("type"),
                      "param": error.get("param"), "code": status}}


VLLM = Profile(
    "vllm",
    "vLLM with its response store off (the default): store ignored (nothing kept), "
    "previous_response_id 404, background 400, errors with the status as code, streams with "
    "no data: [DONE]",
    stateful=False,
    continuation=Refusal(404, "Response with id '{id}' not found.", "response_not_found",
                         "response_id"),
    background=False,
    background_refusal=Refusal(400, "This vLLM engine does not support `store=True` and "
                               "therefore does not support the background mode. To enable "
                               "these features, set the environment variable "
                               "`VLLM_ENABLE_RESPONSES_API_STORE=1` when launching the vLLM "
                               "server.", "unsupported_parameter", "background"),
    ignored_fields=("conversation",),
    conversations=False,
    framing=SseFraming(done=False),
    done_optional=True,
    error_body=error_body,
    error_types={"invalid_request": "invalid_request_error",
                 "not_found": "invalid_request_error"},
    models=(Model("Qwen/Qwen3-8B", "vllm"),),
)


def register(registry: Any) -> None:
    registry.profile(VLLM)
