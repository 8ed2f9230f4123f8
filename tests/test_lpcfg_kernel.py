"""Tensor inside-outside kernel (fastspectral._ext.tensor_chart) against brute-force enumeration."""

import numpy as np
import pytest

from fastspectral.lpcfg.params import LatentGrammar, _sort_items, tensor_inside_outside

# symbols: 0 S, 1 A, 2 X (unary parent), 3 P, 4 Q (preterminals)
PRE = {3, 4}
BIN = [(0, 1, 3), (0, 3, 4), (1, 3, 4), (1, 1, 3), (0, 0, 4), (1, 2, 4), (0, 2, 3), (1, 4, 1),
       (2, 3, 4)]
UN = [(2, 3), (2, 4)]


def _tiny(seed, m=(2, 3, 2, 2, 1), signed=True):
    rng = np.random.default_rng(seed)
    draw = (lambda *s: rng.normal(size=s)) if signed else (lambda *s: rng.uniform(0.1, 1, size=s))
    tensors = [draw(m[a], m[b], m[c]) for a, b, c in BIN]
    unary = [draw(m[a], m[p]) for a, p in UN]
    roots = {0: draw(m[0]), 2: draw(m[2])}
    g = LatentGrammar(np.array(m), [r[0] for r in BIN], [r[1] for r in BIN], [r[2] for r in BIN],
                      tensors, [u[0] for u in UN], [u[1] for u in UN], unary, roots)
    return g, rng, draw


def _brute(g, n, allowed, leaf):
    """All derivations over the allowed items: returns Z and item -> summed weight."""
    memo = {}

    def derivs(i, j, a):
        key = (i, j, a)
        if key in memo:
            return memo[key]
        out = []
        if key in allowed:
            if j == i + 1:
                if a in PRE:
                    out.append((leaf[(i, a)], frozenset([key])))
                for u, (x, p) in enumerate(UN):
                    if x == a and (i, j, p) in allowed:
                        for v, st in derivs(i, j, p):
                            out.append((g.unary(u) @ v, st | {key}))
            for r, (x, b, c) in enumerate(BIN):
                if x != a:
                    continue
                for k in range(i + 1, j):
                    for vb, sb in derivs(i, k, b):
                        for vc, sc in derivs(k, j, c):
                            v = np.einsum("hij,i,j->h", g.tensor(r), vb, vc)
                            out.append((v, sb | sc | {key}))
        memo[key] = out
        return out

    Z = 0.0
    marg = {}
    for a in range(g.S):
        c1 = g.root(a)
        if c1 is None:
            continue
        for v, st in derivs(0, n, a):
            w = float(c1 @ v)
            Z += w
            for it in st:
                marg[it] = marg.get(it, 0.0) + w
    return Z, marg


def _chart(g, rng, n, keep):
    items = [(i, j, a) for i in range(n) for j in range(i + 1, n + 1) for a in range(g.S)
             if (j - i == 1 or a not in PRE)]
    items = [it for it in items if rng.uniform() < keep or it[1] - it[0] == n]
    items = _sort_items(np.array(items))
    leaf = {}
    table, w, off = [], [], []
    pos = 0
    for (i, j, a) in items:
        if j == i + 1 and a in PRE:
            vec = rng.uniform(0.2, 1.0, size=g.m[a])
            leaf[(i, a)] = 0.5 * vec
            table.append(vec)
            w.append(0.5)
            off.append(pos)
            pos += g.m[a]
        else:
            w.append(0.0)
            off.append(-1)
    return items, leaf, np.array(w), np.array(off, dtype=np.int64), np.concatenate(table)


@pytest.mark.parametrize("m", [(2, 3, 2, 2, 1), (1, 1, 1, 1, 1)])
@pytest.mark.parametrize("seed,n,keep", [(0, 1, 1.0), (1, 2, 1.0), (2, 3, 1.0), (3, 4, 1.0),
                                         (4, 4, 0.7), (5, 5, 0.6), (6, 3, 0.8)])
def test_matches_brute_force(seed, n, keep, m):
    """Latent states (edge-storing kernel) and one state per symbol (scalar PCFG kernel)."""
    g, rng, _ = _tiny(seed, m=m)
    items, leaf, w, off, table = _chart(g, rng, n, keep)
    allowed = {tuple(int(x) for x in it) for it in items}
    Z, marg = _brute(g, n, allowed, leaf)
    mus, Zk, status = tensor_inside_outside(g, [n], [items], [w], [off], table)
    assert status[0] == 0
    assert Zk[0] == pytest.approx(Z, rel=1e-10, abs=1e-12)
    if abs(Z) > 1e-9:
        for it, mu in zip(items, mus[0]):
            assert mu == pytest.approx(marg.get(tuple(int(x) for x in it), 0.0) / Z,
                                       rel=1e-8, abs=1e-9)


def test_batch_and_threads_agree_with_single_sentences():
    g, rng, _ = _tiny(11, signed=False)
    charts = [_chart(g, rng, n, 0.8) for n in (1, 3, 5, 6, 2, 7, 4)]
    lens = [1, 3, 5, 6, 2, 7, 4]
    args = [list(x) for x in zip(*[(c[0], c[2], c[3]) for c in charts])]
    # leaf offsets index one shared table
    tables, shifted, pos = [], [], 0
    for c in charts:
        shifted.append(np.where(c[3] >= 0, c[3] + pos, -1))
        tables.append(c[4])
        pos += c[4].shape[0]
    table = np.concatenate(tables)
    mus1, Z1, _ = tensor_inside_outside(g, lens, args[0], args[1], shifted, table, n_threads=1)
    mus2, Z2, _ = tensor_inside_outside(g, lens, args[0], args[1], shifted, table, n_threads=2)
    for s, c in enumerate(charts):
        mu, Z, _ = tensor_inside_outside(g, [lens[s]], [c[0]], [c[2]], [c[3]], c[4])
        assert Z1[s] == pytest.approx(Z[0], rel=1e-12)
        assert Z2[s] == pytest.approx(Z[0], rel=1e-12)
        np.testing.assert_allclose(mus1[s], mu[0], rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(mus2[s], mu[0], rtol=1e-10, atol=1e-14)


def test_positive_model_marginals_are_probabilities_and_tree_weight():
    # with nonnegative parameters every marginal lies in [0, 1] and the root cell sums to 1
    g, rng, _ = _tiny(21, signed=False)
    n = 5
    items, leaf, w, off, table = _chart(g, rng, n, 1.0)
    mus, Z, _ = tensor_inside_outside(g, [n], [items], [w], [off], table)
    mu = mus[0]
    assert np.all(mu >= -1e-12) and np.all(mu <= 1 + 1e-9)
    root = (items[:, 0] == 0) & (items[:, 1] == n)
    assert mu[root].sum() == pytest.approx(1.0)
    # each word position is covered by exactly one preterminal in every derivation
    for i in range(n):
        sel = (items[:, 0] == i) & (items[:, 1] == i + 1) & np.isin(items[:, 2], list(PRE))
        assert mu[sel].sum() == pytest.approx(1.0)
    # single-tree scoring agrees with a chart restricted to that tree (no unary alternatives)
    # tree: S -> (A -> P Q) P over 3 words
    sym = [0, 1, 3, 4, 3]
    left = [1, 2, -1, -1, -1]
    right = [4, 3, -1, -1, -1]
    lv = [rng.uniform(0.2, 1, g.m[s]) for s in sym]
    leafs = [None, None, lv[2], lv[3], lv[4]]
    wt = g.tree_weight(sym, left, right, leafs)
    t = g.tensor(g.rule_index(0, 1, 3))
    a_ = np.einsum("hij,i,j->h", g.tensor(g.rule_index(1, 3, 4)), lv[2], lv[3])
    assert wt == pytest.approx(float(g.root(0) @ np.einsum("hij,i,j->h", t, a_, lv[4])))


def test_empty_and_rootless_charts():
    g, rng, _ = _tiny(3)
    # only preterminals: no derivation reaches the root
    items = _sort_items(np.array([[0, 1, 3], [1, 2, 4]]))
    mus, Z, status = tensor_inside_outside(g, [2], [items], [np.ones(2)], [np.array([0, 2])],
                                           np.ones(3))
    assert Z[0] == 0.0 and np.all(mus[0] == 0.0) and status[0] == 0
    mus, Z, status = tensor_inside_outside(g, [0], [np.zeros((0, 3), np.int32)], [np.zeros(0)],
                                           [np.zeros(0, np.int64)], np.zeros(0))
    assert Z.shape == (1,) and Z[0] == 0.0


def test_sort_items_orders_and_dedups():
    items = np.array([[0, 3, 1], [1, 2, 4], [0, 1, 3], [1, 2, 4], [0, 2, 0], [1, 3, 0]])
    s = _sort_items(items)
    assert s.tolist() == [[0, 1, 3], [1, 2, 4], [0, 2, 0], [1, 3, 0], [0, 3, 1]]
