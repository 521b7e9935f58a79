"""The garbage collector of a process that only serves (``ormock serve``, and each of its
workers): its youngest generation collected after ``YOUNG`` net allocations of containers
rather than Python's 700.

A request allocates a few hundred containers, most freed by reference counting within the
request; at 700 the collector ran every few requests, each time walking the requests in flight
and the responses just stored, and promoting them to be walked again by the older
generations. At 20,000 that collection all but disappears from a request's CPU (measured
under wrk with new JSON requests: ``bench/README.md``, "Past findings that explain the
design"). The older generations keep Python's thresholds. Only a process ormock owns is
tuned: an ``OrmockServer`` inside a test suite's process leaves that process's collector as it
is.
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG", "tune_for_serving"]

YOUNG = 20_000


def tune_for_serving() -> None:
    """Collect the youngest generation after ``YOUNG`` allocations (the older ones' counts
    kept)."""
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG, middle, oldest)
