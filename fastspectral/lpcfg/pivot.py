"""Pivot (anchor) learning of L-PCFGs: Cohen & Collins (ACL 2014), figure 1 and section 6.

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

Parsing is that of every L-PCFG (:class:`~fastspectral.lpcfg.latent.LatentPCFGBase`:
coarse-to-fine, compiled tensor inside-outside, max-recall).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from .._blas import blas_single_thread
from .latent import LatentPCFGBase, _check_int, resolve_random_state
from .latent_params import (LatentLayout, LatentParams, latent_arrays, m_step, set_threads,
                            state_counts, uniform_counts)

__all__ = ["PivotLPCFG", "PivotEstimate", "MixtureEM", "SymbolDecomposition",
           "group_mixture_em", "symbol_decomposition"]


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


def _dense_ids(label, keys):
    """Per-label dense ids of (label, key) pairs: (ids local to the label, n_ids per label)."""
    order = np.lexsort((keys, label))
    ls, ks = label[order], keys[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (ls[1:] != ls[:-1]) | (ks[1:] != ks[:-1])
    gid = np.cumsum(new) - 1
    # local id = global id - global id of the label's first pair
    lab_start = np.searchsorted(ls, ls, side="left")
    first_of_label = gid[lab_start]
    local = np.empty(len(order), dtype=np.int64)
    local[order] = gid - first_of_label
    return local


def symbol_decomposition(f, g, m, anchor_min_count=10, seed=0, em_iterations=100):
    """MDP 1 on the (f, g) co-occurrences of one symbol's nodes.

    Step 1 of figure 1 of Cohen & Collins (2014) for one symbol: ``f``, ``g`` are the local
    inside / outside feature ids (0..) of its nodes, ``m`` its states.  Returns a
    :class:`SymbolDecomposition`: ``r`` (``n_f x m``, ``r(f | h)``), ``s`` (``n_g x m``,
    ``s(g | h) = sum_h' t(h' | h) s'(g | h')`` in the same numbering, eq. 3) and ``k`` the number
    of anchored states (states ``k..m-1`` get the marginals).
    """
    from ..linalg import mdp1

    nf = int(f.max()) + 1
    ng = int(g.max()) + 1
    Q = sp.csr_matrix((np.ones(len(f)), (f, g)), shape=(nf, ng))
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


def _align(post_ref, post_new):
    """Permutation ``perm`` with ``post_new[:, perm]`` best matching ``post_ref`` (Hungarian)."""
    from scipy.optimize import linear_sum_assignment

    C = post_ref.T @ post_new
    _, cols = linear_sum_assignment(-C)
    return cols




def _evidence(layout: LatentLayout, kin, kout, feature_pairs, anchor_min_count, seed,
              mdp_em_iterations):
    """Evidence vectors of step 2, stored once per (symbol, feature value).

    Returns ``(E, in_off, out_off, anchored)``: the flat evidence array (``E[0] = 1`` is the
    evidence of one-state symbols), per feature pair every node's offset of its inside vector
    ``r(f(n) | .)`` and outside vector ``s(g(n) | .)`` (rescaled to max 1: the convex EM is
    invariant to a per-item scale), and the anchored states per symbol (first pair)."""
    lay = layout
    label = lay.label
    m = lay.m
    N = lay.N
    pairs = [tuple(int(x) for x in p) for p in feature_pairs]
    chunks = [np.ones(1)]
    pos = 1
    in_all, out_all = [], []
    post_ref = {}
    anchored = {}
    order = np.argsort(label, kind="stable")
    ptr = np.zeros(lay.S + 1, dtype=np.int64)
    np.cumsum(np.bincount(label, minlength=lay.S), out=ptr[1:])
    # pre-terminals have no children: their inside feature is the word (template 1)
    is_pre = lay.g.is_preterminal[label]
    for pi_, (ci, co) in enumerate(pairs):
        fid = _dense_ids(label, np.where(is_pre, kin[:, 0], kin[:, ci]))
        gid = _dense_ids(label, kout[:, co])
        in_off = np.zeros(N, dtype=np.int64)
        out_off = np.zeros(N, dtype=np.int64)
        for a in np.flatnonzero(m > 1):
            idx = order[ptr[a]:ptr[a + 1]]
            if idx.size == 0:
                continue
            ma = int(m[a])
            dec = symbol_decomposition(fid[idx], gid[idx], ma, anchor_min_count, seed + int(a),
                                       mdp_em_iterations)
            r, s, k = dec.r, dec.s, dec.k
            if pi_ == 0:
                anchored[int(a)] = k
            post = r[fid[idx]] * s[gid[idx]]
            post /= np.maximum(post.sum(1, keepdims=True), 1e-300)
            if pi_ == 0:
                post_ref[int(a)] = post
            elif k >= 2:
                perm = _align(post_ref[int(a)], post)
                r, s = r[:, perm], s[:, perm]
            r = r / np.maximum(r.max(1, keepdims=True), 1e-300)
            s = s / np.maximum(s.max(1, keepdims=True), 1e-300)
            chunks.append(r.ravel())
            in_off[idx] = pos + fid[idx] * ma
            pos += r.size
            chunks.append(s.ravel())
            out_off[idx] = pos + gid[idx] * ma
            pos += s.size
        in_all.append(in_off)
        out_all.append(out_off)
    return np.concatenate(chunks), in_all, out_all, anchored


def _solve(grp, e1, e2, e3, m1, m2, m3, E, max_iter, tol, jobs) -> MixtureEM:
    """Convex EM over de-duplicated items (identical evidence triples are counted once with
    their multiplicity as weight)."""
    key = np.stack([grp, e1, e2, e3], axis=1)
    uniq, cnt = np.unique(key, axis=0, return_counts=True)
    return group_mixture_em(uniq[:, 0], uniq[:, 1], uniq[:, 2], uniq[:, 3], m1, m2, m3, E,
                            weight=cnt.astype(np.float64), max_iter=max_iter, tol=tol, jobs=jobs)


def pivot_estimate(layout: LatentLayout, *, feature_pairs=((1, 1), (0, 0), (3, 3)),
                   anchor_min_count=10, mixture_iterations=30, mixture_tol=1e-5,
                   mdp_em_iterations=100, parent_smoothing=0.0, seed=0,
                   jobs=None) -> PivotEstimate:
    """The pivot estimates of Cohen & Collins (2014), figure 1, on a treebank layout.

    Parameters
    ----------
    layout : LatentLayout
        The training treebank with its state counts.
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
    from .features import default_feature_keys

    t0 = time.perf_counter()
    lay = layout
    kin, kout = default_feature_keys(lay.nodes)
    E, ins, outs, anchored = _evidence(lay, kin, kout, feature_pairs, anchor_min_count, seed,
                                       mdp_em_iterations)
    t1 = time.perf_counter()
    P = len(ins)
    m = lay.m
    counts = lay.zeros()
    R = len(lay.bin_parent)

    def solve(grp, e1, e2, e3, m1, m2, m3):
        return _solve(grp, e1, e2, e3, m1, m2, m3, E, mixture_iterations, mixture_tol, jobs)

    # binary rules: one item per (node, feature pair)
    rn = lay.rnodes
    grp = np.tile(np.repeat(np.arange(R, dtype=np.int64), np.diff(lay.rptr)), P)
    e1 = np.concatenate([outs[p][rn] for p in range(P)])
    e2 = np.concatenate([ins[p][lay.left[rn]] for p in range(P)])
    e3 = np.concatenate([ins[p][lay.right[rn]] for p in range(P)])
    res_b = solve(grp, e1, e2, e3, m[lay.bin_parent], m[lay.bin_left], m[lay.bin_right])
    counts.T[:] = res_b.t * np.repeat(lay.bin_count, np.diff(res_b.toff))
    # unary rules
    un = lay.un_nodes
    Un = len(lay.un_parent)
    if Un:
        grp = np.tile(lay.urule[un], P)
        e1 = np.concatenate([outs[p][un] for p in range(P)])
        e2 = np.concatenate([ins[p][lay.left[un]] for p in range(P)])
        res = solve(grp, e1, e2, np.zeros_like(e1), m[lay.un_parent], m[lay.un_child],
                    np.ones(Un, np.int64))
        counts.U[:] = res.t * np.repeat(lay.un_count, np.diff(res.toff))
    # lexical classes p -> k: outside evidence only
    lf = lay.leaf_nodes
    nrow = len(lay.lex_sym)
    grp = np.tile(lay.lexrow[lf], P)
    e1 = np.concatenate([outs[p][lf] for p in range(P)])
    zero = np.zeros_like(e1)
    res = solve(grp, e1, zero, zero, m[lay.lex_sym], np.ones(nrow, np.int64),
                np.ones(nrow, np.int64))
    counts.L[:] = res.t * np.repeat(lay.lex_count, np.diff(res.toff))
    # roots: inside evidence only (groups = symbols)
    rt = lay.root_nodes
    S = lay.S
    grp = np.tile(lay.label[rt], P)
    e1 = np.concatenate([ins[p][rt] for p in range(P)])
    zero = np.zeros_like(e1)
    res = solve(grp, e1, zero, zero, m, np.ones(S, np.int64), np.ones(S, np.int64))
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




class PivotLPCFG(LatentPCFGBase):
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
    vocab_, lex_table_, sym_counts_, n_train_trees_
        As :class:`~fastspectral.lpcfg.latent.LatentPCFGBase`.
    fit_time_ : float
        Seconds of the last ``fit``.
    last_parse_stats_ : ParseStats
        Counters of the last :meth:`parse` call.

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

    def __init__(self, n_states=16, feature_pairs=((1, 1), (0, 0), (3, 3)), anchor_min_count=10,
                 mixture_iterations=30, mixture_tol=1e-5, mdp_em_iterations=100,
                 parent_smoothing=0.0, n_states_pre=None, v=1, h=0, tag_parent=False,
                 min_count=20, rare_threshold=1, prune_threshold=1e-4, coarse_threshold=1e-3,
                 random_state=0, jobs=None, state_map=None):
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
        self.random_state = random_state
        self.jobs = jobs
        self.state_map = state_map

    def _validate(self):
        self._check_common_params()
        _check_int("rare_threshold", self.rare_threshold, 0)
        try:
            pairs = [tuple(p) for p in self.feature_pairs]
            ok = bool(pairs) and all(len(p) == 2 and all(0 <= int(x) < 6 for x in p)
                                     for p in pairs)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"feature_pairs must be a non-empty list of (inside, outside) "
                             f"template indices in 0..5, got {self.feature_pairs!r}")
        for name in ("anchor_min_count", "mixture_iterations", "mdp_em_iterations"):
            _check_int(name, getattr(self, name), 1)
        if not isinstance(self.mixture_tol, (int, float, np.integer, np.floating)):
            raise ValueError(f"mixture_tol must be a number, got {self.mixture_tol!r}")
        if not (isinstance(self.parent_smoothing, (int, float, np.integer, np.floating))
                and 0.0 <= self.parent_smoothing < 1.0):
            raise ValueError(f"parent_smoothing must be in [0, 1), got {self.parent_smoothing!r}")

    def _learn(self, layout: LatentLayout, seed: int) -> PivotEstimate:
        """The pivot estimates on ``layout`` with this model's settings (validated)."""
        return pivot_estimate(layout, feature_pairs=self.feature_pairs,
                              anchor_min_count=self.anchor_min_count,
                              mixture_iterations=self.mixture_iterations,
                              mixture_tol=self.mixture_tol,
                              mdp_em_iterations=self.mdp_em_iterations,
                              parent_smoothing=self.parent_smoothing, seed=seed, jobs=self.jobs)

    def fit(self, trees):
        """Estimate the model from treebank trees.

        Parameters
        ----------
        trees : iterable of Tree
            Training trees (raw or cleaned).

        Returns
        -------
        PivotLPCFG
            self, fitted.
        """
        from threadpoolctl import threadpool_limits

        self._validate()
        seed = resolve_random_state(self.random_state)
        t0 = time.perf_counter()
        with threadpool_limits(limits=1):
            prep = self._prepare_treebank(trees, t0)
            m = state_counts(prep.nodes, prep.grammar, self.n_states, self.n_states_pre,
                             self.min_count, self.state_map)
            layout = LatentLayout(prep.nodes, prep.grammar, m, self.rare_threshold)
            est = self._learn(layout, seed)
            arrays = latent_arrays(layout, est.params)
        self._install(prep.pcfg, arrays)
        self.params_ = est.params
        self.anchored_states_ = est.anchored_states
        self.mixture_iterations_ = est.mixture_iterations
        self.decomposition_time_ = est.decomposition_seconds
        self.n_train_trees_ = prep.n_trees
        self.fit_time_ = time.perf_counter() - t0
        return self

    @classmethod
    def _params_from_file(cls, params: dict) -> dict:
        out = super()._params_from_file(params)
        if out.get("feature_pairs") is not None:
            out["feature_pairs"] = _pairs_from_json(out["feature_pairs"])
        return out

    def log_likelihood(self, trees) -> float:
        """Total log-probability of treebank ``trees`` under the model (prepared and scored as
        :meth:`tree_probability`: the PCFG's smoothed ``P(w | p)`` times the latent ratios)."""
        self._check_fitted()
        return self._log_likelihood(trees)

