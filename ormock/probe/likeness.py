"""Which profile a live provider is closest to: the behaviours that tell the providers apart,
observed on the battery's exchanges and a few requests of their own, and compared with what
each registered profile does (read from its ``Profile`` value, so a plugin's profile takes
part as the built-in ones do).

The behaviours: how a stream is framed (``event:`` lines, a leading comment, ``data:
[DONE]``); what a ``previous_response_id`` gets (kept, dropped unread, refused with a status);
``store`` as echoed; whether ``GET /v1/responses/{id}`` finds a response; what ``background:
true`` and ``store: false`` get; ``usage`` estimated or null; and the error envelope's shape.
The closest profiles match the most behaviours; every behaviour comes with its evidence.
The three extra requests are not recorded in the cassette (it holds the battery).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

import ormock.plugins  # noqa: F401  (registers the real providers' profiles)
from ormock.probe.battery import Exchange
from ormock.protocol.profile import Profile, get_profile, profile_names
from ormock.protocol.sse import parse_sse
from ormock.protocol.types import Json

__all__ = ["BEHAVIOURS", "Likeness", "expected", "likeness", "observe"]

# an Open Responses error envelope as ormock answers the battery's invalid request
_SAMPLE: Json = {"error": {"message": "'input' must be a string or a list, not an integer.",
                           "type": "invalid_request", "param": "input", "code": "invalid_type"}}
BEHAVIOURS = ("framing", "continuation", "store echoed", "retrieve", "background",
              "store false", "usage", "error envelope")


def shape(body: Any) -> str:
    """A JSON value's shape: its keys and the types of their values (an error ``type``'s
    value too: providers spell it their own way)."""
    if isinstance(body, dict):
        parts = [f"{k}:{body[k]!r}" if k == "type" and isinstance(body[k], str)
                 else f"{k}:{shape(body[k])}" for k in sorted(body)]
        return "{" + ",".join(parts) + "}"
    if isinstance(body, list):
        return "[" + (shape(body[0]) if body else "") + "]"
    return "null" if body is None else type(body).__name__


def framing(data: bytes) -> str:
    """How a stream is framed: ``event lines`` or ``data only``, a leading comment, [DONE]."""
    lines = data.split(b"\n")
    comment = lines[0][1:].strip().decode("utf-8", "replace") if data.startswith(b":") else None
    messages = parse_sse(data)
    events = any(m.event is not None for m in messages if not m.is_done)
    done = any(m.is_done for m in messages)
    return _framing(events, comment, done)


def _framing(events: bool, comment: str | None, done: bool) -> str:
    said = ["event lines" if events else "data only"]
    if comment is not None:
        said.append(f"comment {comment!r}")
    said.append("[DONE]" if done else "no [DONE]")
    return ", ".join(said)


def expected(profile: Profile) -> dict[str, str]:
    """What a server playing ``profile`` shows for each behaviour."""
    if "previous_response_id" in profile.ignored_fields:
        continuation = "dropped"
    elif profile.continuation is not None:
        continuation = f"refused {profile.continuation.status}"
    else:
        continuation = "kept" if profile.stateful else "refused 400"
    if not profile.background:
        background = (f"refused {profile.background_refusal.status}"
                      if profile.background_refusal is not None else "refused 400")
    else:
        background = "foreground" if "background" in profile.ignored_fields else "queued"
    return {
        "framing": _framing(profile.framing.event_lines, profile.framing.comment,
                            profile.framing.done),
        "continuation": continuation,
        "store echoed": str(profile.stateful).lower(),
        "retrieve": "200" if profile.stateful else "404",
        "background": background,
        "store false": "accepted" if profile.unstored else "refused 400",
        "usage": "estimated" if profile.estimated_usage else "null",
        "error envelope": shape(profile.error_envelope(_SAMPLE, 400)),
    }


async def observe(client: httpx.AsyncClient, url: str, headers: dict[str, str],
                  model: str, results: dict[str, Exchange]) -> dict[str, str]:
    """The behaviours the provider showed: read from the battery's exchanges, and from three
    requests of their own (``url``: the provider's ``/v1/responses``)."""
    seen: dict[str, str] = {}
    stream, text = results.get("text-stream"), results.get("text")
    if stream is not None and stream.status == 200 and stream.data:
        seen["framing"] = framing(stream.data)
    previous = results.get("previous-response")
    if previous is not None and previous.status is not None:
        if previous.status >= 400:
            seen["continuation"] = f"refused {previous.status}"
        elif previous.response is not None and text is not None and text.response is not None:
            kept = previous.response.get("previous_response_id") == text.response.get("id")
            seen["continuation"] = "kept" if kept else "dropped"
    invalid = results.get("invalid-request")
    if invalid is not None and invalid.status is not None and invalid.status >= 400:
        seen["error envelope"] = shape(invalid.body)
    if text is None or text.response is None:
        return seen
    response = text.response
    seen["store echoed"] = str(response.get("store")).lower()
    seen["usage"] = "null" if response.get("usage") is None else "estimated"
    answer = await client.get(f"{url}/{response.get('id')}", headers=headers)
    seen["retrieve"] = str(answer.status_code)
    plain = {"model": model, "input": "Say hello in five words."}
    answer = await client.post(url, json={**plain, "background": True}, headers=headers)
    seen["background"] = _mode(answer)
    answer = await client.post(url, json={**plain, "store": False}, headers=headers)
    seen["store false"] = "accepted" if answer.status_code < 400 else \
        f"refused {answer.status_code}"
    return seen


def _mode(answer: httpx.Response) -> str:
    if answer.status_code >= 400:
        return f"refused {answer.status_code}"
    try:
        status = answer.json().get("status")
    except ValueError:
        return "unreadable"
    return "queued" if status in ("queued", "in_progress") else "foreground"


@dataclass
class Likeness:
    """The behaviours observed, and for each profile which of them it matches."""

    observed: dict[str, str]
    matched: dict[str, list[str]] = field(default_factory=dict)  # profile -> behaviours

    @property
    def closest(self) -> list[str]:
        """The profiles that match the most behaviours, in the registry's order."""
        best = max((len(m) for m in self.matched.values()), default=0)
        return [name for name, m in self.matched.items() if len(m) == best]

    def to_dict(self) -> Json:
        return {"closest": self.closest, "observed": self.observed,
                "matched": {name: len(m) for name, m in self.matched.items()},
                "behaviours": len(self.observed)}

    def lines(self) -> list[str]:
        """The verdict, then each behaviour with what was seen and the profiles showing it."""
        closest = self.closest
        out = [f"closest profile: {' = '.join(closest)} ({len(self.matched[closest[0]])} of "
               f"{len(self.observed)} behaviours)" if closest else "closest profile: none"]
        for behaviour in BEHAVIOURS:
            if behaviour not in self.observed:
                continue
            alike = [name for name, m in self.matched.items() if behaviour in m]
            out.append(f"    {behaviour}: {self.observed[behaviour]}  "
                       f"[{', '.join(alike) or 'no profile'}]")
        return out


def likeness(observed: dict[str, str],
             profiles: Callable[[], tuple[str, ...]] = profile_names) -> Likeness:
    """Compare what was observed with every registered profile."""
    found = Likeness(observed)
    for name in profiles():
        want = expected(get_profile(name))
        found.matched[name] = [b for b in BEHAVIOURS if b in observed
                               and observed[b] == want[b]]
    return found
