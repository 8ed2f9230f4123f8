"""Python wrappers of the compiled chart kernels (:mod:`fastspectral._ext.cky`).

These functions pack sentences into the flat arrays the kernels read, run them (in parallel over
sentences with ``jobs`` OpenMP threads) and turn the kernels' output back into trees.  They are
shared by every PCFG-shaped model: the plain PCFG, and the L-PCFGs for coarse-to-fine pruning.
"""
from __future__ import annotations

import numpy as np

from ..trees.tree import Tree

VITERBI = 0
MAX_RECALL = 1


def pack_lexical(grammar, sentences, tags=None):
    """Flatten the lexical entries of many sentences: ``(lengths, offsets, pos, sym, prob)``."""
    lengths = np.array([len(s) for s in sentences], dtype=np.int64)
    if tags is None:                        # one batched call (new word types computed together)
        offsets, pos, sym, prob = grammar.lexicon.entries_many(sentences)
        return lengths, offsets, pos, sym, prob
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    pos_l, sym_l, prob_l = [], [], []
    grammar.lexicon.prefetch(sentences)      # every new word type of the batch at once
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
    the result is put under a ``TOP`` root (unless the decoded root already is ``TOP``).  The
    per-class tables are built once per ``class_labels`` list (see :class:`TreeBuilder`).
    """
    key = (id(class_labels), id(class_is_tag), root_label)
    hit = _BUILDERS.get(key)
    if hit is None or hit[0] is not class_labels or hit[1] is not class_is_tag:
        if len(_BUILDERS) > 64:
            _BUILDERS.clear()
        hit = (class_labels, class_is_tag, TreeBuilder(class_labels, class_is_tag, root_label))
        _BUILDERS[key] = hit
    return hit[2](nodes, words)


_BUILDERS: dict = {}


class TreeBuilder:
    """Trees from the decoders' preorder ``(start, end, class)`` nodes, in one pass.

    Equivalent to building the decoded tree, splicing out the intermediate ``@X`` nodes of the
    binarisation (their children take their place; an ``@X`` that got no child stays as an empty
    node), restoring collapsed unary chains (``A+B+C`` becomes ``A -> B -> C``; preterminals keep
    their label) and rooting the result at ``root_label``, but creates every node once: the
    labels, their chains and the tag flags of the classes are looked up in tables made here.
    This is the part of parsing that runs under the GIL after the kernels, so its cost per
    sentence bounds the speed-up across cores (docs/notes/throughput.md).
    """

    __slots__ = ("info", "root_label")

    def __init__(self, class_labels, class_is_tag, root_label="TOP"):
        self.root_label = root_label
        self.info = [(str(lab), bool(tag), str(lab).startswith("@"), tuple(str(lab).split("+")))
                     for lab, tag in zip(class_labels, class_is_tag)]

    def __call__(self, nodes, words) -> Tree:
        info = self.info
        top: list = []
        top_raw: list = []
        # entries: (children list new nodes go to, start, end, class info of a spliced @X
        #           or None, length of that list when the @X was opened)
        stack = [(top, -1, 1 << 62, None, 0)]
        rows = nodes.tolist() if hasattr(nodes, "tolist") else nodes
        for start, end, cl in rows:
            label, is_tag, inter, parts = info[cl]
            while True:
                entry = stack[-1]
                if entry[1] <= start and end <= entry[2]:
                    break
                stack.pop()
                if entry[3] is not None and len(entry[0]) == entry[4]:
                    _empty_node(entry, top, top_raw)
            attach = stack[-1][0]
            if is_tag and end - start == 1:
                attach.append(Tree(label, [words[start]]))
                if attach is top:
                    top_raw.append(label)
                continue
            if inter:
                stack.append((attach, start, end, info[cl], len(attach)))
                continue
            node = Tree(parts[0], [])
            attach.append(node)
            if attach is top:
                top_raw.append(label)
            for p in parts[1:]:
                child = Tree(p, [])
                node.children.append(child)
                node = child
            stack.append((node.children, start, end, None, 0))
        while len(stack) > 1:
            entry = stack.pop()
            if entry[3] is not None and len(entry[0]) == entry[4]:
                _empty_node(entry, top, top_raw)
        if len(top) == 1 and type(top[0]) is Tree and top_raw[0] == self.root_label:
            return top[0]
        return Tree(self.root_label, top)


def _empty_node(entry, top, top_raw):
    """An ``@X`` that received no child stays in the tree as an empty node (unary chain kept)."""
    label, _, _, parts = entry[3]
    node = Tree(parts[0], [])
    entry[0].append(node)
    if entry[0] is top:
        top_raw.append(label)
    for p in parts[1:]:
        child = Tree(p, [])
        node.children.append(child)
        node = child


def flat_tree(words, tags, label="S", root_label="TOP"):
    """Fallback tree for a sentence without a parse: one flat constituent over the tags."""
    return Tree(root_label, [Tree(label, [Tree(t, [w]) for w, t in zip(words, tags)])])


def marginals(grammar, words, tags=None, viterbi=False):
    """Dense inside/outside/marginal arrays of one sentence (see ``cky.chart_marginals``)."""
    from .._ext.cky import chart_marginals

    if not words:
        raise ValueError("empty sentence")
    grammar.lexicon.prefetch((words,))
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
