"""``state_map``: the states of single symbols of the L-PCFG learners (Narayan & Cohen 2016
choose them per nonterminal), the spectral learner's decomposition reused for fewer states,
and ``train --state-map FILE``."""
from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
from conftest import data_path, need
from test_partial_fit import assert_same_arrays, assert_same_model, split


@pytest.fixture(scope="module")
def trees():
    from fastspectral.trees import read_ptb

    return list(read_ptb(need(data_path("ptb", "wsj-sample.mrg"))))[:500]


def _sym(model, name):
    return model.pcfg_.grammar_.sym_index[name]


def test_spectral_state_map_sets_single_symbols(trees):
    from fastspectral.base import clone
    from fastspectral.lpcfg import SpectralLPCFG

    plain = SpectralLPCFG(n_states=4, jobs=1).fit(trees)
    model = SpectralLPCFG(n_states=4, jobs=1, state_map={"NP^S": 2, "NN": 6}).fit(trees)
    assert plain.states_[_sym(plain, "NP^S")] == 4
    assert model.states_[_sym(model, "NP^S")] == 2
    assert model.states_[_sym(model, "NN")] == 6
    others = np.ones(len(model.states_), dtype=bool)
    others[[_sym(model, "NP^S"), _sym(model, "NN")]] = False
    assert np.array_equal(model.states_[others], plain.states_[others])
    assert clone(model).get_params()["state_map"] == {"NP^S": 2, "NN": 6}
    # an empty map is no map
    empty = SpectralLPCFG(n_states=4, jobs=1, state_map={}).fit(trees)
    assert_same_arrays(plain, empty.set_params(state_map=None))


def test_spectral_state_map_overrides_min_count(trees):
    from fastspectral.lpcfg import SpectralLPCFG

    model = SpectralLPCFG(n_states=3, min_count=10**9, jobs=1,
                          state_map={"NP^S": 3}).fit(trees)
    assert model.states_[_sym(model, "NP^S")] == 3
    assert int(model.states_.max()) == 3 and int(np.sum(model.states_ > 1)) == 1


def test_spectral_state_map_round_trips_through_the_model_file(trees, tmp_path):
    import fastspectral
    from fastspectral.lpcfg import SpectralLPCFG

    model = SpectralLPCFG(n_states=3, jobs=1, state_map={"VP^S": 2}).fit(trees)
    path = tmp_path / "m.fsm"
    model.save(path)
    back = fastspectral.load(path)
    assert back.state_map == {"VP^S": 2}
    assert np.array_equal(back.states_, model.states_)
    words = [t.leaves() for t in trees[:20]]
    assert [str(t) for t in back.parse(words)] == [str(t) for t in model.parse(words)]


def test_decomposition_for_more_states_serves_fewer(trees):
    """What the per-symbol search relies on: the estimate from a decomposition of the same
    targets is fit's, bit for bit; from a decomposition for more states, each symbol gets the
    states asked for."""
    from fastspectral.lpcfg import SpectralLPCFG
    from fastspectral.lpcfg.latent import resolve_random_state

    model = SpectralLPCFG(n_states=4, jobs=1)
    fitted = SpectralLPCFG(n_states=4, jobs=1).fit(trees)
    prep = model._prepare_treebank(trees, 0.0)
    seed = resolve_random_state(model.random_state)
    g, nodes = prep.grammar, prep.nodes
    counts = np.bincount(nodes.label, minlength=g.n_symbols)
    base = model._target_states(g, counts)
    same = model._estimate_from(model._decompose(nodes, g, seed), nodes, g, prep.n_trees)
    model._install(prep.pcfg, same.arrays)
    model.singular_values_ = same.singular_values
    model.n_train_trees_ = prep.n_trees
    model.fit_time_ = fitted.fit_time_
    model.pruner_ = None
    assert_same_arrays(fitted, model)

    wide = model._decompose(nodes, g, seed, targets=np.where(base > 1, 6, base))
    targets = base.copy()
    np_s = _sym(fitted, "NP^S")
    targets[np_s] = 2
    est = model._estimate_from(wide, nodes, g, prep.n_trees, targets)
    m = est.arrays.lpcfg.m
    assert m[np_s] == 2
    assert np.array_equal(m[base <= 1], base[base <= 1])
    assert np.all(m[base > 1] <= 4)
    assert np.all(np.isfinite(est.arrays.lpcfg.T))


@pytest.mark.parametrize("bad", [{"NP^S": 0}, {"NP^S": 2.5}, {"NP^S": True}, {3: 2},
                                 ["NP^S"]])
def test_state_map_validation(trees, bad):
    from fastspectral.lpcfg import EMLPCFG, SpectralLPCFG

    for cls in (SpectralLPCFG, EMLPCFG):
        with pytest.raises(ValueError, match="state_map"):
            cls(n_states=2, jobs=1, state_map=bad).fit(trees[:50])


def test_unknown_symbols_warn(trees):
    from fastspectral.lpcfg import SpectralLPCFG

    with pytest.warns(UserWarning, match="state_map: 1 symbols not in the grammar.*'NOPE'"):
        SpectralLPCFG(n_states=2, jobs=1, state_map={"NOPE": 3, "NP^S": 2}).fit(trees[:100])


def test_pruner_states_cap_the_state_map(trees):
    from fastspectral.lpcfg import SpectralLPCFG

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = SpectralLPCFG(n_states=4, pruner_states=2, jobs=1,
                              state_map={"NP^S": 4, "NN": 3}).fit(trees)
    assert model.pruner_.state_map == {"NP^S": 2, "NN": 2}
    assert int(model.pruner_.states_.max()) <= 2
    assert model.states_[_sym(model, "NN")] == 3


def test_em_state_map(trees):
    from fastspectral.lpcfg import EMLPCFG

    model = EMLPCFG(n_states=3, iterations=1, jobs=1, state_map={"NP": 2}).fit(trees[:200])
    assert model.states_[_sym(model, "NP")] == 2


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 3])
def test_partitions_with_a_state_map(trees, k):
    from fastspectral.lpcfg import EMLPCFG, SpectralLPCFG

    smap = {"NP^S": 2, "NN": 5}
    a = SpectralLPCFG(n_states=4, jobs=1, state_map=smap).fit(trees)
    b = SpectralLPCFG(n_states=4, jobs=1, state_map=smap).fit_partitions(split(trees, k))
    assert_same_model(a, b, exact=False)
    assert np.array_equal(a.states_, b.states_)
    kw = dict(n_states=3, iterations=2, jobs=1, state_map={"NP": 2})
    assert_same_model(EMLPCFG(**kw).fit(trees), EMLPCFG(**kw).fit_partitions(split(trees, k)),
                      exact=False)


def test_partition_statistics_of_other_state_maps_do_not_merge(trees):
    from fastspectral.lpcfg import SpectralLPCFG

    a = SpectralLPCFG(n_states=3, jobs=1, state_map={"NP^S": 2})
    b = SpectralLPCFG(n_states=3, jobs=1)
    pa, pb = a.prepare_partition(trees[:100]), b.prepare_partition(trees[100:200])
    ctx = a.fit_statistics(a.sufficient_statistics(pa) + a.sufficient_statistics(pb))
    fa, fb = a.sufficient_statistics(pa, ctx), b.sufficient_statistics(pb, ctx)
    with pytest.raises(ValueError, match="different settings"):
        fa + fb


def _train(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "fastspectral", "train", *args],
                          capture_output=True, text=True, cwd=tmp_path)


@pytest.mark.parametrize("kind", ["spectral", "em"])
def test_train_state_map_file(trees, tmp_path, kind):
    import fastspectral

    tb = tmp_path / "train.mrg"
    tb.write_text("\n".join(str(t) for t in trees[:200]) + "\n")
    smap = tmp_path / "states.txt"
    sym = "NP^S" if kind == "spectral" else "NP"
    smap.write_text(json.dumps({sym: 2}))
    extra = ["--iterations", "1"] if kind == "em" else []
    r = _train(tmp_path, kind, str(tb), "-o", "m.fsm", "--states", "3", "--state-map",
               str(smap), "--jobs", "1", "-q", *extra)
    assert r.returncode == 0, r.stderr
    model = fastspectral.load(tmp_path / "m.fsm")
    assert model.state_map == {sym: 2}
    assert model.states_[_sym(model, sym)] == 2


@pytest.mark.parametrize("text, message", [
    ('{"NP^S": 2,\n "VP^S" 3}', "states.txt:2: not JSON"),
    ('["NP^S", 2]', "states.txt: expected a JSON object"),
    ('{"NP^S": 0}', "states.txt: the states of 'NP^S' must be an integer >= 1, got 0"),
    ('{"NP^S": 2.5}', "got 2.5"),
    ('{"NP^S": true}', "got True"),
])
def test_train_state_map_errors(trees, tmp_path, text, message):
    tb = tmp_path / "train.mrg"
    tb.write_text("\n".join(str(t) for t in trees[:50]) + "\n")
    (tmp_path / "states.txt").write_text(text)
    r = _train(tmp_path, "spectral", str(tb), "-o", "m.fsm", "--state-map", "states.txt",
               "-q")
    assert r.returncode != 0
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "m.fsm").exists()


def test_train_state_map_missing_file(trees, tmp_path):
    tb = tmp_path / "train.mrg"
    tb.write_text("\n".join(str(t) for t in trees[:50]) + "\n")
    r = _train(tmp_path, "spectral", str(tb), "-o", "m.fsm", "--state-map", "nope.txt", "-q")
    assert r.returncode != 0 and "nope.txt" in r.stderr and "Traceback" not in r.stderr


def test_state_map_is_json_in_the_model_file(trees, tmp_path):
    from fastspectral.lpcfg import SpectralLPCFG

    model = SpectralLPCFG(n_states=2, jobs=1, state_map={"NP^S": 2}).fit(trees[:100])
    meta, _ = model._model_file()
    json.dumps(meta)
