"""Spectral learning of sequence automata (Hsu, Kakade & Zhang 2009) with the SHAG learner's
generalised Hankel basis, and the recovery of HMM parameters from the learned operators.

Framed sequences ``z = START x_1 .. x_T STOP`` and all their substrings, as in the operator
SHAG learner (:mod:`fastspectral.dependency.spectral`, one automaton instead of one per head
and direction).  With a basis of prefixes ``p`` (the symbols, START, and the ``max_basis``
most frequent length-2 prefixes) and suffixes ``s`` (the symbols, STOP, and the ``max_basis``
most frequent length-2 suffixes), counted as expectations per sequence:

* ``P[s, p]   = E #(p s)``    (HKZ's ``P_21``, the bigram matrix, for single symbols);
* ``P_a[s, p] = E #(p a s)``  (HKZ's ``P_3x1``, the trigram matrices);
* ``p_1 = P[:, START]``       (HKZ's ``P_1``: the first symbols);
* ``p_inf = P[STOP, :]``      (the last symbols) and ``n[p] = E #(p)`` (prefix occurrences).

``U`` = the top-``N`` left singular vectors of ``P`` (HKZ's Algorithm 1, step 2),
``X = (U^T P)^+`` regularised to ``V diag(s / (s^2 + lam^2))``, ``lam = ridge / sqrt(#seq)``
(the SHAG learner's ridge), and (HKZ eq. 6-8, column convention)::

    b_1 = U^T p_1,      B_a = U^T P_a X,      beta^T = p_inf^T X,      c^T = n^T X

so that ``p(x) = beta^T B_{x_T} .. B_{x_1} b_1`` (HKZ Lemma 3 with an end event) and the
probability that a sequence starts with ``h`` is ``c^T B_h b_1`` (HKZ's ``b_inf``; Lemma 3's
``b_inf^T = 1^T (U^T O)^{-1}``, here ``1^T (U^T S)^{-1}`` with ``S`` the suffix
probabilities of the hidden states).  For an HMM with ``m <= N`` states and a Hankel block of
rank ``m``, ``P = S F`` and ``P_a = S T_a F`` with ``T_a = T diag(O_a)``, so the learned
operators are a similarity transform of the true ones and every estimate is consistent (HKZ
Theorem 6 for the single-symbol basis; the same argument holds for any basis, Balle et al.
2014).  ``P_a`` is never formed: ``B_a = sum_{occurrences of p a s} (U^T e_s)(X^T e_p)^T``
is accumulated token by token, the operators of all symbols in one parallel compiled pass.

The generalisation of :func:`fastspectral.dependency.spectral.learn_spectral` to sequences
lives here because that learner indexes its length-2 basis by dense ``(M+2)^2`` tables and
stores one automaton per (head, direction): fine for 45 tags, impossible for a vocabulary of
20,000 words.  Here the length-2 basis is looked up by binary search over sorted codes and the
Hankel matrix is sparse; its SVD is exact (LAPACK) for small blocks, the compiled randomized
range finder over the non-zeros (:func:`_sparse_range_svd`) for dense-path blocks and
:func:`fastspectral.linalg.randomized_svd` otherwise.

Scoring (:func:`spectral_conditionals`): the state ``v`` after a prefix is kept normalised to
``c^T v = 1``; the conditional of the next event ``x`` (a symbol or STOP) is
``g_x = c^T B_x v`` (``beta^T v`` for STOP) - HKZ's streaming rule (section 3, "conditional
probabilities") - clipped at 0 and renormalised over all events, so that every prediction is
a distribution.  When the observed symbol's ``g_x`` is not positive, the next state is reset
to the averaged state after ``x`` (``U^T P[:, x]``, normalised).

:func:`hmm_from_anchors` recovers HMM parameters for the spectral initialisation of EM (the
pivot idea of Cohen & Collins 2014 for sequences): under an HMM the previous and the next
symbol are independent of the current one given its hidden state, so the symbol-context
matrix is ``sum_h pi(h) O(. | h) s(. | h)^T``; its CCA representation, anchor symbols and
Frank-Wolfe decomposition (:func:`fastspectral.linalg.mdp2`) give the emissions, and the
transitions, start and stop probabilities follow from the bigram, first- and last-symbol
moments by least squares.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from .._blas import blas_single_thread
from ..linalg._svd_numba import orth
from .data import Encoded

__all__ = ["HankelData", "hankel_data", "DenseHankel", "dense_hankel", "SpectralOperators",
           "learn_operators", "finish_operators", "hmm_from_emissions",
           "spectral_conditionals", "spectral_prefix_states", "raw_log_probability",
           "context_matrix", "hmm_from_anchors", "symbol_embedding", "hmm_from_token_classes"]

#: exact SVD up to this many rows or columns of the Hankel block, randomized (Halko et al.,
#: 4 power iterations) above: the same development perplexities on the WSJ tags, 2-3x faster
_DENSE_SVD = 100
#: power iterations of the randomized SVD of the Hankel block: 2 and 4 gave the same
#: development perplexities on the WSJ tags (m = 10 / 20 / 40: 9.698 / 8.835 / 8.531 with 2,
#: 9.697 / 8.834 / 8.534 with 4) at 1-4 ms less per fit
POWER_ITERATIONS = 2
#: ... except for dense blocks (:func:`_sparse_range_svd`) at ranks up to
#: :data:`FEW_POWER_RANK`, where the ``OVERSAMPLE`` extra columns are at least half the rank:
#: one power iteration (development perplexities of the spectral model
#: alone at m = 10 / 20: 9.6983 / 8.8341 with 1, 9.6976 / 8.8351 with 2; at m = 40 one
#: iteration was worse, 8.556 against 8.531)
FEW_POWER_RANK = 20
#: extra columns of the randomized SVD's test matrix
OVERSAMPLE = 10
#: Hankel blocks (and length-2 code tables) with at most this many cells are dense
_DENSE_COUNT = 1 << 22
#: reset the state when the observed event has less than this share of the clipped mass
_RESET = 1e-6


# ---------------------------------------------------------------------------- Hankel counts
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


# ---------------------------------------------------------------------------- compiled counting
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
def _trigram_operators(F, M, ptab, stab, U, Xe, scale):  # pragma: no cover - numba
    """``A[a] = scale * U^T P_a X`` for every symbol ``a``: the tokens bucketed by symbol (a
    counting sort, framed order kept); a token with prefix rows ``p1`` (the symbol or START
    before it), ``p2`` (the length-2 prefix ending there, if in the basis) and suffix rows
    ``s1``, ``s2`` adds ``(U[s1] + U[s2]) (Xe[p1] + Xe[p2])^T`` (``Xe``'s last row is zero:
    no length-2 prefix).  Both sums are rows of two tables formed once, ``Z`` (``Xe`` with the
    row of every length-2 prefix replaced by ``Xe[p1] + Xe[p2]``) and ``W`` (``U`` with the row
    of every length-2 suffix replaced by ``U[s1] + U[s2]``), so a token is keyed by its longest
    prefix and suffix: per symbol the rows ``Y_a[s] = sum Z[p]`` of the suffix keys ``s`` it
    meets are accumulated in one small buffer (cache-resident), one row per token, and folded
    into ``A[a] += W[s]^T Y_a[s]`` over the touched keys only.  The sums of
    :func:`_projected_trigrams` followed by ``U^T Y_a`` (to rounding), without the
    ``[M, rows, N]`` array."""
    B2 = M + 2
    N = U.shape[1]
    n_rows = U.shape[0]
    L = len(F)
    start = np.zeros(M + 1, dtype=np.int64)
    for t in range(1, L - 1):
        if F[t] < M:
            start[F[t] + 1] += 1
    for a in range(M):
        start[a + 1] += start[a]
    order = np.empty(start[M], dtype=np.int32)
    fill = start[:M].copy()
    for t in range(1, L - 1):
        a = F[t]
        if a < M:
            order[fill[a]] = t
            fill[a] += 1
    Z = Xe.copy()               # rows of the length-2 prefixes: Xe[last symbol] + Xe[prefix]
    for code in range(B2 * B2):
        c2 = ptab[code]
        if c2 >= 0:
            c1 = code % B2
            for i in range(N):
                Z[c2, i] = Xe[c1, i] + Xe[c2, i]
    W = U.copy()                # rows of the length-2 suffixes: U[first symbol] + U[suffix]
    for code in range(B2 * B2):
        r2 = stab[code]
        if r2 >= 0:
            r1 = code // B2
            for i in range(N):
                W[r2, i] = U[r1, i] + U[r2, i]
    A = np.zeros((M, N, N))
    buf = np.zeros((n_rows, N))
    touched = np.zeros(n_rows, dtype=np.bool_)
    rows = np.empty(n_rows, dtype=np.int64)
    for a in range(M):
        nr = 0
        for k in range(start[a], start[a + 1]):
            t = order[k]
            c = F[t - 1]                    # the symbol (or START) before the token
            if c < M:
                c2 = ptab[F[t - 2] * B2 + c]
                if c2 >= 0:
                    c = c2                  # its length-2 prefix: Z holds both rows' sum
            y = F[t + 1]
            r = y if y < M else M           # the symbol (or STOP) after the token
            if y < M:
                r2 = stab[y * B2 + F[t + 2]]
                if r2 >= 0:
                    r = r2                  # its length-2 suffix: W holds both rows' sum
            if not touched[r]:
                touched[r] = True
                rows[nr] = r
                nr += 1
            for i in range(N):
                buf[r, i] += Z[c, i]
        Aa = A[a]
        for q in range(nr):
            r = rows[q]
            for i in range(N):
                ui = W[r, i]
                for j in range(N):
                    Aa[i, j] += ui * buf[r, j]
            for j in range(N):
                buf[r, j] = 0.0
            touched[r] = False
        for i in range(N):
            for j in range(N):
                Aa[i, j] *= scale
    return A


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
    :func:`_csr_tdot`) in one compiled call."""
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


# ---------------------------------------------------------------------------- operators
@njit(cache=True, parallel=True)
def _accumulate_operators(order, sym_start, r1, r2, c1, c2, Ue, Xe, scale):  # pragma: no cover
    """``A[a] = scale * sum_{tokens t of symbol a} (Ue[r1]+Ue[r2]) (Xe[c1]+Xe[c2])^T``;
    tokens sorted by symbol (``order``, group ``a`` = ``order[sym_start[a]:sym_start[a+1]]``).
    Index -1 (no length-2 basis string) reads the zero last row of ``Ue`` / ``Xe``."""
    M = len(sym_start) - 1
    N = Ue.shape[1]
    A = np.zeros((M, N, N))
    nU = Ue.shape[0] - 1
    nX = Xe.shape[0] - 1
    for a in prange(M):
        u = np.empty(N)
        x = np.empty(N)
        Aa = A[a]
        for k in range(sym_start[a], sym_start[a + 1]):
            t = order[k]
            i1 = r1[t]
            i2 = r2[t] if r2[t] >= 0 else nU
            j1 = c1[t]
            j2 = c2[t] if c2[t] >= 0 else nX
            for i in range(N):
                u[i] = Ue[i1, i] + Ue[i2, i]
                x[i] = Xe[j1, i] + Xe[j2, i]
            for i in range(N):
                ui = u[i]
                row = Aa[i]
                for j in range(N):
                    row[j] += ui * x[j]
        for i in range(N):
            for j in range(N):
                Aa[i, j] *= scale
    return A


@njit(cache=True, parallel=True)
def _accumulate_rows(order, sym_start, r1, r2, c1, c2, Xe, n_rows):  # pragma: no cover
    """``Y[a, s] = sum_{tokens t of symbol a with suffix s} (Xe[c1] + Xe[c2])``: the
    trigram block projected on its prefix side, ``P_a X`` (``s`` over ``r1[t]`` and
    ``r2[t]``; index -1 skipped / the zero last row of ``Xe``).  Then ``B_a = U^T Y[a]``."""
    M = len(sym_start) - 1
    N = Xe.shape[1]
    Y = np.zeros((M, n_rows, N))
    nX = Xe.shape[0] - 1
    for a in prange(M):
        x = np.empty(N)
        Ya = Y[a]
        for k in range(sym_start[a], sym_start[a + 1]):
            t = order[k]
            j1 = c1[t]
            j2 = c2[t] if c2[t] >= 0 else nX
            for i in range(N):
                x[i] = Xe[j1, i] + Xe[j2, i]
            row = Ya[r1[t]]
            for i in range(N):
                row[i] += x[i]
            if r2[t] >= 0:
                row = Ya[r2[t]]
                for i in range(N):
                    row[i] += x[i]
    return Y


#: ``P_a X`` is formed densely (then ``B_a = U^T (P_a X)`` by BLAS) when it has at most this
#: many entries: 4 N instead of N^2 operations per token
_DENSE_PX = 1 << 23


def _power_iterations(k: int) -> int:
    """Power iterations of the compiled randomized SVD of a dense block at rank ``k``."""
    return 1 if k <= FEW_POWER_RANK else POWER_ITERATIONS


def _svd(P, N: int, random_state=0):
    """Top-``N`` singular triplets of the sparse block ``P`` (exact when it is small)."""
    k = min(N, min(P.shape))
    if min(P.shape) <= _DENSE_SVD:
        U, s, Vt = np.linalg.svd(P.toarray(), full_matrices=False)
        return U[:, :k], s[:k], Vt[:k]
    from ..linalg import randomized_svd

    if P.shape[0] * P.shape[1] <= _DENSE_COUNT and P.nnz > 0.25 * P.shape[0] * P.shape[1]:
        P = P.toarray()             # dense products: faster than CSR ones at this density
    return randomized_svd(P, k, oversample=OVERSAMPLE, n_iter=POWER_ITERATIONS,
                          random_state=random_state)


@njit(cache=True)
def _csr_dot(data, indices, indptr, Y):  # pragma: no cover - numba
    """``P @ Y`` for the CSR matrix ``P`` and a dense ``Y`` [cols, k]."""
    R = len(indptr) - 1
    k = Y.shape[1]
    out = np.zeros((R, k))
    for r in range(R):
        o = out[r]
        for q in range(indptr[r], indptr[r + 1]):
            v = data[q]
            y = Y[indices[q]]
            for j in range(k):
                o[j] += v * y[j]
    return out


@njit(cache=True)
def _csr_tdot(data, indices, indptr, Y, n_cols):  # pragma: no cover - numba
    """``P^T @ Y`` for the CSR matrix ``P`` [rows, ``n_cols``] and a dense ``Y`` [rows, k]:
    every entry scatters its row of ``Y`` (no transposed copy of ``P``)."""
    R = len(indptr) - 1
    k = Y.shape[1]
    out = np.zeros((n_cols, k))
    for r in range(R):
        y = Y[r]
        for q in range(indptr[r], indptr[r + 1]):
            v = data[q]
            o = out[indices[q]]
            for j in range(k):
                o[j] += v * y[j]
    return out


@njit(cache=True)
def _sparse_range_svd(data, ind, ptr, n_cols, G, k, n_iter):  # pragma: no cover - numba
    """Top-``k`` singular triplets ``(U, s, Vt)`` of the block ``D`` [r, ``n_cols``] given by
    its CSR arrays: Halko et al.'s range finder (algorithm 4.4) with the test matrix ``G``
    [c, p], ``n_iter`` power iterations re-orthonormalised by Cholesky QR (Householder when a
    sketch is ill-conditioned: :func:`orth`), then the SVD of ``B^T = (Q^T D)^T`` [c, p]
    through its QR factorisation (``B^T = Q_b R``, the SVD of the small ``R``: the same
    factors as LAPACK's SVD of ``B^T`` to rounding, at a fraction of its cost).  The
    computation of :func:`fastspectral.linalg.randomized_svd` (the same test matrix, products
    and orthonormalisations up to the signs of the columns) with no Python call per
    product; the products with ``D^T`` scatter through the CSR arrays (:func:`_csr_tdot`)."""
    Q, chol = orth(_csr_dot(data, ind, ptr, G), n_iter <= 0, True)
    for it in range(n_iter):
        W, chol = orth(_csr_tdot(data, ind, ptr, Q, n_cols), False, chol)
        Q, chol = orth(_csr_dot(data, ind, ptr, W), it == n_iter - 1, chol)
    Bt = _csr_tdot(data, ind, ptr, Q, n_cols)                # (Q^T D)^T: [c, p]
    Qb, _ = orth(Bt, True, True)
    Ur, s, VrT = np.linalg.svd(np.ascontiguousarray(Qb.T) @ Bt)
    U = Q @ np.ascontiguousarray(VrT.T[:, :k])
    Vb = Qb @ np.ascontiguousarray(Ur[:, :k])
    return U, s[:k].copy(), np.ascontiguousarray(Vb.T)


def _projections(P, N, ridge, rcond, n_seq, random_state, scaled=False, csr=None,
                 shape=None):
    """``U`` ([rows, n]), ``X = (U^T P)^+`` ridge-regularised ([cols, n]) and the singular
    values (the SHAG learner's regularised pseudo-inverse: ``s / (s^2 + lam^2)``,
    ``lam = ridge / sqrt(n_seq)``; singular values below ``rcond`` times the largest dropped).
    ``scaled``: the singular vectors of ``D_r^{-1/2} P D_c^{-1/2}`` (row and column sums),
    mapped back (``U <- D_r^{-1/2} U``, ``X <- D_c^{-1/2} V diag(inv)``; still
    ``U^T P X = I`` on the kept directions): the CCA-like variant of the SHAG learner.
    A dense ``P`` (larger than :data:`_DENSE_SVD` on both sides) takes the compiled
    randomized SVD of its non-zeros (:func:`_sparse_range_svd`; ``csr``: the CSR arrays of
    ``P`` if known; then ``P`` may be None, with its ``shape`` given)."""
    if scaled:
        eps = 1e-3 / n_seq
        dr = 1.0 / np.sqrt(np.asarray(P.sum(axis=1)).ravel() + eps)
        dc = 1.0 / np.sqrt(np.asarray(P.sum(axis=0)).ravel() + eps)
        P = sp.diags(dr) @ sp.csr_matrix(P) @ sp.diags(dc)
    shape = P.shape if P is not None else tuple(shape)
    if P is None and min(shape) <= _DENSE_SVD:
        data, ind, ptr = csr[:3]
        P = sp.csr_matrix((data, ind, ptr), shape=shape)
    if (P is None or isinstance(P, np.ndarray)) and min(shape) > _DENSE_SVD:
        # a dense Hankel block: the compiled randomized SVD of its non-zeros
        k = min(N, min(shape))
        p = min(k + OVERSAMPLE, min(shape))
        G = np.random.default_rng(random_state).standard_normal((shape[1], p))
        if csr is None:
            csr = _dense_to_csr(np.ascontiguousarray(P, dtype=np.float64))
        with blas_single_thread():
            U, s, Vt = _sparse_range_svd(*csr[:3], shape[1], G, k, _power_iterations(k))
    else:
        U, s, Vt = _svd(sp.csr_matrix(P), N, random_state)
    keep = s > rcond * max(s[0], 1e-300) if len(s) else np.zeros(0, dtype=bool)
    U, s, Vt = U[:, keep], s[keep], Vt[keep]
    lam2 = (ridge * ridge) / n_seq
    inv = s / (s * s + lam2)
    X = Vt.T * inv[None, :]
    if scaled:
        U = U * dr[:, None]
        X = X * dc[:, None]
    return np.ascontiguousarray(U), np.ascontiguousarray(X), s


def _operators(H: HankelData, U, X):
    """``B_a = U^T P_a X`` for every symbol ``a`` (one compiled pass over the tokens)."""
    n = U.shape[1]
    if isinstance(H, DenseHankel):
        Xe = np.vstack([X, np.zeros((1, n))])
        return _trigram_operators(H.F, H.M, H.ptab, H.stab, np.ascontiguousarray(U), Xe,
                                  1.0 / H.n_seq)
    t = H.tok
    sym = H.F[t]
    order = np.argsort(sym, kind="stable").astype(np.int64)
    sym_start = np.zeros(H.M + 1, dtype=np.int64)
    np.cumsum(np.bincount(sym, minlength=H.M), out=sym_start[1:])
    n = U.shape[1]
    Ue = np.vstack([U, np.zeros((1, n))])
    Xe = np.vstack([X, np.zeros((1, n))])
    if H.M * H.n_rows * n <= _DENSE_PX:
        Y = _accumulate_rows(order, sym_start, np.ascontiguousarray(H.s1[t]),
                             np.ascontiguousarray(H.s2[t]), np.ascontiguousarray(H.p1[t - 1]),
                             np.ascontiguousarray(H.p2[t - 1]), Xe, H.n_rows)
        return np.ascontiguousarray(np.matmul(U.T[None, :, :], Y)) * (1.0 / H.n_seq)
    return _accumulate_operators(order, sym_start, np.ascontiguousarray(H.s1[t]),
                                 np.ascontiguousarray(H.s2[t]),
                                 np.ascontiguousarray(H.p1[t - 1]),
                                 np.ascontiguousarray(H.p2[t - 1]), Ue, Xe, 1.0 / H.n_seq)


@dataclass
class SpectralOperators:
    """A learned sequence automaton (column convention).

    ``alpha1`` [n]: start state; ``A`` [M, n, n]: operators; ``beta`` [n]: stop weights;
    ``c`` [n]: continuation weights (``c^T v`` = probability mass of the prefix); ``W`` [M, n]
    = ``c^T A_a``; ``fallback`` [M, n]: the normalised averaged state after each symbol;
    ``singular_values``: of the Hankel block (the kept ones).
    """
    alpha1: np.ndarray
    A: np.ndarray
    beta: np.ndarray
    c: np.ndarray
    W: np.ndarray
    fallback: np.ndarray
    singular_values: np.ndarray

    @property
    def n_states(self) -> int:
        return int(self.alpha1.shape[0])

    def start_state(self) -> np.ndarray:
        """``alpha1`` normalised to ``c^T v = 1`` (or as it is when that mass is not positive)."""
        z = float(self.c @ self.alpha1)
        return self.alpha1 / z if z > 0 else self.alpha1.copy()


def learn_operators(enc: Encoded, M: int, n_states: int, max_basis: int = 32,
                    ridge: float = 1.0, rcond: float = 1e-10, random_state=0,
                    hankel: HankelData | None = None, scaled: bool = False) -> SpectralOperators:
    """Spectral operators of the sequences ``enc`` (symbols ``0..M-1``); see the module
    docstring.  ``n_states`` is the SVD rank (at most the basis size)."""
    if enc.n_sequences == 0:
        raise ValueError("no training sequences")
    with blas_single_thread():
        H = hankel if hankel is not None else (dense_hankel(enc, M, max_basis) or
                                               hankel_data(enc, M, max_basis))
        if isinstance(H, DenseHankel) and not scaled:
            # the compiled SVD of the block's non-zeros; the dense float block is never formed
            U, X, s = _projections(None, int(n_states), float(ridge), float(rcond), H.n_seq,
                                   random_state, csr=H.csr, shape=H.counts.shape)
        else:
            P = H.hankel()
            U, X, s = _projections(P, int(n_states), float(ridge), float(rcond), H.n_seq,
                                   random_state, bool(scaled))
        A = _operators(H, U, X)
        return finish_operators(H.blocks() if isinstance(H, DenseHankel) else P,
                                H.prefix_counts(), M, U, X, s, A)


def finish_operators(P, n, M: int, U, X, s, A) -> SpectralOperators:
    """The automaton from the Hankel block ``P`` (dense or sparse, per sequence; or the pair
    ``(P[:, :M + 1], P[M, :])`` of :meth:`DenseHankel.blocks`), the prefix counts ``n``, the
    projections ``U``, ``X``, the kept singular values ``s`` and the operators ``A``:
    ``alpha1 = U^T P[:, START]``, ``beta = P[STOP, :] X``, ``c = n X``, ``W`` and the averaged
    state after each symbol (the fallback of the filter)."""
    with blas_single_thread():
        if isinstance(P, tuple):
            Pl, stop_row = P
            alpha1 = Pl[:, M] @ U
            beta = stop_row @ X
            G = Pl[:, :M].T @ U
            mean = Pl.sum(axis=1) @ U
        elif isinstance(P, np.ndarray):
            alpha1 = P[:, M] @ U
            beta = P[M, :] @ X
            G = P[:, :M].T @ U
            mean = P[:, :M + 1].sum(axis=1) @ U
        else:
            alpha1 = np.asarray(P[:, M].toarray()).ravel() @ U
            beta = np.asarray(P[M, :].toarray()).ravel() @ X
            G = np.asarray((P[:, :M].T @ U))
            mean = np.asarray(P[:, :M + 1].sum(axis=1)).ravel() @ U
        c = n @ X
        W = np.einsum("i,aij->aj", c, A)
        # averaged state after each symbol: U^T P[:, a], normalised to c^T v = 1
        mass = G @ c
        zm = float(mean @ c)
        mean = mean / zm if zm > 0 else (alpha1 / (c @ alpha1) if c @ alpha1 > 0 else alpha1)
        ok = mass > 1e-12 * max(float(np.abs(mass).max()) if len(mass) else 0.0, 1e-300)
        fallback = np.where(ok[:, None], G / np.where(ok, mass, 1.0)[:, None], mean[None, :])
    return SpectralOperators(np.ascontiguousarray(alpha1), np.ascontiguousarray(A),
                             np.ascontiguousarray(beta), np.ascontiguousarray(c),
                             np.ascontiguousarray(W), np.ascontiguousarray(fallback), s)


# ---------------------------------------------------------------------------- scoring kernels
@njit(cache=True)
def _event_weights(v, Wt, beta, g, absolute):  # pragma: no cover - numba
    """``g[a] = c^T B_a v`` for every symbol ``a`` and ``g[M] = beta^T v`` (the end), made
    non-negative (``|g|`` when ``absolute``, else clipped at 0); returns their sum."""
    N, M = Wt.shape
    for a in range(M + 1):
        g[a] = 0.0
    for j in range(N):
        vj = v[j]
        wj = Wt[j]
        for a in range(M):
            g[a] += wj[a] * vj
        g[M] += beta[j] * vj
    Z = 0.0
    for a in range(M + 1):
        if absolute:
            g[a] = abs(g[a])
        elif g[a] < 0.0:
            g[a] = 0.0
        Z += g[a]
    return Z


@njit(cache=True)
def _advance(v, nv, x, A, Wt, fallback, mixing, reset, Z):  # pragma: no cover - numba
    """The state after symbol ``x``: ``(1 - mixing) B_x v / (c^T B_x v) + mixing f_x``
    (``f_x`` the averaged state after ``x``), or ``f_x`` when ``|c^T B_x v|`` is at most
    ``reset * Z``; returns 1 for a reset, else 0."""
    N = v.shape[0]
    gx = 0.0
    for j in range(N):
        gx += Wt[j, x] * v[j]
    if Z > 0.0 and abs(gx) > reset * Z:
        Ax = A[x]
        for r in range(N):
            acc = 0.0
            for j in range(N):
                acc += Ax[r, j] * v[j]
            nv[r] = (1.0 - mixing) * acc / gx + mixing * fallback[x, r]
        for r in range(N):
            v[r] = nv[r]
        return 0
    for r in range(N):
        v[r] = fallback[x, r]
    return 1


@njit(cache=True, parallel=True)
def _conditionals(offsets, ids, v0, A, Wt, beta, fallback, reset, absolute, mixing,
                  floor):  # pragma: no cover - numba
    """Per event (every token, then the end of its sequence, sequence by sequence): the
    stabilised spectral conditional probability ``(1 - sum floor) g_x / sum g + floor[x]``;
    per sequence the number of state resets.  ``Wt = W^T`` ([N, M]); ``floor`` [M + 1]."""
    n = len(offsets) - 1
    N, M = Wt.shape
    q = np.empty(len(ids) + n)
    resets = np.zeros(n, dtype=np.int64)
    share = floor.sum()
    for i in prange(n):
        v = v0.copy()
        g = np.empty(M + 1)
        nv = np.empty(N)
        s0 = offsets[i]
        T = offsets[i + 1] - s0
        e0 = s0 + i
        for t in range(T + 1):
            Z = _event_weights(v, Wt, beta, g, absolute)
            x = M if t == T else ids[s0 + t]
            if Z > 0.0:
                q[e0 + t] = (1.0 - share) * g[x] / Z + floor[x]
            else:
                q[e0 + t] = np.nan if share == 0.0 else floor[x] / share
            if t == T:
                break
            resets[i] += _advance(v, nv, x, A, Wt, fallback, mixing, reset, Z)
    return q, resets


@njit(cache=True, parallel=True)
def _final_states(offsets, ids, v0, A, Wt, beta, fallback, reset, absolute,
                  mixing):  # pragma: no cover - numba
    """The state after each whole sequence (the streaming state of :func:`_conditionals`).
    ``Wt = W^T`` ([N, M])."""
    n = len(offsets) - 1
    N, M = Wt.shape
    out = np.empty((n, N))
    for i in prange(n):
        v = v0.copy()
        nv = np.empty(N)
        g = np.empty(M + 1)
        for t in range(offsets[i], offsets[i + 1]):
            Z = _event_weights(v, Wt, beta, g, absolute)
            _advance(v, nv, ids[t], A, Wt, fallback, mixing, reset, Z)
        out[i] = v
    return out


@njit(cache=True, parallel=True)
def _raw_log_probability(offsets, ids, alpha1, A, beta):  # pragma: no cover - numba
    """``log |beta^T A_xT .. A_x1 alpha1|`` and its sign per sequence (scaled products)."""
    n = len(offsets) - 1
    N = alpha1.shape[0]
    logp = np.empty(n)
    sign = np.empty(n)
    for i in prange(n):
        v = alpha1.copy()
        nv = np.empty(N)
        ls = 0.0
        for t in range(offsets[i], offsets[i + 1]):
            Ax = A[ids[t]]
            nrm = 0.0
            for r in range(N):
                acc = 0.0
                for j in range(N):
                    acc += Ax[r, j] * v[j]
                nv[r] = acc
                nrm += abs(acc)
            if nrm == 0.0:
                ls = -np.inf
                break
            for r in range(N):
                v[r] = nv[r] / nrm
            ls += np.log(nrm)
        p = 0.0
        for j in range(N):
            p += beta[j] * v[j]
        if p == 0.0 or ls == -np.inf:
            logp[i] = -np.inf
            sign[i] = 0.0
        else:
            logp[i] = ls + np.log(abs(p))
            sign[i] = 1.0 if p > 0 else -1.0
    return logp, sign


def spectral_conditionals(op: SpectralOperators, enc: Encoded, reset: float = _RESET,
                          absolute: bool = True, mixing: float = 0.0, floor=None):
    """``(q, resets)``: per event (token, then the end of the sequence) the stabilised
    spectral conditional probability and per sequence the number of state resets (see the
    module docstring: event weights ``|c^T B_x v|`` (``absolute``) or clipped at 0, the state
    mixed with the averaged state after each symbol (``mixing``), plus ``floor[x]`` (a
    share of probability per event, [M + 1]; None: none); NaN where no event has weight and
    there is no floor)."""
    M = op.A.shape[0]
    floor = np.zeros(M + 1) if floor is None else np.asarray(floor, dtype=np.float64)
    if floor.shape != (M + 1,):
        raise ValueError(f"floor must have {M + 1} entries, not {floor.shape}")
    return _conditionals(enc.offsets, enc.ids, op.start_state(), op.A,
                         np.ascontiguousarray(op.W.T), op.beta, op.fallback, float(reset),
                         bool(absolute), float(mixing), floor)


def spectral_prefix_states(op: SpectralOperators, enc: Encoded, reset: float = _RESET,
                           absolute: bool = True, mixing: float = 0.0):
    """The state after each sequence of ``enc`` (read as a prefix)."""
    return _final_states(enc.offsets, enc.ids, op.start_state(), op.A,
                         np.ascontiguousarray(op.W.T), op.beta, op.fallback, float(reset),
                         bool(absolute), float(mixing))


def raw_log_probability(op: SpectralOperators, enc: Encoded):
    """``(log|p(x)|, sign)`` of the unsmoothed estimate ``p(x) = beta^T A_x .. alpha1``."""
    return _raw_log_probability(enc.offsets, enc.ids, op.alpha1, op.A, op.beta)


# ---------------------------------------------------------------------------- HMM parameters
def context_matrix(H: HankelData) -> sp.csr_matrix:
    """``C[x, c]``: how often symbol ``x`` follows ``c`` (columns ``0..M``: a symbol or START)
    and precedes ``c`` (columns ``M+1..2M+1``: a symbol or STOP).  Under an HMM the previous
    and the next symbol are independent of ``x`` given ``x``'s hidden state, so
    ``C = sum_h pi(h) O(. | h) s(. | h)^T``: the anchor decomposition of MDP 2."""
    M, F, t = H.M, H.F, H.tok
    rows = np.concatenate([F[t], F[t]])
    cols = np.concatenate([F[t - 1], M + 1 + np.minimum(F[t + 1], M)])
    C = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(M, 2 * M + 2))
    C.sum_duplicates()
    return C


def hmm_from_anchors(H: HankelData, n_states: int, random_state=0, floor: float = 0.1,
                     anchor_top: int | None = None):
    """HMM parameters ``(start [m], trans [m, m], emit [m, M + 1])`` from the moments of
    ``H``: the spectral (CCA) anchor decomposition of the symbol-context matrix
    (:func:`context_matrix`, :func:`fastspectral.linalg.mdp2`) gives the emissions ``O(x | h)``
    and the anchor symbols; the transitions, start and stop probabilities follow from the
    bigram, first- and last-symbol counts by least squares through ``O^+`` (clipped at 0).
    ``emit[h, M]`` is the stop probability; rows of ``trans`` and ``emit`` sum to 1.  Every
    distribution is mixed with the uniform one (weight ``floor``) so that EM can move every
    parameter.  Anchors are taken among the ``anchor_top`` most frequent symbols (default:
    ``max(100, 4 n_states)``).  States beyond the number of possible anchors are copies of
    the most probable states, with noise (EM separates them)."""
    from ..linalg import mdp2

    M, F, t = H.M, H.F, H.tok
    rng = np.random.default_rng(random_state)
    counts = np.bincount(F[t], minlength=M).astype(np.float64)
    top = int(anchor_top) if anchor_top is not None else max(100, 4 * int(n_states))
    order = np.argsort(-counts, kind="stable")[:top]
    cand = np.zeros(M, dtype=bool)
    cand[order[counts[order] > 0]] = True
    k = int(min(n_states, cand.sum()))
    if k < 1:
        raise ValueError("no symbol occurs in the training sequences")
    with blas_single_thread():
        res = mdp2(context_matrix(H), k, candidates=cand, random_state=random_state)
    return hmm_from_emissions(H, np.asarray(res.r, dtype=np.float64), n_states, rng, floor)


def symbol_embedding(H, dim: int, random_state=0) -> np.ndarray:
    """``[M, dim]``: the symbols' coordinates on the top ``dim`` singular vectors (scaled by
    the singular values) of the Hellinger-scaled symbol-context matrix, ``sqrt`` of the rows
    of :func:`context_matrix` normalised to distributions over (previous symbol or START,
    next symbol or STOP): symbols with similar left and right contexts lie close."""
    C = context_matrix(H).tocsr()
    tot = np.asarray(C.sum(axis=1)).ravel()
    C = sp.diags(1.0 / np.where(tot > 0, tot, 1.0)) @ C
    C.data = np.sqrt(C.data)
    M = C.shape[0]
    d = int(min(dim, M))
    with blas_single_thread():
        if M <= 500:
            U, s, _ = np.linalg.svd(C.toarray(), full_matrices=False)
        else:
            from ..linalg import randomized_svd

            U, s, _ = randomized_svd(C, d, random_state=random_state)
    return U[:, :d] * s[:d]


def hmm_from_token_classes(H, n_states: int, random_state=0, floor: float = 0.1,
                           context_weight: float = 0.3, temperature: float = 2.0):
    """HMM parameters ``(start [m], trans [m, m], emit [m, M + 1])`` from token classes:
    every distinct (previous symbol, symbol) pair is placed at
    ``(e(symbol), context_weight * e(previous))`` (``e``: :func:`symbol_embedding` with
    ``m`` dimensions, START at the origin), the pairs are clustered into ``m`` classes by
    k-means weighted by their counts (scikit-learn, 5 restarts), every pair gets soft class
    weights ``exp(-d_h^2 / (temperature * D))`` (``d_h``: its distance to centroid ``h``,
    ``D``: the count-weighted mean squared distance of the pairs to their own centroids;
    normalised; ``temperature`` 0: the hard k-means classes) which every token inherits, and
    the start, transition, emission and stop probabilities are the weighted relative
    frequencies of the classes of first tokens, of consecutive tokens (``sum_t r_t r_{t+1}^T``,
    summed over distinct consecutive pairs), of each class's symbols and of last tokens, each
    mixed with the uniform distribution (weight ``floor``).  The spectral step is the
    embedding (a spectral clustering, not a method-of-moments estimate of the HMM);
    ``context_weight`` 0.3, ``temperature`` 2 and ``floor`` 0.1 were chosen on the WSJ-tag
    development split (docs/hmm.md).  Fewer distinct pairs than states: the classes are split
    into noisy copies (:func:`_split_states`)."""
    from sklearn.cluster import KMeans

    M, F, t = H.M, H.F, H.tok
    m = int(n_states)
    rng = np.random.default_rng(random_state)
    emb = np.vstack([symbol_embedding(H, m, random_state), np.zeros((1, min(m, M)))])
    code = F[t - 1].astype(np.int64) * M + F[t]       # (previous symbol or START, symbol)
    u, inv, cnt = np.unique(code, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    k = int(min(m, len(u)))
    if k < 1:
        raise ValueError("no symbol occurs in the training sequences")
    feats = np.hstack([emb[u % M], float(context_weight) * emb[u // M]])
    w = cnt.astype(np.float64)
    seed = None if random_state is None else int(random_state)
    with blas_single_thread():
        km = KMeans(k, n_init=5, random_state=seed).fit(feats, sample_weight=w)
        d2 = ((feats[:, None, :] - km.cluster_centers_[None, :, :]) ** 2).sum(axis=2)
        if temperature > 0:
            within = float(np.average(d2[np.arange(len(u)), km.labels_], weights=w))
            R = np.exp(-(d2 - d2.min(axis=1, keepdims=True)) /
                       (float(temperature) * within + 1e-300))
            R /= R.sum(axis=1, keepdims=True)           # [pairs, k]
        else:
            R = np.zeros((len(u), k))
            R[np.arange(len(u)), km.labels_] = 1.0
        npairs = len(u)
        sym = (u % M).astype(np.int64)
        O = np.zeros((M, k))
        np.add.at(O, sym, R * w[:, None])
        O = O.T                                          # [k, M]
        first = np.bincount(inv[F[t - 1] == M], minlength=npairs).astype(np.float64)
        last = np.bincount(inv[F[t + 1] == M + 1], minlength=npairs).astype(np.float64)
        pi = R.T @ first
        stops = R.T @ last
        nxt = np.nonzero(F[t[:-1] + 1] < M)[0]           # token i is followed by token i + 1
        Cpp = sp.csr_matrix((np.ones(len(nxt)), (inv[nxt], inv[nxt + 1])),
                            shape=(npairs, npairs))
        C = R.T @ np.asarray(Cpp @ R)
    stop = np.clip(stops / np.maximum(O.sum(axis=1), 1.0), 1e-3, 1.0 - 1e-3)
    start, trans, emit_o = pi, C, O
    if k < m:
        start, trans, emit_o, stop = _split_states(_norm(pi, 0.0), _norm(C, 0.0), _norm(O, 0.0),
                                                   stop, m, rng)
    emit = np.empty((len(start), M + 1))
    emit[:, :M] = _norm(emit_o, floor) * (1.0 - stop)[:, None]
    emit[:, M] = stop
    return _norm(start, floor), _norm(trans, floor), emit


def hmm_from_emissions(H, O, n_states: int, rng, floor: float = 0.1):
    """HMM parameters ``(start, trans, emit)`` from emission estimates ``O`` [M, k]
    (``O[x, h]``, clipped at 0 and normalised per state): the transitions, start and stop
    probabilities by least squares through ``O^+`` on the bigram, first- and last-symbol
    counts (clipped at 0), every distribution mixed with the uniform one (weight ``floor``);
    states beyond ``k`` are noisy copies of the most probable ones."""
    M, F, t = H.M, H.F, H.tok
    counts = np.bincount(F[t], minlength=M).astype(np.float64)
    with blas_single_thread():
        O = np.clip(np.asarray(O, dtype=np.float64), 0.0, None)         # [M, k]
        O /= np.where(O.sum(axis=0) > 0, O.sum(axis=0), 1.0)[None, :]
        k = O.shape[1]
        first = np.bincount(F[t][F[t - 1] == M], minlength=M).astype(np.float64)
        last = np.bincount(F[t][F[t + 1] == M + 1], minlength=M).astype(np.float64)
        b = t[F[t + 1] < M]
        big = sp.csr_matrix((np.ones(len(b)), (F[b], F[b + 1])), shape=(M, M))
        Op = np.linalg.pinv(O)                                          # [k, M]
        occ = np.clip(Op @ counts, 1e-12, None)
        pi = np.clip(Op @ first, 0.0, None)
        stops = np.clip(Op @ last, 0.0, None)
        C = np.clip(np.asarray((big.T @ Op.T).T) @ Op.T, 0.0, None)     # O^+ B O^+T: [k, k]
    stop = np.clip(stops / (occ + stops), 1e-3, 1.0 - 1e-3)
    start, trans, emit_o = pi, C, O.T
    if k < n_states:                           # split states: copies with noise
        start, trans, emit_o, stop = _split_states(_norm(pi, 0.0), _norm(C, 0.0), emit_o, stop,
                                                   int(n_states), rng)
    m = len(start)
    emit = np.empty((m, M + 1))
    emit[:, :M] = _norm(emit_o, floor) * (1.0 - stop)[:, None]
    emit[:, M] = stop
    return _norm(start, floor), _norm(trans, floor), emit


def _split_states(start, trans, emit, stop, m, rng):
    """``m`` states from ``k < m``: the most probable states are copied (emissions times
    Uniform(0.8, 1.2) noise); a copy shares its source's start and incoming probability."""
    k = len(start)
    src = list(range(k))
    order = np.argsort(-start - trans.sum(axis=0), kind="stable")
    while len(src) < m:
        src.append(int(order[(len(src) - k) % k]))
    src = np.asarray(src)
    copies = np.bincount(src, minlength=k).astype(np.float64)
    start2 = start[src] / copies[src]
    trans2 = trans[src][:, src] / copies[src][None, :]
    emit2 = emit[src] * rng.uniform(0.8, 1.2, size=(m, emit.shape[1]))
    return start2, trans2, emit2, stop[src]


def _norm(X, floor):
    """Rows of ``X`` (or the vector) normalised and mixed with the uniform distribution."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        s = X.sum()
        p = X / s if s > 0 else np.full(len(X), 1.0 / len(X))
        return (1 - floor) * p + floor / len(X)
    s = X.sum(axis=1, keepdims=True)
    p = np.where(s > 0, X / np.where(s > 0, s, 1.0), 1.0 / X.shape[1])
    return (1 - floor) * p + floor / X.shape[1]
