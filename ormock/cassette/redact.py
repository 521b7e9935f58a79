"""Secrets never reach a cassette file.

``redact`` replaces, in requests and answers, the value of every secret header (the one
definition in ``ormock.protocol.secrets``: Authorization, api-key, x-api-key,
OpenAI-Organization, OpenAI-Project, cookies, set-cookie, anything named like a key or token),
of the extra headers a user names, and of the JSON paths a user names (``metadata.user_id``,
``input[*].content``), with ``REDACTED``. Then ``scan`` reads the whole text about to be
written for anything still key-shaped (``sk-...`` keys, bearer credentials, JWTs, long hex or
base64 values in headers); ``save`` refuses to write when it finds one and says where.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from ormock.cassette.model import (
    Cassette,
    Headers,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    SocketFrame,
    SocketSession,
)
from ormock.protocol.secrets import (
    KEY_PATTERNS,
    is_secret_header,
    mask_query,
    scrub_json,
    scrub_values,
)

__all__ = ["REDACTED", "Leak", "Redaction", "SecretFound", "parse_path", "scan", "scan_headers",
           "scrubbed"]

REDACTED = "REDACTED"

# key-shaped text: provider keys, bearer credentials, JWTs (one definition, in secrets)
_PATTERNS = KEY_PATTERNS
# in a header value: a long run of hex or base64, the shape of a secret token
_HEADER_SECRET = re.compile(r"(?<![A-Za-z0-9+/=_-])(?:[0-9a-fA-F]{40,}|[A-Za-z0-9+/_-]{40,}={0,2})"
                            r"(?![A-Za-z0-9+/=_-])")
# headers whose long values are ids, not secrets
_PLAIN_HEADERS = frozenset({"x-request-id", "openai-request-id", "request-id", "cf-ray",
                            "etag", "x-amzn-trace-id", "traceparent", "content-type", "date",
                            "link", "server-timing"})


@dataclass(frozen=True)
class Leak:
    where: str  # "line 12", or "interaction 2, response header x-trace"
    what: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what} ({self.excerpt})"


class SecretFound(ValueError):
    """The text about to be written still holds something key-shaped: nothing was written."""

    def __init__(self, file: str, leaks: list[Leak]) -> None:
        self.file = file
        self.leaks = leaks
        shown = "; ".join(str(leak) for leak in leaks[:5])
        more = f" and {len(leaks) - 5} more" if len(leaks) > 5 else ""
        super().__init__(
            f"refusing to write {file}: it would hold {shown}{more}. Redact it with "
            "--redact-header NAME or --redact-path JSON.PATH, or take it out of the request")


def _excerpt(text: str) -> str:
    return f"{text[:6]}… ({len(text)} chars)"


def scan(text: str) -> list[Leak]:
    """Everything key-shaped in ``text``, by line."""
    leaks: list[Leak] = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in _PATTERNS:
            leaks.extend(Leak(f"line {number}", what, _excerpt(m.group()))
                         for m in pattern.finditer(line))
    return leaks


def _header_leaks(where: str, headers: Headers) -> Iterator[Leak]:
    for name, value in headers.items():
        if name in _PLAIN_HEADERS:
            continue
        for one in value if isinstance(value, list) else [value]:
            for match in _HEADER_SECRET.finditer(one):
                yield Leak(f"{where} header {name}", "a long secret-shaped value",
                           _excerpt(match.group()))


def scan_headers(cassette: Cassette) -> list[Leak]:
    """Long hex or base64 values left in any header of any interaction."""
    leaks: list[Leak] = []
    for number, interaction in enumerate(cassette.interactions, 1):
        leaks += _header_leaks(f"interaction {number}, request", interaction.request.headers)
        if interaction.response is not None:
            leaks += _header_leaks(f"interaction {number}, response",
                                   interaction.response.headers)
    return leaks


def parse_path(text: str) -> tuple[str, ...]:
    return tuple(part for part in re.split(r"\.|\[|\]", text) if part)


@dataclass(frozen=True)
class Redaction:
    """What is taken out before a cassette is written: the secret headers always, plus
    ``headers`` (names, any case) and ``paths`` (JSON paths into request and response bodies,
    ``*`` for every item or key)."""

    headers: frozenset[str] = frozenset()
    paths: tuple[tuple[str, ...], ...] = ()

    @classmethod
    def of(cls, headers: Iterable[str] = (), paths: Iterable[str] = ()) -> Redaction:
        return cls(frozenset(h.lower() for h in headers), tuple(parse_path(p) for p in paths))

    def header_value(self, name: str, value: str | list[str]) -> str | list[str]:
        if not (is_secret_header(name) or name.lower() in self.headers):
            return value
        return [REDACTED] * len(value) if isinstance(value, list) else REDACTED

    def headers_of(self, headers: Headers) -> Headers:
        return {name: self.header_value(name, value) for name, value in headers.items()}

    def json(self, value: Any) -> Any:
        for path in self.paths:
            value = _redact_path(value, path)
        return value

    def request(self, request: RecordedRequest) -> RecordedRequest:
        return replace(request, headers=self.headers_of(request.headers),
                       query=mask_query(request.query, REDACTED), body=self.json(request.body))

    def response(self, response: RecordedResponse) -> RecordedResponse:
        messages = response.messages
        if messages is not None and self.paths:
            messages = tuple(m if m.event is None else replace(
                m, event=self.json(m.event), raw=None if m.raw is None or
                self.json(m.event) == m.event else m.raw) for m in messages)
        body = response.body
        if body is not None and body.json is not None and self.paths:
            redacted = self.json(body.json)
            if redacted != body.json:
                body = replace(body, json=redacted, raw=None)
        chunks = response.chunks if messages == response.messages and body == response.body \
            else ()
        return replace(response, headers=self.headers_of(response.headers), messages=messages,
                       body=body, chunks=chunks)

    def socket(self, session: SocketSession) -> SocketSession:
        if not self.paths:
            return session
        frames = tuple(f if f.event is None else SocketFrame(
            f.at, f.sender, self.json(f.event), f.text if self.json(f.event) == f.event
            else None) for f in session.frames)
        return replace(session, frames=frames)

    def interaction(self, interaction: Interaction) -> Interaction:
        return replace(
            interaction, request=self.request(interaction.request),
            response=None if interaction.response is None
            else self.response(interaction.response),
            socket=None if interaction.socket is None else self.socket(interaction.socket))

    def cassette(self, cassette: Cassette) -> Cassette:
        return replace(cassette, interactions=tuple(
            self.interaction(i) for i in cassette.interactions))


def scrubbed(interaction: Interaction, values: tuple[str, ...]) -> Interaction:
    """``interaction`` with each of ``values`` (the exact secrets a relay knows its request
    carried: ``secrets.secret_values``, the key it sends among them) taken out of every text,
    as ``***``: an upstream may echo a key back in a form no scan knows (a Google ``AIza...``
    key in an error message). A message or body that changes loses its raw bytes and the
    recorded chunk sizes, as under ``Redaction``."""
    if not values:
        return interaction

    def headers(given: Headers) -> Headers:
        return {n: [scrub_values(x, values) for x in v] if isinstance(v, list)
                else scrub_values(v, values) for n, v in given.items()}

    def text(value: str | None) -> str | None:
        return None if value is None else scrub_values(value, values)

    request = interaction.request
    query = scrub_values(mask_query(request.query, REDACTED), values)  # as ``Redaction``'s
    request = replace(request, query=query,
                      headers=headers(request.headers), body=scrub_json(request.body, values),
                      text=text(request.text))
    response = interaction.response
    if response is not None:
        messages = response.messages
        if messages is not None:
            messages = tuple(replace(m, event=scrub_json(m.event, values), raw=text(m.raw))
                             for m in messages)
        body = response.body
        if body is not None:
            body = replace(body, json=scrub_json(body.json, values), raw=text(body.raw))
        chunks = response.chunks if messages == response.messages and body == response.body \
            else ()
        response = replace(response, headers=headers(response.headers), messages=messages,
                           body=body, chunks=chunks)
    socket = interaction.socket
    if socket is not None:
        socket = replace(socket, frames=tuple(
            replace(f, event=scrub_json(f.event, values), text=text(f.text))
            for f in socket.frames))
    return replace(interaction, request=request, response=response, socket=socket)


def _redact_path(value: Any, path: tuple[str, ...]) -> Any:
    if not path:
        return REDACTED
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        if head == "*":
            return {k: _redact_path(v, rest) for k, v in value.items()}
        if head in value:
            return {**value, head: _redact_path(value[head], rest)}
        return value
    if isinstance(value, list):
        if head == "*":
            return [_redact_path(v, rest) for v in value]
        if head.isdigit() and int(head) < len(value):
            index = int(head)
            return [*value[:index], _redact_path(value[index], rest), *value[index + 1:]]
    return value
