"""The one Faker instance ormock draws text from, and the lorem text drawn without it.

One ``Faker()`` serves every engine (one per test under pytest) and every scenario load,
which would otherwise each make their own, a slow start. Callers seed it right before each use
and hold ``FAKER_LOCK`` from the seeding to the last draw, so that draws from different threads
(the server's, a test's loading a scenario) cannot interleave.

Lorem text (the embedded default's prose, and a template's ``faker.word``, ``words``,
``sentence``, ``sentences``, ``paragraph`` and ``paragraphs``) is drawn from Faker's word list by
SHAKE-128 of a seed instead: seeding Faker's generator takes longer than drawing the words.
``Draws`` is what one reply's templates draw from: that text, and Faker seeded with the same
seed at its first use only.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from array import array
from collections.abc import Sequence
from functools import lru_cache
from operator import itemgetter

from faker import Faker

__all__ = ["FAKER_LOCK", "LOREM_PROVIDERS", "Draws", "Lorem", "Prose", "Stream", "shared_faker"]

_BIG_ENDIAN = sys.byteorder == "big"  # the draws are little-endian 16-bit numbers

# held while seeding and drawing: scenarios load in test threads while the server draws
FAKER_LOCK = threading.RLock()


@lru_cache(maxsize=1)
def shared_faker() -> Faker:
    return Faker()


class Stream:
    """The draws of a seed: SHAKE-128 of its text, as little-endian 16-bit numbers taken in
    order, made a block at a time (the same seed gives the same draws on every platform, with no
    generator to seed per request: seeding a ``random.Random`` takes longer than drawing the
    text). ``Prose`` and ``Lorem`` draw their words from it."""

    _BATCH = 84  # draws made at a time, one SHAKE-128 block: a 3-sentence paragraph takes <= 39

    __slots__ = ("_draws", "_next", "_seed")

    def __init__(self, seed: int) -> None:
        self._seed = str(seed).encode()
        self._draws: Sequence[int] = ()
        self._next = 0

    def take(self, count: int) -> Sequence[int]:
        """The next ``count`` draws of the stream."""
        end = self._next + count
        if end > len(self._draws):
            self._more(end)
        taken, self._next = self._draws[self._next:end], end
        return taken

    def draw(self) -> int:
        """The next draw of the stream (``take(1)[0]``, without the slice)."""
        at = self._next
        if at >= len(self._draws):
            self._more(at + 1)
        self._next = at + 1
        return self._draws[at]

    def _more(self, end: int) -> None:
        """At least ``end`` draws of the stream made (its first bytes do not change)."""
        size = max(end, 2 * len(self._draws), self._BATCH)  # doubling: linear in all
        draws = array("H", hashlib.shake_128(self._seed).digest(2 * size))  # no int each
        if _BIG_ENDIAN:
            draws.byteswap()
        self._draws = draws


class Prose(Stream):
    """Lorem text from Faker's word list (loaded once), drawn from the ``Stream`` of the
    request's content seed."""

    _words: tuple[str, ...] = ()
    _table: tuple[str, ...] = ()  # the word of each 16-bit draw (``_words[draw % size]``)
    _cased: list[tuple[str, ...]] | None = None  # ``cased()``; [] when not ASCII letters

    __slots__ = ()

    @staticmethod
    def words() -> tuple[str, ...]:
        """Faker's word list, loaded once."""
        if not Prose._words:
            Prose._words = tuple(shared_faker().get_words_list())
        return Prose._words

    @staticmethod
    def table() -> tuple[str, ...]:
        """The word each draw stands for, for all 65,536 draws (made once): a draw's word is
        a lookup (``map`` over many draws)."""
        if not Prose._table:
            words = Prose.words()
            Prose._table = tuple([words[draw % len(words)] for draw in range(1 << 16)])
        return Prose._table

    def sentence(self) -> str:
        """5 to 12 words, the first capitalized, and a full stop."""
        return self.paragraph(1)

    def paragraph(self, sentences: int) -> str:
        """``sentences`` sentences, one after the other (what as many ``sentence`` calls
        give), drawn in one go: each takes a draw for its number of words, then its words."""
        return self.cut_paragraph(sentences)[0]

    @staticmethod
    def cased() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None:
        """For each of the 65,536 draws, its word as a sentence's first (its first letter upper,
        the rest lower), as a later one (lower) and as its last (lower, with the full stop): a
        sentence of ASCII words cased as ``paragraph`` cases it whole, word by word (made
        once). None when a word is not ASCII letters: then each sentence is cased whole."""
        if Prose._cased is None:
            words = Prose.words()
            if words and all(word.isascii() and word.isalpha() for word in words):
                later = [word.lower() for word in words]
                columns = ([word[0].upper() + word[1:].lower() for word in words], later,
                           [word + "." for word in later])
                Prose._cased = [tuple([column[draw % len(words)] for draw in range(1 << 16)])
                                 for column in columns]
            else:
                Prose._cased = []
        cased = Prose._cased
        return (cased[0], cased[1], cased[2]) if cased else None

    def cut_paragraph(self, sentences: int) -> tuple[str, tuple[list[str], int] | None]:
        """``paragraph(sentences)``, and when its words are ASCII letters (Faker's English list)
        its cut: the paragraph split at its spaces, and its token count (a word with its
        leading space is one token, each full stop one more). None: not cut.

        The draws are read where they stand in the stream, and the words between a
        sentence's first and last are looked up for each sentence in one call (``itemgetter``
        of its draws), as the embedded default's prose is drawn for every new request: the
        same words as a look-up a word, and none looked up past a sentence's end."""
        at = self._next
        if at + 13 * sentences > len(self._draws):  # the most they can take
            self._more(at + 13 * sentences)
        draws = self._draws
        cased = Prose._cased if Prose._cased is not None else Prose.cased()
        if cased and sentences > 0:
            first, later, last = cased
            words: list[str] = []
            for _ in range(sentences):
                end = at + 6 + draws[at] % 8  # its count, then 5 to 12 words (3 to 10 between)
                words.append(first[draws[at + 1]])
                words += itemgetter(*draws[at + 2:end - 1])(later)
                words.append(last[draws[end - 1]])
                at = end
            self._next = at
            return " ".join(words), (words, len(words) + sentences)
        table = Prose.table()
        out = []
        for _ in range(sentences):
            end = at + 6 + draws[at] % 8
            text = " ".join([table[draw] for draw in draws[at + 1:end]])
            out.append(text.capitalize())  # the first letter upper (title), the rest lower
            at = end
        self._next = at
        return ". ".join(out) + ".", None


class Lorem(Stream):
    """Faker's lorem providers, their arguments as Faker names them, drawn from the ``Stream``
    of a seed (Faker's words, as ``Prose`` looks them up): the same text for the same seed on
    every platform. The counts vary as Faker's do (``variable_nb_words``: 60% to 140% of the
    number asked, at least one)."""

    __slots__ = ()

    def _count(self, number: int, variable: bool) -> int:
        if not variable or number <= 0:
            return number
        return max(1, number * (60 + self.draw() % 81) // 100)

    def words(self, nb: int = 3) -> list[str]:
        return list(_words(self.take(max(nb, 0))))

    def word(self) -> str:
        return self.words(1)[0]

    def sentence(self, nb_words: int = 6, variable_nb_words: bool = True) -> str:
        return self.cut_sentence(nb_words, variable_nb_words)[0]

    def cut_sentence(self, nb_words: int = 6, variable_nb_words: bool = True
                     ) -> tuple[str, list[str] | None]:
        """``sentence``, and its words (it split at its spaces) when Faker's are ASCII
        letters (its English list): each of them one token, but the last, two with its full
        stop (``ormock.protocol.text_cuts``' rules), so that the sentence's tokens are one more
        than its words, after a space or not. None: not cut."""
        variable = variable_nb_words and nb_words > 0
        # the draws it may take made at once (the stream's first ones do not change), then
        # read where they stand: its count's draw (``_count``, inlined), then its words'
        at = self._next
        end = at + 1 + (nb_words * 140 // 100 if variable else max(nb_words, 0))
        if end > len(self._draws):
            self._more(end)
        stream = self._draws
        if variable:
            count = max(1, nb_words * (60 + stream[at] % 81) // 100)
            at += 1
        else:
            count = nb_words
        if count <= 0:
            self._next = at
            return "", None
        draws = stream[at:at + count]
        self._next = at + count
        cased = Prose._cased if Prose._cased is not None else Prose.cased()
        if cased:  # the first word titled (as ``title`` does an ASCII word), the rest as drawn
            # (looked up as ``_words`` does, into the list it returns)
            table = Prose._table or Prose.table()
            words = list(itemgetter(*draws)(table)) if count > 1 else [table[draws[0]]]
            words[0] = cased[0][draws[0]]
            words[-1] += "."
            return " ".join(words), words
        drawn = _words(draws)
        first = drawn[0]
        return first.title() + " ".join(drawn)[len(first):] + ".", None  # the first titled

    def sentences(self, nb: int = 3) -> list[str]:
        return [self.sentence() for _ in range(nb)]

    def paragraph(self, nb_sentences: int = 3, variable_nb_sentences: bool = True) -> str:
        count = self._count(nb_sentences, variable_nb_sentences)
        return " ".join(self.sentences(count)) if count > 0 else ""

    def paragraphs(self, nb: int = 3) -> list[str]:
        return [self.paragraph() for _ in range(nb)]


def _words(draws: Sequence[int]) -> Sequence[str]:
    """The words of these draws (one ``itemgetter`` call, not a call per word)."""
    table = Prose._table or Prose.table()
    if len(draws) == 1:  # itemgetter gives a tuple only for two and more
        return (table[draws[0]],)
    return itemgetter(*draws)(table) if draws else ()


# the providers ``Lorem`` draws, and the arguments it takes of each (any other: Faker draws it)
LOREM_PROVIDERS: dict[str, frozenset[str]] = {
    "word": frozenset(),
    "words": frozenset({"nb"}),
    "sentence": frozenset({"nb_words", "variable_nb_words"}),
    "sentences": frozenset({"nb"}),
    "paragraph": frozenset({"nb_sentences", "variable_nb_sentences"}),
    "paragraphs": frozenset({"nb"}),
}


class Draws(Lorem):
    """What one reply's templates draw from: the lorem providers (a ``Lorem`` of the reply's
    seed), and ``faker`` for any other, the shared Faker seeded with the same seed when first
    asked for (most replies never ask). Given a Faker without a seed, that Faker is taken as
    seeded already and the lorem seed is drawn from it."""

    __slots__ = ("_faker", "_faker_seed")

    def __init__(self, faker: Faker, seed: int | None = None) -> None:
        self._faker, self._faker_seed = faker, seed
        # ``Stream.__init__``'s fields, set here: every templated reply makes one ``Draws``
        self._seed = str(seed if seed is not None else faker.random.getrandbits(64)).encode()
        self._draws = ()
        self._next = 0

    @property
    def faker(self) -> Faker:
        if self._faker_seed is not None:
            self._faker.seed_instance(self._faker_seed)
            self._faker_seed = None
        return self._faker
