"""The engine: a request's way from its choice (a scenario step, a named scenario, the embedded
default) through its composition (events, echo, profile, faults) to a reply and its wire, and
what it leaves behind (the journal, stored responses, namespaces). ``docs/architecture.md``
draws the map. ``Engine`` is in ``ormock.engine.core``; this package's own import is free of
side effects, so that its small modules (``limits``, ``capped``) load alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = ["Engine"]


def __getattr__(name: str) -> Any:
    if name == "Engine":
        from ormock.engine.core import Engine

        return Engine
    raise AttributeError(f"module 'ormock.engine' has no attribute {name!r}")
