"""Hankel counting of the spectral sequence learner (:mod:`fastspectral.hmm.spectral`).

Framed sequences ``z = START x_1 .. x_T STOP`` (:func:`frame`) and, for a basis of prefixes
``p`` (the symbols, START, and the ``max_basis`` most frequent length-2 prefixes) and suffixes
``s`` (the symbols, STOP, and the ``max_basis`` most frequent length-2 suffixes), the
expectations per sequence ``P[s, p] = E #(p s)``, ``p_1 = P[:, START]``, ``p_inf = P[STOP, :]``
and ``n[p] = E #(p)``.  :func:`hankel_data` looks the length-2 basis up by binary search over
sorted codes (sparse blocks, any vocabulary); :func:`dense_hankel` counts a small vocabulary's
block in one compiled pass over dense code tables (:class:`DenseHankel`).  Also the dense
bigram counts of the HMM's latent symbols (:func:`_bigram_counts`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from .._jit import njit

from .data import Encoded

__all__ = ["HankelData", "hankel_data", "DenseHankel", "dense_hankel", "frame"]

#: Hankel blocks (and length-2 code tables) with at most this many cells are dense
_DENSE_COUNT = 1 << 22


@dataclass
class HankelData:
    """Everything the spectral learner counts from the training sequences.

    ``F``: framed sequences (START = ``M``, STOP = ``M + 1``).  Per framed index ``i`` that is
    not a STOP (the split between ``i`` and ``i + 1``): prefix columns ``p1[i]`` (symbol or
    START) and ``p2[i]`` (length-2 prefix ending at ``i`` or -1), suffix rows ``s1[i]``
    (symbol, or STOP = ``M``) and ``s2[i]`` (length-2 suffix starting at ``i + 1`` or -1);
    entries at STOP indices are unused.  ``tok``: the framed indices of the tokens.
    ``n_rows`` / ``n_cols``: basis sizes; ``n_seq``: number of sequences.
    """
    F: np.ndarray
    p1: np.ndarray
    p2: np.ndarray
    s1: np.ndarray
    s2: np.ndarray
    tok: np.ndarray
    n_rows: int
    n_cols: int
    n_seq: int
    M: int
    prefix_codes: np.ndarray
    suffix_codes: np.ndarray

    def hankel(self) -> sp.csr_matrix:
        """``P[s, p] = E #(p s)`` (sparse, per sequence)."""
        keep = self.F != self.M + 1
        p1, p2, s1, s2 = self.p1[keep], self.p2[keep], self.s1[keep], self.s2[keep]
        rows = [s1]
        cols = [p1]
        m = p2 >= 0
        rows.append(s1[m]); cols.append(p2[m])
        m = s2 >= 0
        rows.append(s2[m]); cols.append(p1[m])
        m = (s2 >= 0) & (p2 >= 0)
        rows.append(s2[m]); cols.append(p2[m])
        return _coo(np.concatenate(rows), np.concatenate(cols), self.n_rows, self.n_cols,
                    1.0 / self.n_seq)

    def prefix_counts(self) -> np.ndarray:
        """``n[p] = E #(p)``: occurrences of every basis prefix, per sequence."""
        keep = self.F != self.M + 1
        n = np.bincount(self.p1[keep], minlength=self.n_cols).astype(np.float64)
        p2 = self.p2[keep]
        n += np.bincount(p2[p2 >= 0], minlength=self.n_cols)
        return n / self.n_seq


def _coo(rows, cols, nr, nc, scale) -> sp.csr_matrix:
    if nr * nc <= _DENSE_COUNT:         # one bincount: 5-10x faster than COO -> CSR
        D = np.bincount(rows * nc + cols, minlength=nr * nc).reshape(nr, nc) * scale
        return sp.csr_matrix(D)
    A = sp.csr_matrix((np.full(len(rows), scale), (rows, cols)), shape=(nr, nc))
    A.sum_duplicates()
    return A


def _top_codes(codes, ok, k):
    """The ``k`` most frequent codes among ``codes[ok]`` (ties: smaller code first), sorted."""
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    u, cnt = np.unique(codes[ok], return_counts=True)
    top = u[np.argsort(-cnt, kind="stable")[:k]]
    return np.sort(top)


def _lookup(sorted_codes, codes, valid, base):
    """``base + rank`` of every valid code found in ``sorted_codes``, -1 otherwise."""
    out = np.full(len(codes), -1, dtype=np.int64)
    if len(sorted_codes) == 0:
        return out
    hi = int(sorted_codes[-1]) + 1
    if hi <= _DENSE_COUNT:              # a dense code -> rank table: one gather
        table = np.full(hi + 1, -1, dtype=np.int64)
        table[sorted_codes] = base + np.arange(len(sorted_codes))
        c = np.where(valid, np.minimum(codes, hi), hi)
        return table[c]
    pos = np.searchsorted(sorted_codes, codes)
    pos = np.minimum(pos, len(sorted_codes) - 1)
    hit = valid & (sorted_codes[pos] == codes)
    out[hit] = base + pos[hit]
    return out


@njit(cache=True)
def _frame(offsets, ids, start, stop, F):  # pragma: no cover - numba
    n = len(offsets) - 1
    k = 0
    for i in range(n):
        F[k] = start
        k += 1
        for t in range(offsets[i], offsets[i + 1]):
            F[k] = ids[t]
            k += 1
        F[k] = stop
        k += 1
    return F


def frame(enc: Encoded, M: int, dtype=np.int64) -> np.ndarray:
    """The framed sequences ``START x STOP`` concatenated (START = ``M``, STOP = ``M + 1``;
    ``dtype``: int64, or int32 for the dense Hankel path's compiled passes, half the memory)."""
    n = enc.n_sequences
    total = len(enc.ids) + 2 * n
    F = np.empty(total, dtype=dtype)
    if enc.offsets.dtype == np.int64 and enc.ids.dtype == np.int64:
        return _frame(enc.offsets, enc.ids, M, M + 1, F)
    lens = enc.lengths
    fs = enc.offsets[:-1] + 2 * np.arange(n)
    F[fs] = M
    F[fs + lens + 1] = M + 1
    body = np.ones(total, dtype=bool)
    body[fs] = False
    body[fs + lens + 1] = False
    F[body] = enc.ids
    return F


def hankel_data(enc: Encoded, M: int, max_basis: int = 32, prefix_codes=None,
                suffix_codes=None) -> HankelData:
    """Basis and split indices of the framed sequences of ``enc`` (symbols ``0..M-1``).

    The length-2 basis strings are the ``max_basis`` most frequent prefixes ``x y`` (``y`` a
    symbol, ``x`` a symbol or START) and suffixes ``x y`` (``x`` a symbol, ``y`` a symbol or
    STOP), unless given as codes ``x * (M + 2) + y``."""
    F = frame(enc, M)
    B2 = M + 2
    STOP = M + 1
    L = len(F)
    idx = np.arange(L)
    nxt = np.minimum(idx + 1, L - 1)
    nxt2 = np.minimum(idx + 2, L - 1)
    prv = np.maximum(idx - 1, 0)
    pair_next = F * B2 + F[nxt]            # (z_i, z_{i+1}), valid where z_i != STOP
    if prefix_codes is None:
        ok = (F != STOP) & (F[nxt] < M)
        prefix_codes = _top_codes(pair_next, ok, int(max_basis))
    if suffix_codes is None:
        ok = F < M
        suffix_codes = _top_codes(pair_next, ok, int(max_basis))
    prefix_codes = np.asarray(prefix_codes, dtype=np.int64)
    suffix_codes = np.asarray(suffix_codes, dtype=np.int64)
    p1 = np.where(F == STOP, 0, F)        # symbol, or START = M
    p2 = _lookup(prefix_codes, F[prv] * B2 + F, (F < M) & (idx > 0), M + 1)
    s1 = np.minimum(F[nxt], M)             # symbol, or STOP -> M
    s2 = _lookup(suffix_codes, F[nxt] * B2 + F[nxt2], (F != STOP) & (F[nxt] < M), M + 1)
    tok = np.nonzero(F < M)[0]
    return HankelData(F, p1, p2, s1, s2, tok, M + 1 + len(suffix_codes),
                      M + 1 + len(prefix_codes), enc.n_sequences, M, prefix_codes,
                      suffix_codes)


@njit(cache=True)
def _pair_counts(F, M):  # pragma: no cover - numba
    """Occurrences of every candidate length-2 prefix ``x y`` (``x`` a symbol or START, ``y``
    a symbol) and suffix ``x y`` (``x`` a symbol, ``y`` a symbol or STOP), indexed by the code
    ``x * (M + 2) + y``: one pass over the framed sequences."""
    B2 = M + 2
    cp = np.zeros(B2 * B2, dtype=np.int64)
    cs = np.zeros(B2 * B2, dtype=np.int64)
    for i in range(len(F) - 1):
        a = F[i]
        b = F[i + 1]
        if a < M:
            cs[a * B2 + b] += 1
            if b < M:
                cp[a * B2 + b] += 1
        elif a == M and b < M:
            cp[a * B2 + b] += 1
    return cp, cs


@njit(cache=True)
def _hankel_block(F, M, ptab, stab, n_rows, n_cols, scale):  # pragma: no cover - numba
    """The dense Hankel counts ``C[s, p] = #(p s)`` (int32: half the cache footprint of the
    random increments) and the prefix counts ``n[p] = E #(p)`` (per sequence: times
    ``scale``) in one pass over the framed sequences ``F``; ``ptab`` / ``stab``: length-2
    code -> basis index (-1: not in the basis).  (The non-zeros are found afterwards by one
    scan of the block, :func:`_hankel_block_csr`: cheaper than recording them in the pass,
    whose position arrays cost page faults of their own.)"""
    B2 = M + 2
    STOP = M + 1
    P = np.zeros((n_rows, n_cols), dtype=np.int32)     # counts: half the cache
    n = np.zeros(n_cols)
    for i in range(len(F) - 1):
        z = F[i]
        if z == STOP:
            continue
        p2 = ptab[F[i - 1] * B2 + z] if (z < M and i > 0) else -1
        y = F[i + 1]
        s1 = y if y < M else M
        s2 = stab[y * B2 + F[i + 2]] if y < M else -1
        P[s1, z] += 1
        n[z] += 1.0
        if p2 >= 0:
            P[s1, p2] += 1
            n[p2] += 1.0
        if s2 >= 0:
            P[s2, z] += 1
            if p2 >= 0:
                P[s2, p2] += 1
    for c in range(n_cols):
        n[c] *= scale
    return P, n


@njit(cache=True)
def _hankel_counts(F, M, ptab, stab, n_rows, n_cols, scale):  # pragma: no cover - numba
    """``(P, n)``: the block of :func:`_hankel_block` as floats times ``scale``."""
    C, n = _hankel_block(F, M, ptab, stab, n_rows, n_cols, scale)
    P = np.empty((n_rows, n_cols))
    for r in range(n_rows):
        for c in range(n_cols):
            P[r, c] = C[r, c] * scale
    return P, n


@njit(cache=True)
def _dense_to_csr(D, scale=1.0):  # pragma: no cover - numba
    """CSR arrays of ``scale * D`` for a dense matrix ``D`` (sorted indices, no explicit
    zeros; float64 data): what ``scipy.sparse.csr_matrix(scale * D)`` gives, in one compiled
    scan (a first one counts the non-zeros of every row)."""
    R, C = D.shape
    indptr = np.zeros(R + 1, dtype=np.int32)
    nnz = 0
    for r in range(R):
        for c in range(C):
            if D[r, c] != 0:
                nnz += 1
        indptr[r + 1] = nnz
    data = np.empty(nnz)
    indices = np.empty(nnz, dtype=np.int32)
    k = 0
    for r in range(R):
        for c in range(C):
            v = D[r, c]
            if v != 0:
                data[k] = v * scale
                indices[k] = c
                k += 1
    return data, indices, indptr


@dataclass
class DenseHankel:
    """The Hankel statistics of :class:`HankelData` for a basis small enough to be dense
    (``(M + 2)^2`` code tables and ``P`` of at most :data:`_DENSE_COUNT` cells), counted by
    compiled passes over the framed sequences without per-split index arrays.

    ``counts`` [n_rows, n_cols] (int32): ``#(p s)``, and ``P = scale * counts`` (a property:
    ``E #(p s)`` per sequence; the fit reads only its first ``M + 1`` columns and its STOP
    row); ``n`` [n_cols]: ``E #(p)``; ``ptab`` / ``stab``: length-2 code -> basis index or
    -1."""
    F: np.ndarray
    counts: np.ndarray
    scale: float
    n: np.ndarray
    ptab: np.ndarray
    stab: np.ndarray
    n_rows: int
    n_cols: int
    n_seq: int
    M: int
    prefix_codes: np.ndarray
    suffix_codes: np.ndarray
    #: CSR arrays of ``P`` (:func:`_hankel_block_csr`), or None
    csr: tuple | None = None
    #: ``(cp, cs)`` of :func:`_pair_counts`: every framed bigram ``x y`` counted at code
    #: ``x * (M + 2) + y`` (prefix pairs, suffix pairs), or None
    pairs: tuple | None = None

    @property
    def tok(self) -> np.ndarray:
        return np.nonzero(self.F < self.M)[0]

    @property
    def P(self) -> np.ndarray:
        """The dense block ``E #(p s)`` [n_rows, n_cols] (float64, computed on each access)."""
        return self.counts * self.scale

    def blocks(self):
        """``(P[:, :M + 1], P[M, :])``: the single-symbol (and START) columns and the STOP row
        of the block, what :func:`finish_operators` reads."""
        M = self.M
        return self.counts[:, :M + 1] * self.scale, self.counts[M, :] * self.scale

    def hankel(self) -> sp.csr_matrix:
        data, indices, indptr = _dense_to_csr(self.P)
        return sp.csr_matrix((data, indices, indptr), shape=self.P.shape)

    def prefix_counts(self) -> np.ndarray:
        return self.n.copy()


def _dense_top(cnt, k):
    """The ``k`` most frequent codes with a positive count (ties: smaller code first), sorted:
    :func:`_top_codes` on a dense count table."""
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    nz = np.flatnonzero(cnt)
    return np.sort(nz[np.argsort(-cnt[nz], kind="stable")[:k]])


@njit(cache=True)
def _top_sorted(cnt, k):  # pragma: no cover - numba
    """:func:`_dense_top` compiled: the ``k`` most frequent codes with a positive count (ties:
    smaller code first), sorted."""
    nz = np.flatnonzero(cnt)
    if k <= 0 or len(nz) == 0:
        return np.zeros(0, dtype=np.int64)
    neg = np.empty(len(nz), dtype=np.int64)
    for i in range(len(nz)):
        neg[i] = -cnt[nz[i]]
    top = nz[np.argsort(neg, kind="mergesort")[:k]]
    return np.sort(top)


@njit(cache=True)
def _basis_tables(cp, cs, M, k):  # pragma: no cover - numba
    """``(pc, sc, ptab, stab)``: the ``k`` most frequent length-2 prefixes and suffixes of the
    pair counts ``cp`` / ``cs`` (:func:`_dense_top`'s choice) and the code -> basis index
    tables (-1: not in the basis; indices from ``M + 1``)."""
    B2 = M + 2
    pc = _top_sorted(cp, k)
    sc = _top_sorted(cs, k)
    ptab = np.full(B2 * B2, -1, dtype=np.int64)
    stab = np.full(B2 * B2, -1, dtype=np.int64)
    for j in range(len(pc)):
        ptab[pc[j]] = M + 1 + j
    for j in range(len(sc)):
        stab[sc[j]] = M + 1 + j
    return pc, sc, ptab, stab


@njit(cache=True)
def _pairs_and_basis(F, M, k):  # pragma: no cover - numba
    """:func:`_pair_counts` and :func:`_basis_tables` in one compiled call (one kernel for
    a process to load from the cache, not two)."""
    cp, cs = _pair_counts(F, M)
    pc, sc, ptab, stab = _basis_tables(cp, cs, M, k)
    return cp, cs, pc, sc, ptab, stab


@njit(cache=True)
def _hankel_block_csr(F, M, ptab, stab, n_rows, n_cols, scale):  # pragma: no cover - numba
    """:func:`_hankel_block` and the CSR of its block (one scan of its cells,
    :func:`_dense_to_csr`; the products with ``C^T`` scatter through the same arrays:
    :func:`~fastspectral.linalg.svd.csr_tdot`) in one compiled call."""
    C, n = _hankel_block(F, M, ptab, stab, n_rows, n_cols, scale)
    data, ind, ptr = _dense_to_csr(C, scale)
    return C, n, data, ind, ptr


def dense_hankel(enc: Encoded, M: int, max_basis: int = 32, F=None) -> DenseHankel | None:
    """:class:`DenseHankel` of ``enc`` (the same basis and counts as :func:`hankel_data`), or
    None when the basis is too large to be dense.  ``F``: the framed sequences, if known."""
    B2 = M + 2
    k = int(max_basis)
    if B2 * B2 > _DENSE_COUNT:
        return None
    F = frame(enc, M, np.int32) if F is None else F
    cp, cs, pc, sc, ptab, stab = _pairs_and_basis(F, M, k)
    n_rows, n_cols = M + 1 + len(sc), M + 1 + len(pc)
    if n_rows * n_cols > _DENSE_COUNT:
        return None
    scale = 1.0 / enc.n_sequences
    C, n, data, ind, ptr = _hankel_block_csr(F, M, ptab, stab, n_rows, n_cols, scale)
    return DenseHankel(F, C, scale, n, ptab, stab, n_rows, n_cols, enc.n_sequences, M, pc, sc,
                       (data, ind, ptr), (cp, cs))


@njit(cache=True)
def _bigram_counts(offsets, ids, kid, V):  # pragma: no cover - numba
    """Dense ``C[v, w]``: bigrams of ``<s> kid[x_1] .. kid[x_T] </s>`` (``<s>`` = 0,
    ``</s>`` = 1) over all sequences."""
    C = np.zeros((V, V))
    for i in range(len(offsets) - 1):
        prev = 0
        for t in range(offsets[i], offsets[i + 1]):
            w = kid[ids[t]]
            C[prev, w] += 1.0
            prev = w
        C[prev, 1] += 1.0
    return C
