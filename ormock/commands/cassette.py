"""``ormock cassette``: export a cassette as vcrpy's, import vcrpy's, print the schema.

``ormock cassette export FILE --to vcr [-o OUT] [--base-url URL]`` writes any cassette (ormock's
or vcrpy's) as a vcrpy cassette (``FILE.vcr.yaml`` by default; ``.json`` for vcrpy's JSON
serializer); what vcrpy cannot hold (a WebSocket session, an answer that broke off) is named on
stderr. ``ormock cassette import FILE [-o OUT]`` writes a vcrpy / pytest-recording cassette as
an ormock one (``FILE.ormock.yaml`` by default), redacted and scanned for secrets like every
cassette ormock writes. ``ormock cassette schema`` prints the JSON Schema of cassette files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ormock.commands.shape_report import add_report_options

__all__ = ["add_parser", "add_redaction_options", "run"]


def _default_out(source: str, tag: str) -> Path:
    path = Path(source)
    suffix = path.suffix if path.suffix in (".yaml", ".yml", ".json") else ".yaml"
    return path.with_name(f"{path.stem}.{tag}{suffix}")


def _export(args: argparse.Namespace) -> int:
    from ormock.cassette import CassetteError, SecretFound, load, to_vcr

    out = Path(args.output) if args.output else _default_out(args.file, "vcr")
    try:
        warnings = to_vcr(load(args.file), out, base_url=args.base_url)
    except (CassetteError, SecretFound, ValueError) as error:
        print(f"ormock cassette export: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"ormock cassette export: cannot write {out} ({error.strerror})", file=sys.stderr)
        return 2
    for warning in warnings:
        print(f"ormock cassette export: warning: {warning}", file=sys.stderr)
    print(f"wrote {out} (a vcrpy cassette)", file=sys.stderr)
    return 0


def _import(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ormock.cassette import CassetteError, Redaction, SecretFound, load, save_cassette

    out = Path(args.output) if args.output else _default_out(args.file, "ormock")
    try:
        cassette = load(args.file)
        if cassette.origin != "vcr":
            print(f"ormock cassette import: {args.file} is an ormock cassette already; "
                  "import reads vcrpy / pytest-recording cassettes", file=sys.stderr)
            return 2
        cassette = replace(cassette, recorded_with=f"vcrpy, imported from {Path(args.file).name}"
                           " (no timing: every offset is 0, replayed unpaced)")
        save_cassette(cassette, out, Redaction.of(args.redact_header, args.redact_path))
    except (CassetteError, SecretFound) as error:
        print(f"ormock cassette import: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"ormock cassette import: cannot write {out} ({error.strerror})", file=sys.stderr)
        return 2
    print(f"wrote {out} ({len(cassette.interactions)} interactions)", file=sys.stderr)
    return 0


def _list(args: argparse.Namespace) -> int:
    import json

    from ormock.cassette import CassetteError, load

    try:
        cassette = load(args.file)
    except CassetteError as error:
        print(f"ormock cassette list: {error}", file=sys.stderr)
        return 2
    rows = []
    for number, interaction in enumerate(cassette.interactions, 1):
        request, response, socket = interaction.request, interaction.response, interaction.socket
        row: dict[str, Any] = {"interaction": number, "line": interaction.line,
                               "method": request.method, "path": request.path,
                               "model": request.body.get("model")
                               if isinstance(request.body, dict) else None}
        if response is not None:
            row.update(kind="sse" if response.streamed else "http", status=response.status,
                       events=len(response.messages or ()), ended=response.ended)
        if socket is not None:
            row.update(kind="websocket", frames=len(socket.frames),
                       events=sum(1 for f in socket.frames if f.sender == "server"))
        rows.append(row)
    if args.json:
        print(json.dumps({"file": args.file, "profile": cassette.profile,
                          "upstream": cassette.upstream, "interactions": rows}, indent=2,
                         ensure_ascii=False))
        return 0
    for row in rows:
        what = f"HTTP {row['status']}" if "status" in row else "WebSocket"
        print(f"{row['interaction']:>3}  {row['method']} {row['path']}  {what}  "
              f"{row.get('kind')}  {row.get('events', 0)} events  {row.get('ended', '')}"
              .rstrip())
    return 0


def _schema(args: argparse.Namespace) -> int:
    from ormock.cassette.schema import schema_text

    sys.stdout.write(schema_text())
    return 0


def add_redaction_options(parser: argparse.ArgumentParser) -> None:
    """``--redact-header`` and ``--redact-path``: what every command that writes a cassette
    takes out besides the secret headers (``Redaction.of(args.redact_header,
    args.redact_path)``)."""
    parser.add_argument("--redact-header", action="append", default=[], metavar="NAME",
                        help="a header whose value is replaced with REDACTED (the secret ones "
                        "always are); repeatable")
    parser.add_argument("--redact-path", action="append", default=[], metavar="JSON.PATH",
                        help="a JSON path in request and answer bodies replaced with REDACTED, "
                        "e.g. metadata.user_id or input[*].content; repeatable")


def _diff(args: argparse.Namespace) -> int:
    from ormock.cassette import CassetteError, load
    from ormock.cassette.drift import compare_interactions
    from ormock.cassette.drift_report import CassetteDrift, DriftReport
    from ormock.commands.shape_report import ignore_of, print_report

    try:
        old, new = load(args.old), load(args.new)
    except CassetteError as error:
        print(f"ormock cassette diff: {error}", file=sys.stderr)
        return 2
    compared = compare_interactions(old.interactions, new.interactions, ignore_of(args))
    report = DriftReport(f"ormock cassette diff {args.old} {args.new}",
                         [CassetteDrift(args.old, compared, against=args.new)])
    return print_report(report, args)


_ACTIONS = {"export": _export, "import": _import, "list": _list, "schema": _schema,
            "diff": _diff}


def run(args: argparse.Namespace) -> int:
    """The action named on the command line (``export``, ``import``, ``list``, ``schema``,
    ``diff``)."""
    return _ACTIONS[args.action](args)


def add_parser(commands: Any) -> None:
    """Register ``ormock cassette`` on the subparsers of the ``ormock`` command."""
    cassette = commands.add_parser(
        "cassette", help="list cassettes, convert them to and from vcrpy's, compare two, print "
        "their schema")
    cassette.set_defaults(func=run)
    actions = cassette.add_subparsers(dest="action", required=True)

    export = actions.add_parser(
        "export", help="write a cassette (ormock's or vcrpy's) as a vcrpy cassette",
        description="Write FILE as a vcrpy / pytest-recording cassette, through vcrpy's own "
        "persister. vcrpy keeps no timing, no WebSocket session and no broken-off answer: "
        "what it cannot hold is named on stderr.")
    export.add_argument("file", help="a cassette file")
    export.add_argument("--to", choices=("vcr",), required=True, help="the format to write")
    export.add_argument("-o", "--output", default=None, metavar="OUT",
                        help="where to write (default FILE.vcr.yaml; a .json name writes "
                        "vcrpy's JSON)")
    export.add_argument("--base-url", default=None, metavar="URL",
                        help="scheme and host the requests go to (default: the cassette's "
                        "upstream, else https://api.openai.com)")

    imported = actions.add_parser(
        "import", help="write a vcrpy / pytest-recording cassette as an ormock cassette",
        description="Read a vcrpy cassette (SSE bodies split back into events; no timing) and "
        "write it as an ormock cassette, the secret headers redacted and the text scanned for "
        "keys first.")
    imported.add_argument("file", help="a vcrpy cassette (.yaml, or .json)")
    imported.add_argument("-o", "--output", default=None, metavar="OUT",
                          help="where to write (default FILE.ormock.yaml)")
    add_redaction_options(imported)

    listing = actions.add_parser("list", help="one line per interaction of a cassette")
    listing.add_argument("file", help="a cassette file (ormock's or vcrpy's)")
    listing.add_argument("--json", action="store_true", help="print the interactions as JSON")

    actions.add_parser("schema", help="print the JSON Schema of cassette files")

    diff = actions.add_parser(
        "diff", help="compare two cassettes by shape, not by value (as ormock drift does)",
        description="Compare each interaction of OLD with the one at its place in NEW by shape: "
        "status, content type and rate-limit headers, SSE framing, event types and their order, "
        "output item and content types, the fields of every event and object, the error "
        "envelope, sequence_number, the end of the stream. Exit 1 when a shape changed, 0 when "
        "none did, 2 when a file cannot be read.")
    diff.add_argument("old", help="the cassette recorded first (ormock's or vcrpy's)")
    diff.add_argument("new", help="the cassette to compare with it")
    add_report_options(diff)
