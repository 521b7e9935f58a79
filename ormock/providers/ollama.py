"""Ollama's OpenAI-compatible ``/v1/responses`` (added in Ollama 0.13.3).

Sources:
- https://docs.ollama.com/api/openai-compatibility ("The same client supports stateless
  Responses requests"; "The cloud API does not support stateful Responses")
- ollama/ollama ``openai/responses.go`` (``ResponsesRequest`` has no ``previous_response_id``
  field: one sent is dropped unread; ``background`` and ``conversation``: "for us: not
  supported", read and not acted on; every Response says ``"store": false`` and
  ``"previous_response_id": null``) and ``openai/openai.go`` ``NewError`` (``{"error":
  {"message", "type", "param", "code"}}``, type ``invalid_request_error`` for 400,
  ``not_found_error`` for 404, ``api_error`` otherwise; ``param`` and ``code`` null)
- ollama/ollama ``middleware/openai.go`` ``ResponsesWriter.writeEvent`` (each event written as
  ``event: <type>\\ndata: <json>\\n\\n``; no ``data: [DONE]`` after the last one)

What the profile does: ``previous_response_id``, ``conversation`` and ``background`` are
dropped unread (a continuation is answered without its parent's context; a background request
is answered in the foreground); nothing is stored (``GET /v1/responses/{id}`` 404, no
conversations API); errors in Ollama's envelope; streams end without ``[DONE]``.

Choices: a background request's Response says ``"background": false`` (Ollama echoes what was
sent while it runs it in the foreground); a 404 for a path Ollama does not serve is its JSON
envelope (Ollama's router answers ``404 page not found`` as text); the models listed are a few
Ollama model tags.
"""

from __future__ import annotations

from typing import Any

from ormock.protocol.dialect import SseFraming
from ormock.protocol.profile import Model, Profile
from ormock.protocol.types import Json

__all__ = ["OLLAMA", "error_body", "register"]

_TYPES = {400: "invalid_request_error", 404: "not_found_error"}


def error_body(data: Json, status: int) -> Json:
    """Ollama's ``NewError``: a type by status, ``param`` and ``code`` null."""
    return {"error": {"message": data["error"].get("message", ""),
                      "type": _TYPES.get(status, "api_error"), "param": None, "code": None}}


OLLAMA = Profile(
    "ollama",
    "Ollama's /v1/responses: stateless (previous_response_id, conversation and background "
    "dropped unread, nothing stored), its error envelope, streams with no data: [DONE]",
    stateful=False,
    ignored_fields=("previous_response_id", "conversation", "background"),
    conversations=False,
    framing=SseFraming(done=False),
    done_optional=True,
    error_body=error_body,
    models=(Model("gpt-oss:20b", "library"), Model("llama3.2", "library"),
            Model("qwen3:8b", "library")),
)


def register(registry: Any) -> None:
    registry.profile(OLLAMA)
