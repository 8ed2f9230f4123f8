"""Pivot (anchor) learning of L-PCFGs: Cohen & Collins (ACL 2014), figure 1 and section 6.

>>> from fastspectral.lpcfg.pivot import PivotLPCFG
>>> model = PivotLPCFG(n_states=16).fit(trees)                              # doctest: +SKIP
>>> model.parse([["The", "dog", "barks", "."]])                              # doctest: +SKIP

Unlike the spectral learner this returns genuine, non-negative, normalised L-PCFG parameters (so
they can initialise EM: ``EMLPCFG(init="pivot")``, "Pivot+EM").

Algorithm (per fitted treebank; symbols, rules, state counts and lexical classes exactly as in
:mod:`fastspectral.lpcfg.em`):

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
   uniform distribution (compiled with Numba, parallel over rules, ``em_iterations`` at most,
   stopping when the per-node gain falls below ``em_tol``).  Unary rules ``a -> p`` (matrices),
   lexical classes ``p -> k`` (``p(h | p -> k)`` from the outside evidence alone) and roots
   (``p(h | a at the root)`` from the inside evidence alone) are the same problem with fewer
   factors.
3. **Normalisation and recovery of pi, q** (step 3, section 6.1).  With ``c(rule)`` the rule
   counts, the pseudo-counts ``c(rule) t(h1, h2, h3 | rule)`` are normalised per ``(a, h1)``:
   ``t(a -> b c, h2, h3 | a, h1) = P(a -> b c | a) t(h1, h2, h3 | a -> b c) / p(h1 | a)`` with
   ``p(h1 | a) = sum_rules P(rule | a) p(h1 | rule)``, likewise for unary rules and emissions
   ``q(k | p, h)``, and ``pi(a, h) = P(root = a) p(h | a at the root)``.

Parsing is the spectral model's (coarse-to-fine, compiled tensor inside-outside, max-recall).
"""
from __future__ import annotations

import math
import time

import numba
import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from .._blas import blas_single_thread
from .em import LatentLayout, LatentModelBase, LatentParams, _set_threads, m_step, uniform_counts

__all__ = ["PivotLPCFG", "AnchoredExample", "group_mixture_em", "symbol_decomposition"]



@njit(parallel=True, fastmath=True, cache=True)
def _group_em(order, gptr, run, e1, e2, e3, gm1, gm2, gm3, weight, E, toff, T, max_iter, tol,
              loglik, iters):  # pragma: no cover - numba
    """Per group ``g``: maximise ``sum_k w_k log sum_h T[h1,h2,h3] E1_k[h1] E2_k[h2] E3_k[h3]``
    over the simplex by EM (from uniform).

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
    (concave), starting from uniform.  Returns ``(t_flat, toff, loglik, iters)`` with group
    ``g``'s distribution at ``t_flat[toff[g]:toff[g+1]]`` (row-major ``(m1, m2, m3)``).
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
    _set_threads(jobs)
    with blas_single_thread(), numba.parallel_chunksize(1):
        _group_em(gorder, gptr, run.astype(np.int64), e1s, np.asarray(e2, np.int64)[order],
                  np.asarray(e3, np.int64)[order], m1, m2, m3, np.ascontiguousarray(w[order]),
                  np.ascontiguousarray(E, dtype=np.float64), toff, T, int(max_iter), float(tol),
                  loglik, iters)
    return T, toff, loglik, iters


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

    ``f``, ``g``: local feature ids (0..) per node; ``m``: states.  Returns ``(r, s, k)`` with
    ``r`` (``n_f x m``, ``r(f | h)``), ``s`` (``n_g x m``, ``s(g | h)`` in the same numbering),
    and ``k`` the number of anchored states (states ``k..m-1`` get the marginals).
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
    return r, s, k


def _align(post_ref, post_new):
    """Permutation ``perm`` with ``post_new[:, perm]`` best matching ``post_ref`` (Hungarian)."""
    from scipy.optimize import linear_sum_assignment

    C = post_ref.T @ post_new
    _, cols = linear_sum_assignment(-C)
    return cols


class PivotLPCFG(LatentModelBase):
    """L-PCFG estimated by the pivot (anchor) method of Cohen & Collins (2014).

    Parameters (besides those of :class:`~fastspectral.lpcfg.em.LatentModelBase`)
    ----------
    feature_pairs : list of ``(inside template, outside template)`` column pairs of the
        tree-fragment features (:mod:`fastspectral._ext.lpcfg_features`, 0-based); the first
        pair defines the states' numbering, the objective of step 2 sums over all pairs.
    anchor_min_count : features seen fewer times cannot be anchors.
    em_iterations, em_tol : limits of the convex EM of step 2 (per-node log-likelihood gain).
    mdp_em_iterations : limit of MDP 1's EM for ``t(h' | h)``.
    smoothing : ``alpha`` of the final normalisation's smoothing over parent states (as EM's).
    """

    model_kind = "pivot-lpcfg"

    def __init__(self, n_states=16, feature_pairs=((1, 1), (0, 0), (3, 3)), anchor_min_count=10,
                 em_iterations=30, em_tol=1e-5, mdp_em_iterations=100, smoothing=0.0,
                 n_states_pre=None, v=1, h=0, tag_parent=False, min_count=20, rare_threshold=1,
                 prune_threshold=1e-4, coarse_threshold=1e-3, seed=0, jobs=None, state_map=None):
        super().__init__(n_states=n_states, n_states_pre=n_states_pre, v=v, h=h,
                         tag_parent=tag_parent, min_count=min_count,
                         rare_threshold=rare_threshold, prune_threshold=prune_threshold,
                         coarse_threshold=coarse_threshold, seed=seed, jobs=jobs,
                         state_map=state_map)
        self.feature_pairs = feature_pairs
        self.anchor_min_count = anchor_min_count
        self.em_iterations = em_iterations
        self.em_tol = em_tol
        self.mdp_em_iterations = mdp_em_iterations
        self.smoothing = smoothing

    def get_params(self) -> dict:
        """Constructor arguments."""
        p = super().get_params()
        p.update({"feature_pairs": [list(x) for x in self.feature_pairs],
                  "anchor_min_count": self.anchor_min_count, "em_iterations": self.em_iterations,
                  "em_tol": self.em_tol, "mdp_em_iterations": self.mdp_em_iterations,
                  "smoothing": self.smoothing})
        return p

    def _validate(self):
        super()._validate()
        pairs = [tuple(p) for p in self.feature_pairs]
        if not pairs or any(len(p) != 2 or not all(0 <= int(x) < 6 for x in p) for p in pairs):
            raise ValueError(f"feature_pairs must be a non-empty list of (inside, outside) "
                             f"template indices in 0..5, got {self.feature_pairs!r}")
        if self.anchor_min_count < 1 or self.em_iterations < 1 or self.mdp_em_iterations < 1:
            raise ValueError("anchor_min_count, em_iterations and mdp_em_iterations must be >= 1")
        if not (0.0 <= self.smoothing < 1.0):
            raise ValueError(f"smoothing must be in [0, 1), got {self.smoothing!r}")

    # ------------------------------------------------------------------ step 1
    def _evidence(self, layout: LatentLayout, kin, kout):
        """Evidence vectors of step 2, stored once per (symbol, feature value).

        Returns ``(E, in_off, out_off)``: the flat evidence array (``E[0] = 1`` is the evidence
        of one-state symbols) and, per feature pair, every node's offset of its inside vector
        ``r(f(n) | .)`` and outside vector ``s(g(n) | .)`` (rescaled to max 1: the convex EM is
        invariant to a per-item scale)."""
        lay = layout
        label = lay.label
        m = lay.m
        N = lay.N
        pairs = [tuple(int(x) for x in p) for p in self.feature_pairs]
        chunks = [np.ones(1)]
        pos = 1
        in_all, out_all = [], []
        post_ref = {}
        self.anchored_states_ = {}
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
                r, s, k = symbol_decomposition(fid[idx], gid[idx], ma, self.anchor_min_count,
                                               self.seed + int(a), self.mdp_em_iterations)
                if pi_ == 0:
                    self.anchored_states_[int(a)] = k
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
        return np.concatenate(chunks), in_all, out_all

    # ------------------------------------------------------------------ steps 2-3
    def _solve(self, grp, e1, e2, e3, m1, m2, m3, E):
        """Convex EM over de-duplicated items (identical evidence triples are counted once with
        their multiplicity as weight)."""
        key = np.stack([grp, e1, e2, e3], axis=1)
        uniq, cnt = np.unique(key, axis=0, return_counts=True)
        return group_mixture_em(uniq[:, 0], uniq[:, 1], uniq[:, 2], uniq[:, 3], m1, m2, m3, E,
                                weight=cnt.astype(np.float64), max_iter=self.em_iterations,
                                tol=self.em_tol, jobs=self.jobs)

    def _learn(self, layout: LatentLayout) -> LatentParams:
        from .features import default_feature_keys

        self._validate()
        t0 = time.perf_counter()
        lay = layout
        kin, kout = default_feature_keys(lay.nodes)
        E, ins, outs = self._evidence(lay, kin, kout)
        t1 = time.perf_counter()
        P = len(ins)
        m = lay.m
        counts = lay.zeros()
        R = len(lay.bin_parent)
        # binary rules: one item per (node, feature pair)
        rn = lay.rnodes
        grp = np.tile(np.repeat(np.arange(R, dtype=np.int64), np.diff(lay.rptr)), P)
        e1 = np.concatenate([outs[p][rn] for p in range(P)])
        e2 = np.concatenate([ins[p][lay.left[rn]] for p in range(P)])
        e3 = np.concatenate([ins[p][lay.right[rn]] for p in range(P)])
        tb, toff, ll_b, it_b = self._solve(grp, e1, e2, e3, m[lay.bin_parent], m[lay.bin_left],
                                           m[lay.bin_right], E)
        counts.T[:] = tb * np.repeat(lay.bin_count, np.diff(toff))
        # unary rules
        un = lay.un_nodes
        Un = len(lay.un_parent)
        if Un:
            grp = np.tile(lay.urule[un], P)
            e1 = np.concatenate([outs[p][un] for p in range(P)])
            e2 = np.concatenate([ins[p][lay.left[un]] for p in range(P)])
            tu, uoff, _, _ = self._solve(grp, e1, e2, np.zeros_like(e1), m[lay.un_parent],
                                         m[lay.un_child], np.ones(Un, np.int64), E)
            counts.U[:] = tu * np.repeat(lay.un_count, np.diff(uoff))
        # lexical classes p -> k: outside evidence only
        lf = lay.leaf_nodes
        nrow = len(lay.lex_sym)
        grp = np.tile(lay.lexrow[lf], P)
        e1 = np.concatenate([outs[p][lf] for p in range(P)])
        zero = np.zeros_like(e1)
        tl, loff, _, _ = self._solve(grp, e1, zero, zero, m[lay.lex_sym], np.ones(nrow, np.int64),
                                     np.ones(nrow, np.int64), E)
        counts.L[:] = tl * np.repeat(lay.lex_count, np.diff(loff))
        # roots: inside evidence only (groups = symbols)
        rt = lay.root_nodes
        S = lay.S
        grp = np.tile(lay.label[rt], P)
        e1 = np.concatenate([ins[p][rt] for p in range(P)])
        zero = np.zeros_like(e1)
        tr, roff, _, _ = self._solve(grp, e1, zero, zero, m, np.ones(S, np.int64),
                                     np.ones(S, np.int64), E)
        counts.c1[:] = tr * np.repeat(lay.root_count, m)
        params = m_step(lay, counts, self.smoothing)
        # a state that got no mass anywhere (dead) would make its rows zero: give it the PCFG
        spread = m_step(lay, uniform_counts(lay))
        params = _fill_dead_states(lay, params, spread)
        self.convex_em_iterations_ = it_b
        self.decomposition_seconds_ = t1 - t0
        self.learn_seconds_ = time.perf_counter() - t0
        return params

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"PivotLPCFG({params})"


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


# ================================================================================================
# a planted L-PCFG that satisfies the pivot (anchor) assumption: synthetic recovery experiments
# ================================================================================================
class AnchoredExample:
    """A small L-PCFG whose every latent state has an inside anchor (a rule or word used only in
    that state) and an outside anchor (a parent rule and side that only produce that state), for
    the inside template ``code(node)`` and the outside template ``(code(parent), side)``.

    Symbols ``S`` (one state, root), ``NP``, ``VP`` (two states; ``NP`` can also be the root) and
    pre-terminals ``D``, ``N``, ``V`` (two states).  ``sample(n, seed)`` draws treebank trees;
    ``rules[a]`` lists ``((b, c), P(a -> b c | a, h) per h)``; ``children[(a, b, c)]`` is
    ``p(h2, h3 | a -> b c, h1)`` (``m_a x m_b x m_c``); ``emissions[p] = (words, q)`` with
    ``q[h, i] = q(words[i] | p, h)``; ``root[a] = pi(a, .)``.
    """

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.states = {"S": 1, "NP": 2, "VP": 2, "D": 2, "N": 2, "V": 2}
        self.rules = {
            "S": [(("NP", "VP"), [0.6]), (("VP", "NP"), [0.4])],
            "NP": [(("D", "N"), [0.7, 0.0]), (("N", "N"), [0.3, 0.5]), (("N", "D"), [0.0, 0.5])],
            "VP": [(("V", "NP"), [0.6, 0.0]), (("V", "N"), [0.4, 0.6]), (("N", "V"), [0.0, 0.4])],
        }
        # child state distributions; None = a random distribution per parent state
        fixed = {("S", "NP", "VP"): (0, 0), ("S", "VP", "NP"): (1, 1),
                 ("NP", "D", "N"): (0, 0), ("NP", "N", "D"): (1, 1),
                 ("VP", "V", "NP"): (0, None), ("VP", "N", "V"): (None, 1)}
        self.children = {}
        for a, rl in self.rules.items():
            ma = self.states[a]
            for (b, c), _ in rl:
                mb, mc = self.states[b], self.states[c]
                fb, fc = fixed.get((a, b, c), (None, None))
                t = np.zeros((ma, mb, mc))
                for h1 in range(ma):
                    pb = np.eye(mb)[fb] if fb is not None else rng.dirichlet(np.full(mb, 2.0))
                    pc = np.eye(mc)[fc] if fc is not None else rng.dirichlet(np.full(mc, 2.0))
                    t[h1] = np.outer(pb, pc)
                self.children[(a, b, c)] = t
        self.emissions = {
            "D": (["the", "a", "this"], np.array([[0.6, 0.4, 0.0], [0.0, 0.5, 0.5]])),
            "N": (["dog", "cat", "idea", "car"], np.array([[0.5, 0.3, 0.2, 0.0],
                                                           [0.0, 0.3, 0.2, 0.5]])),
            "V": (["runs", "sees", "eats"], np.array([[0.6, 0.4, 0.0], [0.0, 0.5, 0.5]])),
        }
        self.root = {"S": np.array([0.7]), "NP": np.array([0.1, 0.2])}

    def tensor(self, a, b, c) -> np.ndarray:
        """True ``t(a -> b c, h2, h3 | a, h1)`` (``m_a x m_b x m_c``)."""
        probs = dict((bc, p) for bc, p in self.rules[a])[(b, c)]
        return np.asarray(probs)[:, None, None] * self.children[(a, b, c)]

    def sample(self, n, seed=0):
        """``n`` trees (rooted at TOP) drawn from the model."""
        from ..trees.tree import Tree

        rng = np.random.default_rng(seed)
        roots = [(a, h) for a, v in self.root.items() for h in range(len(v))]
        rp = np.array([self.root[a][h] for a, h in roots])

        def grow(a, h):
            if a in self.emissions:
                words, q = self.emissions[a]
                return Tree(a, [words[rng.choice(len(words), p=q[h])]])
            rl = self.rules[a]
            k = rng.choice(len(rl), p=[p[h] for _, p in rl])
            b, c = rl[k][0]
            t = self.children[(a, b, c)][h]
            flat = rng.choice(t.size, p=t.ravel())
            h2, h3 = divmod(int(flat), t.shape[1])
            return Tree(a, [grow(b, h2), grow(c, h3)])

        out = []
        for _ in range(n):
            a, h = roots[rng.choice(len(roots), p=rp)]
            out.append(Tree("TOP", [grow(a, h)]))
        return out

    def fit_options(self) -> dict:
        """Keyword arguments of :class:`PivotLPCFG` matching this grammar's states and anchors."""
        return {"n_states": 2, "v": 1, "h": 1, "min_count": 1, "rare_threshold": 0,
                "feature_pairs": ((0, 0),), "state_map": {"S": 1}}

    def recovery_error(self, model) -> dict:
        """Max-abs errors of ``t``, ``q`` and ``pi`` of a fitted model, after the best
        permutation of every symbol's states (matched on ``P(rule | a, h)`` / ``q(. | p, h)``)."""
        from itertools import permutations

        g = model.pcfg_.grammar_
        lg = model.lpcfg_
        sid = g.sym_index
        perm = {}
        # learned per-state signatures
        for a, k in self.states.items():
            if k == 1:
                perm[a] = np.zeros(1, dtype=np.int64)
                continue
            if a in self.emissions:
                words, q = self.emissions[a]
                est = np.stack([self._q(model, a, w) for w in words], axis=1)
                truth = q
            else:
                rl = self.rules[a]
                est = np.stack([lg.tensor(lg.rule_index(sid[a], sid[b], sid[c])).sum((1, 2))
                                for (b, c), _ in rl], axis=1)
                truth = np.stack([np.asarray(p) for _, p in rl], axis=1)
            best = min(permutations(range(k)),
                       key=lambda p: np.abs(est[list(p)] - truth).sum())
            perm[a] = np.array(best)
        t_err = 0.0
        for a, rl in self.rules.items():
            for (b, c), _ in rl:
                est = lg.tensor(lg.rule_index(sid[a], sid[b], sid[c]))
                est = est[perm[a]][:, perm[b]][:, :, perm[c]]
                t_err = max(t_err, float(np.abs(est - self.tensor(a, b, c)).max()))
        q_err = 0.0
        for p, (words, q) in self.emissions.items():
            est = np.stack([self._q(model, p, w) for w in words], axis=1)[perm[p]]
            q_err = max(q_err, float(np.abs(est - q).max()))
        pi_err = 0.0
        for a, v in self.root.items():
            est = lg.root(sid[a])
            est = np.zeros(len(v)) if est is None else est[perm[a]]
            pi_err = max(pi_err, float(np.abs(est - v).max()))
        return {"t": t_err, "q": q_err, "pi": pi_err}

    @staticmethod
    def _q(model, p, word) -> np.ndarray:
        """``q(word | p, h)`` of a fitted model: MLE ``P(word | p)`` times the latent ratio."""
        g = model.pcfg_.grammar_
        a = g.sym_index[p]
        V1 = len(model.vocab_) + 1
        w = model.word_index_[word]
        k = int(np.searchsorted(model.lex_keys_, a * V1 + w))
        ma = int(model.lpcfg_.m[a])
        if k >= len(model.lex_keys_) or model.lex_keys_[k] != a * V1 + w:
            return np.zeros(ma)
        pw = model.lex_count_[k] / model.tag_count_[a]
        off = int(model.lex_off_[k])
        return pw * model.lex_table_[off:off + ma]
