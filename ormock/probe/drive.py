"""Driving the upstream: each probe of the battery sent with httpx, its answer recorded as it
comes (``Recording``), judged, and the cassette saved (``save_cassette``) after every probe."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

import httpx

from ormock.cassette.model import Cassette, Ended, Interaction, RecordedRequest
from ormock.cassette.recording import Recording
from ormock.cassette.redact import SecretFound
from ormock.cassette.save import save_cassette
from ormock.probe.battery import BATTERY, Context, Exchange, Probe, Skip
from ormock.probe.checks import judge, must
from ormock.probe.likeness import likeness, observe
from ormock.probe.report import ProbeRun
from ormock.protocol.types import Json

__all__ = ["DEFAULT_MODEL", "Unreachable", "base_url", "default_cassette", "run_probe"]

DEFAULT_MODEL = "gpt-4.1-mini"


class Unreachable(Exception):
    """The upstream answered nothing at all: not a conformance finding."""


def base_url(upstream: str) -> str:
    """The API base of ``upstream``, with or without ``/v1``: ``http://host:port/v1``.
    ``ValueError`` (the recorder's ``check_upstream``) when it is not an http(s) URL."""
    from ormock.server.recorder import check_upstream  # loads uvicorn: not at ``ormock --help``

    parts = urlsplit(check_upstream(upstream.strip()))
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return f"{parts.scheme}://{parts.netloc}{path}"


def default_cassette(upstream: str, now: datetime | None = None) -> Path:
    """``probe-<host>[-<port>]-<UTC>.yaml`` in the current folder."""
    parts = urlsplit(upstream)
    host = (parts.hostname or "upstream").replace(":", "-")
    if parts.port:
        host += f"-{parts.port}"
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return Path(f"probe-{host}-{stamp}.yaml")


async def _send(client: httpx.AsyncClient, url: str, path: str, headers: dict[str, str],
                body: Json) -> tuple[Recording, bytes, Ended, str]:
    """POST ``body``, recording the answer as it comes; returns the recording, the body's
    bytes, how it ended and the content type."""
    content = json.dumps(body, ensure_ascii=False).encode()
    recording = Recording(RecordedRequest("POST", path, headers=dict(headers), body=body))
    data = bytearray()
    ended: Ended = "whole"
    async with client.stream("POST", url, content=content, headers=headers) as answer:
        recording.answer(answer.status_code, answer.headers.multi_items())
        try:
            async for chunk in answer.aiter_bytes():
                recording.chunk(chunk)
                data += chunk
        except httpx.ReadTimeout:
            ended = "stalled"
        except httpx.RemoteProtocolError:
            ended = "closed"
        except httpx.ReadError:
            ended = "reset"
    kind = answer.headers.get("content-type", "").split(";")[0].strip().lower()
    return recording, bytes(data), ended, kind


async def run_probe(upstream: str, *, model: str = DEFAULT_MODEL, key: str | None = None,
                    profile: str = "openai", timeout: float = 60.0,
                    cassette: str | Path | None = None,
                    battery: tuple[Probe, ...] = BATTERY,
                    progress: TextIO | None = None) -> ProbeRun:
    """Run ``battery`` against ``upstream`` and judge every exchange; the cassette is saved
    after each probe. ``Unreachable`` when the first request gets no answer at all."""
    from ormock import __version__
    from ormock.server.recorder import upstream_target  # as in base_url: only a run loads it

    base = base_url(upstream)
    run = ProbeRun(base, model, profile,
                   Path(cassette) if cassette is not None else default_cassette(base))
    context = Context(model, profile)
    url = upstream_target(base, "/v1/responses")
    path = urlsplit(url).path
    interactions: list[Interaction] = []
    from ormock.server.recorder_file import public_url  # no user:password in the file

    origin = public_url(base)
    recorded_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def say(text: str, end: str = "\n") -> None:
        if progress is not None:
            progress.write(text + end)
            progress.flush()

    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout)) as client:
        for number, probe in enumerate(battery, 1):
            exchange = Exchange(probe)
            run.exchanges.append(exchange)
            context.results[probe.name] = exchange
            say(f"[{number}/{len(battery)}] {probe.name}: {probe.what} ...", end=" ")
            try:
                exchange.request = probe.build(context)
            except Skip as skip:
                exchange.skipped = str(skip)
                say(f"skipped ({skip})")
                continue
            headers = {"content-type": "application/json",
                       "accept": "text/event-stream" if probe.stream else "application/json",
                       "accept-encoding": "identity"}
            if key:
                headers["authorization"] = f"Bearer {key}"
            started = time.monotonic()
            try:
                recording, data, ended, kind = await _send(
                    client, url, path, headers, exchange.request)
            except (httpx.ConnectError, httpx.ConnectTimeout) as error:
                if not any(e.status for e in run.exchanges):
                    say("unreachable")
                    raise Unreachable(f"cannot reach {base} ({error or type(error).__name__})"
                                      ) from None
                exchange.findings.append(must("transport", f"no connection: {error}"))
                say("no connection")
                continue
            except httpx.TimeoutException:
                exchange.findings.append(must("transport", f"no answer within {timeout:g} s"))
                say("timed out")
                continue
            except httpx.HTTPError as error:
                exchange.findings.append(must("transport", f"{type(error).__name__}: {error}"))
                say("failed")
                continue
            exchange.ms = (time.monotonic() - started) * 1000
            exchange.status, exchange.ended, exchange.content_type = recording.status, ended, kind
            exchange.data = data
            judge(exchange, data, context)
            interactions.append(recording.interaction(ended))
            events = "" if exchange.events is None else f", {exchange.events} events"
            say(f"{exchange.status}{events}, {exchange.ms:.0f} ms, "
                f"{len(exchange.findings)} findings")
            if run.cassette_error is None:
                try:
                    save_cassette(Cassette(tuple(interactions), profile=profile,
                                           upstream=origin, recorded_at=recorded_at,
                                           recorded_with=f"ormock probe {__version__}"),
                                  run.cassette)
                except SecretFound as error:
                    run.cassette_error = str(error)
                except OSError as error:
                    run.cassette_error = f"cannot write {run.cassette} ({error.strerror})"
        say("which profile it is closest to ...", end=" ")
        try:
            observed = await observe(client, url, _plain(key), model, context.results)
        except httpx.HTTPError as error:  # the battery's report stands without it
            say(f"not measured ({type(error).__name__})")
        else:
            run.likeness = likeness(observed)
            say(", ".join(run.likeness.closest))
    return run


def _plain(key: str | None) -> dict[str, str]:
    """The headers of a request for a JSON answer, as the battery sends them."""
    headers = {"content-type": "application/json", "accept": "application/json",
               "accept-encoding": "identity"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    return headers

