"""Choosing what answers a request: a loaded scenario's step, a scenario named by the header
``X-Ormock-Scenario: NAME`` or the model ``ormock:NAME`` (plain names only:
``scenario.catalogue.find_named``), or the embedded default; and the near miss when nothing
does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.openai_items import call_outputs
from ormock.protocol.request import ResponseRequest
from ormock.scenario import RequestView, Scenario, ScenarioSet, Selection, find_named
from ormock.scenario.selection import Miss

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = ["MODEL_PREFIX", "SCENARIO_HEADER", "choose", "no_match", "set_of", "view"]

SCENARIO_HEADER = "x-ormock-scenario"
_NAMED_TOOLS = ("function", "custom")  # the tools a step's ``tools`` names
MODEL_PREFIX = "ormock:"


def choose(engine: Engine, request: ResponseRequest, headers: Mapping[str, str]
           ) -> Selection | None:
    """The step that answers: the loaded scenarios' ``match`` rules, then the scenario the
    header or ``ormock:NAME`` names, then None (the embedded default); a miss of a strict
    scenario is a 400 naming the closest step. A scenario named once is a dict look-up after
    (``engine.named_by_request``), and the request's ``view`` is made only when a step has
    checks to run. With no scenario loaded and none named it is None: ``building.respond``
    asks only when one is."""
    header = headers.get(SCENARIO_HEADER)
    model = request.model
    named = model is not None and model.startswith(MODEL_PREFIX)
    loaded = engine.scenarios
    seen = _Seen(request, headers)
    misses: list[Miss] = []
    if loaded.scenarios:
        chosen = loaded.select(seen)
        if isinstance(chosen, Selection):
            return chosen
        misses = chosen
    name = header or (model[len(MODEL_PREFIX):] if named and model is not None else None)
    if name is not None:
        scenario = (loaded.get(name) if loaded.scenarios else None) \
            or engine.named_by_request.get(name)
        if scenario is None:
            try:
                scenario = find_named(name, engine.scenario_dirs)
            except ValueError as error:
                raise OpenResponsesError(
                    str(error), code="unknown_scenario",
                    param=SCENARIO_HEADER if header else "model",
                ) from None
            # the file's name may differ from the scenario's own; only names of files that
            # exist get here, so this stays as small as the folders
            engine.named_by_request[name] = scenario
            engine.named.add(scenario)
        chosen = set_of(engine, scenario).select(seen, only=scenario)
        if isinstance(chosen, Selection):
            return chosen
        misses = chosen + misses
        raise no_match(misses)
    if misses and loaded.strict:
        raise no_match(misses)
    return None


class _Seen:
    """The request as the checks see it (``view``), made the first time one looks."""

    __slots__ = ("headers", "request", "seen")

    def __init__(self, request: ResponseRequest, headers: Mapping[str, str]) -> None:
        self.request, self.headers = request, headers
        self.seen: RequestView | None = None

    def __call__(self) -> RequestView:
        if self.seen is None:
            self.seen = view(self.request, self.headers)
        return self.seen


def set_of(engine: Engine, scenario: Scenario) -> ScenarioSet:
    """The set that keeps a scenario's counters: the loaded ones, or those chosen by name."""
    loaded = engine.scenarios
    return loaded if loaded.scenarios and loaded.get(scenario.name) is scenario \
        else engine.named


def no_match(misses: list[Miss]) -> OpenResponsesError:
    closest = misses[0].describe() if misses else "no scenario has a step left"
    others = len(misses) - 1
    tail = f" {others} other step{'s' if others != 1 else ''} did not match either." \
        if others > 0 else ""
    return OpenResponsesError(
        f"No scenario step matches this request. Closest: {closest}.{tail} Change the request "
        "or the scenario, or load it with strict: false to fall back to the default reply.",
        code="no_matching_scenario",
        param="input",
    )


def view(request: ResponseRequest, headers: Mapping[str, str]) -> RequestView:
    echo = request.echo
    return RequestView(  # positional, in the order of its fields
        request.model or "",
        request.new_input_text,
        echo.get("instructions") or "",
        [t["name"] for t in request.offered_tools if t.get("type") in _NAMED_TOOLS
         and isinstance(t.get("name"), str)] if request.tools or request.input else [],
        request.tool_choice,
        [str(call_id) for _, _, call_id in call_outputs(request.input)],
        request.previous_response_id,
        {k.lower(): v for k, v in headers.items()},
        echo.get("metadata") or {},
        request.stream,
    )
