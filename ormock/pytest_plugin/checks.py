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
    """The report's sections for one fake, each ``(summary, text)``; none when all is well.
    The facts come from where the fake lives (``FakeBackend.journal`` and ``.leftovers``)."""
    backend = fake._backend
    found = backend.leftovers()
    if not found:
        return []  # nothing was made: nothing to check
    journal = backend.journal()
    checks = fake.options.checks()
    sections: list[tuple[str, str]] = []
    if checks["assert_all_matched"]:
        missed = [(i, e) for i, e in enumerate(journal, 1)
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
        unused = found["unused_steps"]
        if unused:
            lines = [f"Scenario steps expected and not used ({len(unused)}):"]
            for row in unused:
                times = row["times"]
                expected = "at least once" if times is None else \
                    f"{times} time{'s' if times != 1 else ''}"
                lines.append(f"  scenario {row['scenario']!r} {row['step']} "
                             f"({row['where']}): expected {expected}, used {row['used']}")
            lines.append(_opt_out(fake, "assert_all_used"))
            sections.append((f"{_count(len(unused), 'step')} not used", "\n".join(lines)))
        never = [] if fake.recording else found["unused_interactions"]
        if never:
            lines = [f"{_count(len(never), 'recorded interaction')} "
                     f"{'was' if len(never) == 1 else 'were'} never requested:"]
            for row in never:
                where = f" (line {row['line']})" if row["line"] is not None else ""
                lines.append(f"  {row['file']} interaction {row['interaction']}{where}: "
                             f"{row['method']} {row['target']}")
            lines.append(_opt_out(fake, "assert_all_used"))
            sections.append((f"{_count(len(never), 'recorded interaction')} never requested",
                             "\n".join(lines)))
    if checks["assert_valid_replies"]:
        bad = list(found["bad_replies"])
        bad += [f"#{i} {describe(e)}: {e.error.get('message') if e.error else ''}"
                for i, e in enumerate(journal, 1)
                if e.error and e.error.get("code") == "self_check_failed"]
        if bad:
            lines = [f"Replies that broke the protocol in a way the client saw ({len(bad)}):"]
            lines += [f"  {text}" for text in bad]
            lines.append(_opt_out(fake, "assert_valid_replies"))
            sections.append((f"{_count(len(bad), 'broken reply', 'broken replies')}",
                             "\n".join(lines)))
    missing = found["not_recorded"]
    if checks["assert_no_server_errors"] and missing:
        lines = [f"Requests relayed to the upstream and not recorded ({len(missing)}); a replay "
                 "of this cassette will miss them:"]
        lines += [f"  {text}" for text in missing]
        lines.append(_opt_out(fake, "assert_no_server_errors"))
        sections.append((f"{_count(len(missing), 'request')} not recorded", "\n".join(lines)))
    errors = found["errors"]
    if checks["assert_no_server_errors"] and errors:
        lines = [f"Errors raised inside the ormock server ({len(errors)}); the client got "
                 "HTTP 500 internal_error:"]
        for error in errors:
            lines += [f"  {line}" for line in error.splitlines()]
        lines.append(_opt_out(fake, "assert_no_server_errors"))
        sections.append((f"{_count(len(errors), 'error')} inside the server",
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
