"""A plain text's tokens, deltas and delta frames cut at its spaces: what the tokenizer, the
``words`` chunker and ``delta_frames`` give it."""

from __future__ import annotations

import hashlib
import sys
from array import array
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ormock.engine import embedded
from ormock.engine.core import Engine
from ormock.engine.embedded import default_plan
from ormock.protocol.plan import TextPart
from ormock.protocol.request import parse_request
from ormock.protocol.sse import delta_frames, encode_json
from ormock.protocol.text_cuts import DeltaFormat, plain, tokens
from ormock.protocol.tokens import chunker, count_tokens
from ormock.scenario.generated_text import Prose

WORD = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=8)
TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x2030), max_size=40)
# words as lorem text writes them: letters and digits, some with a full stop or other ends
LOREM_WORD = st.builds(lambda word, end: word + end,
                       st.text(st.sampled_from("aZ09_é.-"), min_size=0, max_size=6),
                       st.sampled_from(["", ".", "!", "..", "_"]))


@given(st.lists(LOREM_WORD, min_size=1, max_size=12))
def test_words_are_counted_as_the_tokenizer_counts_them(words: list[str]) -> None:
    """``tokens``' per-word counts (a word of letters and digits, with a full stop or not,
    counted without the tokenizer): what ``count_tokens`` gives each word and the text."""
    words = [word for word in words if word] or ["a"]
    if plain(" ".join(words)):
        assert tokens(words) == count_tokens(" ".join(words))
    for word in words:
        assert tokens([word]) == count_tokens(word)
        assert tokens(["a", word]) == 1 + count_tokens(" " + word)


@given(st.lists(WORD, min_size=1, max_size=30), st.sampled_from([0, 7, 4090, 5000]),
       st.sampled_from(["msg_1%d", 'say "x"', "a\\b", "naïve", "tab\t"]))
def test_a_plain_text_is_cut_as_the_rules_cut_it(words: list[str], first: int,
                                                 item_id: str) -> None:
    text = " ".join(words)
    if not plain(text):  # a quote or a backslash
        assert '"' in text or "\\" in text
        return
    cut = text.split(" ")
    assert tokens(cut) == count_tokens(text)
    assert len(cut) == len(chunker("words")(text))
    assert encode_json(text) == f'"{text}"'
    for kind, index, part in (("response.output_text.delta", 0, 0),
                              ("x.delta", 2, 1)):
        assert DeltaFormat(kind, index, part).frames(first, item_id, cut) == b"".join(
            delta_frames(kind, first, item_id, index, part, chunker("words")(text)))


@given(TEXT)
def test_only_plain_texts_are_taken_as_plain(text: str) -> None:
    if plain(text):
        cut = text.split(" ")
        assert tokens(cut) == count_tokens(text)
        assert len(cut) == len(chunker("words")(text))
        assert encode_json(text) == f'"{text}"'


def test_what_is_not_plain() -> None:
    for text in ("", " a", "a ", "a  b", "a\tb", 'say "x"', "a\\b", "naïve", "a\nb"):
        assert not plain(text), text
    assert plain("Hello, world. It's 100% _fine_ (ok)!")


def _paragraph_by_sentences(seed: int, sentences: int, skip: int) -> tuple[str, int]:
    """What the embedded default's prose is by its definition: from the SHAKE-128 draws of
    ``seed`` after the first ``skip``, each sentence a draw for its count (5 to 12) then its
    words, joined and cased whole (the first letter upper, the rest lower), with a full stop;
    and how many draws it took."""
    draws = array("H", hashlib.shake_128(str(seed).encode()).digest(2 * (skip + 13 * sentences)))
    if sys.byteorder == "big":
        draws.byteswap()
    out, at = [], skip
    for _ in range(sentences):
        end = at + 6 + draws[at] % 8
        out.append(" ".join(Prose.table()[d] for d in draws[at + 1:end]).capitalize())
        at = end
    return ". ".join(out) + ".", at - skip


@given(st.integers(min_value=0, max_value=2**64 - 1), st.integers(0, 5), st.integers(1, 4))
def test_the_prose_is_cut_as_it_is_written(seed: int, first: int, sentences: int) -> None:
    """``Prose.cut_paragraph``: the paragraph its definition gives (the words are Faker's
    list, some capitalized: ``I``, ``TV``), and its cut: the text split at its spaces, its
    tokens counted, a plain text; a second paragraph goes on from the same draws."""
    prose = Prose(seed)
    head, taken = _paragraph_by_sentences(seed, first, 0)
    assert (prose.paragraph(first) if first else ".") == head
    text, cut = prose.cut_paragraph(sentences)
    assert text == _paragraph_by_sentences(seed, sentences, taken if first else 0)[0]
    assert cut is not None and plain(text)
    assert cut[0] == text.split(" ") and cut[1] == count_tokens(text) == tokens(cut[0])


def test_the_default_reply_carries_its_cut() -> None:
    """The embedded default's message part holds its prose's cut; one cut short by
    ``max_output_tokens`` holds none (its text is not the prose's)."""
    engine = Engine(seed=4)
    for body, cut in (({"model": "m", "input": "hi"}, True),
                      ({"model": "m", "input": "hi", "max_output_tokens": 16}, False)):
        request = parse_request(body)
        part = default_plan(request, request.input, engine.faker, 4).items[0].parts[0]
        assert isinstance(part, TextPart)
        assert (part.cut is not None) is cut
        if part.cut is not None:
            assert part.cut == (part.text.split(" "), count_tokens(part.text))


def test_a_plain_requests_prose_is_what_the_checks_give(monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded default answers a request with no tools, format, reasoning or budget whose
    context ends with the user's message without its other checks: the same plan as with them
    (``_SHAPING`` made to hold a field every echo has, so that every request takes them)."""
    engine = Engine(seed=6)
    bodies: list[dict[str, Any]] = [
        {"model": "m", "input": "hi"},
        {"model": "m", "input": [{"role": "user", "content": "a"}]},
        {"model": "m", "input": [{"role": "user", "content": "a"},
                                 {"role": "assistant", "content": "b"}]},  # its checks
        {"model": "m", "input": [], "instructions": "be brief"},
    ]
    requests = [parse_request(body) for body in bodies]
    quick = [default_plan(r, r.input, engine.faker, 6) for r in requests]
    monkeypatch.setattr(embedded, "_SHAPING", frozenset({"model"}))
    checked = [default_plan(r, r.input, engine.faker, 6) for r in requests]
    assert quick == checked
    assert [p.items[0].parts[0].cut for p in quick] == [  # type: ignore[union-attr]
        p.items[0].parts[0].cut for p in checked]  # type: ignore[union-attr]
