"""A first-party ormock plugin: context-window limits.

Registers the match check ``input_tokens_over: N`` (the request's input text and instructions
hold more than N tokens, counted as ormock counts usage) and the scenario ``context-limit``,
which answers such requests the way OpenAI does, with 400 ``context_length_exceeded``, and the
rest with a plain message.

    ormock serve --plugin plugins/context_limit/__init__.py --scenario context-limit
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ormock.protocol.tokens import count_tokens
from ormock.scenario.matching import RequestView, StepResponses


def _positive(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("input_tokens_over takes a whole number of tokens, e.g. 1000")
    return value


def input_tokens_over(view: RequestView, limit: int, _: StepResponses) -> str | None:
    tokens = count_tokens(view.input_text) + count_tokens(view.instructions)
    if tokens > limit:
        return None
    return f"the input has {tokens} tokens, not more than {limit}"


def register(registry: Any) -> None:
    registry.check("input_tokens_over", _positive)(input_tokens_over)
    registry.scenarios(Path(__file__).resolve().parent)
