"""What the inspector's feed costs an answer: ``Feed.sent`` (keep what a writer sent, the
newest 500, one dropped each time once full) and ``Feed.planned`` (a Python caller's reply,
kept by reference), timed alone with no page watching, in µs.

    python bench/feed.py            # the cost per answer
    python bench/feed.py --frames 200

Set against ``inprocess.py``'s per-request cost of the whole app (about 100 µs and more), it
is what keeping the frames for the page adds to every HTTP answer.
"""

from __future__ import annotations

import argparse
import itertools
import timeit

from ormock.engine.feed import Feed
from ormock.engine.journal import JournalEntry
from ormock.protocol.reply import Reply
from ormock.protocol.wire import Frame, Written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=20, help="frames per answer")
    parser.add_argument("--number", type=int, default=200_000, help="answers per round")
    parser.add_argument("--repeat", type=int, default=7, help="rounds (the fastest counts)")
    args = parser.parse_args()
    feed = Feed()
    frames = tuple((0.0, Frame(b"x" * 300)) for _ in range(args.frames))
    written = Written("sse", "whole", 300 * args.frames, frames)
    entries = [JournalEntry("POST", "/v1/responses", {}, None) for _ in range(2000)]
    for number, entry in enumerate(entries):
        entry.id = f"e{number}"
    cycle = itertools.cycle(entries)

    reply = Reply(events=[], stream=True)

    def sent() -> None:
        feed.sent(next(cycle), 200, (), written)

    def planned() -> None:
        feed.planned(next(cycle), reply)

    for name, call in (("Feed.sent", sent), ("Feed.planned", planned)):
        best = min(timeit.repeat(call, number=args.number, repeat=args.repeat)) / args.number
        print(f"{name}: {best * 1e6:.2f} µs per answer ({args.frames} frames, "
              f"{feed.keep_count} kept)")


if __name__ == "__main__":
    main()
