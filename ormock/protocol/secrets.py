"""Which request headers and body fields carry secrets, and how ormock shows them: the one
definition that the journal, near-miss messages, the admin API and the pytest reports all use.
A body field holds a secret by its name and its value's shape together (``is_secret_field``):
``prompt_cache_key: "thread-7"`` is a name the client chose, not a key.

A header is secret when its lower-cased name is one of ``SECRET_HEADERS``, ends with ``-key``
or ``-token``, or contains ``secret``, ``password`` or ``cookie``. The journal keeps a secret
value as ``***``, and key-shaped text in any other header masked too; a message about it
shows at most the auth scheme and the first 3 characters of the credential, and its length:
``'Bearer sk-…' (masked, 20 chars)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import unquote_plus

__all__ = ["KEY_PATTERNS", "KEY_STARTS", "MASK", "SECRET_HEADERS", "TOO_DEEP", "is_secret_field",
           "is_secret_header", "is_secret_param", "mask_headers", "mask_json", "mask_query",
           "mask_text", "mask_value", "scrub", "scrub_json", "scrub_values", "secret_values",
           "shown_value"]

MASK = "***"
SECRET_HEADERS = frozenset({
    "authorization", "proxy-authorization", "api-key", "x-api-key", "x-goog-api-key",
    "x-auth-token", "openai-organization", "openai-project", "cookie", "set-cookie",
})
_SUFFIXES = ("-key", "-token")
_PARTS = ("secret", "password", "cookie")
# HTTP auth schemes kept in a masked value, so that a wrong scheme shows (lower case)
_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate", "apikey", "key",
                      "ntlm", "oauth", "dpop", "hoba", "mutual"})
# key-shaped text: provider keys, bearer credentials, JWTs (the cassettes' last scan too)
KEY_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an API key (sk-...)", re.compile(r"\bsk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_-]{16,}")),
    ("a bearer credential", re.compile(r"\b[Bb]earer\s+(?!REDACTED\b)[A-Za-z0-9._~+/=-]{12,}")),
    ("a JWT", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
)
# text each match of KEY_PATTERNS holds (tests/test_secrets.py holds it): text without any
# of them holds no key
KEY_STARTS = ("sk-", "earer", "eyJ")
_KEPT = 3  # characters of the credential itself a masked value keeps, at most
_SCRUBBED = 8  # secret values at least this long are taken out of any message


@lru_cache(maxsize=1024)  # header names repeat from request to request; a bounded memo
def is_secret_header(name: str) -> bool:
    """Whether a header's value is a secret (names in any case)."""
    lowered = name.strip().lower()
    return (lowered in SECRET_HEADERS or lowered.endswith(_SUFFIXES)
            or any(part in lowered for part in _PARTS))


def mask_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers with each secret value replaced by ``***`` (as the journal keeps them), and
    key-shaped text in any other (``mask_text``: a key under a gateway's own header name,
    ``Helicone-Auth: Bearer sk-...``)."""
    masked = dict(headers)  # a copy of them all, then only the secret ones replaced
    for name in filter(is_secret_header, headers):
        masked[name] = MASK
    joined = "\n".join(masked.values())  # one look for the usual request, with none
    if any(start in joined for start in KEY_STARTS):
        for name, value in masked.items():
            masked[name] = mask_text(value)
    return masked


def _split(value: str) -> tuple[str, str]:
    """``(scheme and its spaces, credential)``; no scheme unless it is a known auth scheme."""
    word, space, rest = value.partition(" ")
    if space and word.lower() in _SCHEMES:
        stripped = rest.lstrip(" ")
        return value[: len(value) - len(stripped)], stripped
    return "", value


def mask_value(name: str, value: str) -> str:
    """The value to show for a header: itself, or for a secret the auth scheme and at most 3
    characters of the credential (fewer for a short one) followed by ``…``."""
    if not is_secret_header(name):
        return value
    scheme, credential = _split(value)
    return scheme + credential[: min(_KEPT, len(credential) // 4)] + "\u2026"


def shown_value(name: str, value: str) -> str:
    """A header's value as a message quotes it: ``'acme-1'``, or for a secret
    ``'Bearer sk-…' (masked, 20 chars)``."""
    if not is_secret_header(name):
        return repr(value)
    return f"{mask_value(name, value)!r} (masked, {len(value)} chars)"


def scrub(text: str, headers: Mapping[str, str]) -> str:
    """``text`` with every secret header value of ``headers`` (and its credential without the
    scheme) taken out, for messages built by code that did not mask them (a plugin's check)."""
    return scrub_values(text, secret_values(headers))


def secret_values(headers: Mapping[str, str], query: str = "",
                  *known: str | None) -> tuple[str, ...]:
    """The exact secrets a request carries, longest first: each secret header's value and its
    credential without the scheme, each secret query parameter's value (``is_secret_param``),
    and ``known`` (a key a relay sends in their place); those of at least 8 characters (a
    shorter one would take ordinary words out of a text)."""
    found = {k for k in known if k}
    for name, value in headers.items():
        if is_secret_header(name):
            found.update((value, _split(value)[1]))
    for _, _, value in _secret_params(query.split("&")) if query else ():
        found.update((value, unquote_plus(value)))
    return tuple(sorted((v for v in found if len(v) >= _SCRUBBED), key=len, reverse=True))


def scrub_values(text: str, values: Iterable[str]) -> str:
    """``text`` with each of ``values`` (``secret_values``: longest first) replaced by
    ``***``."""
    for value in values:
        if value in text:
            text = text.replace(value, MASK)
    return text


def scrub_json(value: Any, values: tuple[str, ...]) -> Any:
    """A JSON value with ``scrub_values`` applied to each string in it, keys too."""
    if not values:
        return value
    if isinstance(value, str):
        return scrub_values(value, values)
    if isinstance(value, list):
        return [scrub_json(v, values) for v in value]
    if isinstance(value, dict):
        return {scrub_values(k, values) if isinstance(k, str) else k: scrub_json(v, values)
                for k, v in value.items()}
    return value


def mask_text(text: str) -> str:
    """``text`` with everything key-shaped (``KEY_PATTERNS``) replaced by ``***``."""
    for _, pattern in KEY_PATTERNS:
        text = pattern.sub(MASK, text)
    return text


_MASK_DEPTH = 64  # levels shown; deeper data is not shown at all (nor walked)
TOO_DEEP = f"(nested deeper than {_MASK_DEPTH} levels: not shown)"


# body fields named like a secret that hold identifiers, never credentials (a cache key is
# a name the client chose for its prompt prefix; an idempotency key, a page token, ...)
_NOT_SECRET_FIELDS = ("cache_key", "idempotency_key", "partition_key", "sort_key",
                      "primary_key", "foreign_key", "routing_key", "dedupe_key", "dedup_key",
                      "object_key", "lookup_key", "page_token", "cursor_token")
_CREDENTIAL = re.compile(r"\S{4,}")  # a credential: one word, not prose, not a stub


@lru_cache(maxsize=1024)
def _secret_field_name(name: str) -> bool:
    lowered = name.strip().lower().replace("-", "_")
    if lowered.endswith(_NOT_SECRET_FIELDS):
        return False
    return is_secret_header(lowered.replace("_", "-"))


def is_secret_field(name: str, value: Any) -> bool:
    """Whether a JSON body field holds a secret: by its name AND its value. The name is one a
    secret header could have (``api_key``, ``password``, ``client_secret``, ``x-api-key``,
    ``refresh_token``; ``_`` read as ``-``) and not an identifier's (``prompt_cache_key``,
    ``idempotency_key``, ``page_token``: ``_NOT_SECRET_FIELDS``); the value is shaped like a
    credential: a string of one word of at least 4 characters (after an auth scheme), not a
    sentence, a number or a stub. Key-shaped text (``KEY_PATTERNS``) is a secret under any
    name (``mask_text``)."""
    return (isinstance(value, str) and _CREDENTIAL.fullmatch(_split(value)[1]) is not None
            and _secret_field_name(name))


# query parameters that carry a key by their name alone, besides the secret field names
# (``api_key``, ``access_token``): Google's ``?key=``, ``apikey``, a bare ``token``, a SAS ``sig``
_SECRET_PARAMS = frozenset({"key", "apikey", "token", "sig"})


def is_secret_param(name: str, value: str) -> bool:
    """Whether a URL query parameter holds a secret: a secret field (``is_secret_field``), or
    one of ``_SECRET_PARAMS`` with a value."""
    lowered = name.strip().lower().replace("-", "_")
    return is_secret_field(name, value) or (lowered in _SECRET_PARAMS and value != "")


def mask_query(query: str, mask: str = MASK) -> str:
    """A URL's query (``a=1&key=AIza...``) with the value of each parameter that holds a
    secret replaced by ``mask``, and everything else as it was written."""
    parts = query.split("&")
    for index, name, _ in _secret_params(parts):
        parts[index] = f"{name}={mask}"
    return "&".join(parts)


def _secret_params(parts: list[str]) -> Iterator[tuple[int, str, str]]:
    """The place, name and value (as written) of each ``name=value`` of a query's ``parts``
    that holds a secret (``is_secret_param``, on their decoded text)."""
    for index, part in enumerate(parts):
        name, equals, value = part.partition("=")
        if equals and is_secret_param(unquote_plus(name), unquote_plus(value)):
            yield index, name, value


def mask_json(value: Any, _depth: int = 0) -> Any:
    """Plain JSON data with secrets masked, for showing it (the journal, the inspector page):
    the value of a field that holds a secret (``is_secret_field``) becomes ``***``, and
    key-shaped text anywhere in a string is masked. Data nested deeper than 64 levels is
    replaced by ``TOO_DEEP``: never shown unmasked, never walked."""
    if isinstance(value, str):
        return mask_text(value)
    if not isinstance(value, (list, dict)):
        return value
    if _depth >= _MASK_DEPTH:
        return TOO_DEEP
    if isinstance(value, list):
        return [mask_json(v, _depth + 1) for v in value]
    return {k: (MASK if isinstance(k, str) and is_secret_field(k, v)
                else mask_json(v, _depth + 1)) for k, v in value.items()}
