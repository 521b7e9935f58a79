"""A create answered in the HTTP protocol's own callback, without an ASGI cycle's task.

uvicorn runs every request as a task that awaits the app, whose ``receive`` and ``send`` are
awaitables of the request's cycle. ``DirectProtocol`` is ``CorkedProtocol`` (uvicorn's
httptools protocol on a corked transport) that starts no task for a ``POST`` to a create path
its headers do not refuse (``Front.may_answer``: one they refuse, too large, declaring a body
past the limit or not JSON, is answered at once on the ASGI path) until the request's body is
in: then the front answers it from there (``Front.answer_now``), and the two messages it hands
back are written as the cycle's ``send`` writes them (its status line, the server's ``date`` and
``server`` headers, each header checked as it checks it, ``connection: close`` and keep-alive,
the next pipelined request started; its own ``send``, stepped at once, where a header needs more
of it). Everything else runs as before, on the cycle's ASGI task: a request the front hands back
(another route, a guard, a cassette), what is left of a create that cannot be written at once (a
delay, a pace, a fault, a background job), a body past uvicorn's read buffer,
``Expect: 100-continue``, a paused write, a server stopping, the access log, the concurrency
limit, and every server without httptools.
What it saves is the task, its awaitables and the cycle's ``send`` (``bench/README.md``, "Past
findings that explain the design"; the measurements in its git history).
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT

from ormock.server.asgi import Now
from ormock.server.corked import CorkedProtocol
from ormock.server.front import Front

__all__ = ["DirectProtocol"]

try:
    from uvicorn.protocols.http.httptools_impl import (
        HEADER_RE,
        HEADER_VALUE_RE,
        STATUS_LINE,
        HttpToolsProtocol,
    )
except ImportError:  # no httptools: h11's protocol, every request on the ASGI path
    DIRECT = False
else:
    DIRECT = issubclass(CorkedProtocol, HttpToolsProtocol)


class DirectProtocol(CorkedProtocol):
    """``CorkedProtocol`` answering a plain create in its ``on_message_complete`` (module
    docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        app = self.app  # uvicorn's loaded app: the front itself unless it wraps it (tracing)
        self.front = app if DIRECT and isinstance(app, Front) and not self.access_log else None
        self.waiting: Any = None  # the cycle whose body the direct path waits for
        self.defaults: object = None  # the server's default headers ``default_head`` writes
        self.default_head: bytes | None = None

    def on_headers_complete(self) -> None:
        # a request pipelined behind one answered here, in the same ``data_received``: that
        # answer's end armed the keep-alive timeout, which ``data_received`` cancels only as
        # it begins; not to close the connection under this request (its body still to
        # come, its answer still running)
        self._unset_keepalive_if_required()
        super().on_headers_complete()

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if self.transport.is_closing():
            # parsed in the same read behind a direct answer that closed the connection (an
            # HTTP/1.0 request's, whose ``keep-alive`` has the parser read on): not run, as
            # uvicorn never starts a request queued behind a closing one
            return
        # a request whose body is still to come (``on_message_complete`` follows): a new one,
        # or a pipelined one started as the one before it ends
        front = self.front
        if (front is not None and cycle.more_body and app is self.app
                and not cycle.waiting_for_100_continue and front.may_answer(cycle.scope)):
            self.waiting = cycle  # answered when its body is in (``on_message_complete``)
            return
        super()._start_asgi_task(cycle, app)

    def _hand_over(self) -> None:
        """The request waiting for its body goes the ASGI way: its task started, the app
        reading the body as it comes (nothing to do when none waits)."""
        waiting = self.waiting
        if waiting is not None:
            self.waiting = None
            super()._start_asgi_task(waiting, self.app)

    def on_body(self, body: bytes) -> None:
        waiting = self.waiting
        if waiting is not None and len(waiting.body) + len(body) > HIGH_WATER_LIMIT:
            self._hand_over()  # a large body: read by the app, as uvicorn pauses for it
        super().on_body(body)

    def shutdown(self) -> None:
        # the server stops: the app waits for the body, as it would (and is cancelled with
        # the other tasks when it never comes)
        self._hand_over()
        super().shutdown()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        cycle = self.waiting
        if cycle is None:
            return
        assert self.front is not None
        if self.flow.write_paused:  # the client reads slowly: its cycle's ``send`` waits
            self._hand_over()
            return
        self.waiting = None
        answer = self.front.answer_now(cycle.scope, bytes(cycle.body))
        if type(answer) is not tuple:  # the app, or what is left of the answer: its task
            if answer is not self.app:  # the body is read: as the app's ``receive`` left it
                cycle.body = bytearray()
                cycle.message_event.clear()
            super()._start_asgi_task(cycle, answer)  # type: ignore[arg-type]
            return
        start, whole = answer
        head = self._head(cycle, start["status"], start["headers"], len(whole["body"]))
        if head is None:  # a header uvicorn would check further: its own ``send``, stepped
            self._send(cycle, answer)
            return
        cycle.response_started = True  # ``RequestResponseCycle.send``'s steps, both messages
        cycle.waiting_for_100_continue = False
        transport = self.transport
        transport.write(head)  # held by ``Corked``, the body joined to it
        transport.write(whole["body"])
        cycle.response_complete = True
        cycle.message_event.set()
        if not cycle.keep_alive:
            transport.close()
        cycle.on_response()

    def _head(self, cycle: Any, status: int, headers: list[tuple[bytes, bytes]], length: int
              ) -> bytes | None:
        """The status line and headers uvicorn's ``send`` writes for a response of ``length``
        bytes with ``headers``, its checks made; None when one of them needs more of ``send``
        (``_checked``; a length missing or another one)."""
        defaults = cycle.default_headers  # the server's, a new list when its date changes
        if defaults is not self.defaults:
            content: list[bytes] = []
            self.defaults = defaults
            self.default_head = b"".join(content) if _checked(defaults, content) == -1 else None
        default_head = self.default_head
        if default_head is None:
            return None
        content = [STATUS_LINE[status], default_head]
        if _checked(headers, content) != length:
            return None
        if not cycle.keep_alive:
            content.append(b"connection: close\r\n")
        content.append(b"\r\n")
        return b"".join(content)

    def _send(self, cycle: Any, messages: Now) -> None:
        """Both messages through the cycle's own ``send``, each stepped to its end at once
        (it awaits only while writes are paused, which they are not here)."""
        for message in messages:
            step = cycle.send(message)
            try:
                step.send(None)
            except StopIteration:
                continue
            except Exception as exc:  # uvicorn refused it (a header): as its ``run_asgi``
                self.logger.error("Exception in ASGI application\n", exc_info=exc)
                self.transport.close()
                return
            step.close()  # it waited, which its writes not paused cannot: nothing more sent
            self.logger.error("ormock's direct path found the connection's writes paused")
            self.transport.close()
            return


def _checked(headers: list[tuple[bytes, bytes]], content: list[bytes]) -> int | None:
    """``headers`` added to ``content`` as uvicorn's ``send`` writes them, checked as it checks
    them: the ``content-length`` they declare (-1: none); None when one needs more of ``send``
    than writing it (a name or value it refuses, a second or unreadable length, a
    ``connection`` or ``transfer-encoding`` header)."""
    declared = -1
    for name, value in headers:
        if HEADER_RE.search(name) or HEADER_VALUE_RE.search(value):
            return None
        name = name.lower()
        if name == b"content-length":
            if declared != -1 or not value.isdigit():
                return None
            declared = int(value)
        elif name == b"connection" or name == b"transfer-encoding":
            return None
        content.extend((name, b": ", value, b"\r\n"))
    return declared
