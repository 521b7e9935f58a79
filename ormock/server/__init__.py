"""The server layer: the Starlette app (``app``), the HTTP and WebSocket endpoints, the admin API
(``admin``), ``--api-key`` (``auth``), bounded bodies (``body``) and ``OrmockServer``, a real
uvicorn server in a thread (``runner``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ormock.server.runner import OrmockServer

__all__ = ["OrmockServer"]


def __getattr__(name: str) -> Any:
    if name == "OrmockServer":
        from ormock.server.runner import OrmockServer

        return OrmockServer
    raise AttributeError(f"module 'ormock.server' has no attribute {name!r}")
