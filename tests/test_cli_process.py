"""The command line as a process: no command overwrites one of its inputs, a Ctrl-C stops any
command with exit 130, model files must be regular files, thread counts never exceed the
cores, and the errors name the command's options and files."""
from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import time

import pytest

from fastspectral import _threads, cli, models
from fastspectral.cli import kit

from conftest import data_path, need, subprocess_env

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = subprocess_env()


def run(argv, capsys):
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def one_error(err: str) -> str:
    assert err.count("\n") == 1 and err.startswith("fastspectral: error: "), err
    assert "Traceback" not in err
    return err


@pytest.fixture(scope="module")
def work(tmp_path_factory, synthetic_grammar):
    """Small inputs of every kind and a PCFG model."""
    d = tmp_path_factory.mktemp("process")
    g = synthetic_grammar
    trees = g.sample(200, seed=1)
    (d / "train.trees").write_text("".join(str(t) + "\n" for t in trees))
    (d / "sents.txt").write_text("".join(" ".join(t.leaves()) + "\n" for t in trees))
    (d / "corpus.txt").write_text("".join(" ".join(t.leaves()) + "\n" for t in trees))
    (d / "dev.txt").write_text("".join(" ".join(t.leaves()) + "\n" for t in trees[:20]))
    rows = ["1\tthe\tthe\tDET\tDT\t_\t2\tdet\t_\t_", "2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj\t_\t_",
            "3\tbarks\tbark\tVERB\tVBZ\t_\t0\troot\t_\t_"]
    (d / "deps.conllu").write_text(("\n".join(rows) + "\n\n") * 30)
    (d / "vectors.txt").write_text("not really vectors\n")
    assert cli.main(["train", "pcfg", str(d / "train.trees"), "-o", str(d / "m.fsm"), "-q"]) == 0
    return d


# ------------------------------------------------------------------------------------------------
# every path a command reads or writes is declared, and no output is an input
# ------------------------------------------------------------------------------------------------
def _walk(parser, path):
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _walk(sub, path + [name])
        else:
            yield " ".join(path), a


def _every_action():
    """(command, action) of every command's full parser (each train kind built in full)."""
    for kind in [None, "lm"] + list(models.train_commands()):
        yield from _walk(cli.build_parser(kind, "lexical"), [])


def test_every_path_option_is_declared():
    undeclared = sorted({f"{cmd}: {'/'.join(a.option_strings) or a.dest}"
                         for cmd, a in _every_action()
                         if kit.needs_path_role(a) and getattr(a, "path_role", None) is None})
    assert not undeclared, ("string options neither kit.reads, kit.writes nor kit.not_a_path: "
                            + ", ".join(undeclared))
    roles = {(cmd, a.dest): getattr(a, "path_role", None) for cmd, a in _every_action()}
    # the files found overwritten before the declarations
    assert roles[("train hmm", "dev")] == roles[("train kn-lm", "dev")] == kit.INPUT
    assert roles[("train atm", "embeddings")] == roles[("train rerank-dep", "embeddings")] \
        == roles[("train latent-dep", "embeddings")] == kit.INPUT
    assert roles[("train spectral", "singular_values")] == kit.OUTPUT
    assert roles[("train spectral", "treebank")] == kit.INPUT
    assert roles[("parse", "output")] == roles[("lexical cv", "json")] == kit.OUTPUT


def test_a_new_string_option_must_be_declared():
    p = argparse.ArgumentParser()
    assert kit.needs_path_role(p.add_argument("--table", metavar="FILE"))
    assert not kit.needs_path_role(p.add_argument("--n", type=int))
    assert not kit.needs_path_role(p.add_argument("--mode", choices=("a", "b")))
    assert not kit.needs_path_role(p.add_argument("--flag", action="store_true"))


def _links(work, tmp_path):
    """The same file under five names: itself, ./, a .. detour, a symbolic and a hard link."""
    target = tmp_path / "data.txt"
    target.write_bytes((work / "corpus.txt").read_bytes())
    (tmp_path / "sym.txt").symlink_to(target)
    os.link(target, tmp_path / "hard.txt")
    (tmp_path / "sub").mkdir()
    return target, [str(target), os.path.join(str(tmp_path), ".", "data.txt"),
                    str(tmp_path / "sub" / ".." / "data.txt"), str(tmp_path / "sym.txt"),
                    str(tmp_path / "hard.txt")]


@pytest.mark.parametrize("template", [
    "train hmm {corpus} --dev {same} -o {file}",
    "train lm {corpus} --dev {same} -o {file}",
    "train kn-lm {corpus} --dev {file} -o {same}",
    "lm train {corpus} --dev {same} -o {file}",
    "train atm {trees} --embeddings {same} -o {file}",
    "train latent-dep {deps} --embeddings {file} -o {same}",
    "train rerank-dep {deps} --features base+spectral --embeddings {same} -o {file}",
    "train spectral {file} --singular-values {same} -o {out}",
    "train pcfg {file} -o {same}",
    "parse {model} {file} -o {same}",
    "lexical tag {model} {file} -o {same}",
    "lexical cv {file} --json {same}",
])
def test_no_output_is_an_input(work, tmp_path, capsys, template):
    target, names = _links(work, tmp_path)
    before = target.read_bytes()
    for same in names[1:]:
        argv = template.format(corpus=work / "corpus.txt", trees=work / "train.trees",
                               deps=work / "deps.conllu", model=work / "m.fsm",
                               out=tmp_path / "out.fsm", file=names[0], same=same).split()
        rc, _, err = run(argv + ["-q"], capsys)
        assert rc == 2, (argv, err)
        assert "is also an input file" in one_error(err) and "refusing to overwrite" in err
        assert target.read_bytes() == before
    assert not (tmp_path / "out.fsm").exists()


def test_two_outputs_are_not_one_file(work, tmp_path, capsys):
    for out in (tmp_path / "m.fsm", tmp_path / "sub" / ".." / "m.fsm"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        rc, _, err = run(["train", "spectral", work / "train.trees", "-o", tmp_path / "m.fsm",
                          "--singular-values", out, "-q"], capsys)
        assert rc == 2 and "are the same file" in one_error(err)
    assert not (tmp_path / "m.fsm").exists()


def test_devices_and_stdio_are_not_compared(work, capsys):
    # /dev/null as output and as an input is no overwritten file
    if not os.path.exists(os.devnull):
        pytest.skip("no /dev/null")
    rc, _, err = run(["parse", work / "m.fsm", os.devnull, "-o", os.devnull, "-q"], capsys)
    assert rc == 0, err


# ------------------------------------------------------------------------------------------------
# Ctrl-C: exit 130, one line, wherever training is (Numba kernels and compilation included)
# ------------------------------------------------------------------------------------------------
def _big_corpus(tmp_path):
    brown = need(data_path("brown", "brown-tagged.txt"))
    big = tmp_path / "big.txt"
    big.write_bytes(brown.read_bytes() * 2)
    return big


def _big_deps(tmp_path):
    dp = need(data_path("dep", "wsj-sample.dp"))
    big = tmp_path / "big.dp"
    big.write_bytes(dp.read_bytes())
    return big


def _interrupt(argv, delay):
    """Run ``fastspectral ARGV``, SIGINT it ``delay`` s later; ``(rc, stderr)``."""
    proc = subprocess.Popen([sys.executable, "-m", "fastspectral", *map(str, argv)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV,
                            text=True)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"{argv}: still running 240 s after Ctrl-C")
    return proc.returncode, err


@pytest.mark.slow
@pytest.mark.parametrize("command", ["hmm-em", "mst", "rerank-dep"])
def test_ctrl_c_during_training_exits_130(tmp_path, command):
    if command == "hmm-em":
        argv = ["train", "hmm", "--method", "em", "--iterations", "50", _big_corpus(tmp_path)]
    elif command == "mst":
        argv = ["train", "mst", _big_deps(tmp_path)]
    else:
        argv = ["train", "rerank-dep", _big_deps(tmp_path)]
    out = tmp_path / "model.fsm"
    results = []
    for delay in (4, 9, 15):        # start-up, compilation or the first kernels, training
        rc, err = _interrupt(argv + ["-o", out], delay)
        results.append((delay, rc, err))
        if rc == 0:                 # finished before the signal: nothing to check
            continue
        assert rc == 130, f"delay {delay}: rc {rc}\n{err[-3000:]}"
        lines = [ln for ln in err.splitlines()  # (the note of a cold kernel cache aside)
                 if ln.strip() and ln != "fastspectral: compiling kernels (first run only) ..."]
        assert lines == ["fastspectral: interrupted"], err[-3000:]
        assert not out.exists(), "an interrupted training must not save a model"
    assert any(rc == 130 for _, rc, _ in results), results


def test_interrupt_chain_is_recognised():
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as ki:
            raise SystemError("CPUDispatcher(f) returned a result with an exception set") \
                from ki
    except SystemError as exc:
        assert kit.is_interrupt(exc)
    assert not kit.is_interrupt(SystemError("other"))


# ------------------------------------------------------------------------------------------------
# model files (and embeddings) must be regular files: a FIFO would block open() forever
# ------------------------------------------------------------------------------------------------
def _fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    return fifo


@pytest.mark.parametrize("argv", [
    ["parse", "{fifo}", "{sents}"],
    ["parse", "/dev/zero", "{sents}"],
    ["parse", "{dir}", "{sents}"],
    ["lm", "eval", "{fifo}", "{sents}"],
    ["lexical", "tag", "{fifo}", "{sents}"],
    ["train", "latent-dep", "{deps}", "--embeddings", "{fifo}", "-o", "{out}"],
    ["train", "atm", "{trees}", "--embeddings", "{fifo}", "-o", "{out}"],
])
def test_a_model_file_that_is_not_regular_is_refused(work, tmp_path, argv):
    fifo = _fifo(tmp_path)
    argv = [a.format(fifo=fifo, sents=work / "sents.txt", dir=tmp_path, deps=work /
                     "deps.conllu", trees=work / "train.trees", out=tmp_path / "o.fsm")
            for a in argv]
    if "/dev/zero" in argv and not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    proc = subprocess.run([sys.executable, "-m", "fastspectral", *argv, "-q"], env=ENV,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert one_error(proc.stderr).rstrip().endswith(": not a regular file"), proc.stderr


def test_load_refuses_a_fifo(tmp_path):
    from fastspectral.errors import ModelFileError
    from fastspectral.io import load

    fifo = _fifo(tmp_path)
    with pytest.raises(ModelFileError, match="not a regular file"):
        load(fifo)
    with pytest.raises(ModelFileError, match="not a regular file"):
        load(tmp_path)


# ------------------------------------------------------------------------------------------------
# threads: never more than the cores (nor the sentences)
# ------------------------------------------------------------------------------------------------
def test_jobs_are_capped_at_the_cores(caplog):
    cores = _threads.affinity_cores()
    _threads._NOTED.clear()
    with caplog.at_level(logging.WARNING, logger="fastspectral"):
        assert _threads.resolve_jobs(cores + 1000) == cores
        assert _threads.resolve_jobs(cores + 1000) == cores
    notes = [r for r in caplog.records if "cores available" in r.getMessage()]
    assert len(notes) == 1, "one note, not one per call"
    assert _threads.resolve_jobs(1) == 1
    assert _threads.resolve_jobs(cores + 5, n_items=1) == 1
    assert _threads.resolve_jobs(None, n_items=0) == 1
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(ValueError):
            _threads.resolve_jobs(bad)


def test_parse_with_a_thousand_jobs(work, tmp_path, capsys):
    ref, out = tmp_path / "ref.trees", tmp_path / "out.trees"
    _threads._NOTED.clear()
    assert run(["parse", work / "m.fsm", work / "sents.txt", "-o", ref, "--jobs", "1", "-q"],
               capsys)[0] == 0
    rc, _, err = run(["parse", work / "m.fsm", work / "sents.txt", "-o", out, "--jobs", "1000"],
                     capsys)
    assert rc == 0, err
    cores = _threads.affinity_cores()
    if cores < 1000:
        assert f"1000 threads asked for, {cores} cores available: using {cores}" in err
    assert out.read_bytes() == ref.read_bytes()


def test_train_mst_with_a_thousand_jobs(work, tmp_path, capsys):
    rc, _, err = run(["train", "mst", work / "deps.conllu", "-o", tmp_path / "m.mst", "--jobs",
                      "1000", "--iterations", "1", "-q"], capsys)
    assert rc == 0, err


# ------------------------------------------------------------------------------------------------
# messages: the command's options and files, one line
# ------------------------------------------------------------------------------------------------
def _options(argv):
    parser = cli.build_parser(cli._train_type(argv), argv[0])
    args = parser.parse_args(argv)
    return kit.option_names(kit.chosen_parsers(parser, args))


def test_memory_hint_fits_the_command():
    train = kit.describe(MemoryError(), _options(["train", "spectral", "x", "-o", "y"]))
    assert train == "out of memory (try fewer --states or fewer --jobs)"
    parse = kit.describe(MemoryError(), _options(["parse", "m", "x"]))
    assert parse == "out of memory (try fewer --jobs or a smaller --max-memory)"
    assert "--max-memory" not in train


def test_out_of_memory_in_training_names_training_options(work, tmp_path, capsys,
                                                          monkeypatch):
    from fastspectral.grammar.pcfg import PCFG

    def fit(self, *a, **k):
        raise MemoryError

    monkeypatch.setattr(PCFG, "fit", fit)
    rc, _, err = run(["train", "pcfg", work / "train.trees", "-o", tmp_path / "m.fsm"], capsys)
    assert rc == 2 and "out of memory" in one_error(err) and "--max-memory" not in err


def test_library_keywords_become_options():
    opts = _options(["train", "latent-dep", "x", "-o", "y"])
    assert kit.describe(ValueError("stop_adjacency=True needs stop_events=True"), opts) == \
        "--stop-adjacency needs --stop-events"
    assert kit.describe(ValueError("bad header; pass format=..."), opts) == \
        "bad header; pass --format"
    opts = _options(["train", "atm", "x", "-o", "y"])
    assert kit.describe(ValueError("(use tag_map='as-is' for other tagsets)"), opts) == \
        "(use --tag-map as-is for other tagsets)"
    # a keyword the command has no option for stays as it is
    assert kit.describe(ValueError("needs frobnicate=3"), opts) == "needs frobnicate=3"


def test_cli_messages(work, tmp_path, capsys):
    plain = tmp_path / "plain.txt"
    plain.write_text("hello world\n")
    rc, _, err = run(["train", "pcfg", plain, "-o", tmp_path / "p.fsm"], capsys)
    assert rc == 2 and f"{plain}:1:" in one_error(err) and "pass --format" in err

    tagged = tmp_path / "tagged.txt"
    tagged.write_text("a/X b/Y\n")
    rc, _, err = run(["train", "atm", tagged, "-o", tmp_path / "a.fsm"], capsys)
    assert rc == 2 and "--tag-map as-is" in one_error(err) and "tag_map='" not in err

    rc, _, err = run(["train", "latent-dep", work / "deps.conllu", "-o", tmp_path / "l.fsm",
                      "--stop-adjacency"], capsys)
    assert rc == 2 and one_error(err).endswith("--stop-adjacency needs --stop-events\n")

    tiny = tmp_path / "tiny.txt"
    tiny.write_text("x\ny\n")
    rc, _, err = run(["train", "eigenwords", tiny, "-o", tmp_path / "e.fsm", "--dim", "30"],
                     capsys)
    assert rc == 2 and "dimension 30" in one_error(err) and "dim=" not in err

    rc, _, err = run(["parse", "--scheduler", tmp_path / "missing.json", work / "m.fsm",
                      work / "sents.txt"], capsys)
    assert rc == 2 and "no such file" in one_error(err) and "missing.json" in err
    assert "port" not in err


def test_parse_an_eigenwords_model_says_what_to_do(work, tmp_path, capsys):
    eig = tmp_path / "eig.fsm"
    assert run(["train", "eigenwords", work / "corpus.txt", "-o", eig, "--dim", "3", "-q"],
               capsys)[0] == 0
    rc, _, err = run(["parse", eig, work / "sents.txt"], capsys)
    assert rc == 2 and f"--embeddings {eig}" in one_error(err) and "lm eval" not in err


def test_latent_dep_names_the_file_of_an_unparsed_sentence(work, tmp_path, capsys):
    model = tmp_path / "ld.fsm"
    sample = need(data_path("dep", "wsj-sample.dp")).read_text().split("\n\n")[:150]
    train = tmp_path / "train.dp"
    train.write_text("\n\n".join(sample) + "\n\n")
    rc, _, err = run(["train", "latent-dep", train, "-o", model, "-q"], capsys)
    assert rc == 0, err
    nohead = tmp_path / "nohead.conllu"
    nohead.write_text("1\tthe\tthe\tDET\tDT\t_\t_\t_\t_\t_\n"
                      "2\tdog\tdog\tNOUN\tNN\t_\t_\t_\t_\t_\n\n")
    rc, _, err = run(["parse", model, nohead, "-q"], capsys)
    assert rc == 2 and one_error(err).startswith(f"fastspectral: error: {nohead}:1: ")


def test_a_write_error_names_the_output(work, capsys):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    rc, _, err = run(["parse", work / "m.fsm", work / "sents.txt", "-o", "/dev/full", "-q"],
                     capsys)
    assert rc == 2 and "cannot write /dev/full" in one_error(err)
    assert "No space left on device" in err
