"""Sending a cassette's requests again to a live upstream, recorded as the recorder records
(``ormock drift``).

Each recorded HTTP request goes through the recorder's own ``Relay.exchange``, as if a client
had sent it to ``ormock record``: the same forwarding, the same ``Recording`` of what comes back
(chunks and timing), the same interaction. The client side is a stand-in that keeps nothing
and leaves after ``timeout`` seconds (an upstream that stalls is then recorded ``stalled``).

What is sent: the recorded method, path, query and body, and the recorded headers but the
secret ones (``Authorization``, keys, cookies; also anything written ``REDACTED``): the key is
only ever the one given (``key``, sent as ``Authorization: Bearer``), never one a cassette
holds. A query parameter the recorder wrote ``REDACTED`` (a key: Google's ``?key=``) gets
that key in its place; with no key given, the request is not sent (its note says to give
one): ``key=REDACTED`` would only earn an upstream's 400, reported as drift. The ids an
upstream gives are new on every call, so the ids of each earlier answer (the response's
``id``, its items' ``id`` and ``call_id``) are replaced in later requests
(``previous_response_id``, a ``function_call_output``'s ``call_id``, ``/v1/responses/{id}``)
by the ones the upstream gave this time. A WebSocket session is not sent again.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote_plus

from ormock.cassette.model import Cassette, Interaction, RecordedRequest
from ormock.cassette.redact import REDACTED
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.secrets import is_secret_header
from ormock.protocol.types import Message
from ormock.server.relay import Relay, escaped_path, relayed_path

__all__ = ["Resent", "resend"]


@dataclass
class Resent:
    """What came back for each interaction of a cassette, in its order: an interaction, or
    None with a note (``notes``) saying why there is none; ``failed``: the HTTP requests that
    got no answer to compare (an upstream not reached, an answer not recordable)."""

    interactions: list[Interaction | None] = field(default_factory=list)
    notes: dict[int, str] = field(default_factory=dict)
    failed: set[int] = field(default_factory=set)


async def _discard(message: Message) -> None:
    """The stand-in client's socket: what the relay writes to it is not kept."""


def _receive(timeout: float) -> Any:
    async def receive() -> Message:
        await asyncio.sleep(timeout)
        return {"type": "http.disconnect"}
    return receive


def _swap(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, dict):
        return {key: _swap(child, ids) for key, child in value.items()}
    if isinstance(value, list):
        return [_swap(child, ids) for child in value]
    return value


def _query(query: str, key: str | None) -> str:
    """The recorded query as it is sent again: each parameter written ``REDACTED`` (a key the
    recorder took out) given ``key``; ``ValueError`` says what to pass when there is none."""
    parts = query.split("&") if query else []
    for index, part in enumerate(parts):
        name, equals, value = part.partition("=")
        if equals and unquote_plus(value) == REDACTED:
            if key is None:
                raise ValueError(
                    f"not sent: its query's {unquote_plus(name)!r} was recorded REDACTED (a "
                    "key the recorder took out); give --upstream-key-env NAME to send that "
                    "key in its place")
            parts[index] = f"{name}={quote(key, safe='')}"
    return "&".join(parts)


def _scope(request: RecordedRequest, ids: dict[str, str],
           key: str | None = None) -> tuple[dict[str, Any], bytes]:
    """The ASGI scope and body of ``request`` as it is sent again (``key``: the one given, for
    a query parameter recorded ``REDACTED``)."""
    path = "/".join(ids.get(segment, segment) for segment in request.path.split("/"))
    headers: list[tuple[bytes, bytes]] = []
    for name, value in request.headers.items():
        for one in value if isinstance(value, list) else [value]:
            if not is_secret_header(name) and REDACTED not in one:
                headers.append((name.lower().encode("latin-1"), one.encode("latin-1")))
    if request.body is not None:
        body = json.dumps(_swap(request.body, ids), ensure_ascii=False,
                          separators=(",", ":")).encode()
        if not any(name == b"content-type" for name, _ in headers):
            headers.append((b"content-type", b"application/json"))
    else:
        body = (request.text or "").encode()
    scope = {"type": "http", "method": request.method, "path": path,
             "raw_path": escaped_path(path).encode("ascii"),
             "query_string": _query(request.query, key).encode("latin-1"), "headers": headers}
    return scope, body


def _final(interaction: Interaction) -> dict[str, Any] | None:
    """The last Response object of an answer: its JSON body, or its stream's last snapshot."""
    response = interaction.response
    if response is None:
        return None
    if response.body is not None:
        document = response.body.json
        return document if isinstance(document, dict) and "id" in document else None
    found = None
    for message in response.messages or ():
        event = message.event
        if isinstance(event, dict) and isinstance(event.get("response"), dict):
            found = event["response"]
    return found


def _ids(old: Interaction, new: Interaction) -> dict[str, str]:
    """The ids of ``old``'s answer mapped to those of ``new``'s, place by place."""
    before, after = _final(old), _final(new)
    if before is None or after is None:
        return {}
    pairs = [(before, after)]
    old_items, new_items = before.get("output"), after.get("output")
    if isinstance(old_items, list) and isinstance(new_items, list):
        pairs += [(a, b) for a, b in zip(old_items, new_items, strict=False)
                  if isinstance(a, dict) and isinstance(b, dict)]
    return {a[key]: b[key] for a, b in pairs for key in ("id", "call_id")
            if isinstance(a.get(key), str) and isinstance(b.get(key), str) and a[key]}


async def resend(cassette: Cassette, upstream: str, *, key: str | None = None,
                 timeout: float = 60.0, connect_timeout: float = 10.0) -> Resent:
    """Send each of ``cassette``'s HTTP requests to ``upstream`` again, in order, through a
    ``Relay``; what came back, recorded."""
    lines: list[str] = []
    relay = Relay(upstream, upstream_key=key, log=lines.append, name="ormock drift",
                  connect_timeout=connect_timeout)
    out = Resent()
    ids: dict[str, str] = {}
    try:
        for index, interaction in enumerate(cassette.interactions):
            out.interactions.append(None)
            if interaction.response is None:
                out.notes[index] = "a WebSocket session: not sent again"
                continue
            try:
                scope, body = _scope(interaction.request, ids, key)
                target = relayed_path(scope)
            except (ValueError, OpenResponsesError) as error:  # its message: the note
                out.notes[index] = str(error)
                out.failed.add(index)
                continue
            before = len(lines)
            got = await relay.exchange(scope, body, _receive(timeout), _discard,
                                       path=scope["path"], target=target)
            if got is None:
                told = [line.removeprefix("ormock drift: ") for line in lines[before:]]
                out.notes[index] = "; ".join(told) or "nothing came back to record"
                out.failed.add(index)
                continue
            out.interactions[index] = got
            ids.update(_ids(interaction, got))
    finally:
        await relay.aclose()
    return out
