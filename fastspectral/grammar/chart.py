"""Python wrappers of the compiled chart kernels (:mod:`fastspectral._ext.cky`).

These functions pack sentences into the flat arrays the kernels read, run them (in parallel over
sentences with ``jobs`` OpenMP threads) and turn the kernels' output back into trees.  They are
shared by every PCFG-shaped model: the plain PCFG, and the L-PCFGs for coarse-to-fine pruning.
"""
from __future__ import annotations

import numpy as np

from ..trees.transforms import restore_unary
from ..trees.tree import Tree

VITERBI = 0
MAX_RECALL = 1


def pack_lexical(grammar, sentences, tags=None):
    """Flatten the lexical entries of many sentences: ``(lengths, offsets, pos, sym, prob)``."""
    lengths = np.array([len(s) for s in sentences], dtype=np.int64)
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    pos_l, sym_l, prob_l = [], [], []
    for k, words in enumerate(sentences):
        t = None if tags is None else tags[k]
        p, s, pr = grammar.lexicon.entries(words, t, grammar.tag_symbols)
        pos_l.append(p)
        sym_l.append(s)
        prob_l.append(pr)
        offsets[k + 1] = offsets[k] + len(p)
    if not sentences:
        return lengths, offsets, np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0)
    return (lengths, offsets, np.concatenate(pos_l).astype(np.int32),
            np.concatenate(sym_l).astype(np.int32), np.concatenate(prob_l).astype(np.float64))


def nodes_to_tree(nodes, words, class_labels, class_is_tag, root_label="TOP"):
    """Build a tree from preorder (start, end, class) nodes written by the decoders.

    Intermediate classes (``@X``) are spliced out, collapsed unary chains (``A+B``) restored, and
    the result is put under a ``TOP`` root (unless the decoded root already is ``TOP``).
    """
    root = Tree(root_label, [])
    stack = [(root, -1, 10 ** 9, False)]  # (node, start, end, is_tag)
    for start, end, cl in nodes:
        label = class_labels[cl]
        is_tag = bool(class_is_tag[cl]) and end - start == 1
        while True:
            node, s0, e0, tagnode = stack[-1]
            if not tagnode and s0 <= start and end <= e0:
                break
            stack.pop()
        if is_tag:
            node.children.append(Tree(label, [words[start]]))
            continue
        child = Tree(label, [])
        node.children.append(child)
        stack.append((child, start, end, False))
    _splice_intermediates(root)
    if len(root.children) == 1 and not isinstance(root.children[0], str) \
            and root.children[0].label == root_label:
        root = root.children[0]
    return restore_unary(root)


def _splice_intermediates(root):
    stack = [root]
    while stack:
        node = stack.pop()
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
        stack.extend(c for c in node.children if not isinstance(c, str))


def flat_tree(words, tags, label="S", root_label="TOP"):
    """Fallback tree for a sentence without a parse: one flat constituent over the tags."""
    return Tree(root_label, [Tree(label, [Tree(t, [w]) for w, t in zip(words, tags)])])


def marginals(grammar, words, tags=None, viterbi=False):
    """Dense inside/outside/marginal arrays of one sentence (see ``cky.chart_marginals``)."""
    from .._ext.cky import chart_marginals

    if not words:
        raise ValueError("empty sentence")
    pos, sym, prob = grammar.lexicon.entries(words, tags, grammar.tag_symbols)
    return chart_marginals(grammar.chart_grammar("max" if viterbi else "sum"), len(words),
                           pos, sym, prob, viterbi)


def posterior_prune(grammar, sentences, threshold=1e-5, tags=None, jobs=1):
    """Items (i, j, symbol) whose posterior marginal is >= ``threshold``, per sentence.

    Returns a list of int32 arrays of shape (k, 3), j exclusive; symbols index
    ``grammar.symbols``.  A sentence without a parse gets an empty array; an empty sentence
    raises ``ValueError``.  This is the coarse pass of coarse-to-fine parsing for L-PCFGs.
    """
    from .._ext.cky import prune_batch

    for k, s in enumerate(sentences):
        if len(s) == 0:
            raise ValueError(f"sentence {k} is empty")
    lengths, offsets, pos, sym, prob = pack_lexical(grammar, sentences, tags)
    return prune_batch(grammar.chart_grammar("sum"), lengths, offsets, pos, sym, prob,
                       float(threshold), int(jobs))
