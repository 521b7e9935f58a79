"""What a probe run found, for people (``ProbeRun.table``: a row per exchange, each finding
under it) and for programs (``ProbeRun.to_dict``, printed by ``--json``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ormock.probe.battery import Exchange
from ormock.probe.likeness import Likeness
from ormock.protocol.types import Json

__all__ = ["ProbeRun"]


@dataclass
class ProbeRun:
    """One run of the battery: where it went, its exchanges in order, and the cassette."""

    upstream: str
    model: str
    profile: str
    cassette: Path
    exchanges: list[Exchange] = field(default_factory=list)
    cassette_error: str | None = None
    likeness: Likeness | None = None  # which profile the provider is closest to

    @property
    def musts(self) -> int:
        return sum(e.musts for e in self.exchanges)

    @property
    def shoulds(self) -> int:
        return sum(len(e.findings) - e.musts for e in self.exchanges)

    @property
    def ok(self) -> bool:
        return self.musts == 0

    def to_dict(self) -> Json:
        return {"upstream": self.upstream, "model": self.model, "profile": self.profile,
                "cassette": str(self.cassette), "cassette_error": self.cassette_error,
                "ok": self.ok, "must": self.musts, "should": self.shoulds,
                "exchanges": [e.to_dict() for e in self.exchanges],
                "likeness": None if self.likeness is None else self.likeness.to_dict()}

    def table(self) -> str:
        width = max([len(e.probe.name) for e in self.exchanges] + [5])
        lines = [f"ormock probe of {self.upstream} (model {self.model}, profile "
                 f"{self.profile})",
                 f"{'probe'.ljust(width)}  status  events        ms  findings"]
        for e in self.exchanges:
            status = "skipped" if e.skipped else str(e.status or "-")
            events = "-" if e.events is None else str(e.events)
            count = f"{e.musts} MUST, {len(e.findings) - e.musts} SHOULD" if e.findings \
                else "0"
            lines.append(f"{e.probe.name.ljust(width)}  {status:>6}  {events:>6}  "
                         f"{e.ms:8.1f}  {count}")
            if e.skipped:
                lines.append(f"    skipped: {e.skipped}")
            lines.extend(f"    {finding}" for finding in e.findings)
        verdict = "every MUST held" if self.ok else f"{self.musts} MUST broken"
        lines.append(f"{len(self.exchanges)} exchanges: {verdict}, {self.shoulds} SHOULD")
        lines.append(f"cassette: {self.cassette}" if self.cassette_error is None
                     else f"cassette NOT written: {self.cassette_error}")
        if self.likeness is not None:
            lines.extend(self.likeness.lines())
        return "\n".join(lines)
