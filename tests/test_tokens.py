"""``ormock.protocol.tokens``: one tokenizer for usage counts and delta chunking, so the
counts add up with what was streamed."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ormock.protocol.tokens import chunker, count_tokens, split_tokens

TEXT = "Hello, world!  It's 20°C_ish\ttoday."


def test_tokens_join_back_to_the_text() -> None:
    tokens = split_tokens(TEXT)
    assert "".join(tokens) == TEXT and count_tokens(TEXT) == len(tokens)
    assert split_tokens("Hello, world") == ["Hello", ",", " world"]
    assert count_tokens("") == 0


@pytest.mark.parametrize(("rule", "deltas"), [
    (None, ["One", " two,", "  three"]),
    ("words", ["One", " two,", "  three"]),
    ("whole", ["One two,  three"]),
    ("chars:6", ["One tw", "o,  th", "ree"]),
    ("tokens:2", ["One two", ",  ", "three"]),  # tokens: One, " two", ",", "  ", three
    (" tokens:100 ", ["One two,  three"]),
])
def test_chunking_rules(rule: str | None, deltas: list[str]) -> None:
    assert chunker(rule)("One two,  three") == deltas


@pytest.mark.parametrize("rule", ["whole", "words", "chars:3", "tokens:1"])
def test_empty_text_has_no_deltas(rule: str) -> None:
    assert chunker(rule)("") == []


@pytest.mark.parametrize(("rule", "message"), [
    ("chars:0", "chunking 'chars:0': chars needs a positive size, e.g. 'chars:4'"),
    ("tokens:x", "chunking 'tokens:x': tokens needs a positive size, e.g. 'tokens:4'"),
    ("lines", "unknown chunking 'lines': use 'words', 'whole', 'chars:N' or 'tokens:N'"),
    ("whole:2", "unknown chunking 'whole:2'"),
])
def test_bad_rules_say_what_to_write(rule: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        chunker(rule)


_OLD_TOKEN = re.compile(r" ?[^\W_]+| ?[^\w\s]+|_+|\s+", re.UNICODE)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(
    st.text(st.characters(max_codepoint=127), max_size=80),
    st.text(st.sampled_from(" \t\n\r\x0b\x0c\x1c\x1f_-.!a Z9é\u2028\xa0"), max_size=40),
    st.text(max_size=40),
))
def test_tokens_are_those_of_the_unicode_pattern(text: str) -> None:
    # the ASCII pattern is an exact stand-in for the Unicode one: the same tokens, so the
    # same counts (usage numbers are part of the exact bytes)
    assert split_tokens(text) == _OLD_TOKEN.findall(text)
    assert count_tokens(text) == len(_OLD_TOKEN.findall(text))


def test_every_ascii_character_is_tokenized_as_before() -> None:
    every = "".join(map(chr, range(128)))
    for text in (every, every[::-1], " ".join(every), "  ".join(every)):
        assert split_tokens(text) == _OLD_TOKEN.findall(text)
