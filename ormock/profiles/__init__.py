"""The built-in provider profiles, registered the way a plugin registers its own
(``registry.profile``): ``openresponses`` (the default), ``openai`` and ``platform``.

They live in the package, not in ``plugins/``, because every install needs them (``plugins/`` is
not in the wheel) and the default must exist without ``--plugin``; ``ormock.protocol.profile``
loads this plugin on first use. A provider of one's own is a plugin like this one::

    from dataclasses import replace
    from ormock.protocol.profile import Model, get_profile

    def register(registry):
        registry.profile(replace(get_profile("platform"), name="acme", description="...",
                                 models=(Model("assistant:asst_acme", "acme", ("responses",)),)))
"""

from __future__ import annotations

from typing import Any

from ormock.protocol import events as ev
from ormock.protocol.profile import Model, Profile

__all__ = ["OPENAI", "OPENRESPONSES", "PLATFORM", "register"]

OPENRESPONSES = Profile("openresponses", "the official Open Responses schema (default)")

OPENAI = Profile(
    "openai",
    "OpenAI's own spellings where they differ: response.reasoning_text.* events, the "
    "json_schema format echoed with its schema; the checker also accepts what OpenAI really "
    "streams (hosted-tool events, no data: [DONE], re-encrypted reasoning)",
    event_names={ev.REASONING_DELTA: "response.reasoning_text.delta",
                 ev.REASONING_DONE: "response.reasoning_text.done"},
    echo_json_schema=True,
    vocabulary="openai",
    done_optional=True,
    reencrypted_items=frozenset({"reasoning", "compaction"}),
)

# seed 002: a stateful provider's "OpenAI-compatible subset v1" of the Responses API
PLATFORM = Profile(
    "platform",
    "a stateful provider's subset (seed 002): store true or left out, no background, text "
    "messages and function_call_output as input, no caller instructions, tools or "
    "conversation, usage null (never estimated), assistants on /v1/models, OpenAI's error "
    "types",
    unstored=False,
    background=False,
    input_types=frozenset({"message", "function_call_output"}),
    message_parts=frozenset({"input_text", "output_text", "text", "refusal"}),
    refused_fields=("instructions", "tools", "conversation"),
    conversations=False,
    estimated_usage=False,
    models=(
        Model("assistant:asst_ormock_text", "platform", ("responses",)),
        Model("assistant:asst_ormock_voice", "platform", ("responses", "realtime")),
        Model("assistant:asst_ormock_realtime", "platform", ("realtime",)),
    ),
    error_types={"invalid_request": "invalid_request_error",
                 "not_found": "invalid_request_error"},
)


def register(registry: Any) -> None:
    for profile in (OPENRESPONSES, OPENAI, PLATFORM):
        registry.profile(profile)
