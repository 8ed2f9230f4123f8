"""``benchmarks/wsj_dependency.py --stages controls``: the re-rankers trained from one set of
cached k-best lists give what ``RerankDepParser.fit`` then ``parse`` give, and the placebo
rows are re-rankers of the same lists."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "wsj_dependency", os.path.join(HERE, "..", "benchmarks", "wsj_dependency.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def treebank(synthetic_grammar, tmp_path_factory):
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.trees.conll import write_malttab
    from fastspectral.trees.transforms import clean

    sents = list(trees_to_dep_sentences(clean(t) for t in
                                        synthetic_grammar.sample(120, seed=5)))
    d = tmp_path_factory.mktemp("controls")
    write_malttab(sents[:90], str(d / "train.dp"))
    write_malttab(sents[90:], str(d / "dev.dp"))
    return d


def small_params():
    from fastspectral.latentdep import LatentDependencyModel
    from fastspectral.rerank import MSTParser

    return {"k": 5, "rerank_iterations": 3, "mst": MSTParser(iterations=2, jobs=1),
            "spectral_input": "pos",
            "spectral": LatentDependencyModel(n_states=3, embeddings="one-hot")}


@pytest.mark.slow
@pytest.mark.parametrize("order", [1, 2, "2k"])
def test_controls_equal_fit_and_parse(bench, treebank, order):
    """Rows base and base+spectral are the section-22 UAS of ``fit`` + ``parse`` with the
    same settings; the lists are kept in the work folder and read back by a second run."""
    from fastspectral.eval.attachment import attachment_scores
    from fastspectral.rerank import MSTParser, RerankDepParser
    from fastspectral.trees.corpus import read_training_items

    # "2k": the second-order base parser's own k-best lists (base_order=1, mst of order 2)
    base_order, params = (1, {**small_params(), "mst": MSTParser(iterations=2, jobs=1,
                                                                  order=2)}) \
        if order == "2k" else (order, small_params())
    train_p, dev_p = treebank / "train.dp", treebank / "dev.dp"
    work = treebank / f"work{order}"
    res = bench.Results(treebank / f"rows{order}.jsonl")
    bench.control_rows(res, train_p, dev_p, order, 1, work, [0, 1], small_params())
    pre = f"controls order {order} "
    assert len(list(work.glob("*.pkl"))) == 1
    tr = read_training_items(str(train_p), "dependency")
    dev = read_training_items(str(dev_p), "dependency")
    for features in ("base", "base+spectral"):
        m = RerankDepParser(**{**params, "jobs": 1, "features": features,
                               "base_order": base_order}).fit(tr)
        want = attachment_scores(dev, m.parse(dev, jobs=1), punct="exclude").uas
        assert res.rows[pre + features]["uas"] == pytest.approx(want, abs=1e-9)
    lists = res.rows[pre + "lists"]
    assert lists["mst_uas"] <= lists["oracle_uas"]
    for s in (0, 1):
        r = res.rows[pre + f"base+placebo seed={s}"]
        assert r["features"] == "base+spectral" and 0 < r["uas"] <= lists["oracle_uas"]
        assert r["error_reduction_pct"] == pytest.approx(
            bench.err_red(r["uas"], res.rows[pre + "base"]["uas"]))
    # a new placebo seed and a perceptron seed: three more rows from the kept lists; the rows
    # already there are not run again
    n_lines = len((treebank / f"rows{order}.jsonl").read_text().splitlines())
    res2 = bench.Results(treebank / f"rows{order}.jsonl")
    bench.control_rows(res2, train_p, dev_p, order, 1, work, [0, 1, 7], small_params(),
                       rerank_seeds=[0, 3])
    lines = (treebank / f"rows{order}.jsonl").read_text().splitlines()
    assert [json.loads(x)["row"] for x in lines[n_lines:]] == [
        pre + "base+placebo seed=7", pre + "base perceptron seed=3",
        pre + "base+spectral perceptron seed=3"]
    m = RerankDepParser(**{**params, "jobs": 1, "features": "base", "base_order": base_order,
                           "random_state": 3}).fit(tr)
    want = attachment_scores(dev, m.parse(dev, jobs=1), punct="exclude").uas
    assert res2.rows[pre + "base perceptron seed=3"]["uas"] == pytest.approx(want, abs=1e-9)
    table = bench.controls_table(res2.rows)
    assert any(line.startswith("| base+placebo seed=7 ") for line in table)
    assert any(line.startswith("| base+placebo, mean (sd) of 3 ") for line in table)



@pytest.mark.slow
def test_fit_params_rerank_the_same_lists(bench, treebank):
    """``--fit-params``: re-rankers of other fit settings from the kept lists (no new lists),
    rows ``controls order ORDER+NAME=VALUE ...``, each equal to ``fit`` + ``parse``."""
    from fastspectral.eval.attachment import attachment_scores
    from fastspectral.rerank import RerankDepParser
    from fastspectral.trees.corpus import read_training_items

    train_p, dev_p = treebank / "train.dp", treebank / "dev.dp"
    work = treebank / "work-fit"
    res = bench.Results(treebank / "rows-fit.jsonl")
    bench.control_rows(res, train_p, dev_p, 1, 1, work, [0], small_params())
    fit = {"fixed_base": True, "start_weight": 100.0}
    bench.control_rows(res, train_p, dev_p, 1, 1, work, [0], small_params(), fit_params=fit)
    assert len(list(work.glob("*.pkl"))) == 1
    pre = "controls order 1+fixed_base=True+start_weight=100.0 "
    tr = read_training_items(str(train_p), "dependency")
    dev = read_training_items(str(dev_p), "dependency")
    m = RerankDepParser(**{**small_params(), **fit, "jobs": 1, "features": "base"}).fit(tr)
    want = attachment_scores(dev, m.parse(dev, jobs=1), punct="exclude").uas
    assert res.rows[pre + "base"]["uas"] == pytest.approx(want, abs=1e-9)
    table = bench.controls_table(res.rows)
    assert sum(line.startswith("Controls of log p-hat, order 1") for line in table) == 2
    with pytest.raises(SystemExit, match="--fit-params: only"):
        bench.control_rows(res, train_p, dev_p, 1, 1, work, [0], small_params(),
                           fit_params={"k": 3})


@pytest.mark.slow
def test_spectral_params_score_the_same_lists(bench, treebank):
    """``--spectral-params``: log p-hat of another latent dependency model on the kept lists
    (the lists are not built again; the scores get their own pickle), rows
    ``controls order 1+spectral:NAME=VALUE ...``, each equal to ``fit`` + ``parse`` with that
    model; the baseline rows are those of the plain lists."""
    from fastspectral.eval.attachment import attachment_scores
    from fastspectral.latentdep import LatentDependencyModel
    from fastspectral.rerank import RerankDepParser
    from fastspectral.trees.corpus import read_training_items

    train_p, dev_p = treebank / "train.dp", treebank / "dev.dp"
    work = treebank / "work-spectral"
    res = bench.Results(treebank / "rows-spectral.jsonl")
    bench.control_rows(res, train_p, dev_p, 1, 1, work, [0], small_params())
    sp = {"n_states": 2, "ridge": 0.05}
    bench.control_rows(res, train_p, dev_p, 1, 1, work, [], small_params(), spectral=sp)
    assert len(list(work.glob("*.pkl"))) == 2
    assert len(list(work.glob("*_spectral_*.pkl"))) == 1
    pre = "controls order 1+spectral:n_states=2,ridge=0.05 "
    assert res.rows[pre + "base"]["uas"] == res.rows["controls order 1 base"]["uas"]
    tr = read_training_items(str(train_p), "dependency")
    dev = read_training_items(str(dev_p), "dependency")
    model = LatentDependencyModel(n_states=2, ridge=0.05, embeddings="one-hot")
    m = RerankDepParser(**{**small_params(), "spectral": model, "jobs": 1,
                           "features": "base+spectral"}).fit(tr)
    want = attachment_scores(dev, m.parse(dev, jobs=1), punct="exclude").uas
    assert res.rows[pre + "base+spectral"]["uas"] == pytest.approx(want, abs=1e-9)
    assert set(res.rows[pre + "lists"]["spectral_cpu_s"]) == {
        "spectral_jackknife", "spectral", "dev_spectral"}
    assert any(line.startswith("Controls of log p-hat, order 1+spectral:n_states=2,ridge=0.05")
               for line in bench.controls_table(res.rows))
