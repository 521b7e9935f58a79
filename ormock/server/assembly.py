"""One ormock server's parts, assembled from its options: the plugins loaded, the settings (the
plugins' scenario folders after the user's), the namespaces with their preloaded scenarios and
the ASGI app. ``OrmockServer`` serves them in a thread; each ``ormock serve --workers`` process
assembles its own (``ormock.commands.workers``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ormock.engine.limits import Limits
from ormock.engine.namespaces import Namespaces, preload
from ormock.engine.settings import Settings, settings_from
from ormock.plugins import load_entry_points, load_plugins, plugin_scenario_dirs
from ormock.server.app import create_app

__all__ = ["Assembled", "assemble"]


@dataclass(frozen=True)
class Assembled:
    namespaces: Namespaces
    app: Any
    limits: Limits


def assemble(*, settings: Settings | None = None, scenarios: Sequence[str] = (),
             api_key: str | None = None, max_body: int | None = None,
             admin_hosts: Sequence[str] = (), allowed_hosts: Sequence[str] = (),
             plugins: Sequence[str] = (), **options: Any) -> Assembled:
    """The parts of a server with these options (those of ``OrmockServer`` but the address)."""
    load_entry_points()
    load_plugins(plugins)  # before the settings: a chaos spec may name a plugin's fault
    settings = settings_from(settings, options)
    limits = settings.limits
    if max_body is not None:
        limits = replace(limits, max_body=max_body)
    settings = replace(settings, limits=limits,
                       scenario_dirs=(*settings.scenario_dirs, *plugin_scenario_dirs(plugins)))
    namespaces = Namespaces(settings)
    preload(namespaces, scenarios)
    app = create_app(namespaces, api_key=api_key, max_body=limits.max_body,
                     admin_hosts=frozenset(admin_hosts), allowed_hosts=frozenset(allowed_hosts),
                     max_header_bytes=limits.max_header_bytes)
    return Assembled(namespaces, app, limits)
