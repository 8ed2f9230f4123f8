"""Operator SHAGs and their spectral estimation (Luque et al. 2012, Algorithm 1).

An operator SHAG gives, for every head symbol ``h`` and direction ``d``, a weighted automaton
over modifier symbols::

    P(x_1 .. x_T | h, d) = beta[h,d]^T  A[h,d,x_T] ... A[h,d,x_1]  alpha1[h,d]

(column convention), with START and STOP folded into ``alpha1`` and ``beta`` (the paper's
footnote 6).

Spectral learning, per ``(h, d)``, on the START/STOP-framed sequences ``z = START x STOP``
and *all* their substrings (expected counts per sequence), with a basis of prefixes ``p`` and
suffixes ``s`` (Balle et al.'s generalised Hankel basis):

* ``P[s, p]``    = E #(p s)       substring counts;
* ``P_a[s, p]``  = E #(p a s)     with a real modifier ``a`` between prefix and suffix;
* ``p_1[s]``     = E #(START s) = ``P[:, START]``;
* ``p_inf[p]``   = E #(p STOP)  = ``P[STOP, :]``;

then ``U`` = top-``n`` left singular vectors of ``P``, ``alpha1 = U^T p_1``,
``beta^T = p_inf^T (U^T P)^+`` and ``A_a = U^T P_a (U^T P)^+``.  The paper's algorithm is the
basis of single symbols (``P`` = bigram, ``P_a`` = trigram counts; ``basis=1``); ``basis=2``
adds the most frequent length-2 prefixes and suffixes (per direction).  With ``F_p`` the
summed forward state after every occurrence of ``p`` and ``S_s`` the backward vector of the
suffix ``s``, ``P = S F`` and ``P_a = S A_a F`` for any basis, and ``p_1``, ``p_inf`` are a row
/ column of them, so the learned operators are a similarity transform of the true ones and the
sequence probabilities are recovered exactly in the limit (a consistent estimator).

The counts come from one compiled pass over the framed sequences (Numba); the SVDs of all
automata are computed together (a batched randomised range finder with power iterations,
then exact SVDs of the small projected blocks); ``A_a`` is accumulated directly as
``sum_occurrences (U^T e_s)(e_p^T (U^T P)^+)``, never forming the ``P_a`` blocks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .data import Encoded, SequenceData

__all__ = ["OperatorSHAG", "hankel_basis", "learn_spectral"]


@dataclass
class OperatorSHAG:
    """Operators of a (possibly non-deterministic) SHAG: ``alpha1`` and ``beta`` are
    ``[H, 2, N]``, ``A`` is ``[H, 2, M, N, N]`` (H head symbols, 0 = root; M modifier tags)."""
    alpha1: np.ndarray
    beta: np.ndarray
    A: np.ndarray

    @property
    def n_states(self) -> int:
        """Number of states N."""
        return int(self.alpha1.shape[2])

    @classmethod
    def trivial(cls, H: int, M: int) -> "OperatorSHAG":
        """The one-state automaton giving weight 1 to every sequence (used when a model has
        only a deterministic part)."""
        return cls(np.ones((H, 2, 1)), np.ones((H, 2, 1)), np.ones((H, 2, M, 1, 1)))

    def sequence_weight(self, h: int, d: int, mods) -> float:
        """Weight of one modifier sequence (reference implementation, for tests)."""
        v = self.alpha1[h, d]
        for a in mods:
            v = self.A[h, d, a] @ v
        return float(self.beta[h, d] @ v)

    def astype_contiguous(self) -> "OperatorSHAG":
        """C-contiguous float64 copies (as the kernel needs)."""
        return OperatorSHAG(np.ascontiguousarray(self.alpha1, dtype=np.float64),
                            np.ascontiguousarray(self.beta, dtype=np.float64),
                            np.ascontiguousarray(self.A, dtype=np.float64))


# ---------------------------------------------------------------------------- compiled counts
# Symbols of the framed sequences: tags 0..M-1, START = M, STOP = M+1 (B = M+2 symbols).
# Prefix indices: tag t -> t, START -> M, length-2 prefixes -> M+1.. (pmap2[d, x*B+y]);
# suffix indices: tag t -> t, STOP -> M, length-2 suffixes -> M+1.. (smap2[d, x*B+y]).

@njit(cache=True, inline="always")
def _sym(tags, s0, T, j, M):  # pragma: no cover - numba
    """Symbol j (0..T+1) of the framed sequence START tags[s0:s0+T] STOP."""
    if j == 0:
        return M
    if j == T + 1:
        return M + 1
    return tags[s0 + j - 1]


@njit(cache=True)
def _bigram_counts(tags, starts, lens, dirs, M):  # pragma: no cover - numba
    """Counts of every bigram (x, y) of the framed sequences, per direction: ``[2, B*B]``."""
    B = M + 2
    c = np.zeros((2, B * B), dtype=np.int64)
    for q in range(len(lens)):
        T, s0, d = lens[q], starts[q], dirs[q]
        x = M
        for j in range(1, T + 2):
            y = _sym(tags, s0, T, j, M)
            c[d, x * B + y] += 1
            x = y
    return c


@njit(cache=True)
def _hankel_counts(tags, starts, lens, dirs, grp, pmap2, smap2, M, P):  # pragma: no cover
    """Add E#(p s) counts (raw) of every sequence to ``P[grp, s, p]``."""
    B = M + 2
    for q in range(len(lens)):
        T, s0, d, g = lens[q], starts[q], dirs[q], grp[q]
        if T == 0:                     # START STOP: the only (prefix, suffix) pair
            P[g, M, M] += 1.0
            continue
        for j in range(0, T + 1):      # split between framed positions j and j+1
            zj = _sym(tags, s0, T, j, M)
            p1 = zj                    # a tag, or START (= M) at j = 0
            p2 = -1
            if j >= 1:
                p2 = pmap2[d, _sym(tags, s0, T, j - 1, M) * B + zj]
            zn = _sym(tags, s0, T, j + 1, M)
            s1 = zn if zn < M else M   # a tag, or STOP (= M)
            s2 = -1
            if j + 1 <= T:
                s2 = smap2[d, zn * B + _sym(tags, s0, T, j + 2, M)]
            P[g, s1, p1] += 1.0
            if p2 >= 0:
                P[g, s1, p2] += 1.0
            if s2 >= 0:
                P[g, s2, p1] += 1.0
                if p2 >= 0:
                    P[g, s2, p2] += 1.0


@njit(cache=True)
def _operator_sums(tags, starts, lens, dirs, grp, pmap2, smap2, M, U, X, A):  # pragma: no cover
    """``A[g, a] += (sum_s U[g, s]) (sum_p X[g, p])^T`` over every occurrence of ``p a s``,
    i.e. ``A[g, a] = U^T P_a X`` with raw counts (the sums run over the basis prefixes ending
    just before ``a`` and the basis suffixes starting just after it)."""
    B = M + 2
    n = U.shape[2]
    u = np.empty(n)
    w = np.empty(n)
    for q in range(len(lens)):
        T, s0, d, g = lens[q], starts[q], dirs[q], grp[q]
        for j in range(0, T):          # a = framed symbol j+1 (a tag), prefix ends at j
            zj = _sym(tags, s0, T, j, M)
            a = _sym(tags, s0, T, j + 1, M)
            for k in range(n):
                w[k] = X[g, zj, k]
            if j >= 1:
                p2 = pmap2[d, _sym(tags, s0, T, j - 1, M) * B + zj]
                if p2 >= 0:
                    for k in range(n):
                        w[k] += X[g, p2, k]
            zn = _sym(tags, s0, T, j + 2, M)
            s1 = zn if zn < M else M
            for k in range(n):
                u[k] = U[g, s1, k]
            if j + 2 <= T:
                s2 = smap2[d, zn * B + _sym(tags, s0, T, j + 3, M)]
                if s2 >= 0:
                    for k in range(n):
                        u[k] += U[g, s2, k]
            for k in range(n):
                uk = u[k]
                for l in range(n):
                    A[g, a, k, l] += uk * w[l]


# ---------------------------------------------------------------------------- learner
def _flat_sequences(enc: Encoded, seqs: SequenceData):
    """Per sequence: group ``h*2+d``, direction, start and length in the flat tag array."""
    grp = (enc.hsym[seqs.seq_pos].astype(np.int64) * 2 + seqs.seq_dir).astype(np.int64)
    tags = np.ascontiguousarray(enc.msym[seqs.mods], dtype=np.int64)
    return (grp, np.ascontiguousarray(seqs.seq_dir, dtype=np.int64),
            np.ascontiguousarray(seqs.seq_start, dtype=np.int64),
            np.ascontiguousarray(seqs.seq_len, dtype=np.int64), tags)


_CONTROLLER = []


def _blas_controller():
    """A cached ``threadpoolctl.ThreadpoolController`` (building one scans the loaded
    libraries, which costs about a millisecond)."""
    if not _CONTROLLER:
        from threadpoolctl import ThreadpoolController
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def hankel_basis(bigram_counts: np.ndarray, M: int, basis: int = 2, max_basis: int = 32,
                 min_count: int = 1):
    """Length-2 basis prefixes and suffixes of each direction.

    ``bigram_counts[d, x*B+y]`` are the framed-bigram counts (``B = M+2``; START = M,
    STOP = M+1).  Prefixes ``x y`` need a tag ``y``, suffixes ``x y`` a tag ``x``; the
    ``max_basis`` most frequent of each (with at least ``min_count`` occurrences) are kept.
    Returns ``(pmap2, smap2, Np, Ns)``: ``pmap2[d, x*B+y]`` is the prefix's row index
    (``M+1+j``) or -1, likewise ``smap2``; ``Np``, ``Ns`` the basis sizes.
    """
    B = M + 2
    pmap2 = np.full((2, B * B), -1, dtype=np.int64)
    smap2 = np.full((2, B * B), -1, dtype=np.int64)
    Np = Ns = M + 1
    if basis < 2 or max_basis <= 0:
        return pmap2, smap2, Np, Ns
    codes = np.arange(B * B)
    is_pre = (codes % B) < M                 # y is a tag
    is_suf = (codes // B) < M                # x is a tag
    for d in range(2):
        c = bigram_counts[d]
        for ok, mp in ((is_pre, pmap2), (is_suf, smap2)):
            cand = np.nonzero(ok & (c >= max(min_count, 1)))[0]
            top = cand[np.argsort(-c[cand], kind="stable")[:max_basis]]
            mp[d, top] = M + 1 + np.arange(len(top))
        Np = max(Np, M + 1 + int((pmap2[d] >= 0).sum()))
        Ns = max(Ns, M + 1 + int((smap2[d] >= 0).sum()))
    return pmap2, smap2, Np, Ns


def _batched_svd(Q: np.ndarray, k: int, power: int, seed: int):
    """Top-``k`` SVD of each matrix of the stack ``Q`` ([G, r, c]): randomised range finder
    with ``power`` power iterations (exact when ``k >= min(r, c)``), then exact SVDs of the
    small projections.  Returns ``(U [G, r, k], s [G, k], Vt [G, k, c])`` with ``U^T Q =
    diag(s) Vt`` exactly."""
    G, r, c = Q.shape
    if k >= min(r, c):
        U, s, Vt = np.linalg.svd(Q, full_matrices=False)
        return U[:, :, :k], s[:, :k], Vt[:, :k, :]
    rng = np.random.default_rng(seed)
    Om = rng.standard_normal((c, k))
    Y, _ = np.linalg.qr(Q @ Om)
    QT = Q.transpose(0, 2, 1)
    for _ in range(power):
        Z, _ = np.linalg.qr(QT @ Y)
        Y, _ = np.linalg.qr(Q @ Z)
    Bm = Y.transpose(0, 2, 1) @ Q                       # [G, k, c]
    Ub, s, Vt = np.linalg.svd(Bm, full_matrices=False)
    return Y @ Ub, s, Vt


def _sparse_svd(Q: np.ndarray, k: int, power: int, seed: int):
    """Top-``k`` SVDs of a stack ``Q`` ([G, r, c]) of sparse matrices.

    Each matrix is compacted to its non-zero rows and columns (a rarely seen head's Hankel
    block has a handful), the compacted blocks are grouped by padded size (powers of two) and
    each group goes through :func:`_batched_svd`; the factors are scattered back (zero rows and
    columns get zero singular-vector entries).  Returns ``(U, s, Vt)`` like ``_batched_svd``.
    """
    G, r, c = Q.shape
    rnz = Q.any(axis=2)
    cnz = Q.any(axis=1)
    nr, nc = rnz.sum(axis=1), cnz.sum(axis=1)
    ridx = np.argsort(~rnz, axis=1, kind="stable")        # non-zero rows first
    cidx = np.argsort(~cnz, axis=1, kind="stable")
    size = np.maximum(np.maximum(nr, nc), 1)
    bucket = np.maximum(int(np.log2(k)) if k > 0 else 0, np.ceil(np.log2(size)).astype(int))
    U = np.zeros((G, r, k))
    s = np.zeros((G, k))
    Vt = np.zeros((G, k, c))
    ar = np.arange(G)
    for b in np.unique(bucket):
        gb = ar[bucket == b]
        sr, sc = min(1 << int(b), r), min(1 << int(b), c)
        ri, ci = ridx[gb, :sr], cidx[gb, :sc]
        C = Q[gb[:, None, None], ri[:, :, None], ci[:, None, :]]
        kb = min(k, sr, sc)
        Ub, sb, Vb = _batched_svd(C, kb, power, seed)
        U[gb[:, None, None], ri[:, :, None], np.arange(kb)[None, None, :]] = Ub
        s[gb, :kb] = sb
        Vt[gb[:, None, None], np.arange(kb)[None, :, None], ci[:, None, :]] = Vb
    return U, s, Vt


def learn_spectral(enc: Encoded, seqs: SequenceData, H: int, M: int, n_states: int,
                   basis: int = 2, max_basis: int = 32, rcond: float = 1e-6,
                   noise: float = 0.0, scaled: bool = False, power: int = 1,
                   seed: int = 0) -> OperatorSHAG:
    """Spectral operators for every (head, direction) (Algorithm 1 of Luque et al. 2012 with a
    generalised Hankel basis).

    ``basis=1`` is the paper's algorithm (single-symbol prefixes and suffixes: bigram and
    trigram statistics); ``basis=2`` adds the ``max_basis`` most frequent length-2 prefixes
    and suffixes of each direction (rows / columns of ``P``; still consistent, and the larger
    Hankel block averages the sampling noise of more substrings into each singular vector).
    ``n_states`` is the number of states N (the SVD rank) of every automaton; singular values
    below ``rcond`` times the largest are dropped (a rarely seen head can have a lower rank).
    ``noise > 0`` also drops singular values below ``noise / sqrt(#sequences)`` (the order of
    an empirical Hankel matrix's sampling noise).  ``scaled=True`` takes the singular vectors
    of ``D_r^{-1/2} P D_c^{-1/2}`` (row / column sums of ``P``) and maps them back, a CCA-like
    variant that is consistent as well.  The SVDs are a seeded randomised range finder with
    ``power`` power iterations (deterministic for a given ``seed``).
    """
    if n_states < 1:
        raise ValueError("n_states must be >= 1")
    if basis not in (1, 2):
        raise ValueError("basis must be 1 or 2")
    # the matrices are small: multi-threaded BLAS only adds overhead
    with _blas_controller().limit(limits=1):
        return _learn_spectral(enc, seqs, H, M, int(n_states), basis, int(max_basis), rcond,
                               noise, scaled, int(power), int(seed))


def _learn_spectral(enc, seqs, H, M, N, basis, max_basis, rcond, noise, scaled, power,
                    seed) -> OperatorSHAG:
    grp, dirs, starts, lens, tags = _flat_sequences(enc, seqs)
    G = 2 * H
    if basis >= 2 and max_basis > 0:
        pmap2, smap2, Np, Ns = hankel_basis(_bigram_counts(tags, starts, lens, dirs, M), M,
                                            basis, max_basis)
    else:
        pmap2, smap2, Np, Ns = hankel_basis(np.zeros((2, (M + 2) ** 2), np.int64), M, 1)
    P = np.zeros((G, Ns, Np))
    _hankel_counts(tags, starts, lens, dirs, grp, pmap2, smap2, M, P)
    nseq = np.bincount(grp, minlength=G).astype(np.float64)
    gs = np.nonzero(nseq > 0)[0]
    Pg = P[gs] / nseq[gs, None, None]
    if scaled:
        eps = (1e-3 / nseq[gs])[:, None]
        dr = 1.0 / np.sqrt(Pg.sum(axis=2) + eps)
        dc = 1.0 / np.sqrt(Pg.sum(axis=1) + eps)
        Qg = dr[:, :, None] * Pg * dc[:, None, :]
    else:
        Qg = Pg
    k = min(N + 5, Ns, Np)
    Ut, s, Vt = _sparse_svd(Qg, k, power, seed)
    n = min(N, k)
    Ut, s, Vt = Ut[:, :, :n], s[:, :n], Vt[:, :n, :]
    keep = s > rcond * np.maximum(s[:, :1], 1e-300)
    if noise > 0:
        keep &= (s > (noise / np.sqrt(nseq[gs]))[:, None]) | (np.arange(n) == 0)[None, :]
    inv_s = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
    U = Ut * keep[:, None, :]                              # [g, Ns, n]
    X = Vt.transpose(0, 2, 1) * inv_s[:, None, :]          # right inverse of U^T Q: [g, Np, n]
    if scaled:
        U = dr[:, :, None] * U
        X = dc[:, :, None] * X
    alpha1 = np.zeros((H, 2, N))
    beta = np.zeros((H, 2, N))
    A = np.zeros((G, M, N, N))
    a1 = np.einsum("gsk,gs->gk", U, Pg[:, :, M])          # U^T p_1 (p_1 = P[:, START])
    b1 = np.einsum("gp,gpk->gk", Pg[:, M, :], X)           # p_inf^T (U^T P)^+
    alpha1.reshape(G, N)[gs, :n] = a1
    beta.reshape(G, N)[gs, :n] = b1
    Ufull = np.zeros((G, Ns, n))
    Xfull = np.zeros((G, Np, n))
    Ufull[gs] = U
    Xfull[gs] = X / nseq[gs, None, None]                   # P_a counts are raw
    An = np.zeros((G, M, n, n))
    _operator_sums(tags, starts, lens, dirs, grp, pmap2, smap2, M, Ufull, Xfull, An)
    A[:, :, :n, :n] = An
    return OperatorSHAG(alpha1, beta, A.reshape(H, 2, M, N, N))
