"""Spectral SHAG learner internals: sequence merging, small dense linear algebra, and the
learner against a dense NumPy implementation of the same randomised algorithm."""
from collections import Counter

import numpy as np
import pytest

from fastspectral.dependency.data import Encoded, SequenceData
from fastspectral.dependency.spectral import (_bigram_counts, _distinct_sequences,
                                              _flat_sequences, _hankel_counts,
                                              hankel_basis, learn_spectral)
from fastspectral.linalg.svd import sym_eig as _sym_eig, wide_svd as _wide_svd


def _synthetic(M, nseq, maxlen, seed, nheads=None):
    """Random head-modifier sequences (per-head Markov chains over M tags), encoded directly:
    sequence q belongs to position q, whose head symbol is random."""
    rng = np.random.default_rng(seed)
    H = M + 1
    nheads = nheads or H
    hsym = rng.integers(0, nheads, size=nseq).astype(np.int32)
    trans = rng.dirichlet(np.ones(M) * 0.3, size=(nheads, M + 1))
    lens = np.minimum(rng.geometric(0.45, size=nseq) - 1, maxlen)
    long_ = rng.random(nseq) < 0.02
    lens[long_] = rng.integers(maxlen // 2, maxlen + 1, size=long_.sum())
    tags = []
    for q in range(nseq):
        prev = M
        for _ in range(lens[q]):
            prev = rng.choice(M, p=trans[hsym[q], prev])
            tags.append(prev)
    msym = np.array(tags + [0], dtype=np.int32)
    starts = np.zeros(nseq, dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    enc = Encoded(tok_off=np.array([0, nseq]), hsym=hsym, msym=msym,
                  cls=np.zeros(len(msym), np.int32), wid=np.zeros(len(msym), np.int32),
                  heads=np.zeros(len(msym), np.int64))
    seqs = SequenceData(seq_pos=np.arange(nseq, dtype=np.int64),
                        seq_dir=rng.integers(0, 2, size=nseq).astype(np.int32),
                        seq_start=starts, seq_len=lens.astype(np.int64),
                        mods=np.arange(len(tags), dtype=np.int64))
    return enc, seqs, H, M


def _distinct(enc, seqs, M, H):
    return _distinct_sequences(enc.hsym, enc.msym, seqs.seq_pos, seqs.seq_dir, seqs.seq_start,
                               seqs.seq_len, seqs.mods, M, 2 * H)


# (M, sequences, max length, heads): single-modifier table; long sequences (hashed, not
# bit-packed); a tag set too large for the table (every sequence hashed)
@pytest.mark.parametrize("M,nseq,maxlen,nheads", [(20, 3000, 12, None), (3, 2000, 60, None),
                                                  (400, 3000, 4, 40)])
def test_distinct_sequences_merge_exactly(M, nseq, maxlen, nheads):
    enc, seqs, H, M = _synthetic(M, nseq, maxlen, 1, nheads)
    dlen, doff, dw, dtags, order, gstart, big = _distinct(enc, seqs, M, H)
    got = Counter()
    for g in range(2 * H):
        for q in order[gstart[g]:gstart[g + 1]]:
            key = (g, tuple(int(t) for t in dtags[doff[q]:doff[q] + dlen[q]]))
            assert key not in got
            got[key] = int(dw[q])
    ref = Counter()
    for q in range(len(seqs.seq_len)):
        g = int(enc.hsym[seqs.seq_pos[q]]) * 2 + int(seqs.seq_dir[q])
        s0 = seqs.seq_start[q]
        ref[(g, tuple(int(t) for t in enc.msym[seqs.mods[s0:s0 + seqs.seq_len[q]]]))] += 1
    assert got == ref
    grp, dirs, starts, lens, tags = _flat_sequences(enc, seqs)
    assert np.array_equal(big, _bigram_counts(tags, starts, lens, dirs, M))


def test_distinct_sequences_without_modifiers():
    enc, seqs, H, M = _synthetic(5, 50, 0, 2)
    assert seqs.seq_len.sum() == 0
    dlen, doff, dw, dtags, order, gstart, big = _distinct(enc, seqs, M, H)
    assert dw.sum() == 50 and not dlen.any() and len(dtags) == 0


def test_small_dense_linear_algebra():
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 13):
        for t in range(20):
            B = rng.standard_normal((n, n)) * 10.0 ** rng.uniform(-8, 0, size=n)
            A = B @ B.T if t % 3 else np.full((n, n), 2.0)
            w, V = _sym_eig(A)
            assert np.all(np.diff(w) >= 0)
            assert np.allclose(V.T @ V, np.eye(n), atol=1e-13)
            assert np.allclose(V @ np.diag(w) @ V.T, A, atol=1e-13 * np.abs(A).max())
    # graded singular values down to 1e-7: each one to relative accuracy, as LAPACK's
    for k, c in ((5, 5), (13, 40)):
        Qa, _ = np.linalg.qr(rng.standard_normal((k, k)))
        Qb, _ = np.linalg.qr(rng.standard_normal((c, k)))
        sv = 10.0 ** -np.linspace(0, 7, k)
        Bm = (Qa * sv) @ Qb.T
        U, s, Vt = _wide_svd(Bm, 1e-9)
        assert np.allclose(s, sv, rtol=1e-8, atol=0)
        assert np.allclose((U * s) @ Vt, Bm, atol=1e-15)
        ref = np.linalg.svd(Bm)[0]
        assert np.allclose(np.abs(np.sum(U * ref, axis=0)), 1.0, atol=1e-9)


def _dense_reference(enc, seqs, H, M, N, basis=2, max_basis=32, rcond=1e-6, noise=0.0,
                     scaled=False, power=1, seed=0):
    """The learner's algorithm on dense arrays: dense Hankel blocks ``P`` and ``P_a``,
    compacted to their non-zero rows and columns; top-``n`` factors by the same seeded
    randomised range finder (Householder QR, LAPACK SVD), or an exact SVD when the block
    has at most ``N+5`` non-zero rows or columns."""
    grp, dirs, starts, lens, tags = _flat_sequences(enc, seqs)
    G, B = 2 * H, M + 2
    pmap2, smap2, Np, Ns = hankel_basis(_bigram_counts(tags, starts, lens, dirs, M), M, basis,
                                        max_basis)
    P = np.zeros((G, Ns, Np))
    _hankel_counts(tags, starts, lens, dirs, grp, pmap2, smap2, M, P)
    Pa = np.zeros((G, M, Ns, Np))
    for q in range(len(lens)):
        z = [M] + [int(t) for t in tags[starts[q]:starts[q] + lens[q]]] + [M + 1]
        d, g = dirs[q], grp[q]
        for j in range(1, len(z) - 1):     # a = z[j]: prefixes end at j-1, suffixes start at j+1
            pre = [z[j - 1]] + ([pmap2[d, z[j - 2] * B + z[j - 1]]] if j >= 2 else [])
            suf = [min(z[j + 1], M)] + ([smap2[d, z[j + 1] * B + z[j + 2]]]
                                        if j + 2 < len(z) else [])
            for p in pre:
                for s in suf:
                    if p >= 0 and s >= 0:
                        Pa[g, z[j], s, p] += 1.0
    nseq = np.bincount(grp, minlength=G).astype(float)
    k = min(N + 5, Ns, Np)
    n = min(N, k)
    alpha1, beta, A = np.zeros((G, N)), np.zeros((G, N)), np.zeros((G, M, N, N))
    n_random = 0
    for g in np.nonzero(nseq)[0]:
        Pg = P[g] / nseq[g]
        rows, cols = np.nonzero(Pg.any(axis=1))[0], np.nonzero(Pg.any(axis=0))[0]
        if scaled:
            eps = 1e-3 / nseq[g]
            dr = 1.0 / np.sqrt(Pg.sum(axis=1) + eps)
            dc = 1.0 / np.sqrt(Pg.sum(axis=0) + eps)
        else:
            dr, dc = np.ones(Ns), np.ones(Np)
        C = (dr[:, None] * Pg * dc[None, :])[np.ix_(rows, cols)]
        if min(C.shape) <= k:
            Uc, s, Vt = np.linalg.svd(C, full_matrices=False)
        else:
            n_random += 1
            Om = np.random.default_rng(seed).standard_normal((len(cols), k))
            Y = np.linalg.qr(C @ Om)[0]
            for _ in range(power):
                Y = np.linalg.qr(C @ np.linalg.qr(C.T @ Y)[0])[0]
            Ub, s, Vt = np.linalg.svd(Y.T @ C, full_matrices=False)
            Uc = Y @ Ub
        m = min(n, len(s))
        keep = s[:m] > rcond * s[0]
        if noise > 0:
            keep &= (s[:m] > noise / np.sqrt(nseq[g])) | (np.arange(m) == 0)
        U = np.zeros((Ns, n))
        X = np.zeros((Np, n))
        U[rows, :m] = Uc[:, :m] * keep * dr[rows, None]
        X[cols, :m] = Vt[:m].T * np.where(keep, 1.0 / s[:m], 0.0) * dc[cols, None]
        alpha1[g, :n] = U.T @ Pg[:, M]
        beta[g, :n] = Pg[M, :] @ X
        A[g, :, :n, :n] = np.einsum("sk,asp,pl->akl", U, Pa[g], X) / nseq[g]
    return (alpha1.reshape(H, 2, N), beta.reshape(H, 2, N), A.reshape(H, 2, M, N, N),
            n_random)


@pytest.mark.parametrize("N,kw", [(3, {}), (4, dict(scaled=True)), (3, dict(noise=0.3)),
                                  (2, dict(basis=1, power=0)), (5, dict(power=2, rcond=1e-3))])
def test_learner_matches_dense_randomised_reference(N, kw):
    """Blocks larger than N+5 go through the randomised range finder: same seeded test
    matrix, same sequence weights as the dense NumPy implementation."""
    enc, seqs, H, M = _synthetic(10, 4000, 8, 3, nheads=4)
    op = learn_spectral(enc, seqs, H, M, N, max_basis=12, **kw)
    a1, b1, A, n_random = _dense_reference(enc, seqs, H, M, N, max_basis=12, **kw)
    assert n_random >= 4                 # the randomised path is exercised
    rng = np.random.default_rng(4)
    checked = 0
    for h in range(4):
        for d in (0, 1):
            cands = [tuple(rng.integers(M, size=L)) for L in (1, 2, 3, 4) for _ in range(10)]
            for seq in [()] + cands:
                v, w = a1[h, d], op.alpha1[h, d]
                for a in seq:
                    v, w = A[h, d, a] @ v, op.A[h, d, a] @ w
                ref, got = float(b1[h, d] @ v), float(op.beta[h, d] @ w)
                assert abs(got - ref) <= 1e-8 * abs(ref) + 1e-13, (h, d, seq, got, ref)
                checked += 1
    assert checked > 300
