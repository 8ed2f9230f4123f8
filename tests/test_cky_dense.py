"""The dense exhaustive kernel of ``cky.prune_batch`` (the coarse pass of the L-PCFG parsers)
against brute-force enumeration and against the sparse kernel of the parsers (same scores up to
rounding, same pruned items)."""

import numpy as np
import pytest

from fastspectral._ext.cky import ChartGrammar, chart_marginals, prune_batch

from test_cky import check_marginals_against_enumeration, random_grammar, random_lexical

KEYS = ("inside_pre", "inside_post", "outside_pre", "outside_post", "marg_pre", "marg_post")


def _plain_chart(g, tags_parent=False):
    """``g``'s sum-mode chart grammar with pre-terminals that are not told apart (every rule
    takes the full-range path of the dense kernel) or, with ``tags_parent``, a pre-terminal that
    is also a binary parent (pre-terminals may then span several words)."""
    up, uc, uw = g.unary_closure("sum")
    is_tag = g.is_preterminal.astype(np.uint8)
    parent = np.asarray(g.bin_parent).copy()
    if tags_parent:
        parent[0] = int(np.flatnonzero(is_tag)[0])
    else:
        is_tag = np.zeros_like(is_tag)
    return ChartGrammar(g.n_symbols, parent, g.bin_left, g.bin_right, g.bin_prob, up, uc, uw,
                        g.root_prob, g.sym_class, is_tag, len(g.classes))


@pytest.mark.slow
@pytest.mark.parametrize("seed,n,chain", [(0, 1, False), (1, 2, False), (2, 3, False),
                                          (3, 4, False), (4, 3, True), (5, 4, True),
                                          (6, 4, False)])
def test_dense_marginals_match_enumeration(seed, n, chain):
    g = random_grammar(seed, chain=chain)
    lex = random_lexical(g, n, seed + 100)
    check_marginals_against_enumeration(g, n, lex, dense=True)


def _assert_same_scores(a, b, rtol=1e-11):
    assert a["logz"] == pytest.approx(b["logz"], rel=1e-12, abs=1e-12)
    for k in KEYS:
        x, y = a[k], b[k]
        # the same zero pattern (log scale: -inf), then the values up to rounding
        np.testing.assert_array_equal(np.isneginf(x), np.isneginf(y), err_msg=k)
        fin = np.isfinite(x)
        if k.startswith("marg"):
            np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-14, err_msg=k)
        else:
            np.testing.assert_allclose(x[fin], y[fin], rtol=0, atol=1e-9, err_msg=k)


@pytest.mark.parametrize("variant", ["grammar", "untyped", "tag-parent"])
@pytest.mark.parametrize("seed", range(4))
def test_dense_scores_equal_sparse(seed, variant):
    g = random_grammar(seed + 10, n_nt=6, n_tags=4, chain=seed % 2 == 1)
    cg = g.chart_grammar("sum") if variant == "grammar" else \
        _plain_chart(g, tags_parent=variant == "tag-parent")
    for n in (1, 2, 5, 13):
        lex = random_lexical(g, n, 7 * seed + n)
        _assert_same_scores(chart_marginals(cg, n, *lex, dense=True),
                            chart_marginals(cg, n, *lex))


def _pack(lexes):
    offs = np.zeros(len(lexes) + 1, np.int64)
    for k, lx in enumerate(lexes):
        offs[k + 1] = offs[k] + len(lx[0])
    return (offs, np.concatenate([lx[0] for lx in lexes]).astype(np.int32),
            np.concatenate([lx[1] for lx in lexes]).astype(np.int32),
            np.concatenate([lx[2] for lx in lexes]))


@pytest.mark.slow
def test_dense_prune_items_equal_sparse_long_sentences_and_threads():
    g = random_grammar(3, n_nt=5, n_tags=4)
    cg = g.chart_grammar("sum")
    lens = [120, 7, 60, 33, 1, 2]
    # realistic word probabilities: P(sentence) far below the double range (per-cell exponents)
    lexes = [(p, s, pr * 1e-4) for p, s, pr in
             (random_lexical(g, n, 50 + k) for k, n in enumerate(lens))]
    offs, pos, sym, prob = _pack(lexes)
    lengths = np.array(lens, np.int64)
    for thr in (1e-3, 1e-5, 0.0):
        sparse = prune_batch(cg, lengths, offs, pos, sym, prob, thr, 1, dense=False)
        dense = prune_batch(cg, lengths, offs, pos, sym, prob, thr, 1)
        dense2 = prune_batch(cg, lengths, offs, pos, sym, prob, thr, 2)
        for a, b, c in zip(sparse, dense, dense2):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(b, c)
        if thr == 0.0:      # every item of every cell
            assert all(len(a) == n * (n + 1) // 2 * g.n_symbols for a, n in zip(sparse, lens))
    # the 120-word sentence: its marginals need the scaling
    res = chart_marginals(cg, 120, *lexes[0], dense=True)
    assert res["logz"] < -800
    assert res["marg_post"][0, 120].sum() == pytest.approx(1.0, abs=1e-8)
    _assert_same_scores(res, chart_marginals(cg, 120, *lexes[0]), rtol=1e-9)


def test_dense_no_parse_gives_no_items():
    g = random_grammar(1)
    cg = g.chart_grammar("sum")
    # a word with no tag: no parse
    pos = np.array([0], np.int32)
    sym = np.array([int(np.flatnonzero(g.is_preterminal)[0])], np.int32)
    out = prune_batch(cg, np.array([2], np.int64), np.array([0, 1], np.int64), pos, sym,
                      np.array([0.5]), 1e-5)
    assert out[0].shape == (0, 3)
    assert chart_marginals(cg, 2, pos, sym, np.array([0.5]), dense=True)["logz"] == -np.inf
