"""An X-bar pre-pass in front of the L-PCFG parsers' coarse pass (a research harness, not part
of the package): coarser grammars for coarse-to-fine pruning (Petrov & Klein 2007, "Improved
inference for unlexicalized parsing"), projections of a PCFG's label set.

The L-PCFG parsers prune with their PCFG's ``v=1, h=0`` grammar, whose exhaustive inside-outside
(the dense CKY kernel) was a third of their parse time.  :func:`xbar_grammar` projects that
grammar further, to an X-bar-like grammar with two phrasal symbols (``P`` for every phrase,
``@P`` for every intermediate symbol of the binarisation) and the preterminals unchanged; it runs
first, exhaustively, and its posteriors mask the chart of the finer grammar, which then only
builds the (cell, symbol) pairs whose projection survives (``cky.prune_batch`` with
``coarse=``).  With two phrasal symbols only four binary rules have two phrasal children, so the
exhaustive pass over long spans costs little; rules with a preterminal child only apply next to
the one-word cells.

The projected rule probabilities are the expected-count-weighted averages of the finer ones
(``P(A' -> B' C') = sum_{A in A'} c(A) sum_{B in B', C in C'} P(A -> B C) / sum_{A in A'} c(A)``,
with ``c`` the expected number of nodes of each symbol in a tree of the grammar,
:func:`expected_counts`), so the coarse grammar is the projection of the finer one's tree
distribution up to the independence it cannot express.  Unary rules that project onto a self
loop (``P -> P``) are dropped: the grammar only prunes.

Result (docs/notes/throughput.md): on the dev split (section 22, sentences 1-400) the pre-pass saves
time only at ratios that change parses (ratio 1: +30 % sentences per CPU-s for Pivot+EM, 6 % of
the dev parses changed; <= 0.2: no gain), so the package parses without it.
:func:`with_xbar_prepass` gives a fitted L-PCFG parser whose coarse pass runs behind the X-bar
grammar, to repeat the measurement::

    import sys; sys.path.insert(0, "experiments")
    from xbar_prepass import with_xbar_prepass
    fast = with_xbar_prepass(model, ratio=1.0)     # model: a fitted L-PCFG parser
    trees = fast.parse(sentences)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fastspectral.grammar.chart import pack_lexical
from fastspectral.grammar.grammar import unary_closure
from fastspectral.trees.transforms import is_intermediate

__all__ = ["expected_counts", "xbar_projection", "xbar_grammar", "XBar", "xbar_posterior_prune",
           "with_xbar_prepass"]


def expected_counts(grammar) -> np.ndarray:
    """Expected number of nodes of every symbol in a tree drawn from ``grammar``:
    ``c = root + M^T c`` with ``M[A, B]`` the expected number of children ``B`` of an ``A``
    node.  For a relative-frequency grammar these are the training counts per tree.  Falls back
    to ones when the system is singular or gives a negative count (an improper grammar)."""
    S = grammar.n_symbols
    M = np.zeros((S, S))
    np.add.at(M, (grammar.bin_parent, grammar.bin_left), grammar.bin_prob)
    np.add.at(M, (grammar.bin_parent, grammar.bin_right), grammar.bin_prob)
    np.add.at(M, (grammar.un_parent, grammar.un_child), grammar.un_prob)
    try:
        c = np.linalg.solve(np.eye(S) - M.T, np.asarray(grammar.root_prob, dtype=np.float64))
    except np.linalg.LinAlgError:
        return np.ones(S)
    if not np.all(np.isfinite(c)) or np.any(c < -1e-9):
        return np.ones(S)
    return np.maximum(c, 0.0)


def xbar_projection(grammar):
    """``(labels, proj)``: the X-bar symbols (``P``, ``@P``, then the preterminals in their
    order) and the X-bar symbol of every symbol of ``grammar``."""
    labels = ["P", "@P"]
    proj = np.empty(grammar.n_symbols, dtype=np.int32)
    for a, s in enumerate(grammar.symbols):
        if grammar.is_preterminal[a]:
            proj[a] = len(labels)
            labels.append(s)
        else:
            proj[a] = 1 if is_intermediate(s) else 0
    return labels, proj


@dataclass
class XBar:
    """An X-bar projection of a grammar, compiled for the chart kernels."""

    labels: list
    proj: np.ndarray            # symbol of the finer grammar -> X-bar symbol
    chart: object               # cky.ChartGrammar (sum mode: unary closure)
    is_preterminal: np.ndarray


def xbar_grammar(grammar) -> XBar:
    """The X-bar grammar of ``grammar`` (see the module docstring), compiled."""
    from fastspectral._ext.cky import ChartGrammar

    labels, proj = xbar_projection(grammar)
    X = len(labels)
    c = expected_counts(grammar)
    cx = np.bincount(proj, weights=c, minlength=X)
    den = np.where(cx > 0, cx, 1.0)
    bp, bl, br = proj[grammar.bin_parent], proj[grammar.bin_left], proj[grammar.bin_right]
    w = c[grammar.bin_parent] * grammar.bin_prob
    key, inv = np.unique((bp.astype(np.int64) * X + bl) * X + br, return_inverse=True)
    bw = np.bincount(inv.ravel(), weights=w, minlength=key.shape[0])
    xp = (key // (X * X)).astype(np.int32)
    xl = ((key // X) % X).astype(np.int32)
    xr = (key % X).astype(np.int32)
    keep = bw > 0
    xp, xl, xr, xprob = xp[keep], xl[keep], xr[keep], (bw / den[xp])[keep]
    up, uc = proj[grammar.un_parent], proj[grammar.un_child]
    loop = up == uc
    uw = (c[grammar.un_parent] * grammar.un_prob)[~loop]
    ukey, uinv = np.unique(up[~loop].astype(np.int64) * X + uc[~loop], return_inverse=True)
    uws = np.bincount(uinv.ravel(), weights=uw, minlength=ukey.shape[0])
    upar = (ukey // X).astype(np.int32)
    uchi = (ukey % X).astype(np.int32)
    uprob = uws / den[upar]
    cu_p, cu_c, cu_w = unary_closure(upar, uchi, uprob, "sum")
    root = np.bincount(proj, weights=np.asarray(grammar.root_prob, dtype=np.float64),
                       minlength=X)
    is_pre = np.zeros(X, dtype=bool)
    is_pre[2:] = True
    chart = ChartGrammar(X, xp, xl, xr, xprob, cu_p, cu_c, cu_w, root,
                         np.arange(X, dtype=np.int32), is_pre.astype(np.uint8), X)
    return XBar(labels=labels, proj=proj, chart=chart, is_preterminal=is_pre)


def xbar_posterior_prune(grammar, sentences, threshold, xbar, xbar_threshold, tags=None, jobs=1):
    """:func:`fastspectral.grammar.chart.posterior_prune` behind the X-bar grammar ``xbar`` of
    ``grammar``: it runs first and only the (cell, symbol) pairs whose X-bar marginal is
    >= ``xbar_threshold`` are built.  Its preterminals are those of ``grammar``, so the lexical
    entries are the same with projected symbols."""
    from fastspectral._ext.cky import prune_batch

    for k, s in enumerate(sentences):
        if len(s) == 0:
            raise ValueError(f"sentence {k} is empty")
    lengths, offsets, pos, sym, prob = pack_lexical(grammar, sentences, tags)
    return prune_batch(grammar.chart_grammar("sum"), lengths, offsets, pos, sym, prob,
                       float(threshold), int(jobs), xbar.chart, xbar.proj, offsets, pos,
                       np.ascontiguousarray(xbar.proj[sym], dtype=np.int32), prob,
                       float(xbar_threshold))


def with_xbar_prepass(model, ratio: float = 1.0):
    """A shallow copy of the fitted L-PCFG parser ``model`` whose coarse pass keeps only the
    (cell, symbol) pairs whose X-bar posterior is at least ``ratio`` times the coarse threshold
    in use (``ratio`` 0: the X-bar pass runs, nothing is masked)."""
    import copy

    base = type(model)

    class XBarPrepass(base):
        def _xbar_grammar(self):
            coarse = self.pcfg_.coarse_
            hit = getattr(self, "_xbar", None)
            if hit is None or hit[0] is not coarse:
                hit = self._xbar = (coarse, xbar_grammar(coarse))
            return hit[1]

        def _coarse_chart_symbols(self):        # its dense chart lives beside the coarse one
            return super()._coarse_chart_symbols() + len(self._xbar_grammar().labels)

        def _coarse_items(self, sents, stags, jobs, coarse_threshold, tables):
            return xbar_posterior_prune(self.pcfg_.coarse_, sents, coarse_threshold,
                                        self._xbar_grammar(), coarse_threshold * float(ratio),
                                        stags, jobs)

    XBarPrepass.__name__ = XBarPrepass.__qualname__ = f"XBarPrepass{base.__name__}"
    out = copy.copy(model)
    out.__class__ = XBarPrepass
    return out
