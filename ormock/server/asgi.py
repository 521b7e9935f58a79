"""The ASGI callables' types for the server's modules (defined once, in ``protocol.types``), and
the direct path's (``ormock.server.direct``): an answer to send ``Now`` (its two messages), or
what is left of it to run ``Later`` on the ASGI path."""

from collections.abc import Awaitable, Callable

from ormock.protocol.types import App, Message, Receive, Scope, Send

__all__ = ["App", "Later", "Message", "Now", "Receive", "Scope", "Send"]

Now = tuple[Message, Message]
Later = Callable[[Receive, Send], Awaitable[None]]
