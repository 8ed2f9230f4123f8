"""Theorems 1-2 of Cohen et al. (2012): from exact moments the spectral parameters reproduce p(tree)
and all chart marginals of a known L-PCFG (fastspectral.synthetic), via the compiled kernel."""
import numpy as np
import pytest

from fastspectral.lpcfg.exact import exact_spectral_grammar, true_grammar
from fastspectral.lpcfg.params import _sort_items, tensor_inside_outside
from fastspectral.synthetic import LatentPCFG


def _tree_nodes(tree, sid):
    """Preorder node arrays (symbol, left, right, word) of a CNF tree below TOP."""
    root = tree.children[0] if tree.label == "TOP" else tree
    sym, left, right, word = [], [], [], []
    stack = [(root, -1, 0)]
    while stack:
        node, par, side = stack.pop()
        i = len(sym)
        sym.append(sid[node.label])
        left.append(-1)
        right.append(-1)
        if par >= 0:
            (left if side == 0 else right)[par] = i
        if len(node.children) == 1 and isinstance(node.children[0], str):
            word.append(node.children[0])
            continue
        word.append(None)
        stack.append((node.children[1], i, 1))
        stack.append((node.children[0], i, 0))
    return sym, left, right, word


def _leaves(sym, word, table):
    return [None if w is None else table[(s, w)] for s, w in zip(sym, word)]


@pytest.fixture(scope="module")
def model():
    return LatentPCFG.default(n_states=2, seed=3)


def test_exact_moments_reproduce_tree_probabilities(model):
    spec, c_inf, ranks = exact_spectral_grammar(model)
    true, emis = true_grammar(model)
    sid = {s: i for i, s in enumerate(model.symbols)}
    trees = model.sample(40, seed=5)
    for t in trees:
        sym, left, right, word = _tree_nodes(t, sid)
        p_true = model.tree_probability(t)
        assert true.tree_weight(sym, left, right, _leaves(sym, word, emis)) == pytest.approx(p_true, rel=1e-9)
        p_hat = spec.tree_weight(sym, left, right, _leaves(sym, word, c_inf))
        assert p_hat == pytest.approx(p_true, rel=1e-6)


def _full_chart(model, words, table, sid):
    pre = [sid[p] for p in model.preterminals]
    phr = [sid[a] for a in model.nonterminals]
    items, w, off, vecs, pos = [], [], [], [], 0
    n = len(words)
    for i, x in enumerate(words):
        for p in pre:
            if (p, x) in table:
                items.append((i, i + 1, p))
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            items.extend((i, i + length, a) for a in phr)
    items = _sort_items(np.array(items))
    for (i, j, a) in items:
        if j == i + 1:
            v = np.asarray(table[(a, words[i])], dtype=np.float64)
            w.append(1.0)
            off.append(pos)
            vecs.append(v)
            pos += v.shape[0]
        else:
            w.append(0.0)
            off.append(-1)
    return items, np.array(w), np.array(off, dtype=np.int64), np.concatenate(vecs)


def test_exact_moments_reproduce_marginals(model):
    spec, c_inf, _ = exact_spectral_grammar(model)
    true, emis = true_grammar(model)
    sid = {s: i for i, s in enumerate(model.symbols)}
    sents = [t.leaves() for t in model.sample(6, seed=11, max_len=9)]
    for words in sents:
        it_t, w_t, o_t, tab_t = _full_chart(model, words, emis, sid)
        it_s, w_s, o_s, tab_s = _full_chart(model, words, c_inf, sid)
        assert np.array_equal(it_t, it_s)
        mu_t, Z_t, _ = tensor_inside_outside(true, [len(words)], [it_t], [w_t], [o_t], tab_t)
        mu_s, Z_s, _ = tensor_inside_outside(spec, [len(words)], [it_s], [w_s], [o_s], tab_s)
        if len(words) <= 6:
            assert Z_t[0] == pytest.approx(model.sentence_probability(words), rel=1e-9)
        assert Z_s[0] == pytest.approx(Z_t[0], rel=1e-6)
        np.testing.assert_allclose(mu_s[0], mu_t[0], rtol=1e-5, atol=1e-9)
        # true marginals are probabilities: the root cell sums to one
        root = (it_t[:, 0] == 0) & (it_t[:, 1] == len(words))
        assert mu_t[0][root].sum() == pytest.approx(1.0)


def test_truncating_states_breaks_exactness(model):
    # with fewer states than the rank the estimate is no longer exact (the test can fail)
    spec, c_inf, ranks = exact_spectral_grammar(model, n_states=1)
    sid = {s: i for i, s in enumerate(model.symbols)}
    t = model.sample(30, seed=2)
    errs = []
    for tr in t:
        sym, left, right, word = _tree_nodes(tr, sid)
        p_hat = spec.tree_weight(sym, left, right, _leaves(sym, word, c_inf))
        errs.append(abs(p_hat / model.tree_probability(tr) - 1))
    assert max(errs) > 1e-3
