"""``benchmarks/wsj_constituency.py``: its row names, the choice of the EM iteration on the
development curve, resuming from the results file, and the whole pipeline on a tiny treebank
(train, parse, eval as processes; an EM row's per-iteration models)."""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "wsj_constituency", os.path.join(HERE, "..", "benchmarks", "wsj_constituency.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_rows(bench):
    assert bench.parse_row("pcfg") == ("pcfg", None)
    assert bench.parse_row("pivot-em:24") == ("pivot-em", 24)
    for bad in ("pcfg:8", "spectral", "spectral:0", "cky:8"):
        with pytest.raises(argparse.ArgumentTypeError):
            bench.parse_row(bad)
    rows = bench.default_rows()
    assert rows[0] == "pcfg" and len(rows) == 17 and "em:32" in rows
    assert bench._wall_seconds("1:02:03.5") == pytest.approx(3723.5)
    assert bench._wall_seconds("0:07.25") == pytest.approx(7.25)
    assert bench.eval_iterations(7, 3) == [3, 6, 7]
    assert bench.eval_iterations(2, 1) == [1, 2]


@pytest.mark.skipif(shutil.which("/usr/bin/time") is None and not os.path.exists("/usr/bin/time"),
                    reason="needs /usr/bin/time")
@pytest.mark.slow
def test_tiny_pipeline_resumes_and_picks_the_best_iteration(bench, tmp_path, capsys):
    from fastspectral.synthetic import LatentPCFG
    from fastspectral.trees.ptb import write_brackets

    g = LatentPCFG.default(n_states=2, seed=0)
    train, dev = tmp_path / "train.trees", tmp_path / "dev.trees"
    write_brackets(g.sample(150, seed=1), str(train))
    write_brackets(g.sample(12, seed=2), str(dev))
    results = tmp_path / "r.jsonl"
    argv = ["--train", str(train), "--dev", str(dev), "--work", str(tmp_path / "w"),
            "--results", str(results), "--rows", "spectral:2", "pivot-em:2",
            "--pivot-em-iterations", "2"]
    assert bench.main(argv) == 0
    recs = [json.loads(x) for x in results.read_text().splitlines()]
    rows = {r["key"]: r for r in recs if r["type"] == "row"}
    assert set(rows) == {"spectral:2", "pivot-em:2"}
    spec = rows["spectral:2"]
    assert 0 < spec["f1"] <= 100 and spec["sentences"] == 12 and spec["train_cpu_s"] > 0
    its = [r for r in recs if r["type"] == "iteration"]
    assert [r["iteration"] for r in its] == [1, 2]
    best = max(its, key=lambda r: (r["f1"], -r["iteration"]))
    assert rows["pivot-em:2"]["chosen_iteration"] == best["iteration"]
    assert rows["pivot-em:2"]["f1"] == best["f1"]
    assert rows["pivot-em:2"]["curve"] == [[r["iteration"], r["f1"]] for r in its]
    assert not list((tmp_path / "w").glob("*.model"))          # removed without --keep-models
    # a second run finds every row done
    capsys.readouterr()
    assert bench.main(argv) == 0
    assert "already in" in capsys.readouterr().out
    assert len(results.read_text().splitlines()) == len(recs)
    assert bench.main(["--table", "--results", str(results)]) == 0
    assert "| pivot-em:2 |" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("/usr/bin/time") is None and not os.path.exists("/usr/bin/time"),
                    reason="needs /usr/bin/time")
@pytest.mark.slow
def test_rows_with_a_pruning_model(bench, tmp_path):
    from fastspectral.io import load
    from fastspectral.synthetic import LatentPCFG
    from fastspectral.trees.ptb import write_brackets

    g = LatentPCFG.default(n_states=2, seed=0)
    train, dev = tmp_path / "train.trees", tmp_path / "dev.trees"
    write_brackets(g.sample(150, seed=1), str(train))
    write_brackets(g.sample(12, seed=2), str(dev))
    results = tmp_path / "r.jsonl"
    work = tmp_path / "w"
    argv = ["--train", str(train), "--dev", str(dev), "--work", str(work),
            "--results", str(results), "--rows", "spectral:2", "pivot-em:2",
            "--pivot-em-iterations", "1", "--pruner-states", "1", "--pruner-threshold", "0.001",
            "--keep-models"]
    assert bench.main(argv) == 0
    recs = [json.loads(x) for x in results.read_text().splitlines()]
    rows = {r["key"] for r in recs if r["type"] == "row"}
    assert rows == {"spectral:2+p1+t0.001", "pivot-em:2+p1+t0.001"}
    for name in ("spectral-2+p1+t0.001.model", "pivot-em-2+p1+t0.001.it1.model"):
        model = load(work / name)
        assert model.pruner_.n_states == 1 and model.pruner_threshold == 0.001
