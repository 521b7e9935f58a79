"""The ASGI callables' types for the server's modules (defined once, in ``protocol.types``), and
an answer written whole at once: ``Now``, its two messages (``http.response.start`` and
``http.response.body``)."""

from ormock.protocol.types import App, Message, Receive, Scope, Send

__all__ = ["App", "Message", "Now", "Receive", "Scope", "Send"]

Now = tuple[Message, Message]
