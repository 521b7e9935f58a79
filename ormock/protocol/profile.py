"""Provider profiles: the spellings a reply uses on the wire, and what the provider accepts.

``openresponses`` (the default) follows the official Open Responses schema. ``openai`` follows
OpenAI's own API where the two differ, for clients that validate against the openai SDK's models:
reasoning text streams as ``response.reasoning_text.delta`` / ``.done`` (Open Responses:
``response.reasoning.delta`` / ``.done``), and a ``json_schema`` text format is echoed with its
schema (Open Responses: ``null``). The checker reads either, given the profile.

The checker also reads how the provider really streams: under ``openai`` the event types OpenAI
sends beyond the Open Responses core (hosted tools, ``response.queued``, ...; the vocabulary of
the openai SDK's ``ResponseStreamEvent``, generated into ``openai_vocabulary.json`` by
``bench/openai_vocabulary.py``: ``ormock.protocol.vocabulary``) are accepted, ``data: [DONE]``
is optional, and reasoning and compaction items may carry a re-encrypted ``encrypted_content``
in the terminal snapshot.

OpenAI's tool-call items (hosted tools, custom tools, computer use, the Codex tools, tool search:
``ormock.protocol.tools``) are not Open Responses items. A profile with ``openai_items``
(``openai``) sends them as OpenAI does, with their own stream events, and its checker holds
them to OpenAI's rules; any other profile (the spec's) sends each as the extension item
``openai:<type>`` (added, then done with its fields), as the spec allows an extension.

A profile also says what its provider accepts and answers (``platform``, seed 002's stateful
subset: ``store`` true, no background, text messages and tool outputs only, no caller
instructions or tools, ``usage`` null rather than estimated, assistants on ``/v1/models``,
OpenAI's error types). The server reads these attributes; no code asks for a profile by name.

Profiles are registered like any plugin's: ``registry.profile(Profile(...))`` in a
``register(registry)``. The built-in ones (``OPENRESPONSES``, ``OPENAI``, ``PLATFORM``, below)
are values of this module, there from the start, so ``profile_names()`` lists them first and a
plugin's after them. A provider of one's own is a plugin::

    from dataclasses import replace
    from ormock.protocol.profile import Model, get_profile

    def register(registry):
        registry.profile(replace(get_profile("platform"), name="acme", description="...",
                                 models=(Model("assistant:asst_acme", "acme", ("responses",)),)))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

from ormock.protocol import events as ev
from ormock.protocol.dialect import SPEC_FRAMING, ErrorBody, Refusal, SseFraming
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.hints import suggest
from ormock.protocol.openai_request import check_openai
from ormock.protocol.request import parse_request
from ormock.protocol.types import Json
from ormock.protocol.vocabulary import openai_vocabulary

if TYPE_CHECKING:
    from ormock.protocol.request import ResponseRequest

__all__ = ["DEFAULT_MODELS", "DEFAULT_PROFILE", "OPENAI", "OPENAI_STATUS_ERRORS", "OPENRESPONSES",
           "PLATFORM", "PROFILES", "STATUS_TYPES", "Model", "Profile", "get_profile",
           "openai_vocabulary", "profile_names", "register_profile"]

@dataclass(frozen=True)
class Model:
    """One entry of ``GET /v1/models``: ``capabilities`` (None: not listed) says what it
    answers (seed 002's assistants: ``responses``, ``realtime`` or both)."""

    id: str
    owned_by: str = "ormock"
    capabilities: tuple[str, ...] | None = None
    created: int = 1767225600  # 2026-01-01, the seeded clock's start

    def listing(self) -> Json:
        entry: Json = {"id": self.id, "object": "model", "created": self.created,
                       "owned_by": self.owned_by}
        if self.capabilities is not None:
            entry["capabilities"] = list(self.capabilities)
        return entry


DEFAULT_MODELS = tuple(Model(m) for m in ("ormock-1", "gpt-4o-mini", "gpt-4.1", "gpt-5"))


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
    openai_items: bool = False  # OpenAI's tool-call items and their events, as OpenAI sends
    # them (False: each as the extension item ``openai:<type>``)
    # what the provider accepts (``check_request``) and answers
    unstored: bool = True  # ``store: false`` is accepted (False: 400 naming ``store``)
    background: bool = True  # it has background mode (False: ``background: true`` is a 400
    # naming ``background``, and cancelling a response ``400 unsupported_operation``)
    input_types: frozenset[str] | None = None  # the input item types taken (None: every one)
    message_parts: frozenset[str] | None = None  # a message's content part types (None: all)
    refused_fields: tuple[str, ...] = ()  # request fields a caller may not set (400 naming it)
    openai_requests: bool = False  # takes the openai SDK's input items, tools and tool_choice
    # forms, checked as the SDK declares them (False: OpenAI's items and tool_choice forms are
    # refused, naming the openai profile; ``ormock.protocol.openai_request``)
    conversations: bool = True  # it has the /v1/conversations API (False: those paths 404)
    estimated_usage: bool = True  # False: ``usage`` is null unless a reply gives its counts
    models: tuple[Model, ...] = DEFAULT_MODELS  # what ``GET /v1/models`` lists, in order
    error_types: Mapping[str, str] = field(default_factory=dict)  # error type -> its spelling
    # how a real provider differs (``ormock.providers``; the defaults are Open Responses')
    stateful: bool = True  # False: nothing is kept (``store`` echoed false, GET .../{id} 404)
    continuation: Refusal | None = None  # a ``previous_response_id`` answered with this error
    ignored_fields: tuple[str, ...] = ()  # request fields the provider drops unread
    background_refusal: Refusal | None = None  # its wording when ``background`` is refused
    refused_tools: Mapping[str, str] = field(default_factory=dict)  # tool type -> why refused
    refused_why: Mapping[str, str] = field(default_factory=dict)  # refused field -> why
    tool_calls_kept: int | None = None  # the function calls a reply keeps (None: every one)
    framing: SseFraming = SPEC_FRAMING  # how its SSE streams are framed
    error_body: ErrorBody | None = None  # its error envelope, made from Open Responses' one
    # an injected HTTP error's envelope as the provider sends it: status -> (type, code), a
    # status not listed taking its class's (400 or 500); empty: the Open Responses spelling
    # (``STATUS_TYPES``, ``code`` the type, or rate_limit_exceeded for a 429)
    status_errors: Mapping[int, tuple[str, str | int | None]] = field(default_factory=dict)
    error_param: str | None = ""  # the ``param`` of an injected error that names none

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

    def check_request(self, request: ResponseRequest, *, create: bool = True) -> None:
        """Refuse what this provider does not accept (an ``OpenResponsesError`` 400 naming the
        field, its type spelled this profile's way); a request it takes passes. ``create``
        False: a ``/v1/responses/compact`` or ``/v1/responses/input_tokens`` body, which has
        no ``store`` or ``background`` (the field and input rules still apply)."""
        beyond = request.beyond_spec
        if self.accepts_all and not beyond:
            return
        body = request.body
        if create:
            self._check_modes(body)
        for index, tool in enumerate(request.tools):
            why = self.refused_tools.get(str(tool.get("type")))
            if why is not None:
                raise self._refuse(f"'tools[{index}].type' {tool.get('type')!r} is not taken "
                                   f"under the {self.name} profile: {why}", f"tools[{index}].type",
                                   "unsupported_value")
        for name in self.refused_fields:
            if body.get(name) not in (None, []):
                why = self.refused_why.get(name, "the assistant brings its own")
                raise self._refuse(f"'{name}' cannot be set by the caller under the "
                                   f"{self.name} profile: {why}; leave '{name}' out.", name,
                                   "unsupported_parameter")
        for index, item in enumerate(request.input):
            kind = item.get("type", "message")
            if self.input_types is not None and kind not in self.input_types:
                raise self._refuse(f"'input[{index}].type' {kind!r} is not taken under the "
                                   f"{self.name} profile; use one of "
                                   f"{', '.join(sorted(self.input_types))}.",
                                   f"input[{index}].type", "unsupported_value")
            content = item.get("content")
            if kind != "message" or self.message_parts is None or not isinstance(content, list):
                continue
            for part_index, part in enumerate(content):
                part_type = part.get("type") if isinstance(part, dict) else None
                if part_type not in self.message_parts:
                    where = f"input[{index}].content[{part_index}].type"
                    raise self._refuse(f"'{where}' {part_type!r} is not taken under the "
                                       f"{self.name} profile: messages are text only ("
                                       f"{', '.join(sorted(self.message_parts))}).", where,
                                       "unsupported_value")
        if beyond:
            check_openai(request, beyond, self.name, self.openai_requests, self._refuse)

    def _check_modes(self, body: Json) -> None:
        """A create request's ``store`` and ``background``, as this provider takes them."""
        if not self.unstored and body.get("store") is False:
            raise self._refuse(f"'store' must be true or left out: the {self.name} profile "
                               "keeps every response (store: false is not supported).",
                               "store", "unsupported_parameter")
        if not self.background and body.get("background"):
            if self.background_refusal is not None:
                raise self.background_refusal.error(self.error_type)
            raise self._refuse(f"The {self.name} profile has no background mode; send "
                               "'background': false or leave it out.", "background",
                               "unsupported_parameter")

    @cached_property
    def accepts_all(self) -> bool:
        """No request rule of its own: ``check_request`` passes every request (a profile is
        frozen: found once)."""
        return (self.unstored and self.background and not self.refused_fields
                and self.input_types is None and self.message_parts is None
                and not self.refused_tools)

    def accepted(self, request: ResponseRequest) -> ResponseRequest:
        """A create request as this provider reads it: its ``ignored_fields`` dropped (the
        request parsed again without them), a ``previous_response_id`` refused when the
        provider answers one with its ``continuation`` error. Most profiles return it as is."""
        if self.continuation is not None and request.previous_response_id is not None:
            raise self.continuation.error(self.error_type, id=request.previous_response_id)
        body = request.body
        if body.keys().isdisjoint(self.ignored_fields):
            return request
        return parse_request({k: v for k, v in body.items() if k not in self.ignored_fields})

    @cached_property
    def respells_errors(self) -> bool:
        """Its error envelopes differ from Open Responses' (a type spelled otherwise, or a
        shape of its own): the server passes them through ``error_envelope``."""
        return bool(self.error_types) or self.error_body is not None

    def error_envelope(self, data: Json, status: int) -> Json:
        """An Open Responses error envelope (``{"error": {...}}``) as this provider sends it
        with ``status``."""
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            spelled = self.error_type(error["type"])
            if spelled != error["type"]:
                data = {**data, "error": {**error, "type": spelled}}
        return self.error_body(data, status) if self.error_body is not None else data

    def _refuse(self, message: str, param: str, code: str) -> OpenResponsesError:
        return OpenResponsesError(message, type=self.error_type("invalid_request"), code=code,
                                  param=param, status=400)

    def error_type(self, type_: str) -> str:
        """An error type as this provider spells it (``invalid_request`` ->
        ``invalid_request_error`` under OpenAI's spelling)."""
        return self.error_types.get(type_, type_)

    def status_error(self, status: int) -> tuple[str, str | int | None]:
        """The ``type`` and ``code`` of an injected HTTP error with this status, spelled as
        this provider sends them (``status_errors``)."""
        table = self.status_errors
        if table:
            found = table.get(status) or table.get(500 if status >= 500 else 400)
            if found is not None:
                return found
        kind = STATUS_TYPES.get(status) or ("server_error" if status >= 500
                                            else "invalid_request")
        return kind, "rate_limit_exceeded" if status == 429 else kind

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


# status -> the Open Responses error type (protocol.md's table, then the usual others)
STATUS_TYPES: dict[int, str] = {
    400: "invalid_request", 401: "authentication_error", 403: "permission_denied",
    404: "not_found", 405: "method_not_allowed", 408: "request_timeout", 409: "conflict",
    413: "request_too_large", 415: "unsupported_media_type", 422: "invalid_request",
    429: "too_many_requests", 500: "server_error", 502: "bad_gateway",
    503: "service_unavailable", 504: "gateway_timeout",
}

# OpenAI's envelopes, as its API answers them (param null unless a field is at fault):
# 429 ``requests``/``rate_limit_exceeded`` (OpenAI's rate-limit guide; protocol.md, section 8);
# 401 ``invalid_api_key``; 403 ``request_forbidden``/``unsupported_country_region_territory``;
# 500 and 503 (``That model is currently overloaded``) ``server_error`` with a null code; 502
# and 524 from its Cloudflare front, with the status as a numeric code (``cf_bad_gateway``,
# ``cf_gateway_timeout``), as reported in public issues of client projects (dspy#203,
# home-assistant#120072, promptr#32)
OPENAI_STATUS_ERRORS: dict[int, tuple[str, str | int | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("request_forbidden", "unsupported_country_region_territory"),
    404: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    502: ("cf_bad_gateway", 502),
    503: ("server_error", None),
    524: ("cf_gateway_timeout", 524),
}

# the built-in profiles, values like any plugin's (``registry.profile``), there from the start

OPENRESPONSES = Profile("openresponses", "the official Open Responses schema (default)")

OPENAI = Profile(
    "openai",
    "OpenAI's own spellings where they differ: response.reasoning_text.* events, the "
    "json_schema format echoed with its schema; the input items, tools and tool_choice forms "
    "of the openai SDK taken and checked as it declares them; the checker also accepts what "
    "OpenAI really streams (hosted-tool events, no data: [DONE], re-encrypted reasoning)",
    event_names={ev.REASONING_DELTA: "response.reasoning_text.delta",
                 ev.REASONING_DONE: "response.reasoning_text.done"},
    echo_json_schema=True,
    vocabulary="openai",
    openai_requests=True,
    done_optional=True,
    reencrypted_items=frozenset({"reasoning", "compaction"}),
    openai_items=True,
    status_errors=OPENAI_STATUS_ERRORS,
    error_param=None,
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


DEFAULT_PROFILE = "openresponses"
PROFILES: dict[str, Profile] = {p.name: p for p in (OPENRESPONSES, OPENAI, PLATFORM)}


def register_profile(profile: Profile) -> Profile:
    """Make a profile selectable by its name (``Registry.profile`` calls this); registering a
    name again replaces that profile."""
    if not isinstance(profile, Profile):
        raise TypeError(f"a profile is an ormock.protocol.profile.Profile, not {profile!r}")
    if not profile.name or not isinstance(profile.name, str):
        raise ValueError(f"a profile needs a name, not {profile.name!r}")
    PROFILES[profile.name] = profile
    return profile


def profile_names() -> tuple[str, ...]:
    """The names a profile may be chosen by (``--profile``, ``ormock_profile``, ``profile=``),
    the default first, then the built-ins, then those plugins registered."""
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
