"""The plugin API: a module with ``register(registry)`` adds faults, match checks, scenario
folders and provider profiles (``registry.profile``; the built-in ones are values of
``ormock.protocol.profile``, and the real providers' are the modules of ``ormock.providers``,
registered here as plugins when this module is imported).

Plugins are found through the ``ormock.plugins`` entry-point group (loaded by every server and
by the pytest plugin), or named explicitly: ``ormock serve --plugin MODULE_OR_FILE``, the
``ormock_plugins`` ini key, ``OrmockServer(plugins=[...])``. A plugin is registered once per
process, however often it is named::

    # acme_ormock.py
    from ormock.scenario.matching import RequestView

    def register(registry):
        @registry.check("input_startswith")
        def _starts(view: RequestView, prefix: str, responses) -> str | None:
            return None if view.input_text.startswith(prefix) else f"input does not start ..."
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from ormock.faults import Fault, register
from ormock.protocol.profile import Profile, register_profile
from ormock.providers import PROVIDERS
from ormock.scenario.matching import CheckFn, Prepare, register_check

__all__ = ["ENTRY_POINT_GROUP", "PluginError", "Registry", "load_entry_points", "load_plugins",
           "plugin_scenario_dirs"]

ENTRY_POINT_GROUP = "ormock.plugins"
F = TypeVar("F", bound=type[Fault])


class PluginError(RuntimeError):
    """A plugin that cannot be found or that failed to register."""


class Registry:
    """What a plugin's ``register(registry)`` receives."""

    def __init__(self) -> None:
        self.scenario_dirs: list[Path] = []

    def fault(self, cls: F) -> F:
        """Register a ``Fault`` subclass under its ``name`` (usable in YAML, Python, chaos)."""
        return register(cls)

    def check(self, name: str, prepare: Prepare | None = None) -> Callable[[CheckFn], CheckFn]:
        """Register a ``match`` check under its YAML key (see ``ormock.scenario.matching``)."""
        return register_check(name, prepare)

    def profile(self, profile: Profile) -> Profile:
        """Register a provider profile under its ``name``: selectable by ``--profile``,
        ``OrmockServer(profile=...)``, a pytest marker's ``profile`` and a scenario's
        ``profile:`` key (a name registered again is replaced)."""
        return register_profile(profile)

    def scenarios(self, folder: str | Path) -> None:
        """A folder whose scenario files can be named like catalogue entries."""
        self.scenario_dirs.append(Path(folder))


REGISTRY = Registry()
_loaded: dict[str, ModuleType] = {}
_folders: dict[str, tuple[Path, ...]] = {}  # the scenario folders each plugin registered


def _import(name: str) -> ModuleType:
    if name.endswith(".py"):
        path = Path(name).resolve()
        spec = importlib.util.spec_from_file_location(f"ormock_plugin_{path.stem}", path)
        if spec is None or spec.loader is None or not path.is_file():
            raise PluginError(f"plugin file {name!r} not found")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(name)


def load_plugins(names: Iterable[str]) -> list[ModuleType]:
    """Import each plugin (a module name or a ``.py`` file) and call its ``register``."""
    modules = []
    for name in names:
        if name in _loaded:
            modules.append(_loaded[name])
            continue
        try:
            module = _import(name)
        except (PluginError, KeyboardInterrupt):
            raise
        except BaseException as error:  # SystemExit too: it must not end the server quietly
            raise PluginError(f"plugin {name!r} failed to import: {_why(error)}") from error
        _register(name, module)
        modules.append(module)
    return modules


def _register(name: str, module: Any) -> None:
    register_fn = getattr(module, "register", None)
    if not callable(register_fn):
        raise PluginError(f"plugin {name!r} has no register(registry) function")
    before = len(REGISTRY.scenario_dirs)
    try:
        register_fn(REGISTRY)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit too: it must not end the server quietly
        raise PluginError(f"plugin {name!r} failed to register: {_why(error)}") from error
    _loaded[name] = module
    _folders[name] = tuple(REGISTRY.scenario_dirs[before:])


def plugin_scenario_dirs(plugins: Iterable[str]) -> tuple[Path, ...]:
    """The scenario folders of these plugins (as given to ``load_plugins``) and of every
    installed entry-point plugin: what a server with these plugins may name. A plugin another
    server of the same process loaded adds nothing to this one's."""
    chosen = [*plugins, *(name for name in _loaded if name.startswith("entry-point:"))]
    return tuple(folder for name in dict.fromkeys(chosen) for folder in _folders.get(name, ()))


def _why(error: BaseException) -> str:
    """An exception's message; for SystemExit and the like, which have none to speak of, what
    was raised."""
    return str(error) if isinstance(error, Exception) else f"it raised {error!r}"


def load_entry_points() -> list[str]:
    """Load every plugin installed under the ``ormock.plugins`` entry-point group."""
    names = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        key = f"entry-point:{point.name}"
        if key not in _loaded:
            try:
                module = point.load()
            except KeyboardInterrupt:
                raise
            except BaseException as error:
                raise PluginError(f"plugin {point.name!r} ({point.value}) failed to import: "
                                  f"{_why(error)}") from error
            _register(key, module)
        names.append(point.name)
    return names


def _register_providers() -> None:
    """The real providers' profiles (``ormock.providers``), registered as any plugin is."""
    for module in PROVIDERS:
        _register(f"provider:{module.__name__.rsplit('.', 1)[-1]}", module)


_register_providers()
