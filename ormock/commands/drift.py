"""``ormock drift``: send each recorded request of some cassettes to the live provider again and
report what changed in shape (``ormock.cassette.drift``), not in value.

``ormock drift tests/cassettes/ --upstream https://api.openai.com/v1 --upstream-key-env
OPENAI_API_KEY`` reads every cassette (ormock's or vcrpy's) of the folder, sends its HTTP
requests again through the recorder's relay (``ormock.server.resend``), and prints a report per
cassette and a summary (``--json``, ``--markdown`` for a CI comment). ``--write`` saves what came
back beside each cassette as ``NAME.drift.yaml`` (redacted and scanned like every cassette
ormock writes), never over it. Exit status: 1 when a shape changed; else 2 when a request got
no answer to compare or a new recording could not be written; 0 when nothing changed. A usage
or cassette error (its file, line and key) is 2 before anything is sent.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ormock.commands.cassette import add_redaction_options
from ormock.commands.shape_report import add_report_options, ignore_of, print_report

__all__ = ["add_parser", "cassette_files", "drift_path", "run"]

DRIFT_SUFFIX = ".drift.yaml"


def add_parser(commands: Any) -> None:
    drift = commands.add_parser(
        "drift", help="send cassettes' requests to the live provider again and report what "
        "changed in shape",
        description="Send every recorded HTTP request of the cassettes to --upstream again "
        "(through the recorder's relay) and compare what comes back with what was recorded by "
        "shape, not by value: status, content type and rate-limit headers, SSE framing, event "
        "types and their order, output item and content types, the fields of every event and "
        "object, the error envelope, sequence_number, the end of the stream. Exit 1 when a "
        "shape changed, 0 when none did, 2 on a usage or cassette error or a request that got "
        "no answer.")
    drift.add_argument("cassettes", nargs="+", metavar="CASSETTE",
                       help="a cassette file (ormock's or vcrpy's) or a folder of them, "
                       f"searched recursively (dot-files and *{DRIFT_SUFFIX} left out)")
    drift.add_argument("--upstream", required=True, metavar="URL",
                       help="the provider's base URL, e.g. https://api.openai.com/v1")
    drift.add_argument("--upstream-key-env", default=None, metavar="NAME",
                       help="send 'Authorization: Bearer $NAME' (a cassette's own credentials "
                       "are never sent)")
    drift.add_argument("--timeout", type=float, default=60.0, metavar="S",
                       help="the longest wait for one answer to end, in seconds (default 60); "
                       "an answer still coming then is recorded as stalled")
    drift.add_argument("--write", action="store_true",
                       help=f"save what came back beside each cassette as NAME{DRIFT_SUFFIX} "
                       "(never over the cassette itself)")
    add_redaction_options(drift)
    add_report_options(drift)
    drift.set_defaults(func=run)


def cassette_files(targets: list[str]) -> list[Path]:
    """The cassette files of ``targets``: each file as given, each folder's ``*.yaml``,
    ``*.yml`` and ``*.json`` files at any depth, sorted, less dot-files and drift recordings.
    ``FileNotFoundError`` names a target that is neither."""
    files: list[Path] = []
    for target in targets:
        path = Path(target)
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.is_file()
                            and p.suffix in (".yaml", ".yml", ".json")
                            and not any(part.startswith(".") for part in
                                        p.relative_to(path).parts)
                            and not p.name.endswith(DRIFT_SUFFIX))
        else:
            raise FileNotFoundError(f"{target}: no such file or folder")
    return files


def drift_path(file: Path) -> Path:
    """Where ``--write`` saves the new recording of ``file``: ``NAME.drift.yaml`` beside it."""
    return file.with_name(file.stem + DRIFT_SUFFIX)


def _key(args: argparse.Namespace) -> str | None:
    if args.upstream_key_env is None:
        return None
    key = os.environ.get(args.upstream_key_env)
    if not key:
        raise ValueError(f"--upstream-key-env {args.upstream_key_env}: that environment "
                         "variable is not set")
    return key


def run(args: argparse.Namespace) -> int:
    from ormock.cassette import load
    from ormock.server.recorder_file import public_url
    from ormock.server.relay import check_upstream

    try:
        key = _key(args)
        upstream = check_upstream(args.upstream)
        if not args.timeout > 0:
            raise ValueError(f"--timeout {args.timeout}: give a number of seconds above 0")
        cassettes = [(file, load(file)) for file in cassette_files(args.cassettes)]
    except (ValueError, FileNotFoundError) as error:  # a CassetteError is a ValueError
        print(f"ormock drift: {error}", file=sys.stderr)
        return 2
    if not cassettes:
        print(f"ormock drift: no cassette in {', '.join(args.cassettes)}", file=sys.stderr)
        return 2
    report, trouble = asyncio.run(_drift(cassettes, upstream, key, args))
    report.title = f"ormock drift against {public_url(upstream)}"
    code = print_report(report, args)
    return code if code else 2 if trouble else 0


async def _drift(cassettes: list[tuple[Path, Any]], upstream: str, key: str | None,
                 args: argparse.Namespace) -> tuple[Any, bool]:
    from ormock.cassette.drift import compare_interactions
    from ormock.cassette.drift_report import CassetteDrift, DriftReport
    from ormock.server.resend import resend

    report = DriftReport("ormock drift")
    trouble = False
    for file, cassette in cassettes:
        print(f"ormock drift: {file}: sending {len(cassette.interactions)} requests again",
              file=sys.stderr, flush=True)
        resent = await resend(cassette, upstream, key=key, timeout=args.timeout)
        trouble = trouble or bool(resent.failed)
        drift = CassetteDrift(str(file), compare_interactions(
            cassette.interactions, resent.interactions, ignore_of(args), resent.notes))
        if args.write:
            drift.written, drift.problem = _write(file, cassette, resent.interactions,
                                                  upstream, args)
            trouble = trouble or drift.problem is not None
        report.cassettes.append(drift)
    return report, trouble


def _write(file: Path, cassette: Any, interactions: list[Any], upstream: str,
           args: argparse.Namespace) -> tuple[str | None, str | None]:
    """Save the new recording beside ``file``; (its path, None) or (None, what went wrong)."""
    from ormock import __version__
    from ormock.cassette import Cassette, Redaction, SecretFound, save_cassette
    from ormock.server.recorder_file import public_url

    new = tuple(i for i in interactions if i is not None)
    if not new:
        return None, "nothing came back to write"
    out = drift_path(file)
    recorded = Cassette(new, profile=cassette.profile, upstream=public_url(upstream),
                        recorded_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                        recorded_with=f"ormock {__version__} (ormock drift of {file.name})")
    try:
        save_cassette(recorded, out, Redaction.of(args.redact_header, args.redact_path))
    except SecretFound as refusal:
        return None, f"the new recording was not written: {refusal}"
    except OSError as error:
        return None, f"the new recording could not be written to {out}: {error.strerror}"
    return str(out), None
