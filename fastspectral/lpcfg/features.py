"""Node tables and sparse inside/outside feature matrices for spectral L-PCFG learning.

:func:`extract_nodes` flattens binarised training trees (rooted at ``TOP``; the ``TOP`` node itself
is not an L-PCFG node) into :class:`NodeData` arrays over the PCFG's symbol and rule ids.
A *feature function* maps a :class:`NodeData` to two int64 key arrays ``(n_nodes, K)`` (0 = no
feature); the default, :func:`default_feature_keys`, is the compiled tree-fragment extractor
:func:`fastspectral._ext.lpcfg_features.node_feature_keys` (templates listed there).  The feature
set is pluggable: pass any such function as ``SpectralLPCFG(features=...)``.

:func:`feature_matrices` turns the keys into per-label scaled one-hot CSR matrices directly
(a key sort, a radix sort by label and run-length ids; no dense intermediate): feature ``f``
of label ``a`` seen ``count(f)`` times among the ``M_a`` nodes of ``a`` gets the value
``sqrt(M_a / (count(f) + kappa))``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


__all__ = ["NodeData", "extract_nodes", "default_feature_keys", "feature_matrices", "word_class",
           "nodes_by_rule"]


@dataclass
class NodeData:
    """All nodes of a treebank (TOP excluded), trees concatenated, each in preorder.

    ``label`` symbol id; ``parent``/``left``/``right`` global node indices (-1 none; a unary node
    has only ``left``); ``side`` 0 left child, 1 right child, 2 unary child, 3 root; ``start``/``end``
    token span (end exclusive, tree-local); ``tree`` tree index; ``rule`` binary rule id or -1;
    ``urule`` unary rule id or -1; ``word`` training-vocabulary id at preterminals, else -1;
    ``code`` the rule code used by the feature templates; ``lexclass`` word-shape class at
    preterminals, else -1; ``tags`` preterminal symbol of every token, ``tok_off``/``tree_len`` per
    tree; ``vocab`` the word list indexed by ``word``; ``word_count`` training count per word.
    """

    label: np.ndarray
    parent: np.ndarray
    left: np.ndarray
    right: np.ndarray
    side: np.ndarray
    start: np.ndarray
    end: np.ndarray
    tree: np.ndarray
    rule: np.ndarray
    urule: np.ndarray
    word: np.ndarray
    code: np.ndarray
    lexclass: np.ndarray
    tags: np.ndarray
    tok_off: np.ndarray
    tree_len: np.ndarray
    vocab: list
    word_count: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.label.shape[0])


def word_class(word: str) -> str:
    """Coarse shape class of a word (suffix, capitalisation, digits, dashes) for lexical features."""
    low = word.lower()
    return "%s|%d%d%d" % (low[-2:], word[:1].isupper(), any(c.isdigit() for c in word),
                         "-" in word)


def _rule_lookup(keys_sorted: np.ndarray, query: np.ndarray, what: str) -> np.ndarray:
    pos = np.searchsorted(keys_sorted, query)
    pos = np.minimum(pos, max(len(keys_sorted) - 1, 0))
    if len(keys_sorted) == 0 or np.any(keys_sorted[pos] != query):
        raise ValueError(f"a training tree uses a {what} rule that is not in the grammar")
    return pos.astype(np.int32)


def _flatten(prepared_trees, sym):
    """One preorder pass over all trees (the ``TOP`` node skipped): per node its symbol id,
    span, global parent index and number of children; the words; the nodes and tokens of every
    tree.  The layout of :meth:`~fastspectral.trees.tree.TreeArrays.from_tree`, with node
    indices global, built in one loop instead of one array set per tree."""
    labels, starts, ends, parents, nch, words, n_nodes, n_words = [], [], [], [], [], [], [], []
    lab_app, st_app, en_app, par_app, nch_app, w_app = (labels.append, starts.append,
                                                        ends.append, parents.append,
                                                        nch.append, words.append)
    for t in prepared_trees:
        top = t.children[0] if (t.label == "TOP" and len(t.children) == 1) else t
        first = len(labels)
        pos = 0
        stack = [(top, -1)]
        pop, push = stack.pop, stack.append
        while stack:
            x, par = pop()
            if type(x) is int:          # close marker of node x
                ends[x] = pos
                continue
            i = len(labels)
            lab_app(sym[x.label])
            st_app(pos)
            par_app(par)
            ch = x.children
            if len(ch) == 1 and type(ch[0]) is str:
                w_app(ch[0])
                pos += 1
                en_app(pos)
                nch_app(0)
                continue
            if not ch:
                raise ValueError(f"node {x.label!r} has no children")
            en_app(-1)
            nch_app(len(ch))
            push((i, None))
            for c in reversed(ch):
                if type(c) is str:
                    raise ValueError(f"node {x.label!r} mixes words and subtrees")
                push((c, i))
        n_nodes.append(len(labels) - first)
        n_words.append(pos)
    return labels, starts, ends, parents, nch, words, n_nodes, n_words


def extract_nodes(prepared_trees, grammar) -> NodeData:
    """Flatten binarised trees (rooted at TOP) into :class:`NodeData` over ``grammar``'s ids."""
    labels, starts, ends, parents, nch, words, n_nodes, n_words = _flatten(prepared_trees,
                                                                           grammar.sym_index)
    n_per = np.array(n_nodes, dtype=np.int64)
    tree_len = np.array(n_words, dtype=np.int32)
    tok_off = np.zeros(len(n_words) + 1, dtype=np.int64)
    np.cumsum(tree_len, out=tok_off[1:])
    label = np.array(labels, dtype=np.int32)
    start = np.array(starts, dtype=np.int32)
    end = np.array(ends, dtype=np.int32)
    nch = np.array(nch, dtype=np.int32)
    tree = np.repeat(np.arange(len(n_nodes), dtype=np.int32), n_per)
    parent = np.array(parents, dtype=np.int32)
    N = label.shape[0]
    idx = np.arange(N, dtype=np.int32)
    has_p = parent >= 0
    left = np.full(N, -1, dtype=np.int32)
    right = np.full(N, -1, dtype=np.int32)
    first = has_p & (idx == parent + 1)
    left[parent[first]] = idx[first]
    second = has_p & ~first
    right[parent[second]] = idx[second]
    if np.any(nch > 2):
        raise ValueError("training trees must be binarised (a node has more than two children)")
    side = np.full(N, 3, dtype=np.int32)
    side[first] = 0
    side[second] = 1
    side[has_p & (nch[np.maximum(parent, 0)] == 1)] = 2
    S = len(grammar.symbols)
    R = int(grammar.bin_parent.shape[0])
    U = int(grammar.un_parent.shape[0])
    rule = np.full(N, -1, dtype=np.int32)
    urule = np.full(N, -1, dtype=np.int32)
    b = np.flatnonzero(nch == 2)
    if b.size:
        bkeys = (grammar.bin_parent.astype(np.int64) * S + grammar.bin_left) * S + grammar.bin_right
        order = np.argsort(bkeys)
        q = (label[b].astype(np.int64) * S + label[left[b]]) * S + label[right[b]]
        rule[b] = order[_rule_lookup(bkeys[order], q, "binary")]
    u = np.flatnonzero(nch == 1)
    if u.size:
        ukeys = grammar.un_parent.astype(np.int64) * S + grammar.un_child
        order = np.argsort(ukeys)
        q = label[u].astype(np.int64) * S + label[left[u]]
        urule[u] = order[_rule_lookup(ukeys[order], q, "unary")]
    pre = np.flatnonzero(nch == 0)
    # the sorted vocabulary (code-point order, as numpy.unique of the strings), ids by a dict
    vocab = sorted(set(words))
    widx = {w: i for i, w in enumerate(vocab)}
    winv = np.array([widx[w] for w in words], dtype=np.int64)
    wcount = np.bincount(winv, minlength=len(vocab))
    word = np.full(N, -1, dtype=np.int32)
    word[pre] = winv
    classes = {}
    vclass = np.array([classes.setdefault(word_class(w), len(classes)) for w in vocab],
                      dtype=np.int64)
    lexclass = np.full(N, -1, dtype=np.int64)
    lexclass[pre] = vclass[winv]
    code = np.where(rule >= 0, rule.astype(np.int64), 0)
    code[u] = R + urule[u].astype(np.int64)
    code[pre] = R + U + word[pre].astype(np.int64)
    tags = label[pre].astype(np.int32)
    return NodeData(label=label, parent=parent, left=left, right=right, side=side, start=start,
                    end=end, tree=tree, rule=rule, urule=urule, word=word, code=code,
                    lexclass=lexclass, tags=tags, tok_off=tok_off[:-1].copy(), tree_len=tree_len,
                    vocab=list(vocab), word_count=wcount.astype(np.int64))


def nodes_by_rule(rule: np.ndarray, n_rules: int):
    """The nodes that use each rule, grouped by rule.

    Parameters
    ----------
    rule : numpy.ndarray
        Per node its rule id (``NodeData.rule`` or ``NodeData.urule``; -1: none).
    n_rules : int
        Number of rules.

    Returns
    -------
    count : numpy.ndarray
        Nodes of every rule.
    order : numpy.ndarray
        The ids of the nodes with a rule, by rule (in node order within a rule).
    ptr : numpy.ndarray
        Offsets (int64, ``n_rules + 1``): the nodes of rule ``r`` are
        ``order[ptr[r]:ptr[r + 1]]``.

    Examples
    --------
    >>> count, order, ptr = nodes_by_rule(np.array([1, -1, 0, 1]), 3)
    >>> count.tolist(), order.tolist(), ptr.tolist()
    ([1, 2, 0], [2, 0, 3], [0, 1, 3, 3])
    """
    sel = np.flatnonzero(rule >= 0)
    count = np.bincount(rule[sel], minlength=n_rules)
    order = sel[np.argsort(rule[sel], kind="stable")]
    ptr = np.zeros(n_rules + 1, dtype=np.int64)
    np.cumsum(count, out=ptr[1:])
    return count, order, ptr


def default_feature_keys(nodes: NodeData):
    """The default tree-fragment features (compiled; see :mod:`fastspectral._ext.lpcfg_features`)."""
    from .._ext.lpcfg_features import node_feature_keys

    return node_feature_keys(nodes.parent, nodes.left, nodes.right, nodes.side, nodes.code,
                             nodes.lexclass, nodes.start, nodes.end, nodes.tree, nodes.tok_off,
                             nodes.tree_len, nodes.tags)


def feature_matrices(keys: np.ndarray, label: np.ndarray, n_symbols: int, kappa: float):
    """Scaled one-hot CSR features, rows in label-sorted node order.

    Returns ``(X, row_ptr, col_ptr, node_order, rowpos)``: ``X`` is a CSR matrix whose rows are
    the nodes sorted by label (stable) and whose columns are the features of all labels, label by
    label; the rows of label ``a`` are ``row_ptr[a]:row_ptr[a+1]`` and its features
    ``col_ptr[a]:col_ptr[a+1]``; ``node_order[r]`` is the node of row ``r`` and ``rowpos`` its
    inverse (the row of each node).
    """
    keys = np.asarray(keys, dtype=np.int64)
    N, K = keys.shape
    label = np.asarray(label)
    counts = np.bincount(label, minlength=n_symbols).astype(np.int64)
    row_ptr = np.zeros(n_symbols + 1, dtype=np.int64)
    np.cumsum(counts, out=row_ptr[1:])
    # labels as a 16-bit integer where they fit: NumPy's stable sort is then a radix sort
    small = np.int16 if n_symbols <= np.iinfo(np.int16).max else np.int32
    node_order = np.argsort(label.astype(small), kind="stable")
    rowpos = np.empty(N, dtype=np.int64)
    rowpos[node_order] = np.arange(N)
    # the entries in row order, each row's keys sorted: within a row (one label) the feature
    # ids grow with the keys, so this is the CSR order (row, feature id)
    kr = np.sort(keys[node_order], axis=1)
    keep = kr != 0
    per_row = keep.sum(1)
    flat = kr[keep]
    lab = np.repeat(label[node_order].astype(small), per_row)
    # feature ids: ranks of the distinct (label, key) pairs; sorted by key, then stably by label
    o = np.argsort(flat)
    o = o[np.argsort(lab[o], kind="stable")]
    fs, ls = flat[o], lab[o]
    new = np.ones(fs.shape[0], dtype=bool)
    new[1:] = (fs[1:] != fs[:-1]) | (ls[1:] != ls[:-1])
    fid_sorted = np.cumsum(new) - 1
    n_feat = int(fid_sorted[-1] + 1) if fid_sorted.size else 0
    feat_label = ls[new].astype(np.int64)
    col_ptr = np.searchsorted(feat_label, np.arange(n_symbols + 1)).astype(np.int64)
    fcount = np.bincount(fid_sorted, minlength=n_feat).astype(np.float64)
    scale = np.sqrt(counts[feat_label] / (fcount + kappa))
    fid = np.empty(fs.shape[0], dtype=np.int64)
    fid[o] = fid_sorted
    indptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(per_row, out=indptr[1:])
    import scipy.sparse as sp     # here: parsing with a loaded model needs no SciPy

    X = sp.csr_matrix((scale[fid], fid, indptr), shape=(N, n_feat))
    return X, row_ptr, col_ptr, node_order, rowpos
