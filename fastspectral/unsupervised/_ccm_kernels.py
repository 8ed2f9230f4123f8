"""Compiled kernels of the constituent-context model (Klein & Manning 2002): span hashing,
the inside-outside E-step over binary bracketings (log space) and Viterbi decoding."""
from __future__ import annotations

import numpy as np
from .._jit import njit

__all__ = ["span_hashes", "split_uniform_posteriors", "estep", "viterbi_batch"]

_BASE = np.uint64(1099511628211)     # FNV prime; tag ids are hashed from 1


@njit(cache=True)
def span_hashes(offsets, tags, n_tags):  # pragma: no cover - numba
    """For every sentence and span ``i < j`` (order: i, then j): the 64-bit hash of the
    yield's tags and the context id ``(tag[i-1] or <s>) * (T + 2) + (tag[j] or </s>)``."""
    total = 0
    for s in range(len(offsets) - 1):
        n = offsets[s + 1] - offsets[s]
        total += n * (n + 1) // 2
    H = np.empty(total, np.uint64)
    C = np.empty(total, np.int64)
    w = 0
    T2 = n_tags + 2
    for s in range(len(offsets) - 1):
        a = offsets[s]
        n = offsets[s + 1] - a
        for i in range(n):
            h = np.uint64(14695981039346656037)
            left = tags[a + i - 1] if i > 0 else n_tags
            for j in range(i + 1, n + 1):
                h = (h ^ np.uint64(tags[a + j - 1] + 1)) * _BASE
                H[w] = h
                right = tags[a + j] if j < n else n_tags + 1
                C[w] = left * T2 + right
                w += 1
    return H, C


@njit(cache=True)
def _span_index(n, i, j):  # pragma: no cover - numba
    # spans of a sentence ordered by i then j: index of (i, j)
    return i * n - (i * (i - 1)) // 2 + (j - i - 1)


@njit(cache=True)
def split_uniform_posteriors(offsets):  # pragma: no cover - numba
    """Probability that each span is a constituent of a binary tree drawn by choosing every
    split uniformly (Klein & Manning's initialiser)."""
    total = 0
    for s in range(len(offsets) - 1):
        n = offsets[s + 1] - offsets[s]
        total += n * (n + 1) // 2
    out = np.zeros(total)
    base = 0
    for s in range(len(offsets) - 1):
        n = offsets[s + 1] - offsets[s]
        q = np.zeros((n + 1, n + 1))
        q[0, n] = 1.0
        for L in range(n, 1, -1):
            for a in range(0, n - L + 1):
                b = a + L
                if q[a, b] == 0.0:
                    continue
                share = q[a, b] / (L - 1)
                for m in range(a + 1, b):
                    q[a, m] += share
                    q[m, b] += share
        for i in range(n):
            for j in range(i + 1, n + 1):
                out[base + _span_index(n, i, j)] = q[i, j]
        base += n * (n + 1) // 2
    return out


@njit(cache=True)
def _logadd(a, b):  # pragma: no cover - numba
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@njit(cache=True)
def estep(offsets, yid, cid, lcy, lcx, ldy, ldx, post):  # pragma: no cover - numba
    """Posterior of every span being a constituent (``post``) under the CCM with log
    probabilities ``lcy[yield], lcx[context]`` (constituents) and ``ldy, ldx`` (distituents);
    returns the log-likelihood (up to the constant of the uniform tree prior)."""
    ll = 0.0
    base = 0
    for s in range(len(offsets) - 1):
        n = offsets[s + 1] - offsets[s]
        m = n * (n + 1) // 2
        if n == 1:
            post[base] = 1.0
            base += m
            continue
        phi = np.zeros((n + 1, n + 1))
        dist_all = 0.0
        for i in range(n):
            for j in range(i + 1, n + 1):
                k = base + _span_index(n, i, j)
                phi[i, j] = lcy[yid[k]] + lcx[cid[k]] - ldy[yid[k]] - ldx[cid[k]]
                dist_all += ldy[yid[k]] + ldx[cid[k]]
        ins = np.full((n + 1, n + 1), -np.inf)
        for i in range(n):
            ins[i, i + 1] = phi[i, i + 1]
        for L in range(2, n + 1):
            for i in range(0, n - L + 1):
                j = i + L
                acc = -np.inf
                for k in range(i + 1, j):
                    acc = _logadd(acc, ins[i, k] + ins[k, j])
                ins[i, j] = acc + phi[i, j]
        out = np.full((n + 1, n + 1), -np.inf)
        out[0, n] = 0.0
        for L in range(n, 1, -1):
            for i in range(0, n - L + 1):
                j = i + L
                o = out[i, j] + phi[i, j]
                if o == -np.inf:
                    continue
                for k in range(i + 1, j):
                    out[i, k] = _logadd(out[i, k], o + ins[k, j])
                    out[k, j] = _logadd(out[k, j], o + ins[i, k])
        Z = ins[0, n]
        ll += Z + dist_all
        for i in range(n):
            for j in range(i + 1, n + 1):
                p = np.exp(ins[i, j] + out[i, j] - Z)
                post[base + _span_index(n, i, j)] = min(p, 1.0)
        base += m
    return ll


@njit(cache=True)
def viterbi_batch(offsets, yid_lc, cid_lc, out):  # pragma: no cover - numba
    """Best binary bracketing of every sentence under span scores ``yid_lc[k] + cid_lc[k]``
    (log phi of span k); writes the internal nodes (start, end, split) in preorder."""
    base = 0
    for s in range(len(offsets) - 1):
        n = offsets[s + 1] - offsets[s]
        m = n * (n + 1) // 2
        o = offsets[s] - s
        if n >= 2:
            best = np.full((n + 1, n + 1), -np.inf)
            arg = np.zeros((n + 1, n + 1), np.int64)
            for i in range(n):
                k = base + _span_index(n, i, i + 1)
                best[i, i + 1] = yid_lc[k] + cid_lc[k]
            for L in range(2, n + 1):
                for i in range(0, n - L + 1):
                    j = i + L
                    b, a = -np.inf, i + 1
                    for k in range(i + 1, j):
                        v = best[i, k] + best[k, j]
                        if v > b:
                            b, a = v, k
                    k2 = base + _span_index(n, i, j)
                    best[i, j] = b + yid_lc[k2] + cid_lc[k2]
                    arg[i, j] = a
            stack = np.empty((n, 2), np.int64)
            top = 1
            stack[0, 0], stack[0, 1] = 0, n
            w = o
            while top > 0:
                top -= 1
                x, y = stack[top, 0], stack[top, 1]
                mm = arg[x, y]
                out[w, 0], out[w, 1], out[w, 2] = x, y, mm
                w += 1
                if y - mm >= 2:
                    stack[top, 0], stack[top, 1] = mm, y
                    top += 1
                if mm - x >= 2:
                    stack[top, 0], stack[top, 1] = x, mm
                    top += 1
        base += m
    return out
