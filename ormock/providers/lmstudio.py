"""LM Studio's OpenAI-compatible ``/v1/responses`` (LM Studio 0.3.29 and later).

Sources:
- https://lmstudio.ai/blog/lmstudio-v0.3.29 ("Stateful interactions - pass a
  previous_response_id to continue interactions without needing to manage message history
  yourself"; "Remote MCP - enable the model to call tools from remote MCP servers, requires
  explicit opt-in in settings")
- https://lmstudio.ai/docs/developer/openai-compat/responses ("Use the id from a previous
  response as previous_response_id"; "Enable Remote MCP in the app (Developer → Settings)";
  streamed events such as ``response.created``, ``response.output_text.delta``,
  ``response.completed``)

What the profile does: stateful, as Open Responses is (responses kept, continuations resolved);
a tool of type ``mcp`` is refused (400 naming it) as with Remote MCP off, LM Studio's default.
A plugin plays a server with Remote MCP on: ``replace(get_profile("lmstudio"),
name="lmstudio-mcp", refused_tools={})``.

Choices where the docs say nothing: no background mode (400 naming ``background``); no
conversations API (404) and ``conversation`` refused; errors in OpenAI's envelope
(``invalid_request_error``); streams framed as Open Responses frames them (``event:`` lines,
``data: [DONE]``); the models listed are LM Studio's ``publisher/model`` keys.
"""

from __future__ import annotations

from typing import Any

from ormock.protocol.profile import Model, Profile

__all__ = ["LMSTUDIO", "register"]

LMSTUDIO = Profile(
    "lmstudio",
    "LM Studio's /v1/responses: stateful (previous_response_id resolved), remote MCP tools "
    "refused unless opted in, no background mode, no conversations API",
    background=False,
    refused_fields=("conversation",),
    refused_why={"conversation": "it has no conversations API"},
    refused_tools={"mcp": "Remote MCP is off; enable it in LM Studio (Developer → Settings)"},
    conversations=False,
    error_types={"invalid_request": "invalid_request_error",
                 "not_found": "invalid_request_error"},
    models=(Model("openai/gpt-oss-20b", "organization_owner"),
            Model("ibm/granite-4-micro", "organization_owner")),
)


def register(registry: Any) -> None:
    registry.profile(LMSTUDIO)
