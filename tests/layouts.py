"""A folder layout for the tests of what requests may read: the configured scenario folder, a
file outside it, and a link in the folder that leads to that file."""

from __future__ import annotations

from pathlib import Path


def scenario_layout(root: Path, mine: str, evil: str) -> Path:
    """``root/scenarios/mine.yaml`` (the configured folder), ``root/outside/evil.yaml``, and
    ``root/scenarios/linked.yaml``, a link to the outside file. Returns ``root``."""
    (root / "scenarios").mkdir()
    (root / "outside").mkdir()
    (root / "scenarios" / "mine.yaml").write_text(mine)
    (root / "outside" / "evil.yaml").write_text(evil)
    (root / "scenarios" / "linked.yaml").symlink_to(root / "outside" / "evil.yaml")
    return root
