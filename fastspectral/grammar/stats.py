"""Mergeable treebank counts of the PCFG (the statistics protocol of :mod:`fastspectral.base`).

Everything the relative-frequency estimate of :class:`~fastspectral.grammar.grammar.Grammar` and
its :class:`~fastspectral.grammar.lexicon.Lexicon` read is a count keyed by *strings* (symbols,
words), so the counts of several partitions add up to the counts of their concatenation, and the
symbol table (sorted symbols), the vocabulary and the rare-word decisions (``rare_threshold``,
unknown-word signatures) are taken once, from the merged counts, in :meth:`GrammarCounts.grammar`.

:class:`~collections.Counter` keeps its keys in first-seen order and merging adds unseen keys at
the end, so counts merged in partition order list their keys exactly as counting the
concatenated treebank does: the lexicon's tables (and so the model file) come out identical to
``Grammar.from_trees`` on the whole treebank, and ties (the most frequent root label) are broken
the same way.

A token's unknown-word signature depends on its position only through "first word of the
sentence", so the lexical counts are keyed ``(tag, word, initial)``.
"""
from __future__ import annotations

import time
from collections import Counter

import numpy as np

from ..base import Statistics
from ..trees.transforms import base_label, prepare
from ..trees.tree import Tree
from .grammar import Grammar, check_trees, root_node
from .lexicon import Lexicon, signature

__all__ = ["GrammarCounts", "PCFGStatistics", "lexicon_from_counts", "pcfg_statistics",
           "pcfg_from_statistics"]


class GrammarCounts(Statistics):
    """Rule, root and lexical counts of binarised trees rooted at ``TOP`` (string keys).

    Attributes
    ----------
    root : Counter
        ``label -> count`` of the label under ``TOP``.
    binary : Counter
        ``(a, b, c) -> count`` of binary rules.
    unary : Counter
        ``(a, b) -> count`` of unary rules (not preterminal -> word).
    lhs : Counter
        ``a -> count`` of rule left-hand sides.
    lexical : Counter
        ``(tag, word, initial) -> count`` of tokens (``initial``: first word of its sentence).
    n_trees : int
        Trees counted.
    """

    def __init__(self):
        self.root = Counter()
        self.binary = Counter()
        self.unary = Counter()
        self.lhs = Counter()
        self.lexical = Counter()
        self.n_trees = 0

    def add_tree(self, t: Tree) -> None:
        """Count one binarised tree (the traversal of ``Grammar.from_trees``)."""
        top = root_node(t)
        self.root[top.label] += 1
        self.n_trees += 1
        position = 0
        stack = [top]
        lexical, binary, unary, lhs = self.lexical, self.binary, self.unary, self.lhs
        while stack:
            node = stack.pop()
            kids = node.children
            if len(kids) == 1 and isinstance(kids[0], str):
                lexical[(node.label, kids[0], position == 0)] += 1
                position += 1
                continue
            lhs[node.label] += 1
            if len(kids) == 2:
                binary[(node.label, kids[0].label, kids[1].label)] += 1
            elif len(kids) == 1:
                unary[(node.label, kids[0].label)] += 1
            else:
                raise ValueError(f"tree is not binarised: node {node.label} has "
                                 f"{len(kids)} children")
            stack.extend(reversed(kids))

    @classmethod
    def of_trees(cls, prepared_trees) -> "GrammarCounts":
        """The counts of binarised trees."""
        out = cls()
        for t in prepared_trees:
            out.add_tree(t)
        return out

    def mapped(self, fn) -> "GrammarCounts":
        """The counts with every symbol relabelled by ``fn`` (e.g. :func:`base_label`: the
        coarse grammar of the same tree shapes); first-seen order kept."""
        out = GrammarCounts()
        for k, c in self.root.items():
            out.root[fn(k)] += c
        for (a, b, c_), c in self.binary.items():
            out.binary[(fn(a), fn(b), fn(c_))] += c
        for (a, b), c in self.unary.items():
            out.unary[(fn(a), fn(b))] += c
        for k, c in self.lhs.items():
            out.lhs[fn(k)] += c
        for (t, w, i), c in self.lexical.items():
            out.lexical[(fn(t), w, i)] += c
        out.n_trees = self.n_trees
        return out

    @property
    def symbols(self) -> list:
        """The sorted symbol table of :meth:`grammar`."""
        tags = {t for (t, _, _) in self.lexical}
        return sorted(tags | set(self.lhs) | set(self.root))

    def word_counts(self) -> Counter:
        """``word -> count`` over every token (first-seen order)."""
        out = Counter()
        for (_, w, _), c in self.lexical.items():
            out[w] += c
        return out

    def grammar(self, lexicon_options=None) -> Grammar:
        """The relative-frequency :class:`Grammar` (the same as ``Grammar.from_trees`` on the
        counted trees)."""
        tags = {t for (t, _, _) in self.lexical}
        symbols = self.symbols
        idx = {s: i for i, s in enumerate(symbols)}
        S = len(symbols)
        is_pre = np.zeros(S, dtype=bool)
        is_pre[[idx[t] for t in tags]] = True
        root_prob = np.zeros(S)
        total = sum(self.root.values())
        for s, c in self.root.items():
            root_prob[idx[s]] = c / total
        lhs = self.lhs
        brules = sorted(self.binary.items())
        bin_parent = np.array([idx[a] for (a, _, _), _ in brules], dtype=np.int32)
        bin_left = np.array([idx[b] for (_, b, _), _ in brules], dtype=np.int32)
        bin_right = np.array([idx[c] for (_, _, c), _ in brules], dtype=np.int32)
        bin_prob = np.array([n / lhs[a] for (a, _, _), n in brules], dtype=np.float64)
        urules = sorted(self.unary.items())
        un_parent = np.array([idx[a] for (a, _), _ in urules], dtype=np.int32)
        un_child = np.array([idx[b] for (_, b), _ in urules], dtype=np.int32)
        un_prob = np.array([n / lhs[a] for (a, _), n in urules], dtype=np.float64)
        lex = lexicon_from_counts(self.lexical, idx, S, lexicon_options)
        return Grammar(symbols, is_pre, root_prob, bin_parent, bin_left, bin_right, bin_prob,
                       un_parent, un_child, un_prob, lex)

    def most_frequent_root(self) -> str:
        """The most frequent base label under ``TOP`` (``PCFG.root_label_``)."""
        c = Counter()
        for k, n in self.root.items():
            c[base_label(k)] += n
        return c.most_common(1)[0][0] if c else "S"


def lexicon_from_counts(lexical: Counter, idx: dict, n_symbols: int,
                        lexicon_options=None) -> Lexicon:
    """The :class:`Lexicon` of ``(tag, word, initial) -> count`` token counts (``idx``: symbol
    -> id): the tables ``Lexicon.fit`` builds from the tokens, in the same order."""
    lex = Lexicon(n_symbols, **(lexicon_options or {}))
    tag_word: dict = {}
    word_count: dict = {}
    tag_count: dict = {}
    n_tokens = 0
    for (t, w, _), c in lexical.items():
        key = (idx[t], w)
        tag_word[key] = tag_word.get(key, 0) + c
        word_count[w] = word_count.get(w, 0) + c
        tag_count[idx[t]] = tag_count.get(idx[t], 0) + c
        n_tokens += c
    lower_known = {w.lower() for w in word_count}
    rare_tag_sig: dict = {}
    rare_tag: dict = {}
    for (t, w, initial), c in lexical.items():
        if word_count[w] <= lex.rare_threshold:
            ti = idx[t]
            low = w.lower()
            key = (ti, signature(w, 0 if initial else 1, low in lower_known and low != w))
            rare_tag_sig[key] = rare_tag_sig.get(key, 0) + c
            rare_tag[ti] = rare_tag.get(ti, 0) + c
    lex._set_tables(tag_word, word_count, tag_count, n_tokens, rare_tag_sig, rare_tag)
    return lex


class PCFGStatistics(Statistics):
    """The statistics of :class:`~fastspectral.PCFG`: the counts of the fine trees and of the
    coarse (``v=1, h=0``) trees of coarse-to-fine pruning (None without pruning)."""

    _same = ("settings",)

    def __init__(self, settings: tuple, fine: GrammarCounts, coarse: GrammarCounts | None):
        self.settings = settings
        self.fine = fine
        self.coarse = coarse

    @property
    def n_trees(self) -> int:
        return self.fine.n_trees


def check_statistics(stats, cls, settings=None) -> None:
    """The checks of merged statistics before an estimate.

    Parameters
    ----------
    stats : Statistics
        The merged statistics.
    cls : type
        The class the pass expects.
    settings : tuple, optional
        The model's settings, which ``stats.settings`` must equal (None: not checked).

    Raises
    ------
    TypeError
        When ``stats`` is not a ``cls``.
    ValueError
        When ``stats`` was computed with other settings.
    """
    if not isinstance(stats, cls):
        raise TypeError(f"expected {cls.__name__}, got {type(stats).__name__}")
    if settings is not None and stats.settings != settings:
        raise ValueError(f"these statistics were computed with other settings "
                         f"({stats.settings} != {settings})")


def pcfg_statistics(model, trees) -> PCFGStatistics:
    """The :class:`PCFGStatistics` of a partition of raw (or cleaned) treebank trees."""
    model._validate_params()
    trees = check_trees(trees)
    fine = GrammarCounts()
    coarse = GrammarCounts() if model._uses_coarse else None
    for t in trees:
        fine.add_tree(prepare(t, model.v, model.h, model.tag_parent))
        if coarse is not None:
            coarse.add_tree(prepare(t, 1, 0, False))
    return PCFGStatistics(_pcfg_settings(model), fine, coarse)


def _pcfg_settings(model) -> tuple:
    return ("pcfg", model.v, model.h, bool(model.tag_parent), model._uses_coarse)


def pcfg_from_statistics(model, stats: PCFGStatistics):
    """Install in ``model`` the estimate of the merged ``stats`` (what ``fit`` sets); returns
    the model."""
    t0 = time.perf_counter()
    model._validate_params()
    check_statistics(stats, PCFGStatistics, _pcfg_settings(model))
    if stats.n_trees == 0:
        raise ValueError("cannot fit a PCFG on an empty treebank")
    opts = model.lexicon_options()
    model.grammar_ = stats.fine.grammar(opts)
    model.coarse_ = None if stats.coarse is None else stats.coarse.grammar(opts)
    if model.coarse_ is not None:
        model.proj_ = model._projection(model.grammar_, model.coarse_)
    model.root_label_ = stats.fine.most_frequent_root()
    model.n_train_trees_ = stats.n_trees
    model.fit_time_ = time.perf_counter() - t0
    return model
