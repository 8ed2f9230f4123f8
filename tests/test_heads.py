"""Tests for fastspectral.trees.heads: Collins head rules and dependency conversion."""
import os

import pytest

from fastspectral.trees.heads import HEAD_RULES, find_head, tree_to_dependencies
from fastspectral.trees.ptb import read_ptb
from fastspectral.trees.transforms import clean, collapse_unary
from fastspectral.trees.tree import Tree
from conftest import data_path

SAMPLE = str(data_path("ptb", "wsj-sample.mrg"))
needs_data = pytest.mark.skipif(not os.path.exists(SAMPLE), reason="PTB data not available")


@pytest.mark.parametrize("label, kids, head", [
    ("NP", ["DT", "JJ", "NN", "NNS"], 3),          # rightmost noun
    ("NP", ["NNP", "POS"], 1),                      # possessive
    ("NP-SBJ-1", ["NP", "NN"], 1),                  # function tags stripped, noun right to left
    ("NP", ["NP", "PP"], 0),                        # leftmost NP
    ("NP", ["NP", ",", "NP", ","], 0),
    ("NP", ["DT", "JJ"], 1),                        # JJ step
    ("NP", ["DT", "CD", "JJ"], 1),                  # CD before JJ
    ("NP", ["DT", "ADJP", "CD"], 1),                # $ ADJP PRN before CD
    ("NP", ["DT", "DT"], 1),                        # default: last child
    ("NP^S", ["DT", "NN"], 1),                      # annotation stripped
    ("PP", ["IN", "NP"], 0),
    ("PP", ["ADVP", "TO", "NP"], 1),
    ("S", ["NP-SBJ", "VP", "."], 1),
    ("S", ["S", ",", "CC", "S"], 0),
    ("SBAR", ["WHNP-1", "S"], 0),
    ("SBAR", ["IN", "S"], 0),
    ("VP", ["ADVP", "VBD", "NP"], 1),
    ("VP", ["MD", "VP"], 0),
    ("VP", ["VB", "NP", "PP"], 0),
    ("ADVP", ["RB", "RB"], 1),                      # right to left
    ("ADJP", ["RB", "JJ", "PP"], 1),
    ("QP", ["JJR", "IN", "CD"], 1),
    ("FRAG", ["NP", "."], 1),                       # right, empty priority: last child
    ("UCP", ["NN", "CC", "JJ"], 2),
    ("INTJ", ["UH", "UH"], 0),
    ("WHNP", ["WDT", "NN"], 0),
    ("WHADVP", ["WRB", "RB"], 0),
    ("SINV", ["ADVP", "VBZ", "NP"], 1),
    ("SQ", ["VBZ", "NP", "VP"], 0),
    ("PRT", ["RP"], 0),
    ("S+VP", ["VB", "NP"], 0),                      # collapsed parent: bottom category VP
    ("S", ["NP", "S+VP"], 1),                       # collapsed child: top category S
    ("@S^TOP|NP", ["VP^S", "."], 0),                # intermediate treated as its category
    ("TOP", ["S"], 0),
    ("UNKNOWN", ["A", "B"], 0),
])
def test_find_head(label, kids, head):
    assert find_head(label, kids) == head


def test_table_covers_collins_labels():
    for lab in ["ADJP", "ADVP", "CONJP", "FRAG", "INTJ", "LST", "NAC", "PP", "PRN", "PRT", "QP", "RRC",
                "S", "SBAR", "SBARQ", "SINV", "SQ", "UCP", "VP", "WHADJP", "WHADVP", "WHNP", "WHPP",
                "NX", "X"]:
        assert HEAD_RULES[lab][0] in ("left", "right")
    with pytest.raises(ValueError):
        find_head("NP", [])


@pytest.mark.parametrize("tree, heads", [
    ("(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .)))", [2, 3, 0, 3]),
    ("(TOP (S (NP (NP (NNP John) (POS 's)) (NN dog)) (VP (VBD saw) (NP (PRP me)) "
     "(PP (IN in) (NP (DT the) (NN park))))))", [2, 3, 4, 0, 4, 4, 8, 6]),
    ("(TOP (S (NP (PRP I)) (VP (MD will) (VP (VB say) (SBAR (IN that) (S (NP (PRP it)) "
     "(VP (TO to) (VP (VB go))))))) (. .)))", [2, 0, 2, 3, 6, 4, 6, 2]),
    ("(NN Yes)", [0]),
])
def test_tree_to_dependencies_hand_trees(tree, heads):
    t = Tree.fromstring(tree)
    words, tags, h = tree_to_dependencies(t)
    assert words == t.leaves() and tags == [tg for _, tg in t.pos()]
    assert h == heads


def _is_single_rooted_projective(heads):
    n = len(heads)
    if sum(1 for h in heads if h == 0) != 1 or any(not 0 <= h <= n for h in heads):
        return False
    lo = list(range(1, n + 1))
    hi = list(range(1, n + 1))
    size = [1] * (n + 1)
    for d in range(1, n + 1):  # walk each word up to the root: acyclic, and grow ancestors' yields
        seen = set()
        h = heads[d - 1]
        while h != 0:
            if h in seen or h == d:
                return False
            seen.add(h)
            lo[h - 1] = min(lo[h - 1], d)
            hi[h - 1] = max(hi[h - 1], d)
            size[h] += 1
            h = heads[h - 1]
    # projective <=> every word's yield is a contiguous interval
    return all(hi[i] - lo[i] + 1 == size[i + 1] for i in range(n))


def test_projectivity_checker_rejects_bad_trees():
    assert _is_single_rooted_projective([2, 0, 2])
    assert not _is_single_rooted_projective([0, 0, 2])      # two roots
    assert not _is_single_rooted_projective([2, 1, 0])      # cycle
    assert not _is_single_rooted_projective([3, 4, 0, 3])   # crossing arcs 1<-3, 2<-4


@pytest.mark.slow
@needs_data
def test_wsj_sample_converts_to_projective_trees():
    n = 0
    for raw in read_ptb(SAMPLE):
        t = clean(raw)
        words, tags, heads = tree_to_dependencies(t)
        assert words == t.leaves()
        assert _is_single_rooted_projective(heads), str(t)
        n += 1
        if n == 1:  # "Pierre Vinken ... will join the board ...": Collins makes the modal the root
            assert heads == [2, 8, 2, 5, 6, 2, 2, 0, 8, 11, 9, 9, 15, 15, 12, 9, 16, 8]
        if n <= 200:  # the same heads on the unary-collapsed and on the binarised tree
            assert tree_to_dependencies(collapse_unary(t))[2] == heads
    assert n == 3914
