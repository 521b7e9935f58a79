"""The request journal: what each request was, what answered it, and what went back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["JournalEntry", "masked"]

SECRET_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "cookie", "set-cookie",
                            "openai-organization", "openai-project", "proxy-authorization"})


def masked(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers with secrets replaced, as the journal keeps them."""
    return {k: ("***" if k.lower() in SECRET_HEADERS else v) for k, v in headers.items()}


@dataclass
class JournalEntry:
    """One request the fake received and what it sent back.

    ``at``: seconds since the engine started when the request arrived. ``events``: each event
    sent, as ``{"type", "sequence_number", "offset_ms"}`` (planned offset from the first byte).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float = 0.0
    status: int = 0
    stream: bool = False
    response_id: str | None = None
    response_status: str | None = None
    error: dict[str, Any] | None = None
    scenario: str | None = None
    step: int | None = None
    faults: list[str] = field(default_factory=list)
    # what was sent, kept as the event list and the planned delays; ``events`` is derived on
    # demand so that recording a request costs nothing per event
    sent: tuple[list[dict[str, Any]], list[float] | None] | None = field(
        default=None, repr=False, compare=False
    )

    @property
    def events(self) -> list[dict[str, Any]]:
        if self.sent is None:
            return []
        events, delays = self.sent
        out, offset = [], 0.0
        for index, event in enumerate(events):
            offset += delays[index] if delays else 0.0
            out.append({"type": event.get("type"),
                        "sequence_number": event.get("sequence_number"),
                        "offset_ms": round(offset * 1000, 3)})
        return out

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["sent"]
        data["events"] = self.events
        return data

    @property
    def json(self) -> Any:
        """The request body (parsed JSON)."""
        return self.body
