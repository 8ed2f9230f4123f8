"""Unlabelled bracketing F1 (Klein & Manning's convention) and the universal tag table."""
from __future__ import annotations

import pytest

from fastspectral.eval.unlabelled import (evaluate_by_length, evaluate_unlabelled,
                                          unlabelled_brackets)
from fastspectral.trees.tree import Tree
from fastspectral.trees.universal_tags import PTB_TO_UNIVERSAL, UNIVERSAL_TAGS, to_universal

G = Tree.fromstring("(TOP (S (NP (DT The) (JJ big) (NN dog)) (, ,) (VP (VBD saw) "
                    "(NP (DT a) (NN cat))) (. .)))")


def test_brackets_drop_punctuation_single_words_and_the_sentence():
    n, spans = unlabelled_brackets(G)
    assert n == 6
    assert spans == {(0, 3), (3, 6), (4, 6)}


def test_scores_by_hand():
    pred = Tree.fromstring("(X (X (DT The) (X (JJ big) (NN dog))) (, ,) (X (VBD saw) (X (DT a) "
                           "(NN cat))) (. .))")
    s = evaluate_unlabelled([G], [pred])
    # pred brackets: (0,3) (1,3) (3,6) (4,6); gold: (0,3) (3,6) (4,6)
    assert (s.matched, s.gold, s.predicted) == (3, 3, 4)
    assert s.recall == 100.0 and s.precision == 75.0
    assert s.f1 == pytest.approx(2 * 75 / 175 * 100)
    assert evaluate_unlabelled([G], [pred], max_length=5).sentences == 0
    rows = evaluate_by_length([G], [pred], (5, 10, None))
    assert [r.sentences for r in rows] == [0, 1, 1]


def test_macro_average_is_the_mean_of_sentence_f1():
    pred = Tree.fromstring("(X (X (DT The) (X (JJ big) (NN dog))) (, ,) (X (VBD saw) (X (DT a) "
                           "(NN cat))) (. .))")
    short = Tree.fromstring("(TOP (S (NP (NNS dogs)) (VP (VBP bark))))")     # nothing to score
    other = Tree.fromstring("(TOP (S (NP (DT a) (NN b)) (VP (VB c))))")
    flat = Tree.fromstring("(X (DT a) (X (NN b) (VB c)))")                   # 0 of 1
    s = evaluate_unlabelled([G, short, other], [pred, short, flat])
    assert s.sentences == 3 and s.f1_sentences == 2
    assert s.macro_f1 == pytest.approx(100 * (6 / 7 + 0.0) / 2)
    assert s.f1 == pytest.approx(100 * 2 * 3 / (4 + 5))          # micro: 3 of 4 gold, 5 pred
    rows = evaluate_by_length([G, short, other], [pred, short, flat], (10,))
    assert rows[0].macro_f1 == pytest.approx(s.macro_f1)


def test_unary_chain_counts_once_and_traces_removed():
    gold = Tree.fromstring("( (S (NP-SBJ (-NONE- *)) (NP (NP (DT a) (NN b))) (VP (VB c) (NN d))))")
    pred = Tree.fromstring("(X (X (DT a) (NN b)) (X (VB c) (NN d)))")
    s = evaluate_unlabelled([gold], [pred])
    assert (s.matched, s.gold, s.predicted) == (2, 2, 2)


def test_mismatched_sentences_raise():
    with pytest.raises(ValueError, match="words"):
        evaluate_unlabelled([G], [Tree.fromstring("(X (A a) (B b))")])
    with pytest.raises(ValueError, match="gold trees"):
        evaluate_unlabelled([G], [])


def test_universal_table():
    assert set(PTB_TO_UNIVERSAL.values()) <= set(UNIVERSAL_TAGS)
    core = ["CC", "CD", "DT", "EX", "FW", "IN", "JJ", "JJR", "JJS", "LS", "MD", "NN", "NNS",
            "NNP", "NNPS", "PDT", "POS", "PRP", "PRP$", "RB", "RBR", "RBS", "RP", "SYM", "TO",
            "UH", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "WDT", "WP", "WP$", "WRB", "#", "$",
            ".", ",", ":", "``", "''", "-LRB-", "-RRB-"]
    assert to_universal(core) == [
        "CONJ", "NUM", "DET", "DET", "X", "ADP", "ADJ", "ADJ", "ADJ", "X", "VERB", "NOUN",
        "NOUN", "NOUN", "NOUN", "DET", "PRT", "PRON", "PRON", "ADV", "ADV", "ADV", "PRT", "X",
        "PRT", "X", "VERB", "VERB", "VERB", "VERB", "VERB", "VERB", "DET", "PRON", "PRON", "ADV",
        ".", ".", ".", ".", ".", ".", ".", ".", "."]
    assert to_universal(["NOUN"]) == ["NOUN"]
    with pytest.raises(ValueError, match="nn-tl"):
        to_universal(["nn-tl"])
    assert to_universal(["nn-tl"], strict=False) == ["X"]


def test_cli_refuses_max_length_without_unlabelled(tmp_path):
    import subprocess
    import sys

    f = tmp_path / "g.trees"
    f.write_text(str(G) + "\n")
    r = subprocess.run([sys.executable, "-m", "fastspectral", "eval", str(f), str(f),
                        "--max-length", "10"], capture_output=True, text=True)
    assert r.returncode == 2 and "--unlabelled" in r.stderr
    r = subprocess.run([sys.executable, "-m", "fastspectral", "eval", str(f), str(f),
                        "--unlabelled"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("Bracketing FMeasure = 100.00")


def test_brown_tag_table_and_reader(tmp_path):
    from fastspectral.errors import FormatError
    from fastspectral.unsupervised.brown_tags import brown_to_universal, read_brown_tagged

    assert brown_to_universal(["at", "np-tl", "bedz*", "ppss+md", "fw-in", "cd$", "pp$", "``",
                               "rp", "jj-hl", "wdt"]) == \
        ["DET", "NOUN", "VERB", "PRON", "X", "NUM", "PRON", ".", "PRT", "ADJ", "DET"]
    with pytest.raises(ValueError, match="unknown Brown tag"):
        brown_to_universal(["zz"])
    f = tmp_path / "b.txt"
    f.write_text("The/at dog/nn ran/vbd ./.\n\nA/at n/a/nn\n")
    assert read_brown_tagged(f) == [(["The", "dog", "ran", "."], ["DET", "NOUN", "VERB", "."]),
                                    (["A", "n/a"], ["DET", "NOUN"])]
    f.write_text("The/at dog/nn\nbad/qq\n")
    with pytest.raises(FormatError, match=r"b.txt:2: unknown Brown tag 'qq'"):
        read_brown_tagged(f)
    f.write_text("notag\n")
    with pytest.raises(FormatError, match=r"b.txt:1: token 'notag'"):
        read_brown_tagged(f)
