"""Provider profiles: the spellings a reply uses on the wire.

``openresponses`` (the default) follows the official Open Responses schema. ``openai`` follows
OpenAI's own API where the two differ, for clients that validate against the openai SDK's models:
reasoning text streams as ``response.reasoning_text.delta`` / ``.done`` (Open Responses:
``response.reasoning.delta`` / ``.done``), and a ``json_schema`` text format is echoed with its
schema (Open Responses: ``null``). The checker reads either, given the profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ormock.protocol import events as ev
from ormock.protocol.hints import suggest

__all__ = ["DEFAULT_PROFILE", "PROFILES", "Profile", "get_profile", "profile_names"]


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    event_names: Mapping[str, str] = field(default_factory=dict)  # Open Responses -> wire
    echo_json_schema: bool = False

    @property
    def canonical_names(self) -> dict[str, str]:
        return {wire: canonical for canonical, wire in self.event_names.items()}

    @property
    def plain(self) -> bool:
        """Spells everything the Open Responses way."""
        return not self.event_names and not self.echo_json_schema

    def canonical(self, event: dict[str, Any]) -> dict[str, Any]:
        """An event as the Open Responses spelling would have it (a copy when it differs), for
        the checker to hold to the official schema."""
        wire = event.get("type")
        names = self.canonical_names
        if wire in names:
            event = {**event, "type": names[wire]}
        response = event.get("response")
        if self.echo_json_schema and isinstance(response, dict):
            fmt = (response.get("text") or {}).get("format") or {}
            if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and fmt.get("schema"):
                text = {**response["text"], "format": {**fmt, "schema": None}}
                event = {**event, "response": {**response, "text": text}}
        return event

    def rename(self, events: list[dict[str, Any]]) -> None:
        """Give freshly built events this profile's wire names (in place)."""
        if not self.event_names:
            return
        for event in events:
            wire = self.event_names.get(event["type"])
            if wire is not None:
                event["type"] = wire


DEFAULT_PROFILE = "openresponses"
PROFILES: dict[str, Profile] = {
    "openresponses": Profile(
        "openresponses", "the official Open Responses schema (default)"
    ),
    "openai": Profile(
        "openai",
        "OpenAI's own spellings where they differ: response.reasoning_text.* events, the "
        "json_schema format echoed with its schema",
        event_names={ev.REASONING_DELTA: "response.reasoning_text.delta",
                     ev.REASONING_DONE: "response.reasoning_text.done"},
        echo_json_schema=True,
    ),
}


def profile_names() -> tuple[str, ...]:
    """The names a profile may be chosen by (``--profile``, ``ormock_profile``, ``profile=``),
    the default first."""
    return tuple(PROFILES)


def get_profile(profile: Profile | str | None) -> Profile:
    """A profile by name (None: the default); an unknown name is a ``ValueError`` listing the
    names."""
    if isinstance(profile, Profile):
        return profile
    name = profile or DEFAULT_PROFILE
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}{suggest(name, PROFILES)}: use one of "
                         f"{', '.join(profile_names())}") from None
