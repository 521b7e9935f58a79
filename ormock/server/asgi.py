"""The ASGI callables' types for the server's modules (defined once, in ``protocol.types``)."""

from ormock.protocol.types import App, Message, Receive, Scope, Send

__all__ = ["App", "Message", "Receive", "Scope", "Send"]
