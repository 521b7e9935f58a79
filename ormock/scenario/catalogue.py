"""The built-in catalogue of scenarios (``scenarios/`` in the repository, shipped in the wheel)
and finding a scenario by name or path."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from ormock.protocol.hints import suggest
from ormock.scenario.model import Scenario, load_scenario
from ormock.scenario.source import ScenarioError

__all__ = ["SCENARIO_NAME", "UnknownScenario", "catalogue", "catalogue_dir", "find_named",
           "find_scenario", "named_scenarios"]

# what a request may name (a header or ``model: ormock:NAME``): a plain name, never a path
SCENARIO_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_LISTED = 40  # names an unknown-scenario answer lists at most


def catalogue_dir() -> Path:
    """Where the built-in scenarios are: the repository's folder, or the wheel's copy."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "scenarios", here / "_scenarios"):
        if candidate.is_dir():
            return candidate
    return here / "_scenarios"


def catalogue() -> dict[str, Path]:
    """Name -> file of every built-in scenario."""
    folder = catalogue_dir()
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))}


@lru_cache(maxsize=256)
def _load_file(path: str, mtime: float) -> Scenario:
    return load_scenario(Path(path))


def load_file(path: Path) -> Scenario:
    """Load a scenario file, cached until the file changes."""
    return _load_file(str(path), path.stat().st_mtime)


def find_scenario(name_or_path: str, folders: tuple[Path, ...] = ()) -> Scenario:
    """A scenario by catalogue name, or by path (absolute, or relative to one of ``folders``)."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml"):
        for base in (Path.cwd(), *folders):
            path = candidate if candidate.is_absolute() else base / candidate
            if path.is_file():
                return load_file(path)
        searched = ", ".join(str(f) for f in (Path.cwd(), *folders))
        raise ScenarioError(f"scenario file not found (looked in {searched})",
                            file=name_or_path)
    for folder in folders:
        for suffix in (".yaml", ".yml"):
            path = folder / (name_or_path + suffix)
            if path.is_file():
                return load_file(path)
    known = catalogue()
    if name_or_path in known:
        return load_file(known[name_or_path])
    raise ScenarioError(
        f"no scenario named {name_or_path!r}{suggest(name_or_path, known)}; the catalogue has "
        f"{', '.join(known) or 'nothing'} (`ormock scenarios` lists them)"
    )


class UnknownScenario(ValueError):
    """A request named a scenario that is not among those it may name."""


def _folder_files(folder: Path) -> dict[str, Path]:
    """The plain scenario files of a folder, by name; none that lead outside it."""
    try:
        return _listing(str(folder), os.stat(folder).st_mtime_ns)
    except OSError:
        return {}


@lru_cache(maxsize=64)
def _listing(folder: str, mtime: int) -> dict[str, Path]:
    root = Path(folder).resolve()
    found: dict[str, Path] = {}
    for entry in sorted(os.scandir(root), key=lambda e: e.name, reverse=True):
        stem, dot, suffix = entry.name.rpartition(".")
        if not dot or suffix not in ("yaml", "yml") or not SCENARIO_NAME.match(stem):
            continue
        path = Path(entry.path).resolve()
        if path.parent == root and path.is_file():  # a link out of the folder is not followed
            found[stem] = path
    return found


def named_scenarios(folders: tuple[Path, ...] = ()) -> dict[str, Path]:
    """Every scenario a request may name: the folders' files (the first folder wins), then the
    catalogue."""
    found = dict(catalogue())
    for folder in reversed(folders):
        found.update(_folder_files(folder))
    return found


def find_named(name: str, folders: tuple[Path, ...] = ()) -> Scenario:
    """The scenario a request names: a catalogue entry or a file of the scenario folders, by its
    plain name. A path, or a name of neither, is ``UnknownScenario``; its message lists what
    may be named and reveals nothing else about the disk."""
    known = named_scenarios(folders)
    path = known.get(name) if SCENARIO_NAME.match(name) else None
    if path is None:
        shown = sorted(known)
        more = f" and {len(shown) - _LISTED} more" if len(shown) > _LISTED else ""
        raise UnknownScenario(
            f"no scenario named {name[:100]!r}{suggest(name[:100], shown)}: a request names a "
            f"scenario by its plain name (letters, digits, '_', '.', '-'; never a path). "
            f"Available: {', '.join(shown[:_LISTED]) or 'none'}{more} (`ormock scenarios` lists "
            "them)."
        )
    try:
        return load_file(path)
    except ScenarioError as error:
        raise ScenarioError(f"scenario {name!r} does not load ({error.message}); run "
                            "`ormock check` on its file", file=path.name, line=error.line,
                            key=error.key) from None
