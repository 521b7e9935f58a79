"""The ``ormock`` command's one convention: each subcommand a module of ``ormock.commands`` named
as the command, with ``add_parser`` and ``run``; ``ormock --help`` lists them all and every
``ormock CMD --help`` exits 0."""

from __future__ import annotations

import argparse
import pkgutil
import subprocess
import sys

import pytest

import ormock.commands
from ormock.cli import COMMANDS, Command, main

NAMES = [command.__name__.rpartition(".")[2] for command in COMMANDS]  # type: ignore[attr-defined]
# what a command with actions takes after its name (``ormock cassette export --help``)
ACTIONS = {"cassette": ["export", "import", "list", "schema", "diff"],
           "journal": ["list", "export"]}
# modules of ormock.commands that are no command
HELPERS = {"timeline", "workers", "collector", "shape_report"}


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def test_every_command_is_listed_by_help(capsys: pytest.CaptureFixture[str]) -> None:
    out = _help([], capsys)
    assert NAMES == ["serve", "scenarios", "show", "check", "verdict", "cassette", "record",
                     "journal", "demo", "probe", "drift"]
    assert "{" + ",".join(NAMES) + "}" in out
    for name in NAMES:
        assert f"\n    {name} " in out


@pytest.mark.parametrize("argv", [[name] for name in NAMES]
                         + [[name, action] for name, actions in ACTIONS.items()
                            for action in actions], ids=" ".join)
def test_every_command_has_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert _help(argv, capsys).startswith(f"usage: ormock {' '.join(argv)} ")


@pytest.mark.parametrize("command", COMMANDS, ids=NAMES)
def test_a_command_is_a_module_with_its_parser_and_its_run(command: Command) -> None:
    name = command.__name__  # type: ignore[attr-defined]
    assert name.startswith("ormock.commands.")
    commands = argparse.ArgumentParser().add_subparsers()
    command.add_parser(commands)
    parsers = commands.choices
    assert isinstance(parsers, dict) and list(parsers) == [name.rpartition(".")[2]]
    assert next(iter(parsers.values())).get_default("func") is command.run


def test_every_module_of_commands_is_a_command_or_a_helper() -> None:
    modules = {info.name for info in pkgutil.iter_modules(ormock.commands.__path__)}
    assert modules == set(NAMES) | HELPERS


def test_python_m_ormock_is_the_command() -> None:
    done = subprocess.run([sys.executable, "-m", "ormock", "--help"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ormock ") and "{" + ",".join(NAMES) + "}" in done.stdout


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 2
    assert "the following arguments are required: command" in capsys.readouterr().err
