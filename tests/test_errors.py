"""``ormock.protocol.errors``: the error envelope and the status each error type goes with."""

from __future__ import annotations

import pytest

from ormock.protocol.errors import ERROR_STATUS, OpenResponsesError, invalid


def test_the_envelope_has_four_fields() -> None:
    error = OpenResponsesError("Say what to change.", code="invalid_value", param="input")
    assert error.envelope() == {"error": {"message": "Say what to change.",
                                          "type": "invalid_request", "param": "input",
                                          "code": "invalid_value"}}
    assert str(error) == "Say what to change." and error.headers == {}


@pytest.mark.parametrize(("type_", "status"), sorted(ERROR_STATUS.items()))
def test_each_type_has_its_status(type_: str, status: int) -> None:
    error = OpenResponsesError("x", type=type_)
    assert error.status == status
    assert error.code == type_  # with no code, the type is the code: always a string


def test_status_and_headers_may_be_given() -> None:
    error = OpenResponsesError("slow down", type="too_many_requests", status=503,
                               headers={"retry-after": "1"})
    assert (error.status, error.headers) == (503, {"retry-after": "1"})
    assert OpenResponsesError("x", type="unheard_of").status == 400


def test_invalid_is_a_400_invalid_request() -> None:
    error = invalid("'x' must be a string.", "x", "invalid_type")
    assert (error.type, error.status, error.code, error.param) == (
        "invalid_request", 400, "invalid_type", "x")
    assert invalid("m", None).code == "invalid_value"
