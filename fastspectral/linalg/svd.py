"""Truncated and randomized SVDs: the one home of the package's SVD code.

NumPy / SciPy level (sparse or dense input):

* :func:`range_finder` — orthonormal basis of the range of ``A`` by the randomized range
  finder with subspace (power) iterations, re-orthonormalised by QR after every product
  (Halko, Martinsson & Tropp 2011, algorithm 4.4);
* :func:`randomized_svd` — top-``k`` singular triplets from that basis (the CCA projection of
  the pivot learners, :mod:`fastspectral.linalg.cca`; BLAS single-threaded);
* :func:`truncated_svd` — top-``k`` triplets of the L-PCFG moment matrices ``Omega^a``
  (Cohen et al. 2012, figure 4, step 2): a dense LAPACK SVD for small matrices (the leading
  eigenpairs of the short side's Gram matrix instead when the spectrum is flat enough for
  that to be as accurate), the Gram eigen-decomposition for thin ones, else the same range
  finder.

Both randomized SVDs draw the test matrix from ``numpy.random.default_rng(seed)`` and share
:func:`range_finder`; they differ only in the side whose small SVD they take last
(``B = Q^T A`` for :func:`truncated_svd`, ``B^T`` for :func:`randomized_svd`), which is kept as
each learner had it so that fitted models stay bit-for-bit the same.
``sklearn.utils.extmath.randomized_svd`` was not adopted: its LU-normalised power iterations
give different (equally accurate) vectors, which would change the fitted models.

Numba level (``@njit(cache=True)``, callable from other compiled learners, e.g. the Hankel
blocks of :mod:`fastspectral.dependency.spectral`): :func:`small_svd` (exact thin SVD of a
small block), :func:`range_svd` (randomized range finder on a block with a given test
matrix), built on :func:`wide_svd` (eigenvectors of the Gram matrix refined by one-sided
Jacobi rotations), :func:`sym_eig` (EISPACK tred2 / tql2), :func:`jacobi_sweeps`,
:func:`orth` and :func:`chol_orth` (Cholesky QR with a Householder fallback), and the randomized
SVD of a matrix given by its CSR arrays, :func:`sparse_range_svd` (products :func:`csr_dot`,
:func:`csr_tdot`; :func:`csr_randomized_svd` is its NumPy-level entry).  They live in
:mod:`fastspectral.linalg._svd_numba` and are re-exported here on first use, so that the
NumPy-level SVDs (the spectral L-PCFG's training path) do not import Numba (0.15 CPU-s).

The QR of the range finder is ``scipy.linalg.qr(mode="economic")``: the same LAPACK
``geqrf`` + ``orgqr`` as ``numpy.linalg.qr`` (bit-for-bit the same factors with the wheels'
OpenBLAS), about 1.8x faster on the tall sketches (numpy's wrapper copies and queries more).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .._blas import blas_single_thread

__all__ = ["range_finder", "randomized_svd", "truncated_svd", "csr_randomized_svd", "small_svd",
           "range_svd", "wide_svd", "sym_eig", "jacobi_sweeps", "orth", "chol_orth", "csr_dot",
           "csr_tdot", "sparse_range_svd"]


def range_finder(A, At, ell: int, n_iter: int, rng) -> np.ndarray:
    """Orthonormal ``[d1, ell]`` basis ``Q`` of the range of ``A`` (``At`` is ``A``'s transpose,
    in whatever sparse format multiplies fastest): ``Q = orth(A G)`` for a Gaussian ``G``
    ``[d2, ell]`` drawn from ``rng``, then ``n_iter`` times ``Q = orth(A orth(A^T Q))``
    (Halko et al. 2011, algorithm 4.4)."""
    Q = _orth(np.asarray(A @ rng.standard_normal((A.shape[1], ell))))
    for _ in range(int(n_iter)):
        W = _orth(np.asarray(At @ Q))
        Q = _orth(np.asarray(A @ W))
    return Q


def _orth(X) -> np.ndarray:
    """The ``Q`` of the thin Householder QR of ``X`` (as ``numpy.linalg.qr(X)[0]``)."""
    return sla.qr(X, mode="economic", check_finite=False)[0]


def randomized_svd(A, k: int, oversample: int = 10, n_iter: int = 6, random_state=0):
    """Top-``k`` singular triplets ``(U, s, Vt)`` of ``A`` (sparse or dense), randomized.

    Halko et al. (2011), algorithm 4.4 (subspace iteration) with ``n_iter`` power iterations
    and ``oversample`` extra columns.  Singular values are returned in decreasing order.
    """
    n, d = A.shape
    k = int(k)
    if k < 1 or k > min(n, d):
        raise ValueError(f"k must be in 1..{min(n, d)}, got {k}")
    rng = np.random.default_rng(random_state)
    p = min(k + int(oversample), min(n, d))
    # tall-skinny QR / SVD: multi-threaded BLAS only adds overhead (and thrashes shared cores)
    with blas_single_thread():
        Qm = range_finder(A, A.T, p, n_iter, rng)
        Bt = np.asarray(A.T @ Qm)  # d x p  = (Q^T A)^T
        Vb, s, UbT = np.linalg.svd(Bt, full_matrices=False)  # B^T = Vb s Ub^T
    U = Qm @ UbT.T[:, :k]
    return U, s[:k], Vb[:, :k].T


#: smallest short side of a dense-branch matrix decomposed through its Gram matrix, and the
#: smallest ``s_k / s_1`` accepted there (below it: the full LAPACK SVD)
_GRAM_MIN_SIDE = 128
_GRAM_MIN_RATIO = 0.03


def _gram_top_svd(Omega, k: int):
    """Top-``k`` singular triplets from the ``k`` leading eigenpairs of the Gram matrix of the
    short side (LAPACK ``syevr`` on that subset only), or None when ``s_k < 0.03 s_1``.

    A full SVD computes every singular vector, of which the estimate keeps ``k`` (32 of ~500
    for the costliest moment matrices): the subset eigen-decomposition takes about half the
    time.  Squaring costs accuracy only relative to ``s_1``: the eigenvalues carry an error of
    about ``eps s_1^2``, i.e. ``eps (s_1 / s_i)^2`` relative on ``s_i``, at most ``2.4e-13``
    when ``s_k >= 0.03 s_1`` (measured on the WSJ moment matrices: ``1.5e-15`` on ``s``,
    ``1e-13`` on the vectors, against ``numpy.linalg.svd``).  Spectra falling faster than that
    go to the full SVD (the caller's fallback)."""
    d1, d2 = Omega.shape
    wide = d1 <= d2
    if sp.issparse(Omega):
        A = Omega.tocsr() if wide else Omega.T.tocsr()       # short side first: [n, m]
        G = (A @ A.T).toarray()
    else:
        A = np.asarray(Omega, dtype=np.float64)
        A = A if wide else A.T
        G = A @ A.T
    n = G.shape[0]
    w, Q = sla.eigh(G, subset_by_index=(n - k, n - 1), driver="evr", overwrite_a=True,
                    check_finite=False)
    w, Q = w[::-1], Q[:, ::-1]
    s = np.sqrt(np.maximum(w, 0.0))
    if not s[0] > 0 or s[-1] < _GRAM_MIN_RATIO * s[0]:
        return None
    W = np.asarray(A.T @ Q) / s                                 # the long side's vectors
    if wide:                                                    # Omega = Q S W^T
        return np.ascontiguousarray(Q), s, np.ascontiguousarray(W.T)
    return np.ascontiguousarray(W), s, np.ascontiguousarray(Q.T)   # Omega = W S Q^T


def truncated_svd(Omega, k: int, oversample: int = 10, n_iter: int = 3, seed: int = 0):
    """Top-``k`` singular triplets ``(U, s, Vt)`` of a (sparse or dense) matrix.

    Small matrices use a dense LAPACK SVD, or for a short side of at least 128 (and ``4 k``)
    the ``k`` leading eigenpairs of the short side's Gram matrix when ``s_k >= 0.03 s_1``
    (:func:`_gram_top_svd`); thin ones (one side at most 300) the eigen-decomposition of the
    small Gram matrix; larger ones the randomized range finder with
    ``n_iter`` power iterations (:func:`range_finder`), accurate on the leading part of the
    fast-decaying spectra of the L-PCFG moment matrices (not to rounding where ``s_k`` and
    ``s_{k+1}`` are close: 1e-3 relative on the 16th value of the flat ~500 x 500 ones, which
    is why those take the dense branch).  ``k`` is clipped to ``1 .. min(shape)``.  BLAS runs
    single-threaded (the products and factorisations are small).
    """
    with blas_single_thread():
        return _truncated_svd(Omega, k, oversample, n_iter, seed)


def _truncated_svd(Omega, k, oversample, n_iter, seed):
    d1, d2 = Omega.shape
    k = int(max(1, min(k, d1, d2)))
    if d1 * d2 <= 250_000:
        if min(d1, d2) >= max(_GRAM_MIN_SIDE, 4 * k):
            got = _gram_top_svd(Omega, k)
            if got is not None:
                return got
        A = Omega.toarray() if sp.issparse(Omega) else np.asarray(Omega, dtype=np.float64)
        U, s, Vt = np.linalg.svd(A, full_matrices=False)
        return U[:, :k], s[:k], Vt[:k]
    if min(d1, d2) <= 300:
        # thin matrix: eigen-decomposition of the small Gram matrix
        tall = d1 > d2
        A = Omega.T.tocsr() if (tall and sp.issparse(Omega)) else (Omega.T if tall else Omega)
        G = A @ A.T
        G = G.toarray() if sp.issparse(G) else np.asarray(G)
        w, Q = np.linalg.eigh(G)
        w, Q = w[::-1][:k], Q[:, ::-1][:, :k]
        s = np.sqrt(np.maximum(w, 0.0))
        inv = np.where(s > s[0] * 1e-12, 1.0 / np.maximum(s, 1e-300), 0.0) if s[0] > 0 else 0 * s
        W = np.asarray(A.T @ Q) * inv  # right vectors of A
        if tall:   # Omega = A^T = W S Q^T
            return W, s, Q.T
        return Q, s, W.T
    rng = np.random.default_rng(seed)
    ell = min(k + oversample, d1, d2)
    A = Omega.tocsr() if sp.issparse(Omega) else Omega
    At = A.T.tocsr() if sp.issparse(A) else A.T
    Q = range_finder(A, At, ell, n_iter, rng)
    B = np.asarray(At @ Q).T  # ell x d2
    Ub, s, Vt = np.linalg.svd(B, full_matrices=False)
    U = Q @ Ub
    return U[:, :k], s[:k], Vt[:k]


def csr_randomized_svd(csr, shape, k: int, oversample: int = 10, n_iter: int = 2,
                       random_state=0):
    """Top-``k`` singular triplets ``(U, s, Vt)`` of the matrix of shape ``shape`` given by its
    CSR arrays ``csr = (data, indices, indptr)`` (float64 data): the test matrix
    ``G`` [cols, min(k + oversample, min(shape))] drawn from
    ``numpy.random.default_rng(random_state)``, then the compiled range finder of
    :func:`sparse_range_svd` with ``n_iter`` power iterations (BLAS single-threaded).  The
    computation of :func:`randomized_svd` with no Python call per product (the spectral HMM's
    dense Hankel blocks, :mod:`fastspectral.hmm.spectral`)."""
    from ._svd_numba import sparse_range_svd

    p = min(k + oversample, min(shape))
    G = np.random.default_rng(random_state).standard_normal((shape[1], p))
    data, ind, ptr = csr
    with blas_single_thread():
        return sparse_range_svd(data, ind, ptr, shape[1], G, k, n_iter)


_COMPILED = frozenset(["small_svd", "range_svd", "wide_svd", "sym_eig", "jacobi_sweeps", "orth",
                       "chol_orth", "csr_dot", "csr_tdot", "sparse_range_svd"])


def __getattr__(name):  # the Numba kit, imported on first use
    if name in _COMPILED:
        from . import _svd_numba

        return getattr(_svd_numba, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
