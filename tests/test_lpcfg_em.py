"""EM for L-PCFGs: compiled E-step against brute-force enumeration, monotone likelihood,
normalisation, persistence and parsing."""

import numpy as np
import pytest

from fastspectral.grammar.grammar import Grammar
from fastspectral.grammar.pcfg import PCFG
from _lpcfg_brute import brute_force_counts
from fastspectral.lpcfg.em import EMLPCFG
from fastspectral.lpcfg.features import extract_nodes
from fastspectral.lpcfg.latent_params import LatentLayout, e_step, m_step, uniform_counts
from fastspectral.trees.transforms import prepare
from fastspectral.trees.tree import Tree


def _layout(trees, m_value=2, min_count=1, rare_threshold=1, v=1, h=1):
    fine = [prepare(t, v, h) for t in trees]
    g = Grammar.from_trees(fine, PCFG().lexicon_options())
    nodes = extract_nodes(fine, g)
    cnt = np.bincount(nodes.label, minlength=g.n_symbols)
    m = np.where(cnt >= min_count, m_value, 1)
    return LatentLayout(nodes, g, m, rare_threshold)


TINY = [
    "(TOP (S (NP (DT the) (NN dog)) (VP (VBZ barks))))",
    "(TOP (S (NP (NN dogs)) (VP (VBZ bark) (ADVP (RB loudly)))))",
    "(TOP (NP (DT the) (JJ big) (NN dog)))",
]


@pytest.mark.parametrize("m_value", [2, 3])
def test_e_step_matches_brute_force(m_value):
    trees = [Tree.fromstring(s) for s in TINY]
    lay = _layout(trees, m_value)
    assert lay.un_nodes.size > 0 and lay.rnodes.size > 0  # unary and binary rules are exercised
    params = m_step(lay, uniform_counts(lay, noise=0.8, seed=3))
    es = e_step(lay, params, jobs=2)
    counts = es.counts
    ref = brute_force_counts(lay, params)
    assert es.log_likelihood == pytest.approx(ref.log_likelihood, rel=1e-10)
    np.testing.assert_allclose(es.tree_log_likelihood, ref.tree_log_likelihood, rtol=1e-10)
    for name in ("T", "U", "L", "c1"):
        np.testing.assert_allclose(getattr(counts, name), getattr(ref.counts, name), rtol=1e-9,
                                   atol=1e-12)
    # expected counts of each tree's root states sum to one per tree
    assert counts.c1.sum() == pytest.approx(len(trees))


def test_long_tree_does_not_underflow():
    words = " ".join(f"(NN w{i})" for i in range(300))
    t = Tree.fromstring(f"(TOP (NP {words}))")
    lay = _layout([t], 4)
    params = m_step(lay, uniform_counts(lay, noise=0.5, seed=1))
    es = e_step(lay, params)
    assert np.isfinite(es.log_likelihood) and es.log_likelihood < -300
    assert es.counts.c1.sum() == pytest.approx(1.0)


def _normalisation_error(lay, p):
    """max |sum over rules / children / classes of t(. | a, h1) - 1| over live (a, h1)."""
    m = lay.m
    tot = np.zeros(int(lay.soff[-1]))
    for r in range(len(lay.bin_parent)):
        a = lay.bin_parent[r]
        blk = p.T[lay.toff[r]:lay.toff[r + 1]].reshape(m[a], -1)
        tot[lay.soff[a]:lay.soff[a + 1]] += blk.sum(1)
    for u in range(len(lay.un_parent)):
        a = lay.un_parent[u]
        blk = p.U[lay.uoff[u]:lay.uoff[u + 1]].reshape(m[a], -1)
        tot[lay.soff[a]:lay.soff[a + 1]] += blk.sum(1)
    for row in range(len(lay.lex_sym)):
        a = lay.lex_sym[row]
        tot[lay.soff[a]:lay.soff[a + 1]] += p.L[lay.loff[row]:lay.loff[row + 1]] * lay.row_frac[row]
    live = np.repeat(lay.sym_count > 0, m)
    return np.abs(tot[live] - 1).max(), abs(p.c1.sum() - 1)


def test_em_monotone_and_normalised(synthetic_grammar):
    g = synthetic_grammar
    trees = g.sample(300, seed=1)
    lay = _layout(trees, 3, min_count=5)
    params = m_step(lay, uniform_counts(lay, noise=0.3, seed=0))
    lls = []
    for _ in range(6):
        es = e_step(lay, params)
        counts = es.counts
        lls.append(es.log_likelihood)
        params = m_step(lay, counts, smooth=0.0)
        err_rules, err_root = _normalisation_error(lay, params)
        assert err_rules < 1e-9 and err_root < 1e-9
    diffs = np.diff(lls)
    assert np.all(diffs >= -1e-8 * abs(lls[0])), lls
    assert lls[-1] > lls[0] + 1.0  # it actually learns
    # smoothing keeps the parameters normalised
    params = m_step(lay, counts, smooth=0.1)
    assert max(_normalisation_error(lay, params)) < 1e-9


def test_symmetric_start_does_not_break_symmetry(synthetic_grammar):
    g = synthetic_grammar
    trees = g.sample(100, seed=2)
    lay = _layout(trees, 2, min_count=5)
    params = m_step(lay, uniform_counts(lay))  # no noise: all states identical
    for _ in range(3):
        params = m_step(lay, e_step(lay, params).counts)
    r = next(r for r in range(len(lay.bin_parent)) if lay.m[lay.bin_parent[r]] == 2)
    blk = params.T[lay.toff[r]:lay.toff[r + 1]].reshape(2, -1)
    np.testing.assert_allclose(blk[0], blk[1], rtol=1e-9)


@pytest.fixture(scope="module")
def synthetic(synthetic_grammar):
    g = synthetic_grammar
    return g.sample(1500, seed=1), g.sample(120, seed=2)


@pytest.mark.slow
def test_em_model_fit_parse_save_load(synthetic, tmp_path):
    from fastspectral.eval.evalb import evaluate
    from fastspectral.io import load

    train, test = synthetic
    model = EMLPCFG(n_states=2, iterations=8, v=1, h=1, min_count=5, parent_smoothing=0.0,
                    jobs=2)
    model.fit(train)
    hist = [ll for _, ll, _ in model.history_]
    assert len(hist) == 8 and all(b >= a - 1e-8 * abs(a) for a, b in zip(hist, hist[1:]))
    assert model.n_iter_ == 8 and model.fit_time_ > 0
    sents = [t.leaves() for t in test]
    out = model.parse(sents)
    f1 = evaluate(test, out).fmeasure
    pcfg_f1 = evaluate(test, PCFG(v=1, h=1).fit(train).parse(sents)).fmeasure
    assert f1 > 85.0 and f1 >= pcfg_f1 - 1.0
    # the model's tree probabilities are genuine probabilities
    p = [model.tree_probability(t) for t in test[:20]]
    assert all(0.0 < x < 1.0 for x in p)
    path = tmp_path / "em.model"
    model.save(path)
    again = load(path)
    assert isinstance(again, EMLPCFG)
    assert [str(t) for t in again.parse(sents[:30])] == [str(t) for t in out[:30]]
    assert again.tree_probability(test[0]) == pytest.approx(p[0], rel=1e-12)


def test_callback_and_early_stop(synthetic):
    train, _ = synthetic
    seen = []

    def cb(it, model, ll):
        seen.append((it, ll))
        assert model.parse([["the", "dog"]])[0].label == "TOP"
        return it == 2

    EMLPCFG(n_states=2, iterations=5, v=1, h=1, min_count=5).fit(train[:200], callback=cb)
    assert [it for it, _ in seen] == [1, 2]


def test_validation():
    with pytest.raises(ValueError):
        EMLPCFG(init="bogus").fit([Tree.fromstring(TINY[0])])
    with pytest.raises(ValueError):
        EMLPCFG(parent_smoothing=1.5).fit([Tree.fromstring(TINY[0])])
    with pytest.raises(ValueError):
        EMLPCFG(iterations=-1).fit([Tree.fromstring(TINY[0])])
    with pytest.raises(ValueError, match="pivot_options"):
        EMLPCFG(init="pivot", pivot_options={"em_iterations": 3}).fit([Tree.fromstring(TINY[0])])
    with pytest.raises(ValueError, match="mixture_iterations"):
        EMLPCFG(init="pivot", pivot_options={"mixture_iterations": 0}).fit(
            [Tree.fromstring(TINY[0])])
    with pytest.raises(TypeError):
        EMLPCFG(random_state="x").fit([Tree.fromstring(TINY[0])])
