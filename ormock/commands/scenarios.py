"""``ormock scenarios``: the built-in catalogue, a line per scenario (``--json``: as data), or
the JSON Schema of scenario files (``--schema``); exit 1 when a scenario does not load."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> int:
    from ormock.scenario import ScenarioError, catalogue
    from ormock.scenario.catalogue import load_file
    from ormock.scenario.schema import schema_text

    if args.schema:
        sys.stdout.write(schema_text())
        return 0
    entries = catalogue()
    width = max((len(n) for n in entries), default=0)
    status, listed = 0, list[dict[str, object]]()
    for name, path in entries.items():
        try:
            loaded = load_file(path)
        except ScenarioError as error:
            description, status = f"DOES NOT LOAD: {error}", 1
            listed.append({"name": name, "path": str(path), "error": str(error)})
        else:
            description = loaded.description
            listed.append({"name": name, "path": str(path), "description": description,
                           "steps": len(loaded.steps)})
        if not args.json:
            print(f"{name.ljust(width)}  {description}")
    if args.json:
        print(json.dumps(listed, indent=2, ensure_ascii=False))
    return status


def add_parser(commands: Any) -> None:
    listing = commands.add_parser("scenarios", help="list the built-in scenarios")
    listing.add_argument("--schema", action="store_true",
                         help="print the JSON Schema of scenario files instead")
    listing.add_argument("--json", action="store_true",
                         help="print the catalogue as JSON (name, path, description, steps)")
    listing.set_defaults(func=run)
