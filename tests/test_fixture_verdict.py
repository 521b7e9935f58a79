"""The pytest fixture's verdict helpers, used as a user would: on the ``ormock`` fixture."""

from __future__ import annotations

from typing import Any

import openai
import pytest


def test_a_client_that_retries_is_resilient(ormock: Any) -> None:
    ormock.use("rate-limited-once")
    client = ormock.openai(max_retries=2)
    assert client.responses.create(model="m", input="hi").status == "completed"
    assert ormock.call_count == 2
    verdict = ormock.assert_resilient()
    assert verdict.ok


# the step's answer never went out (the 429 attempt left it to a retry that never came): the
# after-test check would say so too
@pytest.mark.ormock(assert_all_used=False)
def test_a_client_that_gives_up_is_told_how(ormock: Any) -> None:
    ormock.use("rate-limited-once")
    with pytest.raises(openai.RateLimitError):
        ormock.openai(max_retries=0).responses.create(model="m", input="hi")
    assert ormock.verdict().codes == ["gave-up-too-early"]
    with pytest.raises(AssertionError, match="gave-up-too-early") as failure:
        ormock.assert_resilient()
    assert "allow=" in str(failure.value)
    ormock.assert_resilient(allow=("gave-up-too-early",))
