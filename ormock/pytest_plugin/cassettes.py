"""The cassettes of an ``ormock`` fixture: where a test's cassette is by default, replaying one
or recording one from the upstream (``--ormock-record``), and writing it after the test."""

from __future__ import annotations

import re
import time
import zlib
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ormock.pytest_plugin.backend import FakeBackend
from ormock.pytest_plugin.options import OrmockOptions
from ormock.pytest_plugin.session import OrmockSession

if TYPE_CHECKING:
    from ormock.cassette.model import Interaction

__all__ = ["FixtureCassettes", "cassette_name"]


def cassette_name(nodeid: str) -> str:
    """The default cassette's file name of a test: its name in its module (``Class.test``),
    with what is not a letter, digit, ``_ . -`` made ``-`` and, when anything was, the test id's
    crc32 added (two parameters that sanitize alike keep two files)."""
    name = (nodeid.split("::", 1)[1] if "::" in nodeid else nodeid).replace("::", ".")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "test"
    if safe != name:
        safe += f"-{zlib.crc32(nodeid.encode()):08x}"
    return safe + ".yaml"


@dataclass
class _CassetteUse:
    """The cassette a fake records to: where, in which mode, and what the file held before
    (kept by ``new_episodes``, compared with by ``drift``: ``drift.py``)."""

    path: Path
    mode: str
    old: tuple[Interaction, ...] = ()


class FixtureCassettes:
    """The cassettes one fake replays or records, in the namespace ``backend`` works on."""

    def __init__(
        self,
        session: OrmockSession,
        options: OrmockOptions,
        backend: FakeBackend,
        *,
        test_path: Path | None = None,
        nodeid: str = "",
    ) -> None:
        self._session = session
        self._options = options
        self._backend = backend
        self._test_path = test_path
        self._nodeid = nodeid
        self._recording: _CassetteUse | None = None  # the cassette it records to, if any

    @property
    def default(self) -> Path:
        """``<test folder>/<ormock_cassette_dir>/<module>/<test>.yaml``: the cassette of
        ``cassette=True``."""
        if self._test_path is None:
            raise RuntimeError("this fake has no test file: give cassette= a path")
        folder = Path(self._session.settings.cassette_dir)
        if not folder.is_absolute():
            folder = self._test_path.parent / folder
        return folder / self._test_path.stem / cassette_name(self._nodeid)

    @property
    def recording(self) -> bool:
        """It records a cassette (a record mode, and a cassette to record)."""
        return self._recording is not None

    def _path(self, spec: str | bool) -> Path:
        if spec is True:
            return self.default
        path = Path(str(spec))
        if not path.is_absolute() and self._test_path is not None:
            path = self._test_path.parent / path
        return path

    def use(self, spec: str | bool) -> None:
        """Replay the cassette ``spec`` (``True``: the default one), or record to it: as the
        session's record mode says."""
        __tracebackhide__ = True
        settings = self._session.settings
        path = self._path(spec)
        mode = settings.record
        if self._recording is not None and mode != "none":
            pytest.fail(f"ormock: this fake records to {self._recording.path} already; one "
                        f"cassette per fake records (use ormock_factory for another)",
                        pytrace=False)
        exists = path.exists()
        if mode == "none" or (mode == "once" and exists):
            if not exists:
                pytest.fail(
                    f"ormock: no cassette at {path} (--ormock-record={mode} replays only). "
                    f"Record it with: pytest --ormock-record=once --ormock-upstream URL "
                    f"'{self._nodeid}'", pytrace=False)
            self._load(path)
            return
        from ormock.engine.replays import Upstream

        assert settings.upstream is not None  # checked when the session started
        if mode == "drift":  # recorded again, compared with the file after the test (drift.py)
            from ormock.pytest_plugin.drift import recorded_before

            before = recorded_before(path)
            if isinstance(before, str):
                pytest.fail(before, pytrace=False)
            self._recording = _CassetteUse(path, mode, before)
            self._backend.record_to(Upstream(settings.upstream, settings.upstream_key, "all"))
            return
        old: tuple[Interaction, ...] = ()
        if mode == "rewrite" and exists:
            path.unlink()
        elif mode == "new_episodes" and exists:
            old = tuple(interaction for cassette in self._load(path)
                        for interaction in cassette.interactions)
        self._recording = _CassetteUse(path, mode, old)
        self._backend.record_to(Upstream(settings.upstream, settings.upstream_key, mode))

    def _load(self, path: Path) -> list[Any]:
        __tracebackhide__ = True
        from ormock.cassette.fileformat import CassetteError
        from ormock.cassette.matching import order_of

        options = self._options
        order = order_of(options.cassette_order)  # checked when the options were read
        try:  # at the pace of cassette_speed: the namespace was opened with it
            return self._backend.load_cassettes(path, options.cassette_ignore, order)
        except (CassetteError, OSError) as error:
            pytest.fail(f"ormock: the cassette {path} could not be read: {error}",
                        pytrace=False)

    def settle(self, timeout: float = 10.0) -> None:
        """Wait (at most ``timeout`` s) until every forwarded request is recorded: its client
        can have the last byte before the server thread hands the interaction over."""
        replays = self._backend.replays()
        if replays is None or self._recording is None:
            return
        deadline = time.monotonic() + timeout
        while replays.pending > 0 and time.monotonic() < deadline:
            time.sleep(0.002)

    def save(self) -> str | None:
        """After the test: write what it recorded (``new_episodes``: after what the file held);
        what went wrong, or None."""
        use = self._recording
        if use is None:
            return None
        self.settle()
        replays = self._backend.replays()
        new = replays.new_interactions() if replays is not None else []
        if use.mode == "new_episodes" and not new:
            return None  # nothing to add: the file stays as it was
        from datetime import datetime

        from ormock import __version__
        from ormock.cassette.model import Cassette
        from ormock.cassette.redact import SecretFound
        from ormock.cassette.save import save_cassette
        from ormock.server.recorder_file import public_url

        settings = self._session.settings
        interactions = (*use.old, *new) if use.mode == "new_episodes" else tuple(new)
        cassette = Cassette(
            interactions, profile=settings.profile or "openai",
            upstream=public_url(settings.upstream) if settings.upstream else None,
            recorded_at=datetime.now(UTC).isoformat(timespec="seconds").replace(
                "+00:00", "Z"),
            recorded_with=f"ormock {__version__}")
        if use.mode == "drift":  # the file stays; a change of shape fails the test
            from ormock.pytest_plugin.drift import compared_with

            return compared_with(use.path, use.old, cassette)
        try:
            save_cassette(cassette, use.path)
        except SecretFound as refusal:
            return f"ormock: the cassette {use.path} was not written: {refusal}"
        except OSError as error:
            return f"ormock: the cassette {use.path} could not be written: {error}"
        return None
