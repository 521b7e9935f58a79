"""A drift report: per cassette, each interaction's changes of shape (``ormock.cassette.drift``),
and a summary; as text, as JSON, or as a Markdown table for a CI comment.

``ormock drift`` and ``ormock cassette diff`` print it; both exit 1 when ``changed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ormock.cassette.drift import Change, Compared

__all__ = ["CassetteDrift", "DriftReport"]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


@dataclass
class CassetteDrift:
    """One cassette's comparison: ``file`` (and what it was compared with, ``against``), each
    interaction's result, the new recording written (``written``), what went wrong writing
    it (``problem``)."""

    file: str
    compared: list[Compared] = field(default_factory=list)
    against: str | None = None
    written: str | None = None
    problem: str | None = None

    @property
    def drifted(self) -> list[Compared]:
        return [c for c in self.compared if c.changes]

    @property
    def changes(self) -> int:
        return sum(len(c.changes) for c in self.compared)

    @property
    def not_compared(self) -> list[Compared]:
        return [c for c in self.compared if c.note is not None]

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "against": self.against, "changed": bool(self.drifted),
                "changes": self.changes, "written": self.written, "problem": self.problem,
                "interactions": [c.to_dict() for c in self.compared]}


@dataclass
class DriftReport:
    """Every cassette's comparison under one ``title`` (what was compared with what)."""

    title: str
    cassettes: list[CassetteDrift] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(c.drifted for c in self.cassettes)

    def summary(self) -> dict[str, int]:
        every = [c for cassette in self.cassettes for c in cassette.compared]
        drifted = sum(1 for c in every if c.changes)
        skipped = sum(1 for c in every if c.note is not None)
        return {"cassettes": len(self.cassettes),
                "changed_cassettes": sum(1 for c in self.cassettes if c.drifted),
                "interactions": len(every), "changed": drifted,
                "changes": sum(len(c.changes) for c in every),
                "unchanged": len(every) - drifted - skipped, "not_compared": skipped}

    def summary_line(self) -> str:
        s = self.summary()
        return (f"{_plural(s['cassettes'], 'cassette')}, "
                f"{_plural(s['interactions'], 'interaction')}: {s['changed']} changed shape "
                f"({_plural(s['changes'], 'change')}), {s['unchanged']} unchanged, "
                f"{s['not_compared']} not compared")

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "changed": self.changed, "summary": self.summary(),
                "cassettes": [c.to_dict() for c in self.cassettes]}

    def text(self) -> str:
        lines = [self.title]
        for cassette in self.cassettes:
            against = f" against {cassette.against}" if cassette.against else ""
            if cassette.drifted:
                lines.append(f"{cassette.file}{against}: {len(cassette.drifted)} of "
                             f"{_plural(len(cassette.compared), 'interaction')} changed shape "
                             f"({_plural(cassette.changes, 'change')})")
            else:
                lines.append(f"{cassette.file}{against}: no shape change "
                             f"({_plural(len(cassette.compared), 'interaction')})")
            for compared in cassette.compared:
                if compared.note is not None:
                    lines.append(f"  {compared.label}: not compared: {compared.note}")
                elif compared.changes:
                    lines.append(f"  {compared.label}")
                    lines.extend(f"    {change}" for change in compared.changes)
            if cassette.written:
                lines.append(f"  the new recording: {cassette.written}")
            if cassette.problem:
                lines.append(f"  {cassette.problem}")
        lines.append(self.summary_line())
        return "\n".join(lines)

    def markdown(self) -> str:
        lines = [f"### {_cell(self.title)}", "",
                 "| cassette | interaction | request | change | where | was | now |",
                 "|---|---|---|---|---|---|---|"]
        for cassette in self.cassettes:
            name = f"`{_cell(cassette.file)}`"
            if not cassette.drifted and not cassette.not_compared:
                lines.append(f"| {name} | all {len(cassette.compared)} | | no shape change "
                             "| | | |")
            for compared in cassette.compared:
                where = f"{compared.index}" + (f" (line {compared.line})"
                                               if compared.line is not None else "")
                request = f"`{_cell(compared.method)} {_cell(compared.path)}`"
                if compared.note is not None:
                    lines.append(f"| {name} | {where} | {request} | not compared: "
                                 f"{_cell(compared.note)} | | | |")
                for change in compared.changes:
                    lines.append(f"| {name} | {where} | {request} | {change.kind} | "
                                 f"{_code(_where(change))} | {_code(change.old)} | "
                                 f"{_code(change.new)} |")
        s = self.summary()
        lines += ["", f"**{s['changed']} of {_plural(s['interactions'], 'interaction')} "
                  f"changed shape ({_plural(s['changes'], 'change')}) in "
                  f"{s['changed_cassettes']} of {_plural(s['cassettes'], 'cassette')}**; "
                  f"{s['unchanged']} unchanged, {s['not_compared']} not compared."]
        written = [c.written for c in self.cassettes if c.written]
        if written:
            lines.append("New recordings: " + ", ".join(f"`{_cell(w)}`" for w in written))
        return "\n".join(lines)


def _where(change: Change) -> str | None:
    return None if change.where == change.kind else change.where


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str | None) -> str:
    return "" if text is None else f"`{_cell(text)}`"
