"""Spectral SHAG learner: generalised Hankel basis against a dense reference, consistency."""
import itertools

import numpy as np
import pytest

from fastspectral.dependency.data import SymbolVocab, encode_sentences, modifier_sequences
from fastspectral.dependency.spectral import (_bigram_counts, _flat_sequences, _hankel_counts,
                                              hankel_basis, learn_spectral)
from fastspectral.trees.conll import DepSentence

from _pfa import pfa_prob, sample_pfa, two_state_pfa

TAGS = ["A", "B", "C", "H"]


def _encode(left, right):
    """Sentences 'L.. H R..' (H heads its leaf modifiers, root -> H), encoded."""
    sents = []
    for L, R in zip(left, right):
        tags = [TAGS[a] for a in reversed(L)] + ["H"] + [TAGS[a] for a in R]
        hpos = len(L) + 1
        heads = [hpos] * len(L) + [0] + [hpos] * len(R)
        sents.append(DepSentence(words=[t.lower() for t in tags], xpos=tags, heads=heads))
    enc = encode_sentences(sents, SymbolVocab(TAGS, unk_id=0))
    return enc, modifier_sequences(enc)


def _framed_by_group(enc, seqs, M):
    grp, dirs, starts, lens, tags = _flat_sequences(enc, seqs)
    out = {}
    for q in range(len(grp)):
        z = ("S",) + tuple(int(t) for t in tags[starts[q]:starts[q] + lens[q]]) + ("E",)
        out.setdefault((int(grp[q]), int(dirs[q])), []).append(z)
    return out


def _count(zs, w):
    """Total occurrences of the tuple ``w`` as a substring of the framed sequences ``zs``."""
    k = len(w)
    return sum(1 for z in zs for i in range(len(z) - k + 1) if z[i:i + k] == w)


def _basis_strings(pmap2, smap2, M, d):
    """Prefix / suffix strings (tuples; START 'S', STOP 'E') of the basis, by index."""
    B = M + 2
    name = lambda x: "S" if x == M else ("E" if x == M + 1 else x)  # noqa: E731
    pre = {t: (t,) for t in range(M)}
    pre[M] = ("S",)
    suf = {t: (t,) for t in range(M)}
    suf[M] = ("E",)
    for code in np.nonzero(pmap2[d] >= 0)[0]:
        pre[int(pmap2[d, code])] = (name(code // B), name(code % B))
    for code in np.nonzero(smap2[d] >= 0)[0]:
        suf[int(smap2[d, code])] = (name(code // B), name(code % B))
    return pre, suf


def _reference(zs, pre, suf, M, n, ridge=0.0):
    """Dense Algorithm 1 on an explicit basis: H[s,p] = E#(p s), H_a[s,p] = E#(p a s); with
    ``ridge`` the Tikhonov inverse B^T (B B^T + lam^2 I)^-1 of B = U^T P, lam^2 = ridge^2 / #seq."""
    Ns, Np = len(suf), len(pre)
    P = np.array([[_count(zs, pre[p] + suf[s]) for p in range(Np)] for s in range(Ns)]) / len(zs)
    Pa = np.array([[[_count(zs, pre[p] + (a,) + suf[s]) for p in range(Np)] for s in range(Ns)]
                   for a in range(M)]) / len(zs)
    U = np.linalg.svd(P)[0][:, :n]
    B = U.T @ P
    X = np.linalg.pinv(B) if ridge == 0 else \
        B.T @ np.linalg.inv(B @ B.T + ridge ** 2 / len(zs) * np.eye(n))
    return U.T @ P[:, M], P[M, :] @ X, np.array([U.T @ Pa[a] @ X for a in range(M)])


def _weight(alpha1, beta, A, seq):
    v = alpha1
    for a in seq:
        v = A[a] @ v
    return float(beta @ v)


@pytest.mark.slow
def test_hankel_counts_match_brute_force():
    rng = np.random.default_rng(1)
    pfa = two_state_pfa()
    enc, seqs = _encode(sample_pfa(rng, pfa, 200), sample_pfa(rng, pfa, 200))
    M, H = len(TAGS), len(TAGS) + 1
    grp, dirs, starts, lens, tags = _flat_sequences(enc, seqs)
    pmap2, smap2, Np, Ns = hankel_basis(_bigram_counts(tags, starts, lens, dirs, M), M, 2, 6)
    assert Np == Ns == M + 1 + 6
    P = np.zeros((2 * H, Ns, Np))
    _hankel_counts(tags, starts, lens, dirs, grp, pmap2, smap2, M, P)
    groups = _framed_by_group(enc, seqs, M)
    for (g, d), zs in groups.items():
        pre, suf = _basis_strings(pmap2, smap2, M, d)
        for p, s in itertools.product(range(Np), range(Ns)):
            if p in pre and s in suf:
                assert P[g, s, p] == _count(zs, pre[p] + suf[s]), (g, s, p)


@pytest.mark.parametrize("basis,max_basis,ridge", [(1, 0, 0.0), (2, 3, 0.0), (2, 30, 0.0),
                                                   (1, 0, 1.0), (2, 30, 2.0)])
def test_learner_matches_dense_reference(basis, max_basis, ridge):
    rng = np.random.default_rng(2)
    pfa = two_state_pfa()
    enc, seqs = _encode(sample_pfa(rng, pfa, 300), sample_pfa(rng, pfa, 300))
    M, H = len(TAGS), len(TAGS) + 1
    n = 3
    # enough power iterations that the randomised range finder gives the exact top subspace
    op = learn_spectral(enc, seqs, H, M, n, basis=basis, max_basis=max_basis, power=30,
                        ridge=ridge)
    grp, dirs, starts, lens, tags = _flat_sequences(enc, seqs)
    pmap2, smap2, _, _ = hankel_basis(_bigram_counts(tags, starts, lens, dirs, M), M, basis,
                                      max_basis)
    h = TAGS.index("H") + 1
    for (g, d), zs in _framed_by_group(enc, seqs, M).items():
        if g // 2 != h:
            continue
        pre, suf = _basis_strings(pmap2, smap2, M, d)
        a1, b1, A = _reference(zs, pre, suf, M, n, ridge)
        for L in range(4):
            for seq in itertools.product(range(3), repeat=L):
                ref = _weight(a1, b1, A, seq)
                got = op.sequence_weight(h, d, seq)
                assert abs(ref - got) < 1e-7 * max(1.0, abs(ref)), (basis, d, seq)


@pytest.mark.slow
@pytest.mark.parametrize("basis,ridge", [(1, 0.0), (2, 0.0), (2, 1.0)])
def test_generalised_basis_is_consistent(basis, ridge):
    """With many samples both bases (with or without the ridge, whose strength shrinks as
    1/sqrt(#sequences)) recover the 2-state distribution; more data, less error."""
    pfa = two_state_pfa()
    M, H = len(TAGS), len(TAGS) + 1
    h = TAGS.index("H") + 1
    errs = []
    for n_samples in (500, 8000):
        rng = np.random.default_rng(3)
        enc, seqs = _encode(sample_pfa(rng, pfa, n_samples), sample_pfa(rng, pfa, n_samples))
        op = learn_spectral(enc, seqs, H, M, 2, basis=basis, ridge=ridge)
        seqs_all = [seq for L in range(4) for seq in itertools.product(range(3), repeat=L)]
        err = max(abs(op.sequence_weight(h, d, seq) - pfa_prob(pfa, seq))
                  for d in (0, 1) for seq in seqs_all)
        errs.append(err)
    assert errs[1] < 0.02
    assert errs[1] < errs[0]


def test_rank_and_argument_checks():
    rng = np.random.default_rng(4)
    pfa = two_state_pfa()
    enc, seqs = _encode(sample_pfa(rng, pfa, 300), sample_pfa(rng, pfa, 300))
    M, H = len(TAGS), len(TAGS) + 1
    op = learn_spectral(enc, seqs, H, M, 8)
    assert op.A.shape == (H, 2, M, 8, 8)
    # the root's left automaton never occurs: no operators; leaf heads only stop (rank 1)
    assert not op.alpha1[0, 0].any() and not op.A[0, 0].any()
    a = TAGS.index("A") + 1
    assert abs(op.sequence_weight(a, 1, []) - 1.0) < 1e-12
    assert abs(op.sequence_weight(a, 1, [0])) < 1e-12
    # deterministic for a fixed seed
    op2 = learn_spectral(enc, seqs, H, M, 8)
    assert np.array_equal(op.A, op2.A)
    with pytest.raises(ValueError):
        learn_spectral(enc, seqs, H, M, 0)
    with pytest.raises(ValueError):
        learn_spectral(enc, seqs, H, M, 2, basis=3)
    with pytest.raises(ValueError):
        learn_spectral(enc, seqs, H, M, 2, ridge=-1.0)
