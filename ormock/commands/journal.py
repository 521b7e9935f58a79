"""``ormock journal``: read the journal of a running server (``--url``, default
http://127.0.0.1:8787).

- ``ormock journal list [--namespace NS] [--json]``: one line per request (id, status, path,
  what answered it, faults).
- ``ormock journal export ID --as scenario|cassette [-o FILE]``: the exchange as a file that
  replays it exactly (``ormock.server.export``), on stdout or in FILE.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_URL", "add_parser", "run"]

DEFAULT_URL = "http://127.0.0.1:8787"


def add_parser(commands: Any) -> None:
    journal = commands.add_parser(
        "journal", help="list a running server's journal, or export an exchange as a file",
        description="Read the journal of a running ormock server.")
    journal.set_defaults(func=run)
    actions = journal.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="one line per request")
    export = actions.add_parser(
        "export", help="an exchange as a scenario step or a cassette that replays it exactly")
    export.add_argument("id", help="the entry's id (ormock journal list, or the inspector)")
    export.add_argument("--as", dest="kind", choices=("scenario", "cassette"),
                        default="scenario", help="what to write (default scenario)")
    export.add_argument("-o", "--output", default=None, metavar="FILE",
                        help="write it to FILE (default: stdout)")
    for parser in (listing, export):
        parser.add_argument("--url", default=DEFAULT_URL,
                            help=f"the running server (default {DEFAULT_URL})")
        parser.add_argument("--namespace", default=None, help="the namespace (default: any "
                            "for export, the default one for list)")
    listing.add_argument("--json", action="store_true", help="print the journal as JSON")


def run(args: argparse.Namespace) -> int:
    """The action named on the command line (``list`` or ``export``)."""
    return _list(args) if args.action == "list" else _export(args)


def _base(args: argparse.Namespace) -> str:
    base = str(args.url).rstrip("/").removesuffix("/v1")
    return base + ("/" + str(args.namespace).strip("/") if args.namespace else "")


def _get(url: str, **params: str) -> tuple[int, Any, str]:
    import httpx

    answer = httpx.get(url, params=params, timeout=30)
    try:
        data = answer.json() if "json" in answer.headers.get("content-type", "") else None
    except ValueError:
        data = None
    return answer.status_code, data, answer.text


def _failed(what: str, status: int, data: Any) -> int:
    message = data.get("error", {}).get("message") if isinstance(data, dict) else None
    print(f"ormock journal: {what}: {message or f'HTTP {status}'}", file=sys.stderr)
    return 2


def _list(args: argparse.Namespace) -> int:
    import httpx

    url = _base(args) + "/_ormock/journal"
    try:
        status, data, _ = _get(url)
    except httpx.HTTPError as error:
        print(f"ormock journal: cannot read {url} ({error})", file=sys.stderr)
        return 2
    if status != 200:
        return _failed(url, status, data)
    if args.json:
        print(json.dumps(data["data"], indent=2))
        return 0
    for entry in data["data"]:
        by = entry.get("answered_by", {})
        what = {"scenario": f"{by.get('scenario')} step {by.get('step')}",
                "cassette": f"{by.get('cassette')} #{by.get('interaction')}"}.get(
                    by.get("kind"), by.get("kind", ""))
        faults = f"  faults: {', '.join(entry['faults'])}" if entry["faults"] else ""
        print(f"{entry['id']:>6}  {entry['status']:>3}  {entry['method']} {entry['path']}  "
              f"{len(entry['events'])} events  {entry['ended']}  ({what}){faults}")
    return 0


def _export(args: argparse.Namespace) -> int:
    import httpx

    url = f"{_base(args)}/_ormock/journal/{args.id}/export"
    try:
        status, data, text = _get(url, **{"as": args.kind})
    except httpx.HTTPError as error:
        print(f"ormock journal: cannot read {url} ({error}); is a server running there? "
              "(--url BASE)", file=sys.stderr)
        return 2
    if status != 200:
        return _failed(f"export {args.id}", status, data)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except OSError as error:
        print(f"ormock journal: cannot write {args.output} ({error.strerror})", file=sys.stderr)
        return 2
    print(f"ormock journal: wrote {args.output} ({args.kind} of {args.id})", file=sys.stderr)
    return 0
