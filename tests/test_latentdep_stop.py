"""The latent dependency model with STOP (valency) events (``stop_events=True``): the recursion
against brute force over hidden states, the estimator's equations on the exact population
moments, consistency, the option off = the paper's model, model files, the CLI flag."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from fastspectral.latentdep.kernels import fragment_log_prob, tree_log_prob
from fastspectral.latentdep.model import LatentDependencyModel
from fastspectral.latentdep.synthetic import LatentDependencyGenerator
from fastspectral.linalg.svd import randomized_svd
from fastspectral.trees.conll import DepSentence
from test_latentdep import _arrays


@pytest.fixture(scope="module")
def gen():
    # trees are capped at 400 nodes (a larger one is drawn again: never at this size); a
    # tight cap would bias the sample's moments (larger trees come from low-stop states)
    return LatentDependencyGenerator(n_states=3, n_words=10, seed=0, stop=(0.6, 0.9),
                                     max_nodes=400)


@pytest.fixture(scope="module")
def tiny(gen):
    sents = [s for s in gen.sample(400, seed=5) if 2 <= len(s.words) <= 6]
    sents.append(DepSentence(words=["w1", "w2", "w3", "w4", "w5", "w6"],
                             heads=[3, 3, 0, 3, 6, 3]))
    assert len(sents) >= 10 and any(len(s.words) >= 5 for s in sents)
    return sents[-12:]


def test_generator_shapes_depend_on_the_states(gen):
    """The stop model's trees: finite, sizes as the branching process says (states with a
    higher stop probability take fewer children)."""
    sents = gen.sample(3000, seed=1)
    sizes = np.array([len(s.words) for s in sents])
    assert gen.rejected == 0
    # the mean size of the sampled (capped) trees is near the expected size of the process
    assert abs(sizes.mean() - gen.expected_nodes().sum()) < 0.5
    # the paper's generator (no stop) is unchanged by the new parameter
    a = LatentDependencyGenerator(n_states=3, n_words=10, seed=0)
    assert a.stop is None and a.s_L is None
    b = LatentDependencyGenerator(n_states=3, n_words=10, seed=0, stop=(0.6, 0.9))
    np.testing.assert_array_equal(a.T_L, b.T_L)
    np.testing.assert_array_equal(a.O, b.O)
    with pytest.raises(ValueError, match="infinite"):
        LatentDependencyGenerator(n_states=3, n_words=10, seed=0, stop=(0.05, 0.1))


def test_recursion_with_stop_equals_brute_force(gen, tiny):
    """The kernel with the STOP operators (hidden-state basis) == the sum over all state
    tuples of p(x, valency | y); without them it is p(x | y), which differs."""
    brute = np.array([gen.brute_force_prob(s) for s in tiny])
    np.testing.assert_allclose(np.exp(gen.log_prob(tiny)), brute, rtol=1e-10)
    leaf, E_L, E_R, c1 = gen._hidden_basis(gen.O)
    no_stop, _, _ = tree_log_prob(*_arrays(gen, tiny), leaf, E_L, E_R, c1)
    assert not np.allclose(np.exp(no_stop), brute, rtol=1e-3)


@pytest.mark.parametrize("k", [None, 5])
@pytest.mark.parametrize("stop_weight", [1.0, 0.3])
def test_population_moments_give_the_exact_probabilities(gen, tiny, k, stop_weight):
    """The estimator's equations (eq. 1s-7s, ``_stop_operators``) applied to the exact
    population moments of the model with valency reproduce p(x, valency | y) by brute force
    (one-hot words), or its smoothed version (k-dimensional word vectors), to 1e-8."""
    F = np.eye(gen.n_words) if k is None else \
        np.random.default_rng(1).normal(size=(gen.n_words, k))
    pm = gen.population_moments(F)
    if k is None:
        np.testing.assert_allclose(pm["smoothed_emission"], gen.O, atol=1e-12)
    model = LatentDependencyModel(n_states=3, ridge=0.0, stop_events=True,
                                  stop_weight=stop_weight)
    W, E_L, E_R, S_L, S_R, c1, _ = model._stop_operators(
        pm["X"], pm["SL"], pm["SR"], pm["nL"], pm["nR"], pm["weights"], pm["root"], 3, 0,
        randomized_svd)
    arrays = _arrays(gen, tiny)
    logabs, sign, status = tree_log_prob(*arrays, F @ W, E_L, E_R, c1, S_L, S_R)
    assert (status == 0).all()
    brute = np.array([gen.brute_force_prob(s, emission=pm["smoothed_emission"]) for s in tiny])
    np.testing.assert_allclose(sign * np.exp(logabs), brute, rtol=1e-8)
    # the STOP operators matter: without them, or with the left one on both sides (every
    # node takes both, so only a wrong operator shows), the result is not the model
    la2, sg2, _ = tree_log_prob(*arrays, F @ W, E_L, E_R, c1)
    assert not np.allclose(sg2 * np.exp(la2), brute, rtol=1e-3)
    la3, sg3, _ = tree_log_prob(*arrays, F @ W, E_L, E_R, c1, S_L, S_L)
    assert not np.allclose(sg3 * np.exp(la3), brute, rtol=1e-3)


@pytest.mark.parametrize("k", [None, 5])
def test_adjacency_population_moments(gen, tiny, k):
    """stop_adjacency: two STOP symbols (the side has no child / has children).  On this
    model's trees the population estimate is exactly p(x, valency | y) prod_{i, d} P(a_d(i) |
    h_i) (the class of each side as a further emission), by brute force, to 1e-8."""
    F = np.eye(gen.n_words) if k is None else \
        np.random.default_rng(1).normal(size=(gen.n_words, k))
    pm = gen.population_moments(F)
    model = LatentDependencyModel(n_states=3, ridge=0.0, stop_events=True,
                                  stop_adjacency=True)
    W, E_L, E_R, S_L, S_R, c1, _ = model._stop_operators(
        pm["X"], pm["SL"], pm["SR"], pm["nL"], pm["nR"], pm["weights"], pm["root"], 3, 0,
        randomized_svd, aL=pm["aL"], aR=pm["aR"])
    assert S_L.shape == (2, 3, 3)
    arrays = _arrays(gen, tiny)
    logabs, sign, _ = tree_log_prob(*arrays, F @ W, E_L, E_R, c1, S_L, S_R)
    emis = pm["smoothed_emission"]
    brute = np.array([gen.brute_force_prob(s, emission=emis, adjacency=True) for s in tiny])
    np.testing.assert_allclose(sign * np.exp(logabs), brute, rtol=1e-8)
    # the two symbols' operators sum to the single STOP operator
    one = model._stop_operators(pm["X"], pm["SL"], pm["SR"], pm["nL"], pm["nR"],
                                pm["weights"], pm["root"], 3, 0, randomized_svd)
    la1, sg1, _ = tree_log_prob(*arrays, F @ one[0], one[1], one[2], one[5], one[3], one[4])
    plain = np.array([gen.brute_force_prob(s, emission=emis) for s in tiny])
    np.testing.assert_allclose(sg1 * np.exp(la1), plain, rtol=1e-8)
    assert not np.allclose(brute, plain, rtol=1e-3)


def test_adjacency_fit_and_file(gen, tmp_path):
    import fastspectral

    train, test = gen.sample(2000, seed=3), gen.sample(60, seed=4)
    m = LatentDependencyModel(n_states=3, embeddings="one-hot", ridge=1e-3,
                              stop_events=True, stop_adjacency=True).fit(train)
    assert m.stop_L_.shape == (2, 3, 3)
    lp = m.log_prob(test)
    assert np.isfinite(lp).all()
    m.save(tmp_path / "a.ldep")
    back = fastspectral.load(tmp_path / "a.ldep")
    np.testing.assert_array_equal(back.log_prob(test), lp)
    np.testing.assert_array_equal(back.fragment_log_prob(test)[0], m.fragment_log_prob(test)[0])
    with pytest.raises(ValueError, match="needs stop_events"):
        LatentDependencyModel(stop_adjacency=True).fit(train)


@pytest.mark.slow
def test_estimates_converge(gen):
    """p-hat(x, valency | y) -> p: the median relative error on held-out trees shrinks from
    1e3 to 1e4 training trees (one-hot words) and is small at 1e4."""
    test = gen.sample(300, seed=99)
    truth = gen.log_prob(test)
    errs = {}
    for n in (1000, 10000):
        model = LatentDependencyModel(n_states=3, embeddings="one-hot", ridge=1e-3,
                                      stop_events=True)
        model.fit(gen.sample(n, seed=1))
        lp, sg = model.log_prob(test, return_sign=True)
        errs[n] = float(np.median(np.abs(sg * np.exp(lp - truth) - 1)))
    assert errs[10000] < 0.1, errs
    assert errs[10000] < 0.7 * errs[1000], errs
    # the paper's model (no valency) fitted to the same trees does not estimate this p
    plain = LatentDependencyModel(n_states=3, embeddings="one-hot", ridge=1e-3)
    plain.fit(gen.sample(10000, seed=1))
    lp, sg = plain.log_prob(test, return_sign=True)
    assert np.median(np.abs(sg * np.exp(lp - truth) - 1)) > 3 * errs[10000]


def test_stop_events_off_is_the_papers_model(gen):
    """stop_events=False: no STOP operators, and the kernels give exactly (bit for bit) what
    they give without the new arguments; the default is off."""
    assert LatentDependencyModel().stop_events is False
    train, test = gen.sample(2000, seed=3), gen.sample(100, seed=4)
    model = LatentDependencyModel(n_states=3, embeddings="one-hot", ridge=1e-3).fit(train)
    assert model.stop_L_ is None and model.stop_R_ is None
    off, par, words = _arrays(gen, test)
    ids = np.asarray([model._lookup()[w] for s in test for w in s.words], np.int64)
    ref = tree_log_prob(off, par, ids, model.leaf_, model.E_L_, model.E_R_, model.c1_)
    np.testing.assert_array_equal(model.log_prob(test), ref[0])
    # an identity STOP operator gives the same values (up to rounding)
    eye = np.eye(3)
    np.testing.assert_allclose(tree_log_prob(off, par, ids, model.leaf_, model.E_L_,
                                             model.E_R_, model.c1_, eye, eye)[0], ref[0],
                               rtol=1e-12, atol=1e-12)
    stop = LatentDependencyModel(n_states=3, embeddings="one-hot", ridge=1e-3,
                                 stop_events=True).fit(train)
    assert stop.stop_L_.shape == (3, 3)
    assert not np.allclose(stop.log_prob(test), model.log_prob(test))


def test_fragments_with_stop(gen):
    """Fragment scores with STOP: each node's fragment applies its own STOP operators (its
    children are leaves); a single-node tree's fragment is its tree."""
    model = LatentDependencyModel(n_states=3, embeddings="one-hot", ridge=1e-3,
                                  stop_events=True).fit(gen.sample(3000, seed=2))
    one = [DepSentence(words=["w3"], heads=[0])]
    np.testing.assert_allclose(model.fragment_log_prob(one)[0], model.log_prob(one),
                               rtol=1e-12)
    s = DepSentence(words=["w1", "w2", "w3"], heads=[2, 0, 2])
    frag, _ = model.fragment_log_prob([s])
    parts = [DepSentence(words=["w1", "w2", "w3"], heads=[2, 0, 2]),
             DepSentence(words=["w1"], heads=[0]), DepSentence(words=["w3"], heads=[0])]
    lp = model.log_prob(parts)
    # the sum of the three fragments, from the operators directly
    leaf, c1 = model.leaf_, model.c1_
    S_L, S_R = model.stop_L_, model.stop_R_
    ix = model._lookup()
    v = {w: leaf[ix[w]] for w in ("w1", "w2", "w3")}
    head = c1 @ (S_R @ (np.einsum("abj,j->ab", model.E_R_, v["w3"]) @
                       (S_L @ (np.einsum("abj,j->ab", model.E_L_, v["w1"]) @ v["w2"]))))
    leaf1 = c1 @ (S_R @ (S_L @ v["w1"]))
    leaf3 = c1 @ (S_R @ (S_L @ v["w3"]))
    np.testing.assert_allclose(frag[0], np.log(abs(head)) + np.log(abs(leaf1)) +
                               np.log(abs(leaf3)), rtol=1e-10)
    np.testing.assert_allclose(lp[1:], [np.log(abs(leaf1)), np.log(abs(leaf3))], rtol=1e-10)


def test_model_file_round_trip_and_old_files(gen, tmp_path):
    import fastspectral
    from fastspectral.io.modelfile import load_model_file, save_model_file

    train, test = gen.sample(2000, seed=6), gen.sample(50, seed=7)
    stop = LatentDependencyModel(n_states=3, dim=6, stop_events=True, stop_weight=0.5)
    stop.fit(train)
    stop.save(tmp_path / "s.ldep")
    back = fastspectral.load(tmp_path / "s.ldep")
    assert back.stop_events is True and back.stop_weight == 0.5
    np.testing.assert_array_equal(back.log_prob(test), stop.log_prob(test))
    np.testing.assert_array_equal(back.fragment_log_prob(test)[0],
                                  stop.fragment_log_prob(test)[0])
    # a file written before stop events (no such parameters, no STOP arrays) still loads
    plain = LatentDependencyModel(n_states=3, dim=6).fit(train)
    meta, arrays = plain._model_file()
    del meta["params"]["stop_events"], meta["params"]["stop_weight"]
    save_model_file(tmp_path / "old.ldep", plain.kind, meta, arrays)
    old = fastspectral.load(tmp_path / "old.ldep")
    assert old.stop_events is False and old.stop_L_ is None
    np.testing.assert_array_equal(old.log_prob(test), plain.log_prob(test))
    # stop_events=True without the STOP arrays is a corrupt file
    meta, arrays = stop._model_file()
    del arrays["stop_L"]
    save_model_file(tmp_path / "bad.ldep", stop.kind, meta, arrays)
    with pytest.raises(Exception, match="STOP"):
        fastspectral.load(tmp_path / "bad.ldep")


def test_bad_parameters(gen):
    train = gen.sample(200, seed=1)
    with pytest.raises(ValueError, match="stop_events"):
        LatentDependencyModel(stop_events="yes").fit(train)
    with pytest.raises(ValueError, match="stop_weight"):
        LatentDependencyModel(stop_events=True, stop_weight=0).fit(train)


@pytest.mark.slow
def test_cli_stop_events_flag(gen, tmp_path):
    from fastspectral.trees.conll import write_conllu

    tb = tmp_path / "t.conllu"
    with open(tb, "w") as f:
        write_conllu(gen.sample(800, seed=6), f)
    out = tmp_path / "m.ldep"
    r = subprocess.run([sys.executable, "-m", "fastspectral", "train", "latent-dep", str(tb),
                        "-o", str(out), "--states", "3", "--dim", "6", "--stop-events",
                        "--stop-weight", "0.5"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import fastspectral
    m = fastspectral.load(out)
    assert m.stop_events is True and m.stop_weight == 0.5 and m.stop_L_.shape == (3, 3)


def test_rerank_dep_passes_the_option(tmp_path, capsys):
    """RerankDepParser(spectral=LatentDependencyModel(stop_events=True, ...)) and `train rerank-dep
    --stop-events [--stop-adjacency]` give a re-ranker whose spectral model scores valency;
    the model file keeps it and parses."""
    from fastspectral import cli
    from fastspectral.rerank import RerankDepParser
    from fastspectral.trees.conll import read_conllu, write_conllu

    g = LatentDependencyGenerator(n_states=3, n_words=12, seed=2, stop=(0.55, 0.85),
                                  max_nodes=30)
    sents = g.sample(260, seed=3)
    for s in sents:
        s.xpos = [w.upper() for w in s.words]
        s.upos = ["X"] * len(s.words)
    train, inp, model = tmp_path / "t.conllu", tmp_path / "in.conllu", tmp_path / "m.rr"
    with open(train, "w") as f:
        write_conllu(sents[:220], f)
    with open(inp, "w") as f:
        write_conllu(sents[220:], f)
    args = ["train", "rerank-dep", str(train), "-o", str(model), "--k", "5", "--iterations", "1",
            "--bits", "16", "--rerank-bits", "16", "--states", "2", "--spectral-input", "pos",
            "--stop-events", "--stop-adjacency", "-q"]
    assert cli.main(args) == 0
    m = RerankDepParser.load(model)
    assert m.spectral_.stop_events is True and m.spectral_.stop_adjacency is True
    assert m.spectral_.stop_L_.shape == (2, 2, 2)
    out = tmp_path / "o.conllu"
    assert cli.main(["parse", str(model), str(inp), "-o", str(out), "-q"]) == 0
    assert len(list(read_conllu(out))) == 40
    p = RerankDepParser(k=5, rerank_bits=16, spectral_input="pos",
                        spectral=LatentDependencyModel(n_states=2, stop_events=True))
    assert p._new_spectral().stop_events is True and p._new_spectral() is not p.spectral
    rc = cli.main(["train", "rerank-dep", str(train), "-o", str(tmp_path / "b"),
                   "--stop-adjacency", "-q"])
    assert rc == 2 and "--stop-adjacency needs --stop-events" in capsys.readouterr().err
    rc = cli.main(["train", "rerank-dep", str(train), "-o", str(tmp_path / "c"), "--features",
                   "base", "--stop-events", "-q"])
    assert rc == 2 and "--stop-events needs --features base+spectral" in \
        capsys.readouterr().err
