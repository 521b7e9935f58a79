"""Scenarios: YAML scripts of replies, matched against requests."""

from .catalogue import UnknownScenario, catalogue, catalogue_dir, find_named, find_scenario
from .matching import CHECKS, RequestView, register_check
from .model import Scenario, Step, load_scenario
from .schema import scenario_schema
from .selection import Miss, ScenarioSet, Selection
from .source import ScenarioError

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
