"""The compiled SVD kit of :mod:`fastspectral.linalg.svd` (Numba, ``@njit(cache=True)``):
exact and randomized SVDs of small dense blocks, callable from other compiled learners (e.g. the
Hankel blocks of :mod:`fastspectral.dependency.spectral`).  A module of its own so that the
NumPy-level SVDs (the spectral L-PCFG's training path) do not import Numba; import these from
:mod:`fastspectral.linalg.svd`, which re-exports them lazily."""
from __future__ import annotations

import numpy as np
from .._jit import njit

__all__ = ["small_svd", "range_svd", "wide_svd", "sym_eig", "jacobi_sweeps", "orth", "chol_orth",
           "csr_dot", "csr_tdot", "sparse_range_svd"]


# ------------------------------------------------------------------------------------------------

@njit(cache=True)
def chol_orth(S):  # pragma: no cover - numba
    """Orthonormal basis ``S R^{-1}`` of the columns of ``S`` ([m, k]) by Cholesky QR
    (``R^T R = S^T S``); ``ok`` is False (and ``S`` is returned) when a pivot is below
    ``1e-13`` times the largest squared column norm, i.e. ``cond(S)`` may exceed about
    ``3e6``.  Below that bound the span is as accurate as Householder QR's (an error of
    order ``1e-16 cond(S)``) and the basis is orthonormal to about ``1e-16 cond(S)^2``."""
    m, k = S.shape
    G = S.T @ S
    R = np.zeros((k, k))
    gmax = 0.0
    for j in range(k):
        gmax = max(gmax, G[j, j])
    for j in range(k):
        d = G[j, j]
        for i in range(j):
            d -= R[i, j] * R[i, j]
        if not d > 1e-13 * gmax:
            return S, False
        rjj = np.sqrt(d)
        R[j, j] = rjj
        for l in range(j + 1, k):
            v = G[j, l]
            for i in range(j):
                v -= R[i, j] * R[i, l]
            R[j, l] = v / rjj
    Ri = np.zeros((k, k))                 # R^{-1} (upper triangular), column by column
    for j in range(k):
        Ri[j, j] = 1.0 / R[j, j]
        for i in range(j - 1, -1, -1):
            v = 0.0
            for l in range(i + 1, j + 1):
                v += R[i, l] * Ri[l, j]
            Ri[i, j] = -v / R[i, i]
    return S @ Ri, True


@njit(cache=True)
def orth(S, twice, chol):  # pragma: no cover - numba
    """Orthonormal basis of the column span of ``S`` ([m, k], ``m >= k``): Cholesky QR
    (``twice``: repeated, for orthonormality to rounding) if ``chol``, else or when ``S`` is
    too ill-conditioned for it (e.g. rank-deficient) Householder QR (LAPACK).  Returns the
    basis and whether Cholesky QR was used."""
    if chol:
        Y, ok = chol_orth(S)
        if ok and twice:
            Y, ok = chol_orth(Y)
        if ok:
            return Y, True
    Qf, _ = np.linalg.qr(S)
    return np.ascontiguousarray(Qf), False


@njit(cache=True)
def jacobi_sweeps(Gm, V, sig, tol, max_sweeps):  # pragma: no cover - numba
    """Cyclic Jacobi on the symmetric ``Gm`` (in place), ``V <- V J``; pairs ``(p, q)`` with
    ``|Gm[p,q]| <= tol sqrt(Gm[p,p] Gm[q,q])`` or with neither diagonal above ``sig`` are
    skipped.  Returns the number of rotations of the last sweep."""
    k = Gm.shape[0]
    nrot = 0
    for _ in range(max_sweeps):
        nrot = 0
        for p in range(k - 1):
            for q in range(p + 1, k):
                apq = Gm[p, q]
                app = Gm[p, p]
                aqq = Gm[q, q]
                if app <= sig and aqq <= sig:
                    continue
                if abs(apq) <= tol * np.sqrt(abs(app * aqq)):
                    continue
                nrot += 1
                tau = (aqq - app) / (2.0 * apq)
                t = (1.0 if tau >= 0 else -1.0) / (abs(tau) + np.sqrt(1.0 + tau * tau))
                c = 1.0 / np.sqrt(1.0 + t * t)
                s = t * c
                for r in range(k):
                    x = Gm[r, p]
                    y = Gm[r, q]
                    Gm[r, p] = c * x - s * y
                    Gm[r, q] = s * x + c * y
                for r in range(k):
                    x = Gm[p, r]
                    y = Gm[q, r]
                    Gm[p, r] = c * x - s * y
                    Gm[q, r] = s * x + c * y
                for r in range(k):
                    x = V[r, p]
                    y = V[r, q]
                    V[r, p] = c * x - s * y
                    V[r, q] = s * x + c * y
        if nrot == 0:
            break
    return nrot


@njit(cache=True)
def sym_eig(A):  # pragma: no cover - numba
    """Eigen-decomposition of a small symmetric matrix: Householder tridiagonalisation and
    the implicit QL algorithm (EISPACK tred2 / tql2, as in JAMA).  Returns ``(w, V)`` with
    ascending eigenvalues ``w`` and orthonormal eigenvectors in the columns of ``V``."""
    n = A.shape[0]
    V = A.copy()
    d = np.empty(n)
    e = np.zeros(n)
    for j in range(n):
        d[j] = V[n - 1, j]
    for i in range(n - 1, 0, -1):            # tred2
        scale = 0.0
        h = 0.0
        for k in range(i):
            scale += abs(d[k])
        if scale == 0.0:
            e[i] = d[i - 1]
            for j in range(i):
                d[j] = V[i - 1, j]
                V[i, j] = 0.0
                V[j, i] = 0.0
        else:
            for k in range(i):
                d[k] /= scale
                h += d[k] * d[k]
            f = d[i - 1]
            g = np.sqrt(h)
            if f > 0:
                g = -g
            e[i] = scale * g
            h = h - f * g
            d[i - 1] = f - g
            for j in range(i):
                e[j] = 0.0
            for j in range(i):
                f = d[j]
                V[j, i] = f
                g = e[j] + V[j, j] * f
                for k in range(j + 1, i):
                    g += V[k, j] * d[k]
                    e[k] += V[k, j] * f
                e[j] = g
            f = 0.0
            for j in range(i):
                e[j] /= h
                f += e[j] * d[j]
            hh = f / (h + h)
            for j in range(i):
                e[j] -= hh * d[j]
            for j in range(i):
                f = d[j]
                g = e[j]
                for k in range(j, i):
                    V[k, j] -= f * e[k] + g * d[k]
                d[j] = V[i - 1, j]
                V[i, j] = 0.0
        d[i] = h
    for i in range(n - 1):                   # accumulate the transformations
        V[n - 1, i] = V[i, i]
        V[i, i] = 1.0
        h = d[i + 1]
        if h != 0.0:
            for k in range(i + 1):
                d[k] = V[k, i + 1] / h
            for j in range(i + 1):
                g = 0.0
                for k in range(i + 1):
                    g += V[k, i + 1] * V[k, j]
                for k in range(i + 1):
                    V[k, j] -= g * d[k]
        for k in range(i + 1):
            V[k, i + 1] = 0.0
    for j in range(n):
        d[j] = V[n - 1, j]
        V[n - 1, j] = 0.0
    V[n - 1, n - 1] = 1.0
    e[0] = 0.0
    for i in range(1, n):                    # tql2
        e[i - 1] = e[i]
    e[n - 1] = 0.0
    f = 0.0
    tst1 = 0.0
    eps = 2.0 ** -52
    for l in range(n):
        tst1 = max(tst1, abs(d[l]) + abs(e[l]))
        m = l
        while m < n - 1:
            if abs(e[m]) <= eps * tst1:
                break
            m += 1
        if m > l:
            for _ in range(60):
                g = d[l]
                p = (d[l + 1] - g) / (2.0 * e[l])
                r = np.hypot(p, 1.0)
                if p < 0:
                    r = -r
                d[l] = e[l] / (p + r)
                d[l + 1] = e[l] * (p + r)
                dl1 = d[l + 1]
                h = g - d[l]
                for i in range(l + 2, n):
                    d[i] -= h
                f += h
                p = d[m]
                c = 1.0
                c2 = c
                c3 = c
                el1 = e[l + 1]
                s = 0.0
                s2 = 0.0
                for i in range(m - 1, l - 1, -1):
                    c3 = c2
                    c2 = c
                    s2 = s
                    g = c * e[i]
                    h = c * p
                    r = np.hypot(p, e[i])
                    e[i + 1] = s * r
                    s = e[i] / r
                    c = p / r
                    p = c * d[i] - s * g
                    d[i + 1] = h + s * (c * g + s * d[i])
                    for k in range(n):
                        h = V[k, i + 1]
                        V[k, i + 1] = s * V[k, i] + c * h
                        V[k, i] = c * V[k, i] - s * h
                p = -s * s2 * c3 * el1 * e[l] / dl1
                e[l] = s * p
                d[l] = c * p
                if not abs(e[l]) > eps * tst1:
                    break
        d[l] = d[l] + f
        e[l] = 0.0
    for i in range(n - 1):                   # sort ascending
        k = i
        p = d[i]
        for j in range(i + 1, n):
            if d[j] < p:
                k = j
                p = d[j]
        if k != i:
            d[k] = d[i]
            d[i] = p
            for j in range(n):
                p = V[j, i]
                V[j, i] = V[j, k]
                V[j, k] = p
    return d, V


@njit(cache=True)
def wide_svd(Bm, rcond):  # pragma: no cover - numba
    """Thin SVD ``Bm = U diag(s) Vt`` of a short, wide matrix ([k, c], ``k <= c``).

    The eigenvectors ``V0`` of the Gram matrix ``Bm Bm^T`` give ``W = V0^T Bm`` with nearly
    orthogonal rows; their Gram ``W W^T`` is computed again (accurate relative to the row
    norms) and, while any pair of rows of significant norm (above ``1e-3 rcond`` times the
    largest) is not orthogonal to ``1e-14`` relative, one-sided Jacobi rotations refine
    ``V0`` and ``W``.  Then ``s`` are the row norms of ``W`` (sorted decreasingly), ``U = V0``
    and ``Vt = diag(1/s) W``: the accuracy of a one-sided Jacobi SVD (relative to each
    singular value), at the cost of a ``k x k`` eigendecomposition."""
    k, c = Bm.shape
    _, V = sym_eig(Bm @ Bm.T)
    V0 = np.ascontiguousarray(V[:, ::-1])
    W = V0.T @ Bm
    rc = max(rcond, 1e-12) * 1e-3
    for _ in range(4):
        G2 = W @ np.ascontiguousarray(W.T)
        gmax = 0.0
        for i in range(k):
            gmax = max(gmax, G2[i, i])
        V1 = np.eye(k)
        if jacobi_sweeps(G2, V1, rc * rc * gmax, 1e-14, 1) == 0:
            break
        jacobi_sweeps(G2, V1, rc * rc * gmax, 1e-14, 10)
        V0 = V0 @ V1
        W = np.ascontiguousarray(V1.T) @ W
    s = np.empty(k)
    for i in range(k):
        a = 0.0
        for j in range(c):
            a += W[i, j] * W[i, j]
        s[i] = np.sqrt(a)
    idx = np.argsort(-s)
    U = np.empty((k, k))
    Vt = np.empty((k, c))
    ss = np.empty(k)
    for ii in range(k):
        i = idx[ii]
        ss[ii] = s[i]
        for r in range(k):
            U[r, ii] = V0[r, i]
        inv = 1.0 / s[i] if s[i] > 0 else 0.0
        for j in range(c):
            Vt[ii, j] = W[i, j] * inv
    return U, ss, Vt


@njit(cache=True)
def range_svd(Q, Om, k, power, rcond):  # pragma: no cover - numba
    """Randomised range finder on the compacted block ``Q`` ([r, c], ``k < min(r, c)``): the
    test matrix is ``Om[:c]`` ([c, k]), then ``power`` power iterations with
    re-orthonormalisation and an SVD of the projection (see :func:`wide_svd`).  Returns
    ``(U [r, k], s [k], Vt [k, c])`` with ``U^T Q = diag(s) Vt``."""
    c = Q.shape[1]
    # Cholesky QR while the sketches are well conditioned, else Householder QR for the block
    Y, chol = orth(Q @ Om[:c], power <= 0, True)
    for it in range(power):
        Z, chol = orth(Q.T @ Y, False, chol)
        Y, chol = orth(Q @ Z, it == power - 1, chol)
    Bm = Y.T @ Q
    Ub, s, Vt = wide_svd(Bm, rcond)
    return Y @ Ub, s, Vt


@njit(cache=True)
def small_svd(Q, rcond):  # pragma: no cover - numba
    """Exact thin SVD of a compacted block (closed form for a single row or column, else
    :func:`wide_svd` of the block or its transpose)."""
    r, c = Q.shape
    if r == 1 or c == 1:
        nrm = 0.0
        for i in range(r):
            for j in range(c):
                nrm += Q[i, j] * Q[i, j]
        nrm = np.sqrt(nrm)
        U = np.empty((r, 1))
        Vt = np.empty((1, c))
        s = np.array([nrm])
        if r == 1:
            U[0, 0] = 1.0
            for j in range(c):
                Vt[0, j] = Q[0, j] / nrm
        else:
            Vt[0, 0] = 1.0
            for i in range(r):
                U[i, 0] = Q[i, 0] / nrm
        return U, s, Vt
    if r <= c:
        return wide_svd(Q, rcond)
    V, s, Ut = wide_svd(np.ascontiguousarray(Q.T), rcond)
    return np.ascontiguousarray(Ut.T), s, np.ascontiguousarray(V.T)


@njit(cache=True)
def csr_dot(data, indices, indptr, Y):  # pragma: no cover - numba
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
def csr_tdot(data, indices, indptr, Y, n_cols):  # pragma: no cover - numba
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
def sparse_range_svd(data, ind, ptr, n_cols, G, k, n_iter):  # pragma: no cover - numba
    """Top-``k`` singular triplets ``(U, s, Vt)`` of the block ``D`` [r, ``n_cols``] given by
    its CSR arrays: Halko et al.'s range finder (algorithm 4.4) with the test matrix ``G``
    [c, p], ``n_iter`` power iterations re-orthonormalised by Cholesky QR (Householder when a
    sketch is ill-conditioned: :func:`orth`), then the SVD of ``B^T = (Q^T D)^T`` [c, p]
    through its QR factorisation (``B^T = Q_b R``, the SVD of the small ``R``: the same
    factors as LAPACK's SVD of ``B^T`` to rounding, at a fraction of its cost).  The
    computation of :func:`fastspectral.linalg.randomized_svd` (the same test matrix, products
    and orthonormalisations up to the signs of the columns) with no Python call per
    product; the products with ``D^T`` scatter through the CSR arrays (:func:`csr_tdot`).
    :func:`fastspectral.linalg.svd.csr_randomized_svd` draws ``G`` and calls it."""
    Q, chol = orth(csr_dot(data, ind, ptr, G), n_iter <= 0, True)
    for it in range(n_iter):
        W, chol = orth(csr_tdot(data, ind, ptr, Q, n_cols), False, chol)
        Q, chol = orth(csr_dot(data, ind, ptr, W), it == n_iter - 1, chol)
    Bt = csr_tdot(data, ind, ptr, Q, n_cols)                # (Q^T D)^T: [c, p]
    Qb, _ = orth(Bt, True, True)
    Ur, s, VrT = np.linalg.svd(np.ascontiguousarray(Qb.T) @ Bt)
    U = Q @ np.ascontiguousarray(VrT.T[:, :k])
    Vb = Qb @ np.ascontiguousarray(Ur[:, :k])
    return U, s[:k].copy(), np.ascontiguousarray(Vb.T)
