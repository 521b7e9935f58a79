"""The after-test checks: what a fake saw go wrong, as one report with a way out per section.

Sections, in the order a reader needs them: requests no scenario step (or recorded interaction)
matched (usually the root cause), steps expected and never used, recorded interactions never
requested (when the fake replays a cassette without recording), replies the client could not
be sent as scripted, requests relayed and not recorded, and errors raised inside the server.
Each section ends with the key that opts this test out of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ormock.pytest_plugin.conditions import describe
from ormock.pytest_plugin.fake import OrmockFixture

__all__ = ["after_test_report", "fake_problems"]

# the error codes of a request nothing matched: no scenario step, no recorded interaction
_MISSES = frozenset({"no_matching_scenario", "cassette_miss"})


def _opt_out(fake: OrmockFixture, key: str) -> str:
    return f"  Opt out for this test: {fake._origin}({key}=False), or strict=False for no checks."


def _count(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def fake_problems(fake: OrmockFixture) -> list[tuple[str, str]]:
    """The report's sections for one fake, each ``(summary, text)``; none when all is well."""
    engine = fake._existing_engine()
    if engine is None:
        return []
    checks = fake.options.checks()
    sections: list[tuple[str, str]] = []
    if checks["assert_all_matched"]:
        missed = [(i, e) for i, e in enumerate(engine.journal, 1)
                  if e.error and e.error.get("code") in _MISSES]
        if missed:
            codes = sorted({str(e.error.get("code")) for _, e in missed if e.error})
            lines = [f"Requests that no scenario step matched ({len(missed)}); each was "
                     f"answered HTTP 400 {' or '.join(codes)}:"]
            for index, entry in missed:
                lines.append(f"  #{index} {describe(entry)}")
                lines.append(f"      {entry.error.get('message') if entry.error else ''}")
            lines.append(_opt_out(fake, "assert_all_matched"))
            sections.append((f"{_count(len(missed), 'request')} matched no step",
                             "\n".join(lines)))
    if checks["assert_all_used"]:
        unused = engine.scenarios.unused()
        if unused:
            lines = [f"Scenario steps expected and not used ({len(unused)}):"]
            for scenario, step, used in unused:
                expected = "at least once" if step.times is None else \
                    f"{step.times} time{'s' if step.times != 1 else ''}"
                lines.append(f"  scenario {scenario.name!r} {step.label} "
                             f"({scenario.where(step)}): expected {expected}, used {used}")
            lines.append(_opt_out(fake, "assert_all_used"))
            sections.append((f"{_count(len(unused), 'step')} not used", "\n".join(lines)))
        never = [] if fake.recording else engine.replays.unused()
        if never:
            lines = [f"{_count(len(never), 'recorded interaction')} "
                     f"{'was' if len(never) == 1 else 'were'} never requested:"]
            for cassette, index, interaction in never:
                where = f" (line {interaction.line})" if interaction.line is not None else ""
                lines.append(f"  {cassette.file} interaction {index + 1}{where}: "
                             f"{interaction.request.method} {interaction.request.target}")
            lines.append(_opt_out(fake, "assert_all_used"))
            sections.append((f"{_count(len(never), 'recorded interaction')} never requested",
                             "\n".join(lines)))
    if checks["assert_valid_replies"]:
        bad = list(fake._session.bad_replies.get(engine, []))
        bad += [f"#{i} {describe(e)}: {e.error.get('message') if e.error else ''}"
                for i, e in enumerate(engine.journal, 1)
                if e.error and e.error.get("code") == "self_check_failed"]
        if bad:
            lines = [f"Replies that broke the protocol in a way the client saw ({len(bad)}):"]
            lines += [f"  {text}" for text in bad]
            lines.append(_opt_out(fake, "assert_valid_replies"))
            sections.append((f"{_count(len(bad), 'broken reply', 'broken replies')}",
                             "\n".join(lines)))
    if checks["assert_no_server_errors"] and engine.replays.not_recorded:
        missing = engine.replays.not_recorded
        lines = [f"Requests relayed to the upstream and not recorded ({len(missing)}); a replay "
                 "of this cassette will miss them:"]
        lines += [f"  {text}" for text in missing]
        lines.append(_opt_out(fake, "assert_no_server_errors"))
        sections.append((f"{_count(len(missing), 'request')} not recorded", "\n".join(lines)))
    if checks["assert_no_server_errors"] and engine.errors:
        lines = [f"Errors raised inside the ormock server ({len(engine.errors)}); the client got "
                 "HTTP 500 internal_error:"]
        for error in engine.errors:
            lines += [f"  {line}" for line in error.splitlines()]
        lines.append(_opt_out(fake, "assert_no_server_errors"))
        sections.append((f"{_count(len(engine.errors), 'error')} inside the server",
                         "\n".join(lines)))
    return sections


def after_test_report(fakes: Sequence[OrmockFixture]) -> str | None:
    """One readable report over every fake of a test, or None. Its first line sums it up (the
    line pytest's short summary shows)."""
    summary: list[str] = []
    parts: list[str] = []
    for fake in fakes:
        sections = fake_problems(fake)
        if not sections:
            continue
        summary += [s for s, _ in sections]
        texts = [text for _, text in sections]
        if len(fakes) > 1:
            texts.insert(0, f"-- ormock fake {fake.namespace} ({fake.base_url})")
        parts.append("\n\n".join(texts))
    if not parts:
        return None
    head = f"ormock after-test checks: {', '.join(summary)} (docs/pytest.md)"
    return head + "\n\n" + "\n\n".join(parts)
