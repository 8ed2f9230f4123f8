"""Tests for fastspectral.trees.transforms: clean, unary collapse, binarisation and their inverses."""
import os

import pytest

from fastspectral.trees.ptb import read_ptb
from fastspectral.trees.transforms import (base_label, binarize, clean, collapse_unary, debinarize,
                                           is_intermediate, prepare, restore_unary,
                                           strip_function_tags, unprepare)
from fastspectral.trees.tree import Tree
from conftest import data_path

DATA = str(data_path("ptb"))
SAMPLE = os.path.join(DATA, "wsj-sample.mrg")
WSJ22 = os.path.join(DATA, "wsj22.trees")
needs_data = pytest.mark.skipif(not (os.path.exists(SAMPLE) and os.path.exists(WSJ22)),
                                reason="PTB data not available")
T = Tree.fromstring
CONFIGS = [(1, 0), (1, 1), (2, 1), (2, 2), (3, None)]


# ----------------------------------------------------------------------------- labels
@pytest.mark.parametrize("raw, expect", [
    ("NP-SBJ-1", "NP"), ("NP=2", "NP"), ("PP-LOC-CLR", "PP"), ("S-1", "S"), ("S-TPC-1", "S"),
    ("NP-SBJ=1", "NP"), ("ADVP|PRT", "ADVP"), ("PRP$", "PRP$"), ("WP$", "WP$"), ("-LRB-", "-LRB-"),
    ("-RRB-", "-RRB-"), ("-NONE-", "-NONE-"), ("-LCB-", "-LCB-"), (",", ","), (".", "."),
    ("``", "``"), ("''", "''"), ("#", "#"), ("$", "$"), (":", ":"), ("NP", "NP"), ("", ""),
])
def test_strip_function_tags(raw, expect):
    assert strip_function_tags(raw) == expect


@pytest.mark.parametrize("sym, base", [
    ("NP", "NP"), ("NP^S", "NP"), ("NP^S^VP", "NP"), ("@NP", "@NP"), ("@NP^S", "@NP"),
    ("@NP^S|DT_JJ", "@NP"), ("@NP|,", "@NP"), ("S+VP^TOP", "S+VP"), ("PRP$^NP", "PRP$"),
    ("-LRB-^NP", "-LRB-"), ("@S+VP^TOP|NP", "@S+VP"),
])
def test_base_label_and_is_intermediate(sym, base):
    assert base_label(sym) == base
    assert is_intermediate(sym) == sym.startswith("@")
    assert not is_intermediate("NP") and is_intermediate("@NP|DT")


# ----------------------------------------------------------------------------- clean
def test_clean_traces_tags_and_root():
    raw = T("( (S (NP-SBJ-1 (-NONE- *-1)) (VP (VBD left) (SBAR (-NONE- 0) (S (-NONE- *T*-2))) "
            "(PP-LOC=2 (IN at) (NP (NN noon)))) (PRN (-LRB- -LRB-) (ADVP|PRT (RB up)) (-RRB- -RRB-)) "
            "(. .)) )")
    before = str(raw)
    c = clean(raw)
    assert str(c) == ("(TOP (S (VP (VBD left) (PP (IN at) (NP (NN noon)))) "
                      "(PRN (-LRB- -LRB-) (ADVP (RB up)) (-RRB- -RRB-)) (. .)))")
    assert str(raw) == before  # input untouched


@pytest.mark.parametrize("raw, expect", [
    ("(S (NP (NN a)) (VP (VB b)))", "(TOP (S (NP (NN a)) (VP (VB b))))"),
    ("(TOP (S-1 (NP (NN a))))", "(TOP (S (NP (NN a))))"),
    ("(ROOT (S (NN a)))", "(TOP (S (NN a)))"),
    ("( (S (NN a)) (S (NN b)) )", "(TOP (S (NN a)) (S (NN b)))"),
    ("(NN dog)", "(TOP (NN dog))"),
    ("(S (S (NP (-NONE- *)) (VP (-NONE- *T*))) (NP (NN x)))", "(TOP (S (NP (NN x))))"),
])
def test_clean_roots_and_recursive_empty_removal(raw, expect):
    assert str(clean(T(raw))) == expect


def test_clean_all_empty_raises():
    with pytest.raises(ValueError):
        clean(T("( (S (NP (-NONE- *)) (VP (-NONE- *T*))) )"))


# ----------------------------------------------------------------------------- unary chains
@pytest.mark.parametrize("tree, expect", [
    ("(TOP (S (VP (VB Go))))", "(TOP (S+VP (VB Go)))"),
    ("(TOP (NP (NN dog)))", "(TOP (NP (NN dog)))"),
    ("(TOP (S (NP (NN a)) (VP (VB b) (S (SBAR (S (VP (TO to) (VP (VB c)))))))))",
     "(TOP (S (NP (NN a)) (VP (VB b) (S+SBAR+S+VP (TO to) (VP (VB c))))))"),
    ("(S (VP (VB Go) (NP (NN it))))", "(S+VP (VB Go) (NP (NN it)))"),  # non-TOP root is merged
    ("(TOP (NN yes))", "(TOP (NN yes))"),
])
def test_collapse_restore_unary(tree, expect):
    t = T(tree)
    c = collapse_unary(t)
    assert str(c) == expect
    assert restore_unary(c) == t
    assert str(t) == tree


def test_collapse_rejects_plus_in_labels():
    with pytest.raises(ValueError):
        collapse_unary(T("(TOP (S+VP (NN a) (NN b)))"))


# ----------------------------------------------------------------------------- binarize
DOG = "(TOP (S (NP (DT the) (JJ big) (JJ red) (NN dog)) (VP (VBZ barks)) (. .)))"


@pytest.mark.parametrize("v, h, tag_parent, expect", [
    (1, 1, False, "(TOP (S (NP (DT the) (@NP|DT (JJ big) (@NP|JJ (JJ red) (NN dog)))) "
                  "(@S|NP (VP (VBZ barks)) (. .))))"),
    (1, 0, False, "(TOP (S (NP (DT the) (@NP (JJ big) (@NP (JJ red) (NN dog)))) "
                  "(@S (VP (VBZ barks)) (. .))))"),
    (1, 2, False, "(TOP (S (NP (DT the) (@NP|DT (JJ big) (@NP|DT_JJ (JJ red) (NN dog)))) "
                  "(@S|NP (VP (VBZ barks)) (. .))))"),
    (1, None, False, "(TOP (S (NP (DT the) (@NP|DT (JJ big) (@NP|DT_JJ (JJ red) (NN dog)))) "
                     "(@S|NP (VP (VBZ barks)) (. .))))"),
    (2, 1, False, "(TOP (S^TOP (NP^S (DT the) (@NP^S|DT (JJ big) (@NP^S|JJ (JJ red) (NN dog)))) "
                  "(@S^TOP|NP (VP^S (VBZ barks)) (. .))))"),
    (2, 1, True, "(TOP (S^TOP (NP^S (DT^NP the) (@NP^S|DT (JJ^NP big) (@NP^S|JJ (JJ^NP red) "
                 "(NN^NP dog)))) (@S^TOP|NP (VP^S (VBZ^VP barks)) (.^S .))))"),
    (3, None, False, "(TOP (S^TOP (NP^S^TOP (DT the) (@NP^S^TOP|DT (JJ big) (@NP^S^TOP|DT_JJ "
                     "(JJ red) (NN dog)))) (@S^TOP|NP (VP^S^TOP (VBZ barks)) (. .))))"),
    (3, 0, True, "(TOP (S^TOP (NP^S^TOP (DT^NP^S the) (@NP^S^TOP (JJ^NP^S big) (@NP^S^TOP "
                 "(JJ^NP^S red) (NN^NP^S dog)))) (@S^TOP (VP^S^TOP (VBZ^VP^S barks)) (.^S^TOP .))))"),
])
def test_binarize_exact(v, h, tag_parent, expect):
    t = T(DOG)
    b = binarize(t, v, h, tag_parent)
    assert str(b) == expect
    assert debinarize(b) == t
    assert str(t) == DOG


def test_binarize_h_window_and_collapsed_parent_annotation():
    t = T("(TOP (S+VP (VB Go) (NP (NN a)) (PP (IN b) (NP (NN c))) (, ,) (ADVP (RB d)) (. .)))")
    b = binarize(t, 2, 2)
    assert str(b) == ("(TOP (S+VP^TOP (VB Go) (@S+VP^TOP|VB (NP^S+VP (NN a)) (@S+VP^TOP|VB_NP "
                      "(PP^S+VP (IN b) (NP^PP (NN c))) (@S+VP^TOP|NP_PP (, ,) (@S+VP^TOP|PP_, "
                      "(ADVP^S+VP (RB d)) (. .)))))))")
    assert debinarize(b) == t


def test_binarize_top_with_several_children_and_binary_nodes():
    t = T("(TOP (S (NN a)) (S (NN b)) (S (NN c)))")
    assert str(binarize(t, 2, 1)) == "(TOP (S^TOP (NN a)) (@TOP|S (S^TOP (NN b)) (S^TOP (NN c))))"
    assert debinarize(binarize(t, 2, 1)) == t


def test_binarize_argument_and_label_checks():
    t = T(DOG)
    for bad in [dict(v=0), dict(v=1.5), dict(h=-1), dict(h="2")]:
        with pytest.raises(ValueError):
            binarize(t, **bad)
    for label in ["NP^X", "A|B", "@NP"]:
        with pytest.raises(ValueError):
            binarize(T(f"(TOP (S ({label} (NN a)) (VP (VB b))))"))


def test_debinarize_parser_output_with_intermediate_root():
    t = T("(@S^TOP|NP (VP^S (VBZ barks)) (. .))")
    assert str(debinarize(t)) == "(S (VP (VBZ barks)) (. .))"
    assert str(unprepare(T("(TOP (S+VP^TOP (VB Go) (@S+VP^TOP|VB (NP^S+VP (NN it)) (. .))))"))) == \
        "(TOP (S (VP (VB Go) (NP (NN it)) (. .))))"


@pytest.mark.slow
def test_deep_right_branching_prepare_unprepare():
    n = 3000
    words = " ".join(f"(NN w{i})" for i in range(n))
    flat = T(f"( (S (NP {words}) (VP (VB x))) )")
    deep = T("( " + "(S (NN a) " * 2000 + "(NN b)" + ")" * 2000 + " )")
    for raw in (flat, deep):
        c = clean(raw)
        for v, h in CONFIGS:
            b = prepare(raw, v, h)
            assert unprepare(b) == c
    b = prepare(flat, 1, 1)
    assert b.height > n  # a right-branching chain of intermediates


def _check_binary(b):
    """Every node has two children except X -> preterminal and the TOP root over one child."""
    stack = [(b, True)]
    while stack:
        x, is_root = stack.pop()
        ch = x.children
        if len(ch) == 1 and isinstance(ch[0], str):
            continue
        if len(ch) == 1:
            assert is_root or ch[0].is_preterminal(), str(x)[:200]
        else:
            assert len(ch) == 2, str(x)[:200]
        stack.extend((c, False) for c in ch)


@pytest.mark.slow
@needs_data
def test_roundtrip_whole_sample_and_wsj22():
    raw = list(read_ptb(SAMPLE)) + list(read_ptb(WSJ22))
    assert len(raw) == 3914 + 1700
    cleaned = [clean(t) for t in raw]
    collapsed = [collapse_unary(t) for t in cleaned]
    for c, u in zip(cleaned, collapsed):
        assert restore_unary(u) == c
        assert u.label == "TOP" and u.leaves() == c.leaves()
    n_inter = {}
    for v, h in CONFIGS:
        inter = set()
        for c, u in zip(cleaned, collapsed):
            b = binarize(u, v, h)
            assert debinarize(b) == u
            assert b.pos() == u.pos()  # tags not annotated, words untouched
            _check_binary(b)
            for x in b.subtrees():
                if is_intermediate(x.label):
                    inter.add(x.label)
        n_inter[v, h] = len(inter)
        if h == 0:  # all intermediates of one (annotated) label are a single symbol
            assert all("|" not in s for s in inter)
    assert n_inter[1, 0] < n_inter[1, 1] < n_inter[2, 1] < n_inter[2, 2] < n_inter[3, None]
    for t, c in zip(raw[:500], cleaned[:500]):
        assert unprepare(prepare(t, 2, 1)) == c


@needs_data
def test_cleaned_sample_has_no_traces_or_function_tags():
    for t in read_ptb(SAMPLE):
        c = clean(t)
        for lab, s, e in c.spans():
            assert lab != "-NONE-" and e > s
            assert lab in ("-LRB-", "-RRB-") or ("-" not in lab and "=" not in lab), lab
