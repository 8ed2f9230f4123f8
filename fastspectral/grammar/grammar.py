"""Symbol and rule tables of a PCFG, and their compiled chart form.

A :class:`Grammar` is the estimated model over *binarised* symbols (see
:mod:`fastspectral.trees.transforms`): root probabilities ``P(TOP -> A)``, binary rules
``A -> B C``, unary rules ``A -> B`` (after unary-chain collapsing these only rewrite to
preterminals) and a :class:`~fastspectral.grammar.lexicon.Lexicon`.  Rule probabilities are
relative frequencies ``c(A -> rhs) / c(A)``.

:func:`Grammar.chart_grammar` builds the :class:`fastspectral._ext.cky.ChartGrammar` the kernels
read: rules indexed by left child and by parent, the unary closure, and the projection of every
symbol onto its *class* (base label) used by max-recall decoding.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..trees.transforms import base_label, drop_empty_trees, is_intermediate
from ..trees.tree import Tree, as_tree
from .lexicon import Lexicon


def root_node(tree: Tree) -> Tree:
    """The node below ``TOP`` of a prepared (binarised) tree, or the tree itself when its
    label is not ``TOP``.

    Raises
    ------
    ValueError
        When ``TOP`` has not exactly one child node.
    """
    if tree.label == "TOP":
        if len(tree.children) != 1 or isinstance(tree.children[0], str):
            raise ValueError(f"prepared tree has a malformed TOP node: {tree}")
        return tree.children[0]
    return tree


def check_trees(trees) -> list:
    """The list of ``trees``, each checked to be a :class:`~fastspectral.trees.tree.Tree`.

    Parameters
    ----------
    trees : iterable
        Treebank trees (raw or cleaned); ``nltk.Tree`` objects are converted
        (:func:`~fastspectral.trees.tree.as_tree`).

    Returns
    -------
    list of Tree
        The trees, in order.

    Raises
    ------
    TypeError
        Naming the position of the first item that is not a tree.
    """
    trees = list(trees)
    for k, t in enumerate(trees):
        if not isinstance(t, Tree):
            t = trees[k] = as_tree(t)                # an nltk.Tree is converted
            if not isinstance(t, Tree):
                raise TypeError(f"tree {k} is a {type(t).__name__}, expected "
                                "fastspectral.trees.Tree or nltk.Tree")
    return trees


def training_trees(trees, model: str) -> list:
    """The trees a grammar learner fits on: ``trees`` checked (:func:`check_trees`), without
    the trees that have no word (:func:`~fastspectral.trees.transforms.drop_empty_trees`).

    Parameters
    ----------
    trees : iterable of Tree
        Treebank trees (raw or cleaned).
    model : str
        What is fitted, with its article, for the error messages (``"a PCFG"``).

    Returns
    -------
    list of Tree
        The trees with at least one word, in order.

    Raises
    ------
    ValueError
        When ``trees`` is empty, or no tree has a word.
    TypeError
        When an item is not a tree.
    """
    trees = list(trees)
    if not trees:
        raise ValueError(f"cannot fit {model} on an empty treebank")
    trees = drop_empty_trees(check_trees(trees))
    if not trees:
        raise ValueError(f"cannot fit {model}: no tree has a word (only -NONE- elements)")
    return trees


@dataclass
class Grammar:
    """Estimated PCFG over binarised symbols (ids index ``symbols``)."""

    symbols: list
    is_preterminal: np.ndarray
    root_prob: np.ndarray
    bin_parent: np.ndarray
    bin_left: np.ndarray
    bin_right: np.ndarray
    bin_prob: np.ndarray
    un_parent: np.ndarray
    un_child: np.ndarray
    un_prob: np.ndarray
    lexicon: Lexicon
    sym_index: dict = field(init=False)

    def __post_init__(self):
        self.sym_index = {s: i for i, s in enumerate(self.symbols)}
        self.classes = sorted({base_label(s) for s in self.symbols})
        cidx = {c: i for i, c in enumerate(self.classes)}
        self.sym_class = np.array([cidx[base_label(s)] for s in self.symbols], dtype=np.int32)
        self.class_is_intermediate = np.array([c.startswith("@") for c in self.classes], dtype=bool)
        tag_syms: dict[str, list[int]] = {}
        for i, s in enumerate(self.symbols):
            if self.is_preterminal[i]:
                tag_syms.setdefault(base_label(s), []).append(i)
        self.tag_symbols = {t: np.array(v, dtype=np.int32) for t, v in tag_syms.items()}
        self.class_is_tag = np.zeros(len(self.classes), dtype=bool)
        self.class_is_tag[self.sym_class[self.is_preterminal]] = True
        self.lexicon.set_punctuation(self.tag_symbols)
        self._chart = None

    @property
    def n_symbols(self) -> int:
        return len(self.symbols)

    def same_as(self, other: "Grammar") -> bool:
        """Whether ``other`` is the same PCFG: the same symbols in the same order, the same
        rules with the same probabilities (in any order), root probabilities and lexicon state
        (the L-PCFG parsers then skip a pass that would repeat another, see
        :mod:`fastspectral.lpcfg.latent`)."""
        if other is self:
            return True
        if list(self.symbols) != list(other.symbols) or \
                not np.array_equal(self.is_preterminal, other.is_preterminal) or \
                not np.array_equal(self.root_prob, other.root_prob):
            return False

        def rules(g):
            b = np.lexsort((g.bin_right, g.bin_left, g.bin_parent))
            u = np.lexsort((g.un_child, g.un_parent))
            return [np.asarray(g.bin_parent)[b], np.asarray(g.bin_left)[b],
                    np.asarray(g.bin_right)[b], np.asarray(g.bin_prob)[b],
                    np.asarray(g.un_parent)[u], np.asarray(g.un_child)[u],
                    np.asarray(g.un_prob)[u]]

        if not all(a.shape == b.shape and np.array_equal(a, b)
                   for a, b in zip(rules(self), rules(other))):
            return False
        ma, aa = self.lexicon.to_state()
        mb, ab = other.lexicon.to_state()
        return ma == mb and aa.keys() == ab.keys() and \
            all(np.array_equal(aa[k], ab[k]) for k in aa)

    @property
    def n_binary(self) -> int:
        return int(self.bin_parent.shape[0])

    # -- estimation ----------------------------------------------------------------------------
    @classmethod
    def from_trees(cls, prepared_trees, lexicon_options=None) -> "Grammar":
        """Relative-frequency estimate from binarised trees rooted at ``TOP``."""
        # the keys of every count are collected in lists and counted once (Counter of a list
        # counts in C; an increment per node costs a Python dict round trip)
        roots, lhs_keys, bin_keys, un_keys = [], [], [], []
        lex_words, lex_pos, lex_tags = [], [], []
        lhs_app, bin_app, un_app = lhs_keys.append, bin_keys.append, un_keys.append
        w_app, p_app, t_app = lex_words.append, lex_pos.append, lex_tags.append
        for t in prepared_trees:
            top = root_node(t)
            roots.append(top.label)
            position = 0
            stack = [top]
            pop, push = stack.pop, stack.append
            while stack:
                node = pop()
                kids = node.children
                if len(kids) == 1 and isinstance(kids[0], str):
                    w_app(kids[0])
                    p_app(position)
                    t_app(node.label)
                    position += 1
                    continue
                lab = node.label
                lhs_app(lab)
                if len(kids) == 2:
                    left, right = kids
                    bin_app((lab, left.label, right.label))
                    push(right)
                    push(left)
                elif len(kids) == 1:
                    un_app((lab, kids[0].label))
                    push(kids[0])
                else:
                    raise ValueError(f"tree is not binarised: node {lab} has "
                                     f"{len(kids)} children")
        root = Counter(roots)
        lhs = Counter(lhs_keys)
        binary = Counter(bin_keys)
        unary = Counter(un_keys)
        tags = set(lex_tags)
        nonterminals = set(lhs)
        symbols = sorted(tags | nonterminals | set(root))
        idx = {s: i for i, s in enumerate(symbols)}
        S = len(symbols)
        is_pre = np.zeros(S, dtype=bool)
        is_pre[[idx[t] for t in tags]] = True
        root_prob = np.zeros(S)
        total = sum(root.values())
        for s, c in root.items():
            root_prob[idx[s]] = c / total

        def arr(rows, k):
            return np.array([r[k] for r in rows], dtype=np.int32)

        brules = sorted(binary.items())
        bin_parent = np.array([idx[a] for (a, _, _), _ in brules], dtype=np.int32)
        bin_left = np.array([idx[b] for (_, b, _), _ in brules], dtype=np.int32)
        bin_right = np.array([idx[c] for (_, _, c), _ in brules], dtype=np.int32)
        bin_prob = np.array([n / lhs[a] for (a, _, _), n in brules], dtype=np.float64)
        urules = sorted(unary.items())
        un_parent = np.array([idx[a] for (a, _), _ in urules], dtype=np.int32)
        un_child = np.array([idx[b] for (_, b), _ in urules], dtype=np.int32)
        un_prob = np.array([n / lhs[a] for (a, _), n in urules], dtype=np.float64)
        lex = Lexicon(S, **(lexicon_options or {}))
        lex.fit(lex_words, lex_pos, [idx[t] for t in lex_tags])
        return cls(symbols, is_pre, root_prob, bin_parent, bin_left, bin_right, bin_prob,
                   un_parent, un_child, un_prob, lex)

    # -- compiled form -------------------------------------------------------------------------
    def unary_closure(self, mode: str = "sum"):
        """(parent, child, weight) rules of U* - I (sum) or of the max-product closure (max):
        :func:`unary_closure` of this grammar's unary rules."""
        return unary_closure(self.un_parent, self.un_child, self.un_prob, mode)

    def chart_grammar(self, mode: str = "sum"):
        """The compiled rule index for the kernels (cached per mode)."""
        from .._ext.cky import ChartGrammar

        if self._chart is None:
            self._chart = {}
        if mode not in self._chart:
            up, uc, uw = self.unary_closure(mode)
            self._chart[mode] = ChartGrammar(
                self.n_symbols, self.bin_parent, self.bin_left, self.bin_right, self.bin_prob,
                up, uc, uw, self.root_prob, self.sym_class, self.is_preterminal.astype(np.uint8),
                len(self.classes))
        return self._chart[mode]

    # -- serialisation -------------------------------------------------------------------------
    def to_state(self, prefix: str = ""):
        lmeta, larr = self.lexicon.to_state()
        meta = {"symbols": list(self.symbols), "lexicon": lmeta}
        arrays = {
            "is_preterminal": self.is_preterminal.astype(np.uint8), "root_prob": self.root_prob,
            "bin_parent": self.bin_parent, "bin_left": self.bin_left, "bin_right": self.bin_right,
            "bin_prob": self.bin_prob, "un_parent": self.un_parent, "un_child": self.un_child,
            "un_prob": self.un_prob, **larr}
        return meta, {prefix + k: v for k, v in arrays.items()}

    @classmethod
    def from_state(cls, meta, arrays, prefix: str = ""):
        """The grammar of a :meth:`to_state` pair (arrays named ``prefix + name``), every array
        validated first (:mod:`fastspectral.io.validate`: dtypes, shapes, symbol ids in range,
        probabilities finite and >= 0); :class:`~fastspectral.errors.ModelFileError` naming the
        array otherwise."""
        from ..errors import ModelFileError
        from ..io import validate as V

        if not isinstance(meta, dict):
            raise ModelFileError(f"{prefix}grammar: no grammar description")
        symbols = V.meta_list(meta, "symbols", str, where=f"{prefix}grammar")
        S = len(symbols)
        if S == 0:
            raise ModelFileError(f"{prefix}grammar: no symbols")
        a = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}

        def sym(name, n=None):
            x = V.get(arrays, prefix + name, "int", shape=None if n is None else (n,),
                      dtype=np.int32)
            return V.check_index(x, prefix + name, 0, S)

        def prob(name, n):
            x = V.get(arrays, prefix + name, "float", shape=(n,), dtype=np.float64)
            return V.check_nonneg(x, prefix + name)

        is_pre = V.get(arrays, prefix + "is_preterminal", "bool", shape=(S,)).astype(bool)
        root = prob("root_prob", S)
        bp = sym("bin_parent")
        nb = bp.shape[0]
        bl, br, bpr = sym("bin_left", nb), sym("bin_right", nb), prob("bin_prob", nb)
        up = sym("un_parent")
        nu = up.shape[0]
        uc, upr = sym("un_child", nu), prob("un_prob", nu)
        lex = Lexicon.from_state(meta.get("lexicon"), a, n_symbols=S, prefix=prefix)
        return cls(list(symbols), is_pre, root, bp, bl, br, bpr, up, uc, upr, lex)

    def summary(self) -> dict:
        return {"symbols": self.n_symbols, "preterminals": int(self.is_preterminal.sum()),
                "binary_rules": self.n_binary, "unary_rules": int(self.un_parent.shape[0]),
                "vocabulary": self.lexicon.vocab_size,
                "intermediate_symbols": sum(is_intermediate(s) for s in self.symbols)}


def unary_closure(un_parent, un_child, un_prob, mode: str = "sum"):
    """(parent, child, weight) rules of U* - I (sum) or of the max-product closure (max).

    ``U*`` sums over unary chains of any length: ``(I - U)^-1``, computed densely on the
    symbols that take part in unary rules.  In max mode a chain longer than one step keeps
    only its score (the Viterbi decoder then outputs its two ends).
    """
    un_parent = np.asarray(un_parent)
    un_child = np.asarray(un_child)
    if un_parent.size == 0:
        e = np.zeros(0, dtype=np.int32)
        return e, e, np.zeros(0)
    involved = np.unique(np.concatenate([un_parent, un_child]))
    pos = {int(s): i for i, s in enumerate(involved)}
    k = len(involved)
    U = np.zeros((k, k))
    for a, b, p in zip(un_parent, un_child, un_prob):
        U[pos[int(a)], pos[int(b)]] += p
    if np.abs(U @ U).max() == 0.0:      # chains of one step (the collapsed-unary case)
        C = U
    elif mode == "sum":
        C = np.linalg.inv(np.eye(k) - U) - np.eye(k)
    else:                               # max-product closure by relaxation
        C = U.copy()
        for _ in range(k):
            nxt = C.copy()
            for b in range(k):          # best chain a ->* b -> c, column by column
                np.maximum(nxt, C[:, b:b + 1] * U[b:b + 1, :], out=nxt)
            if np.allclose(nxt, C):
                break
            C = nxt
    np.fill_diagonal(C, 0.0)
    pa, ch = np.nonzero(C > 0)
    return involved[pa].astype(np.int32), involved[ch].astype(np.int32), C[pa, ch]
