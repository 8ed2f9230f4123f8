"""The PCFG estimator: fit / parse / save / load on real WSJ trees, input checks and fallbacks."""
import itertools
import os

import numpy as np
import pytest
from conftest import data_path

from fastspectral import PCFG, ModelFileError, NotFittedError
from fastspectral.eval.evalb import evaluate
from fastspectral.trees import Tree, read_ptb
from fastspectral.trees.transforms import clean

DATA = str(data_path("ptb"))
SAMPLE = os.path.join(DATA, "wsj-sample.mrg")
WSJ22 = os.path.join(DATA, "wsj22.trees")

pytestmark = pytest.mark.skipif(not os.path.exists(SAMPLE), reason="../shared/data is absent")


@pytest.fixture(scope="module")
def train():
    return list(itertools.islice(read_ptb(SAMPLE), 600))


@pytest.fixture(scope="module")
def test_trees():
    return [t for t in itertools.islice(read_ptb(WSJ22), 60) if len(t.leaves()) <= 30][:25]


@pytest.fixture(scope="module")
def model(train):
    return PCFG(v=2, h=1).fit(train)


@pytest.mark.slow
def test_fit_sets_learned_state(model, train):
    assert model.n_train_trees_ == len(train)
    s = model.grammar_.summary()
    assert s["binary_rules"] > 1000 and s["preterminals"] > 30
    # rule probabilities of each left-hand side sum to one (binary + unary)
    g = model.grammar_
    tot = np.zeros(g.n_symbols)
    np.add.at(tot, g.bin_parent, g.bin_prob)
    np.add.at(tot, g.un_parent, g.un_prob)
    lhs = np.unique(np.concatenate([g.bin_parent, g.un_parent]))
    np.testing.assert_allclose(tot[lhs], 1.0, atol=1e-12)
    assert g.root_prob.sum() == pytest.approx(1.0)
    assert model.coarse_ is not None and model.proj_.shape == (g.n_symbols,)


def test_parse_gives_a_tree_per_sentence_with_the_words(model, test_trees):
    sents = [t.leaves() for t in test_trees]
    out = model.parse(sents, jobs=1)
    assert len(out) == len(sents)
    for words, tree in zip(sents, out):
        assert tree.label == "TOP"
        assert tree.leaves() == words
    r = evaluate([str(t) for t in test_trees], [str(t) for t in out])
    assert r.fmeasure > 55  # 600 training trees only; the full sample gives ~77 on all of §22


@pytest.mark.slow
def test_threads_and_pruning_do_not_change_results(model, test_trees):
    sents = [t.leaves() for t in test_trees]
    a = [str(t) for t in model.parse(sents, jobs=1)]
    b = [str(t) for t in model.parse(sents, jobs=2)]
    assert a == b
    exhaustive = PCFG(**{**model.get_params(), "prune_threshold": None})
    exhaustive.grammar_, exhaustive.coarse_ = model.grammar_, None
    exhaustive.root_label_ = model.root_label_
    c = [str(t) for t in exhaustive.parse(sents, jobs=2)]
    model.prune_threshold = 0.0          # a mask that keeps every item: identical to exhaustive
    try:
        d = [str(t) for t in model.parse(sents, jobs=2)]
    finally:
        model.prune_threshold = 1e-4
    assert c == d


def test_viterbi_decoding(train, test_trees):
    m = PCFG(v=1, h=1, decode="viterbi").fit(train[:300])
    out = m.parse([t.leaves() for t in test_trees[:5]])
    assert all(t.leaves() == s.leaves() for t, s in zip(out, test_trees[:5]))


def test_given_tags_are_used(model, test_trees):
    gold = [clean(t) for t in test_trees[:8]]
    words = [[w for w, _ in t.pos()] for t in gold]
    tags = [[p for _, p in t.pos()] for t in gold]
    out = model.parse(words, tags=tags)
    for t, tg in zip(out, tags):
        assert [p for _, p in t.pos()] == tg
    # a tag the grammar never saw falls back to the word's own distribution
    out = model.parse([["The", "cat", "sat"]], tags=[["DT", "NOT-A-TAG", "VBD"]])
    assert out[0].leaves() == ["The", "cat", "sat"]


def test_unknown_words_empty_and_long_sentences(model):
    out = model.parse([["Zorblax", "flurped", "the", "quibbling", "snarks-on-wheels", "42,000", "."],
                       [], ["the"] * 3])
    assert out[0].leaves()[0] == "Zorblax"
    assert out[1] == Tree("TOP", []) and model.last_parse_stats_.empty == 1
    long = ("the company said its net income rose 12 % in the third quarter , and " * 8).split()
    long = long[:-2] + ["."]
    t = model.parse([long])[0]
    assert t.leaves() == long and len(long) > 100
    assert model.last_parse_stats_.fallback == 0 and model.last_parse_stats_.too_long == 0
    # a chart over the memory limit is not attempted: documented flat fallback
    limit = model.max_chart_bytes
    model.max_chart_bytes = 10 ** 6
    try:
        t = model.parse([long])[0]
    finally:
        model.max_chart_bytes = limit
    assert t.leaves() == long and model.last_parse_stats_.too_long == 1


def test_bad_input_is_rejected_clearly(model):
    with pytest.raises(TypeError):
        model.parse("The dog barks .")
    with pytest.raises(TypeError, match="flat list"):
        model.parse(["The", "dog", "barks", "."])
    with pytest.raises(ValueError, match="jobs"):
        model.parse([["the"]], jobs=0)
    with pytest.raises(TypeError):
        model.parse([["the"]], None)  # tags, jobs and progress are keyword-only
    with pytest.raises(ValueError, match="invalid token"):
        model.parse([["the", "big dog"]])
    with pytest.raises(ValueError, match="2 tags for 3 words"):
        model.parse([["a", "b", "c"]], tags=[["DT", "NN"]])
    with pytest.raises(NotFittedError):
        PCFG().parse([["a"]])
    with pytest.raises(ValueError, match="v must be"):
        PCFG(v=0).fit([Tree.fromstring("(TOP (S (NN a)))")])
    with pytest.raises(ValueError, match="empty treebank"):
        PCFG().fit([])
    with pytest.raises(TypeError, match="expected fastspectral.trees.Tree"):
        PCFG().fit(["(S (NN a))"])


def test_save_load_round_trip(model, test_trees, tmp_path):
    path = tmp_path / "m.fsm"
    model.save(path)
    again = PCFG.load(path)
    assert again.get_params() == model.get_params()
    sents = [t.leaves() for t in test_trees[:10]]
    assert [str(t) for t in again.parse(sents)] == [str(t) for t in model.parse(sents)]
    from fastspectral.io import load
    assert isinstance(load(path), PCFG)


def test_model_file_errors(tmp_path):
    bad = tmp_path / "bad.fsm"
    bad.write_bytes(b"this is not a model")
    with pytest.raises(ModelFileError, match="bad.fsm"):
        PCFG.load(bad)
    with pytest.raises(ModelFileError, match="no such model file"):
        PCFG.load(tmp_path / "missing.fsm")
    from fastspectral.io.modelfile import save_model_file
    other = tmp_path / "other.fsm"
    save_model_file(other, "shag", {}, {})
    with pytest.raises(ModelFileError, match="expected a 'pcfg' model"):
        PCFG.load(other)
    future = tmp_path / "future.fsm"
    import json
    with open(future, "wb") as fh:
        np.savez(fh, __meta__=np.frombuffer(json.dumps(
            {"format": "fastspectral-model", "version": 99, "kind": "pcfg", "meta": {}}).encode(),
            np.uint8))
    with pytest.raises(ModelFileError, match="version 99"):
        PCFG.load(future)


def test_log_probability_is_finite(model, train):
    lp = model.log_probability([train[0].leaves(), train[1].leaves(), ["the"]])
    assert np.all(np.isfinite(lp[:2])) and np.all(lp[:2] < 0)
    # no training tree has a one-word sentence with a determiner: no parse, and parse() falls
    # back to a flat tree over the best tags (counted in last_parse_stats_)
    assert lp[2] == -np.inf
    out = model.parse([["the"]])
    assert out[0].leaves() == ["the"] and model.last_parse_stats_.fallback == 1


def test_estimator_contract(model):
    from fastspectral.base import clone
    c = clone(model)
    assert c.get_params() == model.get_params() and not hasattr(c, "grammar_")
    assert repr(PCFG(v=1, jobs=2)) == "PCFG(jobs=2, v=1)"
    raw = PCFG(v="x", jobs=0)            # __init__ stores, fit validates
    assert raw.v == "x" and raw.jobs == 0
    with pytest.raises(ValueError, match="jobs"):
        PCFG(jobs=0).fit([Tree.fromstring("(TOP (S (NN a)))")])
    assert model.fit_time_ >= 0 and PCFG.kind == "pcfg"
