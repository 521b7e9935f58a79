"""A function tool's ``parameters`` must be a JSON Schema: checked against the metaschema when
the request is read, so that a broken schema is a 400 naming where it is broken, not a failure
later when ormock generates arguments from it. Results are kept for repeated tool lists."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from ormock.protocol.errors import OpenResponsesError, invalid

__all__ = ["check_parameters"]

_CACHED = 16 * 1024  # schemas up to this size (encoded) keep their result


def _where(path: Any) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


@lru_cache(maxsize=512)
def _problem(encoded: str) -> tuple[str, str] | None:
    """(where, what) of the first metaschema violation of a schema, or None."""
    try:
        Draft202012Validator.check_schema(json.loads(encoded))
    except SchemaError as error:
        return _where(error.path), error.message[:300]
    except RecursionError:
        return "", "it nests too deeply to check"
    return None


def check_parameters(schema: dict[str, Any], param: str) -> None:
    """Raise a 400 ``invalid_function_parameters`` when ``schema`` is not a valid JSON Schema."""
    try:
        encoded = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        encoded = ""
    if not encoded:
        problem: tuple[str, str] | None = ("", "it cannot be read")
    elif len(encoded) > _CACHED:
        problem = _problem.__wrapped__(encoded)  # a large schema is checked, but not kept
    else:
        problem = _problem(encoded)
    if problem is None:
        return
    where, what = problem
    error: OpenResponsesError = invalid(
        f"'{param}' is not a valid JSON Schema: at '{param}{where}', {what}. Fix the tool's "
        "parameters schema (draft 2020-12).", param + where, "invalid_function_parameters")
    raise error
