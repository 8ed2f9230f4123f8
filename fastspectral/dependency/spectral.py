"""Operator SHAGs and their spectral estimation (Luque et al. 2012, Algorithm 1).

An operator SHAG gives, for every head symbol ``h`` and direction ``d``, a weighted automaton
over modifier symbols::

    P(x_1 .. x_T | h, d) = beta[h,d]^T  A[h,d,x_T] ... A[h,d,x_1]  alpha1[h,d]

(column convention), with START and STOP folded into ``alpha1`` and ``beta`` (the paper's
footnote 6).

Spectral learning, per ``(h, d)``, on the START/STOP-framed sequences ``z = START x STOP``
and *all* their substrings (expected counts per sequence):

* ``P[v, u]``    = E #(u v)       bigram counts, ``u`` in tags + START, ``v`` in tags + STOP;
* ``P_a[v, u]``  = E #(u a v)     trigram counts with a real modifier ``a`` in the middle;
* ``p_1[v]``     = E #(START v) = ``P[:, START]``;
* ``p_inf[u]``   = E #(u STOP)  = ``P[STOP, :]``;

then ``U`` = top-``n`` left singular vectors of ``P``, ``alpha1 = U^T p_1``,
``beta^T = p_inf^T (U^T P)^+`` and ``A_a = U^T P_a (U^T P)^+``.  With ``F_u`` the forward
state after any prefix ending in ``u`` and ``S_v`` the backward vector of suffixes starting
with ``v``, ``P = S F``, ``P_a = S A_a F``, ``p_1 = S A_START alpha``, ``p_inf^T = omega^T
A_STOP F``, so the learned operators are a similarity transform of the true ones and the
sequence probabilities are recovered exactly in the limit (a consistent estimator).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .data import Encoded, SequenceData

__all__ = ["OperatorSHAG", "framed_ngrams", "learn_spectral"]


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


def framed_ngrams(enc: Encoded, seqs: SequenceData, M: int):
    """Bigrams and trigrams of all START/STOP-framed sequences.

    Returns ``(hd_seq, bi_hd, bi_u, bi_v, tri_hd, tri_u, tri_a, tri_v)``: ``hd_seq`` is the
    ``(head symbol, direction)`` index ``h*2+d`` of every sequence; START (as ``u``) and STOP
    (as ``v``) are both coded ``M``.
    """
    hd_seq = enc.hsym[seqs.seq_pos].astype(np.int64) * 2 + seqs.seq_dir
    L = seqs.seq_len + 2
    off = np.zeros(len(L) + 1, dtype=np.int64)
    np.cumsum(L, out=off[1:])
    total = int(off[-1])
    z = np.full(total, M, dtype=np.int64)
    q_of_mod = np.repeat(np.arange(len(L)), seqs.seq_len)
    rank = np.arange(len(seqs.mods)) - np.repeat(seqs.seq_start, seqs.seq_len)
    z[off[q_of_mod] + 1 + rank] = enc.msym[seqs.mods]
    grp = np.repeat(np.arange(len(L)), L)
    same2 = grp[:-1] == grp[1:]
    i2 = np.nonzero(same2)[0]
    same3 = same2[:-1] & same2[1:]
    i3 = np.nonzero(same3)[0]
    return (hd_seq, hd_seq[grp[i2]], z[i2], z[i2 + 1],
            hd_seq[grp[i3]], z[i3], z[i3 + 1], z[i3 + 2])


def learn_spectral(enc: Encoded, seqs: SequenceData, H: int, M: int, n_states: int,
                   rcond: float = 1e-6, noise: float = 0.0, scaled: bool = False) -> OperatorSHAG:
    """Algorithm 1 of Luque et al. (2012): spectral operators for every (head, direction).

    ``scaled=True`` takes the singular vectors of ``D_r^{-1/2} P D_c^{-1/2}`` (row and column
    sums of ``P``) instead of ``P`` and maps them back (``U = D_r^{-1/2} U~``): any ``U`` with
    ``U^T S`` invertible gives a consistent estimator, and the scaled SVD weighs rare
    symbols less (a CCA-like variant; ``False`` is the paper's algorithm).
    ``n_states`` is the number of states N (the SVD rank) of every automaton; singular values
    below ``rcond`` times the largest are dropped (the rank of a rarely seen head can be lower;
    the singular vectors come from a symmetric eigensolver, accurate to about 1e-8 relative).
    ``noise > 0``
    lowers the rank of an automaton with few training sequences: singular values of ``P``
    below ``noise / sqrt(#sequences)`` (the order of the sampling noise of an empirical
    Hankel matrix) are dropped; ``noise = 0`` is the paper's plain algorithm.
    """
    if n_states < 1:
        raise ValueError("n_states must be >= 1")
    from threadpoolctl import threadpool_limits

    # the matrices are tiny ((M+1) x (M+1)): multi-threaded BLAS only adds overhead
    with threadpool_limits(limits=1):
        return _learn_spectral(enc, seqs, H, M, int(n_states), rcond, noise, scaled)


def _learn_spectral(enc, seqs, H, M, N, rcond, noise, scaled) -> OperatorSHAG:
    hd_seq, bhd, bu, bv, thd, tu, ta, tv = framed_ngrams(enc, seqs, M)
    M1 = M + 1
    nseq = np.bincount(hd_seq, minlength=2 * H).astype(np.float64)
    P_all = np.bincount((bhd * M1 + bv) * M1 + bu, minlength=2 * H * M1 * M1).astype(np.float64)
    P_all = P_all.reshape(2 * H, M1, M1)
    block = M * M1 * M1
    # group the trigrams by (head, direction) with a stable radix sort of the small group ids
    order = np.argsort(thd.astype(np.int32), kind="stable")
    tloc = ((ta * M1 + tv) * M1 + tu)[order]
    tstart = np.searchsorted(thd[order], np.arange(2 * H + 1, dtype=np.int64))
    alpha1 = np.zeros((H, 2, N))
    beta = np.zeros((H, 2, N))
    A = np.zeros((H, 2, M, N, N))
    hds = np.nonzero(nseq > 0)[0]
    P_all = P_all[hds] / nseq[hds, None, None]
    # left singular vectors of every (head, direction) at once, as eigenvectors of P P^T
    if scaled:
        eps = (1e-3 / nseq[hds])[:, None]
        dr = 1.0 / np.sqrt(P_all.sum(axis=2) + eps)
        dc = 1.0 / np.sqrt(P_all.sum(axis=1) + eps)
        Q = dr[:, :, None] * P_all * dc[:, None, :]
    else:
        Q = P_all
    ev, V = np.linalg.eigh(np.matmul(Q, Q.transpose(0, 2, 1)))
    s_all = np.sqrt(np.maximum(ev[:, ::-1], 0.0))            # singular values, decreasing
    U_all = V[:, :, ::-1]
    if scaled:
        U_all = dr[:, :, None] * U_all
    for i, hd in enumerate(hds):
        P, s = P_all[i], s_all[i]
        n = min(N, int((s > rcond * max(s[0], 1e-300)).sum()))
        if noise > 0:
            n = max(1, min(n, int((s > noise / np.sqrt(nseq[hd])).sum())))
        if n == 0:
            continue
        U = U_all[i][:, :n]
        UP = U.T @ P                              # n x (M+1)
        UPp = np.linalg.pinv(UP)                  # (M+1) x n
        h, d = divmod(int(hd), 2)
        alpha1[h, d, :n] = U.T @ P[:, M]          # p_1 = P[:, START]
        beta[h, d, :n] = P[M, :] @ UPp            # p_inf = P[STOP, :]
        Pa = np.bincount(tloc[tstart[hd]:tstart[hd + 1]], minlength=block) / nseq[hd]
        X = Pa.reshape(M * M1, M1) @ UPp          # P_a (U^T P)^+, rows (a, v)
        A[h, d, :, :n, :n] = np.matmul(U.T, X.reshape(M, M1, n))
    return OperatorSHAG(alpha1, beta, A)
