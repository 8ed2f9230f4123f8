"""The public hooks of PCFG used by the L-PCFG models: fit_prepared, lexicon_options,
best_tags, state / from_state."""
import numpy as np
import pytest

from fastspectral import NotFittedError, PCFG
from fastspectral.grammar.grammar import Grammar
from fastspectral.trees import Tree
from fastspectral.trees.transforms import prepare

TREES = [
    "(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .)))",
    "(TOP (S (NP (DT A) (JJ big) (NN cat)) (VP (VBD saw) (NP (DT the) (NN dog))) (. .)))",
    "(TOP (S (NP (PRP She)) (VP (VBZ sees) (NP (DT a) (NN cat)) (PP (IN with) (NP (NNS eyes)))) (. .)))",
    "(TOP (S (NP (DT The) (NNS cats)) (VP (VBP run)) (. .)))",
    "(TOP (NP (DT the) (JJ old) (NN dog)))",
    "(TOP (S (NP (NNP John)) (VP (VBD gave) (NP (PRP her)) (NP (DT a) (NN book))) (. .)))",
]
SENTS = [["The", "cat", "sees", "the", "dog", "."], ["She", "barks", "."],
         ["A", "dog", "saw", "John", "with", "eyes", "."]]


@pytest.fixture(scope="module")
def trees():
    return [Tree.fromstring(s) for s in TREES]


@pytest.fixture(scope="module")
def fitted(trees):
    return PCFG(v=2, h=1, jobs=1).fit(trees)


def _strings(model, sents=SENTS):
    return [str(t) for t in model.parse(sents, jobs=1)]


def test_fit_prepared_matches_fit(trees, fitted):
    model = PCFG(v=2, h=1, jobs=1)
    fine = [prepare(t, model.v, model.h, model.tag_parent) for t in trees]
    coarse = Grammar.from_trees([prepare(t, 1, 0, False) for t in trees], model.lexicon_options())
    assert model.fit_prepared(fine, coarse=coarse) is model
    assert model.grammar_.symbols == fitted.grammar_.symbols
    assert model.coarse_ is coarse
    np.testing.assert_array_equal(model.proj_, fitted.proj_)
    assert model.root_label_ == fitted.root_label_ == "S"
    assert model.n_train_trees_ == len(trees)
    assert model.fit_time_ >= 0
    assert _strings(model) == _strings(fitted)


def test_fit_prepared_with_a_given_grammar_and_no_coarse(trees):
    model = PCFG(v=2, h=1, jobs=1)
    fine = [prepare(t, 2, 1, True) for t in trees]
    g = Grammar.from_trees(fine, model.lexicon_options())
    model.fit_prepared(fine, grammar=g, fit_time=1.5)
    assert model.grammar_ is g and model.coarse_ is None
    assert model.fit_time_ == 1.5
    # without a coarse grammar the parse is exhaustive: same trees as a model without pruning
    ref = PCFG(v=2, h=1, prune_threshold=None, jobs=1).fit(trees)
    assert _strings(model) == _strings(ref)
    with pytest.raises(ValueError):
        PCFG().fit_prepared([])


def test_lexicon_options_follow_the_parameters():
    assert PCFG(rare_threshold=3, lex_smoothing=0.25, sig_smoothing=2.0).lexicon_options() == \
        {"rare_threshold": 3, "s1": 0.25, "s2": 2.0}


def test_best_tags(fitted):
    assert fitted.best_tags(["barks"]) == ["VBZ"]
    assert fitted.best_tags(["the", "dog"]) == ["DT", "NN"]
    # given tags are respected
    assert fitted.best_tags(["dog", "the"], ["JJ", None]) == ["JJ", "DT"]
    with pytest.raises(NotFittedError):
        PCFG().best_tags(["dog"])


def test_state_round_trip(fitted, tmp_path):
    meta, arrays = fitted.state()
    assert all(k.startswith(("fine_", "coarse_")) for k in arrays)
    back = PCFG.from_state(meta, arrays)
    assert back.get_params() == fitted.get_params()
    assert back.root_label_ == fitted.root_label_
    assert back.n_train_trees_ == fitted.n_train_trees_
    np.testing.assert_array_equal(back.proj_, fitted.proj_)
    assert _strings(back) == _strings(fitted)
    # the model file holds exactly the state
    path = tmp_path / "m.pcfg"
    fitted.save(path)
    loaded = PCFG.load(path)
    assert _strings(loaded) == _strings(fitted)
    with pytest.raises(NotFittedError):
        PCFG().state()
