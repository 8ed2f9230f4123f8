"""Pivot (anchor) L-PCFG learning: planted-model recovery, the compiled convex EM, normalisation,
Pivot+EM, persistence and the command line."""
import numpy as np
import pytest

from fastspectral.grammar.grammar import Grammar
from fastspectral.grammar.pcfg import PCFG
from fastspectral.lpcfg.em import EMLPCFG
from fastspectral.lpcfg.features import extract_nodes
from fastspectral.lpcfg.latent_params import LatentLayout, state_counts
from fastspectral.lpcfg.pivot import PivotLPCFG, group_mixture_em

from _anchored import AnchoredExample
from fastspectral.trees.transforms import prepare


@pytest.fixture(scope="module")
def planted():
    ex = AnchoredExample(seed=0)
    return ex, ex.sample(4000, seed=1)


def test_planted_recovery(planted):
    ex, trees = planted
    model = PivotLPCFG(**ex.fit_options(), jobs=2).fit(trees)
    err = ex.recovery_error(model)
    # every state of NP, VP, D, N, V was anchored
    g = model.pcfg_.grammar_
    assert all(model.anchored_states_[g.sym_index[a]] == 2 for a in ("NP", "VP", "D", "N", "V"))
    assert err["t"] < 0.06 and err["q"] < 0.03 and err["pi"] < 0.03, err


def test_recovery_improves_with_more_data(planted):
    ex, trees = planted
    small = ex.recovery_error(PivotLPCFG(**ex.fit_options()).fit(ex.sample(300, seed=5)))
    large = ex.recovery_error(PivotLPCFG(**ex.fit_options()).fit(trees))
    assert large["t"] < small["t"] and large["q"] < small["q"]


def test_group_mixture_em_matches_reference():
    from fastspectral.linalg import mixture_weights_em

    rng = np.random.default_rng(0)
    m, n = 4, 300
    comps = rng.dirichlet(np.ones(12), size=m).T          # 12 outcomes x m components
    w_true = np.array([0.5, 0.3, 0.15, 0.05])
    h = rng.choice(m, size=n, p=w_true)
    x = np.array([rng.choice(12, p=comps[:, k]) for k in h])
    counts = np.bincount(x, minlength=12).astype(float)
    E = np.concatenate([comps[x].ravel(), [1.0]])
    e1 = np.arange(n) * m
    one = np.full(n, E.shape[0] - 1)
    res = group_mixture_em(np.zeros(n, np.int64), e1, one, one, [m], [1], [1], E,
                           max_iter=5000, tol=1e-13)
    t = res.t
    ref = mixture_weights_em(counts[None, :], comps, max_iter=5000, tol=1e-13)[0]
    np.testing.assert_allclose(t, ref, atol=2e-4)
    assert t.sum() == pytest.approx(1.0)


def test_group_mixture_em_three_way_is_a_stationary_point():
    rng = np.random.default_rng(1)
    n, m1, m2, m3 = 200, 2, 3, 2
    E1 = rng.uniform(0.1, 1, (n, m1))
    E2 = rng.uniform(0.1, 1, (n, m2))
    E3 = rng.uniform(0.1, 1, (n, m3))
    E = np.concatenate([E1.ravel(), E2.ravel(), E3.ravel(), [1.0]])
    o2, o3 = n * m1, n * m1 + n * m2
    res = group_mixture_em(np.zeros(n, np.int64), np.arange(n) * m1,
                           o2 + np.arange(n) * m2, o3 + np.arange(n) * m3, [m1], [m2],
                           [m3], E, max_iter=3000, tol=1e-14)
    ll = res.loglik
    T = res.t.reshape(m1, m2, m3)
    Z = np.einsum("abc,na,nb,nc->n", T, E1, E2, E3)
    grad = np.einsum("na,nb,nc->abc", E1 / Z[:, None], E2, E3) / n
    # KKT on the simplex: the gradient equals 1 on the support
    support = T > 1e-6
    np.testing.assert_allclose(grad[support], 1.0, atol=1e-3)
    assert np.all(grad[~support] <= 1.0 + 1e-3)
    assert ll[0] == pytest.approx(np.mean(np.log(Z)), rel=1e-9)


def _numpy_group_em(T, E1, E2, E3, w, iters):
    """Plain EM steps for one group (reference for the factored kernel)."""
    for _ in range(iters):
        Z = np.einsum("abc,na,nb,nc->n", T, E1, E2, E3)
        acc = np.einsum("n,na,nb,nc->abc", w / Z, E1, E2, E3) * T
        T = acc / acc.sum()
    return T


def test_group_mixture_em_shared_evidence_many_groups():
    """Several groups of different shapes (and one empty), items sharing E1 vectors (the
    kernel's factored path), weights: each group equals plain EM step for step."""
    rng = np.random.default_rng(7)
    shapes = [(3, 2, 4), (1, 1, 1), (2, 3, 1), (4, 4, 4), (2, 2, 2)]
    n_items = [60, 5, 40, 150, 0]
    chunks, groups, e1, e2, e3, w, refs = [np.ones(1)], [], [], [], [], [], []
    pos = 1
    for g, ((m1, m2, m3), n) in enumerate(zip(shapes, n_items)):
        pool = rng.uniform(0.05, 1, (5, m1))               # 5 distinct E1 vectors, shared
        chunks.append(pool.ravel())
        pool_off = pos + np.arange(5) * m1
        pos += pool.size
        pick = rng.integers(0, 5, n)
        E2 = rng.uniform(0.05, 1, (n, m2))
        E3 = rng.uniform(0.05, 1, (n, m3))
        chunks += [E2.ravel(), E3.ravel()]
        o2 = pos + np.arange(n) * m2
        pos += E2.size
        o3 = pos + np.arange(n) * m3
        pos += E3.size
        wg = rng.integers(1, 4, n).astype(float)
        groups.append(np.full(n, g))
        e1.append(pool_off[pick])
        e2.append(o2)
        e3.append(o3)
        w.append(wg)
        T0 = np.full((m1, m2, m3), 1.0 / (m1 * m2 * m3))
        refs.append(_numpy_group_em(T0, pool[pick], E2, E3, wg, 25) if n else T0)
    E = np.concatenate(chunks)
    perm = rng.permutation(sum(n_items))                    # items in any order
    cat = [np.concatenate(x)[perm] for x in (groups, e1, e2, e3, w)]
    res = group_mixture_em(cat[0], cat[1], cat[2], cat[3],
                           [s[0] for s in shapes], [s[1] for s in shapes],
                           [s[2] for s in shapes], E, weight=cat[4],
                           max_iter=25, tol=-1.0, jobs=2)
    for g, ref in enumerate(refs):
        np.testing.assert_allclose(res.t[res.toff[g]:res.toff[g + 1]], ref.ravel(), rtol=1e-9,
                                   atol=1e-12)
    assert list(res.iters) == [25, 25, 25, 25, 0]


def test_pivot_parameters_are_normalised(planted):
    ex, trees = planted
    fine = [prepare(t, 1, 1) for t in trees[:1500]]
    g = Grammar.from_trees(fine, PCFG().lexicon_options())
    nodes = extract_nodes(fine, g)
    opts = ex.fit_options()
    est = PivotLPCFG(**opts)
    m = state_counts(nodes, g, opts["n_states"], None, opts["min_count"], opts["state_map"])
    lay = LatentLayout(nodes, g, m, 0)
    p = est._learn(lay, 0).params
    assert np.all(p.T >= 0) and np.all(p.U >= 0) and np.all(p.L >= 0) and np.all(p.c1 >= 0)
    tot = np.zeros(int(lay.soff[-1]))
    for r in range(len(lay.bin_parent)):
        a = lay.bin_parent[r]
        tot[lay.soff[a]:lay.soff[a + 1]] += p.T[lay.toff[r]:lay.toff[r + 1]].reshape(m[a], -1).sum(1)
    for row in range(len(lay.lex_sym)):
        a = lay.lex_sym[row]
        tot[lay.soff[a]:lay.soff[a + 1]] += p.L[lay.loff[row]:lay.loff[row + 1]] * lay.row_frac[row]
    np.testing.assert_allclose(tot, 1.0, atol=1e-9)
    assert p.c1.sum() == pytest.approx(1.0)


def test_pivot_em_starts_better_than_random(planted):
    ex, trees = planted
    opts = ex.fit_options()
    opts["pivot_options"] = {"feature_pairs": opts.pop("feature_pairs")}
    piv = EMLPCFG(iterations=2, init="pivot", parent_smoothing=0.0, **opts).fit(trees[:2000])
    rnd = EMLPCFG(iterations=2, init="random", parent_smoothing=0.0, **opts).fit(trees[:2000])
    assert piv.history_[0][1] > rnd.history_[0][1] + 100.0
    assert piv.history_[1][1] >= piv.history_[0][1]
    assert ex.recovery_error(piv)["t"] < 0.08


@pytest.mark.slow
def test_save_load_and_cli(tmp_path, synthetic_grammar):
    from fastspectral.cli import main
    from fastspectral.io import load

    g = synthetic_grammar
    trees = g.sample(400, seed=3)
    tb = tmp_path / "train.trees"
    tb.write_text("\n".join(str(t) for t in trees) + "\n")
    sent = tmp_path / "sents.txt"
    sent.write_text("\n".join(" ".join(t.leaves()) for t in trees[:5]) + "\n")
    for kind, cls in (("pivot", PivotLPCFG), ("em", EMLPCFG), ("pivot-em", EMLPCFG)):
        out = tmp_path / f"{kind}.model"
        iterations = [] if kind == "pivot" else ["--iterations", "1"]   # pivot has no EM
        rc = main(["train", kind, str(tb), "-o", str(out), "--states", "2", *iterations,
                   "--v", "1", "--min-count", "5", "--jobs", "2",
                   "--pivot-features", "1,1", "0,0"])
        assert rc == 0
        model = load(out)
        assert isinstance(model, cls) and model.input_kind == "sentences"
        if kind == "pivot-em":
            assert model.init == "pivot" and model.iterations == 1
        parsed = tmp_path / f"{kind}.parsed"
        assert main(["parse", str(out), str(sent), "-o", str(parsed)]) == 0
        lines = parsed.read_text().splitlines()
        assert len(lines) == 5 and all(x.startswith("(TOP") for x in lines)
    model = PivotLPCFG(n_states=2, v=1, min_count=5).fit(trees)
    model.save(tmp_path / "p.model")
    again = PivotLPCFG.load(tmp_path / "p.model")
    sents = [t.leaves() for t in trees[:20]]
    assert [str(t) for t in again.parse(sents)] == [str(t) for t in model.parse(sents)]


def test_validation():
    ex = AnchoredExample()
    with pytest.raises(ValueError):
        PivotLPCFG(feature_pairs=((0, 9),)).fit(ex.sample(10))
    with pytest.raises(ValueError):
        PivotLPCFG(mixture_iterations=0).fit(ex.sample(10))
    with pytest.raises(ValueError):
        PivotLPCFG(parent_smoothing=1.0).fit(ex.sample(10))


def test_several_feature_pairs_are_aligned(planted):
    ex, trees = planted
    opts = {**ex.fit_options(), "feature_pairs": ((0, 0), (1, 1), (0, 4))}
    err = ex.recovery_error(PivotLPCFG(**opts).fit(trees))
    assert err["t"] < 0.08 and err["q"] < 0.05 and err["pi"] < 0.05, err


def test_cli_defaults_are_the_models_defaults(tmp_path, synthetic_grammar):
    """``fastspectral train pivot-em`` without options builds the classes' defaults; the pivot
    and EM learners share the defaults of their common options."""
    import inspect

    from fastspectral.cli import main
    from fastspectral.io import load

    em_sig = inspect.signature(EMLPCFG).parameters
    piv_sig = inspect.signature(PivotLPCFG).parameters
    for key in ("v", "h", "min_count", "rare_threshold", "prune_threshold", "coarse_threshold",
                "random_state", "state_map"):
        assert piv_sig[key].default == em_sig[key].default, key
    assert EMLPCFG().n_iterations == 50 and EMLPCFG(init="pivot").n_iterations == 4
    assert EMLPCFG(iterations=7).n_iterations == 7
    trees = synthetic_grammar.sample(300, seed=3)
    tb = tmp_path / "train.trees"
    tb.write_text("\n".join(str(t) for t in trees) + "\n")
    out = tmp_path / "pem.model"
    assert main(["train", "pivot-em", str(tb), "-o", str(out), "--states", "2",
                 "--iterations", "1", "--jobs", "2"]) == 0
    model = load(out)
    assert model.init == "pivot"
    for key in ("v", "h", "min_count", "parent_smoothing", "random_state"):
        assert getattr(model, key) == em_sig[key].default, key


def test_estimator_contract():
    from fastspectral.base import clone

    for cls, kind in ((PivotLPCFG, "pivot-lpcfg"), (EMLPCFG, "em-lpcfg")):
        assert cls.kind == kind
        names = cls._get_param_names()
        assert "random_state" in names and "parent_smoothing" in names
        assert "seed" not in names and "smoothing" not in names
        model = cls(n_states=3, jobs=1)
        assert repr(model) == f"{cls.__name__}(jobs=1, n_states=3)"
        assert clone(model).get_params() == model.get_params()
    assert "mixture_iterations" in PivotLPCFG._get_param_names()
    # EM lists only its own options: none of the pivot-only or spectral ones
    for name in ("feature_pairs", "kappa", "moment_smoothing", "lexicon", "mixture_iterations"):
        assert name not in EMLPCFG._get_param_names()
