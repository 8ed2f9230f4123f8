"""The moment-matched HMM start (fastspectral.hmm.moment_init): window table, window
likelihood against brute-force enumeration, EM monotonicity, recovery of a known HMM's window
distribution, and the start as EM's starting point."""
import itertools

import numpy as np
import pytest

from fastspectral.hmm import moment_init as MI
from fastspectral.hmm import spectral as S
from fastspectral.hmm.data import Encoded


def _hmm(rng, m=2, M=3):
    start = rng.dirichlet(np.ones(m))
    trans = rng.dirichlet(np.ones(m) * 0.5, size=m)
    obs = rng.dirichlet(np.ones(M) * 0.5, size=m)
    stop = rng.uniform(0.2, 0.4, size=m)
    emit = np.hstack([obs * (1 - stop)[:, None], stop[:, None]])
    return start, trans, emit


def _sample(start, trans, emit, n, rng):
    m, V = emit.shape
    seqs = []
    for _ in range(n):
        h = rng.choice(m, p=start)
        s = []
        while True:
            x = rng.choice(V, p=emit[h])
            if x == V - 1:
                break
            s.append(int(x))
            h = rng.choice(m, p=trans[h])
        seqs.append(s)
    return seqs


def _enc(seqs):
    off = np.zeros(len(seqs) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(s) for s in seqs])
    return Encoded(off, np.array([x for s in seqs for x in s], dtype=np.int64))


def _brute_window(start_dist, trans, emit, w):
    """p(window) by enumerating the hidden states; events after the end are padding."""
    M = emit.shape[1] - 1
    ev = [x for x in w if x <= M]
    m = len(start_dist)
    tot = 0.0
    for hs in itertools.product(range(m), repeat=len(ev)):
        p = start_dist[hs[0]] * emit[hs[0], ev[0]]
        for k in range(1, len(ev)):
            p *= trans[hs[k - 1], hs[k]] * emit[hs[k], ev[k]]
        tot += p
    return tot


def test_window_table_counts_every_event_position():
    seqs = [[0, 1], [], [1, 1, 0]]
    enc = _enc(seqs)
    M = 2
    win = MI.window_table(S.frame(enc, M), M, 3)
    assert win.n_positions == sum(len(s) + 1 for s in seqs)
    got = {(bool(b), tuple(w)): c for w, b, c in zip(win.W.tolist(), win.begin, win.counts)}
    P = M + 1                                         # padding after the end
    want = {(True, (0, 1, 2)): 1, (False, (1, 2, P)): 1, (False, (2, P, P)): 2,
            (True, (2, P, P)): 1, (True, (1, 1, 0)): 1, (False, (1, 0, 2)): 1,
            (False, (0, 2, P)): 1}
    assert got == want
    again = MI.windows_from_sequences(enc.offsets, enc.ids, M, 3)
    assert np.array_equal(again.W, win.W) and np.array_equal(again.counts, win.counts)


@pytest.mark.slow
def test_window_loglik_equals_enumeration():
    rng = np.random.default_rng(3)
    start, trans, emit = _hmm(rng, 3, 4)
    q = rng.dirichlet(np.ones(3))
    seqs = _sample(start, trans, emit, 60, rng)
    win = MI.windows_from_sequences(_enc(seqs).offsets, _enc(seqs).ids, 4, 3)
    want = sum(c * np.log(_brute_window(start if b else q, trans, emit, w))
               for w, b, c in zip(win.W.tolist(), win.begin, win.counts))
    assert MI.window_loglik(win, start, trans, emit, q) == pytest.approx(want, rel=1e-10)


@pytest.mark.slow
def test_window_em_never_decreases_the_likelihood():
    rng = np.random.default_rng(0)
    start, trans, emit = _hmm(rng, 3, 4)
    seqs = _sample(start, trans, emit, 300, rng)
    win = MI.windows_from_sequences(_enc(seqs).offsets, _enc(seqs).ids, 4, 3)
    s0 = MI._random_start(win, 3, np.random.default_rng(1))
    *_, hist = MI.window_em(win, *s0, iterations=40, tol=None)
    assert len(hist) == 40
    assert np.all(np.diff(hist) >= -1e-10)
    assert hist[-1] > hist[0]


def _known_windows(seed, n):
    """A known 2-state HMM over 3 symbols, ``n`` sequences sampled from it, their encoding and
    trigram windows: ``(start, trans, emit, seqs, enc, windows)``."""
    rng = np.random.default_rng(seed)
    start, trans, emit = _hmm(rng, 2, 3)
    seqs = _sample(start, trans, emit, n, rng)
    enc = _enc(seqs)
    return start, trans, emit, seqs, enc, MI.windows_from_sequences(enc.offsets, enc.ids, 3, 3)


@pytest.mark.slow
def test_moment_fit_recovers_the_window_distribution():
    """On a large sample of a known 2-state HMM the fitted model's window probabilities are
    close to the true ones (the empirical window distribution converges to them)."""
    start, trans, emit, seqs, enc, win = _known_windows(5, 20000)
    s, t, e = MI.hmm_from_moments(None, 2, random_state=0, restarts=3, iterations=300,
                                  tol=1e-10, windows=win, init=None)
    # the windows that open a sequence: distribution of the first events under start
    wins = [w for w, b in zip(win.W.tolist(), win.begin) if b]
    p_true = np.array([_brute_window(start, trans, emit, w) for w in wins])
    p_fit = np.array([_brute_window(s, t, e, w) for w in wins])
    emp = np.array([c for c, b in zip(win.counts, win.begin) if b]) / len(seqs)
    assert np.abs(p_fit - p_true).sum() < 0.05
    assert np.abs(emp - p_true).sum() < 0.05
    # and the sequences' likelihood of the fit is close to the truth's
    from fastspectral.hmm import em as E
    ll_true = E.log_probability(enc, start, trans, emit).sum()
    ll_fit = E.log_probability(enc, s, t, e).sum()
    assert abs(ll_fit - ll_true) / enc.n_events < 0.01


@pytest.mark.slow
def test_restarts_keep_the_best_window_likelihood_and_floor():
    rng = np.random.default_rng(2)
    start, trans, emit = _hmm(rng, 3, 4)
    seqs = _sample(start, trans, emit, 400, rng)
    enc = _enc(seqs)
    win = MI.windows_from_sequences(enc.offsets, enc.ids, 4, 3)
    info = {}
    s, t, e = MI.hmm_from_moments(None, 3, random_state=0, restarts=3, iterations=30,
                                  windows=win, info=info, init=None)
    assert info["chosen"] == int(np.argmax(info["loglik"]))
    assert info["iterations"] <= 3 * 30 and info["windows"] == len(win.W)
    for x in (s, t, e):
        assert np.allclose(np.asarray(x).sum(axis=-1), 1.0)
    s2, t2, e2 = MI.hmm_from_moments(None, 3, random_state=0, restarts=3, iterations=30,
                                     windows=win, floor=0.1, init=None)
    assert np.all(t2 >= 0.1 / 3 - 1e-12) and np.allclose(t2.sum(axis=1), 1.0)
    assert np.allclose(e2.sum(axis=1), 1.0) and np.allclose(e2[:, -1], e[:, -1])
    # screening: 2 iterations per start, then the best continues
    info = {}
    MI.hmm_from_moments(None, 3, random_state=0, restarts=3, iterations=10, screen=2,
                        windows=win, info=info, tol=None, init=None)
    assert info["iterations"] == 3 * 2 + 9
    with pytest.raises(ValueError):
        MI.hmm_from_moments(None, 0, windows=win, init=None)
    with pytest.raises(ValueError):
        MI.window_table(S.frame(enc, 4), 4, 0)


@pytest.mark.slow
def test_moment_start_as_em_start():
    """The start plugged into EM: EM from it runs, and its first iterate is at least as good
    on the training data as the start (EM's monotonicity from this start)."""
    from fastspectral.hmm import em as E
    start, trans, emit, seqs, enc, win = _known_windows(4, 2000)
    s, t, e = MI.hmm_from_moments(None, 2, random_state=0, restarts=2, iterations=50,
                                  windows=win, init=None)
    s1, t1, e1, ll0 = E.em_step(enc, s, t, e)
    ll1 = E.baum_welch_stats(enc, s1, t1, e1)[0]
    assert ll1 >= ll0 - 1e-8
    # from the hidden-state model's Hankel data, as the estimator passes it
    H = S.hankel_data(enc, 3, 0)
    info = {}
    s2, t2, e2 = MI.hmm_from_moments(H, 2, random_state=0, restarts=1, iterations=5, info=info)
    assert s2.shape == (2,) and t2.shape == (2, 2) and e2.shape == (2, 4)
    assert len(info["loglik"]) == 2                   # the class start and one random start
    with pytest.raises(ValueError, match="init"):
        MI.hmm_from_moments(H, 2, init="anchors")
    # the dense Hankel statistics of the estimator's tag path: the same windows
    D = S.dense_hankel(enc, 3, 512)
    assert D is not None
    s3, t3, e3 = MI.hmm_from_moments(D, 2, random_state=0, restarts=1, iterations=5)
    assert np.allclose(s3, s2) and np.allclose(t3, t2) and np.allclose(e3, e2)


@pytest.mark.slow
def test_trigram_estep_equals_the_generic_one():
    """Windows of length 3 take the prefix-grouped E-step: the same likelihood and expected
    counts as the batched forward-backward over every window."""
    rng = np.random.default_rng(7)
    start, trans, emit = _hmm(rng, 3, 5)
    seqs = _sample(start, trans, emit, 500, rng)
    enc = _enc(seqs)
    win = MI.windows_from_sequences(enc.offsets, enc.ids, 5, 3)
    s = MI._random_start(win, 4, np.random.default_rng(0))
    a = MI._estep(win, *s, MI._onehot(win))
    b = MI._estep(win, *s, MI._plan(win))
    assert isinstance(MI._plan(win), MI._TrigramPlan)
    assert b[0] == pytest.approx(a[0], rel=1e-12)
    for x, y in zip(a[1:], b[1:]):
        assert np.allclose(x, y, rtol=1e-10, atol=1e-12)


@pytest.mark.slow
def test_small_trigram_estep_equals_the_numpy_one(monkeypatch):
    """The one-pass compiled E-step for few states gives the NumPy version's likelihood and
    expected counts (windows that open sequences, padding after the end included)."""
    rng = np.random.default_rng(8)
    start, trans, emit = _hmm(rng, 3, 5)
    seqs = _sample(start, trans, emit, 400, rng)
    enc = _enc(seqs)
    win = MI.windows_from_sequences(enc.offsets, enc.ids, 5, 3)
    plan = MI._plan(win)
    for m in (1, 2, 5):
        s = MI._random_start(win, m, np.random.default_rng(m))
        monkeypatch.setattr(MI, "SMALL_ESTEP", 0)
        a = MI._estep(win, *s, plan)
        monkeypatch.setattr(MI, "SMALL_ESTEP", 64)
        b = MI._estep(win, *s, plan)
        assert b[0] == pytest.approx(a[0], rel=1e-12)
        for x, y in zip(a[1:], b[1:]):
            assert x.shape == y.shape
            assert np.allclose(x, y, rtol=1e-10, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("n_split", [None, 2, 1, 0])
def test_split_without_noise_keeps_the_distribution(n_split):
    """Splitting states into exchangeable copies (noise 0) leaves the probability of every
    sequence and every window unchanged; with noise the pair's masses still add up to the
    parent's and every row is a distribution."""
    from fastspectral.hmm import em as E
    rng = np.random.default_rng(11)
    start, trans, emit = _hmm(rng, 3, 4)
    q = rng.dirichlet(np.ones(3))
    seqs = _sample(start, trans, emit, 200, rng)
    enc = _enc(seqs)
    win = MI.windows_from_sequences(enc.offsets, enc.ids, 4, 3)
    s2, t2, e2, q2 = MI.split_states(start, trans, emit, q, n_split, noise=0.0, rng=0)
    k = 3 if n_split is None else n_split
    assert s2.shape == (3 + k,) and t2.shape == (3 + k, 3 + k) and e2.shape == (3 + k, 5)
    assert np.allclose(E.log_probability(enc, s2, t2, e2),
                       E.log_probability(enc, start, trans, emit), rtol=1e-12)
    assert MI.window_loglik(win, s2, t2, e2, q2) == pytest.approx(
        MI.window_loglik(win, start, trans, emit, q), rel=1e-12)
    s3, t3, e3, q3 = MI.split_states(start, trans, emit, q, n_split, noise=0.2, rng=0)
    for x in (s3, q3, t3, e3):
        assert np.all(x > 0) and np.allclose(x.sum(axis=-1), 1.0)
    if k:
        src = np.sort(np.argsort(-q)[:k])
        assert np.allclose(s3[src] + s3[3:], start[src])
        assert np.allclose(t3[:, src] + t3[:, 3:], trans[np.r_[0:3, src]][:, src])
        assert not np.allclose(e3[src], e3[3:])       # the symmetry is broken
    with pytest.raises(ValueError, match="n_split"):
        MI.split_states(start, trans, emit, q, 4)


@pytest.mark.slow
def test_progressive_splitting():
    """The sizes double up to m; every window-EM stage never lowers the window likelihood
    and a split (small noise) starts the next stage near the previous stage's end; the result
    is a model with m states."""
    assert MI.split_sizes(40, 3) == [5, 10, 20, 40]
    assert MI.split_sizes(10, 2) == [3, 5, 10]
    assert MI.split_sizes(7, 0) == [7] and MI.split_sizes(1, 3) == [1]
    start, trans, emit, seqs, enc, win = _known_windows(6, 3000)
    info = {}
    s, t, e = MI.hmm_by_splitting(None, 4, random_state=0, levels=2, restarts=2,
                                  iterations=15, final_iterations=25, tol=None, init=None,
                                  direct=None, windows=win, info=info)
    assert info["sizes"] == [1, 2, 4] and info["iterations"][1:] == [15, 25]
    assert np.all(np.diff(info["loglik"]) >= -1e-3)   # a split loses at most the noise
    assert s.shape == (4,) and t.shape == (4, 4) and e.shape == (4, 4)
    for x in (s, t, e):
        assert np.allclose(x.sum(axis=-1), 1.0)
    # from the estimator's Hankel data with the class start at the first size
    H = S.hankel_data(enc, 3, 0)
    info = {}
    s2, t2, e2 = MI.hmm_by_splitting(H, 3, random_state=0, iterations=5, final_iterations=5,
                                     info=info)
    assert t2.shape == (3, 3) and info["sizes"] == [1, 2, 3]
    assert info["chosen"] in ("split", "direct") and len(info["iterations"]) == 4
    with pytest.raises(ValueError, match="states"):
        MI.hmm_by_splitting(None, 4, levels=1, windows=win, direct=None,
                            init=(np.ones(3) / 3, np.ones((3, 3)) / 3, np.ones((3, 4)) / 4))


@pytest.mark.slow
def test_splitting_beside_the_direct_fit_keeps_the_better_window_likelihood():
    """With a direct start at m the better route by window likelihood is kept, screened or
    not; the screened run continues only the winner."""
    start, trans, emit, seqs, enc, win = _known_windows(9, 2000)
    rng = np.random.default_rng(3)
    d = MI._random_start(win, 4, rng)[:3]
    for screen in (0, 5):
        info = {}
        MI.hmm_by_splitting(None, 4, random_state=1, levels=1, restarts=1, iterations=10,
                            final_iterations=20, tol=None, init=None, direct=d, screen=screen,
                            windows=win, info=info)
        split_ll, direct_ll = info["loglik"][1], info["loglik"][2]
        assert info["chosen"] == ("direct" if direct_ll > split_ll else "split")
        if screen:
            assert info["iterations"] == [10, 5, 5, 15]
        else:
            assert info["iterations"] == [10, 20, 20]
    with pytest.raises(ValueError, match="direct"):
        MI.hmm_by_splitting(None, 4, levels=1, restarts=1, init=None, windows=win,
                            direct=tuple(x[:3] for x in d[:1]) + d[1:])


def test_split_start_as_an_estimator_option():
    """``spectral_init="split"``: the estimator starts EM from :func:`hmm_by_splitting`'s
    defaults, and EM from it never lowers the training likelihood."""
    from fastspectral.hmm import HMM
    from fastspectral.hmm.model import SPECTRAL_INITS
    start, trans, emit, seqs, enc, win = _known_windows(12, 400)
    strs = [[f"s{x}" for x in s] for s in seqs if s]
    assert "split" in SPECTRAL_INITS
    h = HMM(n_states=4, method="spectral-em", spectral_init="split", iterations=3,
            backoff_weight=0.2, random_state=0).fit(strs)
    assert h.start_.shape == (4,) and np.all(np.diff(h.train_loglik_) >= -1e-8)
    h0 = HMM(n_states=4, method="spectral-em", spectral_init="split", iterations=0,
             backoff_weight=0.2, random_state=0).fit(strs)
    assert h0.start_.shape == (4,)
    with pytest.raises(ValueError, match="spectral_init"):
        HMM(n_states=4, method="spectral-em", spectral_init="splits").fit(strs)


@pytest.mark.parametrize("length", [2, 4, 5])
def test_prefix_estep_equals_the_generic_one(length):
    """Windows of length != 3 take the level-by-level prefix E-step: the same likelihood and
    expected counts as the batched forward-backward over every window."""
    rng = np.random.default_rng(7)
    start, trans, emit = _hmm(rng, 3, 5)
    seqs = _sample(start, trans, emit, 300, rng)
    enc = _enc(seqs)
    win = MI.windows_from_sequences(enc.offsets, enc.ids, 5, length)
    plan = MI._plan(win)
    assert isinstance(plan, MI._PrefixPlan)
    s = MI._random_start(win, 4, np.random.default_rng(0))
    a = MI._estep(win, *s, MI._onehot(win))
    b = MI._estep(win, *s, plan)
    assert b[0] == pytest.approx(a[0], rel=1e-12)
    for x, y in zip(a[1:], b[1:]):
        assert np.allclose(x, y, rtol=1e-10, atol=1e-12)


def test_refinement_on_longer_windows():
    """``refine``: window EM on 4-gram windows after the trigram fit, its likelihood
    non-decreasing (EM on the 4-gram composite likelihood)."""
    start, trans, emit, seqs, enc, win = _known_windows(13, 500)
    H = S.hankel_data(enc, 3, 0)
    info = {}
    s, t, e = MI.hmm_by_splitting(H, 3, random_state=0, levels=1, iterations=5,
                                  final_iterations=5, refine=6, tol=None, info=info)
    assert info["refine_iterations"] == 6 and t.shape == (3, 3)
    w4 = MI.window_table(H.F, H.M, 4)
    assert info["refine_windows"] == len(w4.W)
    *_, hist = MI.window_em(w4, s, t, e, info["occupancy"], iterations=4, tol=None)
    assert np.all(np.diff(hist) >= -1e-10)
    assert hist[0] >= info["refine_loglik"] - 1e-9
