"""``benchmarks/bench_rerank.py --sweep-order2``: the pre-declared selection rule
(``order2_select``) and the order-2 harness against ``RerankDepParser.fit`` / ``parse``."""
from __future__ import annotations

import importlib.util
import os
from argparse import Namespace

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "bench_rerank", os.path.join(HERE, "..", "benchmarks", "bench_rerank.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def row(model, forms, gain, dev, cv):
    return {"model": model, "forms": forms, "gain": gain, "dev": (dev, 0.0), "cv": (cv, 0.0)}


DEF = ("words:16:0.3:0", "tree+fragment")


def refs():
    return [row(None, None, 10.0, 86.5, 86.0), row(None, None, 30.0, 86.6, 86.2)]


def test_select_best_cv_reduction_among_dev_improvers(bench):
    rows = refs() + [
        row(*DEF, 30.0, 86.7, 86.3),
        row("pos:8:0.3:0:adj1", "tree", 10.0, 86.4, 87.0),    # best CV, but worse on dev
        row("words:8:0.3:0", "tree", 10.0, 86.6, 86.4),        # +0.4 over 86.0 at gain 10
        row("words:30:0.3:0", "tree", 30.0, 86.9, 86.5),       # +0.3 over 86.2 at gain 30
    ]
    chosen, eligible = bench.order2_select(rows)
    assert (chosen["model"], chosen["gain"]) == ("words:8:0.3:0", 10.0)
    assert len(eligible) == 3
    assert chosen["cv_error_reduction_pct"] == pytest.approx(100 * 0.4 / 14.0, abs=1e-3)


def test_select_tie_goes_to_the_default(bench):
    rows = refs() + [row(*DEF, 30.0, 86.7, 86.40),
                     row("words:8:0.3:0", "tree", 30.0, 86.8, 86.45)]
    chosen, _ = bench.order2_select(rows)
    assert (chosen["model"], chosen["forms"], chosen["gain"]) == (*DEF, 30.0)
    rows[-1] = row("words:8:0.3:0", "tree", 30.0, 86.8, 86.46)
    assert bench.order2_select(rows)[0]["model"] == "words:8:0.3:0"


def test_select_default_not_eligible_and_nothing_chosen(bench):
    # the default does not improve dev: no tie rule, the best row is chosen
    rows = refs() + [row(*DEF, 30.0, 86.6, 86.40),
                     row("words:8:0.3:0", "tree", 30.0, 86.8, 86.41)]
    assert bench.order2_select(rows)[0]["model"] == "words:8:0.3:0"
    # no eligible row reduces the CV error: nothing is chosen
    rows = refs() + [row(*DEF, 30.0, 86.7, 86.2), row("words:8:0.3:0", "tree", 10.0,
                                                       86.9, 85.9)]
    chosen, eligible = bench.order2_select(rows)
    assert chosen is None and len(eligible) == 2


@pytest.mark.slow
def test_harness_equals_fit_and_parse(bench, synthetic_grammar):
    """The dev row of the harness (cached-list re-ranker) is what ``RerankDepParser(
    base_order=2).fit(tr)`` then ``parse(dev)`` gives, with and without a spectral model."""
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.rerank import MSTParser, RerankDepParser
    from fastspectral.rerank.model import count_correct
    from fastspectral.trees.transforms import clean

    g = synthetic_grammar
    sents = list(trees_to_dep_sentences(clean(t) for t in g.sample(150, seed=3)))
    tr, dev = sents[:120], sents[120:]
    args = Namespace(k=5, epochs=2, jobs=1, cache=None, embeddings=None,
                     final_rerank_epochs=3)
    o2 = bench.order2_lists(args, tr, dev)
    lists, D = o2["lists"], o2["dev"]
    correct, tok = count_correct(dev, D)
    keep_dev, keep_tr = bench.keep_counts(dev), bench.keep_counts(tr)

    def dev_eval(pick):
        return bench.list_scores(correct, tok, D, keep_dev, pick)

    for spec, form in ((None, None), ("pos:3:0.3:0", "tree+fragment"), ("pos:3:0.3:0", "tree")):
        sc = None if spec is None else bench.extra_scores(args, spec, tr, dev, lists, D,
                                                          None)[:2]
        got = bench.order2_evaluate(args, lists, dev, D, o2["o2_dev"], dev_eval, keep_tr, sc,
                                    form, 10.0)
        kw = {} if spec is None else dict(
            features="base+spectral", spectral_input="pos",
            spectral_scores=bench.FORM_SCORES[form],
            spectral=bench.spectral_model("pos", "none", 3, 0.3, spectral_input="pos"))
        m = RerankDepParser(k=5, jobs=1, base_order=2, dense_gain=10.0, rerank_iterations=3,
                            mst=MSTParser(iterations=2, jobs=1),
                            **{"features": "base", **kw}).fit(tr)
        assert got["dev"] == bench.scores(dev, m.parse(dev, jobs=1))
        assert 0 < got["cv"][0] <= 100


def test_placebo_is_never_chosen(bench):
    rows = refs() + [row("noise0", "tree", 10.0, 87.0, 87.0),
                     row("words:8:0.3:0", "tree", 10.0, 86.6, 86.1)]
    chosen, eligible = bench.order2_select(rows)
    assert chosen["model"] == "words:8:0.3:0" and len(eligible) == 1
