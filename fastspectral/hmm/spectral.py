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
range finder over the non-zeros (:func:`fastspectral.linalg.svd.csr_randomized_svd`) for
dense-path blocks and :func:`fastspectral.linalg.randomized_svd` otherwise; the ridge
pseudo-inverse is :func:`fastspectral.linalg.ridge.ridge_inverse`.

The Hankel counting is :mod:`fastspectral.hmm.hankel`, the learned automaton and its filter
:mod:`fastspectral.hmm.automaton`, EM's starting points from these moments
:mod:`fastspectral.hmm.starts` (their public names are importable from here too).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from .._jit import njit, prange

from .._blas import blas_single_thread
from ..linalg.ridge import ridge_inverse
from ..linalg.svd import csr_randomized_svd
from . import hankel as _hk
from .automaton import (SpectralOperators, raw_log_probability, spectral_conditionals,
                        spectral_prefix_states)
from .data import Encoded
from .hankel import DenseHankel, HankelData, _dense_to_csr, dense_hankel, frame, hankel_data
from .starts import (context_matrix, hmm_from_anchors, hmm_from_emissions, hmm_from_token_classes,
                     symbol_embedding)

__all__ = ["HankelData", "hankel_data", "DenseHankel", "dense_hankel", "SpectralOperators",
           "learn_operators", "finish_operators", "hmm_from_emissions",
           "spectral_conditionals", "spectral_prefix_states", "raw_log_probability",
           "context_matrix", "hmm_from_anchors", "symbol_embedding", "hmm_from_token_classes",
           "frame"]

#: exact SVD up to this many rows or columns of the Hankel block, randomized (Halko et al.,
#: 4 power iterations) above: the same development perplexities on the WSJ tags, 2-3x faster
_DENSE_SVD = 100
#: power iterations of the randomized SVD of the Hankel block: 2 and 4 gave the same
#: development perplexities on the WSJ tags (m = 10 / 20 / 40: 9.698 / 8.835 / 8.531 with 2,
#: 9.697 / 8.834 / 8.534 with 4) at 1-4 ms less per fit
POWER_ITERATIONS = 2
#: ... except for dense blocks (:func:`~fastspectral.linalg.svd.csr_randomized_svd`) at ranks up to
#: :data:`FEW_POWER_RANK`, where the ``OVERSAMPLE`` extra columns are at least half the rank:
#: one power iteration (development perplexities of the spectral model
#: alone at m = 10 / 20: 9.6983 / 8.8341 with 1, 9.6976 / 8.8351 with 2; at m = 40 one
#: iteration was worse, 8.556 against 8.531)
FEW_POWER_RANK = 20
#: extra columns of the randomized SVD's test matrix
OVERSAMPLE = 10


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

    if P.shape[0] * P.shape[1] <= _hk._DENSE_COUNT and P.nnz > 0.25 * P.shape[0] * P.shape[1]:
        P = P.toarray()             # dense products: faster than CSR ones at this density
    return randomized_svd(P, k, oversample=OVERSAMPLE, n_iter=POWER_ITERATIONS,
                          random_state=random_state)


def _projections(P, N, ridge, rcond, n_seq, random_state, scaled=False, csr=None,
                 shape=None):
    """``U`` ([rows, n]), ``X = (U^T P)^+`` ridge-regularised ([cols, n]) and the singular
    values (the SHAG learner's regularised pseudo-inverse: ``s / (s^2 + lam^2)``,
    ``lam = ridge / sqrt(n_seq)``; singular values below ``rcond`` times the largest dropped).
    ``scaled``: the singular vectors of ``D_r^{-1/2} P D_c^{-1/2}`` (row and column sums),
    mapped back (``U <- D_r^{-1/2} U``, ``X <- D_c^{-1/2} V diag(inv)``; still
    ``U^T P X = I`` on the kept directions): the CCA-like variant of the SHAG learner.
    A dense ``P`` (larger than :data:`_DENSE_SVD` on both sides) takes the compiled
    randomized SVD of its non-zeros (:func:`~fastspectral.linalg.svd.csr_randomized_svd`;
    ``csr``: the CSR arrays of ``P`` if known; then ``P`` may be None, with its ``shape``
    given)."""
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
        if csr is None:
            csr = _dense_to_csr(np.ascontiguousarray(P, dtype=np.float64))
        U, s, Vt = csr_randomized_svd(csr[:3], shape, k, oversample=OVERSAMPLE,
                                      n_iter=_power_iterations(k), random_state=random_state)
    else:
        U, s, Vt = _svd(sp.csr_matrix(P), N, random_state)
    keep = s > rcond * max(s[0], 1e-300) if len(s) else np.zeros(0, dtype=bool)
    U, s, Vt = U[:, keep], s[keep], Vt[keep]
    inv = ridge_inverse(s, np.ones(len(s), dtype=np.bool_), ridge, n_seq)
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
