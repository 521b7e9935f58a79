"""Seed 002's platform: a stateful provider built on Open Responses, "OpenAI-compatible subset
v1" (``/work/shared/docs/protocol.md`` section 5; seed 002 itself is in ``seeds/``).

The built-in ``platform`` profile (``ormock.protocol.profile.PLATFORM``) plays it: ``store``
true or left out, no background mode (a cancel is ``400 unsupported_operation``), text
messages and ``function_call_output`` as input, no caller ``instructions``, ``tools`` or
``conversation``, ``usage`` null rather than estimated, ``assistant:`` models on
``/v1/models``, OpenAI's error types; per-key ownership, tombstones and idempotency come from
the stateful server every profile runs on. ``seed002`` is the same profile under the name the
provider list uses; ``platform`` stays, for the suites that name it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ormock.protocol.profile import PLATFORM, Profile

__all__ = ["SEED002", "register"]

SEED002: Profile = replace(PLATFORM, name="seed002",
                           description=f"seed 002's platform (the same as 'platform'): "
                                       f"{PLATFORM.description}")


def register(registry: Any) -> None:
    registry.profile(SEED002)
