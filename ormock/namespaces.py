"""The engines of one server: one per namespace (``/v1`` is the namespace ``""``,
``/<name>/v1`` another), made on first use, and dropped for good when their test ends."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from .engine import Engine
from .protocol.errors import OpenResponsesError
from .scenario import find_scenario

__all__ = ["Namespaces", "preload"]


def preload(namespaces: Namespaces, scenarios: Sequence[str]) -> None:
    """Load ``scenarios`` (names or paths) into every engine; fail now if one does not load."""
    dirs = namespaces.options.get("scenario_dirs", ())
    loaded = [find_scenario(s, dirs) for s in scenarios]

    def setup(engine: Engine) -> None:
        for scenario in loaded:
            engine.scenarios.add(scenario)

    namespaces.setup.append(setup)


class Namespaces:
    """The engines of one server, one per namespace, made on first use with the same options."""

    def __init__(self, **options: Any) -> None:
        self.options = options
        self._engines: dict[str, Engine] = {}
        self._lock = threading.Lock()
        self.setup: list[Callable[[Engine], None]] = []  # run on every new engine
        self._closed: set[str] = set()  # dropped: a late request must not bring them back
        self.replies_in_flight = 0  # replies being written (read by tests: none outlive a client)

    @property
    def seed(self) -> int:
        return int(self.options.get("seed", 0))

    def get(self, name: str = "") -> Engine:
        """The engine of a namespace, made on first use; a dropped one answers 404."""
        engine = self._engines.get(name)
        if engine is None:
            with self._lock:
                engine = self._engines.get(name)
                if name in self._closed:
                    raise OpenResponsesError(
                        f"The namespace {name!r} is closed: the test that owned it has ended. "
                        "A request that arrives after its test is a leak in the code under "
                        "test (a background thread or task still running).",
                        type="not_found", code="namespace_closed", param="path",
                    )
                if engine is None:
                    engine = Engine(**self.options)
                    for setup in self.setup:
                        setup(engine)
                    self._engines[name] = engine
        return engine

    def find(self, name: str = "") -> Engine | None:
        """The engine of a namespace if it exists; never makes one."""
        return self._engines.get(name)

    def drop(self, name: str) -> None:
        """Forget a namespace for good: its engine goes, and later requests to it get 404."""
        with self._lock:
            self._engines.pop(name, None)
            if name:
                self._closed.add(name)

    def names(self) -> list[str]:
        return sorted(self._engines)
