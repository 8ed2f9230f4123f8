"""Outputs are never lost, inputs never destroyed, errors are one line, and the
sequence-model commands (lm as an ordinary kind)."""
from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time

import pytest

from fastspectral import cli
from fastspectral.io.output import SafeOutput

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(argv, capsys):
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def work(tmp_path_factory, synthetic_grammar):
    """A PCFG model trained on the synthetic treebank and 3,000 sentences to parse."""
    d = tmp_path_factory.mktemp("safety")
    g = synthetic_grammar
    (d / "train.trees").write_text("".join(str(t) + "\n" for t in g.sample(300, seed=1)))
    sents = g.sample(3000, seed=2)
    (d / "sents.txt").write_text("".join(" ".join(t.leaves()) + "\n" for t in sents))
    assert cli.main(["train", "pcfg", str(d / "train.trees"), "-o", str(d / "m.fsm"), "-q"]) == 0
    return d


@pytest.mark.slow
def test_output_equal_to_an_input_is_refused(work, capsys):
    before = (work / "sents.txt").read_bytes()
    rc, _, err = run(["parse", work / "m.fsm", work / "sents.txt", "-o", work / "sents.txt"],
                     capsys)
    assert rc == 2 and "is also an input file" in err and err.count("\n") == 1
    assert (work / "sents.txt").read_bytes() == before
    rc, _, err = run(["train", "pcfg", work / "train.trees", "-o", work / "train.trees"], capsys)
    assert rc == 2 and "is also an input file" in err


def test_an_existing_output_survives_a_failed_run(work, capsys, tmp_path):
    out = tmp_path / "out.trees"
    out.write_text("precious\n")
    bad = tmp_path / "bad.txt"
    bad.write_text("the dog\n" * 5 + "a/DT b\n")
    rc, _, err = run(["parse", work / "m.fsm", bad, "-o", out, "--tagged", "yes", "-q"], capsys)
    assert rc == 2 and f"{bad}:1" in err
    assert out.read_text() == "precious\n"


@pytest.mark.slow
def test_devices_are_written_directly(work, capsys):
    rc, _, err = run(["parse", work / "m.fsm", work / "sents.txt", "-o", os.devnull, "-q",
                      "--chunk-size", "1000"], capsys)
    assert rc == 0, err
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)
    if os.path.exists("/dev/full") and os.geteuid() == 0:
        rc, _, err = run(["train", "pcfg", work / "train.trees", "-o", "/dev/full"], capsys)
        assert rc == 2 and "No space left on device" in err
        assert not os.path.isfile("/dev/full"), "the device node must not be replaced"


@pytest.mark.slow
def test_interrupted_parse_keeps_finished_sentences_and_resumes_identically(work, tmp_path):
    ref = tmp_path / "ref.trees"
    assert cli.main(["parse", str(work / "m.fsm"), str(work / "sents.txt"), "-o", str(ref),
                     "-q", "--jobs", "1"]) == 0
    out = tmp_path / "out.trees"
    cmd = [sys.executable, "-m", "fastspectral", "parse", str(work / "m.fsm"),
           str(work / "sents.txt"), "-o", str(out), "--chunk-size", "100", "--jobs", "1", "-q"]
    proc = subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE, text=True)
    part = tmp_path / "out.trees.part"
    deadline = time.time() + 120
    while time.time() < deadline and (not part.exists() or part.stat().st_size == 0):
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the parse finished before the signal arrived")
    assert proc.returncode == 130, err
    assert "interrupted" in err and "--resume" in err
    assert not out.exists()
    kept = part.read_text()
    assert kept.endswith("\n") and 0 < kept.count("\n") < 3000
    assert ref.read_text().startswith(kept)
    assert cli.main(cmd[3:] + ["--resume"]) == 0
    assert out.read_bytes() == ref.read_bytes() and not part.exists()


def test_resume_point_cuts_a_half_written_line(tmp_path):
    path = tmp_path / "o.txt"
    (tmp_path / "o.txt.part").write_bytes(b"one\ntwo\nthr")
    assert SafeOutput.resume_point(path) == 2
    assert (tmp_path / "o.txt.part").read_bytes() == b"one\ntwo\n"
    (tmp_path / "d.conllu.part").write_bytes(b"1\ta\n\n1\tb\n2\tc\n\n1\tx")
    assert SafeOutput.resume_point(tmp_path / "d.conllu", records="blocks") == 2
    gz = tmp_path / "g.txt.gz"
    with gzip.open(tmp_path / "g.txt.gz.part", "wb") as fh:
        fh.write(b"a\nb\nc")
    assert SafeOutput.resume_point(gz) == 2


def test_gzip_input_and_output(work, capsys, tmp_path):
    src = tmp_path / "s.txt.gz"
    with gzip.open(src, "wt") as fh:
        fh.write((work / "sents.txt").read_text().split("\n", 50)[0] + "\n")
    rc, _, err = run(["parse", work / "m.fsm", src, "-o", tmp_path / "o.trees.gz", "-q"], capsys)
    assert rc == 0, err
    with gzip.open(tmp_path / "o.trees.gz", "rt") as fh:
        assert fh.read().startswith("(TOP ")


def test_wrong_kind_of_input_is_refused(work, capsys, tmp_path):
    conllu = tmp_path / "x.conllu"
    conllu.write_text("1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n"
                      "2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_\n\n")
    rc, out, err = run(["parse", work / "m.fsm", conllu, "-q"], capsys)
    assert rc == 2 and "dependency file" in err and out == ""


def test_encoding_option_and_message(capsys, tmp_path):
    latin = tmp_path / "latin1.trees"
    latin.write_bytes("(TOP (S (NP (NN caf\u00e9)) (VP (VBZ ouvre))))\n".encode("latin-1") * 30)
    rc, _, err = run(["train", "pcfg", latin, "-o", tmp_path / "m.fsm", "-q"], capsys)
    assert rc == 2 and "--encoding" in err and err.count("\n") == 1
    rc, _, err = run(["train", "pcfg", latin, "-o", tmp_path / "m.fsm", "-q",
                      "--encoding", "latin-1"], capsys)
    assert rc == 0, err


def test_lm_is_an_ordinary_kind(capsys, tmp_path, synthetic_grammar):
    corpus = tmp_path / "c.txt"
    g = synthetic_grammar
    corpus.write_text("".join(" ".join(t.leaves()) + "\n" for t in g.sample(400, seed=5)))
    rc, _, err = run(["train", "lm", corpus, "-o", tmp_path / "a.lm", "--states", "2",
                      "--tokens", "3000", "-q"], capsys)
    assert rc == 0, err
    rc, _, err = run(["lm", "train", corpus, "-o", tmp_path / "b.lm", "--states", "2",
                      "--tokens", "3000", "-q"], capsys)
    assert rc == 0, err
    from fastspectral.io import load
    a, b = load(tmp_path / "a.lm"), load(tmp_path / "b.lm")
    assert repr(a.get_params()) == repr(b.get_params())
    test = [t.leaves() for t in g.sample(20, seed=6)]
    assert a.log_likelihood(test) == b.log_likelihood(test)
    rc, _, err = run(["lm", "train", corpus, "-o", tmp_path / "kn.lm", "--method", "kn",
                      "--tokens", "3000", "-q"], capsys)
    assert rc == 0, err
    assert type(load(tmp_path / "kn.lm")).__name__ == "KneserNeyBigramLM"
    for model in ("a.lm", "kn.lm"):
        rc, out, err = run(["lm", "eval", tmp_path / model, corpus, "--skip-tokens", "3000"],
                           capsys)
        assert rc == 0 and out.startswith("perplexity "), err
    rc, _, err = run(["parse", tmp_path / "a.lm", corpus, "-q"], capsys)
    assert rc == 2 and "does not parse" in err
    rc, _, err = run(["lm", "eval", tmp_path / "nope.lm", corpus], capsys)
    assert rc == 2 and err.startswith("fastspectral: error:")


@pytest.mark.parametrize("tamper", ["empty-meta", "truncated", "not-a-model"])
def test_broken_model_files_give_one_line(work, capsys, tmp_path, tamper):
    import json
    import zipfile

    src = work / "m.fsm"
    bad = tmp_path / "bad.fsm"
    if tamper == "truncated":
        bad.write_bytes(src.read_bytes()[: src.stat().st_size // 2])
    elif tamper == "not-a-model":
        bad.write_text("hello\n")
    else:
        with zipfile.ZipFile(src) as zin, zipfile.ZipFile(bad, "w") as zout:
            for item in zin.infolist():
                data = zin.read(item.filename)
                if item.filename == "__meta__.npy":
                    import io

                    import numpy as np
                    header = {"format": "fastspectral-model", "version": 1, "kind": "pcfg",
                              "meta": {}}
                    buf = io.BytesIO()
                    np.save(buf, np.frombuffer(json.dumps(header).encode(), dtype=np.uint8))
                    data = buf.getvalue()
                zout.writestr(item, data)
    rc, _, err = run(["parse", bad, work / "sents.txt", "-q"], capsys)
    assert rc == 2 and err.startswith("fastspectral: error:") and err.count("\n") == 1, err
    assert str(bad) in err


def test_tokens_with_brackets_are_written_readably(work, capsys, tmp_path):
    from fastspectral.trees.tree import Tree

    inp = tmp_path / "b.txt"
    inp.write_text("the dog ( a ) barks\n:-) smiles\n")
    rc, out, err = run(["parse", work / "m.fsm", inp, "-q"], capsys)
    assert rc == 0, err
    trees = [Tree.fromstring(line) for line in out.splitlines()]
    assert trees[0].leaves() == ["the", "dog", "-LRB-", "a", "-RRB-", "barks"]
    assert trees[1].leaves() == [":--RRB-", "smiles"]


@pytest.mark.parametrize("kind", ["mst", "shag", "latent-dep", "pcfg"])
def test_tagged_text_for_a_tree_learner_gives_one_line(capsys, tmp_path, kind):
    """word/TAG text (read as the "brown" format) has no trees or heads: the learners that
    need them say so in one line naming the file, instead of failing inside fit."""
    corpus = tmp_path / "tagged.txt"
    corpus.write_text("the/DT dog/NN barks/VBZ\na/DT cat/NN sleeps/VBZ\n" * 20)
    rc, _, err = run(["train", kind, corpus, "-o", tmp_path / "x.model", "-q"], capsys)
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert str(corpus) in err and "tagged sentences" in err
    assert not (tmp_path / "x.model").exists()
