"""The types every module means by a JSON object and by the ASGI callables: one definition each,
imported everywhere (the engine's writers and the server's middleware alike)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["App", "Json", "Message", "Receive", "Scope", "Send"]

Json = dict[str, Any]  # a decoded JSON object: a request body, an event, an item
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
