"""The pruning L-PCFG (``pruner_states``): a model with fewer states fitted beside the model on
the same prepared trees, whose marginals prune the items of the model's own pass.  With a
threshold of 0 it keeps every item of a probabilistic model, so the parses are those of the
model without it; it is saved in the model file and loaded with it; a sentence it leaves
without a parse is parsed again without it."""
import itertools

import numpy as np
import pytest

from conftest import need
from fastspectral.io import load
from fastspectral.lpcfg import EMLPCFG, PivotLPCFG, SpectralLPCFG
from fastspectral.trees import read_ptb


@pytest.fixture(scope="module")
def trees(shared_data):
    return list(itertools.islice(read_ptb(need(shared_data / "ptb" / "wsj-sample.mrg")), 300))


@pytest.fixture(scope="module")
def sentences(trees):
    return [[w for w, tag in t.pos() if tag != "-NONE-"] for t in trees[:40]]


@pytest.fixture(scope="module")
def em_pair(trees):
    model = EMLPCFG(n_states=4, iterations=3, min_count=30, pruner_states=2,
                    pruner_threshold=0.0, jobs=2).fit(trees)
    return model


def _strings(parses):
    return [str(t) for t in parses]


def test_the_pruner_is_the_same_learner_with_fewer_states(em_pair):
    pr = em_pair.pruner_
    assert isinstance(pr, EMLPCFG) and pr.pruner_ is None
    assert pr.n_states == 2 and pr.iterations == em_pair.iterations
    assert int(pr.states_.max()) == 2 and int(em_pair.states_.max()) == 4
    assert pr.pcfg_ is em_pair.pcfg_ and pr.vocab_ == em_pair.vocab_


def test_threshold_zero_keeps_the_parses(em_pair, sentences):
    with_pruner = em_pair.parse(sentences)
    st = em_pair.last_parse_stats_
    assert st.items_pruner == st.items_lpcfg > 0 and st.pruner_retries == 0
    saved = em_pair.pruner_
    try:
        em_pair.pruner_ = None
        without = em_pair.parse(sentences)
        assert em_pair.last_parse_stats_.items_pruner == 0
    finally:
        em_pair.pruner_ = saved
    assert _strings(with_pruner) == _strings(without)


def test_a_threshold_prunes_items_and_keeps_the_words(em_pair, sentences):
    em_pair.set_params(pruner_threshold=1e-3)
    try:
        parses = em_pair.parse(sentences)
        st = em_pair.last_parse_stats_
    finally:
        em_pair.set_params(pruner_threshold=0.0)
    assert 0 < st.items_lpcfg < st.items_pruner
    assert [t.leaves() for t in parses] == sentences


def test_no_usable_parse_after_the_pruner_is_parsed_without_it(em_pair, sentences):
    # above every marginal but the whole sentence's: no derivation is left, and each
    # sentence is parsed again at the next level, without the pruner
    em_pair.set_params(pruner_threshold=1.0)
    try:
        parses = em_pair.parse(sentences[:10])
        st = em_pair.last_parse_stats_
    finally:
        em_pair.set_params(pruner_threshold=0.0)
    assert st.pruner_retries > 0 and st.fallback_flat == 0
    assert [t.leaves() for t in parses] == sentences[:10]


def test_model_file_keeps_the_pruner(em_pair, sentences, tmp_path):
    path = tmp_path / "pem.model"
    em_pair.save(path)
    back = load(path)
    assert back.pruner_ is not None and back.pruner_.n_states == 2
    assert np.array_equal(back.pruner_.lex_table_, em_pair.pruner_.lex_table_)
    back.set_params(pruner_threshold=1e-3)
    em_pair.set_params(pruner_threshold=1e-3)
    try:
        assert _strings(back.parse(sentences)) == _strings(em_pair.parse(sentences))
    finally:
        em_pair.set_params(pruner_threshold=0.0)


def test_a_callback_saves_the_pruner_with_every_iteration(trees, tmp_path):
    seen = []

    def callback(it, est, loglik):
        est.n_train_trees_, est.fit_time_ = 120, 0.0     # what fit sets after the last one
        est.save(tmp_path / f"it{it}.model")
        seen.append(it)

    EMLPCFG(n_states=3, iterations=2, min_count=30, pruner_states=2,
            jobs=1).fit(trees[:120], callback=callback)
    assert seen == [1, 2]
    assert load(tmp_path / "it1.model").pruner_.n_states == 2


@pytest.mark.parametrize("cls,extra", [(SpectralLPCFG, {}), (PivotLPCFG, {})])
def test_other_learners_fit_a_pruner(cls, extra, trees, sentences):
    model = cls(n_states=4, min_count=30, pruner_states=2, jobs=1, **extra).fit(trees)
    assert type(model.pruner_) is cls and model.pruner_.n_states == 2
    parses = model.parse(sentences[:10])
    assert [t.leaves() for t in parses] == sentences[:10]
    assert model.last_parse_stats_.items_pruner > 0


def test_refitting_without_a_pruner_drops_it(trees):
    model = SpectralLPCFG(n_states=3, min_count=30, pruner_states=2).fit(trees[:120])
    assert model.pruner_ is not None
    model.set_params(pruner_states=None).fit(trees[:120])
    assert model.pruner_ is None


def test_errors(trees):
    with pytest.raises(ValueError, match="pruner_states"):
        SpectralLPCFG(n_states=4, pruner_states=4).fit(trees[:50])
    with pytest.raises(ValueError, match="pruner_states"):
        SpectralLPCFG(n_states=4, pruner_states=2).prepare_partition(trees[:5])
    with pytest.raises(ValueError, match="pruner_threshold"):
        SpectralLPCFG(n_states=4, pruner_threshold=2.0).fit(trees[:50])
