"""The guard of everything under ``/_ormock/`` (the admin API, the inspector page): who may
ask, and from where. A request is refused (403 ``admin_forbidden``, ``param`` naming the header)
unless its client is on loopback (an IPv4-mapped one too) or an ``--admin-host``; its ``Host``
is a loopback name, an ``--admin-host`` or the server's own address and port (no DNS
rebinding); an ``Origin``, if any, is the server's own; and a change (any method but GET and
HEAD) has a JSON or YAML ``Content-Type`` or, without a body, ``X-Ormock-Admin: 1`` (no
cross-site form or ``text/plain`` request). These come on top of the perimeter of every route
(``ormock.server.perimeter``).
"""

from __future__ import annotations

from starlette.requests import Request

from ormock.protocol.errors import OpenResponsesError
from ormock.server.perimeter import address, authority, cross_site, forbidden, is_loopback

__all__ = ["refusal"]

_BODY_TYPES = frozenset({"application/json", "application/yaml", "application/x-yaml",
                         "text/yaml"})
_READS = frozenset({"GET", "HEAD"})


def _forbidden(message: str, param: str | None = None) -> OpenResponsesError:
    return forbidden(message, param, "admin_forbidden")


def _allowed(request: Request, hosts: frozenset[str]) -> bool:
    host = address(request.client.host if request.client else "")
    return host in hosts or is_loopback(host)


def _own_host(text: str, request: Request, hosts: frozenset[str]) -> bool:
    """A name this server answers to: loopback (any port), an --admin-host address, or the
    address and port the request came in on."""
    found = authority(text)
    if found is None:
        return False
    host, port = found
    if host == "localhost" or is_loopback(host) or host in hosts:
        return True
    server = request.scope.get("server")
    return server is not None and (host, port) == (address(str(server[0])), server[1])


def _own_origin(origin: str, host: str | None, request: Request, hosts: frozenset[str]) -> bool:
    """The server's own origin: http://, a name it answers to, the port of the Host header."""
    scheme, _, rest = origin.partition("://")
    theirs, own = authority(rest), authority(host or "")
    return (scheme == "http" and theirs is not None and own is not None
            and theirs[1] == own[1] and _own_host(rest, request, hosts))


def refusal(request: Request, hosts: frozenset[str]) -> OpenResponsesError | None:
    """Why the admin API (or any page under ``/_ormock/``) must not answer this request, or
    None: a client off loopback; a foreign Host (DNS rebinding); a web page of another origin;
    a body a browser could send cross-site without asking (a form, ``text/plain``)."""
    if not _allowed(request, hosts):
        return _forbidden("The admin API answers only clients on loopback; start the server "
                          "with --admin-host ADDRESS to allow another.")
    host = request.headers.get("host")
    if host is not None and not _own_host(host, request, hosts):
        return _forbidden("The admin API answers only requests addressed to this server by "
                          "its own address or a loopback name (localhost, 127.0.0.1, [::1]); "
                          "send the request to one of those.", "host")
    origin = request.headers.get("origin")
    if origin is not None and not _own_origin(origin, host, request, hosts):
        return _forbidden("The admin API does not answer web pages of other origins; send the "
                          "request without an Origin header (from a test, a script, curl).",
                          "origin")
    if cross_site(origin, request.headers.get("sec-fetch-site")):
        return _forbidden("The admin API does not answer requests another web site made "
                          "(Sec-Fetch-Site: cross-site); send the request from a test, a "
                          "script or curl.", "sec-fetch-site")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if (request.method not in _READS and kind not in _BODY_TYPES
            and request.headers.get("x-ormock-admin") != "1"):
        return _forbidden("The admin API takes changes only with Content-Type: "
                          "application/json or application/yaml (also application/x-yaml, "
                          "text/yaml), or, without a body, the header 'X-Ormock-Admin: 1'.",
                          "content-type")
    return None
