"""Scenarios: YAML scripts of replies, matched against requests."""

from ormock.scenario.catalogue import (
    UnknownScenario,
    catalogue,
    catalogue_dir,
    find_named,
    find_scenario,
)
from ormock.scenario.matching import CHECKS, RequestView, register_check
from ormock.scenario.model import Scenario, Step, load_scenario
from ormock.scenario.schema import scenario_schema
from ormock.scenario.selection import Miss, ScenarioSet, Selection
from ormock.scenario.source import ScenarioError

__all__ = [
    "CHECKS",
    "Miss",
    "RequestView",
    "Scenario",
    "ScenarioError",
    "ScenarioSet",
    "Selection",
    "Step",
    "UnknownScenario",
    "catalogue",
    "catalogue_dir",
    "find_named",
    "find_scenario",
    "load_scenario",
    "register_check",
    "scenario_schema",
]
