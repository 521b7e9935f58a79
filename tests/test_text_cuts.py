"""A plain text's tokens, deltas and delta frames cut at its spaces: what the tokenizer, the
``words`` chunker and ``delta_frames`` give it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ormock.engine.text_cuts import DeltaFormat, plain, tokens
from ormock.protocol.sse import delta_frames, encode_json
from ormock.protocol.tokens import chunker, count_tokens

WORD = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=8)
TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x2030), max_size=40)


@given(st.lists(WORD, min_size=1, max_size=30))
def test_a_plain_text_is_cut_as_the_rules_cut_it(words: list[str]) -> None:
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
        assert DeltaFormat(kind, index, part).frames(7, "msg_1%d", cut) == b"".join(
            delta_frames(kind, 7, "msg_1%d", index, part, chunker("words")(text)))


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
