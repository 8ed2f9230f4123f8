"""Sequence HMMs: the stabilised spectral filter, the fast counting paths
(each equal to its reference path), the Kneser-Ney smoother built from ids, EM's tolerance,
and the spectral model alone against the Kneser-Ney tag bigram on the WSJ tags."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral.hmm import HMM, read_sequences
from fastspectral.hmm import model as MD
from fastspectral.hmm import hankel as HK
from fastspectral.hmm import spectral as S
from fastspectral.hmm.data import Encoded

from test_hmm import _sample, _toy


@pytest.fixture(scope="module")
def toy():
    return _toy(21, 22)


def _random_enc(M, n, seed):
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 9, size=n)
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    return Encoded(off, rng.integers(0, M, size=int(off[-1])).astype(np.int64))


@pytest.mark.slow
def test_dense_and_sparse_counting_paths_agree(monkeypatch):
    enc = _random_enc(7, 400, 0)
    H = S.hankel_data(enc, 7, max_basis=20)
    P = H.hankel().toarray()
    U, X, _ = S._projections(H.hankel(), 5, 1.0, 1e-10, H.n_seq, 0)
    A = S._operators(H, U, X)                               # P_a X then BLAS
    monkeypatch.setattr(HK, "_DENSE_COUNT", 0)               # COO counting, searchsorted
    monkeypatch.setattr(S, "_DENSE_PX", 0)                  # the per-token kernel
    H2 = S.hankel_data(enc, 7, max_basis=20)
    for name in ("p1", "p2", "s1", "s2"):
        np.testing.assert_array_equal(getattr(H, name), getattr(H2, name))
    np.testing.assert_allclose(H2.hankel().toarray(), P, rtol=0, atol=1e-15)
    np.testing.assert_allclose(S._operators(H2, U, X), A, rtol=1e-10, atol=1e-13)


def test_smoother_built_from_ids_equals_kneser_ney_fit(toy):
    from fastspectral.lm.kneser_ney import KneserNeyBigramLM

    train, _ = toy
    train = train + [["A", "rare", "b"], ["c", "Once"], []]
    model = HMM(n_states=2, min_count=2, lowercase=True, max_basis=4).fit(train)
    syms = model.symbols_.symbols
    mapped = [[syms[model.symbols_.index.get(t.lower(), 0)] for t in s] for s in train]
    kn = KneserNeyBigramLM(min_count=1, lowercase=False).fit(mapped)
    assert model.smoother_.vocab_.words == kn.vocab_.words
    np.testing.assert_array_equal(model.smoother_.counts_.toarray(), kn.counts_.toarray())
    np.testing.assert_array_equal(model.smoother_.discounts_, kn.discounts_)


@pytest.mark.parametrize("negative", ["abs", "clip"])
def test_stabilised_filter_predicts_distributions(toy, negative):
    train, dev = toy
    model = HMM(n_states=2, ridge=None, negative=negative, max_basis=8).fit(train, dev=dev)
    assert model.ridge_ in MD.RIDGE_GRID and model.state_mixing_ in MD.MIXING_GRID
    d = model.next_distribution([[], ["a"], ["c", "c", "b"]])
    np.testing.assert_allclose(d.sum(axis=1), 1.0)
    model.backoff_weight_ = 0.0                              # the spectral model alone
    assert np.all(np.isfinite(model.log_probability(dev)))
    np.testing.assert_allclose(model.next_distribution([["a"]]).sum(), 1.0)
    # the filter's per-event probabilities equal the next-event distributions of prefixes
    seq = dev[0] if dev[0] else ["a"]
    cond = model.conditional_probabilities([seq])[0]
    labels = model.symbols_.symbols
    for t, x in enumerate(seq):
        dist = model.next_distribution([seq[:t]])[0]
        assert cond[t] == pytest.approx(dist[labels.index(x)], rel=1e-9)


def test_fit_defaults_without_dev(toy):
    train, _ = toy
    model = HMM(n_states=2, max_basis=8).fit(train)
    assert model.ridge_ == MD.DEFAULT_RIDGE and model.state_mixing_ == MD.DEFAULT_MIXING
    assert model.backoff_weight_ == MD.DEFAULT_BACKOFF_WEIGHT["spectral"]
    with pytest.raises(ValueError, match="state_mixing"):
        HMM(state_mixing=1.5).fit(train)
    with pytest.raises(ValueError, match="negative"):
        HMM(negative="square").fit(train)
    with pytest.raises(ValueError, match="tol"):
        HMM(method="em", tol=-1.0).fit(train)


def test_em_tolerance_stops_at_convergence(toy):
    train, _ = toy
    full = HMM(n_states=2, method="em", iterations=300, random_state=3).fit(train)
    tol = 1e-5
    stopped = HMM(n_states=2, method="em", iterations=300, tol=tol, random_state=3).fit(train)
    k = stopped.iterations_run_
    assert 1 <= k < 300 and stopped.best_iteration_ == k
    gains = np.diff(full.train_loglik_)
    assert np.all(gains[:k - 1] >= tol) and gains[k - 1] < tol     # first gain below tol
    # the same parameters as running exactly k iterations
    exact = HMM(n_states=2, method="em", iterations=k, random_state=3).fit(train)
    np.testing.assert_allclose(stopped.trans_, exact.trans_, rtol=1e-12)


def test_spectral_alone_beats_the_kneser_ney_tag_bigram(shared_data):
    """The aim on the WSJ tags: the spectral model alone (no interpolation),
    settings chosen on the last 10% of the training sequences."""
    from fastspectral.lm.kneser_ney import KneserNeyBigramLM

    train = read_sequences(shared_data / "ptb" / "wsj-sample.mrg", field="tag")
    test = read_sequences(shared_data / "ptb" / "wsj22.trees", field="tag")
    k = int(round(0.9 * len(train)))
    sel = HMM(n_states=20, field="tag", ridge=None).fit(train[:k], dev=train[k:])
    model = HMM(n_states=20, field="tag", ridge=sel.ridge_, state_mixing=sel.state_mixing_,
                backoff_weight=0.0).fit(train)
    kn = KneserNeyBigramLM(min_count=1, lowercase=False).fit(train).perplexity(test)
    assert model.perplexity(test) < kn


@pytest.mark.parametrize("max_basis", [0, 3, 20, 200])
def test_compiled_hankel_equals_the_reference_counts(max_basis):
    """:func:`dense_hankel` (compiled passes over the framed sequences) against
    :func:`hankel_data` (index arrays + bincount): same basis, block, prefix counts and
    operators."""
    enc = _random_enc(6, 500, max_basis)
    H = S.hankel_data(enc, 6, max_basis=max_basis)
    D = S.dense_hankel(enc, 6, max_basis=max_basis)
    np.testing.assert_array_equal(D.prefix_codes, H.prefix_codes)
    np.testing.assert_array_equal(D.suffix_codes, H.suffix_codes)
    np.testing.assert_array_equal(D.F, H.F)
    np.testing.assert_array_equal(D.P, H.hankel().toarray())
    np.testing.assert_allclose(D.prefix_counts(), H.prefix_counts(), rtol=1e-15)
    assert (D.hankel() != H.hankel()).nnz == 0
    a = S.learn_operators(enc, 6, 4, max_basis, 1.0, hankel=H)
    b = S.learn_operators(enc, 6, 4, max_basis, 1.0, hankel=D)
    for k in ("alpha1", "A", "beta", "c", "W", "fallback", "singular_values"):
        np.testing.assert_allclose(getattr(b, k), getattr(a, k), rtol=1e-9, atol=1e-12)


def test_build_and_encode_equals_table_then_encode():
    from fastspectral.hmm.data import SymbolTable, build_and_encode, encode

    rng = np.random.default_rng(5)
    voc = ["a", "B", "b", "<s>", "</s>", "<unk>", "C", "c", "dd", "Dd"]
    for _ in range(100):
        seqs = [[voc[j] for j in rng.integers(0, rng.integers(1, 11), size=rng.integers(0, 7))]
                for _ in range(rng.integers(0, 8))]
        for mc in (1, 2, 3):
            for lc in (False, True):
                t1 = SymbolTable.build(seqs, mc, None, lc)
                e1 = encode(seqs, t1)
                t2, e2, c2 = build_and_encode(seqs, mc, lc, return_counts=True)
                assert t2.symbols == t1.symbols and t2.lowercase == t1.lowercase
                np.testing.assert_array_equal(c2, np.bincount(e1.ids, minlength=len(t1)))
                np.testing.assert_array_equal(e2.offsets, e1.offsets)
                np.testing.assert_array_equal(e2.ids, e1.ids)
    many = [[f"w{i % 300}" for i in range(j, j + 7)] for j in range(0, 900, 7)]  # > 256 types
    t1 = SymbolTable.build(many)
    t2, e2 = build_and_encode(many)
    assert t2.symbols == t1.symbols
    np.testing.assert_array_equal(e2.ids, encode(many, t1).ids)
    with pytest.raises(TypeError):
        build_and_encode([["a", 3]])
    with pytest.raises(TypeError, match=r"sequences\[1\] holds a int"):
        HMM().fit([["a"], ["b", 3]])


@pytest.mark.slow
def test_compiled_sparse_svd_of_the_hankel_block(monkeypatch):
    """The compiled randomized SVD of a dense block (its non-zeros, from the counting pass or
    from a scan) against LAPACK's: the leading singular values and subspaces; and a model
    learned through it (dense block) against the index-array path (scipy sparse randomized
    SVD): the same sequence probabilities."""
    rng = np.random.default_rng(3)
    k, r, c = 6, 180, 150
    D = (rng.random((r, k)) * (rng.random((r, k)) < 0.3)) @ np.diag(2.0 ** -np.arange(k)) \
        @ (rng.random((k, c)) * (rng.random((k, c)) < 0.3))
    nz = D != 0                                         # about half the cells
    D[nz] += 1e-4 * rng.random(int(nz.sum()))           # full rank, a gap after k
    data, ind, ptr = S._dense_to_csr(D)
    G = rng.standard_normal((c, k + 10))
    from fastspectral.linalg.svd import csr_tdot, sparse_range_svd

    U, s, Vt = sparse_range_svd(data, ind, ptr, c, G, k, 2)
    U0, s0, Vt0 = np.linalg.svd(D, full_matrices=False)
    np.testing.assert_allclose(s, s0[:k], rtol=1e-6)
    np.testing.assert_allclose(np.abs(U.T @ U0[:, :k]).diagonal(), 1.0, atol=1e-5)
    np.testing.assert_allclose(U @ np.diag(s) @ Vt, U0[:, :k] @ np.diag(s0[:k]) @ Vt0[:k],
                               atol=1e-6 * s0[0])
    rng = np.random.default_rng(9)                       # a 3-state HMM over 30 symbols
    obs = rng.dirichlet(np.full(30, 0.3), size=3) * 0.8
    emit = np.hstack([obs, np.full((3, 1), 0.2)])
    seqs = _sample(np.array([0.5, 0.3, 0.2]), rng.dirichlet(np.ones(3), size=3), emit, 4000,
                   10)
    off = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum([len(q) for q in seqs], out=off[1:])
    enc = Encoded(off, np.concatenate([np.asarray(q, dtype=np.int64) for q in seqs]))
    H = S.hankel_data(enc, 30, max_basis=200)
    Dh = S.dense_hankel(enc, 30, max_basis=200)
    assert min(Dh.P.shape) > S._DENSE_SVD and Dh.csr is not None
    import scipy.sparse as sps

    nr, nc = Dh.P.shape                                  # the CSR of P
    np.testing.assert_array_equal(sps.csr_matrix(Dh.csr, shape=(nr, nc)).toarray(), Dh.P)
    assert len(Dh.csr[0]) == np.count_nonzero(Dh.P)
    Y = np.random.default_rng(4).standard_normal((nr, 5))   # P^T Y scattered through P's CSR
    np.testing.assert_allclose(csr_tdot(*Dh.csr, Y, nc), Dh.P.T @ Y, rtol=1e-12, atol=1e-15)
    test = enc.subset(np.arange(300))
    for few in (S.FEW_POWER_RANK, 0):                   # one, then two power iterations
        monkeypatch.setattr(S, "FEW_POWER_RANK", few)
        a = S.learn_operators(enc, 30, 3, 200, 1.0, hankel=H)
        b = S.learn_operators(enc, 30, 3, 200, 1.0, hankel=Dh)
        tol = 1e-4 if few else 1e-8          # the index path has two power iterations
        np.testing.assert_allclose(b.singular_values, a.singular_values, rtol=tol)
        la, sa = S.raw_log_probability(a, test)
        lb, sb = S.raw_log_probability(b, test)
        np.testing.assert_array_equal(sb, sa)
        np.testing.assert_allclose(lb, la, rtol=30 * tol)


def test_token_class_start():
    """The class start of spectral-initialised EM: distributions of the right shapes (also
    with more states than distinct (previous, symbol) pairs), symbols of two disjoint hidden
    classes kept apart, a better training likelihood than a random start, and both starts
    selectable by ``spectral_init``."""
    from fastspectral.hmm import em as E

    start = np.array([0.6, 0.4])
    trans = np.array([[0.1, 0.9], [0.8, 0.2]])
    obs = np.array([[0.5, 0.4, 0.0, 0.0], [0.0, 0.0, 0.3, 0.6]])
    stop = np.array([0.1, 0.1])
    emit = np.hstack([obs * (1 - stop)[:, None] / obs.sum(1, keepdims=True), stop[:, None]])
    seqs = _sample(start, trans, emit, 2000, 4)
    off = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum([len(q) for q in seqs], out=off[1:])
    enc = Encoded(off, np.concatenate([np.asarray(q, dtype=np.int64) for q in seqs]))
    H = S.dense_hankel(enc, 4, max_basis=8)
    for m in (2, 3, 40):                                 # 40 > the 20 distinct pairs
        s0, t0, e0 = S.hmm_from_token_classes(H, m, 0)
        assert s0.shape == (m,) and t0.shape == (m, m) and e0.shape == (m, 5)
        for x in (s0, t0, e0):
            assert np.all(x > 0)
            np.testing.assert_allclose(np.sum(x, axis=-1), 1.0)
    for temperature in (0.0, 2.0):                       # hard and soft classes
        s0, t0, e0 = S.hmm_from_token_classes(H, 2, 0, floor=0.0, temperature=temperature)
        group = np.argmax(e0[:, :4], axis=0)             # the class of each symbol's mass
        assert group[0] == group[1] != group[2] == group[3]
    hard = S.hmm_from_token_classes(H, 3, 0, floor=0.0, temperature=0.0)[2]
    soft = S.hmm_from_token_classes(H, 3, 0, floor=0.0, temperature=2.0)[2]
    assert np.count_nonzero(soft[:, :4] > 1e-12) > np.count_nonzero(hard[:, :4] > 1e-12)
    ll_classes = E.log_probability(enc, *S.hmm_from_token_classes(H, 2, 0)).sum()
    unigram = np.append(np.bincount(enc.ids, minlength=4), len(seqs)).astype(np.float64)
    ll_random = E.log_probability(enc, *E.random_init(4, 2, unigram / unigram.sum(),
                                                        np.random.default_rng(0))).sum()
    assert ll_classes > ll_random
    names = ["a", "b", "c", "d"]
    strs = [[names[x] for x in q] for q in seqs]
    for init in ("classes", "anchors", "moments"):
        model = HMM(n_states=2, method="spectral-em", iterations=3, spectral_init=init,
                    max_basis=8).fit(strs)
        assert model.get_params()["spectral_init"] == init and model.n_states_ == 2
        assert "spectral_init" in model.timings_
    # the moment-matched start is the one EM starts from: with 0 iterations the model is it
    from fastspectral.hmm.moment_init import hmm_from_moments
    model = HMM(n_states=2, method="spectral-em", iterations=0, spectral_init="moments",
                max_basis=8, backoff_weight=0.0).fit(strs)
    enc2 = model._latent(model._encode(strs))
    ref = hmm_from_moments(S.dense_hankel(enc2, model.n_latent_symbols_, max_basis=8), 2, 0)
    for got, want in zip((model.start_, model.trans_, model.emit_), ref):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_smoother_from_the_hankel_pair_counts():
    """Without a vocabulary cap the spectral fit builds the Kneser-Ney bigram counts from the
    Hankel pass's framed-bigram table: the same counts (empty sequences and <unk> included)
    as the compiled pass over the ids that the EM fit uses, and the same probabilities as
    ``fastspectral.lm``'s model."""
    from fastspectral.lm.kneser_ney import KneserNeyBigramLM

    rng = np.random.default_rng(11)
    voc = ["a", "b", "c", "d", "E", "e", "rare"]
    seqs = [[voc[j] for j in rng.integers(0, 7, size=rng.integers(0, 6))] for _ in range(300)]
    for kw in ({}, {"min_count": 5, "lowercase": True}):
        sp_model = HMM(n_states=2, max_basis=6, **kw).fit(seqs)
        em_model = HMM(n_states=2, method="em", iterations=1, **kw).fit(seqs)
        a, b = sp_model.smoother_.counts_, em_model.smoother_.counts_
        np.testing.assert_array_equal(a.toarray(), b.toarray())
        np.testing.assert_array_equal(a.indices, b.indices)
        kn = KneserNeyBigramLM(min_count=kw.get("min_count", 1),
                               lowercase=kw.get("lowercase", False)).fit(seqs)
        ll, n = kn.log_likelihood(seqs[:50])
        png = sp_model._ngram_probs(sp_model._encode(seqs[:50]))
        assert np.log(png).sum() == pytest.approx(ll, rel=1e-12)
