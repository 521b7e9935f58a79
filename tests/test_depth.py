"""``ormock.protocol.depth``: one bound on how deeply JSON may nest, for every reader that keeps
JSON as JSON and anything else as text (so a recorded body and the same body replayed are read
alike), and for the request decoder."""

from __future__ import annotations

import pytest

from ormock.cassette.matching import request_body
from ormock.protocol.depth import MAX_DEPTH, loads, nests_deeper
from ormock.protocol.errors import OpenResponsesError
from ormock.server.body import decode_json


def _nested(levels: int) -> bytes:
    return b'{"input": ' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"


def test_json_within_the_bound_reads_as_json_and_past_it_as_text_everywhere() -> None:
    within, past, unreadable = _nested(MAX_DEPTH), _nested(MAX_DEPTH + 1), _nested(5000)
    assert not nests_deeper(within, loads(within))
    assert isinstance(request_body(within), dict) and isinstance(decode_json(within), dict)
    for body in (past, unreadable):
        with pytest.raises(ValueError, match="nested"):
            loads(body)
        assert request_body(body) == body.decode()  # compared as text, as recorded
        with pytest.raises(OpenResponsesError, match=f"at most {MAX_DEPTH} levels"):
            decode_json(body)


def test_many_brackets_side_by_side_are_not_depth() -> None:
    wide = b"[" + b",".join([b"[]"] * 10_000) + b"]"  # 10,001 brackets, 2 levels
    assert loads(wide) == [[]] * 10_000
    assert not nests_deeper(wide, loads(wide))


def test_the_deepest_body_that_fits_in_max_depth_bytes_is_read() -> None:
    """A body of ``MAX_DEPTH`` bytes or fewer cannot hold ``MAX_DEPTH`` + 1 levels, so its
    length alone passes it; one byte more of brackets is refused (the same bound either way)."""
    short = b"[" * (MAX_DEPTH // 2) + b"]" * (MAX_DEPTH // 2)
    assert len(short) == MAX_DEPTH and isinstance(decode_json(short), list)
    past = b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)
    with pytest.raises(OpenResponsesError, match=f"at most {MAX_DEPTH} levels"):
        decode_json(past)
    assert not nests_deeper(short, decode_json(short))
