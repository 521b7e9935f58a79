"""Provider profiles: the spellings a reply uses on the wire.

``openresponses`` (the default) follows the official Open Responses schema. ``openai`` follows
OpenAI's own API where the two differ, for clients that validate against the openai SDK's models:
reasoning text streams as ``response.reasoning_text.delta`` / ``.done`` (Open Responses:
``response.reasoning.delta`` / ``.done``), and a ``json_schema`` text format is echoed with its
schema (Open Responses: ``null``). The checker reads either, given the profile.

The checker also reads how the provider really streams: under ``openai`` the event types OpenAI
sends beyond the Open Responses core (hosted tools, ``response.queued``, ...; the vocabulary of
the openai SDK's ``ResponseStreamEvent``, generated into ``openai_events.json`` by
``bench/openai_events.py``) are accepted, ``data: [DONE]`` is optional, and reasoning and
compaction items may carry a re-encrypted ``encrypted_content`` in the terminal snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from ormock.protocol import events as ev
from ormock.protocol.hints import suggest

__all__ = ["DEFAULT_PROFILE", "PROFILES", "Profile", "get_profile", "openai_vocabulary",
           "profile_names"]

OPENAI_EVENTS = Path(__file__).with_name("openai_events.json")


@cache
def openai_vocabulary() -> dict[str, Any]:
    """The openai SDK's streaming event types (``openai_events.json``): ``{"openai_sdk":
    version, "events": {type: model name}}``."""
    data: dict[str, Any] = json.loads(OPENAI_EVENTS.read_text(encoding="utf-8"))
    return data


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    event_names: Mapping[str, str] = field(default_factory=dict)  # Open Responses -> wire
    echo_json_schema: bool = False
    # what the checker accepts of the provider's streams beyond the Open Responses rules
    vocabulary: str | None = None  # a provider vocabulary: its event types are known ones
    done_optional: bool = False  # the stream may end without data: [DONE]
    reencrypted_items: frozenset[str] = frozenset()  # item types whose encrypted_content the
    # terminal snapshot may carry re-encrypted (it differs from output_item.done's)

    @property
    def known_events(self) -> frozenset[str]:
        """Wire event types this provider sends beyond the Open Responses core (they pass the
        checker's structural rules; anything else is still an unknown event)."""
        if self.vocabulary != "openai":
            return frozenset()
        return _openai_extras(tuple(sorted(self.canonical_names)))

    @property
    def canonical_names(self) -> dict[str, str]:
        return {wire: canonical for canonical, wire in self.event_names.items()}

    @property
    def plain(self) -> bool:
        """Spells everything the Open Responses way."""
        return not self.event_names and not self.echo_json_schema

    @property
    def official_schema(self) -> bool:
        """The checker's schema rule holds payloads to the official Open Responses schema. A
        provider's own payloads (``openai``: hosted-tool items and tools, fields newer or older
        than any schema) are not Open Responses ones: there the rule is not applied."""
        return self.vocabulary is None

    def spellings_only(self) -> Profile:
        """This profile's spellings without its leniency towards real providers' streams: what
        ormock's own streams are held to (the self-check)."""
        if self.vocabulary is None and not self.done_optional and not self.reencrypted_items:
            return self
        return replace(self, vocabulary=None, done_optional=False,
                       reencrypted_items=frozenset())

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


@cache
def _openai_extras(renamed: tuple[str, ...]) -> frozenset[str]:
    return frozenset(openai_vocabulary()["events"]) - ev.CORE_EVENT_TYPES - set(renamed)


DEFAULT_PROFILE = "openresponses"
PROFILES: dict[str, Profile] = {
    "openresponses": Profile(
        "openresponses", "the official Open Responses schema (default)"
    ),
    "openai": Profile(
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
