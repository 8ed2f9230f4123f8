"""Unlabelled bracketing F1 (Klein & Manning's convention: the whole-sentence bracket counted, as
in their published numbers, or not, as their text says) and the universal tag table."""
from __future__ import annotations

import pytest

from fastspectral.eval.unlabelled import (evaluate_by_length, evaluate_unlabelled,
                                          unlabelled_brackets)
from fastspectral.trees.tree import Tree
from fastspectral.trees.universal_tags import PTB_TO_UNIVERSAL, UNIVERSAL_TAGS, to_universal

G = Tree.fromstring("(TOP (S (NP (DT The) (JJ big) (NN dog)) (, ,) (VP (VBD saw) "
                    "(NP (DT a) (NN cat))) (. .)))")


def test_brackets_drop_punctuation_single_words_and_maybe_the_sentence():
    n, spans = unlabelled_brackets(G)
    assert n == 6
    assert spans == {(0, 3), (3, 6), (4, 6), (0, 6)}
    assert unlabelled_brackets(G, sentence_bracket=False) == (6, {(0, 3), (3, 6), (4, 6)})
    two = Tree.fromstring("(S (NP (NNS dogs)) (VP (VBP bark)) (. .))")
    assert unlabelled_brackets(two) == (2, {(0, 2)})
    assert unlabelled_brackets(two, sentence_bracket=False) == (2, set())
    one = Tree.fromstring("(S (VP (VB Go)) (. !))")
    assert unlabelled_brackets(one) == (1, set())


def test_scores_by_hand():
    pred = Tree.fromstring("(X (X (DT The) (X (JJ big) (NN dog))) (, ,) (X (VBD saw) (X (DT a) "
                           "(NN cat))) (. .))")
    s = evaluate_unlabelled([G], [pred], sentence_bracket=False)
    # pred brackets: (0,3) (1,3) (3,6) (4,6); gold: (0,3) (3,6) (4,6)
    assert (s.matched, s.gold, s.predicted) == (3, 3, 4)
    assert s.recall == 100.0 and s.precision == 75.0
    assert s.f1 == pytest.approx(2 * 75 / 175 * 100)
    s = evaluate_unlabelled([G], [pred])                        # + (0,6) in all three counts
    assert (s.matched, s.gold, s.predicted, s.sentence_bracket) == (4, 4, 5, True)
    assert s.precision == 80.0
    assert evaluate_unlabelled([G], [pred], max_length=5).sentences == 0
    rows = evaluate_by_length([G], [pred], (5, 10, None))
    assert [r.sentences for r in rows] == [0, 1, 1]
    assert [(r.matched, r.predicted) for r in rows] == [(0, 0), (4, 5), (4, 5)]
    rows = evaluate_by_length([G], [pred], (10,), sentence_bracket=False)
    assert (rows[0].matched, rows[0].predicted, rows[0].sentence_bracket) == (3, 4, False)


def _right_binarized(t):
    """The gold tree made binary by right-factoring (all gold brackets kept): Klein & Manning's
    UBOUND, the best binary tree."""
    if isinstance(t, str):
        return t
    kids = [_right_binarized(c) for c in t.children]
    while len(kids) > 2:
        kids = kids[:-2] + [Tree("X", kids[-2:])]
    return Tree(t.label, kids)


#: a small treebank with its counts by hand (n = words after punctuation removal)
KM_TREES = [
    G,                                          # n=6; gold (0,3) (3,6) (4,6) [+ (0,6)]
    Tree.fromstring("(S (NP (NNS dogs)) (VP (VBP bark)))"),                  # n=2; [(0,2)]
    Tree.fromstring("(S (NP (PRP He)) (VP (VBD gave) (NP (DT the) (NN dog)) (NP (DT a) "
                    "(NN bone))) (. .))"),      # n=6; gold (1,6) (2,4) (4,6) [+ (0,6)]
    Tree.fromstring("(S (VP (VB Go)) (. !))"),                                 # n=1; nothing
]


@pytest.mark.parametrize("sentence_bracket", [True, False])
def test_ubound_and_rbranch_by_hand(sentence_bracket):
    from fastspectral.unsupervised import branching_tree

    ub = evaluate_unlabelled(KM_TREES, [_right_binarized(t) for t in KM_TREES],
                             sentence_bracket=sentence_bracket)
    rb = evaluate_unlabelled(KM_TREES, [branching_tree(t.leaves(), [q for _, q in t.pos()])
                                        for t in KM_TREES], sentence_bracket=sentence_bracket)
    assert ub.sentences == rb.sentences == 4
    if sentence_bracket:
        # UBOUND: n-1 brackets per binary tree (5 + 1 + 5), every gold one matched (4 + 1 + 4);
        # Luque's (gold + 1) / (n - 2 + 1) per sentence
        assert (ub.matched, ub.gold, ub.predicted) == (9, 9, 11)
        # RBRANCH: (0,6) (1,6) (2,6) (3,6) (4,6) twice, (0,2); matched (0,6) (3,6) (4,6),
        # (0,2), (0,6) (1,6) (4,6)
        assert (rb.matched, rb.gold, rb.predicted) == (7, 9, 11)
        assert ub.f1_sentences == 3
    else:
        assert (ub.matched, ub.gold, ub.predicted) == (6, 6, 8)
        assert (rb.matched, rb.gold, rb.predicted) == (4, 6, 8)
        assert ub.f1_sentences == 2                   # the two-word sentence has no bracket
    assert ub.recall == 100.0


@pytest.mark.slow
def test_ubound_precision_on_the_wsj_sample():
    """Klein & Manning's WSJ10 UBOUND precision is 78.8; on the WSJ sample's sentences of <= 10
    words it is 78.6 with the whole-sentence bracket counted, 74.3 without (Luque's
    reimplementation: 78.8 with, 74.7 without, on the whole WSJ10)."""
    from conftest import data_path, need
    from fastspectral.trees.readers import read_treebank

    gold = list(read_treebank(str(need(data_path("ptb", "wsj-sample.mrg")))))
    pred = [_right_binarized(t) for t in gold]
    s = evaluate_unlabelled(gold, pred, 10)
    assert (s.sentences, s.matched, s.gold, s.predicted) == (537, 2489, 2489, 3167)
    assert round(s.precision, 1) == 78.6
    s = evaluate_unlabelled(gold, pred, 10, sentence_bracket=False)
    assert (s.sentences, s.matched, s.gold, s.predicted) == (537, 1965, 1965, 2643)
    assert round(s.precision, 1) == 74.3


def test_macro_average_is_the_mean_of_sentence_f1():
    pred = Tree.fromstring("(X (X (DT The) (X (JJ big) (NN dog))) (, ,) (X (VBD saw) (X (DT a) "
                           "(NN cat))) (. .))")
    short = Tree.fromstring("(TOP (S (NP (NNS dogs)) (VP (VBP bark))))")     # nothing to score
    other = Tree.fromstring("(TOP (S (NP (DT a) (NN b)) (VP (VB c))))")
    flat = Tree.fromstring("(X (DT a) (X (NN b) (VB c)))")                   # 0 of 1
    s = evaluate_unlabelled([G, short, other], [pred, short, flat], sentence_bracket=False)
    assert s.sentences == 3 and s.f1_sentences == 2
    assert s.macro_f1 == pytest.approx(100 * (6 / 7 + 0.0) / 2)
    assert s.f1 == pytest.approx(100 * 2 * 3 / (4 + 5))          # micro: 3 of 4 gold, 5 pred
    rows = evaluate_by_length([G, short, other], [pred, short, flat], (10,),
                              sentence_bracket=False)
    assert rows[0].macro_f1 == pytest.approx(s.macro_f1)
    # with the sentence bracket: 4 of 4 gold / 5 predicted, 1 of 1 (two words), 1 of 2 / 2
    s = evaluate_unlabelled([G, short, other], [pred, short, flat])
    assert s.sentences == 3 and s.f1_sentences == 3
    assert s.macro_f1 == pytest.approx(100 * (8 / 9 + 1.0 + 0.5) / 3)
    assert s.f1 == pytest.approx(100 * 2 * 6 / (7 + 8))
    rows = evaluate_by_length([G, short, other], [pred, short, flat], (10,))
    assert rows[0].macro_f1 == pytest.approx(s.macro_f1)


def test_unary_chain_counts_once_and_traces_removed():
    gold = Tree.fromstring("( (S (NP-SBJ (-NONE- *)) (NP (NP (DT a) (NN b))) (VP (VB c) (NN d))))")
    pred = Tree.fromstring("(X (X (DT a) (NN b)) (X (VB c) (NN d)))")
    s = evaluate_unlabelled([gold], [pred], sentence_bracket=False)
    assert (s.matched, s.gold, s.predicted) == (2, 2, 2)
    s = evaluate_unlabelled([gold], [pred])                     # + (0,4), once
    assert (s.matched, s.gold, s.predicted) == (3, 3, 3)


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
    r = subprocess.run([sys.executable, "-m", "fastspectral", "eval", str(f), str(f),
                        "--no-sentence-bracket"], capture_output=True, text=True)
    assert r.returncode == 2 and "--unlabelled" in r.stderr


def test_cli_sentence_bracket_option(tmp_path):
    import subprocess
    import sys

    from fastspectral.unsupervised import branching_tree

    g, p = tmp_path / "g.trees", tmp_path / "p.trees"
    g.write_text("".join(str(t) + "\n" for t in KM_TREES))
    p.write_text("".join(str(branching_tree(t.leaves(), [q for _, q in t.pos()])) + "\n"
                         for t in KM_TREES))

    def run(*extra):
        r = subprocess.run([sys.executable, "-m", "fastspectral", "eval", str(g), str(p),
                            "--unlabelled", *extra], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return r.stdout

    new, old = run("--by-length"), run("--no-sentence-bracket", "--max-length", "10")
    assert "whole-sentence bracket counted" in new and "Number of matched brackets =      7" in new
    assert "Number of test brackets   =     11" in new
    assert "whole-sentence bracket not counted" in old
    summary = [line for line in old.splitlines() if line.startswith("=== Summary")]
    assert summary == ["=== Summary (unlabelled, length <= 10; punctuation removed; single-word "
                       "brackets not counted; whole-sentence bracket not counted) ==="]
    assert "Number of matched brackets =      4" in old
    f1 = 100 * 2 * 4 / (6 + 8)
    assert old.rstrip().splitlines()[-1] == f"Bracketing FMeasure = {f1:.2f}"
    f1 = 100 * 2 * 7 / (9 + 11)
    assert new.rstrip().splitlines()[-1] == f"Bracketing FMeasure = {f1:.2f}"


def test_brown_tag_table_and_reader(tmp_path):
    from fastspectral.errors import FormatError
    from fastspectral.trees.corpus import read_brown_universal as read_brown_tagged
    from fastspectral.trees.universal_tags import brown_to_universal

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
