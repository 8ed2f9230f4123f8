"""Unknown-word signatures and the smoothed lexicon."""
import numpy as np
import pytest

from fastspectral.grammar.lexicon import Lexicon, signature


@pytest.mark.parametrize("word,pos,known_lower,expected", [
    ("dog", 3, False, "UNK-LC"),
    ("dogs", 3, False, "UNK-LC-s"),
    ("walking", 3, False, "UNK-LC-ing"),
    ("Smith", 3, False, "UNK-CAPS"),
    ("Smith", 0, False, "UNK-INITC"),
    ("Walking", 0, True, "UNK-INITC-KNOWNLC-ing"),
    ("1,234", 5, False, "UNK-NUM"),
    ("well-known", 2, False, "UNK-LC-DASH"),
    ("IBM", 1, False, "UNK-CAPS"),
    ("quickly", 4, False, "UNK-LC-ly"),
])
def test_signatures(word, pos, known_lower, expected):
    assert signature(word, pos, known_lower) == expected


def _toy():
    # symbols: 0 = DT, 1 = NN, 2 = VB (all preterminals)
    nouns = ["dog", "cat", "mouse", "dog", "cow", "hen"] * 5 + ["yak", "emu"]
    verbs = ["runs", "sleeps", "barks", "runs", "eats", "sits"] * 5 + ["hops", "naps"]
    words, tags, pos = [], [], []
    for n, v in zip(nouns, verbs):     # 32 sentences "the N V"; "the" is never rare
        words += ["the", n, v]
        tags += [0, 1, 2]
        pos += [0, 1, 2]
    return Lexicon(3, rare_threshold=1).fit(words, pos, tags)


def test_known_and_unknown_words():
    lex = _toy()
    # a frequent closed-class word keeps (almost) all its mass on its tag
    s = lex.tag_word_scores(["x", "the"])[1]
    assert s[0] > 50 * max(s[1], s[2])
    # unknown words only get the tags of rare training words (NN, VB), never DT
    pos, sym, prob = lex.entries(["the", "zebra"])
    unk = sym[pos == 1]
    assert 0 not in unk and set(unk) <= {1, 2}
    assert np.all(prob > 0)
    # given tags restrict the entries
    pos, sym, prob = lex.entries(["the", "zebra"], tags=[None, "VB"],
                                 tag_symbols={"DT": [0], "NN": [1], "VB": [2]})
    assert list(sym[pos == 1]) == [2]


def test_state_round_trip():
    lex = _toy()
    meta, arrays = lex.to_state()
    again = Lexicon.from_state(meta, arrays)
    for sent in (["the", "dog", "runs"], ["A", "zebra-like", "thing", "1984"]):
        np.testing.assert_allclose(again.tag_word_scores(sent), lex.tag_word_scores(sent))
