"""FastAnchorWords (Arora et al., 2013): greedy farthest-point search for the vertices of a hull.

Given points ``x_f`` (the rows of ``X``) that are convex combinations of ``m`` unknown vertices
which are themselves among the points (the anchor / pivot / separability assumption), the
vertices are found greedily:

1. ``s_0`` = the row farthest from the origin (``mode="linear"``), or — the default,
   ``mode="affine"`` — the row farthest from the origin and then, with every point translated
   by ``-x_{s_0}``, the row farthest from ``x_{s_0}``;
2. repeatedly, the row farthest from the (linear or affine) span of the rows chosen so far.

The span is kept as an orthonormal basis ``q_1, q_2, ...`` built by Gram–Schmidt (each new
residual direction orthogonalised twice against the basis, for stability) and the squared
distance of every row to the span is kept as ``||y_f||^2 - sum_k (y_f . q_k)^2``, so adding an
anchor costs one product ``X q`` — ``O(n d)`` dense or ``O(nnz)`` sparse — plus ``O(d k)``.
``X`` is never modified or densified.

With ``project_dim=k`` the rows are first multiplied by a Gaussian ``d x k`` random matrix
(``N(0, 1/k)`` entries, Johnson–Lindenstrauss), which is the random-projection speed-up of
Arora et al. for large ``d``.  ``candidates`` restricts the rows that may become anchors (e.g.
frequent words only: rare rows are noisy and would win the farthest-point search).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from .._blas import blas_single_thread

__all__ = ["fast_anchor_words"]


def fast_anchor_words(X, m: int, mode: str = "affine", candidates=None,
                      project_dim: int | None = None, random_state=None):
    """Return the indices (``int64``, length ``m``, in the order found) of ``m`` anchor rows.

    ``X``: ``n x d`` dense array or SciPy sparse matrix.  ``mode``: ``"affine"`` (default;
    distances to the affine span of the chosen rows, right for points on a simplex) or
    ``"linear"`` (distances to their linear span, the first anchor being the row of largest
    norm).  ``candidates``: optional boolean mask or index array of rows allowed as anchors.
    ``project_dim``: optional random-projection dimension (speed-up for large ``d``).
    Raises ``ValueError`` when fewer than ``m`` candidate rows exist.
    """
    # matrix-vector products only: single-threaded BLAS is much faster than thread start-up
    # (and than fighting other processes for shared cores)
    with blas_single_thread():
        return _fast_anchor_words(X, m, mode, candidates, project_dim, random_state)


def _fast_anchor_words(X, m, mode, candidates, project_dim, random_state):
    if mode not in ("affine", "linear"):
        raise ValueError(f"mode must be 'affine' or 'linear', got {mode!r}")
    sparse = sp.issparse(X)
    X = sp.csr_matrix(X, dtype=np.float64) if sparse else np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError("X must be 2-D")
    n, d = X.shape
    m = int(m)
    if m < 1:
        raise ValueError("m must be >= 1")
    if project_dim is not None and project_dim < d:
        rng = np.random.default_rng(random_state)
        R = rng.standard_normal((d, int(project_dim))) / np.sqrt(project_dim)
        X = np.asarray(X @ R)
        sparse = False
        n, d = X.shape
    allowed = np.ones(n, dtype=bool)
    if candidates is not None:
        cand = np.asarray(candidates)
        if cand.dtype == bool:
            if cand.shape != (n,):
                raise ValueError(f"candidate mask must have length {n}")
            allowed = cand.copy()
        else:
            allowed = np.zeros(n, dtype=bool)
            allowed[cand.astype(np.int64)] = True
    if allowed.sum() < m:
        raise ValueError(f"need {m} anchors but only {int(allowed.sum())} candidate rows")

    if sparse:
        sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    else:
        sqnorm = np.einsum("ij,ij->i", X, X)

    def row(i):
        return X[i].toarray().ravel() if sparse else X[i].copy()

    def masked_argmax(values):
        v = np.where(allowed, values, -np.inf)
        return int(np.argmax(v))

    anchors: list[int] = []
    s0 = masked_argmax(sqnorm)
    anchors.append(s0)
    if mode == "affine":
        origin = row(s0)
        xo = np.asarray(X @ origin).ravel()
        # ||x_f - x_0||^2
        resid = sqnorm - 2.0 * xo + origin @ origin
        shift_dot = lambda q, Xq: Xq - origin @ q  # (x_f - x_0) . q  # noqa: E731
    else:
        origin = np.zeros(d)
        resid = sqnorm.copy()
        shift_dot = lambda q, Xq: Xq  # noqa: E731
    basis: list[np.ndarray] = []
    if mode == "linear":
        # the first anchor already spans a direction
        q = row(s0)
        nq = np.linalg.norm(q)
        if nq > 0:
            q /= nq
            basis.append(q)
            resid = resid - np.asarray(X @ q).ravel() ** 2
    allowed[s0] = False
    while len(anchors) < m:
        i = masked_argmax(resid)
        anchors.append(i)
        allowed[i] = False
        y = row(i) - origin
        for _ in range(2):  # Gram-Schmidt, twice for stability
            for q in basis:
                y -= (y @ q) * q
        ny = np.linalg.norm(y)
        if ny > 1e-12 * max(1.0, np.sqrt(max(sqnorm.max(), 0.0))):
            q = y / ny
            basis.append(q)
            proj = shift_dot(q, np.asarray(X @ q).ravel())
            resid = resid - proj * proj
    return np.asarray(anchors, dtype=np.int64)
