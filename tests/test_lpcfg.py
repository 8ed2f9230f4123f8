"""SpectralLPCFG: estimation pieces, consistency with the plain PCFG, parsing, persistence, CLI."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from conftest import need
from fastspectral.errors import NotFittedError
from fastspectral.lpcfg import SpectralLPCFG
from fastspectral.lpcfg.estimate import smoothed_pair, smoothed_triple, truncated_svd
from fastspectral.lpcfg.features import feature_matrices
from fastspectral.lpcfg.latent import ParseStats
from fastspectral.synthetic import LatentPCFG
from fastspectral.trees import read_ptb



def _words(t):
    return [w for w, tag in t.pos() if tag != "-NONE-"]


@pytest.fixture(scope="module")
def wsj_path(shared_data):
    return need(shared_data / "ptb" / "wsj-sample.mrg")


@pytest.fixture(scope="module")
def wsj_small(wsj_path):
    return list(itertools.islice(read_ptb(wsj_path), 400))


@pytest.fixture(scope="module")
def fitted(wsj_small):
    return SpectralLPCFG(n_states=4, min_count=30).fit(wsj_small)


# ----------------------------------------------------------------------------- pieces
@pytest.mark.parametrize("shape,k", [((40, 30), 4), ((1500, 80), 5), ((600, 500), 6)])
def test_truncated_svd_matches_dense(shape, k):
    """All three branches (dense, thin Gram, randomized) on a sparse matrix of rank k + 2."""
    rng = np.random.default_rng(0)
    r = k + 2
    B = rng.normal(size=(shape[0], r)) * (rng.uniform(size=(shape[0], r)) < 0.2)
    C = rng.normal(size=(r, shape[1])) * (rng.uniform(size=(r, shape[1])) < 0.2)
    A = B @ np.diag(np.geomspace(10, 1, r)) @ C
    S = sp.csr_matrix(A)
    with threadpool_limits(limits=1):
        U, s, Vt = truncated_svd(S, k)
    s_ref = np.linalg.svd(A, compute_uv=False)[:k]
    np.testing.assert_allclose(s, s_ref, rtol=1e-6)
    np.testing.assert_allclose(U.T @ U, np.eye(k), atol=1e-8)
    np.testing.assert_allclose(U.T @ (S @ Vt.T), np.diag(s), atol=1e-6 * s[0])


def test_feature_matrices_scaling_and_layout():
    # three nodes of label 0, one of label 1; key 7 twice for label 0
    keys = np.array([[7, 9], [7, 0], [8, 9], [7, 0]], dtype=np.int64)
    label = np.array([0, 0, 0, 1], dtype=np.int32)
    X, row_ptr, col_ptr, order, rowpos = feature_matrices(keys, label, 2, kappa=1.0)
    assert row_ptr.tolist() == [0, 3, 4]
    assert col_ptr.tolist() == [0, 3, 4]          # label 0: keys 7, 8, 9; label 1: key 7
    D = X.toarray()
    assert D.shape == (4, 4)
    s7 = np.sqrt(3 / (2 + 1.0))
    s8 = np.sqrt(3 / (1 + 1.0))
    s9 = np.sqrt(3 / (2 + 1.0))
    np.testing.assert_allclose(D[rowpos[0]], [s7, 0, s9, 0])
    np.testing.assert_allclose(D[rowpos[2]], [0, s8, s9, 0])
    np.testing.assert_allclose(D[rowpos[3]], [0, 0, 0, np.sqrt(1 / 2.0)])


def test_smoothing_interpolates_and_keeps_exact_when_off():
    rng = np.random.default_rng(1)
    z, y2, y3 = rng.normal(size=(50, 2)), rng.normal(size=(50, 3)), rng.normal(size=(50, 2))
    exact = np.einsum("ni,nj,nk->ijk", z, y2, y3) / 50
    np.testing.assert_allclose(smoothed_triple(z, y2, y3, 0.0), exact)
    sm = smoothed_triple(z, y2, y3, 1e9)             # all weight on the unigram product
    np.testing.assert_allclose(sm, np.einsum("i,j,k->ijk", z.mean(0), y2.mean(0), y3.mean(0)),
                               atol=1e-6)
    np.testing.assert_allclose(smoothed_pair(z, y2, 0.0), z.T @ y2 / 50)


# ----------------------------------------------------------------------------- the model
def test_one_state_lpcfg_is_the_pcfg(wsj_small):
    """With m = 1 the spectral estimates are the relative frequencies: same trees as the PCFG."""
    m1 = SpectralLPCFG(n_states=1, coarse_threshold=None, prune_threshold=0.0).fit(wsj_small)
    pc = m1.pcfg_
    pc.prune_threshold = None                      # exhaustive PCFG for an exact comparison
    sents = [_words(t) for t in wsj_small if 3 <= len(_words(t)) <= 9][:10]
    assert len(sents) >= 5
    ours = m1.parse(sents, jobs=1)
    ref = pc.parse(sents, jobs=1)
    assert [str(t) for t in ours] == [str(t) for t in ref]
    assert m1.last_parse_stats_.fallback_pcfg == 0
    # and the tensors are exactly the rule probabilities
    g = pc.grammar_
    np.testing.assert_allclose(m1.lpcfg_.T, g.bin_prob)


def test_parse_outputs_trees_over_the_input(fitted, wsj_small):
    sents = [_words(t) for t in wsj_small[300:330]]
    sents.append(["Zorblax", "quibbled", "frobnicately", "."])          # unknown words
    sents.append([])
    out = fitted.parse(sents, jobs=2)
    assert len(out) == len(sents)
    for s, t in zip(sents, out):
        assert t.leaves() == s
        assert t.label == "TOP"
    st = fitted.last_parse_stats_
    assert isinstance(st, ParseStats)
    assert st.sentences == len(sents) and st.empty == 1
    assert st.items_lpcfg > 0 and st.items_pcfg >= st.items_lpcfg
    # the counters are per call, not accumulated across calls
    fitted.parse(sents[:3], jobs=1)
    assert fitted.last_parse_stats_.sentences == 3 and fitted.last_parse_stats_.empty == 0
    # given tags are respected
    words = sents[0]
    tags = [tg for _, tg in wsj_small[300].pos() if tg != "-NONE-"]
    tagged = fitted.parse([words], tags=[tags])[0]
    assert [tg for _, tg in tagged.pos()] == tags


def test_states_capped_and_singular_value_table(fitted):
    m = fitted.states_
    assert m.max() <= 4 and m.min() >= 1 and (m > 1).sum() >= 5
    table = fitted.singular_value_table(top=4)
    assert table.splitlines()[0].startswith("symbol")
    assert "NP" in table
    for a, s in fitted.singular_values_.items():
        assert np.all(np.diff(s) <= 1e-9 * s[0])      # sorted, non-negative
        assert fitted.states_[a] <= len(s)


def test_save_load_roundtrip(fitted, wsj_small, tmp_path):
    from fastspectral.io import load

    path = tmp_path / "m.lpcfg"
    fitted.save(path)
    again = load(path)
    assert isinstance(again, SpectralLPCFG)
    sents = [_words(t) for t in wsj_small[350:365]]
    assert [str(t) for t in again.parse(sents, jobs=1)] == [str(t) for t in fitted.parse(sents, jobs=1)]
    assert again.singular_value_table() == fitted.singular_value_table()
    t = wsj_small[5]
    assert again.tree_probability(t) == pytest.approx(fitted.tree_probability(t), rel=1e-12)


def test_errors():
    with pytest.raises(ValueError):
        SpectralLPCFG(n_states=0).fit([])
    with pytest.raises(NotFittedError):
        SpectralLPCFG().parse([["a"]])
    with pytest.raises(ValueError):
        SpectralLPCFG().fit([])
    with pytest.raises(TypeError):
        SpectralLPCFG().fit(["(S (NN a))"])
    with pytest.raises(ValueError):
        SpectralLPCFG(moment_smoothing=-1).fit([])
    with pytest.raises(ValueError):
        SpectralLPCFG(lexicon="bogus").fit([])
    with pytest.raises(ValueError, match="moment_backoff"):
        SpectralLPCFG(moment_backoff="tree").fit([])


def test_symbol_backoff_gives_fewer_negative_marginals(wsj_small):
    """The three-level smoothing (Cohen et al. 2013) against the two levels of the rule's own
    means, on held-out WSJ sentences: far fewer negative L-PCFG marginals (on section 22 from
    the 3,914-tree sample: 37 % -> 9 % of the items)."""
    train, test = wsj_small[:300], [t.leaves() for t in wsj_small[300:360]]
    neg = {}
    for backoff in ("rule", "symbol"):
        model = SpectralLPCFG(n_states=4, min_count=30, moment_backoff=backoff, jobs=1)
        model.fit(train).parse(test)
        st = model.last_parse_stats_
        neg[backoff] = st.negative_marginals / max(1, st.items_lpcfg)
    assert neg["symbol"] < 0.7 * neg["rule"], neg


def test_parse_arguments(fitted):
    with pytest.raises(TypeError):
        fitted.parse(["a", "flat", "sentence"])
    with pytest.raises(ValueError):
        fitted.parse([["a"]], jobs=0)
    with pytest.raises(ValueError):
        fitted.parse([["a"]], tags=[["DT"], ["NN"]])
    # a generator of sentences is accepted
    out = fitted.parse(s for s in [["the", "dog"], ["a", "cat"]])
    assert [t.leaves() for t in out] == [["the", "dog"], ["a", "cat"]]


def test_estimator_contract(fitted):
    from fastspectral.base import clone

    p = fitted.get_params()
    assert p["moment_smoothing"] == 30.0 and p["random_state"] == 0
    assert p["svd_iterations"] == 3 and p["svd_oversamples"] == 10
    assert "smoothing" not in p and "seed" not in p
    c = clone(fitted)
    assert c.get_params() == p and not c._is_fitted()
    assert repr(SpectralLPCFG(n_states=3)) == "SpectralLPCFG(n_states=3)"
    assert SpectralLPCFG.kind == "spectral-lpcfg"
    assert fitted.fit_time_ > 0 and fitted.n_train_trees_ == 400


@pytest.mark.slow
def test_sampled_estimate_converges_on_synthetic_lpcfg():
    """p_hat(tree) approaches p(tree) of the true L-PCFG as the sample grows (small, fast)."""
    gm = LatentPCFG.default(n_states=2, seed=3, max_depth=400)
    test = gm.sample(60, seed=99, max_len=400)
    p = np.array([gm.tree_probability(t) for t in test])
    errs = []
    for M, seed in ((300, 1), (6000, 2)):
        mdl = SpectralLPCFG(n_states=2, v=1, h=None, lexicon="mle", moment_smoothing=0.0,
                            min_count=1).fit(gm.sample(M, seed=seed, max_len=400))
        ph = np.array([mdl.tree_probability(t) for t in test])
        errs.append(np.median(np.abs(ph - p) / p))
    assert errs[1] < 0.6 * errs[0]
    assert errs[1] < 0.3


def test_cli_train(wsj_small, tmp_path):
    from fastspectral.cli import main
    from fastspectral.io import load

    tb = tmp_path / "train.mrg"
    tb.write_text("\n".join(str(t) for t in wsj_small[:150]) + "\n")
    sv = tmp_path / "sv.txt"
    out = tmp_path / "m.spectral"
    assert main(["train", "spectral", str(tb), "-o", str(out), "--states", "3", "--min-count",
                 "50", "--moment-smoothing", "10", "--moment-backoff", "rule",
                 "--singular-values", str(sv)]) == 0
    model = load(out)
    assert isinstance(model, SpectralLPCFG) and model.n_states == 3
    assert model.moment_smoothing == 10.0 and model.min_count == 50
    assert model.moment_backoff == "rule"
    assert model.states_.max() <= 3
    assert sv.read_text().startswith("symbol")


@pytest.mark.slow
def test_hundred_word_sentence(fitted, wsj_small):
    """A 100-word input (training sentences run together) parses with bounded work; when the
    coarse pass prunes away every fine derivation the chunk is retried with less pruning."""
    flat = [w for t in wsj_small for w in _words(t)]
    for start in range(0, 4000, 250):
        words = flat[start:start + 100]
        if np.isfinite(fitted.pcfg_.log_probability([words])[0]):
            break
    else:
        pytest.fail("no 100-word window the PCFG can parse")
    out = fitted.parse([words], jobs=2)[0]
    assert out.leaves() == words
    st = fitted.last_parse_stats_
    assert st.items_lpcfg > 0 and st.fallback_flat == 0
    # an input the PCFG cannot parse at all gets the flat fallback tree
    odd = ["."] * 30
    if not np.isfinite(fitted.pcfg_.log_probability([odd])[0]):
        t = fitted.parse([odd])[0]
        assert t.leaves() == odd and fitted.last_parse_stats_.fallback_flat == 1
