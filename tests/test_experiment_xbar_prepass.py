"""The X-bar grammar in front of the L-PCFG parsers' coarse pass (experiments/xbar_prepass.py,
``cky.prune_batch(coarse=...)``): a research harness, not part of the package."""

import itertools
import sys
from collections import Counter

import numpy as np
import pytest

from conftest import REPO, need
from fastspectral.grammar.chart import posterior_prune
from fastspectral.grammar.pcfg import PCFG
from fastspectral.trees import read_ptb
from fastspectral.trees.transforms import prepare

sys.path.insert(0, str(REPO / "experiments"))
from xbar_prepass import (expected_counts, with_xbar_prepass, xbar_grammar,  # noqa: E402
                          xbar_posterior_prune, xbar_projection)


@pytest.fixture(scope="module")
def trees(shared_data):
    path = need(shared_data / "ptb" / "wsj-sample.mrg")
    return list(itertools.islice(read_ptb(path), 300))


@pytest.fixture(scope="module")
def coarse(trees):
    return PCFG(v=1, h=0).fit(trees).grammar_


@pytest.mark.slow
def test_expected_counts_are_the_training_counts_per_tree(trees, coarse):
    # a relative-frequency grammar's expected node counts are the training counts per tree
    counts = Counter()
    for t in trees:
        p = prepare(t, 1, 0, False)
        top = p.children[0] if p.label == "TOP" else p
        stack = [top]
        while stack:
            node = stack.pop()
            counts[node.label] += 1
            stack.extend(c for c in node.children if not isinstance(c, str))
    want = np.array([counts[s] for s in coarse.symbols], dtype=float) / len(trees)
    np.testing.assert_allclose(expected_counts(coarse), want, rtol=1e-8, atol=1e-10)


def test_xbar_projection_and_rule_probabilities(coarse):
    labels, proj = xbar_projection(coarse)
    assert labels[:2] == ["P", "@P"]
    pre = np.flatnonzero(coarse.is_preterminal)
    # preterminals keep their own symbol, phrases become P or @P
    assert [labels[k] for k in proj[pre]] == [coarse.symbols[a] for a in pre]
    for a, s in enumerate(coarse.symbols):
        if not coarse.is_preterminal[a]:
            assert labels[proj[a]] == ("@P" if s.startswith("@") else "P")
    xb = xbar_grammar(coarse)
    ptr, parent, right, prob = xb.chart.binary_by_left
    # every X-bar parent's binary rules plus its (non-loop) unary rules sum to at most 1;
    # P loses only the mass of its P -> P unary loops, @P none
    X = len(labels)
    out = np.bincount(parent, weights=prob, minlength=X)
    c = expected_counts(coarse)
    up, uc = proj[coarse.un_parent], proj[coarse.un_child]
    uw = np.bincount(up[up != uc], weights=(c[coarse.un_parent] * coarse.un_prob)[up != uc],
                     minlength=X)
    cx = np.bincount(proj, weights=c, minlength=X)
    total = out[:2] + uw[:2] / cx[:2]
    loops = np.bincount(up[up == uc], weights=(c[coarse.un_parent] * coarse.un_prob)[up == uc],
                        minlength=X)[:2] / cx[:2]
    np.testing.assert_allclose(total + loops, 1.0, rtol=1e-9)
    assert np.all(out[2:] == 0)         # preterminals rewrite to words only


def test_xbar_mask_at_zero_keeps_every_item(trees, coarse):
    sents = [[w for w, t in tr.pos() if t != "-NONE-"] for tr in trees[:25]]
    xb = xbar_grammar(coarse)
    plain = posterior_prune(coarse, sents, 1e-3, jobs=2)
    masked0 = xbar_posterior_prune(coarse, sents, 1e-3, xb, 0.0, jobs=2)
    for a, b in zip(plain, masked0):
        np.testing.assert_array_equal(a, b)


def test_xbar_mask_prunes_and_keeps_a_parse(trees, coarse):
    sents = [[w for w, t in tr.pos() if t != "-NONE-"] for tr in trees[:40]]
    xb = xbar_grammar(coarse)
    plain = posterior_prune(coarse, sents, 1e-3, jobs=1)
    masked = xbar_posterior_prune(coarse, sents, 1e-3, xb, 1e-3, jobs=1)
    assert sum(map(len, masked)) < sum(map(len, plain))
    for s, items in zip(sents, masked):
        n = len(s)
        assert len(items) > 0
        assert np.any((items[:, 0] == 0) & (items[:, 1] == n))        # a root item
        assert set(items[items[:, 1] - items[:, 0] == 1, 0]) == set(range(n))  # every word


def test_xbar_unparsable_mask_falls_back(coarse):
    # a threshold above every posterior masks everything, and so does 1000x lower: the kernel
    # then runs unmasked and returns the coarse grammar's own items
    xb = xbar_grammar(coarse)
    sents = [["the", "dog", "barks", "."]]
    plain = posterior_prune(coarse, sents, 1e-3)
    masked = xbar_posterior_prune(coarse, sents, 1e-3, xb, 1e4)
    np.testing.assert_array_equal(plain[0], masked[0])


def test_with_xbar_prepass_parses_like_the_model_when_nothing_is_masked(trees):
    """Ratio 0 runs the X-bar pass and masks nothing: the parses of the package's parser; a
    ratio that prunes still gives a tree per sentence.  The package itself has no switch."""
    from fastspectral.lpcfg.latent import LatentPCFGBase
    from fastspectral.lpcfg.spectral import SpectralLPCFG

    assert not hasattr(LatentPCFGBase, "xbar_ratio")
    model = SpectralLPCFG(n_states=2).fit(trees[:200])
    sents = [[w for w, t in tr.pos() if t != "-NONE-"] for tr in trees[200:215]]
    plain = [str(t) for t in model.parse(sents, jobs=1)]
    fast = with_xbar_prepass(model, ratio=0.0)
    assert isinstance(fast, SpectralLPCFG) and fast is not model
    assert [str(t) for t in fast.parse(sents, jobs=1)] == plain
    pruned = with_xbar_prepass(model, ratio=1.0).parse(sents, jobs=1)
    assert [t.leaves() for t in pruned] == sents
    assert [str(t) for t in model.parse(sents, jobs=1)] == plain     # the model is unchanged
