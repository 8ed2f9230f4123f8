"""Learning on a Dask cluster: statistics per partition on the workers, tree-merged
there, context broadcast per pass; the model equals ``fit`` on the whole data.  One
``LocalCluster`` (2 worker processes, 1 thread each) for the module."""
from __future__ import annotations

import logging

import numpy as np
import pytest
from conftest import data_path, need

distributed = pytest.importorskip("distributed", reason="Dask is an optional extra: pip install "
                                                        "'fastspectral[dask]'")

#: every test here starts a local Dask cluster (seconds each)
pytestmark = pytest.mark.slow

from test_partial_fit import assert_same_arrays, assert_same_model, split  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.ERROR)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def wsj_trees():
    from fastspectral.trees import read_ptb

    return list(read_ptb(need(data_path("ptb", "wsj-sample.mrg"))))[:500]


@pytest.fixture(scope="module")
def synthetic_trees(synthetic_grammar):
    return synthetic_grammar.sample(300, seed=1)


def _fit_both(make, items, parts, client):
    from fastspectral.dask import fit_partitioned

    a = make().fit(items)
    b = fit_partitioned(make(), parts, client)
    return a, b


@pytest.mark.parametrize("k", [2, 7])
@pytest.mark.parametrize("name", ["pcfg", "spectral", "spectral-rule", "em", "pivot",
                                  "pivot-em"])
def test_constituency_learners(client, wsj_trees, name, k):
    from fastspectral import PCFG
    from fastspectral.lpcfg import EMLPCFG, PivotLPCFG, SpectralLPCFG

    make = {"pcfg": lambda: PCFG(jobs=1), "spectral": lambda: SpectralLPCFG(jobs=1),
            "spectral-rule": lambda: SpectralLPCFG(moment_backoff="rule", jobs=1),
            "em": lambda: EMLPCFG(n_states=4, iterations=3, jobs=1),
            "pivot": lambda: PivotLPCFG(n_states=4, jobs=1),
            "pivot-em": lambda: EMLPCFG(n_states=4, init="pivot", iterations=2, jobs=1)}[name]
    a, b = _fit_both(make, wsj_trees, split(wsj_trees, k), client)
    if name == "pivot":
        assert_same_arrays(a, b)          # integer statistics: arrays bit for bit
    else:
        assert_same_model(a, b, exact=(name == "pcfg"))
    assert b.partitioned_fit_["partitions"] == k
    assert len(b.partitioned_fit_["passes"]) == {"pcfg": 1, "spectral": 4, "spectral-rule": 4,
                                                 "em": 4, "pivot": 2, "pivot-em": 4}[name]
    s = [t.leaves() for t in wsj_trees[:30]]
    assert [str(t) for t in a.parse(s)] == [str(t) for t in b.parse(s)]


@pytest.mark.parametrize("kw", [{}, {"method": "em", "iterations": 3},
                                {"lexical": "lex+f"}], ids=["spectral", "em", "lex+f"])
def test_shag(client, kw):
    from fastspectral.dependency.model import SHAGParser
    from fastspectral.trees.readers import read_treebank

    sents = list(read_treebank(need(data_path("dep", "wsj-sample.dp"))))[:600]
    a, b = _fit_both(lambda: SHAGParser(**kw), sents, split(sents, 7), client)
    assert_same_model(a, b, exact=True)
    for x, y in zip(a.predict_heads(sents[:50], jobs=1), b.predict_heads(sents[:50], jobs=1)):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("name", ["kn", "lm-em"])
def test_language_models(client, synthetic_trees, name):
    from fastspectral.lm import KneserNeyBigramLM, LatentBigramLM

    sents = [t.leaves() for t in synthetic_trees]
    make = {"kn": lambda: KneserNeyBigramLM(min_count=2),
            "lm-em": lambda: LatentBigramLM(n_states=3, method="em", iterations=4)}[name]
    a, b = _fit_both(make, sents, split(sents, 7), client)
    assert_same_model(a, b, exact=True)


@pytest.mark.parametrize("method,iterations", [("em", 12), ("pivot-em", 4)])
@pytest.mark.parametrize("k", [1, 2, 7])
def test_latent_lm_dev_set(client, wsj_trees, method, iterations, k):
    """``dev=`` on the cluster: the dev set stays on the client, where EM runs once on the
    merged bigram matrix; the model of ``fit(..., dev=)`` (best iteration, dev history)."""
    from fastspectral.dask import fit_partitioned
    from fastspectral.lm import LatentBigramLM

    sents = [t.leaves() for t in wsj_trees[:400]]
    dev = [t.leaves() for t in wsj_trees[400:]]
    kw = dict(method=method, n_states=4, iterations=iterations, anchor_min_count=5)
    a = LatentBigramLM(**kw).fit(sents, dev=dev)
    b = fit_partitioned(LatentBigramLM(**kw), split(sents, k), client, dev=dev)
    assert a.best_iteration_ < iterations          # the dev set chose the iteration, not the last
    assert b.best_iteration_ == a.best_iteration_
    assert np.array_equal(b.dev_perplexity_, a.dev_perplexity_)
    assert a.dev_perplexity_.shape == (iterations + 1,)
    assert_same_model(a, b, exact=True)
    assert b.partitioned_fit_["partitions"] == k


def test_train_lm_dev_on_the_cluster(client, tmp_path, wsj_trees):
    """``train lm A B --dev D --scheduler``: the model of ``train lm cat(A, B) --dev D``;
    ``fit_files(..., dev=)`` the same."""
    from fastspectral.cli import main
    from fastspectral.dask import fit_files
    from fastspectral.io.modelfile import load_model_file
    from fastspectral.lm import LatentBigramLM

    lines = [" ".join(t.leaves()) + "\n" for t in wsj_trees]
    a, b, ab, d = (tmp_path / f"{x}.txt" for x in ("a", "b", "ab", "dev"))
    a.write_text("".join(lines[:200]), encoding="utf-8")
    b.write_text("".join(lines[200:400]), encoding="utf-8")
    ab.write_text("".join(lines[:400]), encoding="utf-8")
    d.write_text("".join(lines[400:]), encoding="utf-8")
    opts = ["-q", "--method", "em", "--states", "4", "--iterations", "12", "--dev", str(d)]
    assert main(["train", "lm", str(a), str(b), "-o", str(tmp_path / "dask.m"),
                 "--scheduler", client.scheduler.address, "--partitions-per-file", "2"]
                + opts) == 0
    assert main(["train", "lm", str(ab), "-o", str(tmp_path / "local.m")] + opts) == 0
    k1, m1, a1 = load_model_file(tmp_path / "dask.m")
    k2, m2, a2 = load_model_file(tmp_path / "local.m")
    m1.pop("fit_time")
    m2.pop("fit_time")
    assert k1 == k2 and m1 == m2 and a1.keys() == a2.keys()
    assert all(np.array_equal(a1[x], a2[x]) for x in a1)
    assert 0 < m1["best_iteration"] < 12 and a1["dev_perplexity"].shape == (13,)
    local = LatentBigramLM.load(tmp_path / "local.m")
    dev = [line.split() for line in lines[400:]]
    c = fit_files(LatentBigramLM(method="em", n_states=4, iterations=12), [a, b], client,
                  dev=dev)
    assert_same_model(local, c, exact=True)
    assert client.status == "running"


def test_bag_futures_and_delayed_partitions(client, synthetic_trees):
    import dask
    import dask.bag as db

    from fastspectral import PCFG
    from fastspectral.dask import fit_partitioned

    a = PCFG(jobs=1).fit(synthetic_trees)
    bag = db.from_sequence(synthetic_trees, npartitions=3)
    b = fit_partitioned(PCFG(jobs=1), bag, client)
    assert_same_model(a, b, exact=True)
    futures = [client.scatter([p])[0] for p in split(synthetic_trees, 4)]
    c = fit_partitioned(PCFG(jobs=1), futures, client, split_every=2)
    assert_same_model(a, c, exact=True)
    delayed = [dask.delayed(list)(p) for p in split(synthetic_trees, 3)]
    d = fit_partitioned(PCFG(jobs=1), delayed, client)
    assert_same_model(a, d, exact=True)


def test_files_read_on_the_workers(client, tmp_path, synthetic_trees):
    from fastspectral.dask import fit_files, read_partitions
    from fastspectral.lpcfg import SpectralLPCFG
    from fastspectral.trees.ptb import write_brackets

    paths = []
    for i, part in enumerate(split(synthetic_trees, 2)):
        paths.append(tmp_path / f"part{i}.mrg")
        write_brackets(part, paths[-1])
    futs = read_partitions(client, paths, split=3)
    assert len(futs) == 6
    assert sum(len(f.result()) for f in futs) == len(synthetic_trees)
    a = SpectralLPCFG(n_states=2, jobs=1).fit(synthetic_trees)
    b = fit_files(SpectralLPCFG(n_states=2, jobs=1), paths, client, split=3)
    assert_same_model(a, b, exact=False)


def test_train_command_on_the_cluster(client, tmp_path, synthetic_trees):
    from fastspectral.cli import main
    from fastspectral.io.modelfile import load_model_file
    from fastspectral.trees.ptb import write_brackets

    a, b, ab = tmp_path / "a.mrg", tmp_path / "b.mrg", tmp_path / "ab.mrg"
    write_brackets(synthetic_trees[:100], a)
    write_brackets(synthetic_trees[100:], b)
    write_brackets(synthetic_trees, ab)
    addr = client.scheduler.address
    assert main(["train", "pcfg", str(a), str(b), "-o", str(tmp_path / "dask.m"), "-q",
                 "--scheduler", addr, "--partitions-per-file", "2"]) == 0
    assert main(["train", "pcfg", str(ab), "-o", str(tmp_path / "local.m"), "-q"]) == 0
    k1, m1, a1 = load_model_file(tmp_path / "dask.m")
    k2, m2, a2 = load_model_file(tmp_path / "local.m")
    m1.pop("fit_time")
    m2.pop("fit_time")
    assert k1 == k2 and m1 == m2
    assert all(np.array_equal(a1[k], a2[k]) for k in a1) and a1.keys() == a2.keys()
    assert client.status == "running"


def test_train_pivot_em_on_the_cluster(client, tmp_path, synthetic_trees):
    """``train pivot-em A B --scheduler``: the model of ``train pivot-em cat(A, B)``."""
    from fastspectral.cli import main
    from fastspectral.lpcfg import EMLPCFG
    from fastspectral.trees.ptb import write_brackets

    a, b, ab = tmp_path / "a.mrg", tmp_path / "b.mrg", tmp_path / "ab.mrg"
    write_brackets(synthetic_trees[:100], a)
    write_brackets(synthetic_trees[100:], b)
    write_brackets(synthetic_trees, ab)
    opts = ["-q", "--states", "2", "--iterations", "2"]
    assert main(["train", "pivot-em", str(a), str(b), "-o", str(tmp_path / "dask.m"),
                 "--scheduler", client.scheduler.address] + opts) == 0
    assert main(["train", "pivot-em", str(ab), "-o", str(tmp_path / "local.m")] + opts) == 0
    assert_same_model(EMLPCFG.load(tmp_path / "local.m"), EMLPCFG.load(tmp_path / "dask.m"),
                      exact=False)


def test_errors(client, synthetic_trees):
    from fastspectral import PCFG, models
    from fastspectral.dask import fit_partitioned

    with pytest.raises(TypeError, match="cannot learn from partitions"):
        fit_partitioned(models.model_class("ccm")(), [synthetic_trees], client)
    with pytest.raises(ValueError, match="split_every"):
        fit_partitioned(PCFG(), [synthetic_trees], client, split_every=1)
    with pytest.raises(ValueError, match="no partitions"):
        fit_partitioned(PCFG(), [], client)
    with pytest.raises(TypeError, match="PCFG.fit_statistics takes no argument 'dev'"):
        fit_partitioned(PCFG(), [synthetic_trees], client, dev=[])
