"""The plugin's settings: the command line and ini file (once per session) and the per-fake keys
(the ``ormock_config`` fixture, the nearest ``@pytest.mark.ormock``, an ``ormock_factory`` call),
validated into frozen dataclasses.

Precedence, highest first: the command line; an ``ormock_factory(...)`` call's own arguments (for
that fake); the nearest marker; the ``ormock_config`` fixture; the ini file; the built-in default.
A level counts only for the keys it sets. The ini keys are the suite's defaults, so every
per-test opt-out the after-test checks print works whatever the ini says.

This module imports nothing heavy: pytest loads it in every session, ormock used or not.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "CHECK_KEYS",
    "KEYS",
    "RECORD_MODES",
    "OptionsError",
    "OrmockOptions",
    "SessionSettings",
    "parse_float",
    "parse_seed",
    "parse_upstream",
    "parse_url",
    "resolve",
]

RECORD_MODES = ("none", "once", "new_episodes", "all", "rewrite", "drift")
# The after-test checks, each with its own opt-out key (``strict=False`` turns them all off).
CHECK_KEYS = ("assert_all_matched", "assert_all_used", "assert_valid_replies",
              "assert_no_server_errors")


class OptionsError(ValueError):
    """A bad key or value in a marker, ``ormock_config`` or an ``ormock_factory`` call."""


@dataclass(frozen=True)
class OrmockOptions:
    """Everything that configures one fake (one namespace) and the checks after its test."""

    scenario: tuple[Any, ...] = ()  # names, paths, mappings or Scenario objects, loaded in order
    faults: tuple[Any, ...] = ()  # names, mappings ({"http_error": {"status": 429}}) or Faults
    chaos: str | None = None  # "rate=0.2,seed=7,faults=..." (ormock.faults.chaos)
    # a cassette file to replay (and record, in a record mode); True: the test's default one
    cassette: str | bool | None = None
    cassette_ignore: tuple[str, ...] = ()  # JSON paths left out when matching a request
    cassette_order: str = "any"  # how interactions answer: ormock.cassette.matching.ORDERS
    cassette_speed: float = 0.0  # divides the recorded pauses; 0 (the default) is at once
    strict: bool = True  # False turns off every after-test check
    assert_all_matched: bool = True  # requests that no scenario step matched
    assert_all_used: bool = True  # steps expected and never (or not often enough) used
    assert_valid_replies: bool = True  # literal replies the client could not be sent
    assert_no_server_errors: bool = True  # exceptions raised inside the server
    seed: int = 0  # ids, timestamps and generated text of this fake
    speed: float = 1.0  # divides every scripted delay; 0 is instant
    profile: str | None = None  # the provider this fake plays (None: the session server's)

    def checks(self) -> dict[str, bool]:
        """Which after-test checks run (all off when not ``strict``)."""
        return {key: self.strict and bool(getattr(self, key)) for key in CHECK_KEYS}


KEYS = tuple(f.name for f in fields(OrmockOptions))


def parse_seed(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise OptionsError(f"{where}: seed must be an integer, not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise OptionsError(f"{where}: seed must be an integer, not {value!r}")


def parse_float(value: Any, where: str) -> float:
    """A speed: a finite number >= 0 (0 is instant, 1 is as scripted, 2 twice as fast)."""
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or number < 0:
        raise OptionsError(f"{where}: speed must be a number >= 0 (0 is instant, 1 as "
                           f"scripted, 2 twice as fast), not {value!r}")
    return number


def parse_profile(value: Any, where: str) -> str:
    """A profile's name, one of those registered: the built-ins, the real providers'
    (``ormock.providers``, registered when ``ormock.plugins`` is imported) and an installed
    plugin's (its entry point, loaded when the name is not known otherwise)."""
    from ormock.plugins import load_entry_points
    from ormock.protocol.profile import get_profile, profile_names

    if not isinstance(value, str):
        raise OptionsError(f"{where}: profile must be a profile name, not {value!r}")
    if value not in profile_names():
        load_entry_points()
    try:
        return get_profile(value).name
    except ValueError as error:
        raise OptionsError(f"{where}: {error}") from None


def parse_upstream(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise OptionsError(f"--ormock-upstream must be an http:// or https:// URL, not {value!r}")
    return value.rstrip("/")


def parse_url(value: str, where: str) -> str:
    """The root of a shared ``ormock serve`` (a ``/v1`` or ``/`` at the end is dropped)."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
        raise OptionsError(f"{where} must be the http:// URL of an `ormock serve`, such as "
                           f"http://10.0.0.5:8000, not {value!r}")
    root = value.rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


def _as_tuple(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,)


def validate(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Check the keys and value types of one level; the keys it sets, normalised."""
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        from ormock.protocol.hints import suggest  # only on an error: nothing at start-up

        raise OptionsError(
            f"{where}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}{suggest(unknown[0], KEYS)}; the known keys are "
            f"{', '.join(KEYS)}"
        )
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in ("scenario", "faults"):
            items = _as_tuple(value)
            for item in items:
                if key == "scenario" and not (
                    isinstance(item, (str, os.PathLike, Mapping)) or hasattr(item, "steps")
                ):
                    raise OptionsError(f"{where}: scenario takes a catalogue name, a file path, "
                                       f"a mapping or a Scenario (or a list), not {item!r}")
                if key == "faults" and isinstance(item, (bytes, int, float, list, tuple)):
                    raise OptionsError(f"{where}: faults takes faults: names ('no_done') or "
                                       f"mappings ({{'http_error': {{'status': 429}}}}), or a "
                                       f"list of them, not {item!r}")
            out[key] = items
        elif key == "cassette":
            if value is not None and not isinstance(value, (str, os.PathLike, bool)):
                raise OptionsError(f"{where}: cassette must be True (the test's default "
                                   f"cassette) or a file path, not {value!r}")
            out[key] = value if value is None or isinstance(value, bool) else os.fspath(value)
        elif key == "cassette_ignore":
            paths = _as_tuple(value)
            if not all(isinstance(p, str) and p for p in paths):
                raise OptionsError(f"{where}: cassette_ignore takes JSON paths such as "
                                   f"'metadata' or 'input[*].output' (or a list), not {value!r}")
            out[key] = paths
        elif key == "cassette_order":
            from ormock.cassette.matching import order_of

            try:
                out[key] = order_of(value)
            except ValueError as error:
                raise OptionsError(f"{where}: cassette_{error}") from None
        elif key == "cassette_speed":
            out[key] = parse_float(value, where)
        elif key == "chaos":
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise OptionsError(f"{where}: {key} must be a string, not {value!r}")
            out[key] = None if value is None else os.fspath(value)
        elif key == "seed":
            out[key] = None if value is None else parse_seed(value, where)
        elif key == "profile":
            out[key] = None if value is None else parse_profile(value, where)
        elif key == "speed":
            out[key] = None if value is None else parse_float(value, where)
        else:
            if not isinstance(value, bool):
                raise OptionsError(f"{where}: {key} must be True or False, not {value!r}")
            out[key] = value
    return out


@dataclass(frozen=True)
class SessionSettings:
    """The command line and the ini file: read once per session (per xdist worker)."""

    record: str = "none"
    upstream: str | None = None
    upstream_key: str | None = None  # the value of --ormock-upstream-key-env's variable
    upstream_key_env: str = "OPENAI_API_KEY"
    cassette_dir: str = "cassettes"  # the default cassettes' folder, beside each test module
    cli_seed: int | None = None
    cli_speed: float | None = None
    ini_seed: int | None = None
    ini_strict: bool = True
    scenarios_dir: Path | None = None
    plugins: tuple[str, ...] = ()
    profile: str | None = None  # a profile name; None: the default
    url: str | None = None  # a shared ``ormock serve`` (--ormock-url): no server of our own

    @property
    def recording(self) -> bool:
        return self.record != "none"

    @property
    def seed(self) -> int:
        """The server's seed: ``--ormock-seed``, else ``ormock_seed``, else 0."""
        if self.cli_seed is not None:
            return self.cli_seed
        return self.ini_seed if self.ini_seed is not None else 0

    @property
    def speed(self) -> float:
        """The server's speed: ``--ormock-speed``, else 1 (as scripted)."""
        return self.cli_speed if self.cli_speed is not None else 1.0


def resolve(session: SessionSettings, *levels: Mapping[str, Any]) -> OrmockOptions:
    """Merge validated levels, lowest first (config fixture, marker, factory call), over the
    ini defaults, under the command line."""
    merged: dict[str, Any] = {"strict": session.ini_strict, "seed": session.seed,
                              "speed": session.speed}
    for level in levels:
        merged.update((k, v) for k, v in level.items() if v is not None or k not in
                      ("seed", "speed"))
    if session.cli_seed is not None:
        merged["seed"] = session.cli_seed
    if session.cli_speed is not None:
        merged["speed"] = session.cli_speed
    return OrmockOptions(**merged)
