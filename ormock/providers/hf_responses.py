"""Hugging Face's ``responses.js``: the Responses API on top of a Chat Completions API (the
Hugging Face router by default), served as ``/v1/responses``.

Sources:
- https://github.com/huggingface/responses.js (its README lists remote function calling, MCP
  servers, file upload and the stateful API as missing; background mode and the ``GET``, ``DELETE``,
  ``CANCEL`` routes still to do; models named ``provider@model``, as
  ``cerebras@meta-llama/Llama-3.3-70B-Instruct`` in ``examples/mcp.js``)
- ``src/routes/responses.ts``: a stream is written as ``data: <json>\\n\\n`` per event (no
  ``event:`` line, no ``data: [DONE]``); with several tool calls in one chunk "Multiple tool
  calls are not supported. Only the first one will be processed."
- ``src/schemas.ts``: ``previous_response_id``, ``store`` and ``background`` are commented out
  of the request schema, so zod drops them unread; ``src/middleware/validation.ts``: an
  invalid body is 400 ``{"success": false, "error": [<zod issues>], "details": [...]}``

What the profile does: stateless (``previous_response_id``, ``store``, ``background`` and
``conversation`` dropped unread; nothing kept, so ``GET /v1/responses/{id}`` is 404); a reply
keeps only its first function call; streams of ``data:`` lines only and no ``[DONE]``; errors
as ``responses.js`` sends them: a 400 as a list of zod-shaped issues (``code``, ``path``,
``message``), any other status as ``{"success": false, "error": <message>}``.

Choices: the issues' ``code`` is ormock's error code, their ``path`` its ``param`` split at the
dots; no conversations API (404); the models listed are ``provider@model`` names.
"""

from __future__ import annotations

import re
from typing import Any

from ormock.protocol.dialect import SseFraming
from ormock.protocol.profile import Model, Profile
from ormock.protocol.types import Json

__all__ = ["HF_RESPONSES", "error_body", "register"]


def _path(param: object) -> list[str | int]:
    if not isinstance(param, str) or not param:
        return []
    return [int(p) if p.isdigit() else p for p in re.split(r"[.\[\]]+", param) if p]


def error_body(data: Json, status: int) -> Json:
    """``responses.js``'s error body: a 400's zod issues, else the message."""
    error = data["error"]
    message = error.get("message", "")
    if status != 400:
        return {"success": False, "error": message}
    issues = [{"code": error.get("code"), "path": _path(error.get("param")), "message": message}]
    return {"success": False, "error": issues, "details": issues}


HF_RESPONSES = Profile(
    "hf-responses",
    "Hugging Face's responses.js: stateless (previous_response_id, store and background "
    "dropped unread), data:-only SSE with no [DONE], only the first tool call kept, "
    "provider@model names, zod-shaped 400s",
    stateful=False,
    ignored_fields=("previous_response_id", "store", "background", "conversation"),
    tool_calls_kept=1,
    conversations=False,
    framing=SseFraming(event_lines=False, done=False),
    done_optional=True,
    error_body=error_body,
    models=(Model("cerebras@meta-llama/Llama-3.3-70B-Instruct", "cerebras"),
            Model("groq@moonshotai/Kimi-K2-Instruct", "groq"),
            Model("together@Qwen/Qwen3-235B-A22B", "together")),
)


def register(registry: Any) -> None:
    registry.profile(HF_RESPONSES)
