"""The command line refuses, or reads correctly, input of the wrong shape: bracketed trees
given as text, untokenised text, plain text for dependency models, mistyped options, bad
encodings, Malt-TAB for latent-dep scores, CoNLL-X columns 9-10 in CoNLL-U output."""
from __future__ import annotations

import argparse
import io
import subprocess
import sys

import pytest

from _toy import coordination_treebank, dep_treebank, dep_treebank_svo
from fastspectral import cli
from fastspectral.trees.conll import DepSentence, read_conllu, write_conllx, write_malttab
from fastspectral.trees.tokenize import tokenize, untokenized


def run(argv, capsys, stdin=None, monkeypatch=None):
    """Run the CLI in-process; return ``(exit status, stdout, stderr)``."""
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc, err):
    return rc == 2 and err.startswith("fastspectral: error: ") and err.count("\n") == 1 \
        and "Traceback" not in err and "usage:" not in err


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from fastspectral.grammar.pcfg import PCFG
    from fastspectral.latentdep.model import LatentDependencyModel
    from fastspectral.rerank.mst import MSTParser

    d = tmp_path_factory.mktemp("models")
    PCFG(jobs=1).fit(coordination_treebank(40)).save(d / "toy.pcfg")
    MSTParser(iterations=2, bits=16, jobs=1).fit(dep_treebank()).save(d / "toy.mst")
    LatentDependencyModel(n_states=2, dim=3, jobs=1).fit(dep_treebank_svo()).save(d / "toy.ldep")
    return d


# ------------------------------------------------------------------------------ the parser
def test_a_mistyped_option_names_the_nearest_one(capsys, tmp_path):
    rc, _, err = run(["train", "spectral", tmp_path / "t", "-o", tmp_path / "m", "--stats", "8"],
                     capsys)
    assert one_line_error(rc, err)
    assert err == "fastspectral: error: unknown option --stats; did you mean --states?\n"
    rc, _, err = run(["parse", "m", "i", "--jobz=3"], capsys)
    assert err == "fastspectral: error: unknown option --jobz; did you mean --jobs?\n"
    rc, _, err = run(["parse", "m", "i", "--zzqqxx"], capsys)
    assert one_line_error(rc, err) and "unknown option --zzqqxx" in err \
        and "fastspectral parse --help" in err


@pytest.mark.parametrize("argv", [["parse", "m", "i", "--jobs", "x"],
                                  ["parse", "m", "i", "--tagged", "maybe"],
                                  ["train", "pcfg", "t", "-o", "m", "--v", "0"],
                                  ["eval", "gold"], ["lexical"], ["sentences"]])
def test_a_bad_option_value_is_one_line_without_the_usage(capsys, argv):
    rc, out, err = run(argv, capsys)
    assert one_line_error(rc, err), err
    assert out == ""


def test_help_still_shows_the_usage(capsys):
    rc, out, _ = run(["parse", "--help"], capsys)
    assert rc == 0 and out.startswith("usage: fastspectral parse") and "--input" in out


@pytest.mark.parametrize("name", ["bogus", "", "rot13", "base64"])
@pytest.mark.parametrize("argv", [["parse", "m", "i"], ["eval", "g", "p"], ["sentences", "t"],
                                  ["train", "pcfg", "t", "-o", "m"], ["lexical", "tag", "m", "i"],
                                  ["lexical", "train", "t", "-o", "m"]])
def test_a_bad_encoding_names_the_option(capsys, argv, name):
    rc, _, err = run(argv + ["--encoding", name], capsys)
    assert one_line_error(rc, err) and "argument --encoding" in err, err


def _parsers(parser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_encoding_option_is_checked():
    from fastspectral import models
    from fastspectral._argtypes import text_encoding

    seen = 0
    for train_type in [None, "lm", *models.train_commands()]:
        for command in (None, "lexical"):
            for p in _parsers(cli.build_parser(train_type, command)):
                action = p._option_string_actions.get("--encoding")
                if action is not None:
                    assert action.type is text_encoding, p.prog
                    seen += 1
    assert seen > 10
    assert text_encoding("latin-1") == "latin-1"
    for bad in ("rot13", "base64", "", "bogus"):
        with pytest.raises(argparse.ArgumentTypeError):
            text_encoding(bad)


def test_the_api_advice_names_the_cli_flag():
    from fastspectral.cli import kit
    from fastspectral.errors import FormatError

    msg = kit.describe(FormatError("cannot detect the treebank format; pass format=...",
                                   "x.txt", 3))
    assert "pass --format" in msg and "format=" not in msg


# ------------------------------------------------------------------------------ tokenizer
# raw text and its tokens in the Penn Treebank (sentences of WSJ section 22)
PTB = [
    ('"A lot of investor confidence comes from the fact that they can speak to us," he says.',
     "`` A lot of investor confidence comes from the fact that they can speak to us , '' he "
     "says ."),
    ('He adds, "This isn\'t 1987 revisited."', "He adds , `` This is n't 1987 revisited . ''"),
    ("You know what the law of averages is, don't you?",
     "You know what the law of averages is , do n't you ?"),
    ('"When you\'re in the groove, you see every ball tremendously," he lectured.',
     "`` When you 're in the groove , you see every ball tremendously , '' he lectured ."),
    ("Revenue fell 1% to $1.39 billion from $1.41 billion.",
     "Revenue fell 1 % to $ 1.39 billion from $ 1.41 billion ."),
    ("The ads touted Fidelity's automated 800-number beneath the huge headline, "
     '"Fidelity Is Ready For Your Call."',
     "The ads touted Fidelity 's automated 800-number beneath the huge headline , `` Fidelity "
     "Is Ready For Your Call . ''"),
    ('"When it goes, you never know when you\'ll get it back," he said.',
     "`` When it goes , you never know when you 'll get it back , '' he said ."),
    ("The plan (announced Friday) cost AT&T $2,000 -- a lot.",
     "The plan -LRB- announced Friday -RRB- cost AT&T $ 2,000 -- a lot ."),
    ("It was sold by the U.S.", "It was sold by the U.S. ."),
    ("Mr. Smith can't go; we won't either...", "Mr. Smith ca n't go ; we wo n't either ..."),
    ("I cannot wait, and we're gonna stay!", "I can not wait , and we 're gon na stay !"),
]


@pytest.mark.parametrize("raw,tokens", PTB)
def test_tokenize_gives_the_penn_treebank_tokens(raw, tokens):
    assert tokenize(raw) == tokens.split()
    assert untokenized(tokens.split()) == []
    assert untokenized(raw.split())          # the raw text is recognised as untokenised


def test_untokenized_finds_glued_punctuation_and_clitics():
    assert untokenized("Hello, world!".split()) == ["Hello,", "world!"]
    assert untokenized("the dog barks.".split()) == ["barks."]
    assert untokenized(["don't", "John's", '"Yes', "(see", "it)"]) == \
        ["don't", "John's", '"Yes', "(see", "it)"]
    assert untokenized("1,000 U.S. n't 's ... -- `` '' .".split()) == []
    assert untokenized([]) == []


def test_tokenised_treebank_text_is_not_flagged(shared_data):
    from fastspectral.trees.ptb import read_ptb
    from fastspectral.trees.transforms import clean

    flagged = total = 0
    for tree in read_ptb(shared_data / "ptb" / "wsj22.trees"):
        words = clean(tree).leaves()
        total += len(words)
        flagged += len(untokenized(words))
    assert total > 10000 and flagged <= 5


# ------------------------------------------------------------------------------ trees as text
TREES = ["(TOP (S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)))",
         "(TOP (S (NP (DT a) (NN cat)) (VP (VBZ sees) (NP (DT the) (NN dog))) (. .)))"]
RAW_TREE = """( (S
    (NP-SBJ (DT the) (NN dog) )
    (VP (VBZ barks) (NP (-NONE- *T*-1) ))
    (. .) ))
"""


def test_a_tree_line_is_refused_naming_input_trees(capsys, monkeypatch, models, tmp_path):
    rc, out, err = run(["parse", models / "toy.pcfg", "-q"], capsys, TREES[0] + "\n",
                       monkeypatch)
    assert one_line_error(rc, err) and err.startswith("fastspectral: error: <stdin>:1:")
    assert "--input trees" in err and out == ""
    f = tmp_path / "raw.mrg"
    f.write_text("\n" + RAW_TREE)
    rc, _, err = run(["parse", models / "toy.pcfg", f], capsys)
    assert one_line_error(rc, err) and f"{f}:2:" in err and "--input trees" in err
    # text that merely starts with a bracket is text
    f.write_text("( the dog barks . )\n")
    rc, out, err = run(["parse", models / "toy.pcfg", f, "-q"], capsys)
    assert rc == 0 and out.count("\n") == 1


def test_input_trees_parses_the_words_of_a_treebank(capsys, monkeypatch, models, tmp_path):
    text = tmp_path / "s.txt"
    text.write_text("the dog barks .\na cat sees the dog .\nthe dog barks .\n")
    rc, expected, _ = run(["parse", models / "toy.pcfg", text, "-q"], capsys)
    assert rc == 0
    trees = tmp_path / "t.mrg"
    trees.write_text("\n".join(TREES) + "\n" + RAW_TREE)
    rc, out, err = run(["parse", models / "toy.pcfg", trees, "--input", "trees", "-q"], capsys)
    assert rc == 0 and out == expected, err
    rc, out, _ = run(["parse", models / "toy.pcfg", "--input", "trees", "-q"], capsys,
                     RAW_TREE, monkeypatch)
    assert rc == 0 and out == expected.splitlines(True)[2]
    # --tagged yes: the treebank's tags are the parser's
    rc, out, _ = run(["parse", models / "toy.pcfg", trees, "--input", "trees", "--tagged",
                      "yes", "-q"], capsys)
    from fastspectral.trees.tree import Tree

    assert rc == 0 and [t for _, t in Tree.fromstring(out.splitlines()[1]).pos()] == \
        ["DT", "NN", "VBZ", "DT", "NN", "."]
    rc, _, err = run(["parse", models / "toy.mst", trees, "--input", "trees"], capsys)
    assert one_line_error(rc, err) and "--input trees" in err


def test_sentences_writes_the_text_of_a_treebank(capsys, tmp_path, models):
    trees = tmp_path / "t.mrg"
    trees.write_text("\n".join(TREES) + "\n" + RAW_TREE + "( (S (NP (-NONE- *)) ))\n")
    rc, out, _ = run(["sentences", trees, "-q"], capsys)
    assert rc == 0 and out == ("the dog barks .\na cat sees the dog .\nthe dog barks .\n\n")
    rc, out, _ = run(["sentences", trees, "--tags", "-q"], capsys)
    assert out.splitlines()[0] == "the/DT dog/NN barks/VBZ ./."
    dep = tmp_path / "d.dp"
    write_malttab(dep_treebank()[:2], dep)
    out_f = tmp_path / "d.txt"
    rc, _, _ = run(["sentences", dep, "--tags", "-o", out_f, "-q"], capsys)
    assert rc == 0 and out_f.read_text() == "the/DT dog/NN barks/VBZ\na/DT cat/NN sleeps/VBZ\n"
    # what it writes is what parse reads
    rc, parsed, _ = run(["parse", models / "toy.mst", out_f, "-q"], capsys)
    assert rc == 0 and [s.words for s in read_conllu(io.StringIO(parsed).readlines())] == \
        [["the", "dog", "barks"], ["a", "cat", "sleeps"]]
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tNew York\t_\tPROPN\tNNP\t_\t0\troot\t_\t_\n\n")
    rc, _, err = run(["sentences", bad], capsys)
    assert one_line_error(rc, err) and f"{bad}:1:" in err and "white space" in err
    bad.write_text("1\tdogs\t_\t_\t_\t_\t0\troot\t_\t_\n\n")
    rc, out, _ = run(["sentences", bad, "-q"], capsys)
    assert rc == 0 and out == "dogs\n"
    rc, _, err = run(["sentences", bad, "--tags"], capsys)
    assert one_line_error(rc, err) and "no tags" in err


# ------------------------------------------------------------------------------ untokenised
def test_untokenised_text_warns_once_and_tokenize_splits_it(capsys, models, tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text('the dog barks.\n"a cat sees the dog."\n')
    rc, out, err = run(["parse", models / "toy.pcfg", raw], capsys)
    assert rc == 0 and out.count("\n") == 2
    warnings = [line for line in err.splitlines() if "untokenised" in line]
    assert len(warnings) == 1 and "3 token(s) on 2 line(s)" in warnings[0] \
        and f"{raw}:1" in warnings[0] and "--tokenize" in warnings[0]
    rc, out, err = run(["parse", models / "toy.pcfg", raw, "--tokenize"], capsys)
    assert rc == 0 and "untokenised" not in err
    ref = tmp_path / "ref.txt"
    ref.write_text("the dog barks .\n`` a cat sees the dog . ''\n")
    rc2, expected, err2 = run(["parse", models / "toy.pcfg", ref], capsys)
    assert out == expected and "untokenised" not in err2
    rc, _, err = run(["parse", models / "toy.pcfg", raw, "--tokenize", "--tagged", "yes"],
                     capsys)
    assert one_line_error(rc, err) and "--tokenize" in err


# ------------------------------------------------------------------------------ dependency text
def test_dependency_models_read_word_tag_text(capsys, monkeypatch, models, tmp_path):
    text = tmp_path / "s.txt"
    text.write_text("the/DT dog/NN barks/VBZ\n\na/DT cat/NN sleeps/VBZ\n")
    rc, out, err = run(["parse", models / "toy.mst", text, "-q"], capsys)
    assert rc == 0, err
    sents = list(read_conllu(io.StringIO(out).readlines()))
    assert [s.words for s in sents] == [["the", "dog", "barks"], ["a", "cat", "sleeps"]]
    assert [s.xpos for s in sents][0] == ["DT", "NN", "VBZ"] and all(
        s.is_tree(single_root=False) for s in sents)
    rc, out2, _ = run(["parse", models / "toy.mst", "-q"], capsys, text.read_text(),
                      monkeypatch)
    assert out2 == out
    rc, out, _ = run(["parse", models / "toy.mst", text, "--output-format", "malttab", "-q"],
                     capsys)
    assert out.splitlines()[0].split("\t")[:2] == ["the", "DT"]
    plain = tmp_path / "p.txt"
    plain.write_text("the dog barks\n")
    rc, _, err = run(["parse", models / "toy.mst", plain], capsys)
    assert one_line_error(rc, err) and f"{plain}:1:" in err and "word/TAG" in err
    assert "format=" not in err
    rc, _, err = run(["parse", models / "toy.pcfg", text, "--output-format", "conllu"], capsys)
    assert one_line_error(rc, err) and "--output-format" in err


def test_conllx_columns_9_10_are_not_written_as_conllu_deps(capsys, models, tmp_path):
    s = DepSentence(words=["the", "dog", "barks"], xpos=["DT", "NN", "VBZ"], heads=[2, 3, 0],
                    deps=["2", "3", "0"], misc=["det", "nsubj", "ROOT"])
    f = tmp_path / "in.conll"
    write_conllx([s], f)
    rc, out, _ = run(["parse", models / "toy.mst", f, "--output-format", "conllu", "-q"],
                     capsys)
    got = list(read_conllu(io.StringIO(out).readlines()))[0]
    assert rc == 0 and got.deps == ["_"] * 3 and got.misc == ["_"] * 3
    rc, out, _ = run(["parse", models / "toy.mst", f, "-q"], capsys)      # CoNLL-X kept
    assert out.splitlines()[0].split("\t")[8:] == ["2", "det"]


# ------------------------------------------------------------------------------ latent-dep
def test_latent_dep_scores_need_a_format_with_comments(capsys, models, tmp_path):
    f = tmp_path / "t.dp"
    write_malttab(dep_treebank_svo()[:3], f)
    rc, _, err = run(["parse", models / "toy.ldep", f], capsys)
    assert one_line_error(rc, err) and "--output-format conllx" in err
    rc, out, err = run(["parse", models / "toy.ldep", f, "--output-format", "conllx", "-q"],
                       capsys)
    assert rc == 0 and out.count("# latent_dep_log_prob = ") == 3, err
    rc, _, err = run(["parse", models / "toy.ldep", f, "--output-format", "malttab"], capsys)
    assert one_line_error(rc, err)
    rc, _, err = run(["parse", models / "toy.ldep", f, f, "-o", tmp_path / "out"], capsys)
    assert one_line_error(rc, err) and "Malt-TAB" in err
    text = tmp_path / "s.txt"
    text.write_text("the/DT dog/NN barks/VBZ\n")
    rc, _, err = run(["parse", models / "toy.ldep", text], capsys)
    assert one_line_error(rc, err) and "heads" in err


def test_latent_dep_tags_of_an_empty_column_are_refused(capsys, tmp_path):
    f = tmp_path / "t.dp"
    write_malttab(dep_treebank_svo(), f)
    rc, _, err = run(["train", "latent-dep", f, "-o", tmp_path / "m", "--tag-column", "upos",
                      "--states", "2", "--dim", "3"], capsys)
    assert one_line_error(rc, err) and err.startswith(f"fastspectral: error: {f}")
    assert "--tag-column upos" in err and "--tag-column xpos" in err
    assert not (tmp_path / "m").exists()


# ------------------------------------------------------------------------------ lexical tag
def test_lexical_tag_of_conllx_writes_no_phead_into_deps(capsys, tmp_path):
    from fastspectral.lexical.model import LexicalDisambiguator

    train = [DepSentence(words=w.split(), lemmas=w.split(), upos=u.split(), xpos=x.split(),
                         heads=[0] + [1] * (len(w.split()) - 1))
             for w, u, x in (("the dog barks", "DET NOUN VERB", "DT NN VBZ"),
                             ("a cat sleeps", "DET NOUN VERB", "DT NN VBZ"))] * 10
    model = tmp_path / "m.lex"
    LexicalDisambiguator(variant="unigram").fit(train).save(model)
    f = tmp_path / "in.conll"
    s = DepSentence(words=["the", "cat", "barks"], xpos=["DT", "NN", "VBZ"], heads=[2, 3, 0],
                    rels=["det", "nsubj", "ROOT"], deps=["2", "3", "0"],
                    misc=["det", "nsubj", "ROOT"])
    write_conllx([s], f)
    rc, out, err = run(["lexical", "tag", model, f, "-q"], capsys)
    assert rc == 0, err
    got = list(read_conllu(io.StringIO(out).readlines()))[0]
    assert got.deps == ["_"] * 3 and got.heads == [2, 3, 0] and got.rels == s.rels
    assert not any(m in ("det", "nsubj", "ROOT") or "det|" in m for m in got.misc)
    assert got.upos == ["DET", "NOUN", "VERB"]
    # a tagger parses plain words
    plain = tmp_path / "p.txt"
    plain.write_text("the cat barks\n")
    rc, out, err = run(["parse", model, plain, "-q"], capsys)
    got = list(read_conllu(io.StringIO(out).readlines()))[0]
    assert rc == 0 and got.words == ["the", "cat", "barks"] and got.upos == \
        ["DET", "NOUN", "VERB"], err


def test_errors_through_python_m(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fastspectral", "parse", "m", "i",
                           "--encoding", "rot13"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--encoding" in proc.stderr


def test_several_inputs_are_checked_like_one(capsys, models, tmp_path):
    trees = tmp_path / "a.mrg"
    trees.write_text(TREES[0] + "\n")
    text = tmp_path / "b.txt"
    text.write_text("the dog barks .\n")
    out = tmp_path / "out"
    out.mkdir()
    rc, _, err = run(["parse", models / "toy.pcfg", text, trees, "-o", out], capsys)
    assert one_line_error(rc, err) and str(trees) in err and "--input trees" in err
    tagged = tmp_path / "c.txt"
    tagged.write_text("the/DT dog/NN barks/VBZ\n")
    rc, _, err = run(["parse", models / "toy.mst", tagged, tagged, "-o", out], capsys)
    assert one_line_error(rc, err) and str(tagged) in err and "one file at a time" in err
    for flag in (["--tokenize"], ["--input", "trees"], ["--output-format", "conllu"]):
        rc, _, err = run(["parse", models / "toy.pcfg", text, text, "-o", out] + flag, capsys)
        assert one_line_error(rc, err) and flag[0] in err
    assert list(out.iterdir()) == []
