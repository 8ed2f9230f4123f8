"""The one-pass tree builder of the decoders against the reference three-pass construction
(build the decoded tree, splice out @X nodes, restore unary chains)."""
import numpy as np
import pytest

from fastspectral.grammar.chart import TreeBuilder, nodes_to_tree
from fastspectral.trees.transforms import restore_unary
from fastspectral.trees.tree import Tree


def reference(nodes, words, class_labels, class_is_tag, root_label="TOP"):
    root = Tree(root_label, [])
    stack = [(root, -1, 10 ** 9)]
    for start, end, cl in nodes:
        label = class_labels[cl]
        is_tag = bool(class_is_tag[cl]) and end - start == 1
        while not (stack[-1][1] <= start and end <= stack[-1][2]):
            stack.pop()
        node = stack[-1][0]
        if is_tag:
            node.children.append(Tree(label, [words[start]]))
            continue
        child = Tree(label, [])
        node.children.append(child)
        stack.append((child, start, end))
    todo = [root]
    while todo:
        node = todo.pop()
        changed = True
        while changed:
            changed = False
            kids = []
            for c in node.children:
                if not isinstance(c, str) and c.label.startswith("@") and c.children:
                    kids.extend(c.children)
                    changed = True
                else:
                    kids.append(c)
            node.children = kids
        todo.extend(c for c in node.children if not isinstance(c, str))
    if len(root.children) == 1 and not isinstance(root.children[0], str) \
            and root.children[0].label == root_label:
        root = root.children[0]
    return restore_unary(root)


LABELS = ["TOP", "S", "NP", "VP", "@S", "@VP", "S+VP", "DT", "NN", "VBD", "@NP", "TOP+S", "NP+NN"]
IS_TAG = np.array([lab in ("DT", "NN", "VBD") for lab in LABELS])


def random_preorder(rng, start, end, out, depth=0):
    """Random well-nested preorder nodes over [start, end)."""
    if end - start == 1 and (depth > 0 and rng.random() < 0.8):
        out.append((start, end, int(rng.choice([7, 8, 9]))))
        return
    cl = int(rng.choice([1, 2, 3, 4, 5, 6, 10, 11, 12, 0]))
    out.append((start, end, cl))
    if end - start == 1:
        if rng.random() < 0.7:
            out.append((start, end, int(rng.choice([7, 8, 9]))))
        return
    if rng.random() < 0.15:
        random_preorder(rng, start, end, out, depth + 1)      # a unary node
        return
    if rng.random() < 0.05:
        return                                                 # childless (an empty @X, say)
    k = int(rng.integers(start + 1, end))
    random_preorder(rng, start, k, out, depth + 1)
    random_preorder(rng, k, end, out, depth + 1)


def test_random_trees_match_reference():
    rng = np.random.default_rng(0)
    for trial in range(3000):
        n = int(rng.integers(1, 9))
        words = [f"w{i}" for i in range(n)]
        rows = []
        random_preorder(rng, 0, n, rows)
        nodes = np.array(rows, dtype=np.int32).reshape(-1, 3)
        want = str(reference(nodes, words, LABELS, IS_TAG))
        assert str(TreeBuilder(LABELS, IS_TAG)(nodes, words)) == want, (trial, rows)
        assert str(nodes_to_tree(nodes, words, LABELS, IS_TAG)) == want


@pytest.mark.slow
def test_parser_output_matches_reference(monkeypatch, shared_data):
    from fastspectral.grammar import pcfg as pcfg_mod
    from fastspectral.grammar.pcfg import PCFG
    from fastspectral.trees import read_ptb

    trees = list(read_ptb(shared_data / "ptb" / "wsj-sample.mrg"))
    model = PCFG().fit(trees[:800])
    seen = []

    def spy(nodes, words, labels, is_tag, *a):
        got = nodes_to_tree(nodes, words, labels, is_tag, *a)
        seen.append(str(got) == str(reference(nodes, words, labels, is_tag, *a)))
        return got

    monkeypatch.setattr(pcfg_mod, "nodes_to_tree", spy)
    sents = [[w for w, t in tr.pos() if t != "-NONE-"] for tr in trees[800:900]]
    model.parse(sents, jobs=1)
    assert len(seen) >= 90 and all(seen)
