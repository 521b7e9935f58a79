"""Which step answers a request: loaded scenarios in order, steps by the scenario's order rule.

``ScenarioSet`` keeps the per-namespace state: how often each step was used, how many requests
reached each ``nth`` step (its ``counters``: in this process, or shared by every worker on one
store), and the last response produced by each step some ``step:N`` names (for ``step:N``
matching; in this process, and with shared counters in the store too).
A request that nothing matches gets a ``Miss`` list, closest first, to explain the miss.
The request's ``RequestView`` may be given as a function that makes it: it is then made only
when a step has checks to run (a step without any, the catalogue's ``text`` one, never reads it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ormock.scenario.counters import Counters, LocalCounters
from ormock.scenario.matching import RequestView
from ormock.scenario.model import Scenario, Step

__all__ = ["Miss", "ScenarioSet", "Selection", "Viewed"]

# the request as the checks see it, or what makes it when a check first looks
Viewed = RequestView | Callable[[], RequestView]


@dataclass(frozen=True)
class Selection:
    scenario: Scenario
    step: Step
    # whether a ``previous_response_id: step:N`` of its scenario names this step: only then is
    # the response it produced remembered (``ScenarioSet.answered``), since nothing else reads it
    continued: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "continued", self.step.index in self.scenario.continued)


@dataclass(frozen=True)
class Miss:
    scenario: Scenario
    step: Step
    reasons: list[str]

    def describe(self) -> str:
        where = self.scenario.where(self.step)
        return (f"scenario {self.scenario.name!r} {self.step.label} ({where}): "
                + "; ".join(self.reasons))


_Missed = tuple[Scenario, Step, list[str]]  # a Miss, before it is one


@dataclass
class ScenarioSet:
    scenarios: list[Scenario] = field(default_factory=list)
    # how often each step was used and how many requests reached each nth step: in this
    # process, or in a store every worker shares (``ormock.engine.shared_counters``)
    counters: Counters = field(default_factory=LocalCounters)
    produced: dict[tuple[str, int], str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)  # whose counts: name -> tag (the name)
    spent: set[tuple[str, int]] = field(default_factory=set)  # (tag, step) known used up
    # the selection of each step answered so far, made once (by ``id`` of the step)
    chosen: dict[int, Selection] = field(default_factory=dict, repr=False)

    def add(self, scenario: Scenario, tag: str | None = None) -> None:
        """Load a scenario; one with the same name is replaced (its counters start over).
        ``tag`` names its counts (by default its name; shared ones:
        ``ormock.engine.shared_admin``)."""
        self.remove(scenario.name)
        self.scenarios.append(scenario)
        if tag is not None:
            self.tags[scenario.name] = tag

    def remove(self, name: str) -> None:
        tag = self.tags.pop(name, name)
        self.scenarios = [s for s in self.scenarios if s.name != name]
        self.counters.forget(tag)
        self.spent = {k for k in self.spent if k[0] != tag}
        for key in [k for k in self.produced if k[0] == name]:
            del self.produced[key]
        self.chosen = {k: c for k, c in self.chosen.items() if c.scenario.name != name}

    def clear(self) -> None:
        self.scenarios.clear()
        self.counters.clear()
        self.produced.clear()
        self.tags.clear()
        self.spent.clear()
        self.chosen.clear()

    def tag(self, scenario: Scenario) -> str:
        return self.tags.get(scenario.name, scenario.name)

    def used(self, scenario: Scenario, step: Step) -> int:
        """How often a step answered (at most its ``times``)."""
        used = self.counters.value((self.tag(scenario), "uses", step.index))
        return used if step.times is None else min(used, step.times)

    def get(self, name: str) -> Scenario | None:
        for scenario in self.scenarios:
            if scenario.name == name:
                return scenario
        return None

    @property
    def strict(self) -> bool:
        return any(s.strict for s in self.scenarios)

    def _left(self, scenario: Scenario, step: Step) -> bool:
        if step.times is None:
            return True
        tag = self.tag(scenario)
        # once spent, spent: in this process a use is given back only here (``release``);
        # with shared counters another worker may give one back, so the store is asked
        if (tag, step.index) in self.spent:
            return False
        if self.counters.value((tag, "uses", step.index)) < step.times:
            return True
        if not self.counters.shared:
            self.spent.add((tag, step.index))
        return False

    def _claim(self, scenario: Scenario, step: Step) -> bool:
        """Count a use of the step; whether it was still there to use (another worker may
        have taken its last use since ``_left`` looked)."""
        tag = self.tag(scenario)
        used = self.counters.add((tag, "uses", step.index))
        if step.times is None:
            return True
        if used >= step.times and not self.counters.shared:
            self.spent.add((tag, step.index))
        return used <= step.times

    def release(self, selection: Selection) -> None:
        """Give back the use a selection took (and its ``nth`` arrival): the attempt it
        answered was ended by a fault, so the client's retry finds the step again. A
        scenario unloaded or replaced since has fresh counts: nothing to give back."""
        scenario, step = selection.scenario, selection.step
        if self.get(scenario.name) is not scenario:
            return
        tag = self.tag(scenario)
        self.counters.take((tag, "uses", step.index))
        if step.nth is not None:
            self.counters.take((tag, "reached", step.index))
        self.spent.discard((tag, step.index))

    def _reasons(self, scenario: Scenario, step: Step, view: Viewed,
                 left: bool | None = None) -> list[str]:
        """Why the step does not answer (none: it does); ``left``: whether it has a use left,
        when already known."""
        if not step.checks:
            if step.times is None:  # nothing to check, and always a use left
                return []
            reasons: list[str] = []
        else:
            def responses(index: int) -> str | None:
                if self.counters.shared:  # another worker may have answered that step
                    return self.counters.noted((self.tag(scenario), "produced", index))
                return self.produced.get((scenario.name, index))

            seen = view if isinstance(view, RequestView) else view()
            reasons = [r for c in step.checks if (r := c.test(seen, responses)) is not None]
        if not (self._left(scenario, step) if left is None else left):
            times = step.times
            reasons.append(f"already used {times} time{'s' if times != 1 else ''} "
                           f"(times: {times})")
        return reasons

    def _pick(self, scenario: Scenario, view: Viewed, misses: list[_Missed]) -> Step | None:
        steps, left = scenario.steps, None
        if scenario.order == "sequence":  # the first step left (one read with shared counts)
            pending = next((s for s in steps if self._left(scenario, s)), None)
            steps, left = ([pending], True) if pending is not None else (steps[-1:], False)
        passing: list[Step] = []
        for step in steps:
            reasons = self._reasons(scenario, step, view, left)
            if not reasons and step.nth is not None:
                reached = self.counters.add((self.tag(scenario), "reached", step.index))
                if reached != step.nth:
                    reasons.append(f"this is matching request #{reached}; the step "
                                   f"answers request #{step.nth} (nth: {step.nth})")
            if reasons:
                misses.append((scenario, step, reasons))
                continue
            if scenario.order != "best":
                return step
            passing.append(step)
        if not passing:
            return None
        return max(passing, key=lambda s: (len(s.checks) + (s.nth is not None), -s.index))

    def select(self, view: Viewed, only: Scenario | None = None) -> Selection | list[Miss]:
        """The step that answers ``view`` (or the view a function makes, made when a check
        first needs it), or the misses, closest first."""
        misses: list[_Missed] = []  # a Miss made only when they are the answer
        for scenario in [only] if only is not None else self.scenarios:
            tried = len(misses)
            # a step that answers anything (``Scenario.free``) is picked without a look
            while (step := scenario.free or self._pick(scenario, view, misses)) is not None:
                if self._claim(scenario, step):
                    chosen = self.chosen.get(id(step))
                    if chosen is None or chosen.step is not step or chosen.scenario \
                            is not scenario:
                        chosen = self.chosen[id(step)] = Selection(scenario, step)
                    return chosen
                del misses[tried:]  # its last use went to another worker: pick again

        misses.sort(key=lambda m: len(m[2]))
        return [Miss(*missed) for missed in misses]

    def answered(self, selection: Selection, response_id: str) -> None:
        """Remember the response a step produced, for the ``step:N`` checks that name it (a
        step none names is not remembered: ``Selection.continued``)."""
        if not selection.continued:
            return
        scenario, index = selection.scenario, selection.step.index
        self.produced[(scenario.name, index)] = response_id
        if self.counters.shared:  # another worker may answer the step that continues it
            self.counters.note((self.tag(scenario), "produced", index), response_id)

    def unused(self) -> list[tuple[Scenario, Step, int]]:
        """Steps used fewer times than they expect: (scenario, step, times used)."""
        out = []
        for scenario in self.scenarios:
            for step in scenario.steps:
                used = self.used(scenario, step)
                if (step.times is None and used == 0) or (
                    step.times is not None and used < step.times
                ):
                    out.append((scenario, step, used))
        return out

