"""The constituent-context model and the branching baselines."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from fastspectral.unsupervised import CCMParser, branching_tree, random_tree
from fastspectral.unsupervised.ccm import CCMParseStats
from fastspectral.unsupervised._ccm_kernels import estep, span_hashes, split_uniform_posteriors


def _all_trees(x, y):
    if y - x == 1:
        yield [(x, y)]
        return
    for m in range(x + 1, y):
        for left in _all_trees(x, m):
            for right in _all_trees(m, y):
                yield [(x, y)] + left + right


def test_estep_posteriors_match_enumeration():
    n = 5
    offsets, tags = np.array([0, n]), np.array([0, 1, 2, 0, 1])
    H, C = span_hashes(offsets, tags, 4)
    yid = np.unique(H, return_inverse=True)[1].astype(np.int64)
    rng = np.random.default_rng(0)
    lcy, ldy = np.log(rng.random(len(H))), np.log(rng.random(len(H)))
    lcx, ldx = np.log(rng.random(36)), np.log(rng.random(36))
    post = np.zeros(len(H))
    estep(offsets, yid, C, lcy, lcx, ldy, ldx, post)
    spans = [(i, j) for i in range(n) for j in range(i + 1, n + 1)]
    idx = {s: k for k, s in enumerate(spans)}
    phi = np.array([lcy[yid[k]] + lcx[C[k]] - ldy[yid[k]] - ldx[C[k]] for k in range(len(H))])
    weights, members = [], []
    for t in _all_trees(0, n):
        weights.append(np.exp(sum(phi[idx[s]] for s in t)))
        members.append(set(t))
    weights = np.array(weights) / sum(weights)
    brute = [sum(w for w, m in zip(weights, members) if s in m) for s in spans]
    np.testing.assert_allclose(post, brute, rtol=1e-9)
    u = split_uniform_posteriors(offsets)
    assert u.sum() == pytest.approx(2 * n - 1)
    assert u[idx[(0, n)]] == 1.0


def test_fit_parse_round_trip_and_restarts(tmp_path, synthetic_grammar):
    g = synthetic_grammar
    train, test = g.sample(300, seed=1), g.sample(30, seed=2)
    words = [t.leaves() for t in test]
    tags = [[q for _, q in t.pos()] for t in test]
    m = CCMParser(iterations=5).fit(train)
    assert all(b >= a - 1e-6 for a, b in itertools.pairwise(m.log_likelihood_))   # EM ascends
    trees = m.parse(words, tags=tags)
    assert [t.leaves() for t in trees] == words
    m.save(tmp_path / "m.ccm")
    assert [str(t) for t in CCMParser.load(tmp_path / "m.ccm").parse(words, tags=tags)] == \
        [str(t) for t in trees]
    a = CCMParser(iterations=2, init="random", random_state=1).fit(train)
    b = CCMParser(iterations=2, init="random", random_state=2).fit(train)
    assert a.log_likelihood_ != b.log_likelihood_
    with pytest.raises(ValueError, match="init"):
        CCMParser(init="x").fit(train)


def test_baselines():
    w, t = ["a", "b", ",", "c", "d", "."], ["DT", "NN", ",", "VBD", "NN", "."]
    assert str(branching_tree(w, t)) == "(X (DT a) (X (NN b) (, ,) (X (VBD c) (NN d))) (. .))"
    assert str(branching_tree(w, t, "left")) == "(X (X (X (DT a) (NN b)) (, ,) (VBD c)) (NN d) (. .))"
    r = random_tree(w, t, np.random.default_rng(0))
    assert r.leaves() == w


def test_parse_stats_count_unknown_tags_and_unseen_yields():
    train = [(["the", "dog", "saw", "a", "cat"], ["DT", "NN", "VBD", "DT", "NN"]),
             (["dogs", "bark"], ["NNS", "VBP"])] * 3
    m = CCMParser(iterations=2).fit(train)
    words = [["the", "dog", "barks", "."], ["a", "cat", "saw", "dogs"], ["hi"]]
    tags = [["DT", "NN", "VBZ", "."], ["DT", "NN", "VBD", "NNS"], ["UH"]]
    m.parse(words, tags=tags)
    # kept words (punctuation removed): 3 + 4 + 1; unknown tags: VBZ, UH; the spans a
    # bracketing decides (2 words up to the sentence less one) with an unseen tag sequence:
    # "NN VBZ" of the first, "VBD NNS" and "NN VBD NNS" of the second
    assert m.last_parse_stats_ == CCMParseStats(sentences=3, untagged=0, words=8,
                                                unknown_tags=2, unseen_yields=3)
    m.parse(words[1:2])         # untagged: every word gets the first tag, DT
    # "DT DT" (three spans) and "DT DT DT" (two) were never seen
    assert m.last_parse_stats_ == CCMParseStats(sentences=1, untagged=1, words=4,
                                                unknown_tags=0, unseen_yields=5)
