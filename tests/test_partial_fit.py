"""The statistics protocol: every learner's statistics computed per partition and
merged give the model ``fit`` gives on the whole data, for 1, 2 and 7 partitions; vocabularies
built from the data (rare words, ``min_count``) come out identical; ``train KIND A B`` equals
training on the concatenation of A and B.  No Dask here (tests/test_dask_learn.py runs the same
passes on a cluster)."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import data_path, need

from fastspectral.base import Partition, PartitionedFit, Statistics


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def split(items, k):
    b = np.linspace(0, len(items), k + 1).astype(int)
    return [items[b[i]:b[i + 1]] for i in range(k)]


def _without_times(meta):
    if isinstance(meta, dict):
        return {k: _without_times(v) for k, v in meta.items()
                if k not in ("fit_time", "fit_seconds")}
    return meta


def model_file(model):
    meta, arrays = model._model_file()
    return _without_times(meta), arrays


def _assert_same_meta(x, y, exact, where="meta"):
    if isinstance(x, dict):
        assert isinstance(y, dict) and x.keys() == y.keys(), where
        for k in x:
            _assert_same_meta(x[k], y[k], exact, f"{where}.{k}")
    elif isinstance(x, float) and not exact:
        assert y == pytest.approx(x, rel=1e-10), where
    else:
        assert x == y, where


def assert_same_model(a, b, exact: bool):
    """Same model file content: equal meta, arrays equal (``exact``) or within rtol 1e-10
    (floating-point sums taken in another order)."""
    ma, aa = model_file(a)
    mb, ab = model_file(b)
    _assert_same_meta(ma, mb, exact)
    assert aa.keys() == ab.keys()
    for key in aa:
        x, y = np.asarray(aa[key]), np.asarray(ab[key])
        assert x.shape == y.shape, key
        if exact or x.dtype.kind in "iub":
            assert np.array_equal(x, y), key
        else:
            scale = max(1.0, float(np.abs(x).max(initial=0.0)))
            np.testing.assert_allclose(y, x, rtol=1e-10, atol=1e-12 * scale, err_msg=key)


def assert_same_arrays(a, b):
    """Equal model-file meta (floats within rtol 1e-10: the log rule probability per word is a
    sum taken in another order) and bit-for-bit equal arrays."""
    assert_same_model(a, b, exact=False)
    (_, aa), (_, ab) = model_file(a), model_file(b)
    for key in aa:
        assert np.array_equal(np.asarray(aa[key]), np.asarray(ab[key])), key


@pytest.fixture(scope="module")
def synthetic_trees(synthetic_grammar):
    return synthetic_grammar.sample(400, seed=1)


@pytest.fixture(scope="module")
def wsj_trees():
    from fastspectral.trees import read_ptb

    return list(read_ptb(need(data_path("ptb", "wsj-sample.mrg"))))[:600]


@pytest.fixture(scope="module")
def dep_sentences():
    from fastspectral.trees.readers import read_treebank

    return list(read_treebank(need(data_path("dep", "wsj-sample.dp"))))[:800]


def sentences_of(trees, n=40):
    return [t.leaves() for t in trees[:n]]


# ------------------------------------------------------------------------------------------------
# the Statistics base
# ------------------------------------------------------------------------------------------------
def test_statistics_merge_is_pure_and_ordered():
    from fastspectral.grammar.stats import GrammarCounts

    a, b = GrammarCounts(), GrammarCounts()
    a.root.update({"S": 2, "NP": 1})
    a.n_trees = 3
    b.root.update({"X": 1, "S": 1})
    b.n_trees = 2
    c = a + b
    assert dict(a.root) == {"S": 2, "NP": 1} and a.n_trees == 3       # operands unchanged
    assert dict(b.root) == {"X": 1, "S": 1}
    assert list(c.root) == ["S", "NP", "X"] and c.root["S"] == 3 and c.n_trees == 5
    assert dict(sum([a, b]).root) == dict(c.root)
    d = Statistics.merge_all([a, b, b])
    assert d.root["X"] == 2 and d.n_trees == 7
    a += b
    assert a.root["S"] == 3
    with pytest.raises(ValueError, match="no statistics"):
        Statistics.merge_all([])


def test_statistics_refuse_other_settings_and_kinds(synthetic_trees):
    from fastspectral import PCFG

    s1 = PCFG(v=1, h=0).sufficient_statistics(synthetic_trees[:10])
    s2 = PCFG(v=2, h=1).sufficient_statistics(synthetic_trees[10:20])
    with pytest.raises(ValueError, match="different settings"):
        s1 + s2
    with pytest.raises(ValueError, match="other settings"):
        PCFG(v=2, h=1).fit_statistics(s1)
    from fastspectral.lm import KneserNeyBigramLM

    lm = KneserNeyBigramLM().sufficient_statistics([["a", "b"]])
    with pytest.raises(TypeError):
        s1 + lm


def test_partition_cache_is_not_pickled():
    import pickle

    p = Partition([1, 2, 3], 3)
    p.cache["x"] = np.zeros(10)
    q = pickle.loads(pickle.dumps(p))
    assert q.data == [1, 2, 3] and q.n_items == 3 and q.cache == {}


def test_learners_with_the_protocol():
    from fastspectral import models
    from fastspectral.dask.learn import learnable

    have = {k for k, e in models.REGISTRY.items() if learnable(e.load_class()())}
    assert {"pcfg", "spectral-lpcfg", "pivot-lpcfg", "em-lpcfg", "shag", "latent-bigram-lm",
            "kneser-ney-bigram-lm"} <= have
    assert "ccm" not in have
    assert isinstance(models.model_class("pcfg")(), PartitionedFit)


# ------------------------------------------------------------------------------------------------
# every learner: 1, 2 and 7 partitions == fit
# ------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 2, 7])
def test_pcfg(wsj_trees, k):
    from fastspectral import PCFG

    a = PCFG(jobs=1).fit(wsj_trees)
    b = PCFG(jobs=1).fit_partitions(split(wsj_trees, k))
    assert_same_model(a, b, exact=True)          # integer counts: bit for bit
    s = sentences_of(wsj_trees)
    assert [str(t) for t in a.parse(s)] == [str(t) for t in b.parse(s)]


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 2, 7])
def test_spectral_lpcfg(wsj_trees, k):
    from fastspectral.lpcfg import SpectralLPCFG

    a = SpectralLPCFG(jobs=1).fit(wsj_trees)
    b = SpectralLPCFG(jobs=1).fit_partitions(split(wsj_trees, k))
    assert_same_model(a, b, exact=False)
    assert np.array_equal(a.states_, b.states_)
    for sym, s in a.singular_values_.items():
        np.testing.assert_allclose(b.singular_values_[sym], s, rtol=1e-10)
    s = sentences_of(wsj_trees)
    assert [str(t) for t in a.parse(s)] == [str(t) for t in b.parse(s)]


def test_spectral_lpcfg_synthetic_with_empty_partition(synthetic_trees):
    from fastspectral.lpcfg import SpectralLPCFG

    a = SpectralLPCFG(n_states=2, jobs=1).fit(synthetic_trees)
    b = SpectralLPCFG(n_states=2, jobs=1).fit_partitions(
        [synthetic_trees[:150], [], synthetic_trees[150:]])
    assert_same_model(a, b, exact=False)


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 2, 7])
@pytest.mark.parametrize("kw", [dict(n_states=4, iterations=4, jobs=1),
                                dict(n_states=4, init="pivot", iterations=3, jobs=1)],
                         ids=["random-start", "pivot-start"])
def test_em_lpcfg(wsj_trees, kw, k):
    from fastspectral.lpcfg import EMLPCFG

    a = EMLPCFG(**kw).fit(wsj_trees)
    b = EMLPCFG(**kw).fit_partitions(split(wsj_trees, k))
    assert b.n_iter_ == a.n_iter_ == kw["iterations"]
    np.testing.assert_allclose([h[1] for h in b.history_], [h[1] for h in a.history_],
                               rtol=1e-10)
    assert_same_model(a, b, exact=False)
    s = sentences_of(wsj_trees)
    assert [str(t) for t in a.parse(s)] == [str(t) for t in b.parse(s)]


def test_em_lpcfg_tol_stops_at_the_same_iteration(synthetic_trees):
    from fastspectral.lpcfg import EMLPCFG

    kw = dict(n_states=2, iterations=30, tol=1e-3, min_count=5, jobs=1)
    a = EMLPCFG(**kw).fit(synthetic_trees)
    b = EMLPCFG(**kw).fit_partitions(split(synthetic_trees, 3))
    assert a.n_iter_ < 30 and b.n_iter_ == a.n_iter_
    assert_same_model(a, b, exact=False)


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 2, 7])
def test_pivot_lpcfg(wsj_trees, k):
    from fastspectral.lpcfg import PivotLPCFG

    a = PivotLPCFG(n_states=4, jobs=1).fit(wsj_trees)
    b = PivotLPCFG(n_states=4, jobs=1).fit_partitions(split(wsj_trees, k))
    # the pivot statistics are integer counts: the merged counts are the treebank's
    assert_same_arrays(a, b)
    assert b.anchored_states_ == a.anchored_states_
    assert np.array_equal(b.mixture_iterations_, a.mixture_iterations_)
    s = sentences_of(wsj_trees)
    assert [str(t) for t in a.parse(s)] == [str(t) for t in b.parse(s)]


@pytest.mark.slow
def test_pivot_start_without_iterations_and_pivot_options(synthetic_trees):
    """``iterations=0`` is the pivot start itself (arrays bit for bit); ``pivot_options`` reach the
    pivot pass (other feature pairs, another seed); an empty partition adds nothing."""
    from fastspectral.lpcfg import EMLPCFG, PivotLPCFG

    parts = [synthetic_trees[:150], [], synthetic_trees[150:]]
    kw = dict(n_states=2, min_count=5, init="pivot", iterations=0, jobs=1,
              pivot_options={"feature_pairs": ((1, 1), (2, 2)), "random_state": 3})
    a = EMLPCFG(**kw).fit(synthetic_trees)
    b = EMLPCFG(**kw).fit_partitions(parts)
    assert b.n_iter_ == a.n_iter_ == 0
    assert_same_arrays(a, b)
    c = PivotLPCFG(n_states=2, min_count=5, jobs=1).fit_partitions(parts)
    assert_same_arrays(PivotLPCFG(n_states=2, min_count=5, jobs=1).fit(synthetic_trees), c)


def test_pivot_counts_merge_to_the_treebank_counts(synthetic_trees):
    """Merged per-partition pivot counts equal the counts of the whole treebank, row for row;
    counts of another pass (another context) refuse to merge."""
    from fastspectral.lpcfg import PivotLPCFG
    from fastspectral.lpcfg.pivot import PivotCounts

    model = PivotLPCFG(n_states=2, min_count=5, jobs=1)
    parts = [model.prepare_partition(p) for p in split(synthetic_trees, 3)]
    whole = model.prepare_partition(synthetic_trees)
    ctx = model.fit_statistics(Statistics.merge_all(model.sufficient_statistics(p)
                                                    for p in parts))
    stats = [model.sufficient_statistics(p, ctx) for p in parts]
    assert all(isinstance(x, PivotCounts) for x in stats)
    merged = Statistics.merge_all(stats)
    one = model.sufficient_statistics(whole, ctx)
    for name in ("types", "type_count", "items", "item_count"):
        assert np.array_equal(getattr(merged, name), getattr(one, name)), name
    assert merged.type_count.sum() == one.type_count.sum() > 0
    assert stats[0].type_count.sum() < merged.type_count.sum()      # merge left them alone
    other = model.fit_statistics(Statistics.merge_all(model.sufficient_statistics(p)
                                                      for p in parts))
    with pytest.raises(ValueError, match="different settings"):
        stats[0] + model.sufficient_statistics(parts[1], other)
    with pytest.raises(ValueError, match="another model or pass"):
        model.fit_statistics(model.sufficient_statistics(parts[1], other), ctx)


def test_pivot_alignment_of_unanchored_states_is_canonical():
    """States the reference pair did not anchor have equal posteriors: any matching of them is
    optimal, so the pivot method keeps them in order (rounding in the sums cannot reorder
    them, which would relabel the states of ``fit`` and of merged partitions differently)."""
    from fastspectral.lpcfg.pivot import _align

    rng = np.random.default_rng(0)
    new = rng.dirichlet(np.ones(4), size=50)
    ref = np.repeat(rng.dirichlet(np.ones(4), size=50)[:, :1], 4, axis=1)   # nothing anchored
    assert list(_align(ref, new, 0)) == [0, 1, 2, 3]
    ref2 = new[:, [1, 0, 2, 2]]                       # two anchored states, two unanchored
    perm = _align(ref2, new, 2)
    assert list(perm[:2]) == [1, 0] and list(perm[2:]) == [2, 3]


SHAG_SETTINGS = [{}, {"method": "em", "iterations": 3}, {"method": "det+f"},
                 {"lexical": "lex+fcp"}, {"method": "det", "lexical": "lex"},
                 {"basis": 1, "tag_column": "xpos"}]


@pytest.mark.parametrize("kw", SHAG_SETTINGS, ids=lambda kw: ",".join(map(str, kw.values())))
@pytest.mark.parametrize("k", [1, 2, 7])
def test_shag(dep_sentences, kw, k):
    from fastspectral.dependency.model import SHAGParser

    a = SHAGParser(**kw).fit(dep_sentences)
    b = SHAGParser(**kw).fit_partitions(split(dep_sentences, k))
    # the merged sequences are listed in fit's order: the same sums, bit for bit
    assert_same_model(a, b, exact=True)
    assert b.fit_info_.loglik == a.fit_info_.loglik
    test = dep_sentences[:100]
    for x, y in zip(a.predict_heads(test, jobs=1), b.predict_heads(test, jobs=1)):
        assert np.array_equal(x, y)


LM_SETTINGS = [("kn", {}), ("lm", {"method": "pivot", "n_states": 4, "anchor_min_count": 5}),
               ("lm", {"method": "em", "n_states": 4, "iterations": 5})]


@pytest.mark.parametrize("name,kw", LM_SETTINGS, ids=lambda x: str(x))
@pytest.mark.parametrize("k", [1, 2, 7])
def test_language_models(wsj_trees, name, kw, k):
    from fastspectral.lm import KneserNeyBigramLM, LatentBigramLM

    cls = KneserNeyBigramLM if name == "kn" else LatentBigramLM
    sents = [t.leaves() for t in wsj_trees]
    a = cls(**kw).fit(sents)
    b = cls(**kw).fit_partitions(split(sents, k))
    assert_same_model(a, b, exact=True)
    assert a.log_likelihood(sents[:50]) == b.log_likelihood(sents[:50])


# ------------------------------------------------------------------------------------------------
# vocabularies built from the data
# ------------------------------------------------------------------------------------------------
def test_rare_words_split_across_partitions_are_counted_once():
    """A word seen once in each of two partitions is seen twice: not rare for the PCFG lexicon
    (rare_threshold=1), kept by a language model with min_count=2."""
    from fastspectral import PCFG
    from fastspectral.lm import KneserNeyBigramLM
    from fastspectral.trees import Tree

    t1 = Tree.fromstring("(S (NP (DT the) (NN zyzzyva)) (VP (VBZ sleeps)))")
    t2 = Tree.fromstring("(S (NP (DT a) (NN zyzzyva)) (VP (VBZ runs)))")
    t3 = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ runs)))")
    a = PCFG(jobs=1).fit([t1, t2, t3])
    b = PCFG(jobs=1).fit_partitions([[t1], [t2, t3]])
    assert b.grammar_.lexicon.word_count["zyzzyva"] == 2
    assert_same_model(a, b, exact=True)
    lm_a = KneserNeyBigramLM(min_count=2).fit([t.leaves() for t in (t1, t2, t3)])
    lm_b = KneserNeyBigramLM(min_count=2).fit_partitions([[t1.leaves()], [t2.leaves(),
                                                                            t3.leaves()]])
    assert "zyzzyva" in lm_b.vocab_.index and "sleeps" not in lm_b.vocab_.index
    assert lm_a.vocab_.words == lm_b.vocab_.words


def test_sufficient_statistics_accepts_items_or_partitions(synthetic_trees):
    from fastspectral.lpcfg import SpectralLPCFG

    m = SpectralLPCFG(n_states=2)
    part = m.prepare_partition(synthetic_trees[:50])
    assert isinstance(part, Partition) and part.n_items == 50
    s1 = m.sufficient_statistics(part)
    s2 = m.sufficient_statistics(synthetic_trees[:50])
    assert dict(s1.counts.binary) == dict(s2.counts.binary)


def test_empty_data_is_refused():
    from fastspectral import PCFG
    from fastspectral.lm import KneserNeyBigramLM
    from fastspectral.lpcfg import SpectralLPCFG

    with pytest.raises(ValueError, match="empty treebank"):
        PCFG().fit_partitions([[], []])
    with pytest.raises(ValueError, match="empty treebank"):
        SpectralLPCFG().fit_partitions([[]])
    with pytest.raises(ValueError, match="no training sentences"):
        KneserNeyBigramLM().fit_partitions([[]])
    with pytest.raises(ValueError, match="no partitions"):
        PCFG().fit_partitions([])
    with pytest.raises(TypeError, match="expected fastspectral.trees.Tree"):
        PCFG().fit_partitions([["not a tree"]])


# ------------------------------------------------------------------------------------------------
# the command line: train KIND A B == train KIND cat(A, B)
# ------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["pcfg", "spectral", "pivot", "pivot-em"])
def test_train_on_two_files_equals_their_concatenation(tmp_path, synthetic_trees, kind):
    from fastspectral.cli import main
    from fastspectral.io.modelfile import load_model_file
    from fastspectral.trees.ptb import write_brackets

    a, b, ab = tmp_path / "a.mrg", tmp_path / "b.mrg", tmp_path / "ab.mrg"
    write_brackets(synthetic_trees[:150], a)
    write_brackets(synthetic_trees[150:], b)
    write_brackets(synthetic_trees, ab)
    opts = [] if kind == "pcfg" else ["--states", "2"]
    opts += ["--iterations", "2"] if kind == "pivot-em" else []
    assert main(["train", kind, str(a), str(b), "-o", str(tmp_path / "two.m"), "-q"] + opts) == 0
    assert main(["train", kind, str(ab), "-o", str(tmp_path / "one.m"), "-q"] + opts) == 0
    k1, m1, a1 = load_model_file(tmp_path / "two.m")
    k2, m2, a2 = load_model_file(tmp_path / "one.m")
    for m in (m1, m2):
        m.pop("fit_time", None)
        m.get("pcfg", {}).pop("fit_time", None)
    assert k1 == k2 and m1 == m2 and a1.keys() == a2.keys()
    for key in a1:
        assert np.array_equal(a1[key], a2[key]), key


def test_train_dask_options_refuse_models_without_the_protocol(tmp_path, synthetic_trees,
                                                              capsys):
    from fastspectral.cli import main
    from fastspectral.trees.ptb import write_brackets

    a = tmp_path / "a.mrg"
    write_brackets(synthetic_trees[:50], a)
    # the check comes before any cluster is started
    assert main(["train", "ccm", str(a), "-o", str(tmp_path / "m"), "-q",
                 "--dask-workers", "1"]) == 2
    assert "cannot learn from partitions" in capsys.readouterr().err


LM_DEV_SETTINGS = [{"method": "em", "n_states": 4, "iterations": 12},
                   {"method": "pivot-em", "n_states": 4, "anchor_min_count": 5, "iterations": 4}]


@pytest.mark.parametrize("kw", LM_DEV_SETTINGS, ids=["em", "pivot-em"])
@pytest.mark.parametrize("k", [1, 2, 7])
def test_latent_lm_dev_set_on_partitions(wsj_trees, kw, k):
    """``LatentBigramLM``'s ``dev=`` from partitions: the dev set goes to ``fit_statistics``,
    where EM runs once on the merged bigram matrix; the same model as ``fit(..., dev=)``
    (the dev perplexity history, the best iteration and its parameters)."""
    from fastspectral.lm import LatentBigramLM

    sents = [t.leaves() for t in wsj_trees[:500]]
    dev = [t.leaves() for t in wsj_trees[500:]]
    a = LatentBigramLM(**kw).fit(sents, dev=dev)
    b = LatentBigramLM(**kw).fit_partitions(split(sents, k), dev=dev)
    # the dev set chose an iteration other than the last (and other than fit without dev)
    assert a.best_iteration_ < kw["iterations"]
    assert a.dev_perplexity_.shape == (kw["iterations"] + 1,)
    assert b.best_iteration_ == a.best_iteration_
    assert np.array_equal(b.dev_perplexity_, a.dev_perplexity_)
    assert_same_model(a, b, exact=True)
    nodev = LatentBigramLM(**kw).fit_partitions(split(sents, k))
    assert nodev.best_iteration_ == kw["iterations"] and nodev.dev_perplexity_.size == 0
    assert not np.array_equal(nodev.r_, b.r_)


def test_fit_params_are_checked_before_any_statistics(tmp_path, wsj_trees, capsys,
                                                      monkeypatch):
    """A keyword that ``fit_statistics`` does not take is refused before any partition is
    counted; ``train lm --dev MISSING --dask-workers 1`` stops before starting a cluster."""
    import fastspectral.cli.parse
    from fastspectral.cli import main
    from fastspectral.lm import KneserNeyBigramLM

    def no_cluster(args):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(fastspectral.cli.parse, "_dask_client", no_cluster)

    sents = [t.leaves() for t in wsj_trees[:50]]
    with pytest.raises(TypeError, match="KneserNeyBigramLM.fit_statistics takes no argument "
                                        "'dev'"):
        KneserNeyBigramLM().fit_partitions(split(sents, 2), dev=sents)
    text = tmp_path / "s.txt"
    text.write_text("\n".join(" ".join(s) for s in sents) + "\n", encoding="utf-8")
    assert main(["train", "lm", str(text), "-o", str(tmp_path / "m"), "-q", "--dev",
                 str(tmp_path / "missing.txt"), "--dask-workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "missing.txt" in err and not (tmp_path / "m").exists()
