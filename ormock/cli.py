"""The ``ormock`` command: the top-level parser and the dispatch, nothing else.

Each subcommand is a module of ``ormock.commands`` named as the command (``ormock serve`` is
``ormock.commands.serve``), with ``add_parser(commands)`` (its parser, options and help; it sets
``func`` to its ``run``) and ``run(args) -> int`` (its work; the exit code). ``COMMANDS`` lists
them in the order ``ormock --help`` shows them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, Protocol

from ormock.commands import (
    cassette,
    check,
    demo,
    drift,
    journal,
    probe,
    record,
    scenarios,
    serve,
    show,
    verdict,
)

__all__ = ["COMMANDS", "Command", "build_parser", "main"]


class Command(Protocol):
    """A module of ``ormock.commands``: one ``ormock`` subcommand."""

    def add_parser(self, commands: Any) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


COMMANDS: tuple[Command, ...] = (serve, scenarios, show, check, verdict, cassette, record,
                                 journal, demo, probe, drift)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ormock", description="A scriptable fake Open Responses provider for tests."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # `ormock show NAME | head`: the reader has had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
