"""Which step answers a request: loaded scenarios in order, steps by the scenario's order rule.

``ScenarioSet`` keeps the per-namespace state: how often each step was used, how many requests
reached each ``nth`` step, and the last response each step produced (for ``step:N`` matching).
A request that nothing matches gets a ``Miss`` list, closest first, to explain the miss.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ormock.scenario.matching import RequestView
from ormock.scenario.model import Scenario, Step

__all__ = ["Miss", "ScenarioSet", "Selection"]


@dataclass(frozen=True)
class Selection:
    scenario: Scenario
    step: Step


@dataclass(frozen=True)
class Miss:
    scenario: Scenario
    step: Step
    reasons: list[str]

    def describe(self) -> str:
        where = self.scenario.where(self.step)
        return (f"scenario {self.scenario.name!r} {self.step.label} ({where}): "
                + "; ".join(self.reasons))


@dataclass
class ScenarioSet:
    scenarios: list[Scenario] = field(default_factory=list)
    uses: dict[tuple[str, int], int] = field(default_factory=dict)
    reached: dict[tuple[str, int], int] = field(default_factory=dict)
    produced: dict[tuple[str, int], str] = field(default_factory=dict)

    def add(self, scenario: Scenario) -> None:
        """Load a scenario; one with the same name is replaced (its counters start over)."""
        self.remove(scenario.name)
        self.scenarios.append(scenario)

    def remove(self, name: str) -> None:
        self.scenarios = [s for s in self.scenarios if s.name != name]
        for table in (self.uses, self.reached, self.produced):
            for key in [k for k in table if k[0] == name]:
                del table[key]

    def clear(self) -> None:
        self.scenarios.clear()
        self.uses.clear()
        self.reached.clear()
        self.produced.clear()

    def get(self, name: str) -> Scenario | None:
        return next((s for s in self.scenarios if s.name == name), None)

    @property
    def strict(self) -> bool:
        return any(s.strict for s in self.scenarios)

    def _left(self, scenario: Scenario, step: Step) -> bool:
        return step.times is None or self.uses.get((scenario.name, step.index), 0) < step.times

    def _reasons(self, scenario: Scenario, step: Step, view: RequestView) -> list[str]:
        def responses(index: int) -> str | None:
            return self.produced.get((scenario.name, index))

        reasons = [r for c in step.checks if (r := c.test(view, responses)) is not None]
        if not self._left(scenario, step):
            times = step.times
            reasons.append(f"already used {times} time{'s' if times != 1 else ''} "
                           f"(times: {times})")
        return reasons

    def _pick(self, scenario: Scenario, view: RequestView, misses: list[Miss]) -> Step | None:
        steps = scenario.steps
        if scenario.order == "sequence":
            pending = [s for s in steps if self._left(scenario, s)]
            steps = pending[:1] or steps[-1:]
        passing: list[Step] = []
        for step in steps:
            reasons = self._reasons(scenario, step, view)
            if not reasons and step.nth is not None:
                key = (scenario.name, step.index)
                self.reached[key] = self.reached.get(key, 0) + 1
                if self.reached[key] != step.nth:
                    reasons.append(f"this is matching request #{self.reached[key]}; the step "
                                   f"answers request #{step.nth} (nth: {step.nth})")
            if reasons:
                misses.append(Miss(scenario, step, reasons))
                continue
            if scenario.order != "best":
                return step
            passing.append(step)
        if not passing:
            return None
        return max(passing, key=lambda s: (len(s.checks) + (s.nth is not None), -s.index))

    def select(self, view: RequestView, only: Scenario | None = None) -> Selection | list[Miss]:
        """The step that answers ``view``, or the misses, closest first."""
        misses: list[Miss] = []
        for scenario in [only] if only is not None else self.scenarios:
            step = self._pick(scenario, view, misses)
            if step is not None:
                key = (scenario.name, step.index)
                self.uses[key] = self.uses.get(key, 0) + 1
                return Selection(scenario, step)
        misses.sort(key=lambda m: len(m.reasons))
        return misses

    def answered(self, selection: Selection, response_id: str) -> None:
        self.produced[(selection.scenario.name, selection.step.index)] = response_id

    def unused(self) -> list[tuple[Scenario, Step, int]]:
        """Steps used fewer times than they expect: (scenario, step, times used)."""
        out = []
        for scenario in self.scenarios:
            for step in scenario.steps:
                used = self.uses.get((scenario.name, step.index), 0)
                if (step.times is None and used == 0) or (
                    step.times is not None and used < step.times
                ):
                    out.append((scenario, step, used))
        return out
