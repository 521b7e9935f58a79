"""The built-in catalogue of scenarios (``scenarios/`` in the repository, shipped in the wheel)
and finding a scenario by name or path."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .model import Scenario, load_scenario
from .source import ScenarioError

__all__ = ["catalogue", "catalogue_dir", "find_scenario"]


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
    import difflib

    close = difflib.get_close_matches(name_or_path, list(known), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ScenarioError(
        f"no scenario named {name_or_path!r}{hint}; the catalogue has "
        f"{', '.join(known) or 'nothing'} (`ormock scenarios` lists them)"
    )
