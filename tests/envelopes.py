"""The error envelope a test expects: checked against the official schema, its ``error``."""

from __future__ import annotations

from typing import Any

import httpx

from ormock.protocol.schema import validate_error


def error_of(response: httpx.Response, status: int) -> dict[str, Any]:
    """The ``error`` of ``response``, which must have ``status`` and a valid envelope."""
    assert response.status_code == status, response.text
    envelope = response.json()
    assert validate_error(envelope) is None, validate_error(envelope)
    error: dict[str, Any] = envelope["error"]
    return error
