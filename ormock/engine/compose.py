"""Composing a reply's events: the checks a planned stream passes before it may be sent."""

from __future__ import annotations

from ormock.protocol.checker import check_stream
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.profile import Profile
from ormock.protocol.types import Json

__all__ = ["self_check"]


def self_check(events: list[Json], profile: Profile) -> None:
    """Refuse to send a planned stream that breaks the protocol or the official schema."""
    # the profile's spellings, held to every Open Responses rule (none of its leniency)
    report = check_stream(events, schema=True, profile=profile.spellings_only())
    if not report.ok:
        raise OpenResponsesError(
            "ormock planned a stream that breaks the protocol (self-check is on): "
            + "; ".join(map(str, report.violations[:5])),
            type="server_error",
            code="self_check_failed",
            status=500,
        )
