"""SHAG scores for the k-best re-ranker (fastspectral.rerank.shag_scores): tree weights against
the inside total over all projective trees and against the inside kernel restricted to one
tree, arc-posterior scores, jack-knifing without a fold's own trees, the ``base+shag``
re-ranker's model file and command line."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from fastspectral import cli
from fastspectral.dependency import SHAGParser
from fastspectral.dependency.inference import arc_marginals, pair_offsets
from fastspectral.errors import ModelFileError
from fastspectral.rerank import MSTParser, RerankDepParser
from fastspectral.rerank.shag_scores import (jackknife_shag_scores, shag_scores,
                                             tree_weights)
from fastspectral.trees.conll import read_conllu

from _conll_files import write_conllu
from _dep_brute import all_projective_trees


@pytest.fixture(scope="module")
def synthetic(synthetic_grammar):
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.trees.transforms import clean

    g = synthetic_grammar
    return list(trees_to_dep_sentences(clean(t) for t in g.sample(360, seed=7)))


def _short(sents, lo=3, hi=6, count=3):
    out = [s for s in sents if lo <= len(s.words) <= hi]
    assert len(out) >= count
    return out[:count]


CONFIGS = [
    dict(method="spectral", n_states=3, lexical="lex+fcp"),
    dict(method="spectral", n_states=3, backoff_weight=0.0, single_root=False),
    dict(method="det+f"),
    dict(method="em", n_states=2, iterations=3, lexical="lex+f"),
]


@pytest.mark.slow
@pytest.mark.parametrize("params", CONFIGS)
def test_tree_weights_sum_to_the_inside_total(synthetic, params):
    """Sum over every projective tree of a short sentence of sign * exp(log |w|) equals the
    inside total exp(SHAGParser.log_weight) (1e-9 relative)."""
    p = SHAGParser(**params).fit(synthetic[:200])
    for s in _short(synthetic[300:]):
        trees = all_projective_trees(len(s.words), p.single_root_)
        lw, sg = tree_weights(p, s, trees)
        z = np.exp(p.log_weight([s])[0])
        total = float(np.sum(sg * np.exp(lw)))
        assert abs(abs(total) - z) <= 1e-9 * z, (params, total, z)


@pytest.mark.slow
def test_unsmoothed_spectral_weights_can_be_negative_and_still_sum(synthetic):
    """A sign-indefinite model (unsmoothed spectral, no ridge): negative tree weights occur
    and the signed sum still equals the inside total."""
    p = SHAGParser(method="spectral", n_states=4, backoff_weight=0.0, ridge=0.0,
                   single_root=False).fit(synthetic[:120])
    negatives = 0
    for s in _short(synthetic[200:], 4, 6, 6):
        trees = all_projective_trees(len(s.words), False)
        lw, sg = tree_weights(p, s, trees)
        negatives += int((sg < 0).sum())
        z = np.exp(p.log_weight([s])[0])
        assert abs(abs(float(np.sum(sg * np.exp(lw)))) - z) <= 1e-9 * z
    assert negatives > 0


@pytest.mark.slow
def test_single_root_model_gives_multi_rooted_trees_weight_zero(synthetic):
    p = SHAGParser(method="det+f").fit(synthetic[:100])
    assert p.single_root_
    s = _short(synthetic[300:], 3, 4, 1)[0]
    multi = [0] * len(s.words)
    lw, sg = tree_weights(p, s, [multi])
    assert sg[0] == 0 and lw[0] == -np.inf


@pytest.mark.slow
def test_tree_weight_equals_the_inside_kernel_restricted_to_the_tree(synthetic):
    """log |w(tree)| equals the inside kernel's log |Z| with every arc outside the tree
    masked out (the inside algorithm restricted to one tree)."""
    p = SHAGParser(method="spectral", n_states=3, lexical="lex+fcp").fit(synthetic[:200])
    rng = np.random.default_rng(0)
    for s in _short(synthetic[300:], 5, 12, 4):
        trees = all_projective_trees(len(s.words), True) if len(s.words) <= 6 else None
        if trees is None:
            trees = [tuple(s.heads)]
        pick = [trees[i] for i in rng.choice(len(trees), size=min(5, len(trees)),
                                             replace=False)]
        lw, _ = tree_weights(p, s, pick)
        enc = p.encode([s], with_heads=False)
        n1 = len(s.words) + 1
        for heads, want in zip(pick, lw):
            mask = np.zeros(n1 * n1)
            for m, h in enumerate(heads, 1):
                mask[h * n1 + m] = 1.0
            res = arc_marginals(p.op_, p.det_, enc, p.single_root_, 1, p._det_power(),
                                arc_mask=mask)
            assert res.status[0] == 0
            assert abs(res.logz[0] - want) <= 1e-9 * max(1.0, abs(want))


@pytest.mark.slow
def test_arc_posterior_score_is_the_sum_of_clipped_log_posteriors(synthetic):
    p = SHAGParser(method="spectral", n_states=3, lexical="lex+fcp").fit(synthetic[:200])
    sents = synthetic[300:306]
    trees = [np.asarray(s.heads, np.int64) for s in sents]
    trees += [np.r_[0, np.arange(1, len(s.words))] for s in sents]   # left-branching chains
    lists = SimpleNamespace(
        lengths=np.array([len(s.words) for s in sents], np.int64),
        cand_off=np.array([0] + [2] * len(sents), np.int64).cumsum(),
        cand_hoff=None, heads=None)
    order = [t for pair in zip(trees[:len(sents)], trees[len(sents):]) for t in pair]
    lists.heads = np.concatenate(order)
    lists.cand_hoff = np.r_[0, np.cumsum([len(t) for t in order])[:-1]].astype(np.int64)
    lw, sg, post = shag_scores(p, sents, lists, jobs=2)
    for c, heads in enumerate(order):
        mu = p.arc_posteriors(sents[c // 2])
        want = sum(np.log(max(mu[h, m], 1e-6)) for m, h in enumerate(heads, 1))
        assert abs(post[c] - want) < 1e-9 * max(1.0, abs(want))
        one, sgn = tree_weights(p, sents[c // 2], [heads])
        assert one[0] == pytest.approx(lw[c], rel=1e-12) and sgn[0] == sg[c]
    # the gold tree scores higher than the chain on most of these sentences
    assert (post[0::2] > post[1::2]).sum() >= 4


@pytest.mark.slow
def test_jackknife_uses_no_folds_own_trees(synthetic):
    """Each fold's lists are scored by a model fitted on the other folds' sentences only,
    and the scores are those of that model."""
    sents = synthetic[:90]
    m = RerankDepParser(k=4, features="base", rerank_bits=16, jobs=1,
                        mst=MSTParser(iterations=1, bits=16, jobs=1))
    data = m.training_lists(sents).data
    cuts = m._cuts(len(sents))
    seen = []

    def fit_fn(tr):
        seen.append({id(s) for s in tr})
        return SHAGParser(method="spectral", n_states=2).fit(tr)

    out = jackknife_shag_scores(sents, data, cuts, jobs=1, fit_fn=fit_fn)
    assert len(seen) == 3
    for f in range(3):
        own = {id(s) for s in sents[cuts[f]:cuts[f + 1]]}
        assert not own & seen[f]
        assert seen[f] | own == {id(s) for s in sents}
        model = SHAGParser(method="spectral", n_states=2).fit(
            sents[:cuts[f]] + sents[cuts[f + 1]:])
        lo, hi = int(data.cand_off[cuts[f]]), int(data.cand_off[cuts[f + 1]])
        part = SimpleNamespace(lengths=data.lengths[cuts[f]:cuts[f + 1]],
                               cand_off=data.cand_off[cuts[f]:cuts[f + 1] + 1] - lo,
                               cand_hoff=data.cand_hoff[lo:hi], heads=data.heads)
        want = shag_scores(model, sents[cuts[f]:cuts[f + 1]], part, 1)
        for got, w in zip(out, want):
            np.testing.assert_array_equal(got[lo:hi], w)
    # a model that has seen the trees scores them differently
    full = SHAGParser(method="spectral", n_states=2).fit(sents)
    assert not np.array_equal(shag_scores(full, sents, data, 1)[2], out[2])


@pytest.mark.slow
def test_base_shag_reranker_save_load_and_cli(synthetic, tmp_path):
    train, test = synthetic[:240], synthetic[300:]
    kw = dict(k=8, rerank_bits=16, jobs=2, mst=MSTParser(iterations=2, bits=18, jobs=2),
              shag=SHAGParser(method="spectral", n_states=3, lexical="lex+fcp"))
    m = RerankDepParser(features="base+shag", **kw).fit(train)
    assert isinstance(m.shag_, SHAGParser) and m.shag_.lexical == "lex+fcp"
    assert m.shag_.n_states == 3 and m.dense_weights_.shape == (5,)
    assert "shag" in m.fit_info_.seconds
    out = [s.heads for s in m.parse(test)]
    m.save(tmp_path / "r.fsm")
    q = RerankDepParser.load(tmp_path / "r.fsm")
    assert q.features == "base+shag" and q.get_params()["shag__n_states"] == 3
    assert [s.heads for s in q.parse(test)] == out
    meta, arrays = m._model_file()
    assert meta["shag"] is not None and any(k.startswith("shag.") for k in arrays)
    with pytest.raises(ModelFileError, match="SHAG"):
        RerankDepParser._from_model_file(dict(meta, shag=None), arrays)
    # only the tree weight / only the arc posteriors
    for which, D in (("tree", 4), ("arc", 2)):
        r = RerankDepParser(features="base+shag", shag_scores=which, **kw)
        lists = r.training_lists(train[:90])
        r.fit_lists(lists)
        assert r.dense_weights_.shape == (D,) and r._n_dense() == D
        with pytest.raises(ValueError, match="SHAG"):
            r.fit_lists(lists.__class__(lists.data, None, lists.correct, lists.n_tokens, {}))
    with pytest.raises(ValueError, match="shag_scores"):
        RerankDepParser(features="base+shag", shag_scores="nope").fit(train)
    with pytest.raises(ValueError, match="shag__n_states"):
        RerankDepParser(features="base+shag", shag=SHAGParser(n_states=0)).fit(train)
    # command line
    tr_file, inp, model = tmp_path / "t.conllu", tmp_path / "in.conllu", tmp_path / "m.rr"
    write_conllu(tr_file, train[:150])
    write_conllu(inp, test, heads=False)
    assert cli.main(["train", "rerank-dep", str(tr_file), "-o", str(model), "--features",
                     "base+shag", "--k", "5", "--iterations", "1", "--bits", "16",
                     "--rerank-bits", "16", "-q"]) == 0
    loaded = RerankDepParser.load(model)
    assert loaded.features == "base+shag" and loaded.shag_ is not None
    out_file = tmp_path / "out.conllu"
    assert cli.main(["parse", str(model), str(inp), "-o", str(out_file), "-q"]) == 0
    sents = list(read_conllu(inp, heads_optional=True))
    assert [s.heads for s in read_conllu(out_file)] == [s.heads for s in loaded.parse(sents)]
