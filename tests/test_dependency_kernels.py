"""Eisner and SHAG inside-outside kernels against brute-force enumeration of projective trees."""
import numpy as np
import pytest

from fastspectral.dependency.backoff import BackoffSHAG, next_state_table
from fastspectral.dependency.data import Encoded
from fastspectral.dependency.eisner import eisner, eisner_batch
from fastspectral.dependency.inference import arc_marginals, pair_offsets, unpack_square
from fastspectral.dependency.spectral import OperatorSHAG

from _dep_brute import all_projective_trees


def test_tree_counts():
    # number of projective dependency trees with a single root child: 1, 2, 7, 30, 143
    assert [len(all_projective_trees(n, True)) for n in range(1, 6)] == [1, 2, 7, 30, 143]
    # unrestricted root: 1, 3, 12, 55, 273
    assert [len(all_projective_trees(n, False)) for n in range(1, 6)] == [1, 3, 12, 55, 273]


@pytest.mark.parametrize("single_root", [False, True])
def test_eisner_matches_brute_force(single_root):
    rng = np.random.default_rng(0)
    mats, expected = [], []
    for n in [1, 2, 3, 4, 5, 5, 6, 6]:
        S = rng.normal(size=(n + 1, n + 1))
        trees = all_projective_trees(n, single_root)
        vals = [sum(S[h, m] for m, h in enumerate(t, 1)) for t in trees]
        mats.append(S)
        expected.append((trees[int(np.argmax(vals))], max(vals)))
    got = eisner_batch(mats, single_root=single_root, jobs=2)
    for S, g, (t, v) in zip(mats, got, expected):
        assert tuple(int(x) for x in g) == t
        assert sum(S[h, m] for m, h in enumerate(g, 1)) == pytest.approx(v)


def test_eisner_single_sentence_and_validation():
    S = np.full((4, 4), -5.0)
    S[0, 2] = S[2, 1] = S[2, 3] = 3.0
    assert list(eisner(S)) == [2, 0, 2]
    with pytest.raises(ValueError):
        eisner(np.zeros((3, 4)))


def _tree_weight(op, hsym, msym, cls, lw, ls, nxt, heads):
    n = len(heads)
    w = 1.0
    for h in range(n + 1):
        for d in (0, 1):
            if h == 0 and d == 0:
                continue
            if d == 0:
                mods = [m for m in range(h - 1, 0, -1) if heads[m - 1] == h]
            else:
                mods = [m for m in range(h + 1, n + 1) if heads[m - 1] == h]
            v = op.alpha1[hsym[h], d]
            k = 0
            dw = 1.0
            for m in mods:
                v = op.A[hsym[h], d, msym[m]] @ v
                dw *= lw[h, m, k]
                k = nxt[k, cls[m]]
            w *= float(op.beta[hsym[h], d] @ v) * dw * ls[h, d, k]
    return w


class _FixedDet(BackoffSHAG):
    """A deterministic part with given per-sentence weights (for testing the kernel)."""

    def __init__(self, kind, lws, lss):
        super().__init__(kind)
        self._lws, self._lss = lws, lss

    def weights(self, enc, pair_off, power=1.0):
        return (np.concatenate([x.ravel() for x in self._lws]),
                np.concatenate([x.ravel() for x in self._lss]))


def _random_problem(rng, lengths, H=4, M=3, N=3, kind="fcp", negative=True):
    op = OperatorSHAG(rng.normal(size=(H, 2, N)) if negative else rng.random((H, 2, N)),
                      rng.normal(size=(H, 2, N)) if negative else rng.random((H, 2, N)),
                      (rng.normal(size=(H, 2, M, N, N)) if negative
                       else rng.random((H, 2, M, N, N))) * 0.7)
    nxt = next_state_table(kind)
    K = nxt.shape[0]
    tok_off = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lengths) + 1, out=tok_off[1:])
    hsym, msym, cls, lws, lss = [], [], [], [], []
    for n in lengths:
        t = rng.integers(0, M, size=n)
        hsym += [0] + list(t + 1)
        msym += [0] + list(t)
        cls += [0] + list(rng.integers(0, 3, size=n))
        lws.append(rng.random((n + 1, n + 1, K)) + 0.1)
        lss.append(rng.random((n + 1, 2, K)) + 0.1)
    enc = Encoded(tok_off, np.array(hsym, np.int32), np.array(msym, np.int32),
                  np.array(cls, np.int32), np.full(len(hsym), -1, np.int32),
                  np.full(len(hsym), -1, np.int64))
    return op, _FixedDet(kind, lws, lss), enc, nxt


@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("negative", [False, True])
def test_inside_outside_matches_brute_force(single_root, negative):
    rng = np.random.default_rng(1 + single_root + 2 * negative)
    lengths = [1, 2, 3, 4, 5]
    op, det, enc, nxt = _random_problem(rng, lengths, negative=negative)
    res = arc_marginals(op, det, enc, single_root=single_root, jobs=2)
    mu, pair_off, logz, status = res.mu, res.pair_off, res.logz, res.status
    assert (status == 0).all()
    for b, n in enumerate(lengths):
        o = enc.tok_off[b]
        hs, ms, cs = (enc.hsym[o:o + n + 1], enc.msym[o:o + n + 1], enc.cls[o:o + n + 1])
        lw, ls = det._lws[b], det._lss[b]
        Z = 0.0
        marg = np.zeros((n + 1, n + 1))
        for t in all_projective_trees(n, single_root):
            w = _tree_weight(op, hs, ms, cs, lw, ls, nxt, t)
            Z += w
            for m, h in enumerate(t, 1):
                marg[h, m] += w
        assert logz[b] == pytest.approx(np.log(abs(Z)), rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(unpack_square(mu, pair_off, b), marg / Z, rtol=1e-7,
                                   atol=1e-9)


def test_inside_outside_operator_only_and_scaling():
    """Without a deterministic part; long sentences with tiny weights do not underflow."""
    rng = np.random.default_rng(5)
    op, _, enc, _ = _random_problem(rng, [4, 120], negative=False)
    small = OperatorSHAG(op.alpha1, op.beta, op.A * 1e-4)
    r1 = arc_marginals(op, None, enc, jobs=1)
    r2 = arc_marginals(small, None, enc, jobs=2)
    mu1, off, logz1, st1 = r1.mu, r1.pair_off, r1.logz, r1.status
    mu2, logz2, st2 = r2.mu, r2.logz, r2.status
    assert (st1 == 0).all() and (st2 == 0).all()
    np.testing.assert_allclose(mu1, mu2, rtol=1e-8, atol=1e-12)
    # each tree has exactly n arcs: log Z shifts by n log 1e-4
    np.testing.assert_allclose(logz2 - logz1, (np.diff(enc.tok_off) - 1) * np.log(1e-4),
                               rtol=1e-9)
    M = unpack_square(mu1, off, 1)
    np.testing.assert_allclose(M.sum(axis=0)[1:], 1.0, rtol=1e-9)   # one head per word
    assert logz2[1] < -1000                                            # far below float range


def test_zero_weight_sentence_reports_status():
    rng = np.random.default_rng(3)
    op, _, enc, _ = _random_problem(rng, [3], negative=False)
    dead = OperatorSHAG(op.alpha1, np.zeros_like(op.beta), op.A)
    res = arc_marginals(dead, None, enc)
    mu, status = res.mu, res.status
    assert status[0] == 1 and np.all(mu == 0)
    assert pair_offsets(enc)[-1] == 16


def test_arc_mask_prunes_arcs():
    rng = np.random.default_rng(7)
    lengths = [4]
    op, det, enc, nxt = _random_problem(rng, lengths, negative=False)
    n = 4
    mask = np.ones((n + 1) * (n + 1))
    mask[0 * (n + 1) + 2] = 0.0          # forbid root -> 2
    mask[3 * (n + 1) + 4] = 0.0          # forbid 3 -> 4
    res = arc_marginals(op, det, enc, single_root=True, arc_mask=mask)
    mu, off = res.mu, res.pair_off
    M = unpack_square(mu, off, 0)
    assert M[0, 2] == 0.0 and M[3, 4] == 0.0
    np.testing.assert_allclose(M[:, 1:].sum(axis=0), 1.0)
    hs, ms, cs = enc.hsym, enc.msym, enc.cls
    Z, marg = 0.0, np.zeros((n + 1, n + 1))
    for t in all_projective_trees(n, True):
        if t[1] == 0 or t[3] == 3:
            continue
        w = _tree_weight(op, hs, ms, cs, det._lws[0], det._lss[0], nxt, t)
        Z += w
        for m, h in enumerate(t, 1):
            marg[h, m] += w
    np.testing.assert_allclose(M, marg / Z, rtol=1e-9, atol=1e-12)
