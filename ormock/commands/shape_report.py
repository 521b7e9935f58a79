"""What ``ormock drift`` and ``ormock cassette diff`` share: the options of a comparison by shape
(``--ignore``, ``--json``, ``--markdown``) and the printing of its report, with the exit code:
0 when no shape changed, 1 when one did."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ormock.cassette.drift import Ignore
from ormock.cassette.drift_report import DriftReport

__all__ = ["add_report_options", "ignore_of", "print_report"]


def add_report_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ignore", action="append", default=[], metavar="PATTERN",
                        help="leave out a field, an event type or a header: a glob (* is any "
                        "run of characters) matched against a field's path in its event or "
                        "object (obfuscation, usage.*), the same with the event or object type "
                        "in front (response.output_text.delta.obfuscation, message.status), "
                        "an event type or a header name; repeatable")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the report as JSON")
    output.add_argument("--markdown", action="store_true",
                        help="print the report as a Markdown table (for a CI comment)")


def ignore_of(args: argparse.Namespace) -> Ignore:
    return Ignore(tuple(args.ignore))


def print_report(report: DriftReport, args: Any) -> int:
    """Print ``report`` as ``args`` asks; 1 when a shape changed, else 0."""
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    elif args.markdown:
        print(report.markdown())
    else:
        print(report.text())
    return 1 if report.changed else 0
