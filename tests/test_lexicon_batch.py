"""The batched lexical entries (``Lexicon.prefetch`` / ``_compute_entries``) against a
one-word-at-a-time reference: the lexicon's estimates and punctuation rules as the module
docstring states them, written out per word (the code before the batching)."""
import numpy as np
import pytest

from fastspectral.grammar.lexicon import Lexicon, punctuation_tag, signature

from conftest import data_path


def reference_entry(lex, word, position):
    known = word in lex.word_count
    lower = word.lower()
    p_sig = lex._p_tag_given_sig(signature(word, position, lower in lex._lower_known
                                           and lower != word))
    if known:
        cw = lex.word_count[word]
        dist = lex.s1 * p_sig
        for t, c in lex._word_tags[word].items():
            dist[t] += c
        dist = dist / (cw + lex.s1)
        p_w = (cw + 0.5) / (lex.n_tokens + 0.5 * (lex.vocab_size + 1))
    else:
        dist = p_sig
        p_w = lex.p_unk / max(1, lex.vocab_size)
    punct = lex._punct
    if punct is not None:
        keep = None
        if known:
            seen = list(lex._word_tags[word])
            n_punct = int(punct[seen].sum())
            keep = punct if n_punct == len(seen) else ~punct if n_punct == 0 else None
        else:
            tag = punctuation_tag(word)
            ids = None if tag is None else lex._punct_by_tag.get(tag)
            if tag is None:
                keep = ~punct
            elif ids is None:
                keep = punct
            elif not (dist[ids] > 0).any():
                out = np.zeros_like(dist)
                out[ids] = lex.p_tag[ids]
                dist, keep = out / max(out.sum(), 1e-300), None
            else:
                keep = np.zeros_like(punct)
                keep[ids] = True
        if keep is not None:
            out = np.where(keep, dist, 0.0)
            dist = out if (out > 0).any() else dist
    syms = np.flatnonzero((dist > 0) & (lex.p_tag > 0)).astype(np.int32)
    return syms, dist[syms] * p_w / lex.p_tag[syms]


def _toy(punct=True):
    # symbols: 0 DT, 1 NN, 2 VB, 3 ",", 4 ".", 5 ":" (5 never used), 6 "''"
    sents = [("the dog runs .", [0, 1, 2, 4]), ("a cat , sleeps .", [0, 1, 3, 2, 4]),
             ("The Emu-like yak hops !", [0, 1, 1, 2, 4]), ("-- so 1984 naps ''", [3, 0, 1, 2, 6]),
             ("dogs ' bark .", [1, 6, 2, 4]), ("Dogs ' bark ?", [1, 0, 2, 4])] * 3
    words, pos, tags = [], [], []
    for text, t in sents:
        for i, w in enumerate(text.split()):
            words.append(w)
            pos.append(i)
        tags += t
    lex = Lexicon(7, rare_threshold=3).fit(words, pos, tags)
    if punct:
        lex.set_punctuation({"DT": [0], "NN": [1], "VB": [2], ",": [3], ".": [4], ":": [5],
                             "''": [6]})
    return lex


PROBE = ["the", "The", "dog", "Dog", "dogs", "runs", ".", "?", "!", ",", "--", "...", ";", "``",
         "''", "'", "\u201c", "\u00bb", "zebra", "Zebra", "ZEBRA", "1984", "12,000", "x-ray",
         "walked", "walking", "nation", "faster", "quickly", "cities", "Emu-like", "so", "",
         "\u00e9t\u00e9", "-", "naps"]


@pytest.mark.parametrize("punct", [True, False])
def test_batch_equals_reference_toy(punct):
    lex = _toy(punct)
    keys = [(w, ini) for w in PROBE for ini in (True, False)]
    for block in (keys, keys[:1], keys[5:9]):
        got = lex._compute_entries(block)
        assert len(got) == len(block)
        for (w, ini), (syms, probs) in zip(block, got):
            rs, rp = reference_entry(lex, w, 0 if ini else 3)
            np.testing.assert_array_equal(syms, rs)
            assert syms.dtype == np.int32 and probs.dtype == np.float64
            np.testing.assert_array_equal(probs, rp)       # bit for bit
            assert not syms.flags.writeable and not probs.flags.writeable


def test_prefetch_fills_the_cache_and_entries_are_unchanged():
    lex = _toy()
    sents = [["The", "zebra", "runs", "."], ["dogs", "'", "bark", "?"], [], ["''", "so"]]
    expected = [lex.entries(s) for s in sents]          # one word at a time
    lex._word_cache.clear()
    lex.prefetch(sents)
    n = len(lex._word_cache)
    assert n == len({(w, i == 0) for s in sents for i, w in enumerate(s)})
    for s, e in zip(sents, expected):
        for a, b in zip(lex.entries(s), e):
            np.testing.assert_array_equal(a, b)
    lex.prefetch(sents)                                 # nothing new
    assert len(lex._word_cache) == n


def test_prefetch_respects_the_cache_limit(monkeypatch):
    lex = _toy()
    monkeypatch.setattr(Lexicon, "_CACHE_LIMIT", 5)
    monkeypatch.setattr(Lexicon, "_BLOCK", 2)
    lex.prefetch([["a", "b"], ["c", "d"]])
    assert len(lex._word_cache) == 4
    lex.prefetch([["e", "f"]])                          # 4 + 2 > 5: emptied first
    assert set(lex._word_cache) == {("e", True), ("f", False)}


@pytest.mark.slow
def test_batch_equals_reference_treebank_lexicon():
    """The lexicon of a PCFG trained on the WSJ sample (punctuation rules on), over every word
    type of section 22 and its sentence-initial forms."""
    from fastspectral.grammar.pcfg import PCFG
    from fastspectral.trees import read_ptb

    train, test = data_path("ptb", "wsj-sample.mrg"), data_path("ptb", "wsj22.trees")
    if not train.exists() or not test.exists():
        pytest.skip(f"shared data not found ({train}, {test})")
    trees = list(read_ptb(str(train)))[:600]
    model = PCFG().fit(trees)
    lex = model.grammar_.lexicon
    assert lex._punct is not None
    words = sorted({w for t in list(read_ptb(str(test)))[:300] for w, tag in t.pos()
                    if tag != "-NONE-"})
    keys = [(w, ini) for w in words for ini in (True, False)]
    got = lex._compute_entries(keys)
    for (w, ini), (syms, probs) in zip(keys, got):
        rs, rp = reference_entry(lex, w, 0 if ini else 2)
        np.testing.assert_array_equal(syms, rs)
        np.testing.assert_array_equal(probs, rp)


def _reference_sentence(lex, words):
    """One sentence's entries token by token: the reference entries, then quote pairing."""
    got = [reference_entry(lex, w, i) for i, w in enumerate(words)]
    open_quotes = 0
    for i, w in enumerate(words):
        if lex._punct is not None and w in ("`", "'"):
            syms, probs, open_quotes = lex._single_quote(w, words[i - 1] if i else "",
                                                         *got[i], open_quotes)
            got[i] = (syms, probs)
    pos = [np.full(len(g[0]), i, np.int32) for i, g in enumerate(got)]
    cat = (lambda parts, dt: np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt))
    return (cat(pos, np.int32), cat([g[0] for g in got], np.int32),
            cat([g[1] for g in got], np.float64))


@pytest.mark.parametrize("punct", [True, False])
def test_entries_many_equals_sentence_by_sentence(punct):
    lex = _toy(punct)
    sents = [["The", "dogs", "'", "bark", "."], [], ["`", "so", "'", "naps", "'"],
             ["Dogs", "'", "zebra"], ["the"], ["''", "Emu-like", "1984", "?"], []]
    for cold in (True, False):
        if cold:
            lex._word_cache.clear()
        offsets, pos, sym, prob = lex.entries_many(sents)
        assert offsets.shape == (len(sents) + 1,) and offsets[0] == 0
        assert pos.dtype == np.int32 and sym.dtype == np.int32 and prob.dtype == np.float64
        for k, words in enumerate(sents):
            a, b = offsets[k], offsets[k + 1]
            for got, exp in zip((pos[a:b], sym[a:b], prob[a:b]),
                                _reference_sentence(lex, words)):
                np.testing.assert_array_equal(got, exp)
            for got, exp in zip(lex.entries(words), _reference_sentence(lex, words)):
                np.testing.assert_array_equal(got, exp)
    offsets, pos, sym, prob = lex.entries_many([])
    assert offsets.tolist() == [0] and pos.size == sym.size == prob.size == 0
