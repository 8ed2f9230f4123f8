"""Back-off smoothing of the spectral / EM SHAGs (interpolation with the DET+F automaton) and
the compiled sequence merging shared by the spectral and EM learners."""
import itertools
from collections import Counter

import numpy as np
import pytest

from fastspectral.dependency.backoff import BackoffSHAG
from fastspectral.dependency.data import encode_sentences, modifier_sequences
from fastspectral.dependency.em import fit_em
from fastspectral.dependency.model import SHAGParser
from fastspectral.dependency.spectral import (OperatorSHAG, backoff_automaton, distinct_sequences,
                                              learn_spectral)
from fastspectral.trees.conll import DepSentence, read_malttab
from conftest import data_path

WSJ = str(data_path("dep", "wsj-sample.dp"))


@pytest.fixture(scope="module")
def data():
    sents = list(itertools.islice(read_malttab(WSJ), 400))
    p = SHAGParser(method="det+f").fit(sents[:300])
    enc = encode_sentences(sents[:300], p.tags_)
    return sents, p, enc, modifier_sequences(enc)


def test_distinct_sequences_match_python_counting(data):
    _, p, enc, seqs = data
    ref = Counter()
    for q in range(len(seqs.seq_pos)):
        g = int(enc.hsym[seqs.seq_pos[q]]) * 2 + int(seqs.seq_dir[q])
        s0, T = seqs.seq_start[q], seqs.seq_len[q]
        ref[(g, tuple(int(t) for t in enc.msym[seqs.mods[s0:s0 + T]]))] += 1
    grp_start, q_start, q_len, q_w, mods = distinct_sequences(enc, seqs, p._H, p._M)
    got = Counter()
    for g in range(2 * p._H):
        for q in range(grp_start[g], grp_start[g + 1]):
            key = (g, tuple(int(t) for t in mods[q_start[q]:q_start[q] + q_len[q]]))
            assert key not in got                      # every sequence appears once
            got[key] = q_w[q]
    assert got == ref
    assert q_w.sum() == len(seqs.seq_pos)


def test_backoff_automaton_is_detf(data):
    _, p, enc, seqs = data
    H, M = p._H, p._M
    op = backoff_automaton(*distinct_sequences(enc, seqs, H, M), H, M)
    fb = BackoffSHAG("f", False, M).fit(enc, seqs)
    hh, dd, kk, aa = (x.ravel().astype(np.int64) for x in np.meshgrid(
        np.arange(H), np.arange(2), np.arange(2), np.arange(M + 1), indexing="ij"))
    pr = fb._p_a(hh, np.full(hh.size, -1, np.int32), dd, kk, aa).reshape(H, 2, 2, M + 1)
    np.testing.assert_allclose(op.beta, pr[..., M], rtol=1e-12)
    np.testing.assert_allclose(op.A[..., 1, 0], pr[:, :, 0, :M], rtol=1e-12)
    np.testing.assert_allclose(op.A[..., 1, 1], pr[:, :, 1, :M], rtol=1e-12)
    assert np.all(op.A[..., 0, :] == 0)
    # a sequence's weight is the product of DET+F's decisions, positive even when unseen
    rng = np.random.default_rng(0)
    for _ in range(50):
        h, d = int(rng.integers(1, H)), int(rng.integers(2))
        seq = list(rng.integers(0, M, size=int(rng.integers(0, 4))))
        ref = np.prod([pr[h, d, min(j, 1), a] for j, a in enumerate(seq)]) * \
            pr[h, d, min(len(seq), 1), M]
        assert op.sequence_weight(h, d, seq) == pytest.approx(ref, rel=1e-12)
        assert ref > 0
    # normalised: sum over outcomes (tags and STOP) in each state is 1
    np.testing.assert_allclose(op.A.sum(axis=2)[..., 1, :] + op.beta, 1.0, rtol=1e-12)


def test_interpolate_mixes_sequence_weights():
    rng = np.random.default_rng(1)
    H, M = 3, 4
    a = OperatorSHAG(rng.normal(size=(H, 2, 3)), rng.normal(size=(H, 2, 3)),
                     rng.normal(size=(H, 2, M, 3, 3)) * 0.5)
    b = OperatorSHAG(rng.random((H, 2, 2)), rng.random((H, 2, 2)), rng.random((H, 2, M, 2, 2)))
    mix = a.interpolate(b, 0.25)
    assert mix.n_states == 5
    for h, d in itertools.product(range(H), range(2)):
        for L in range(4):
            for seq in itertools.product(range(M), repeat=L):
                ref = 0.75 * a.sequence_weight(h, d, seq) + 0.25 * b.sequence_weight(h, d, seq)
                assert mix.sequence_weight(h, d, seq) == pytest.approx(ref, rel=1e-10, abs=1e-14)
    with pytest.raises(ValueError):
        a.interpolate(OperatorSHAG(b.alpha1[:2], b.beta[:2], b.A[:2]), 0.5)


def test_learners_smoothing_is_the_mixture(data):
    _, p, enc, seqs = data
    H, M = p._H, p._M
    back = backoff_automaton(*distinct_sequences(enc, seqs, H, M), H, M)
    plain = learn_spectral(enc, seqs, H, M, 4)
    smooth = learn_spectral(enc, seqs, H, M, 4, smoothing=0.3)
    ref = plain.interpolate(back, 0.3)
    for x, y in ((smooth.alpha1, ref.alpha1), (smooth.beta, ref.beta), (smooth.A, ref.A)):
        np.testing.assert_array_equal(x, y)
    e0 = fit_em(enc, seqs, H, M, 3, iterations=4, seed=2, snapshots=(2,)).model
    res = fit_em(enc, seqs, H, M, 3, iterations=4, seed=2, snapshots=(2,), smoothing=0.4)
    np.testing.assert_array_equal(res.model.A, e0.interpolate(back, 0.4).A)
    assert res.snapshots[2].n_states == 5 and len(res.loglik) == len(res.time) == 4
    with pytest.raises(ValueError):
        learn_spectral(enc, seqs, H, M, 4, smoothing=1.0)
    with pytest.raises(ValueError):
        fit_em(enc, seqs, H, M, 3, smoothing=-0.1)


def test_parser_smoothing(data, tmp_path):
    sents, _, _, _ = data
    train, test = sents[:300], sents[300:]
    p = SHAGParser(method="spectral", n_states=4, backoff_weight=0.3).fit(train)
    assert p.op_.n_states == 6
    # every sentence has positive total weight, even with tag pairs never seen in training
    odd = DepSentence(words=["a", "b", "c"], xpos=[".", "DT", "CC"], heads=[0, 1, 1])
    logw = p.log_weight(test + [odd])
    assert np.all(np.isfinite(logw))
    p.parse(test)
    assert p.last_parse_stats_.fallback == 0 and p.last_parse_stats_.sentences == len(test)
    path = tmp_path / "s.npz"
    p.save(path)
    q = SHAGParser.load(path)
    assert q.backoff_weight == 0.3 and q.op_.n_states == 6
    assert [s.heads for s in q.parse(test)] == [s.heads for s in p.parse(test)]
    assert SHAGParser(method="spectral", n_states=4, backoff_weight=0.0).fit(train).op_.n_states == 4
    with pytest.raises(ValueError, match="backoff_weight"):
        SHAGParser(backoff_weight=1.0).fit(train)
    with pytest.raises(ValueError, match="ridge"):
        SHAGParser(ridge=-0.5).fit(train)
    r = SHAGParser(method="spectral", n_states=4, ridge=2.5).fit(train)
    r.save(tmp_path / "r.npz")
    assert SHAGParser.load(tmp_path / "r.npz").ridge == 2.5
    assert not np.allclose(r.op_.A, p.op_.A)                 # the ridge changes the operators
