"""The SHAG data encoding at once over a treebank (dependency.data.encode_sentences,
check_sentences) equals the sentence-by-sentence definitions."""
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastspectral.dependency import data
from fastspectral.dependency.data import (ROOT, SymbolVocab, check_sentence, check_sentences,
                                          encode_sentences, token_class)
from fastspectral.errors import FormatError
from fastspectral.trees.conll import DepSentence, toy_treebank


def _encode_one_by_one(sents, tags, words, with_heads):
    """The definition: sentence by sentence, the root first."""
    hsym, msym, cls, wid, heads, off = [], [], [], [], [], [0]
    for s in sents:
        hsym.append(0)
        msym.append(0)
        cls.append(0)
        wid.append(-1)
        heads.append(-1)
        for w, t, h in zip(s.words, s.tags, s.heads if with_heads else [-1] * len(s.words)):
            i = tags.index.get(t, tags.unk_id)
            hsym.append(i + 1)
            msym.append(i)
            cls.append(token_class(w, t))
            wid.append(-1 if words is None else words.index.get(w, words.unk_id))
            heads.append(h)
        off.append(off[-1] + len(s.words) + 1)
    return off, hsym, msym, cls, wid, heads


_WORDS = st.sampled_from(["the", "dog", ",", "...", "and", "\u00bf", "caf\u00e9", "--", "$",
                          "''", "1/2"])
_TAGS = st.sampled_from(["DT", "NN", ",", "CC", "Fc", "PUNCT", "X", "UNSEEN"])


@st.composite
def _sentence(draw):
    n = draw(st.integers(1, 6))
    heads = [draw(st.integers(0, n)) for _ in range(n)]
    return DepSentence(words=[draw(_WORDS) for _ in range(n)],
                       xpos=[draw(_TAGS) for _ in range(n)], heads=heads)


@settings(max_examples=80, deadline=None)
@given(st.lists(_sentence(), max_size=6), st.booleans(), st.booleans())
def test_encoding_equals_definition(sents, with_heads, lexical):
    tags = SymbolVocab(["NN", "DT", ",", "CC", "Fc", "PUNCT"], unk_id=0)
    words = SymbolVocab(["the", "dog", ","], unk_id=3) if lexical else None
    enc = encode_sentences(sents, tags, words, with_heads=with_heads)
    off, hsym, msym, cls, wid, heads = _encode_one_by_one(sents, tags, words, with_heads)
    for got, want, dtype in ((enc.tok_off, off, np.int64), (enc.hsym, hsym, np.int32),
                             (enc.msym, msym, np.int32), (enc.cls, cls, np.int32),
                             (enc.wid, wid, np.int32), (enc.heads, heads, np.int64)):
        assert got.dtype == dtype
        assert got.tolist() == want


@settings(max_examples=150, deadline=None)
@given(st.lists(_sentence(), max_size=6), st.booleans())
def test_batch_check_raises_what_the_loop_raises(sents, need_heads):
    def loop():
        try:
            for i, s in enumerate(sents):
                check_sentence(s, i, need_heads=need_heads)
        except FormatError as exc:
            return str(exc)
        return None

    try:
        check_sentences(sents, need_heads=need_heads)
        got = None
    except FormatError as exc:
        got = str(exc)
    assert got == loop()
    assert data._sentences_fine(sents, need_heads) == (got is None)


def test_batch_check_cases():
    good = toy_treebank(2)
    check_sentences(good)
    assert data._sentences_fine(good, True)
    cycle = DepSentence(words=["a", "b", "c"], xpos=["X"] * 3, heads=[2, 1, 0])
    with pytest.raises(FormatError, match="sentence 9: the heads contain a cycle"):
        check_sentences(good + [cycle])
    check_sentences(good + [cycle], need_heads=False)
    long_chain = DepSentence(words=["w"] * 40, xpos=["X"] * 40, heads=list(range(2, 41)) + [0])
    assert data._sentences_fine([long_chain], True)
    long_cycle = DepSentence(words=["w"] * 40, xpos=["X"] * 40, heads=list(range(2, 41)) + [1])
    assert not data._sentences_fine([long_cycle], True)
    with pytest.raises(FormatError, match="sentence 1: head out of range or self-loop"):
        check_sentences([DepSentence(words=["a"], heads=[1])])
    with pytest.raises(FormatError, match="sentence 2: empty sentence"):
        check_sentences([good[0], DepSentence()])


def test_ascii_punctuation_is_the_unicode_categories():
    for i in range(128):
        c = chr(i)
        assert (c in data._ASCII_PUNCT) == unicodedata.category(c).startswith("P")
    for w in ["", ",", "--", "$", "a,", "...", "\u00bf?", "\u00e9"]:
        assert data._is_punct_word(w) == (bool(w) and all(
            unicodedata.category(ch).startswith("P") for ch in w))


def test_root_symbol_is_not_looked_up():
    tags = SymbolVocab([ROOT, "X"], unk_id=1)
    enc = encode_sentences([DepSentence(words=["a"], xpos=["X"], heads=[0])], tags)
    assert enc.msym.tolist() == [0, 1] and enc.hsym.tolist() == [0, 2]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.one_of(_WORDS, st.text(max_size=3)),
                          st.one_of(_TAGS, st.sampled_from(["F", "Fp", "FP", "cc", "c", "``"]),
                                    st.text(max_size=2))), max_size=40))
def test_token_classes_are_token_class(pairs):
    words = [w for w, _ in pairs]
    tags = [t for _, t in pairs]
    got = data.token_classes(words, tags)
    assert got.dtype == np.int32
    assert got.tolist() == [token_class(w, t) for w, t in pairs]
