"""What a namespace left undone or got wrong, as plain data: the facts behind the pytest plugin's
after-test checks, read the same way from an engine in the test's process and from a server's
``GET /_ormock/checks``.

- ``unused_steps``: scenario steps expected and never (or not often enough) used;
- ``unused_interactions``: recorded interactions of the replayed cassettes never requested;
- ``bad_replies``: literal steps whose events could not be folded into a Response for a
  non-streaming request (the client got HTTP 500 ``unfoldable_reply``);
- ``not_recorded``: requests relayed to an upstream and not recorded;
- ``errors``: exceptions raised inside the server (this process's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ormock.engine.core import Engine
    from ormock.engine.journal import JournalEntry

__all__ = ["leftovers"]

Json = dict[str, Any]


def leftovers(engine: Engine) -> Json:
    """The facts of the after-test checks of one engine (its namespace)."""
    unused = [{"scenario": scenario.name, "index": step.index, "step": step.label,
               "where": scenario.where(step),
               "times": step.times, "used": used}
              for scenario, step, used in engine.scenarios.unused()]
    never = [{"file": cassette.file, "interaction": index + 1, "line": interaction.line,
              "method": interaction.request.method, "target": interaction.request.target}
             for cassette, index, interaction in engine.replays.unused()]
    bad = [_unfoldable(engine, entry) for entry in engine.journal_view()]
    return {"unused_steps": unused, "unused_interactions": never,
            "bad_replies": [text for text in bad if text],
            "not_recorded": list(engine.replays.not_recorded), "errors": list(engine.errors)}


def _unfoldable(engine: Engine, entry: JournalEntry) -> str | None:
    """A literal step's events must fold into a Response for a JSON (non-streaming) reply:
    otherwise the client got a 500 ``unfoldable_reply`` (the journal entry says so), which the
    test should hear of."""
    error, name, number = entry.error, entry.scenario, entry.step
    if name is None or not isinstance(number, int) or not isinstance(error, Mapping) or \
            error.get("code") != "unfoldable_reply":
        return None
    scenario = engine.scenarios.get(name) or engine.named.get(name)
    if scenario is None or not 0 < number <= len(scenario.steps):
        return None
    step = scenario.steps[number - 1]
    return (f"scenario {scenario.name!r} {step.label} ({scenario.where(step)}) answered a "
            f"non-streaming request with literal events; the client got HTTP 500 "
            f"unfoldable_reply: {error.get('message')} Or give the events a terminal "
            "response.completed / response.failed / response.incomplete event.")
