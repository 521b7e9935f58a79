"""OpenRouter's Responses API Beta (``https://openrouter.ai/api/v1/responses``).

Sources:
- https://openrouter.ai/docs/api/reference/responses/overview ("This API is stateless - each
  request is independent and no conversation state is persisted between requests. You must
  include the full conversation history in each request.")
- https://openrouter.ai/docs/errors (``{"error": {"code": number, "message": string,
  "metadata"?: {...}}}``, the HTTP status equal to ``error.code``; 400, 401, 402 "insufficient
  credits", 403, 408, 429, 502, 503)
- https://openrouter.ai/docs/api-reference/streaming ("OpenRouter occasionally sends comments
  to prevent connection timeouts. These comments look like: ``: OPENROUTER PROCESSING``")

What the profile does:
- stateless: nothing is stored (``store`` echoed false, ``GET /v1/responses/{id}`` 404), no
  conversations API (404), and ``conversation`` refused (400).
- every error ormock answers (validation 400s, 404s, injected ``http_error`` faults: a 402
  among them) goes out as ``{"error": {"code": <status>, "message", "metadata"}}``, with
  ormock's own ``type``, ``param`` and ``code`` kept in ``metadata``.
- a stream begins with the ``: OPENROUTER PROCESSING`` comment.

Choices where the docs say nothing: a ``previous_response_id`` is refused with a 400 naming it
(the docs only say no state is kept); ``background: true`` is refused (400: nothing could be
retrieved later); stream events carry ``data:`` lines only and the stream ends with
``data: [DONE]``, as OpenRouter's other streaming endpoints do; one comment at the start (the
real one repeats it while a model is slow); mid-stream ``error`` events keep the Open
Responses shape; the models listed are a few of OpenRouter's ``vendor/model`` ids.
"""

from __future__ import annotations

from typing import Any

from ormock.protocol.dialect import Refusal, SseFraming
from ormock.protocol.profile import Model, Profile
from ormock.protocol.types import Json

__all__ = ["OPENROUTER", "error_body", "register"]


def error_body(data: Json, status: int) -> Json:
    """OpenRouter's error envelope: the HTTP status as ``code``, ormock's details in
    ``metadata``."""
    error = data["error"]
    metadata = {k: error.get(k) for k in ("type", "param", "code") if error.get(k) is not None}
    return {"error": {"code": status, "message": error.get("message", ""),
                      "metadata": metadata or None}}


OPENROUTER = Profile(
    "openrouter",
    "OpenRouter's Responses API Beta: stateless (previous_response_id and conversation "
    "refused, nothing stored), errors as {error: {code, message, metadata}}, streams opened by "
    "a ': OPENROUTER PROCESSING' comment with data: lines only",
    stateful=False,
    continuation=Refusal(400, "'previous_response_id' is not supported: the Responses API "
                         "Beta is stateless; send the whole conversation in 'input'.",
                         "unsupported_parameter", "previous_response_id"),
    background=False,
    background_refusal=Refusal(400, "'background' is not supported: the Responses API Beta is "
                               "stateless; send the request without it.",
                               "unsupported_parameter", "background"),
    refused_fields=("conversation",),
    refused_why={"conversation": "it keeps no conversations"},
    conversations=False,
    framing=SseFraming(event_lines=False, comment="OPENROUTER PROCESSING"),
    done_optional=False,
    error_body=error_body,
    models=(Model("openai/gpt-4o-mini", "openai"), Model("anthropic/claude-sonnet-4", "anthropic"),
            Model("meta-llama/llama-3.3-70b-instruct", "meta-llama")),
)


def register(registry: Any) -> None:
    registry.profile(OPENROUTER)
