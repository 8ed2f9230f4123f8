"""Compiled kernels of the additive-tree-metric parser (Parikh, Cohen & Xing 2014).

* :func:`count_anchor_pairs` / :func:`anchor_sums`: the sums ``sum x_j x_k^T`` (and the
  first moments) of every word pair ``j < k`` of the corpus grouped by anchor
  ``(tag_j, tag_k, k - j)`` — one pass over the pairs, so the kernel-smoothed covariance of
  section 3.4 costs ``O(pairs * p^2)`` plus ``O(anchors * gamma * p^2)``, linear in the corpus;
* :func:`parse_batch`: the minimal projective latent tree (eq. 6) by dynamic programming over
  (span, parent span) with the leaf and internal edge lengths of eqs. 3-4 averaged over the
  leaves of the four subtrees (2-D prefix sums make each average O(1)).
"""
from __future__ import annotations

import numpy as np
from .._jit import njit

__all__ = ["count_anchor_pairs", "anchor_sums", "parse_batch", "tree_cost"]


@njit(cache=True)
def count_anchor_pairs(offsets, tags, n_tags, max_dist):  # pragma: no cover - numba
    """``N[t1, t2, d]``: pairs ``j < k`` with tags ``t1, t2`` at distance ``min(k-j, max_dist)``
    and ``Nd[t]``: positions tagged ``t``."""
    N = np.zeros((n_tags, n_tags, max_dist + 1), np.int64)
    Nd = np.zeros(n_tags, np.int64)
    for s in range(len(offsets) - 1):
        a, b = offsets[s], offsets[s + 1]
        for j in range(a, b):
            Nd[tags[j]] += 1
            for k in range(j + 1, b):
                d = k - j
                if d > max_dist:
                    d = max_dist
                N[tags[j], tags[k], d] += 1
    return N, Nd


@njit(cache=True)
def anchor_sums(offsets, tags, vec_ids, vecs, slot, max_dist, n_slots, n_tags):  # pragma: no cover
    """Sums per occurring anchor (``slot[t1, t2, d]`` >= 0): ``S[slot] = sum x_j x_k^T``,
    ``A[slot] = sum x_j``, ``B[slot] = sum x_k``; and per tag ``Sd[t] = sum x_j x_j^T``,
    ``Ad[t] = sum x_j``."""
    p = vecs.shape[1]
    S = np.zeros((n_slots, p, p))
    A = np.zeros((n_slots, p))
    B = np.zeros((n_slots, p))
    Sd = np.zeros((n_tags, p, p))
    Ad = np.zeros((n_tags, p))
    for s in range(len(offsets) - 1):
        a, b = offsets[s], offsets[s + 1]
        for j in range(a, b):
            xj = vecs[vec_ids[j]]
            tj = tags[j]
            for u in range(p):
                Ad[tj, u] += xj[u]
                for v in range(p):
                    Sd[tj, u, v] += xj[u] * xj[v]
            for k in range(j + 1, b):
                d = k - j
                if d > max_dist:
                    d = max_dist
                q = slot[tj, tags[k], d]
                xk = vecs[vec_ids[k]]
                for u in range(p):
                    A[q, u] += xj[u]
                    B[q, u] += xk[u]
                    xu = xj[u]
                    for v in range(p):
                        S[q, u, v] += xu * xk[v]
    return S, A, B, Sd, Ad


# ---------------------------------------------------------------------------- tree decoding
@njit(cache=True, inline="always")
def _rect(P, a, b, c, d):  # pragma: no cover - numba
    return P[b, d] - P[a, d] - P[b, c] + P[a, c]


@njit(cache=True, inline="always")
def _mss(P, a, b, c, d):  # pragma: no cover - numba
    """Mean distance between the leaves of spans [a, b) and [c, d)."""
    return _rect(P, a, b, c, d) / ((b - a) * (d - c))


@njit(cache=True, inline="always")
def _msu(P, a, b, ps, pe, n):  # pragma: no cover - numba
    """Mean distance between span [a, b) and the complement of [ps, pe)."""
    return (_rect(P, a, b, 0, ps) + _rect(P, a, b, pe, n)) / ((b - a) * (n - pe + ps))


@njit(cache=True)
def _prefix_sums(D):  # pragma: no cover - numba
    """2-D prefix sums of the n x n matrix ``D``: ``P[b, d] = sum D[:b, :d]``."""
    n = D.shape[0]
    P = np.zeros((n + 1, n + 1))
    for i in range(n):
        for j in range(n):
            P[i + 1, j + 1] = P[i, j + 1] + P[i + 1, j] - P[i, j] + D[i, j]
    return P


@njit(cache=True, inline="always")
def _child_cost(P, BL, BR, x, y, s0, s1, u0, u1, n):  # pragma: no cover - numba
    """Best cost of the subtree (x, y) plus its up-edge, and its best split (0 for a leaf
    pair, ``y - x == 1``), where (x, y) is a child whose sibling is the span [s0, s1) and whose
    parent's outside is the complement of [u0, u1): (x, y) left child of (x, pe) is
    ``s = [y, pe)``, ``u = [x, pe)``; right child of (ps, y) is ``s = [ps, x)``, ``u = [ps, y)``."""
    dsu = _msu(P, s0, s1, u0, u1, n)
    if y - x == 1:
        return 0.5 * (_mss(P, x, y, s0, s1) + _msu(P, x, y, u0, u1, n) - dsu), 0
    best, arg = np.inf, 0
    for m in range(x + 1, y):
        c = 0.25 * (_mss(P, x, m, s0, s1) + _msu(P, x, m, u0, u1, n)
                    + _mss(P, m, y, s0, s1) + _msu(P, m, y, u0, u1, n)) \
            - 0.5 * _mss(P, x, m, m, y) - 0.5 * dsu + BL[x, m, y] + BR[m, y, x]
        if c < best:
            best, arg = c, m
    return best, arg


@njit(cache=True)
def _decode(D, force, out, o):  # pragma: no cover - numba
    """Minimal projective tree of distance matrix ``D`` (n x n); ``force`` in 1..n-1 fixes
    the root split (-1: free).  Writes the n-1 internal nodes ``(start, end, split)`` in
    preorder into ``out[o:o+n-1]``; returns the tree's cost c(u)."""
    n = D.shape[0]
    if n < 2:
        return 0.0
    P = _prefix_sums(D)
    INF = np.inf
    # BL[x, y, pe]: best cost of the subtree (x, y) plus its up-edge, (x, y) the left child of
    # (x, pe); BR[x, y, ps]: (x, y) the right child of (ps, y).  The root (0, n) is excluded.
    BL = np.full((n + 1, n + 1, n + 1), INF)
    BR = np.full((n + 1, n + 1, n + 1), INF)
    SL = np.zeros((n + 1, n + 1, n + 1), np.int32)
    SR = np.zeros((n + 1, n + 1, n + 1), np.int32)
    for L in range(1, n):
        for x in range(0, n - L + 1):
            y = x + L
            # (x, y) as the left child of (x, pe): sibling [y, pe), up = outside [x, pe)
            for pe in range(y + 1, n + 1):
                if x == 0 and pe == n:
                    continue
                BL[x, y, pe], SL[x, y, pe] = _child_cost(P, BL, BR, x, y, y, pe, x, pe, n)
            # (x, y) as the right child of (ps, y): sibling [ps, x), up = outside [ps, y)
            for ps in range(0, x):
                if ps == 0 and y == n:
                    continue
                BR[x, y, ps], SR[x, y, ps] = _child_cost(P, BL, BR, x, y, ps, x, ps, y, n)
    # the root: children (0, k) and (k, n) joined by one edge
    best, bk, b1, b2 = INF, 1, 0, 0
    k0, k1 = 1, n
    if force >= 1:
        k0, k1 = force, force + 1
    for k in range(k0, k1):
        if k == 1 and n == 2:
            c, m1, m2 = D[0, 1], 0, 0
        elif k == 1:
            c, m1, m2 = INF, 0, 0
            for m in range(k + 1, n):
                v = 0.5 * (_mss(P, 0, 1, k, m) + _mss(P, 0, 1, m, n) - _mss(P, k, m, m, n)) \
                    + BL[k, m, n] + BR[m, n, k]
                if v < c:
                    c, m2 = v, m
        elif k == n - 1:
            c, m1, m2 = INF, 0, 0
            for m in range(1, k):
                v = 0.5 * (_mss(P, k, n, 0, m) + _mss(P, k, n, m, k) - _mss(P, 0, m, m, k)) \
                    + BL[0, m, k] + BR[m, k, 0]
                if v < c:
                    c, m1 = v, m
        else:
            c, m1, m2 = INF, 0, 0
            for ma in range(1, k):
                in1 = BL[0, ma, k] + BR[ma, k, 0] - 0.5 * _mss(P, 0, ma, ma, k)
                for mb in range(k + 1, n):
                    v = 0.25 * (_mss(P, 0, ma, k, mb) + _mss(P, 0, ma, mb, n)
                                + _mss(P, ma, k, k, mb) + _mss(P, ma, k, mb, n)) \
                        - 0.5 * _mss(P, k, mb, mb, n) + in1 + BL[k, mb, n] + BR[mb, n, k]
                    if v < c:
                        c, m1, m2 = v, ma, mb
        if c < best:
            best, bk, b1, b2 = c, k, m1, m2
    # preorder read-out
    stack = np.empty((n, 3), np.int64)
    top = 0
    w = o
    out[w, 0], out[w, 1], out[w, 2] = 0, n, bk
    w += 1
    if n - bk >= 2:
        stack[top, 0], stack[top, 1], stack[top, 2] = bk, n, b2
        top += 1
    if bk >= 2:
        stack[top, 0], stack[top, 1], stack[top, 2] = 0, bk, b1
        top += 1
    while top > 0:
        top -= 1
        x, y, m = stack[top, 0], stack[top, 1], stack[top, 2]
        out[w, 0], out[w, 1], out[w, 2] = x, y, m
        w += 1
        if y - m >= 2:
            stack[top, 0], stack[top, 1], stack[top, 2] = m, y, SR[m, y, x]
            top += 1
        if m - x >= 2:
            stack[top, 0], stack[top, 1], stack[top, 2] = x, m, SL[x, m, y]
            top += 1
    return best


@njit(cache=True)
def parse_batch(offsets, tags, table, force, out):  # pragma: no cover - numba
    """Decode every sentence (tag ids ``tags[offsets[s]:offsets[s+1]]``, distances
    ``table[t_j, t_k, min(k - j, D)]``): ``out[offsets[s] - s : ...]`` holds its internal
    nodes; returns the costs."""
    n_s = len(offsets) - 1
    costs = np.zeros(n_s)
    maxd = table.shape[2] - 1
    for s in range(n_s):
        a, b = offsets[s], offsets[s + 1]
        n = b - a
        if n < 2:
            continue
        D = np.zeros((n, n))
        for j in range(n):
            for k in range(j + 1, n):
                d = k - j
                if d > maxd:
                    d = maxd
                v = table[tags[a + j], tags[a + k], d]
                D[j, k] = v
                D[k, j] = v
        costs[s] = _decode(D, force[s], out, a - s)
    return costs


@njit(cache=True)
def tree_cost(D, nodes):  # pragma: no cover - numba
    """c(u) of the binary tree given by its internal nodes ``(start, end, split)`` (preorder,
    root first), with the averaged edge lengths of eqs. 3-4 (for tests)."""
    n = D.shape[0]
    P = _prefix_sums(D)
    split = np.full((n + 1, n + 1), -1, np.int64)
    for r in range(nodes.shape[0]):
        split[nodes[r, 0], nodes[r, 1]] = nodes[r, 2]
    k = split[0, n]
    total = 0.0
    # root edge
    if n == 2:
        return D[0, 1]
    if k == 1 or k == n - 1:
        lx, ly = (0, 1) if k == 1 else (n - 1, n)
        ox, oy = (1, n) if k == 1 else (0, n - 1)
        m = split[ox, oy]
        total += 0.5 * (_mss(P, lx, ly, ox, m) + _mss(P, lx, ly, m, oy) - _mss(P, ox, m, m, oy))
    else:
        m1, m2 = split[0, k], split[k, n]
        total += 0.25 * (_mss(P, 0, m1, k, m2) + _mss(P, 0, m1, m2, n) + _mss(P, m1, k, k, m2)
                         + _mss(P, m1, k, m2, n)) - 0.5 * _mss(P, 0, m1, m1, k) \
            - 0.5 * _mss(P, k, m2, m2, n)
    # every other edge: node (x, y) below parent (px, py) != root
    for r in range(nodes.shape[0]):
        px, py, pm = nodes[r, 0], nodes[r, 1], nodes[r, 2]
        if px == 0 and py == n:
            continue
        for (x, y) in ((px, pm), (pm, py)):
            if x == px:
                sx, sy = pm, py
            else:
                sx, sy = px, pm
            dsu = _msu(P, sx, sy, px, py, n)
            if y - x == 1:
                total += 0.5 * (_mss(P, x, y, sx, sy) + _msu(P, x, y, px, py, n) - dsu)
            else:
                m = split[x, y]
                total += 0.25 * (_mss(P, x, m, sx, sy) + _msu(P, x, m, px, py, n)
                                 + _mss(P, m, y, sx, sy) + _msu(P, m, y, px, py, n)) \
                    - 0.5 * _mss(P, x, m, m, y) - 0.5 * dsu
    return total
