"""fastspectral.dask parsing on a LocalCluster (2 worker processes, 1 thread each): results
identical to the single-process parse, in input order; the model loaded once per worker; errors
naming the partition and the sentence; the command line's --scheduler / --dask-workers."""
from __future__ import annotations

import gzip
import io
import os

import pytest

pytest.importorskip("distributed", reason="dask[distributed] is not installed "
                                          "(pip install 'fastspectral[dask]')")

#: every test here starts a local Dask cluster (seconds each)
pytestmark = pytest.mark.slow

from distributed import Client, LocalCluster  # noqa: E402

from fastspectral import cli  # noqa: E402
from fastspectral.dask import (PartitionError, parse_bag, parse_files,  # noqa: E402
                               thread_plan)


@pytest.fixture(scope="module")
def work(tmp_path_factory, synthetic_grammar):
    """A PCFG model file, 400 sentences (with empty and tagged lines) and their trees parsed
    in this process by ``fastspectral parse``."""
    d = tmp_path_factory.mktemp("daskparse")
    g = synthetic_grammar
    (d / "train.trees").write_text("".join(str(t) + "\n" for t in g.sample(300, seed=1)))
    assert cli.main(["train", "pcfg", str(d / "train.trees"), "-o", str(d / "m.fsm"), "-q"]) == 0
    trees = g.sample(400, seed=2)
    lines = [" ".join(t.leaves()) for t in trees]
    lines[7] = ""                                                     # an empty sentence
    lines[11] = " ".join(f"{w}/{p}" for w, p in trees[11].pos())      # a tagged one
    (d / "a.txt").write_text("".join(s + "\n" for s in lines[:250]))
    with gzip.open(d / "b.txt.gz", "wt") as fh:
        fh.write("".join(s + "\n" for s in lines[250:]))
    (d / "all.txt").write_text("".join(s + "\n" for s in lines))
    assert cli.main(["parse", str(d / "m.fsm"), str(d / "all.txt"), "-o", str(d / "ref.trees"),
                     "-q", "--jobs", "1"]) == 0
    ref = (d / "ref.trees").read_text().splitlines()
    assert len(ref) == 400 and ref[7] == "" and ref[0].startswith("(TOP ")
    return d, lines, ref


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=40)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_bag_in_order_identical_and_model_loaded_once_per_worker(work, client):
    import dask.bag as db

    from fastspectral.dask.parse import model_loads, model_ref

    d, lines, ref = work
    bag = db.from_sequence(lines, npartitions=7)
    assert parse_bag(bag, d / "m.fsm").compute() == ref
    # lists of words (the tagged line as (words, tags)), another partitioning
    items = [line.split() for line in lines]
    items[11] = tuple(zip(*(tok.rsplit("/", 1) for tok in lines[11].split())))
    items[11] = (list(items[11][0]), list(items[11][1]))
    assert parse_bag(db.from_sequence(items, npartitions=5), d / "m.fsm").compute() == ref
    key = model_ref(d / "m.fsm").key
    loads = client.run(model_loads)
    assert len(loads) == 2 and all(v == {key: 1} for v in loads.values()), loads
    # not shipped: each worker loads the file from the (shared) file system, once
    (d / "copy.fsm").write_bytes((d / "m.fsm").read_bytes())
    for _ in range(2):
        assert parse_bag(bag, d / "copy.fsm", ship=False).compute() == ref
    key2 = model_ref(d / "copy.fsm").key
    counts = [v.get(key2, 0) for v in client.run(model_loads).values()]
    assert max(counts) == 1 and sum(counts) >= 1, counts


def test_failures_name_the_partition_and_the_sentence(work, client):
    import dask.bag as db

    d, lines, _ = work
    items = [line.split() for line in lines[:40]]
    items[12] = ["a", 42]                     # partition 1 (10 a partition), sentence 2
    with pytest.raises(PartitionError) as info:
        parse_bag(db.from_sequence(items, npartitions=4), d / "m.fsm").compute()
    assert info.value.partition == 1 and info.value.sentence == 2
    assert str(info.value).startswith("partition 1, sentence 2: invalid token 42")
    items = [" ".join(f"{w}/X" for w in line.split()) for line in lines[:40]]
    items[25] = "the/DT dog"                  # tagged=True: partition 2, sentence 5
    with pytest.raises(PartitionError, match=r"^partition 2, sentence 5: token 'dog'"):
        parse_bag(db.from_sequence(items, npartitions=4), d / "m.fsm", tagged=True).compute()


def test_dataframe_column(work, client):
    dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed")
    import pandas as pd

    from fastspectral.dask import parse_column

    d, lines, ref = work
    df = pd.DataFrame({"text": lines, "n": range(len(lines))}, index=range(100, 500))
    ddf = dd.from_pandas(df, npartitions=3)
    ddf["tree"] = parse_column(ddf, d / "m.fsm", "text")
    out = ddf.compute()
    assert out["tree"].tolist() == ref and out.index.tolist() == list(range(100, 500))
    # a column of word lists (Dask turns object columns into strings unless told not to)
    import dask

    with dask.config.set({"dataframe.convert-string": False}):
        words = pd.Series([s.split() for s in lines[:60]], name="words")
        words[11] = [w.rsplit("/", 1)[0] for w in lines[11].split()]
        out = parse_column(dd.from_pandas(words, npartitions=2), d / "m.fsm").compute()
    (d / "plain.txt").write_text("".join(" ".join(w) + "\n" for w in words))
    assert cli.main(["parse", str(d / "m.fsm"), str(d / "plain.txt"), "-o",
                     str(d / "plain.trees"), "-q"]) == 0
    assert out.tolist() == (d / "plain.trees").read_text().splitlines()


def test_dependency_files_and_bag(work, client, tmp_path, synthetic_grammar):
    """A dependency model: CoNLL-U in, CoNLL-U out, identical to the single-process parse."""
    import dask.bag as db

    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.trees import conll
    from fastspectral.trees.transforms import clean

    d, _, _ = work
    g = synthetic_grammar
    assert cli.main(["train", "shag", str(d / "train.trees"), "-o", str(tmp_path / "d.fsm"),
                     "-q"]) == 0
    sents = list(trees_to_dep_sentences(clean(t) for t in g.sample(120, seed=3)))
    with open(tmp_path / "in.conllu", "w") as fh:
        conll.write_conllu(sents, fh)
    assert cli.main(["parse", str(tmp_path / "d.fsm"), str(tmp_path / "in.conllu"), "-o",
                     str(tmp_path / "ref.conllu"), "-q", "--jobs", "1"]) == 0
    res = parse_files([tmp_path / "in.conllu"], tmp_path / "d.fsm", tmp_path / "out",
                      client=client, chunk_size=25)
    assert res.tasks == 5
    assert (tmp_path / "out" / "in.conllu").read_bytes() == \
        (tmp_path / "ref.conllu").read_bytes()
    parsed = parse_bag(db.from_sequence(sents, npartitions=3), tmp_path / "d.fsm").compute()
    buf = io.StringIO()
    conll.write_conllu(parsed, buf)
    assert buf.getvalue() == (tmp_path / "ref.conllu").read_text()


def test_files_with_a_scheduler_address(work, client, tmp_path, capsys):
    d, _, ref = work
    outdir = tmp_path / "out"
    rc = cli.main(["parse", d / "m.fsm", d / "a.txt", d / "b.txt.gz", "-o", outdir,
                   "--scheduler", client.scheduler.address, "--chunk-size", "40"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "parsed 400 sentences into 2 output(s)" in err and "on 2 Dask workers" in err
    assert sorted(os.listdir(outdir)) == ["a.txt", "b.txt.gz"]
    assert (outdir / "a.txt").read_text().splitlines() == ref[:250]
    with gzip.open(outdir / "b.txt.gz", "rt") as fh:
        assert fh.read().splitlines() == ref[250:]
    # one input, -o FILE: the bytes of the single-process run
    rc = cli.main(["parse", d / "m.fsm", d / "all.txt", "-o", tmp_path / "all.trees",
                   "--scheduler", client.scheduler.address, "-q"])
    assert rc == 0 and (tmp_path / "all.trees").read_bytes() == (d / "ref.trees").read_bytes()


def test_interrupted_and_resumed_on_the_cluster(work, client, tmp_path):
    d, _, ref = work
    calls = []

    def stop():                 # "Ctrl-C" once three chunks were asked for
        calls.append(1)
        return len(calls) > 3

    res = parse_files([d / "all.txt"], d / "m.fsm", tmp_path, client=client, chunk_size=30,
                      stop=stop)
    assert res.interrupted and not (tmp_path / "all.txt").exists()
    kept = (tmp_path / "all.txt.part").read_text().splitlines()
    assert 0 < len(kept) < 400 and kept == ref[:len(kept)]
    res = parse_files([d / "all.txt"], d / "m.fsm", tmp_path, client=client, chunk_size=70,
                      resume=True)
    assert not res.interrupted and res.resumed == {str(tmp_path / "all.txt"): len(kept)}
    assert (tmp_path / "all.txt").read_bytes() == (d / "ref.trees").read_bytes()
    assert not (tmp_path / "all.txt.part").exists()
    # resumed again: the finished output is kept, nothing is parsed
    res = parse_files([d / "all.txt"], d / "m.fsm", tmp_path, client=client, resume=True)
    assert res.complete == [str(tmp_path / "all.txt")] and res.sentences == 0


def test_a_bad_line_keeps_what_came_before(work, client, tmp_path, capsys):
    d, lines, ref = work
    bad = tmp_path / "bad.txt"
    tagged = [" ".join(f"{w}/X" for w in s.split()) or "x/X" for s in lines[:60]]
    bad.write_text("".join(s + "\n" for s in tagged) + "not tagged\n")
    rc = cli.main(["parse", d / "m.fsm", bad, "-o", tmp_path / "o.trees", "--tagged", "yes",
                   "--scheduler", client.scheduler.address, "--chunk-size", "20", "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(f"fastspectral: error: {bad}:61: ") and \
        err.count("\n") == 1, err
    assert len((tmp_path / "o.trees.part").read_text().splitlines()) == 60


def test_threads_are_capped_to_the_cores(client):
    from fastspectral._threads import available_cores

    cores = client.run(available_cores)
    plan = thread_plan(client)
    fair = max(1, max(cores.values()) // 2)           # 2 workers x 1 thread on one host
    assert sorted(plan) == sorted(cores) and set(plan.values()) == {fair}
    assert set(thread_plan(client, jobs=64).values()) == {fair}


def test_local_cluster_ctrl_c_then_resume(work, client, tmp_path):
    """--dask-workers: Ctrl-C (SIGINT to the whole process group, as a terminal sends it)
    finishes the chunks in flight, exits 130; --resume gives the single-process bytes."""
    import signal
    import subprocess
    import sys
    import time

    d, _, _ = work
    out = tmp_path / "x.trees"
    part = tmp_path / "x.trees.part"
    cmd = [sys.executable, "-m", "fastspectral", "parse", str(d / "m.fsm"), str(d / "all.txt"),
           "-o", str(out), "--dask-workers", "2", "--chunk-size", "5"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None and \
                (not part.exists() or part.stat().st_size == 0):
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    if proc.returncode == 0:
        pytest.skip("the parse finished before the signal arrived")
    assert proc.returncode == 130, err
    assert "interrupted" in err and str(part) in err and "--resume" in err
    kept = part.read_bytes()
    assert not out.exists() and kept.endswith(b"\n")
    assert (d / "ref.trees").read_bytes().startswith(kept)
    resume = cmd[3:-4] + ["--scheduler", client.scheduler.address, "--resume", "-q"]
    assert cli.main(resume) == 0 and out.read_bytes() == (d / "ref.trees").read_bytes()
