"""Tests for fastspectral.trees.tree (Tree, TreeArrays) and fastspectral.trees.ptb (read/write)."""
import gzip
import io
import os
import re

import numpy as np
import pytest

from fastspectral.errors import FormatError
from fastspectral.trees.ptb import read_ptb, write_brackets
from fastspectral.trees.tree import Tree, TreeArrays
from conftest import data_path

# the shared data folder beside the checkout (tests/conftest.py)
DATA = os.fspath(data_path("ptb"))
SAMPLE = os.path.join(DATA, "wsj-sample.mrg")
WSJ22 = os.path.join(DATA, "wsj22.trees")
needs_data = pytest.mark.skipif(not (os.path.exists(SAMPLE) and os.path.exists(WSJ22)),
                                reason="PTB data not available")

SMALL = "(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .)))"


# ----------------------------------------------------------------------------- Tree
def test_fromstring_basic_and_accessors():
    t = Tree.fromstring(SMALL)
    assert t.label == "TOP"
    assert str(t) == SMALL and t.to_string() == SMALL
    assert t.leaves() == ["The", "dog", "barks", "."]
    assert t.pos() == [("The", "DT"), ("dog", "NN"), ("barks", "VBZ"), (".", ".")]
    s = t[0]
    assert s.label == "S" and not s.is_preterminal()
    assert s[0][0].is_preterminal() and s[0][0].children == ["The"]
    assert t.height == 5  # TOP S NP DT word
    assert Tree("NN", ["dog"]).height == 2


def test_fromstring_raw_outer_bracket_and_special_tokens():
    s = """( (S
        (NP-SBJ-1 (-NONE- *T*-1) )
        (PRN (-LRB- -LRB-) (NP (CD 1/2) ) (-RRB- -RRB-) )
        (NP=2 (NN a=b) (NN x-y) ) ))"""
    t = Tree.fromstring(s)
    assert t.label == ""
    assert len(t.children) == 1
    assert str(t) == ("( (S (NP-SBJ-1 (-NONE- *T*-1)) (PRN (-LRB- -LRB-) (NP (CD 1/2)) (-RRB- -RRB-)) "
                      "(NP=2 (NN a=b) (NN x-y))))")
    assert t.leaves() == ["*T*-1", "-LRB-", "1/2", "-RRB-", "a=b", "x-y"]
    assert Tree.fromstring(str(t)) == t


def test_spans_preorder_end_exclusive():
    t = Tree.fromstring(SMALL)
    assert t.spans() == [("TOP", 0, 4), ("S", 0, 4), ("NP", 0, 2), ("DT", 0, 1), ("NN", 1, 2),
                         ("VP", 2, 3), ("VBZ", 2, 3), (".", 3, 4)]


def test_eq_copy_repr():
    t = Tree.fromstring(SMALL)
    u = t.copy()
    assert u == t and u is not t
    u[0][0][1].children[0] = "cat"
    assert u != t and t.leaves()[1] == "dog"
    v = t.copy()
    v[0].label = "SQ"
    assert v != t
    w = t.copy()
    w[0].children.pop()
    assert w != t
    assert t != "(TOP)" and t == Tree.fromstring(SMALL)
    assert repr(t) == f"Tree.fromstring({SMALL!r})"
    with pytest.raises(TypeError):
        hash(t)


def test_subtrees_preorder():
    t = Tree.fromstring(SMALL)
    assert [x.label for x in t.subtrees()] == ["TOP", "S", "NP", "DT", "NN", "VP", "VBZ", "."]


def test_deep_trees_do_not_hit_recursion_limit():
    depth = 5000
    s = "(TOP " + "(X (A a) " * depth + "(B b)" + ")" * depth + ")"
    t = Tree.fromstring(s)
    assert t.height == depth + 3
    assert str(t) == s
    assert len(t.leaves()) == depth + 1
    assert t.copy() == t
    sp = t.spans()
    assert sp[0] == ("TOP", 0, depth + 1) and sp[1] == ("X", 0, depth + 1)
    syms = {"TOP": 0, "X": 1, "A": 2, "B": 3}
    arr = t.to_arrays(syms)
    assert arr.to_tree(["TOP", "X", "A", "B"]) == t


@pytest.mark.parametrize("bad, line", [
    ("(S (NP (DT the)) (VP (VBZ is))", 1),     # unclosed
    ("(S (NN x)))", 1),                         # extra ')'
    ("(S (NN x))\n()", 2),                      # empty tree / two trees
    ("(S (NP) (NN x))", 1),                     # labelled node, no children
    ("(S (NN x) (NN y))\nfoo", 2),              # text outside brackets
    ("(S ( (NN x)))", 1),                       # unlabelled inner node
    ("(S word (NN x))", 1),                     # word mixed with subtrees
    ("(NN x y)", 1),                            # two words
    ("(S (NN x))\n(S (NN y))", 1),              # two trees
])
def test_fromstring_errors(bad, line):
    with pytest.raises(FormatError) as e:
        Tree.fromstring(bad)
    assert e.value.line == line


# ----------------------------------------------------------------------------- TreeArrays
def test_tree_arrays_exact_and_inverse():
    t = Tree.fromstring(SMALL)
    labels = ["TOP", "S", "NP", "VP", "DT", "NN", "VBZ", "."]
    sym = {s: i for i, s in enumerate(labels)}
    a = t.to_arrays(sym)
    assert isinstance(a, TreeArrays) and len(a) == 8 and a.n_nodes == 8
    assert a.label.dtype == np.int32 and a.parent.dtype == np.int32
    assert a.label.tolist() == [0, 1, 2, 4, 5, 3, 6, 7]
    assert a.start.tolist() == [0, 0, 0, 0, 1, 2, 2, 3]
    assert a.end.tolist() == [4, 4, 2, 1, 2, 3, 3, 4]
    assert a.parent.tolist() == [-1, 0, 1, 2, 2, 1, 5, 1]
    assert a.n_children.tolist() == [1, 3, 2, 0, 0, 1, 0, 0]
    assert a.words == ["The", "dog", "barks", "."]
    # spans agree with Tree.spans
    assert [(labels[l], s, e) for l, s, e in zip(a.label, a.start, a.end)] == t.spans()
    # inverse with a list, a label->id dict, an id->label dict and an object with `labels`
    assert a.to_tree(labels) == t
    assert a.to_tree(sym) == t
    assert a.to_tree(dict(enumerate(labels))) == t

    class Table:
        def __init__(self):
            self.labels = labels

        def __getitem__(self, s):
            return sym[s]

    assert t.to_arrays(Table()).to_tree(Table()) == t
    t2 = a.to_tree(labels, ["A", "cat", "meows", "!"])
    assert t2.leaves() == ["A", "cat", "meows", "!"]
    with pytest.raises(KeyError):
        t.to_arrays({"TOP": 0})


@needs_data
def test_tree_arrays_roundtrip_wsj22():
    trees = list(read_ptb(WSJ22))
    sym = {}
    for t in trees:
        for lab, _, _ in t.spans():
            sym.setdefault(lab, len(sym))
    inv = list(sym)
    for t in trees[:300]:
        a = t.to_arrays(sym)
        assert a.end[0] == len(a.words) == len(t.leaves())
        assert a.to_tree(inv) == t


# ----------------------------------------------------------------------------- read_ptb
def _count_preterminals(path):
    n = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            n += len(re.findall(r"\([^\s()]+ [^\s()]+\)", line))
    return n


@needs_data
def test_read_sample_multiline():
    trees = list(read_ptb(SAMPLE))
    assert len(trees) == 3914
    assert all(t.label == "" and len(t.children) == 1 for t in trees)
    assert str(trees[0]).startswith("( (S (NP-SBJ (NP (NNP Pierre) (NNP Vinken)) (, ,) (ADJP")
    assert trees[0].leaves()[:3] == ["Pierre", "Vinken", ","]
    assert sum(len(t.leaves()) for t in trees) == _count_preterminals(SAMPLE)


@needs_data
def test_read_one_per_line_and_write_roundtrip(tmp_path):
    trees = list(read_ptb(WSJ22))
    assert len(trees) == 1700
    assert all(t.label == "TOP" for t in trees)
    with open(WSJ22, encoding="utf-8") as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip()]
    assert [str(t) for t in trees] == lines
    out = tmp_path / "out.trees.gz"
    assert write_brackets(trees, out) == 1700
    assert list(read_ptb(out)) == trees
    with gzip.open(out, "rt", encoding="utf-8") as f:
        assert f.readline().rstrip("\n") == lines[0]


@pytest.mark.slow
@needs_data
def test_read_sample_written_back_one_per_line(tmp_path):
    trees = list(read_ptb(SAMPLE))
    out = tmp_path / "s.trees"
    write_brackets(trees, str(out))
    with open(out, encoding="utf-8") as f:
        assert sum(1 for _ in f) == 3914
    assert list(read_ptb(out)) == trees


def test_read_sources_lines_textfile_binaryfile(tmp_path):
    text = "( (S (NP (NN a))\n   (VP (VB b))))\n\n(TOP (X (Y y)))  (TOP (Z z))\n"
    expect = ["( (S (NP (NN a)) (VP (VB b))))", "(TOP (X (Y y)))", "(TOP (Z z))"]
    assert [str(t) for t in read_ptb(text.splitlines(True))] == expect
    assert [str(t) for t in read_ptb([ln.encode() for ln in text.splitlines(True)])] == expect
    assert [str(t) for t in read_ptb(io.StringIO(text))] == expect
    assert [str(t) for t in read_ptb(io.BytesIO(text.encode()))] == expect
    p = tmp_path / "x.mrg"
    p.write_text("\ufeff" + text, encoding="utf-8")
    assert [str(t) for t in read_ptb(p)] == expect
    with open(p, encoding="utf-8-sig") as f:
        assert [str(t) for t in read_ptb(f)] == expect
    buf = io.StringIO()
    assert write_brackets(read_ptb(p), buf) == 3
    assert buf.getvalue() == "\n".join(expect) + "\n"
    bbuf = io.BytesIO()
    write_brackets(read_ptb(p), bbuf)
    assert bbuf.getvalue().decode() == "\n".join(expect) + "\n"


def test_read_is_streaming():
    def lines():
        yield "(TOP (A a))\n"
        yield "(TOP (B b))\n"
        raise AssertionError("reader consumed more input than needed")

    it = read_ptb(lines())
    assert str(next(it)) == "(TOP (A a))"


@pytest.mark.parametrize("text, line, what", [
    ("(TOP (A a))\n(TOP (S (NP (NN x))\n  (VP (VB y))\n", 2, "not closed"),
    ("(TOP (A a))\n\n(TOP (B b)))\n", 3, "unbalanced"),
    ("(TOP (A a))\n()\n", 2, "empty"),
    ("(TOP (A a))\n(TOP (NP ) (B b))\n", 2, "no children"),
    ("(TOP (A a))\nstray words\n", 2, "outside"),
    ("(TOP (A a))\n(TOP ( (B b)))\n", 2, "label"),
    ("(TOP (A a))\n(TOP (B b c))\n", 2, "word"),
])
def test_read_errors_name_file_and_line(tmp_path, text, line, what):
    p = tmp_path / "bad.mrg"
    p.write_text(text, encoding="utf-8")
    it = read_ptb(p)
    assert str(next(it)) == "(TOP (A a))"  # trees before the error are still delivered
    with pytest.raises(FormatError) as e:
        list(it)
    assert e.value.line == line
    assert e.value.path == str(p)
    assert str(e.value).startswith(f"{p}:{line}: ")
    assert what in e.value.message


def test_read_invalid_encoding(tmp_path):
    p = tmp_path / "bad.mrg.gz"
    with gzip.open(p, "wb") as f:
        f.write(b"(TOP (A a))\n(TOP (B b\xff\xfe))\n")
    with pytest.raises(FormatError) as e:
        list(read_ptb(p))
    assert e.value.line == 2 and "utf-8" in e.value.message
    # latin-1 decodes anything
    assert [t.leaves() for t in read_ptb(p, encoding="latin-1")] == [["a"], ["b\xff\xfe"]]
    # a text-mode file object that cannot decode
    raw = io.BytesIO(b"(TOP (A a))\n" + b"(TOP (B \xff))\n" * 3)
    with pytest.raises(FormatError):
        list(read_ptb(io.TextIOWrapper(raw, encoding="utf-8")))


def test_write_rejects_non_trees():
    with pytest.raises(TypeError):
        write_brackets(["(TOP (A a))"], io.StringIO())
