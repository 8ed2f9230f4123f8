"""Tests of the command line: fastspectral.cli (commands, kit, per-kind options), fastspectral._progress."""
import importlib
import io
import os
import subprocess
import sys
import textwrap

import pytest

from fastspectral import cli, models
from fastspectral.cli import kit
from fastspectral._progress import Progress, format_duration
from fastspectral.errors import FormatError
from fastspectral.eval.evalb import evaluate_files

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:
    importlib.import_module("fastspectral.grammar.pcfg")
    HAVE_PCFG = True
except ImportError:  # pragma: no cover - only while the PCFG is being written
    HAVE_PCFG = False
needs_pcfg = pytest.mark.skipif(not HAVE_PCFG, reason="fastspectral.grammar.pcfg not importable")

FAKE_PLUGIN = '''
"""Fake model kinds used by tests/test_cli.py (options derived from their signatures)."""
import dataclasses

from fastspectral.base import Parser
from fastspectral.trees import Tree


class FakeModel(Parser):
    kind = "cli-fake"
    input_kind = "sentences"
    calls = []

    def __init__(self, alpha=0.5, jobs=None):
        self.alpha = alpha
        self.jobs = jobs

    def fit(self, data):
        self.n_items_ = len(data)
        self.kinds_ = sorted({type(x).__name__ for x in data})
        return self

    def _model_file(self):
        return {"params": self.get_params(), "n_items": self.n_items_, "kinds": self.kinds_}, {}

    @classmethod
    def _from_model_file(cls, meta, arrays):
        m = cls(**meta["params"])
        m.n_items_, m.kinds_ = meta["n_items"], meta["kinds"]
        return m

    def parse(self, items, *, tags=None, jobs=None, progress=None):
        FakeModel.calls.append({"sentences": items, "tags": tags, "jobs": jobs})
        out = []
        for i, words in enumerate(items):
            ts = tags[i] if tags is not None and tags[i] is not None else ["X"] * len(words)
            out.append(Tree("TOP", [Tree("S", [Tree(t, [w]) for w, t in zip(words, ts)])]))
            if progress is not None:
                progress(i + 1, len(items))
        return out


class FakeDepModel(Parser):
    kind = "cli-fake-dep"
    input_kind = "dependency"

    def fit(self, data):
        self.n_items_ = len(data)
        return self

    def _model_file(self):
        return {"n_items": self.n_items_}, {}

    @classmethod
    def _from_model_file(cls, meta, arrays):
        m = cls()
        m.n_items_ = meta["n_items"]
        return m

    def parse(self, items, *, tags=None, jobs=None, progress=None):
        return [dataclasses.replace(s, heads=list(range(len(s.words)))) for s in items]
'''

CONLLU = textwrap.dedent("""\
    # sent_id = 1
    # text = Dogs bark loudly.
    1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_
    2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_
    3\tloudly\tloudly\tADV\tRB\t_\t2\tadvmod\t_\tSpaceAfter=No
    4\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_

    # sent_id = 2
    1\tCats\tcat\tNOUN\tNNS\t_\t2\tnsubj\t_\t_
    2\tsleep\tsleep\tVERB\tVBP\t_\t0\troot\t_\t_

    """)

MALTTAB = "Dogs\tNNS\t2\nbark\tVBP\t0\n.\t.\t2\n\nCats\tNNS\t2\nsleep\tVBP\t0\n\n"


@pytest.fixture(scope="module")
def fake_plugin(tmp_path_factory):
    """Register the fake plug-in as model type ``fake`` (module importable from a temp dir)."""
    d = tmp_path_factory.mktemp("plugin")
    (d / "fake_cli_plugin.py").write_text(FAKE_PLUGIN)
    sys.path.insert(0, str(d))
    models.register("cli-fake", "fake_cli_plugin:FakeModel", "sentences", train={"fake": {}})
    models.register("cli-fake-dep", "fake_cli_plugin:FakeDepModel", "dependency",
                    train={"fake-dep": {}})
    try:
        yield importlib.import_module("fake_cli_plugin")
    finally:
        del models.REGISTRY["cli-fake"], models.REGISTRY["cli-fake-dep"]
        sys.path.remove(str(d))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory, synthetic_grammar):
    """A small synthetic treebank on disk: train.trees, gold.trees, sents.txt, tagged.txt."""
    d = tmp_path_factory.mktemp("synthetic")
    g = synthetic_grammar
    trees = g.sample(460, seed=1)
    train, test = trees[:400], trees[400:]
    (d / "train.trees").write_text("".join(str(t) + "\n" for t in train))
    (d / "gold.trees").write_text("".join(str(t) + "\n" for t in test))
    (d / "sents.txt").write_text("".join(" ".join(t.leaves()) + "\n" for t in test))
    (d / "tagged.txt").write_text(
        "".join(" ".join(f"{w}/{p}" for w, p in t.pos()) + "\n" for t in test))
    return d


def run(argv, capsys):
    """Run the CLI in-process; return ``(exit status, stdout, stderr)``."""
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exc:  # argparse: --help, usage errors
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


# ------------------------------------------------------------------------------------ parser
@pytest.mark.parametrize("command", ["train", "parse", "eval", "demo", "bench"])
def test_every_command_has_help_with_examples(command, capsys):
    rc, out, _ = run([command, "--help"], capsys)
    assert rc == 0
    assert out.startswith(f"usage: fastspectral {command}")
    assert "examples:" in out and f"fastspectral {command}" in out.split("examples:")[1]


def test_main_help_and_version(capsys):
    rc, out, _ = run(["--help"], capsys)
    assert rc == 0
    for command in ("train", "parse", "eval", "lm", "demo", "bench"):
        assert command in out
    rc, out, _ = run(["--version"], capsys)
    assert rc == 0 and out.strip().startswith("fastspectral ")
    rc, _, err = run([], capsys)
    assert rc == 2 and "usage:" in err
    rc, _, err = run(["frobnicate"], capsys)
    assert rc == 2 and "invalid choice" in err


def test_train_lists_every_registered_model_type(capsys):
    from fastspectral.cli.train import load_hook

    rc, out, _ = run(["train", "--help"], capsys)
    assert rc == 0
    # compare without whitespace: argparse may wrap a description at a hyphen
    section = "".join(out.split("model types:")[1].split("examples:")[0].split())
    for name, (entry, _) in models.train_commands().items():
        hook, reason = load_hook(entry)
        desc = getattr(hook, "DESCRIPTIONS", {}).get(name) or getattr(hook, "DESCRIPTION", "")
        assert "".join(f"{name} {desc}".split()) in section


def test_every_registered_kind_trains_from_the_cli_help(capsys):
    """Every train command builds its options from its class (defaults read from the
    signature: no copied default can drift)."""
    for name, (entry, _) in models.train_commands().items():
        rc, out, err = run(["train", name, "--help"], capsys)
        assert rc == 0, (name, err)
        assert "(default:" in out, name


def test_unavailable_model_type_reports_it(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(models.REGISTRY, "ghost",
                        models.ModelKind("ghost", "fastspectral.no_such_module_xyz:Ghost",
                                         "sentences", {"ghost": {}}, "fastspectral.no_such_xyz"))
    rc, out, _ = run(["train", "--help"], capsys)
    assert "ghost" in out and "not available in this build" in out
    rc, _, err = run(["train", "ghost", tmp_path / "x", "-o", tmp_path / "m"], capsys)
    assert rc == 2
    assert err.startswith("fastspectral: error: model type 'ghost' is not available in this build")
    rc, out, _ = run(["train", "ghost", "--help"], capsys)
    assert rc == 0 and "not available in this build" in out


def test_pcfg_options_defaults_come_from_the_class(capsys):
    import argparse

    from fastspectral.cli import pcfg as pcli
    from fastspectral.grammar.pcfg import PCFG

    p = argparse.ArgumentParser()
    pcli.add_arguments(p, PCFG)
    a = p.parse_args([])
    assert not {"v", "h", "tag_parent", "decode", "jobs"} & set(vars(a))   # the class decides
    assert kit.build_estimator(a, PCFG, {}).get_params() == PCFG().get_params()
    a = p.parse_args(["--v", "1", "--h", "inf", "--no-tag-parent", "--decode", "viterbi",
                      "--jobs", "3"])
    m = kit.build_estimator(a, PCFG, {})
    assert (m.v, m.h, m.tag_parent, m.decode, m.jobs) == (1, None, False, "viterbi", 3)
    assert p.parse_args(["--h", "0"]).h == 0
    for bad in (["--h", "-1"], ["--v", "0"], ["--decode", "best"], ["--jobs", "0"]):
        with pytest.raises(SystemExit):
            p.parse_args(bad)
    help_text = p.format_help()
    assert f"(default: {PCFG().v})" in help_text


def test_full_scale_defaults_of_spectral_and_pivot_em(capsys):
    """``train spectral`` and ``train pivot-em`` default to the settings chosen at full scale
    (kit.FULL_SCALE_DEFAULTS), say so in --help, and a given flag still wins."""
    import argparse

    from fastspectral.cli import latent, spectral
    from fastspectral.lpcfg import EMLPCFG, SpectralLPCFG

    def args(p, argv, command):
        return kit.full_scale_defaults(p.parse_args(argv), command)

    p = argparse.ArgumentParser()
    spectral.add_arguments(p, SpectralLPCFG)
    assert kit.build_estimator(args(p, [], "spectral"), SpectralLPCFG, {}).n_states == 16
    assert kit.build_estimator(args(p, ["--states", "8"], "spectral"), SpectralLPCFG,
                               {}).n_states == 8
    assert SpectralLPCFG().n_states == 8                  # the learner keeps its own default
    assert "(default: 16, chosen on WSJ section 22" in " ".join(p.format_help().split())
    p = argparse.ArgumentParser()
    latent.add_arguments(p, EMLPCFG)
    pem = {"init": "pivot"}
    m = latent.build(args(p, [], "pivot-em"), EMLPCFG, pem)
    assert (m.n_states, m.iterations, m.pruner_states, m.pruner_threshold) == (32, 6, 8, 1e-2)
    m = latent.build(args(p, ["--iterations", "2", "--states", "4"], "pivot-em"), EMLPCFG, pem)
    assert (m.n_states, m.iterations, m.pruner_states) == (4, 2, None)   # not below 4 states
    m = latent.build(args(p, ["--pruner-states", "none"], "pivot-em"), EMLPCFG, pem)
    assert (m.n_states, m.pruner_states) == (32, None)
    m = latent.build(args(p, ["--states", "12", "--pruner-states", "4"], "pivot-em"), EMLPCFG,
                     pem)
    assert (m.n_states, m.pruner_states, m.pruner_threshold) == (12, 4, 1e-2)
    m = latent.build(kit.full_scale_defaults(p.parse_args([]), "pivot-em", partitions=True),
                     EMLPCFG, pem)
    assert (m.n_states, m.pruner_states) == (32, None)      # Dask learning trains no pruner
    m = latent.build(args(p, [], "em"), EMLPCFG, {"init": "random"})
    assert (m.n_states, m.iterations) == (16, None)          # em keeps the learner's defaults
    shown = " ".join(p.format_help().split())
    assert "6 for pivot-em, chosen on WSJ section 22" in shown
    assert "32 for pivot-em, chosen on WSJ section 22" in shown


@pytest.mark.parametrize("name,old,new", [("spectral", "--smoothing", "--moment-smoothing"),
                                          ("pivot-em", "--smoothing", "--parent-smoothing"),
                                          ("shag", "--smoothing", "--backoff-weight"),
                                          ("shag", "--model", "--method")])
def test_renamed_flags_name_the_new_flag(capsys, tmp_path, name, old, new):
    rc, _, err = run(["train", name, tmp_path / "x", "-o", tmp_path / "m", old, "1"], capsys)
    assert rc == 2 and f"{old} was renamed {new}" in err


# ------------------------------------------------------------------------------------ errors
def test_missing_files_exit_2_naming_the_path(capsys, tmp_path):
    missing = tmp_path / "nowhere.trees"
    cases = [["train", "pcfg", missing, "-o", tmp_path / "m.model"],
             ["parse", missing, "-o", tmp_path / "out"],
             ["eval", missing, missing],
             ["bench", "--train", missing, "--test", missing]]
    for argv in cases:
        rc, out, err = run(argv, capsys)
        assert rc == 2, argv
        assert err.startswith("fastspectral: error:") and str(missing) in err, err
        assert "Traceback" not in err and err.count("\n") == 1


def test_format_errors_exit_2_with_file_and_line(capsys, tmp_path, fake_plugin):
    bad = tmp_path / "bad.trees"
    bad.write_text("(TOP (S (NP (DT the) (NN dog)) (VP (VBZ barks))))\n(TOP (S (NP x)\n")
    rc, _, err = run(["train", "fake", bad, "-o", tmp_path / "m.model"], capsys)
    assert rc == 2
    assert err.startswith(f"fastspectral: error: {bad}:2") and err.count("\n") == 1
    assert not (tmp_path / "m.model").exists()
    # --debug shows the real exception
    with pytest.raises(FormatError):
        cli.main(["train", "fake", str(bad), "-o", str(tmp_path / "m.model"), "--debug"])
    # output directory missing: detected before training
    good = tmp_path / "good.trees"
    good.write_text("(TOP (S (NP (DT the) (NN dog)) (VP (VBZ barks))))\n")
    rc, _, err = run(["train", "fake", good, "-o", tmp_path / "no" / "dir" / "m.model"], capsys)
    assert rc == 2 and "does not exist" in err
    # a file that is not a model
    rc, _, err = run(["parse", good, "-o", tmp_path / "out.trees"], capsys)
    assert rc == 2 and str(good) in err and "Traceback" not in err
    # mismatched evaluation files
    two = tmp_path / "two.trees"
    two.write_text(good.read_text() * 2)
    rc, _, err = run(["eval", good, two], capsys)
    assert rc == 2 and "fastspectral: error:" in err
    # an undetectable eval input
    brown = tmp_path / "tagged.pos"
    brown.write_text("the/at dog/nn\n")
    rc, _, err = run(["eval", brown, brown], capsys)
    assert rc == 2 and "cannot evaluate" in err
    # bench needs both --train and --test
    rc, _, err = run(["bench", "--train", good], capsys)
    assert rc == 2 and "--train and --test" in err


def test_errors_through_python_m(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fastspectral", "eval", str(tmp_path / "g"),
                           str(tmp_path / "p")], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == f"fastspectral: error: gold file not found: {tmp_path / 'g'}\n"
    proc = subprocess.run([sys.executable, "-m", "fastspectral", "--version"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("fastspectral ")


# ------------------------------------------------------------------------ plug-in protocol
def test_train_and_parse_through_the_plugin_protocol(capsys, tmp_path, fake_plugin, synthetic):
    model = tmp_path / "fake.model"
    rc, _, err = run(["train", "fake", synthetic / "train.trees", "-o", model, "--alpha", "0.25"],
                     capsys)  # --alpha: an option derived from FakeModel's signature
    assert rc == 0, err
    assert "trained fake on 400 items" in err
    from fastspectral.io import load
    m = load(model)
    assert isinstance(m, fake_plugin.FakeModel)
    assert (m.alpha, m.n_items_, m.kinds_) == (0.25, 400, ["Tree"])

    # plain sentences with an empty line in the middle; output aligned line for line
    inp = tmp_path / "in.txt"
    inp.write_text("the dog barks\n\nJohn/NNP sleeps/VBZ\n")
    fake_plugin.FakeModel.calls.clear()
    rc, out, err = run(["parse", model, inp, "--jobs", "3", "-q"], capsys)
    assert rc == 0 and err == ""
    assert out == ("(TOP (S (X the) (X dog) (X barks)))\n\n"
                   "(TOP (S (NNP John) (VBZ sleeps)))\n")
    call = fake_plugin.FakeModel.calls[-1]
    assert call["sentences"] == [["the", "dog", "barks"], ["John", "sleeps"]]
    assert call["tags"] == [None, ["NNP", "VBZ"]] and call["jobs"] == 3
    # untagged input: tags=None; --tagged no keeps slashes in words
    inp.write_text("a/DT b\n")
    rc, out, _ = run(["parse", model, inp, "-q"], capsys)
    assert out == "(TOP (S (X a/DT) (X b)))\n"
    assert fake_plugin.FakeModel.calls[-1]["tags"] is None
    rc, out, _ = run(["parse", model, inp, "-q", "--tagged", "yes"], capsys)
    assert rc == 2  # 'b' has no tag
    # output file and the progress bar when forced
    rc, out, err = run(["parse", model, synthetic / "sents.txt", "-o", tmp_path / "o.trees",
                        "--progress"], capsys)
    assert rc == 0 and out == ""
    assert "60/60" in err and "sent/s" in err and "parsed 60 sentences" in err
    lines = (tmp_path / "o.trees").read_text().splitlines()
    assert len(lines) == 60 and all(x.startswith("(TOP (S (X ") for x in lines)


def test_parse_reads_stdin(capsys, monkeypatch, tmp_path, fake_plugin, synthetic):
    model = tmp_path / "fake.model"
    assert cli.main(["train", "fake", str(synthetic / "train.trees"), "-o", str(model), "-q"]) == 0
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"he runs\n")))
    rc, out, _ = run(["parse", model, "-", "-q"], capsys)
    assert rc == 0 and out == "(TOP (S (X he) (X runs)))\n"


@pytest.mark.parametrize("fmt,text", [("conllu", CONLLU), ("malttab", MALTTAB)])
def test_parse_dependency_models_keep_the_input_format(capsys, tmp_path, fake_plugin, fmt, text):
    src = tmp_path / f"train.{fmt}"
    src.write_text(text)
    model = tmp_path / "dep.model"
    rc, _, err = run(["train", "fake-dep", src, "-o", model, "-q"], capsys)
    assert rc == 0, err
    out_path = tmp_path / f"out.{fmt}"
    rc, _, err = run(["parse", model, src, "-o", out_path, "-q"], capsys)
    assert rc == 0, err
    from fastspectral.trees.readers import detect_format, read_treebank
    assert detect_format(out_path) == fmt
    sents = list(read_treebank(out_path))
    assert [s.heads for s in sents] == [list(range(len(s.words))) for s in sents]
    assert [s.words for s in sents] == [s.words for s in read_treebank(src)]
    # the gold file scored against the chain "parse"
    rc, out, _ = run(["eval", src, out_path], capsys)
    assert rc == 0 and "UAS" in out


# ------------------------------------------------------------------------------------ eval
def test_eval_trees_prints_the_evalb_report(capsys, synthetic, tmp_path):
    gold = synthetic / "gold.trees"
    rc, out, _ = run(["eval", gold, gold], capsys)
    assert rc == 0
    assert out == evaluate_files(gold, gold).report()
    assert "Bracketing FMeasure       = 100.00" in out
    # damaged prediction: flatten every tree below its root
    from fastspectral.trees import Tree
    flat = []
    for line in gold.read_text().splitlines():
        t = Tree.fromstring(line)
        flat.append(str(Tree("TOP", [Tree("S", [Tree(p, [w]) for w, p in t.pos()])])))
    pred = tmp_path / "flat.trees"
    pred.write_text("\n".join(flat) + "\n")
    rc, out, _ = run(["eval", gold, pred], capsys)
    assert rc == 0 and out == evaluate_files(gold, pred).report()
    assert "Bracketing FMeasure       = 100.00" not in out


def test_eval_matches_the_reference_evalb_output(capsys):
    from conftest import EVALB, need

    ref = need(EVALB / "gold.trees").parent
    rc, out, _ = run(["eval", f"{ref}/gold.trees", f"{ref}/pred-parser.trees"], capsys)
    assert rc == 0
    with open(f"{ref}/pred-parser.evalb") as fh:
        assert out == fh.read()


# ------------------------------------------------------------------------------------ progress
class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar():
    t = [0.0]
    s = io.StringIO()
    p = Progress("parsing", stream=s, clock=lambda: t[0])
    p(5, 10)
    p.close()
    assert s.getvalue() == ""  # not a TTY: silent
    s = FakeTTY()
    p = Progress("parsing", stream=s, clock=lambda: t[0], min_interval=0.5)
    t[0] = 2.0
    p(5, 10)
    assert "parsing [" in s.getvalue() and "5/10" in s.getvalue() and "50.0%" in s.getvalue()
    assert "2.5 sent/s" in s.getvalue() and "ETA 0:02" in s.getvalue()
    t[0] = 2.1
    p(6, 10)  # throttled
    assert "6/10" not in s.getvalue()
    t[0] = 4.0
    p(10, 10)  # final state always drawn
    assert "10/10 100.0%" in s.getvalue() and "elapsed 0:04" in s.getvalue()
    p.close()
    assert s.getvalue().endswith("\n")
    s = FakeTTY()
    p = Progress("x", stream=s, enabled=False)
    p(1, 2)
    assert s.getvalue() == ""
    s = io.StringIO()
    p = Progress("x", stream=s, force=True, clock=lambda: t[0])
    p(3, None)
    assert "3 " in s.getvalue() and "ETA" not in s.getvalue()
    assert format_duration(75.3) == "1:15" and format_duration(3725) == "1:02:05"
    assert format_duration(float("inf")) == "?" and format_duration(-1) == "?"


# ------------------------------------------------------------------------------------ end to end
@needs_pcfg
def test_end_to_end_train_parse_eval(capsys, tmp_path, synthetic):
    model = tmp_path / "pcfg.model"
    rc, _, err = run(["train", "pcfg", synthetic / "train.trees", "-o", model, "--v", "2", "--h",
                      "1", "--jobs", "2"], capsys)
    assert rc == 0, err
    assert model.exists() and "trained pcfg on 400 items" in err
    from fastspectral.grammar.pcfg import PCFG
    from fastspectral.io import load
    m = load(model)
    assert isinstance(m, PCFG) and (m.v, m.h, m.jobs) == (2, 1, 2)

    pred = tmp_path / "pred.trees"
    rc, out, err = run(["parse", model, synthetic / "sents.txt", "-o", pred, "--jobs", "2"],
                       capsys)
    assert rc == 0, err
    lines = pred.read_text().splitlines()
    assert len(lines) == 60 and all(x.startswith("(TOP ") for x in lines)
    rc, out, _ = run(["eval", synthetic / "gold.trees", pred], capsys)
    assert rc == 0
    result = evaluate_files(synthetic / "gold.trees", pred)
    assert out == result.report()
    assert result.fmeasure > 80  # the synthetic grammar is easy for a treebank PCFG

    # gold tags given as word/TAG: tagging accuracy 100 %
    pred2 = tmp_path / "pred2.trees"
    rc, _, err = run(["parse", model, synthetic / "tagged.txt", "-o", pred2, "-q"], capsys)
    assert rc == 0, err
    assert evaluate_files(synthetic / "gold.trees", pred2).tagging_accuracy == 100.0

    # a dependency treebank is not training data for a PCFG
    dep = tmp_path / "train.dp"
    dep.write_text(MALTTAB)
    rc, _, err = run(["train", "pcfg", dep, "-o", tmp_path / "x.model"], capsys)
    assert rc == 2 and "bracketed trees" in err and str(dep) in err


@needs_pcfg
def test_demo_runs_and_reports_f1(capsys):
    rc, out, err = run(["demo", "--n-train", "300", "--n-test", "40", "--jobs", "1", "-q",
                        "--models", "pcfg"], capsys)
    assert rc == 0, err
    assert "300 trees" in out and "40 sentences" in out
    rows = [line for line in out.splitlines() if line.startswith("pcfg")]
    assert len(rows) == 2
    for row in rows:
        train_s, parse_s, rate, f1 = map(float, row.split()[-4:])
        assert train_s > 0 and parse_s > 0 and rate > 0 and 50 < f1 <= 100
    from fastspectral.cli.demo import demo_models
    assert any("spectral" in label for label, _, _ in demo_models())
    rc, out, _ = run(["demo", "--n-train", "200", "--n-test", "20", "--models", "v=1", "-q"],
                     capsys)
    assert rc == 0 and "pcfg v=1 h=0" in out and "pcfg v=2" not in out


@needs_pcfg
def test_demo_models_come_from_the_registry(capsys, monkeypatch):
    monkeypatch.setitem(models.REGISTRY, "imaginary",
                        models.ModelKind("imaginary", "fastspectral.no_such_module_xyz:Imaginary",
                                         "sentences", demo=(("imaginary", {}),)))
    rc, out, _ = run(["demo", "--n-train", "100", "--n-test", "10", "--models", "imag", "-q"],
                     capsys)
    assert rc == 0 and "imaginary" in out and "not available in this build" in out


@needs_pcfg
def test_bench_on_files_and_synthetic(capsys, synthetic):
    rc, out, err = run(["bench", "--train", synthetic / "train.trees", "--test",
                        synthetic / "gold.trees", "--jobs", "1", "2", "--v", "1", "--h", "0",
                        "--limit", "30", "-q"], capsys)
    assert rc == 0, err
    rows = [line.split() for line in out.splitlines()[2:]]
    assert [r[0] for r in rows] == ["1", "2"]
    assert rows[0][-1] == rows[1][-1]  # same model, same parses, whatever the thread count
    assert "30 test sentences" in out
    rc, out, _ = run(["bench", "--n-train", "150", "--n-test", "15", "--jobs", "1", "-q"], capsys)
    assert rc == 0 and "synthetic latent PCFG" in out


def test_the_command_line_starts_without_the_learners():
    """Listing the commands (and running parse, eval...) imports no learner, Numba or SciPy
    until a command needs them: `fastspectral --help` stays fast."""
    code = ("import sys, fastspectral.cli as c; c.build_parser(); c.build_parser(None, 'parse'); "
            "print(sorted(m for m in ('numba', 'scipy', 'fastspectral.lpcfg', "
            "'fastspectral.lexical.model', 'fastspectral.lm.saul_pereira') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_mst_parser_starts_without_the_shag_learners():
    """The re-ranker's MST parser reads fastspectral.dependency.data only: the package imports
    its learners (and SciPy's linear algebra) on first use, and still offers every name."""
    code = ("import sys, fastspectral.rerank.model, fastspectral.dependency as d; "
            "print(sorted(m for m in ('scipy.linalg', 'fastspectral.dependency.spectral', "
            "'fastspectral.dependency.model', 'fastspectral.dependency.backoff') "
            "if m in sys.modules)); "
            "print(d.SHAGParser.__name__, d.eisner.__name__, d.fit_em.__name__, "
            "'BackoffSHAG' in dir(d))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["[]", "SHAGParser eisner fit_em True"]
