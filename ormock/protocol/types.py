"""The type every module means by a JSON object: one definition, imported everywhere."""

from __future__ import annotations

from typing import Any

__all__ = ["Json"]

Json = dict[str, Any]  # a decoded JSON object: a request body, an event, an item
