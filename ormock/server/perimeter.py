"""The perimeter of every server ormock runs (``ormock serve``, ``ormock record``, the inspector
behind both): which requests a web page may make it answer. A browser sends any page's requests
to a loopback port, so each request is refused (403 ``permission_denied``, ``param`` naming the
header, before any route sees it) when

- its ``Host`` is a name this machine does not answer to: neither a loopback name (``localhost``,
  ``*.localhost``), nor an IP address, nor a name of one label (a container's, this network's,
  Starlette's ``testserver``: no public domain), nor an ``--allowed-host`` (a DNS-rebinding
  page reaches loopback under a domain of its own, and could read the answers);
- its ``Origin`` is a page of another machine: not a loopback name or address, not an
  ``--allowed-host``, not the ``Host`` it was sent to (``null`` included: a sandboxed page);
- it has no ``Origin`` but ``Sec-Fetch-Site: cross-site``: another site's image, script or link.

A test, a script, curl or an SDK sends none of these, so none is refused. Under ``/_ormock/``
(the admin API, the inspector) the admin guard's stricter rules answer instead
(``ormock.server.guard``: loopback clients, the server's own origin, no cross-site request).
No message repeats what the request said.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from ormock.protocol.errors import OpenResponsesError
from ormock.server.asgi import App, Receive, Scope, Send

__all__ = ["Perimeter", "address", "authority", "cross_site", "forbidden", "is_admin_path",
           "is_loopback", "is_loopback_name"]


def address(text: str) -> str:
    """One spelling of an address: an IPv4-mapped IPv6 one (``::ffff:127.0.0.1``, a dual-stack
    server's IPv4 client) as its IPv4, IPv6 compressed, a name in lower case."""
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return text.lower()
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(address(text))
    except ValueError:
        return None


def is_loopback(text: str) -> bool:
    """A loopback address (127.0.0.0/8, ``::1``, an IPv4-mapped one)."""
    ip = _ip(text)
    return ip is not None and ip.is_loopback


def is_loopback_name(host: str) -> bool:
    """A loopback address, ``localhost`` or a name under ``.localhost`` (RFC 6761: never
    resolved elsewhere)."""
    host = host.lower().rstrip(".")
    return host == "localhost" or host.endswith(".localhost") or is_loopback(host)


def authority(text: str) -> tuple[str, int] | None:
    """``host[:port]`` (as in a Host header or an origin) as (host, port), or None."""
    host, port = text, ""
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or rest[:1] not in ("", ":"):
            return None
        port = rest[1:]
    elif ":" in text:
        host, port = text.rsplit(":", 1)
    if not host or (port and not port.isdigit()) or len(port) > 5:
        return None
    return address(host), int(port) if port else 80


def is_admin_path(path: str) -> bool:
    """``/_ormock/...`` or ``/<namespace>/_ormock/...``: the admin guard's."""
    parts = path.split("/", 3)
    return (len(parts) > 1 and parts[1] == "_ormock") or (len(parts) > 2 and parts[2] == "_ormock")


def cross_site(origin: str | None, fetch_site: str | None) -> bool:
    """A request another web site made that carries no ``Origin`` to tell which (an image, a
    script, a link of that site): ``Sec-Fetch-Site: cross-site``."""
    return origin is None and fetch_site is not None and fetch_site.strip().lower() == "cross-site"


_PASSED = 256  # header combinations remembered as let in


def forbidden(message: str, param: str | None, code: str) -> OpenResponsesError:
    """The 403 of a request refused for where it came from (``param``: the header that
    says so), as the perimeter and the admin guard answer it."""
    return OpenResponsesError(message, type="permission_denied", code=code, param=param,
                              status=403)


class Perimeter:
    """Pure ASGI middleware, in front of every route (behind the front's request id and header
    cap, ``ormock.server.front``, which runs ``refusal`` itself for a create): HTTP and
    WebSocket requests that a foreign web page made are refused before ``app`` sees them
    (``refusal`` says why). ``allowed_hosts``: the names (``--allowed-host``) this server
    answers to besides loopback names and addresses."""

    def __init__(self, app: App, allowed_hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.hosts = frozenset(address(host.strip().rstrip(".")) for host in allowed_hosts)
        # the (Host, Origin, Sec-Fetch-Site) headers already let in, as sent: the same few come
        # with every request, judged once; at most ``_PASSED`` kept, refusals never
        self._passed: set[tuple[bytes | None, bytes | None, bytes | None]] = set()

    def named(self, host: str) -> bool:
        """A host this server answers to: a loopback name, an address, a name of one label
        (no public domain, which a rebinding page needs), an allowed name."""
        host = host.rstrip(".")
        return (_ip(host) is not None or "." not in host or is_loopback_name(host)
                or host in self.hosts)

    def refusal(self, scope: Scope) -> OpenResponsesError | None:
        """Why a foreign page's request must not be answered, or None (always for a request
        under ``/_ormock/``: the admin guard's rules answer it)."""
        host = origin = fetch_site = None
        for name, value in scope["headers"]:
            if name == b"host":
                if host is None:
                    host = value
            elif name == b"origin":
                if origin is None:
                    origin = value
            elif name == b"sec-fetch-site":
                fetch_site = value
        sent = (host, origin, fetch_site)
        if sent in self._passed:
            return None
        refused = self._judged(*(None if v is None else v.decode("latin-1") for v in sent))
        if refused is None:
            if len(self._passed) < _PASSED:
                self._passed.add(sent)
        elif is_admin_path(scope["path"]):
            return None
        return refused

    def _judged(self, host: str | None, origin: str | None, fetch_site: str | None
                ) -> OpenResponsesError | None:
        own = authority(host) if host is not None else None
        if host is not None and (own is None or not self.named(own[0])):
            return forbidden(
                "This server answers only requests addressed to a loopback name (localhost, "
                "127.0.0.1, [::1]), an IP address, a name of one label or an --allowed-host "
                "name (a page that reached it through DNS could read its answers); send the "
                "request to one of those, or start the server with --allowed-host NAME.", "host",
                "host_not_allowed")
        if origin is not None and not self._local_origin(origin, own):
            return forbidden(
                "This server does not answer web pages of other machines' origins; send the "
                "request without an Origin header (from a test, a script, curl), from a page "
                "on localhost, or start the server with --allowed-host NAME.", "origin",
                "origin_not_allowed")
        if cross_site(origin, fetch_site):
            return forbidden(
                "This server does not answer requests another web site made (Sec-Fetch-Site: "
                "cross-site); send the request from a test, a script or curl.",
                "sec-fetch-site", "cross_site_request")
        return None

    def _local_origin(self, origin: str, own: tuple[str, int] | None) -> bool:
        """A page of this machine: http(s), a loopback name or address, an allowed name, or
        the host the request was sent to."""
        scheme, _, rest = origin.strip().partition("://")
        theirs = authority(rest) if scheme.lower() in ("http", "https") else None
        if theirs is None:
            return False
        host = theirs[0]
        return (is_loopback_name(host) or host in self.hosts
                or (own is not None and host == own[0]))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = self.refusal(scope) if scope["type"] in ("http", "websocket") else None
        if refused is None:
            await self.app(scope, receive, send)
            return
        await self.refuse(scope, receive, send, refused)

    @staticmethod
    async def refuse(scope: Scope, receive: Receive, send: Send,
                     refused: OpenResponsesError) -> None:
        """Answer a request ``refusal`` refused: its 403 envelope (HTTP), a handshake refused
        (WebSocket)."""
        if scope["type"] == "websocket":
            await receive()  # websocket.connect; a close before accept refuses the handshake
            await send({"type": "websocket.close", "code": 1008,
                        "reason": f"{refused.param} not allowed"})
            return
        body = refused.body()
        await send({"type": "http.response.start", "status": refused.status, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body, "more_body": False})
