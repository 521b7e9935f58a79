"""Isolation: 50 generated tests, each with its own scenario (all named alike, each answering its
own text), each asserting on its own journal and answers; in a shuffled order in one process,
and spread over 4 xdist workers."""

from __future__ import annotations

import random

import hypothesis.statistics  # noqa: F401  (kept across pytester's in-process runs)
import openai  # noqa: F401
import pytest

pytest_plugins = ["pytester"]

COUNT = 50

HEADER = '''
import pytest


def scenario(n):
    """Every test's scenario has the same name; only its own namespace may answer with it."""
    return {"name": "same", "steps": [
        {"match": {"input_contains": f"question {n}"},
         "reply": {"items": [{"message": f"answer {n}"}]}},
        {"match": {"previous_response_id": "step:1"},
         "reply": {"items": [{"message": f"follow-up {n}"}]}},
    ]}


def check(ormock, n):
    client = ormock.openai()
    first = client.responses.create(model="m", input=f"question {n}")
    assert first.output_text == f"answer {n}"
    second = client.responses.create(model="m", input="and then?", previous_response_id=first.id)
    assert second.output_text == f"follow-up {n}"
    requests = ormock.requests
    assert [r.json["input"] for r in requests] == [f"question {n}", "and then?"]
    assert [(r.scenario, r.step, r.status) for r in requests] == [("same", 1, 200),
                                                                 ("same", 2, 200)]
    assert [r.response_id for r in requests] == [first.id, second.id]
    assert all(r.path == f"/{ormock.namespace}/v1/responses" for r in requests)
    ormock.assert_called(times=2)
    ormock.assert_called_with(previous_response_id=first.id)
'''

MARKED = '''

@pytest.mark.ormock(scenario=scenario({n}))
def test_{n:02d}(ormock):
    check(ormock, {n})
'''

USED = '''

def test_{n:02d}(ormock):
    ormock.use(scenario({n}))
    check(ormock, {n})
'''


def _suite(seed: int) -> str:
    """The 50 tests, half configured by the marker and half by ``use()``, in a shuffled order."""
    order = list(range(COUNT))
    random.Random(seed).shuffle(order)
    return HEADER + "".join((MARKED if n % 2 else USED).format(n=n) for n in order)


def test_fifty_tests_in_a_shuffled_order_see_only_their_own_fake(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_generated=_suite(seed=20260115))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=COUNT)


def test_fifty_tests_over_four_xdist_workers_see_only_their_own_fake(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_generated=_suite(seed=7))
    # --assert=plain and no unrelated plugins: five fresh processes start here, and with
    # PYTHONDONTWRITEBYTECODE each would otherwise assertion-rewrite faker and ormock again
    result = pytester.runpytest_subprocess(
        "-n", "4", "-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
        "-p", "no:anyio", "-p", "no:faker", "--assert=plain",
    )
    result.assert_outcomes(passed=COUNT)
    result.stdout.fnmatch_lines(["*4 workers*"])
