"""Pivot (anchor) learning of L-PCFGs: Cohen & Collins (ACL 2014), figure 1 and section 6.

Kept as one module (about 970 lines): the pivot learner of figure 1 step by step, its
counts and its partitioned passes; the E and M kernels it shares with EM are in
:mod:`fastspectral.lpcfg.latent_params`.

Unlike the spectral learner this returns genuine, non-negative, normalised L-PCFG parameters (so
they can initialise EM: ``EMLPCFG(init="pivot")``, "Pivot+EM").

Algorithm (per fitted treebank; symbols, rules, state counts and lexical classes exactly as in
:mod:`fastspectral.lpcfg.latent_params`):

1. **Matrix decomposition** (step 1 of figure 1).  For every non-terminal ``a`` with ``m_a > 1``
   the co-occurrence counts ``Q^a[f, g]`` of an inside feature ``f`` and an outside feature ``g``
   over the training nodes labelled ``a`` (tree-fragment features of
   :mod:`fastspectral.lpcfg.features`; ``feature_pairs`` chooses the inside / outside
   templates; the inside feature of a pre-terminal is always its word) go through MDP 1 (:func:`fastspectral.linalg.mdp1`: CCA, FastAnchorWords,
   Frank-Wolfe on the simplex, then the concave EM of eq. 3 for ``t(h' | h)``), giving
   ``r(f | h, a)`` and, with the two numberings reconciled,
   ``s(g | h, a) = sum_h' t(h' | h) s'(g | h', a)``.  Only features seen at least
   ``anchor_min_count`` times may be anchors.  When ``a`` has fewer candidate rows or columns than
   ``m_a``, the missing states get the marginals ``p(f | a)`` / ``p(g | a)`` as ``r`` / ``s``.
   Several feature pairs (section 6.2) are aligned to the first pair's numbering of the states by
   a maximum-weight matching of their per-node posteriors.
2. **Convex EM** (step 2, eq. 1).  For every binary rule ``a -> b c`` the distribution
   ``t(h1, h2, h3 | a -> b c)`` maximises
   ``sum_pairs sum_{g, f2, f3} p^(g, f2, f3 | a -> b c) log sum_h t(h) s(g | h1, a) r(f2 | h2, b)
   r(f3 | h3, c)``: a mixture with fixed components, concave in ``t``, solved by EM from the
   uniform distribution (compiled with Numba, parallel over rules, ``mixture_iterations`` at most,
   stopping when the per-node gain falls below ``mixture_tol``).  Unary rules ``a -> p`` (matrices),
   lexical classes ``p -> k`` (``p(h | p -> k)`` from the outside evidence alone) and roots
   (``p(h | a at the root)`` from the inside evidence alone) are the same problem with fewer
   factors.
3. **Normalisation and recovery of pi, q** (step 3, section 6.1).  With ``c(rule)`` the rule
   counts, the pseudo-counts ``c(rule) t(h1, h2, h3 | rule)`` are normalised per ``(a, h1)``:
   ``t(a -> b c, h2, h3 | a, h1) = P(a -> b c | a) t(h1, h2, h3 | a -> b c) / p(h1 | a)`` with
   ``p(h1 | a) = sum_rules P(rule | a) p(h1 | rule)``, likewise for unary rules and emissions
   ``q(k | p, h)``, and ``pi(a, h) = P(root = a) p(h | a at the root)``.

Statistics.  Everything the three steps read from the treebank is in :class:`PivotCounts`
(:func:`pivot_counts`): integer counts of node types (symbol and the inside / outside feature
keys of every pair: ``Q^a`` and the alignment of step 1) and of the evidence items of step 2.
``fit`` estimates from the counts of the whole treebank; learning from partitions
(:mod:`fastspectral.lpcfg.stats`) from the merged counts of the partitions, which are the same
integers: the same model, bit for bit.

Parsing is that of every L-PCFG (:class:`~fastspectral.lpcfg.latent.LatentPCFGBase`:
coarse-to-fine, compiled tensor inside-outside, max-recall).
"""
from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp
from .._jit import njit, prange

from .._blas import blas_single_thread
from ..base import Interval, Statistics
from .latent import ProbabilisticLPCFGBase, resolve_random_state
from .latent_params import (LatentLayout, LatentParams, latent_arrays, m_step, model_layout,
                            set_threads, uniform_counts)

__all__ = ["PivotLPCFG", "PivotEstimate", "PivotCounts", "PivotContext", "MixtureEM",
           "SymbolDecomposition", "group_mixture_em", "pivot_counts", "pivot_estimate",
           "pivot_statistics", "symbol_decomposition"]


@dataclass
class MixtureEM:
    """Result of :func:`group_mixture_em`.

    Attributes
    ----------
    t : numpy.ndarray
        The distributions of all groups, flat (group ``g`` at ``t[toff[g]:toff[g+1]]``).
    toff : numpy.ndarray
        Offsets of the groups in ``t``.
    loglik : numpy.ndarray
        Final per-item (weighted mean) log-likelihood of every group.
    iters : numpy.ndarray
        EM iterations run per group.
    """

    t: np.ndarray
    toff: np.ndarray
    loglik: np.ndarray
    iters: np.ndarray


@dataclass
class SymbolDecomposition:
    """Result of :func:`symbol_decomposition`: ``r(f | h)``, ``s(g | h)`` and the number ``k``
    of anchored states."""

    r: np.ndarray
    s: np.ndarray
    k: int


@dataclass
class PivotEstimate:
    """What the pivot method estimates on a treebank layout.

    Attributes
    ----------
    params : LatentParams
        The normalised L-PCFG parameters.
    anchored_states : dict
        Per symbol id with ``m_a > 1``: the number of states anchored in step 1.
    mixture_iterations : numpy.ndarray
        Convex-EM iterations run for every binary rule (step 2).
    decomposition_seconds : float
        Seconds of step 1 (the matrix decompositions).
    seconds : float
        Seconds of the whole estimation.
    """

    params: LatentParams
    anchored_states: dict
    mixture_iterations: np.ndarray
    decomposition_seconds: float
    seconds: float


@njit(parallel=True, fastmath=True, cache=True)
def _group_em(order, gptr, run, e1, e2, e3, gm1, gm2, gm3, weight, E, toff, T, max_iter, tol,
              loglik, iters):  # pragma: no cover - numba
    """Per group ``g``: maximise ``sum_k w_k log sum_h T[h1,h2,h3] E1_k[h1] E2_k[h2] E3_k[h3]``
    over the simplex by EM (from uniform): the convex problem of step 2 of Cohen & Collins
    (2014), eq. 1, with ``E1 = s(g | h1, a)``, ``E2 = r(f2 | h2, b)``, ``E3 = r(f3 | h3, c)``.

    Items ``gptr[g]:gptr[g+1]`` hold evidence offsets, sorted by ``e1``; ``run[k]`` numbers the
    distinct ``e1`` values within the group.  Items sharing ``E1`` share ``V_u = E1_u . T`` (an
    ``m2 x m3`` matrix, one GEMM for all of them) and their updates are summed into ``M_u``
    before ``acc = E1^T M`` (a second GEMM): ``U m1 m2 m3 + K m2 m3`` work per iteration instead
    of ``K m1 m2 m3``.  Groups run in the given ``order`` (largest first)."""
    G = order.shape[0]
    for gi in prange(G):
        g = order[gi]
        k0 = gptr[g]
        K = gptr[g + 1] - k0
        m1 = gm1[g]
        m2 = gm2[g]
        m3 = gm3[g]
        m23 = m2 * m3
        size = m1 * m23
        base = toff[g]
        Tm = np.full((m1, m23), 1.0 / size)
        if K == 0:
            for i in range(size):
                T[base + i] = 1.0 / size
            iters[g] = 0
            continue
        U = run[k0 + K - 1] + 1
        E1u = np.empty((U, m1))
        wsum = 0.0
        for k in range(K):
            o1 = e1[k0 + k]
            for h1 in range(m1):
                E1u[run[k0 + k], h1] = E[o1 + h1]
            wsum += weight[k0 + k]
        E1t = np.ascontiguousarray(E1u.T)
        M = np.empty((U, m23))
        prev = -np.inf
        it = 0
        ll = 0.0
        while it < max_iter:
            V = np.dot(E1u, Tm)                          # [U, m2 m3]
            M[:, :] = 0.0
            ll = 0.0
            for k in range(K):
                u = run[k0 + k]
                o2 = e2[k0 + k]
                o3 = e3[k0 + k]
                z = 0.0
                for h2 in range(m2):
                    x2 = E[o2 + h2]
                    if x2 == 0.0:
                        continue
                    inner = 0.0
                    for h3 in range(m3):
                        inner += V[u, h2 * m3 + h3] * E[o3 + h3]
                    z += x2 * inner
                if not (z > 0.0):
                    continue
                wk = weight[k0 + k]
                ll += wk * math.log(z)
                wz = wk / z
                for h2 in range(m2):
                    x2 = wz * E[o2 + h2]
                    if x2 == 0.0:
                        continue
                    for h3 in range(m3):
                        M[u, h2 * m3 + h3] += x2 * E[o3 + h3]
            acc = np.dot(E1t, M)                         # [m1, m2 m3]
            tot = 0.0
            for i in range(m1):
                for j in range(m23):
                    acc[i, j] *= Tm[i, j]
                    tot += acc[i, j]
            if tot > 0.0:
                for i in range(m1):
                    for j in range(m23):
                        Tm[i, j] = acc[i, j] / tot
            it += 1
            ll /= wsum
            if ll - prev <= tol:
                break
            prev = ll
        for i in range(m1):
            for j in range(m23):
                T[base + i * m23 + j] = Tm[i, j]
        loglik[g] = ll
        iters[g] = it


def group_mixture_em(items_group, e1, e2, e3, m1, m2, m3, E, weight=None, max_iter=50, tol=1e-6,
                     jobs=None):
    """Mixture-weight EM for many independent groups at once (compiled, parallel over groups).

    Group ``g`` has components of shape ``(m1[g], m2[g], m3[g])``; item ``k`` belongs to group
    ``items_group[k]`` (0..G-1) and reads its three evidence vectors from the flat array ``E``
    at offsets ``e1[k]``, ``e2[k]``, ``e3[k]``.  Maximises, per group,
    ``sum_k weight_k log sum_h t(h1, h2, h3) E1_k(h1) E2_k(h2) E3_k(h3)`` over the simplex
    (concave), starting from uniform (Cohen & Collins 2014, eq. 1).  Returns a
    :class:`MixtureEM`: group ``g``'s distribution is ``t[toff[g]:toff[g+1]]`` (row-major
    ``(m1, m2, m3)``).
    """
    items_group = np.asarray(items_group, dtype=np.int64)
    e1 = np.asarray(e1, dtype=np.int64)
    m1 = np.asarray(m1, dtype=np.int64)
    m2 = np.asarray(m2, dtype=np.int64)
    m3 = np.asarray(m3, dtype=np.int64)
    G = m1.shape[0]
    # items by group, then by their E1 vector (runs of equal e1 share the first GEMM)
    order = np.lexsort((e1, items_group))
    gs, e1s = items_group[order], e1[order]
    gptr = np.zeros(G + 1, dtype=np.int64)
    np.cumsum(np.bincount(items_group, minlength=G), out=gptr[1:])
    new = np.ones(order.shape[0], dtype=bool)
    new[1:] = (gs[1:] != gs[:-1]) | (e1s[1:] != e1s[:-1])
    run = np.cumsum(new) - 1
    if run.shape[0]:
        run = run - run[gptr[:-1][gs]]
    toff = np.zeros(G + 1, dtype=np.int64)
    np.cumsum(m1 * m2 * m3, out=toff[1:])
    w = np.ones(len(items_group)) if weight is None else np.asarray(weight, dtype=np.float64)
    T = np.zeros(int(toff[-1]))
    loglik = np.zeros(G)
    iters = np.zeros(G, dtype=np.int64)
    # largest groups first, handed out one at a time (their costs differ by 1000x)
    gorder = np.argsort(-(np.diff(gptr) * m1 * m2 * m3), kind="stable").astype(np.int64)
    set_threads(jobs)
    with blas_single_thread(), numba.parallel_chunksize(1):
        _group_em(gorder, gptr, run.astype(np.int64), e1s, np.asarray(e2, np.int64)[order],
                  np.asarray(e3, np.int64)[order], m1, m2, m3, np.ascontiguousarray(w[order]),
                  np.ascontiguousarray(E, dtype=np.float64), toff, T, int(max_iter), float(tol),
                  loglik, iters)
    return MixtureEM(T, toff, loglik, iters)


def symbol_decomposition(f, g, m, anchor_min_count=10, seed=0, em_iterations=100,
                         weight=None):
    """MDP 1 on the (f, g) co-occurrences of one symbol's nodes.

    Step 1 of figure 1 of Cohen & Collins (2014) for one symbol: ``f``, ``g`` are the local
    inside / outside feature ids (0..) of its nodes (or of node types, each counted
    ``weight`` times: integer counts, None: one each), ``m`` its states.  Returns a
    :class:`SymbolDecomposition`: ``r`` (``n_f x m``, ``r(f | h)``), ``s`` (``n_g x m``,
    ``s(g | h) = sum_h' t(h' | h) s'(g | h')`` in the same numbering, eq. 3) and ``k`` the number
    of anchored states (states ``k..m-1`` get the marginals).
    """
    from ..linalg import mdp1

    nf = int(f.max()) + 1
    ng = int(g.max()) + 1
    w = np.ones(len(f)) if weight is None else np.asarray(weight, dtype=np.float64)
    Q = sp.csr_matrix((w, (f, g)), shape=(nf, ng))
    Q.sum_duplicates()
    rowm = np.asarray(Q.sum(axis=1)).ravel()
    colm = np.asarray(Q.sum(axis=0)).ravel()
    k = int(min(m, (rowm >= anchor_min_count).sum(), (colm >= anchor_min_count).sum(), nf, ng))
    pf = rowm / rowm.sum()
    pg = colm / colm.sum()
    r = np.repeat(pf[:, None], m, axis=1)
    s = np.repeat(pg[:, None], m, axis=1)
    if k >= 2:
        try:
            res = mdp1(Q, k, min_row_mass=anchor_min_count, min_col_mass=anchor_min_count,
                       em_iterations=em_iterations, em_tol=1e-9, random_state=seed)
            r[:, :k] = res.r
            s[:, :k] = res.s @ res.t.T
        except (ValueError, np.linalg.LinAlgError):
            k = 1
    return SymbolDecomposition(r, s, k)


def _align(post_ref, post_new, k_ref):
    """Permutation ``perm`` with ``post_new[:, perm]`` best matching ``post_ref`` (Hungarian).

    The reference's states ``k_ref..m-1`` are not anchored: their posteriors are identical
    (the marginals), so any order of the states matched to them is optimal; they are kept in
    increasing order, so that the order does not depend on rounding in the sums."""
    from scipy.optimize import linear_sum_assignment

    C = post_ref.T @ post_new
    _, cols = linear_sum_assignment(-C)
    k = int(k_ref) if k_ref >= 2 else 0
    cols[k:] = np.sort(cols[k:])
    return cols


# ------------------------------------------------------------------------------------------------
# the sufficient statistics: integer counts of node types and of evidence items
# ------------------------------------------------------------------------------------------------
#: item kinds of :class:`PivotCounts` (column 0 of ``items``)
_BINARY, _UNARY, _LEXICAL, _ROOT = 0, 1, 2, 3


def _count_rows(tab: np.ndarray, cnt=None):
    """The distinct rows of the int64 table ``tab`` (sorted lexicographically, first column
    first) and their counts (``cnt``: the weights of the rows, None: one each)."""
    tab = np.ascontiguousarray(tab, dtype=np.int64)
    n = tab.shape[0]
    if cnt is None:
        cnt = np.ones(n, dtype=np.int64)
    if n == 0:
        return tab, np.asarray(cnt, dtype=np.int64)
    order = np.lexsort(tab.T[::-1])
    st = tab[order]
    new = np.ones(n, dtype=bool)
    new[1:] = np.any(st[1:] != st[:-1], axis=1)
    idx = np.flatnonzero(new)
    return st[idx], np.add.reduceat(np.asarray(cnt, dtype=np.int64)[order], idx)


class PivotCounts(Statistics):
    """The sufficient statistics of the pivot method (Cohen & Collins 2014, figure 1): integer
    counts, so that merged partitions give exactly the counts of the whole treebank.

    ``types`` / ``type_count``: the distinct rows ``(label, f_1..f_P, g_1..g_P)`` of the nodes
    whose symbol has several states (``f_p``, ``g_p``: the inside and outside feature keys of
    feature pair ``p``) with their counts: the co-occurrence matrices ``Q^a`` of every pair
    (step 1) and the alignment of the pairs' state numberings are sums over them.

    ``items`` / ``item_count``: the distinct rows ``(kind, group, pair, k1, k2, k3)`` of the
    evidence of step 2 with their counts: binary rules (``group`` the rule, keys: the parent's
    outside feature, the children's inside features), unary rules (parent outside, child
    inside), lexical classes (the leaf's outside feature) and roots (the root's inside feature);
    the key of a node whose symbol has one state is 0 (its evidence is the constant 1).

    Keys are the compiled tree-fragment feature keys over the treebank's global symbol, rule and
    word ids (:func:`~fastspectral.lpcfg.features.default_feature_keys`).
    """

    _same = ("settings",)

    def __init__(self, settings, types, type_count, items, item_count):
        self.settings = settings
        self.types, self.type_count = types, type_count
        self.items, self.item_count = items, item_count

    def update(self, other):
        if type(other) is not type(self):
            raise TypeError(f"cannot merge {type(other).__name__} into {type(self).__name__}")
        if other.settings != self.settings:
            raise ValueError(f"cannot merge PivotCounts computed with different settings "
                             f"({self.settings!r} != {other.settings!r})")
        self.types, self.type_count = _count_rows(np.concatenate([self.types, other.types]),
                                                  np.concatenate([self.type_count,
                                                                  other.type_count]))
        self.items, self.item_count = _count_rows(np.concatenate([self.items, other.items]),
                                                  np.concatenate([self.item_count,
                                                                  other.item_count]))
        return self


def pivot_counts(nodes, g, m, lexrow, feature_pairs, settings=None) -> PivotCounts:
    """The :class:`PivotCounts` of treebank nodes.

    Parameters
    ----------
    nodes : NodeData
        The nodes (:func:`~fastspectral.lpcfg.features.extract_nodes`) over the ids of the
        whole treebank.
    g : Grammar
        The fine grammar of the treebank.
    m : numpy.ndarray
        Latent states of every symbol.
    lexrow : numpy.ndarray
        Per node its lexical-class row of the treebank (``(tag, class)``; -1: not a leaf).
    feature_pairs : sequence of (int, int)
        As :class:`PivotLPCFG`.
    settings : optional
        What the counts were computed with (statistics of other settings do not merge).
    """
    from .features import default_feature_keys

    pairs = [tuple(int(x) for x in p) for p in feature_pairs]
    P = len(pairs)
    N = int(nodes.n_nodes)
    w = 1 + 2 * P
    if N == 0:
        e = np.zeros(0, dtype=np.int64)
        return PivotCounts(settings, np.zeros((0, w), np.int64), e,
                           np.zeros((0, 6), np.int64), e.copy())
    kin, kout = default_feature_keys(nodes)
    kin = np.asarray(kin, dtype=np.int64)
    kout = np.asarray(kout, dtype=np.int64)
    label = nodes.label.astype(np.int64)
    m = np.asarray(m, dtype=np.int64)
    multi = m[label] > 1
    is_pre = np.asarray(g.is_preterminal, dtype=bool)[label]
    # pre-terminals have no children: their inside feature is the word (template 1)
    fk = [np.where(is_pre, kin[:, 0], kin[:, ci]) for ci, _ in pairs]
    gk = [kout[:, co] for _, co in pairs]
    types, tcnt = _count_rows(np.column_stack([label[multi]] + [f[multi] for f in fk] +
                                              [x[multi] for x in gk]))
    fz = [np.where(multi, f, 0) for f in fk]
    gz = [np.where(multi, x, 0) for x in gk]
    left = nodes.left.astype(np.int64)
    right = nodes.right.astype(np.int64)
    rule = nodes.rule.astype(np.int64)
    urule = nodes.urule.astype(np.int64)
    bn = np.flatnonzero(rule >= 0)
    un = np.flatnonzero(urule >= 0)
    lf = np.flatnonzero(nodes.word >= 0)
    rt = np.flatnonzero(nodes.parent < 0)
    zb, zu, zl, zr = (np.zeros(len(x), dtype=np.int64) for x in (bn, un, lf, rt))
    blocks = []
    for p in range(P):
        blocks.append(np.column_stack([zb + _BINARY, rule[bn], zb + p, gz[p][bn],
                                       fz[p][left[bn]], fz[p][right[bn]]]))
        blocks.append(np.column_stack([zu + _UNARY, urule[un], zu + p, gz[p][un],
                                       fz[p][left[un]], zu]))
        blocks.append(np.column_stack([zl + _LEXICAL, np.asarray(lexrow, np.int64)[lf],
                                       zl + p, gz[p][lf], zl, zl]))
        blocks.append(np.column_stack([zr + _ROOT, label[rt], zr + p, fz[p][rt], zr, zr]))
    items, icnt = _count_rows(np.concatenate(blocks))
    return PivotCounts(settings, types, tcnt, items, icnt)


class _KeyOffsets:
    """Evidence offsets of (label, feature key) pairs of one feature pair, inside or outside:
    sorted ``(lab, key)`` with their offset in the evidence array."""

    def __init__(self):
        self.lab, self.key, self.off = [], [], []

    def add(self, a, keys, offsets):
        self.lab.append(np.full(len(keys), a, dtype=np.int64))
        self.key.append(keys)
        self.off.append(offsets)

    def done(self):
        cat = (lambda x: np.concatenate(x) if x else np.zeros(0, dtype=np.int64))
        self.lab, self.key, self.off = cat(self.lab), cat(self.key), cat(self.off)
        return self

    def lookup(self, lab, key, multi):
        """The offsets of the queries (0, the constant evidence, where ``multi`` is False)."""
        out = np.zeros(len(lab), dtype=np.int64)
        q = np.flatnonzero(multi)
        if q.size == 0:
            return out
        # (lab, key) is sorted: as int64 codes lab * U + rank(key), sorted too
        ukeys = np.unique(self.key)
        U = max(1, ukeys.shape[0])
        table = self.lab * U + np.searchsorted(ukeys, self.key)
        kq = key[q]
        rank = np.minimum(np.searchsorted(ukeys, kq), U - 1)
        pos = np.minimum(np.searchsorted(table, lab[q] * U + rank), max(0, len(table) - 1))
        if len(table) == 0 or np.any(self.lab[pos] != lab[q]) or np.any(self.key[pos] != kq):
            raise ValueError("pivot statistics: an item's feature is not among the node types "
                             "(were the counts computed on other data?)")
        out[q] = self.off[pos]
        return out


def _evidence(m, stats: PivotCounts, P, anchor_min_count, seed, mdp_em_iterations):
    """Evidence vectors of step 2, stored once per (symbol, feature value).

    Returns ``(E, ins, outs, anchored)``: the flat evidence array (``E[0] = 1`` is the evidence
    of one-state symbols), per feature pair the offsets of the inside vectors ``r(f | .)`` and
    the outside vectors ``s(g | .)`` of every (symbol, feature key) (rescaled to max 1: the
    convex EM is invariant to a per-item scale), and the anchored states per symbol (first
    pair).  Reads only the node types of ``stats``: ``Q^a`` of pair ``p`` is the sum of the
    type counts at (inside id, outside id), the alignment of pair ``p`` to the first pair the
    count-weighted sum of the products of the types' posteriors."""
    types, tcnt = stats.types, stats.type_count
    label = types[:, 0]
    S = len(m)
    ptr = np.searchsorted(label, np.arange(S + 1))     # types sorted by label first
    chunks = [np.ones(1)]
    pos = 1
    ins, outs = [], []
    post_ref = {}
    anchored = {}
    for pi_ in range(P):
        kin, kout = _KeyOffsets(), _KeyOffsets()
        for a in np.flatnonzero(m > 1):
            r0, r1 = int(ptr[a]), int(ptr[a + 1])
            if r1 == r0:
                continue
            ma = int(m[a])
            fkeys, fid = np.unique(types[r0:r1, 1 + pi_], return_inverse=True)
            gkeys, gid = np.unique(types[r0:r1, 1 + P + pi_], return_inverse=True)
            fid, gid = fid.ravel(), gid.ravel()
            w = tcnt[r0:r1]
            dec = symbol_decomposition(fid, gid, ma, anchor_min_count, seed + int(a),
                                       mdp_em_iterations, weight=w)
            r, s, k = dec.r, dec.s, dec.k
            if pi_ == 0:
                anchored[int(a)] = k
            post = r[fid] * s[gid]
            post /= np.maximum(post.sum(1, keepdims=True), 1e-300)
            if pi_ == 0:
                post_ref[int(a)] = post * w[:, None]
            elif k >= 2:
                perm = _align(post_ref[int(a)], post, anchored[int(a)])
                r, s = r[:, perm], s[:, perm]
            r = r / np.maximum(r.max(1, keepdims=True), 1e-300)
            s = s / np.maximum(s.max(1, keepdims=True), 1e-300)
            chunks.append(r.ravel())
            kin.add(a, fkeys, pos + np.arange(len(fkeys), dtype=np.int64) * ma)
            pos += r.size
            chunks.append(s.ravel())
            kout.add(a, gkeys, pos + np.arange(len(gkeys), dtype=np.int64) * ma)
            pos += s.size
        ins.append(kin.done())
        outs.append(kout.done())
    return np.concatenate(chunks), ins, outs, anchored


def _solve(grp, e1, e2, e3, m1, m2, m3, E, max_iter, tol, jobs, weight) -> MixtureEM:
    """Convex EM over de-duplicated items (identical evidence triples are counted once with
    their summed count as weight)."""
    key = np.stack([grp, e1, e2, e3], axis=1)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    cnt = np.bincount(inv.ravel(), weights=np.asarray(weight, dtype=np.float64),
                      minlength=uniq.shape[0])
    return group_mixture_em(uniq[:, 0], uniq[:, 1], uniq[:, 2], uniq[:, 3], m1, m2, m3, E,
                            weight=cnt, max_iter=max_iter, tol=tol, jobs=jobs)


def pivot_estimate(layout, *, stats: PivotCounts | None = None,
                   feature_pairs=((1, 1), (0, 0), (3, 3)), anchor_min_count=10,
                   mixture_iterations=30, mixture_tol=1e-5, mdp_em_iterations=100,
                   parent_smoothing=0.0, seed=0, jobs=None) -> PivotEstimate:
    """The pivot estimates of Cohen & Collins (2014), figure 1, on a treebank layout.

    Parameters
    ----------
    layout : LatentLayout
        The training treebank with its state counts (with ``stats``, any layout of its
        parameters: :class:`~fastspectral.lpcfg.stats.GlobalLayout` built from merged counts).
    stats : PivotCounts, optional
        The treebank's statistics (:func:`pivot_counts`; merged partitions' counts are the
        whole treebank's); None: counted from ``layout``'s nodes.
    feature_pairs, anchor_min_count, mixture_iterations, mixture_tol
        As :class:`PivotLPCFG`.
    mdp_em_iterations, parent_smoothing
        As :class:`PivotLPCFG`.
    seed : int, default 0
        Seed of the decompositions (symbol ``a`` uses ``seed + a``).
    jobs : int, optional
        Numba threads (None: the cores available).

    Returns
    -------
    PivotEstimate
    """
    t0 = time.perf_counter()
    lay = layout
    m = lay.m
    if stats is None:
        stats = pivot_counts(lay.nodes, lay.g, m, lay.lexrow, feature_pairs)
    P = len(tuple(feature_pairs))
    if stats.types.shape[1] != 1 + 2 * P:
        raise ValueError(f"pivot statistics of {(stats.types.shape[1] - 1) // 2} feature "
                         f"pair(s), expected {P}")
    E, ins, outs, anchored = _evidence(m, stats, P, anchor_min_count, seed, mdp_em_iterations)
    t1 = time.perf_counter()
    counts = lay.zeros()
    items, weight = stats.items, stats.item_count
    kind, grp, pair = items[:, 0], items[:, 1], items[:, 2]

    def offsets(sel, tables, lab, col):
        """Evidence offsets of the keys in column ``col`` of the items ``sel`` (symbols
        ``lab``), looked up in the inside or outside tables of each item's pair."""
        out = np.zeros(len(sel), dtype=np.int64)
        multi = m[lab] > 1
        for p in range(P):
            q = pair[sel] == p
            out[q] = tables[p].lookup(lab[q], items[sel[q], col], multi[q])
        return out

    def solve(sel, e1, e2, e3, m1, m2, m3):
        return _solve(grp[sel], e1, e2, e3, m1, m2, m3, E, mixture_iterations, mixture_tol,
                      jobs, weight[sel])

    ones = np.ones(max(lay.S, len(lay.lex_sym)), np.int64)
    # binary rules: an item per (node, feature pair): s(g | h1, a) r(f2 | h2, b) r(f3 | h3, c)
    sel = np.flatnonzero(kind == _BINARY)
    r = grp[sel]
    res_b = solve(sel, offsets(sel, outs, lay.bin_parent[r], 3),
                  offsets(sel, ins, lay.bin_left[r], 4), offsets(sel, ins, lay.bin_right[r], 5),
                  m[lay.bin_parent], m[lay.bin_left], m[lay.bin_right])
    counts.T[:] = res_b.t * np.repeat(lay.bin_count, np.diff(res_b.toff))
    # unary rules
    Un = len(lay.un_parent)
    if Un:
        sel = np.flatnonzero(kind == _UNARY)
        u = grp[sel]
        res = solve(sel, offsets(sel, outs, lay.un_parent[u], 3),
                    offsets(sel, ins, lay.un_child[u], 4), np.zeros(len(sel), np.int64),
                    m[lay.un_parent], m[lay.un_child], ones[:Un])
        counts.U[:] = res.t * np.repeat(lay.un_count, np.diff(res.toff))
    # lexical classes p -> k: outside evidence only
    nrow = len(lay.lex_sym)
    sel = np.flatnonzero(kind == _LEXICAL)
    zero = np.zeros(len(sel), np.int64)
    res = solve(sel, offsets(sel, outs, lay.lex_sym[grp[sel]], 3), zero, zero,
                m[lay.lex_sym], ones[:nrow], ones[:nrow])
    counts.L[:] = res.t * np.repeat(lay.lex_count, np.diff(res.toff))
    # roots: inside evidence only (groups = symbols)
    S = lay.S
    sel = np.flatnonzero(kind == _ROOT)
    zero = np.zeros(len(sel), np.int64)
    res = solve(sel, offsets(sel, ins, grp[sel], 3), zero, zero, m, ones[:S], ones[:S])
    counts.c1[:] = res.t * np.repeat(lay.root_count, m)
    # step 3: normalisation (section 6.1)
    params = m_step(lay, counts, parent_smoothing)
    # a state that got no mass anywhere (dead) would make its rows zero: give it the PCFG
    spread = m_step(lay, uniform_counts(lay))
    params = _fill_dead_states(lay, params, spread)
    return PivotEstimate(params=params, anchored_states=anchored, mixture_iterations=res_b.iters,
                         decomposition_seconds=t1 - t0, seconds=time.perf_counter() - t0)


def _pairs_from_json(pairs):
    """``feature_pairs`` read from a model file (JSON lists) as the tuple of pairs it was."""
    try:
        return tuple(tuple(p) for p in pairs)
    except TypeError:        # not a list of pairs: left for fit's validation to report
        return pairs


def _fill_dead_states(lay: LatentLayout, params: LatentParams, spread: LatentParams) -> LatentParams:
    """Replace the rows of parent states whose outgoing mass is zero by ``spread``'s rows."""
    m = lay.m
    mass = np.zeros(int(lay.soff[-1]))
    bp = lay.bin_parent
    inner_b = m[lay.bin_left] * m[lay.bin_right]
    rows_b = np.repeat(np.arange(len(bp)), m[bp])
    h1 = np.arange(len(rows_b)) - np.repeat(np.cumsum(m[bp]) - m[bp], m[bp])
    # per (rule, h1) row sums
    row_id = np.repeat(np.arange(len(rows_b)), np.repeat(inner_b, m[bp]))
    rs = np.bincount(row_id, weights=params.T, minlength=len(rows_b))
    np.add.at(mass, lay.soff[bp[rows_b]] + h1, rs)
    up = lay.un_parent
    if len(up):
        rows_u = np.repeat(np.arange(len(up)), m[up])
        hu = np.arange(len(rows_u)) - np.repeat(np.cumsum(m[up]) - m[up], m[up])
        row_id = np.repeat(np.arange(len(rows_u)), np.repeat(m[lay.un_child], m[up]))
        rs = np.bincount(row_id, weights=params.U, minlength=len(rows_u))
        np.add.at(mass, lay.soff[up[rows_u]] + hu, rs)
    ls = lay.lex_sym
    rows_l = np.repeat(np.arange(len(ls)), m[ls])
    hl = np.arange(len(rows_l)) - np.repeat(np.cumsum(m[ls]) - m[ls], m[ls])
    qk = params.L * np.repeat(lay.row_frac, m[ls])
    np.add.at(mass, lay.soff[ls[rows_l]] + hl, qk)
    dead = mass < 0.5
    if not dead.any():
        return params
    out = params.copy()
    # binary
    ent_rule = np.repeat(np.arange(len(bp)), np.diff(lay.toff))
    ent_h1 = (np.arange(lay.toff[-1]) - lay.toff[ent_rule]) // inner_b[ent_rule]
    sel = dead[lay.soff[bp[ent_rule]] + ent_h1]
    out.T[sel] = spread.T[sel]
    if len(up):
        ent_u = np.repeat(np.arange(len(up)), np.diff(lay.uoff))
        ent_hu = (np.arange(lay.uoff[-1]) - lay.uoff[ent_u]) // m[lay.un_child][ent_u]
        sel = dead[lay.soff[up[ent_u]] + ent_hu]
        out.U[sel] = spread.U[sel]
    ent_l = np.repeat(np.arange(len(ls)), m[ls])
    sel = dead[lay.soff[ls[ent_l]] + (np.arange(lay.loff[-1]) - lay.loff[ent_l])]
    out.L[sel] = spread.L[sel]
    return out


# ------------------------------------------------------------------------------------------------
# learning from partitions (the statistics protocol of fastspectral.base; pass 0 and the global
# layout are those of fastspectral.lpcfg.stats): one pass of PivotCounts
# ------------------------------------------------------------------------------------------------
class PivotContext:
    """Context of the pivot pass: pass 0's context, the global layout (states, lexical rows),
    the :class:`~fastspectral.lpcfg.pivot.PivotLPCFG` whose options the pass uses (the model
    itself, or the pivot start of an EM model) and its resolved seed."""

    def __init__(self, base, layout, pivot, seed: int):
        self.base = base
        self.layout = layout
        self.pivot = pivot
        self.seed = int(seed)
        self.token = uuid.uuid4().hex          # the counts of this pass only merge together
        self.t_start = time.perf_counter()     # EM's history counts the pivot start's time
        self.settings = (tuple(tuple(int(x) for x in p) for p in pivot.feature_pairs),
                         self.token)


def pivot_context(base, G, pivot) -> PivotContext:
    """The :class:`PivotContext` of pass 0's context ``base`` and layout ``G`` with the options
    (and seed, resolved once) of the :class:`PivotLPCFG` ``pivot``."""
    pivot._validate_params()
    return PivotContext(base, G, pivot, resolve_random_state(pivot.random_state))


def _lexical_rows(nodes, G) -> np.ndarray:
    """Per node its row of the treebank's lexical classes ``(tag, class)`` (-1: not a leaf),
    as :class:`~fastspectral.lpcfg.latent_params.LatentLayout` numbers them on the whole
    treebank."""
    rows = np.full(nodes.n_nodes, -1, dtype=np.int64)
    pre = np.flatnonzero(nodes.word >= 0)
    if pre.size == 0:
        return rows
    V = G.V
    w = nodes.word[pre].astype(np.int64)
    key = nodes.label[pre].astype(np.int64) * (V + 1) + np.where(G.rare_word[w], V, w)
    k = np.minimum(np.searchsorted(G.lex_key, key), max(0, len(G.lex_key) - 1))
    if len(G.lex_key) == 0 or np.any(G.lex_key[k] != key):
        raise ValueError("a partition has a (tag, word class) that is not in the merged counts")
    rows[pre] = k
    return rows


def pivot_statistics(model, part, context: PivotContext) -> PivotCounts:
    """A partition's :class:`PivotCounts` over the treebank's ids
    (the pass after pass 0 of ``PivotLPCFG`` and of ``EMLPCFG(init="pivot")``)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        nodes = context.base.nodes(part)
        G = context.layout
        return pivot_counts(nodes, context.base.grammar, G.m, _lexical_rows(nodes, G),
                            context.pivot.feature_pairs, context.settings)


def pivot_estimate_of(stats, context: PivotContext) -> PivotEstimate:
    """The :class:`PivotEstimate` of merged pivot counts."""
    from threadpoolctl import threadpool_limits

    from ..grammar.stats import check_statistics

    check_statistics(stats, PivotCounts)
    if stats.settings != context.settings:
        raise ValueError("these pivot statistics were computed for another model or pass")
    with threadpool_limits(limits=1):
        return context.pivot._learn(context.layout, context.seed, stats=stats)


def pivot_fit_statistics(model, stats, context, t0: float):
    """``PivotLPCFG.fit_statistics``: the pivot context after pass 0; the estimate, installed,
    after the pivot pass (returns None then)."""
    from threadpoolctl import threadpool_limits

    from .stats import em_layout

    if context is None:
        model._validate_params()
        return pivot_context(*em_layout(model, stats, t0), model)
    if not isinstance(context, PivotContext):
        raise TypeError(f"expected a PivotContext, got {type(context).__name__}")
    est = pivot_estimate_of(stats, context)
    G = context.layout
    with threadpool_limits(limits=1):
        model._install(context.base.pcfg, G.arrays(est.params))
    model.params_ = est.params
    model.anchored_states_ = est.anchored_states
    model.mixture_iterations_ = est.mixture_iterations
    model.decomposition_time_ = est.decomposition_seconds
    model.n_train_trees_ = context.base.n_trees
    model.fit_time_ = time.perf_counter() - t0
    return None


class PivotLPCFG(ProbabilisticLPCFGBase):
    """Latent-variable PCFG estimated by the pivot (anchor) method of Cohen & Collins (2014).

    Step 1 decomposes the inside/outside feature co-occurrences of every symbol under the
    anchor assumption (MDP 1), step 2 solves one convex mixture-weight problem per rule, step 3
    normalises: the result is a genuine, non-negative, normalised L-PCFG (see the module
    docstring), which can also start EM (:class:`~fastspectral.lpcfg.em.EMLPCFG` with
    ``init="pivot"``).  Parsing is coarse-to-fine with max-expected-recall decoding.

    Parameters
    ----------
    n_states : int, default 16
        Latent states of every symbol seen at least ``min_count`` times.
    feature_pairs : sequence of (int, int), default ((1, 1), (0, 0), (3, 3))
        ``(inside template, outside template)`` column pairs of the tree-fragment features
        (:func:`~fastspectral.lpcfg.features.default_feature_keys`, 0-based, 0..5); the first
        pair defines the states' numbering, the objective of step 2 sums over all pairs
        (section 6.2).
    anchor_min_count : int, default 10
        Features seen fewer times cannot be anchors.
    mixture_iterations : int, default 30
        Iteration limit of the convex EM of step 2 (eq. 1).
    mixture_tol : float, default 1e-5
        The convex EM of a rule stops when its per-node log-likelihood gain falls below this.
    mdp_em_iterations : int, default 100
        Iteration limit of MDP 1's EM for ``t(h' | h)`` (eq. 3).
    parent_smoothing : float, default 0.0
        ``alpha`` in [0, 1) of the smoothing of the normalised parameters toward the mean over
        the parent's states (as :class:`~fastspectral.lpcfg.em.EMLPCFG`'s).
    n_states_pre : int or None, default None
        Latent states of pre-terminals (None: ``n_states``).
    v : int, default 1
        Vertical markovisation of the underlying PCFG.
    h : int or None, default 0
        Horizontal markovisation (None: infinite).
    tag_parent : bool, default False
        Parent-annotate pre-terminals.
    min_count : int, default 20
        Symbols with fewer training nodes keep one state.
    rare_threshold : int, default 1
        Words seen at most this often share their tag's "rare" lexical class.
    prune_threshold : float or None, default 1e-4
        Posterior threshold of the plain PCFG pass of parsing.
    coarse_threshold : float or None, default 1e-3
        Posterior threshold of the coarse (v=1, h=0) pass before it.
    pruner_states : int or None, default None
        Latent states of a pruning model fitted beside this one (the same learner and
        settings with fewer states, on the same prepared trees; ``pruner_``): parsing runs it
        over the items that survive the PCFG passes and gives this model's pass only those
        whose marginal under it is at least ``pruner_threshold`` (one more level of Petrov &
        Klein's coarse-to-fine hierarchy).  None: no pruning model.
    pruner_threshold : float, default 1e-4
        Marginal threshold of the pruning model's pass.
    random_state : int or None, default 0
        Seed of the decompositions (None: fresh entropy).
    jobs : int or None, default None
        Threads of training and default number of parsing threads (None: every core).
    state_map : dict or None, default None
        ``{symbol: m}`` overriding the states of single symbols (for experiments).

    Attributes
    ----------
    pcfg_ : PCFG
        The plain PCFG of the training trees (pruning and fallback).
    lpcfg_ : LatentGrammar
        ``t(a -> b c, h2, h3 | a, h1)``, ``t(a -> p, h2 | a, h1)`` and ``pi(a, h)``.
    params_ : LatentParams
        The same parameters in the treebank layout (with the lexical-class ratios).
    states_ : numpy.ndarray
        Latent states of every symbol.
    anchored_states_ : dict
        Per symbol id with several states: the number of states anchored in step 1.
    mixture_iterations_ : numpy.ndarray
        Convex-EM iterations run for every binary rule.
    decomposition_time_ : float
        Seconds of step 1.
    vocab_, lex_table_, sym_counts_, n_train_trees_, fit_time_, pruner_, last_parse_stats_
        As :class:`~fastspectral.lpcfg.latent.LatentPCFGBase`.

    References
    ----------
    Cohen, Collins (2014). A provably correct learning algorithm for latent-variable PCFGs.
    ACL.  Figure 1 (steps 1-3), eq. 1 (the convex EM of step 2), eq. 3 (the EM of MDP 1),
    section 6.1 (normalisation), section 6.2 (several feature pairs).

    Examples
    --------
    >>> from fastspectral.lpcfg import PivotLPCFG
    >>> from fastspectral.synthetic import LatentPCFG
    >>> grammar = LatentPCFG.default(n_states=2, seed=0)
    >>> train = grammar.sample(200, seed=1)
    >>> model = PivotLPCFG(n_states=2, min_count=5, jobs=1).fit(train)
    >>> words = train[0].leaves()
    >>> model.parse([words])[0].leaves() == words
    True
    >>> 0.0 < model.tree_probability(train[0]) < 1.0
    True
    """

    kind = "pivot-lpcfg"
    _renamed_params = {"seed": "random_state", "smoothing": "parent_smoothing",
                       "em_iterations": "mixture_iterations", "em_tol": "mixture_tol"}
    _parameter_constraints = {"anchor_min_count": Interval(int, 1),
                              "mixture_iterations": Interval(int, 1),
                              "mdp_em_iterations": Interval(int, 1)}

    def __init__(self, n_states=16, feature_pairs=((1, 1), (0, 0), (3, 3)), anchor_min_count=10,
                 mixture_iterations=30, mixture_tol=1e-5, mdp_em_iterations=100,
                 parent_smoothing=0.0, n_states_pre=None, v=1, h=0, tag_parent=False,
                 min_count=20, rare_threshold=1, prune_threshold=1e-4, coarse_threshold=1e-3,
                 pruner_states=None, pruner_threshold=1e-4, random_state=0, jobs=None,
                 state_map=None):
        self.n_states = n_states
        self.feature_pairs = feature_pairs
        self.anchor_min_count = anchor_min_count
        self.mixture_iterations = mixture_iterations
        self.mixture_tol = mixture_tol
        self.mdp_em_iterations = mdp_em_iterations
        self.parent_smoothing = parent_smoothing
        self.n_states_pre = n_states_pre
        self.v = v
        self.h = h
        self.tag_parent = tag_parent
        self.min_count = min_count
        self.rare_threshold = rare_threshold
        self.prune_threshold = prune_threshold
        self.coarse_threshold = coarse_threshold
        self.pruner_states = pruner_states
        self.pruner_threshold = pruner_threshold
        self.random_state = random_state
        self.jobs = jobs
        self.state_map = state_map

    def _check_params(self):
        super()._check_params()
        try:
            pairs = [tuple(p) for p in self.feature_pairs]
            ok = bool(pairs) and all(len(p) == 2 and all(0 <= int(x) < 6 for x in p)
                                     for p in pairs)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"feature_pairs must be a non-empty list of (inside, outside) "
                             f"template indices in 0..5, got {self.feature_pairs!r}")
        if not isinstance(self.mixture_tol, (int, float, np.integer, np.floating)):
            raise ValueError(f"mixture_tol must be a number, got {self.mixture_tol!r}")

    def _learn(self, layout: LatentLayout, seed: int, stats=None) -> PivotEstimate:
        """The pivot estimates on ``layout`` (from ``stats``, the treebank's
        :class:`PivotCounts`, when given) with this model's settings (validated)."""
        return pivot_estimate(layout, stats=stats, feature_pairs=self.feature_pairs,
                              anchor_min_count=self.anchor_min_count,
                              mixture_iterations=self.mixture_iterations,
                              mixture_tol=self.mixture_tol,
                              mdp_em_iterations=self.mdp_em_iterations,
                              parent_smoothing=self.parent_smoothing, seed=seed, jobs=self.jobs)

    def _learn_prepared(self, prep, seed: int):
        layout = model_layout(self, prep.nodes, prep.grammar)
        est = self._learn(layout, seed)
        self.params_ = est.params
        self.anchored_states_ = est.anchored_states
        self.mixture_iterations_ = est.mixture_iterations
        self.decomposition_time_ = est.decomposition_seconds
        return latent_arrays(layout, est.params)

    # -- learning from partitions (the statistics protocol of fastspectral.base) -------------
    def sufficient_statistics(self, items, context=None):
        """The mergeable statistics of a partition: the treebank counts (first pass), then
        the :class:`PivotCounts` over the treebank's ids (see :mod:`fastspectral.lpcfg.stats`)."""
        from .stats import latent_counts

        part = self._as_partition(items)
        if context is None:
            self._validate_params()
            return latent_counts(self, part)
        return pivot_statistics(self, part, context)

    def fit_statistics(self, stats, context=None):
        """The symbol tables and layout (after the first pass), then the pivot estimate from
        the merged :class:`PivotCounts` (the model ``fit`` gives on the concatenated
        partitions, bit for bit: the counts are integers); returns the next pass's context,
        or None once fitted."""
        return pivot_fit_statistics(self, stats, context, time.perf_counter())

    @classmethod
    def _params_from_file(cls, params: dict) -> dict:
        out = super()._params_from_file(params)
        if out.get("feature_pairs") is not None:
            out["feature_pairs"] = _pairs_from_json(out["feature_pairs"])
        return out

