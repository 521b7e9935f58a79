"""``ormock check FILE...``: lint scenario files, cassettes (ormock's or vcrpy's) and raw SSE
captures against the protocol.

Each file gives one result (``{"path", "kind", "ok", ...}``, with its ``findings``: rule,
message, event index, line, and a cassette's interaction number); the text output is a line
per finding and an ``ok`` line per clean file, ``--json`` prints the results as one JSON
document (``{"ok": bool, "files": [...]}``). Exit 1 when any file breaks a rule or does not
load.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import ormock.plugins  # noqa: F401  (registers the real providers' profiles)
from ormock.protocol.profile import profile_names

__all__ = ["add_parser", "check_files", "run"]

Result = dict[str, Any]


def add_parser(commands: Any) -> None:
    check = commands.add_parser(
        "check", help="lint scenario files (.yaml) and raw SSE captures against the protocol"
    )
    check.add_argument("files", nargs="+")
    check.add_argument("--no-schema", action="store_true",
                       help="skip validation of SSE captures against the official schema")
    check.add_argument("--profile", choices=profile_names(), default=None,
                       help="how the provider streams (default: openresponses). openai: the "
                       "openai SDK's event types are known ones, data: [DONE] is optional, "
                       "reasoning may be re-encrypted in the terminal snapshot")
    check.add_argument("--resumed", action="store_true",
                       help="each capture is a resumed tail (GET ...?stream=true&"
                       "starting_after=N): it may begin mid-sequence")
    check.add_argument("--starting-after", type=int, default=None, metavar="N",
                       help="a resumed tail whose first sequence_number is N+1 (implies "
                       "--resumed)")
    check.add_argument("--json", action="store_true",
                       help="print each file's result and findings as JSON")
    check.add_argument("--vcr-serializer", default=None, metavar="MODULE:NAME",
                       help="a project's own vcrpy serializer: every file is a vcrpy cassette "
                       "written by it")
    check.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    results = check_files(args.files, args)
    if getattr(args, "json", False):
        print(json.dumps({"ok": all(r["ok"] for r in results), "files": results}, indent=2,
                         ensure_ascii=False))
    else:
        for result in results:
            _print(result)
    return 0 if all(r["ok"] for r in results) else 1


def check_files(paths: list[str], args: argparse.Namespace) -> list[Result]:
    if getattr(args, "vcr_serializer", None):
        return [_check_cassette(path, args) for path in paths]
    return [_check_cassette(path, args) if _is_cassette(path) else
            _check_scenario(path) if path.endswith((".yaml", ".yml")) else
            _check_capture(path, args) for path in paths]


def _print(result: Result) -> None:
    path = result["path"]
    if "error" in result:
        print(result["error"])
        return
    for finding in result["findings"]:
        line = f":{finding['line']}" if finding.get("line") else ""
        where = f" interaction {finding['interaction']}:" if "interaction" in finding else ""
        print(f"{path}{line}:{where} {finding['rule']}: {finding['message']} "
              f"(event {finding['index']})")
    if not result["ok"]:
        return
    if result["kind"] == "scenario":
        count = result["steps"]
        print(f"{path}: ok (scenario {result['name']!r}, {count} "
              f"step{'s' if count != 1 else ''})")
    elif result["kind"] == "cassette":
        print(f"{path}: ok (cassette, {result['interactions']} interactions, "
              f"{result['streams']} streams checked under profile {result['profile']!r})")
    else:
        print(f"{path}: ok ({result['events']} events)")


def _check_scenario(path: str) -> Result:
    from ormock.scenario import ScenarioError, load_scenario

    try:
        scenario = load_scenario(Path(path))
    except ScenarioError as error:
        return {"path": path, "kind": "scenario", "ok": False, "error": str(error),
                "findings": []}
    return {"path": path, "kind": "scenario", "ok": True, "name": scenario.name,
            "steps": len(scenario.steps), "findings": []}


def _check_capture(path: str, args: argparse.Namespace) -> Result:
    from ormock.protocol.checker import check_stream

    try:
        with open(path, "rb") as handle:
            report = check_stream(handle.read(), schema=not args.no_schema,
                                  profile=args.profile, resumed=args.resumed,
                                  starting_after=args.starting_after)
    except OSError as error:
        return {"path": path, "kind": "capture", "ok": False,
                "error": f"{path}: cannot read ({error.strerror})", "findings": []}
    return {"path": path, "kind": "capture", "ok": report.ok, "events": len(report.events),
            "findings": [{"rule": v.rule, "message": v.message, "index": v.index,
                          "line": v.line} for v in report.violations]}


def _is_cassette(path: str) -> bool:
    """A ``.yaml``/``.yml``/``.json`` file shaped like a cassette (ormock's or vcrpy's)."""
    from ormock.cassette.shape import shape_of
    from ormock.scenario.source import ScenarioError, read_text, safe_document

    if not path.endswith((".yaml", ".yml", ".json")):
        return False
    try:
        text = read_text(path)
    except ScenarioError:
        return False  # the scenario reader says what is wrong with it
    try:
        if path.endswith(".json"):
            return shape_of(json.loads(text)) is not None
        return shape_of(safe_document(text, path)) is not None
    except (ValueError, ScenarioError):
        return "!!python/" in text  # the tags vcrpy writes, which the safe loader refuses


def _check_cassette(path: str, args: argparse.Namespace) -> Result:
    """The findings of each recorded stream of a cassette."""
    from ormock.cassette.fileformat import CassetteError
    from ormock.cassette.lint import check_cassette
    from ormock.cassette.shape import load
    from ormock.cassette.vcr import serializer_from

    try:
        spec = getattr(args, "vcr_serializer", None)
        cassette = load(path, serializer_from(spec) if spec else None)
    except (CassetteError, ValueError) as error:
        return {"path": path, "kind": "cassette", "ok": False, "error": str(error),
                "findings": []}
    findings: list[dict[str, Any]] = []
    streams, ok = 0, True
    for checked in check_cassette(cassette, args.profile, schema=not args.no_schema):
        streams += 1
        findings += [{"rule": v.rule, "message": v.message, "index": v.index,
                      "line": checked.interaction.line, "interaction": checked.number}
                     for v in checked.report.violations]
        ok = ok and checked.report.ok
    return {"path": path, "kind": "cassette", "ok": ok,
            "interactions": len(cassette.interactions), "streams": streams,
            "profile": args.profile or cassette.profile, "findings": findings}
