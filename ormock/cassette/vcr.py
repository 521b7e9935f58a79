"""vcrpy and pytest-recording cassettes of Responses traffic, read and written as they are.

vcrpy keeps each exchange as ``request: {method, uri, body, headers}`` and ``response: {status:
{code, message}, headers, body: {string}}``, under ``version: 1`` and ``interactions:``; an
ormock cassette has ``request: {method, path}`` instead (``is_vcr_document`` tells them apart by
that shape). Both directions go through vcrpy's own persister and serializers (YAML, or JSON for
a ``.json`` file) and its ``Request`` objects, never a copy of its format.

``from_vcr``: the URL becomes path and query, a JSON request body its document, and the answer's
body string either SSE messages (``text/event-stream``: split back into events) or a body. A
body vcrpy kept compressed (recorded without ``decode_compressed_response``) is decoded as
vcrpy's ``decode_response`` would (gzip and deflate always, ``br`` only with the ``brotli``
package installed, otherwise the load fails saying so; a body that does not decode is kept as
it is), but bounded: past ``MAX_INFLATED`` the load is refused at the body's line. vcrpy keeps
no timing: every offset is 0 and the cassette's ``origin`` is ``"vcr"``, so a replay writes it
unpaced. The result goes through the same ``checked`` as an ormock cassette.

``to_vcr``: each HTTP interaction as a vcrpy ``Request`` and response, the body string being the
answer's exact bytes. vcrpy cannot hold a WebSocket session, nor an answer that broke off (it
replays every body whole): those are skipped or written whole, with a warning returned for each.
"""

from __future__ import annotations

import http
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ormock.cassette import framing
from ormock.cassette.encoding import InflateError, TooLarge, UnknownEncoding, inflate
from ormock.cassette.fileformat import CassetteError, response_bytes
from ormock.cassette.model import (
    Cassette,
    Headers,
    Interaction,
    RecordedRequest,
    RecordedResponse,
)
from ormock.cassette.recording import HOP_BY_HOP
from ormock.cassette.redact import Redaction, SecretFound, scan, scan_headers
from ormock.cassette.validation import checked, error_at
from ormock.protocol.sse import encode_json
from ormock.scenario.source import Lines, lines_of, path_text
from ormock.scenario.source import Path as KeyPath

__all__ = ["DEFAULT_BASE_URL", "from_vcr", "is_vcr_document", "serializer_from", "to_vcr",
           "vcr_dict"]

# where an exported request goes when the cassette names no upstream
DEFAULT_BASE_URL = "https://api.openai.com"

# request headers of one connection (and its body's length), not of the request: left out both
# ways, since an exported request may go to another host and its body is written anew
_CONNECTION = HOP_BY_HOP | {"host"}

VCR_SHAPE = ("`version: 1` and `interactions:`, each a `request:` with `method`, `uri`, `body`, "
             "`headers` and a `response:` with `status: {code, message}`, `headers` and "
             "`body: {string}`")


def _is_vcr_response(response: Any) -> bool:
    return (isinstance(response, Mapping) and isinstance(response.get("status"), Mapping)
            and "code" in response["status"]
            and isinstance(response.get("body"), Mapping) and "string" in response["body"]
            and "headers" in response)


def _is_vcr_interaction(item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    request = item.get("request")
    return (isinstance(request, Mapping) and {"method", "uri", "body", "headers"} <= request.keys()
            and _is_vcr_response(item.get("response")))


def is_vcr_document(data: Any) -> bool:
    """Whether parsed data has the shape of a vcrpy cassette (an empty one included)."""
    return (isinstance(data, Mapping) and data.get("version") == 1
            and isinstance(data.get("interactions"), list)
            and all(_is_vcr_interaction(item) for item in data["interactions"]))


def serializer_from(spec: str) -> Any:
    """A project's vcrpy serializer named ``MODULE:NAME`` (or a module that is one): an
    object with ``serialize`` and ``deserialize``. ``ValueError`` says what is wrong."""
    import importlib

    module_name, _, name = spec.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"the serializer {spec!r} does not import: {error}") from None
    for part in filter(None, name.split(".")):
        found = getattr(found, part, None)
        if found is None:
            raise ValueError(f"the serializer {spec!r}: {module_name} has no {name!r}")
    if not (callable(getattr(found, "deserialize", None))
            and callable(getattr(found, "serialize", None))):
        raise ValueError(f"the serializer {spec!r} has no serialize and deserialize: give "
                         "MODULE:NAME of the object a project registers with vcrpy")
    return found


def _serializer(path: str | Path) -> Any:
    from vcr.serializers import jsonserializer, yamlserializer

    return jsonserializer if Path(path).suffix.lower() == ".json" else yamlserializer


def _as_bytes(body: Any) -> bytes:
    """A vcrpy body (bytes, text, a rebuilt file or iterator, or None) as bytes."""
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    if hasattr(body, "read"):
        return _as_bytes(body.read())
    return b"".join(_as_bytes(part) for part in body)


def _headers(pairs: Mapping[str, Any], drop: frozenset[str] = frozenset()) -> Headers:
    """vcrpy's headers (a value or a list of values per name) as a cassette keeps them."""
    out: Headers = {}
    for raw_name, value in pairs.items():
        name = str(raw_name).lower()
        if name in drop:
            continue
        values = [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]
        if name in out:
            before = out[name]
            values = [*(before if isinstance(before, list) else [before]), *values]
        out[name] = values[0] if len(values) == 1 else values
    return out


def _body(body: Any, number: int, lines: Lines, where: KeyPath) -> bytes:
    """``_as_bytes``, or a ``CassetteError`` at ``where`` for a body of something else (a
    number, or an iterator of numbers, which vcrpy's safe loader builds as it is written)."""
    try:
        return _as_bytes(body)
    except TypeError:
        raise error_at(lines, f"interaction {number}: the body is not text or bytes; write it "
                       "as a string, as vcrpy records it", where) from None


def _request(request: Any, number: int, lines: Lines) -> RecordedRequest:
    where: KeyPath = ("interactions", number - 1, "request")
    parts = urlsplit(request.uri)  # vcrpy's Request parsed it already
    raw = _body(request.body, number, lines, (*where, "body"))
    body: Any = None
    text: str | None = None
    if raw:
        decoded = raw.decode("utf-8", "replace")
        try:
            document = json.loads(decoded)
        except ValueError:
            document = None
        if isinstance(document, dict):
            body = document
        else:
            text = decoded
    origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None
    return RecordedRequest(method=str(request.method).upper(), path=parts.path or "/",
                           query=parts.query, headers=_headers(request.headers, _CONNECTION),
                           body=body, text=text, origin=origin)


def _first(headers: Headers, name: str) -> str:
    value = headers.get(name, "")
    return (value[0] if value else "") if isinstance(value, list) else value


def _decoded(raw: bytes, encoding: str, number: int, lines: Lines, where: KeyPath) -> bytes:
    """A compressed body decoded as vcrpy's ``decode_response`` does it, with a bound."""
    try:
        return inflate(raw, encoding)
    except UnknownEncoding:
        hint = " (install the brotli package, which vcrpy decodes it with)" \
            if encoding == "br" else ""
        raise CassetteError(
            f"interaction {number}: the body is {encoding}-compressed and cannot be decoded"
            f"{hint}; or record with vcrpy's decode_compressed_response=True",
            file=lines.file, line=lines.line((*where, "headers")),
            key=path_text((*where, "headers"))) from None
    except TooLarge as error:
        raise error_at(lines, f"interaction {number}: {error}; a Responses answer is never "
                       "that large", (*where, "body", "string")) from None
    except InflateError:  # vcrpy too takes a body that does not decode as decoded already
        return raw


def _response(response: Any, number: int, lines: Lines) -> RecordedResponse:
    if not _is_vcr_response(response):
        raise CassetteError(f"interaction {number}: the response is not vcrpy's shape; "
                            f"expected {VCR_SHAPE}", file=lines.file)
    where: KeyPath = ("interactions", number - 1, "response")
    code = response["status"]["code"]
    if isinstance(code, bool) or not str(code).strip().isdigit():
        raise error_at(lines, f"interaction {number}: the status code {code!r} is not a "
                       "number; write the HTTP status, such as 200", (*where, "status", "code"))
    headers = _headers(response["headers"] or {})
    raw = _body(response["body"]["string"], number, lines, (*where, "body", "string"))
    encoding = _first(headers, "content-encoding").strip().lower()
    if encoding not in ("", "identity"):
        raw = _decoded(raw, encoding, number, lines, where)
    headers = {name: value for name, value in headers.items() if name not in HOP_BY_HOP}
    status = int(str(code).strip())
    if _first(headers, "content-type").split(";")[0].strip().lower() == "text/event-stream":
        spans = framing.split_messages(raw)
        messages, style = framing.to_messages(spans, [0.0] * len(spans))
        return RecordedResponse(status=status, headers=headers, messages=tuple(messages),
                                style=style)
    return RecordedResponse(status=status, headers=headers, body=framing.to_body(raw))


def from_vcr(path: str | Path, serializer: Any = None, persister: Any = None) -> Cassette:
    """A vcrpy / pytest-recording cassette file (YAML, or JSON for ``.json``; ``serializer``:
    a project's own vcrpy serializer, a module or object with ``deserialize``; ``persister``:
    a project's own vcrpy persister, which reads the file, vcrpy's by default) as a
    ``Cassette`` with ``origin="vcr"``: no timing, every offset 0."""
    import yaml
    from vcr.persisters.filesystem import FilesystemPersister

    file = str(path)
    persister = persister or FilesystemPersister
    try:
        loaded = persister.load_cassette(path, serializer=serializer or _serializer(path))
    except FileNotFoundError:  # vcrpy's CassetteNotFoundError: missing, or empty
        reason = "it is empty" if Path(path).is_file() else "no such file"
        raise CassetteError(f"cannot read the vcrpy cassette ({reason})", file=file) from None
    except (ValueError, yaml.YAMLError) as error:  # a decode error, bad YAML or JSON
        raise CassetteError(f"cannot read the vcrpy cassette: {error}", file=file) from None
    except (KeyError, TypeError, AttributeError):
        hint = (f" (read with the serializer {serializer!r})" if serializer else
                "; written by a project's own vcrpy serializer? read it with that serializer "
                "(--vcr-serializer MODULE:NAME, or vcr_config's serializer in pytest)")
        raise CassetteError(f"not a vcrpy cassette: expected {VCR_SHAPE}{hint}",
                            file=file) from None
    except OSError as error:
        raise CassetteError(f"cannot read the vcrpy cassette ({error.strerror})",
                            file=file) from None
    requests, responses = loaded[0], loaded[1]
    # line numbers where the file is vcrpy's own YAML (a project's persister or serializer may
    # keep it otherwise: compressed, say)
    plain_yaml = not file.lower().endswith(".json") and serializer is None \
        and persister is FilesystemPersister
    lines = lines_of(Path(path).read_text("utf-8", "replace"), file) if plain_yaml \
        else Lines(file)
    interactions = tuple(
        Interaction(_request(request, number, lines), _response(response, number, lines),
                    line=lines.line(("interactions", number - 1)))
        for number, (request, response) in enumerate(zip(requests, responses, strict=True), 1))
    upstream = None
    if requests:
        first = urlsplit(requests[0].uri)
        upstream = f"{first.scheme}://{first.netloc}" if first.scheme and first.netloc else None
    return checked(Cassette(interactions, profile="openai", upstream=upstream, file=file,
                            origin="vcr"), lines)


def _origin(base_url: str) -> str:
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"the base URL {base_url!r} is not an http(s) URL")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"the base URL {base_url!r} has a path: give a base URL of scheme and "
                         "host only (--base-url; each request keeps its own path)")
    return f"{parts.scheme}://{parts.netloc}"


def _request_body(request: RecordedRequest) -> bytes | None:
    if request.body is not None:
        return encode_json(request.body).encode("utf-8")
    if request.text is not None:
        return request.text.encode("utf-8")
    return None


def _vcr_headers(headers: Headers) -> dict[str, list[str]]:
    return {name: list(value) if isinstance(value, list) else [value]
            for name, value in headers.items()}


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def vcr_dict(cassette: Cassette, base_url: str | None = None) -> tuple[dict[str, Any],
                                                                          list[str]]:
    """The ``{"requests": [...], "responses": [...]}`` vcrpy's persister saves, and a warning
    for each part vcrpy cannot hold."""
    from vcr.request import Request

    origin = _origin(base_url or cassette.upstream or DEFAULT_BASE_URL)
    requests: list[Any] = []
    responses: list[dict[str, Any]] = []
    warnings: list[str] = []
    for number, interaction in enumerate(cassette.interactions, 1):
        recorded = interaction.request
        response = interaction.response
        if response is None:
            warnings.append(f"interaction {number} ({recorded.method} {recorded.target}) is a "
                            "WebSocket session, which a vcrpy cassette cannot hold: skipped")
            continue
        if response.ended != "whole":
            warnings.append(f"interaction {number} ({recorded.method} {recorded.target}): the "
                            f"answer was {response.ended} mid-body; vcrpy replays the bytes "
                            "that came as a whole body")
        requests.append(Request(recorded.method, origin + recorded.target,
                                _request_body(recorded),
                                {name: value for name, value in recorded.headers.items()
                                 if name not in _CONNECTION}))
        responses.append({
            "status": {"code": response.status, "message": _phrase(response.status)},
            "headers": _vcr_headers(response.headers),
            "body": {"string": response_bytes(response)},
        })
    return {"requests": requests, "responses": responses}, warnings


def to_vcr(cassette: Cassette, path: str | Path, base_url: str | None = None,
           redaction: Redaction | None = None) -> list[str]:
    """Write ``cassette`` as a vcrpy cassette (YAML, or JSON for ``.json``) through vcrpy's
    persister; returns the warnings (what vcrpy cannot hold). Requests go to ``base_url``
    (scheme and host; default: the cassette's upstream, else ``DEFAULT_BASE_URL``). The secret
    headers are redacted and the text scanned first, as for an ormock cassette
    (``SecretFound``: nothing written)."""
    from vcr.persisters.filesystem import FilesystemPersister
    from vcr.serialize import serialize

    redacted = (redaction or Redaction()).cassette(cassette)
    data, warnings = vcr_dict(redacted, base_url)
    serializer = _serializer(path)
    try:
        text = serialize(data, serializer)
    except TypeError as error:  # a binary body in a JSON cassette
        raise ValueError(f"{path}: {error}") from None
    leaks = scan_headers(redacted) + scan(text)
    if leaks:
        raise SecretFound(str(path), leaks)
    FilesystemPersister.save_cassette(path, data, serializer)
    return warnings
