"""How one fake behaves: one typed, checked object instead of a list of keywords threaded by hand
through ``Engine``, ``Namespaces``, ``OrmockServer`` and the command line.

``Settings(seed=3, profile="openai")`` checks every value at once and says what to change; a
string is taken where a person would write one (a chaos spec, a profile name, folder paths) and
stored as the typed value. ``Engine(seed=3)``, ``OrmockServer(seed=3)`` build one from their
keywords (``settings_from``); ``dataclasses.replace`` makes a variant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from os import PathLike
from pathlib import Path
from typing import Any

import ormock.plugins  # noqa: F401  (registers the real providers' profiles)
from ormock.cassette.matching import Order, order_of
from ormock.cassette.model import Cassette
from ormock.cassette.validation import checked
from ormock.engine.limits import Limits
from ormock.engine.store import check_store
from ormock.faults.chaos import Chaos
from ormock.protocol.hints import suggest
from ormock.protocol.ids import CLOCK_MODES
from ormock.protocol.profile import Profile, get_profile

__all__ = ["Settings", "settings_from"]


@dataclass(frozen=True)
class Settings:
    """One fake's settings (each namespace of a server gets an engine made with them)."""

    seed: int = 0  # the same seed gives the same ids, text and chaos draws
    clock: str = "seeded"  # "seeded": timestamps from 2026-01-01, the same every run; "real"
    self_check: bool = False  # refuse to send a planned stream that breaks the protocol
    speed: float = 1.0  # divides every scripted delay; 0 is instant
    scenario_dirs: tuple[Path, ...] = ()  # folders whose scenario files may be named
    chaos: Chaos | None = None  # a fault drawn per request (a spec string is parsed)
    profile: Profile = field(default_factory=lambda: get_profile(None))  # or a name (None: default)
    limits: Limits = field(default_factory=Limits)  # what the journal, store and errors keep
    # replayed before anything else, each namespace from the start (a path is loaded: a
    # cassette file, or a folder of them)
    cassettes: tuple[Cassette, ...] = ()
    cassette_ignore: tuple[str, ...] = ()  # JSON paths left out when matching a request
    cassette_order: Order = "any"  # how interactions answer (``ormock.cassette.matching.ORDERS``)
    # where stored responses live: "memory", or "sqlite:PATH" (one file for every namespace,
    # each its own keyspace, kept across restarts)
    store: str = "memory"

    def __post_init__(self) -> None:
        seed: object = self.seed
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError(f"seed must be a whole number (the same seed gives the same ids "
                             f"and text), not {seed!r}")
        if self.clock not in CLOCK_MODES:
            raise ValueError(f"clock must be 'seeded' (timestamps from 2026-01-01, the same "
                             f"every run) or 'real' (the wall clock), not {self.clock!r}")
        check: object = self.self_check
        if not isinstance(check, bool):
            raise ValueError(f"self_check must be True or False, not {check!r}")
        speed: object = self.speed
        if isinstance(speed, bool) or not isinstance(speed, (int, float)) \
                or not math.isfinite(speed) or speed < 0:
            raise ValueError(f"speed must be a number >= 0 (0 is instant, 1 as scripted, 2 "
                             f"twice as fast), not {speed!r}")
        object.__setattr__(self, "speed", float(speed))
        object.__setattr__(self, "scenario_dirs", _folders(self.scenario_dirs))
        chaos: object = self.chaos
        if isinstance(chaos, str):
            object.__setattr__(self, "chaos", Chaos.parse(chaos))
        elif chaos is not None and not isinstance(chaos, Chaos):
            raise ValueError(f"chaos must be a Chaos, a spec such as 'rate=0.2,seed=7' or None, "
                             f"not {chaos!r}")
        profile: object = self.profile
        if profile is not None and not isinstance(profile, (Profile, str)):
            raise ValueError(f"profile must be a profile name or a Profile, not {profile!r}")
        object.__setattr__(self, "profile", get_profile(profile))  # unknown: lists the names
        object.__setattr__(self, "cassettes", _cassettes(self.cassettes))
        ignore: object = self.cassette_ignore
        if isinstance(ignore, str) or not isinstance(ignore, (tuple, list)):
            raise ValueError(f"cassette_ignore is a list of JSON paths, not {ignore!r}")
        object.__setattr__(self, "cassette_ignore", tuple(str(p) for p in ignore))
        try:
            order_of(self.cassette_order)
        except ValueError as error:
            raise ValueError(f"cassette_{error}") from None
        object.__setattr__(self, "store", check_store(self.store))
        limits: object = self.limits
        if not isinstance(limits, Limits):
            raise ValueError(f"limits must be an ormock.Limits (Limits(journal_bytes=...)), "
                             f"not {limits!r}")


def _cassettes(value: object) -> tuple[Cassette, ...]:
    from ormock.engine.replays import cassettes_in

    if isinstance(value, (str, PathLike, Cassette)):
        value = [value]
    if not isinstance(value, (tuple, list)):
        raise ValueError(f"cassettes must be a list of cassette files or folders, not {value!r}")
    out: list[Cassette] = []
    for item in value:
        if isinstance(item, Cassette):
            out.append(checked(item))  # as a file's would be at its load
        elif isinstance(item, (str, PathLike)):
            out += cassettes_in(item)  # a CassetteError names file, line and key
        else:
            raise ValueError(f"a cassette is a path or an ormock.cassette.Cassette, not {item!r}")
    return tuple(out)


def _folders(value: object) -> tuple[Path, ...]:
    if isinstance(value, (str, PathLike)):
        raise ValueError(f"scenario_dirs must be a list of folders, not the one path {value!r}: "
                         f"write [{str(value)!r}]")
    if not isinstance(value, (tuple, list)):
        raise ValueError(f"scenario_dirs must be a list of folders, not {value!r}")
    bad = [d for d in value if not isinstance(d, (str, PathLike))]
    if bad:
        raise ValueError(f"scenario_dirs must be folder paths, not {bad[0]!r}")
    return tuple(Path(d) for d in value)


def settings_from(settings: Settings | None, overrides: Mapping[str, Any]) -> Settings:
    """``settings`` (or the defaults) with ``overrides`` (``Settings`` fields by keyword); an
    unknown keyword is a ``TypeError`` naming the near miss."""
    known = [f.name for f in fields(Settings)]
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise TypeError(f"unknown setting {unknown[0]!r}{suggest(unknown[0], known)}; the "
                        f"settings are {', '.join(known)}")
    if settings is None:
        return Settings(**overrides)
    return replace(settings, **overrides) if overrides else settings
