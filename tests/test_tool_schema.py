"""``ormock.protocol.tool_schema.check_parameters``: a function tool's parameters are a JSON
Schema, or a 400 naming where they are broken."""

from __future__ import annotations

from typing import Any

import pytest

from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.tool_schema import check_parameters


@pytest.mark.parametrize("schema", [
    {},
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x" * 100}
                                      for i in range(300)}},  # large: checked, not cached
])
def test_valid_schemas_pass(schema: dict[str, Any]) -> None:
    check_parameters(schema, "tools[0].parameters")


@pytest.mark.parametrize(("schema", "param", "says"), [
    ({"type": "objekt"}, "tools[0].parameters.type", "'objekt' is not valid under any"),
    ({"type": "object", "properties": {"city": {"type": 3}}},
     "tools[0].parameters.properties.city.type", "3 is not valid under any"),
    ({"required": "city"}, "tools[0].parameters.required", "'city' is not of type 'array'"),
    ({"x": {1, 2}}, "tools[0].parameters", "it cannot be read"),  # not JSON: a set
])
def test_invalid_schemas_name_where(schema: dict[str, Any], param: str, says: str) -> None:
    with pytest.raises(OpenResponsesError) as raised:
        check_parameters(schema, "tools[0].parameters")
    error = raised.value
    assert (error.status, error.code, error.param) == (400, "invalid_function_parameters", param)
    assert error.message.startswith("'tools[0].parameters' is not a valid JSON Schema: at ")
    assert says in error.message and error.message.endswith("(draft 2020-12).")
