"""The compiled pieces of the spectral L-PCFG's training path: the binary rule moments
(fastspectral.lpcfg.fast_moments) against the NumPy reference smoothed_triple, the feature
matrices against a direct construction, and the garbage-collector pauses of reading and fitting
(fastspectral._gc): the collector's state is restored whatever happens."""
import gc
import io
import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from fastspectral import _gc
from fastspectral.lpcfg.estimate import smoothed_triple
from fastspectral.lpcfg.fast_moments import Projections, binary_rule_tensors
from fastspectral.lpcfg.features import feature_matrices
from fastspectral.trees import read_ptb


def _random_problem(seed, n_nodes_per_rule=(3, 1, 300, 129, 7)):
    """Symbols 0..3 with states (3, 1, 4, 2); rules over them with the given node counts;
    every node of a rule has a left and a right child of the rule's symbols."""
    rng = np.random.default_rng(seed)
    m = np.array([3, 1, 4, 2], dtype=np.int64)
    rules = [(0, 2, 3), (2, 1, 3), (0, 0, 2), (3, 2, 2), (2, 3, 1)]
    bin_parent = np.array([r[0] for r in rules], dtype=np.int32)
    bin_left = np.array([r[1] for r in rules], dtype=np.int32)
    bin_right = np.array([r[2] for r in rules], dtype=np.int32)
    label, left, right, rule = [], [], [], []
    for r, (a, b, c) in enumerate(rules):
        for _ in range(n_nodes_per_rule[r]):
            i = len(label)
            label += [a, b, c]
            left += [i + 1, -1, -1]
            right += [i + 2, -1, -1]
            rule += [r, -1, -1]
    label = np.array(label, dtype=np.int32)
    perm = rng.permutation(label.shape[0])          # nodes in no particular order
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.shape[0])
    label = label[perm]
    left = np.array(left)[perm]
    right = np.array(right)[perm]
    left = np.where(left >= 0, inv[np.maximum(left, 0)], -1).astype(np.int32)
    right = np.where(right >= 0, inv[np.maximum(right, 0)], -1).astype(np.int32)
    rule = np.array(rule)[perm]
    counts = np.bincount(label, minlength=4)
    order_l = np.argsort(label, kind="stable")
    rowpos = np.empty(label.shape[0], dtype=np.int64)
    rowpos[order_l] = np.arange(label.shape[0])
    row_ptr = np.concatenate([[0], np.cumsum(counts)])
    pos = rowpos - row_ptr[label]
    proj = Projections(counts, m)
    for a in range(4):
        proj.set(a, rng.normal(size=(counts[a], m[a])), rng.normal(size=(counts[a], m[a])))
    bn = np.flatnonzero(rule >= 0)
    R = len(rules)
    rcount = np.bincount(rule[bn], minlength=R)
    order = bn[np.argsort(rule[bn], kind="stable")]
    rptr = np.concatenate([[0], np.cumsum(rcount)]).astype(np.int64)
    toff = np.concatenate([[0], np.cumsum(m[bin_parent] * m[bin_left] * m[bin_right])])
    g = SimpleNamespace(bin_parent=bin_parent, bin_left=bin_left, bin_right=bin_right)
    nodes = SimpleNamespace(label=label, left=left, right=right)
    return SimpleNamespace(g=g, nodes=nodes, proj=proj, pos=pos, order=order, rptr=rptr,
                           toff=toff.astype(np.int64), rcount=rcount, counts=counts, m=m)


@pytest.mark.parametrize("C", [0.0, 30.0, 2.5])
def test_binary_rule_tensors_match_smoothed_triple(C):
    p = _random_problem(0)
    R = p.g.bin_parent.shape[0]
    weight = p.rcount / p.counts[p.g.bin_parent]
    out = np.full(int(p.toff[-1]), np.nan)
    rules = np.arange(R)
    binary_rule_tensors(rules, p.order, p.rptr, p.nodes, p.g, p.proj, p.pos, weight, C, p.toff,
                        out)
    for r in range(R):
        a, b, c = p.g.bin_parent[r], p.g.bin_left[r], p.g.bin_right[r]
        idx = p.order[p.rptr[r]:p.rptr[r + 1]]
        ref = smoothed_triple(p.proj.Z[a][p.pos[idx]], p.proj.Y[b][p.pos[p.nodes.left[idx]]],
                              p.proj.Y[c][p.pos[p.nodes.right[idx]]], C) * weight[r]
        np.testing.assert_allclose(out[p.toff[r]:p.toff[r + 1]], ref.ravel(), rtol=1e-12,
                                   atol=1e-14, err_msg=f"rule {r}")


@pytest.mark.parametrize("C", [30.0, 2.5])
def test_binary_rule_tensors_symbol_backoff_match_smoothed_triple(C):
    p = _random_problem(3)
    R = p.g.bin_parent.shape[0]
    weight = p.rcount / p.counts[p.g.bin_parent]
    means = tuple(np.concatenate([P[a].mean(0) for a in range(4)]) for P in (p.proj.Y, p.proj.Z))
    out = np.full(int(p.toff[-1]), np.nan)
    binary_rule_tensors(np.arange(R), p.order, p.rptr, p.nodes, p.g, p.proj, p.pos, weight, C,
                        p.toff, out, means)
    two = np.full(int(p.toff[-1]), np.nan)
    binary_rule_tensors(np.arange(R), p.order, p.rptr, p.nodes, p.g, p.proj, p.pos, weight, C,
                        p.toff, two)
    assert not np.allclose(out, two)
    for r in range(R):
        a, b, c = p.g.bin_parent[r], p.g.bin_left[r], p.g.bin_right[r]
        idx = p.order[p.rptr[r]:p.rptr[r + 1]]
        sym = (p.proj.Z[a].mean(0), p.proj.Y[b].mean(0), p.proj.Y[c].mean(0))
        ref = smoothed_triple(p.proj.Z[a][p.pos[idx]], p.proj.Y[b][p.pos[p.nodes.left[idx]]],
                              p.proj.Y[c][p.pos[p.nodes.right[idx]]], C, sym) * weight[r]
        np.testing.assert_allclose(out[p.toff[r]:p.toff[r + 1]], ref.ravel(), rtol=1e-12,
                                   atol=1e-14, err_msg=f"rule {r}")


def test_symbol_backoff_is_the_three_level_formula():
    """smoothed_triple with symbol means against the formula of Cohen et al. (2013), section
    3.2, written out with einsum: lam E3 + (1 - lam) (lam F + (1 - lam) K)."""
    rng = np.random.default_rng(4)
    n, C = 9, 4.0
    z, y2, y3 = rng.normal(size=(n, 3)), rng.normal(size=(n, 2)), rng.normal(size=(n, 4))
    h, f2, f3 = rng.normal(size=3), rng.normal(size=2), rng.normal(size=4)
    lam = np.sqrt(n) / (C + np.sqrt(n))
    E3 = np.einsum("ni,nj,nk->ijk", z, y2, y3) / n
    e1, e2, e3 = z.mean(0), y2.mean(0), y3.mean(0)
    F = (np.einsum("ij,k->ijk", z.T @ y2 / n, e3) + np.einsum("ik,j->ijk", z.T @ y3 / n, e2)
         + np.einsum("i,jk->ijk", e1, y2.T @ y3 / n)) / 3
    K = lam * np.einsum("i,j,k->ijk", e1, e2, e3) + (1 - lam) * np.einsum("i,j,k->ijk", h, f2, f3)
    want = lam * E3 + (1 - lam) * (lam * F + (1 - lam) * K)
    np.testing.assert_allclose(smoothed_triple(z, y2, y3, C, (h, f2, f3)), want, rtol=1e-12)
    # a huge C leaves only the product of the symbols' means
    np.testing.assert_allclose(smoothed_triple(z, y2, y3, 1e12, (h, f2, f3)),
                               np.einsum("i,j,k->ijk", h, f2, f3), rtol=1e-9, atol=1e-12)


def test_binary_rule_tensors_only_listed_rules_written():
    p = _random_problem(1)
    weight = np.ones(5)
    out = np.full(int(p.toff[-1]), -7.0)
    binary_rule_tensors(np.array([1, 3]), p.order, p.rptr, p.nodes, p.g, p.proj, p.pos, weight,
                        1.0, p.toff, out)
    for r in (0, 2, 4):
        assert np.all(out[p.toff[r]:p.toff[r + 1]] == -7.0)
    for r in (1, 3):
        assert not np.any(out[p.toff[r]:p.toff[r + 1]] == -7.0)


def test_binary_rule_tensors_checks_indices():
    p = _random_problem(2)
    out = np.zeros(int(p.toff[-1]))
    w = np.ones(5)
    args = (p.order, p.rptr, p.nodes, p.g, p.proj, p.pos, w, 1.0, p.toff, out)
    with pytest.raises(ValueError, match="rule id"):
        binary_rule_tensors(np.array([5]), *args)
    bad_nodes = SimpleNamespace(label=p.nodes.label, left=p.nodes.left.copy(),
                                right=p.nodes.right)
    first = p.order[p.rptr[0]]
    bad_nodes.left[first] = p.nodes.right[first]          # a child of the wrong symbol
    with pytest.raises(ValueError, match="symbols differ"):
        binary_rule_tensors(np.array([0]), p.order, p.rptr, bad_nodes, p.g, p.proj, p.pos, w,
                            1.0, p.toff, out)
    bad_pos = p.pos.copy()
    bad_pos[first] = 10 ** 6
    with pytest.raises(ValueError, match="outside its symbol's block"):
        binary_rule_tensors(np.array([0]), p.order, p.rptr, p.nodes, p.g, p.proj, bad_pos, w,
                            1.0, p.toff, out)
    with pytest.raises(ValueError, match="toff"):
        binary_rule_tensors(np.array([0]), p.order, p.rptr, p.nodes, p.g, p.proj, p.pos, w,
                            1.0, p.toff + np.arange(6), out)
    empty_rptr = p.rptr.copy()
    empty_rptr[1] = empty_rptr[0]                           # rule 0 without nodes ...
    with pytest.raises(ValueError, match="no nodes"):
        binary_rule_tensors(np.array([0]), p.order, empty_rptr, p.nodes, p.g, p.proj, p.pos,
                            w, 1.0, p.toff, out)


def _feature_matrices_direct(keys, label, S, kappa):
    """The definition, one node and one key at a time."""
    N = keys.shape[0]
    node_order = sorted(range(N), key=lambda i: (label[i], i))
    feats = sorted({(int(label[i]), int(k)) for i in range(N) for k in keys[i] if k != 0})
    fid = {f: j for j, f in enumerate(feats)}
    count = np.zeros(len(feats))
    for i in range(N):
        for k in keys[i]:
            if k != 0:
                count[fid[(int(label[i]), int(k))]] += 1
    M = np.bincount(label, minlength=S)
    X = np.zeros((N, len(feats)))
    for r, i in enumerate(node_order):
        for k in keys[i]:
            if k != 0:
                f = fid[(int(label[i]), int(k))]
                X[r, f] += np.sqrt(M[label[i]] / (count[f] + kappa))
    return X, np.array(node_order)


def test_feature_matrices_against_the_definition():
    rng = np.random.default_rng(3)
    N, S = 300, 5
    label = rng.integers(0, S - 1, N).astype(np.int32)        # symbol S - 1 has no node
    keys = rng.integers(-3, 12, size=(N, 4)).astype(np.int64)  # negative keys, zeros, repeats
    X, row_ptr, col_ptr, node_order, rowpos = feature_matrices(keys, label, S, 2.0)
    ref, ref_order = _feature_matrices_direct(keys, label, S, 2.0)
    np.testing.assert_array_equal(node_order, ref_order)
    np.testing.assert_array_equal(rowpos[node_order], np.arange(N))
    np.testing.assert_allclose(X.toarray(), ref, rtol=1e-15)
    assert X.has_sorted_indices
    np.testing.assert_array_equal(row_ptr, np.concatenate([[0], np.cumsum(np.bincount(
        label, minlength=S))]))
    assert col_ptr[-1] == X.shape[1] and col_ptr[-2] == col_ptr[-1]
    Xe, *_ = feature_matrices(np.zeros((0, 4), dtype=np.int64), np.zeros(0, np.int32), S, 1.0)
    assert Xe.shape == (0, 0)


# ----------------------------------------------------------------------------- the GC pauses
_PTB = "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))\n" * 3


def test_gc_paused_restores_state():
    assert gc.isenabled()
    with _gc.paused():
        assert not gc.isenabled()
        with _gc.paused():                 # nested: the inner one leaves it off
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with _gc.paused():
            raise RuntimeError("boom")
    assert gc.isenabled()


def test_read_ptb_runs_the_caller_with_gc_on():
    states = [gc.isenabled() for _ in read_ptb(io.StringIO(_PTB))]
    assert states == [True, True, True] and gc.isenabled()
    it = read_ptb(io.StringIO(_PTB))
    next(it)
    it.close()                              # abandoned midway
    assert gc.isenabled()
    gc.disable()                            # the caller's own choice is kept
    try:
        assert len(list(read_ptb(io.StringIO(_PTB)))) == 3
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(Exception):
        list(read_ptb(io.StringIO("(S (NP x)\n(S y))) )")))
    assert gc.isenabled()


def test_spectral_fit_restores_gc():
    from fastspectral.lpcfg import SpectralLPCFG

    trees = list(itertools.islice(read_ptb(io.StringIO(_PTB * 10)), 30))
    SpectralLPCFG(n_states=2, min_count=1, jobs=1).fit(trees)
    assert gc.isenabled()
    with pytest.raises(TypeError):
        SpectralLPCFG(jobs=1).fit(["not a tree"])
    assert gc.isenabled()
