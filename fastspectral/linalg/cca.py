"""CCA projection of a co-occurrence matrix (the representation ``phi(g)`` of section 5.2).

For a non-negative co-occurrence matrix ``Q`` (rows ``f``, columns ``g``; counts or
probabilities, sparse or dense) let ``p(f, g) = Q / sum(Q)``, ``p(f)``, ``p(g)`` its marginals and ::

    Omega = diag(p(f))^-1/2  p(f, g)  diag(p(g))^-1/2  =  Q_fg / sqrt(Q_f. Q_.g)

(scale-free: counts and probabilities give the same ``Omega``).  With the top-``l`` singular
triplets ``Omega ~ U diag(sigma) V^T`` the CCA representation of a column value ``g`` is its
canonical variate

    phi(g) = V[g, :] / sqrt(p(g))        (an ``l``-vector; 0 for a column with no mass),

i.e. ``phi = diag(p(g))^-1/2 V``.  It is whitened — ``E_{p(g)}[phi(g) phi(g)^T] = I`` — and the
conditional means used by MDP 2 are the canonical variates of the rows:

    v_f = E[phi(g) | f] = sum_g p(g | f) phi(g) = U[f, :] * sigma / sqrt(p(f)).

The first singular pair of ``Omega`` is the trivial one (``sigma_1 = 1``, ``phi_1 == 1``,
``v_f1 == 1``): it is kept, so ``l`` dimensions hold an ``(l-1)``-dimensional affine picture —
exactly what ``l = m`` vertices of a simplex need.

The truncated SVD (:func:`fastspectral.linalg.svd.randomized_svd`) is a randomized range finder
(Halko, Martinsson & Tropp 2011) with ``oversample`` extra columns and ``n_iter`` power (subspace) iterations, re-orthonormalised by
QR after every product: two sparse products per iteration, ``O(nnz (l + oversample))``.  On the
spectra of word co-occurrence matrices 4–7 power iterations match ``scipy.sparse.linalg.svds``
(ARPACK, ``method="arpack"``) to ~1e-6 in the singular values, several times faster.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .svd import randomized_svd

__all__ = ["cca_projection", "whiten", "conditional_means"]


def whiten(Q):
    """Return ``(Omega, p_f, p_g)``: the CCA-whitened matrix and the row / column marginals.

    Rows or columns without mass get a zero scale (their rows / columns of ``Omega`` are 0).
    ``Omega`` is CSR when ``Q`` is sparse, else a dense array.
    """
    if sp.issparse(Q):
        Q = sp.csr_matrix(Q, dtype=np.float64)
        if Q.nnz and Q.data.min() < 0:
            raise ValueError("co-occurrence matrix has negative entries")
    else:
        Q = np.asarray(Q, dtype=np.float64)
        if Q.size and Q.min() < 0:
            raise ValueError("co-occurrence matrix has negative entries")
    total = float(Q.sum())
    if not total > 0:
        raise ValueError("co-occurrence matrix has no mass")
    p_f = np.asarray(Q.sum(axis=1)).ravel() / total
    p_g = np.asarray(Q.sum(axis=0)).ravel() / total
    sf = np.zeros_like(p_f)
    sf[p_f > 0] = 1.0 / np.sqrt(p_f[p_f > 0])
    sg = np.zeros_like(p_g)
    sg[p_g > 0] = 1.0 / np.sqrt(p_g[p_g > 0])
    if sp.issparse(Q):
        Omega = sp.diags(sf / total) @ Q @ sp.diags(sg)
        Omega = sp.csr_matrix(Omega)
    else:
        Omega = (sf / total)[:, None] * Q * sg[None, :]
    return Omega, p_f, p_g


def cca_projection(Q, l: int, method: str = "randomized", n_iter: int = 6, oversample: int = 10,
                   random_state=0, return_details: bool = False):
    """The CCA representation ``phi(g)`` (``n_cols x l``) of the columns of ``Q``.

    ``phi = diag(p(g))^-1/2 V_l`` where ``V_l`` holds the top-``l`` right singular vectors of
    ``Omega = diag(p(f))^-1/2 p(f, g) diag(p(g))^-1/2`` (see the module docstring for the
    scaling and for ``v_f = E[phi(g) | f] = U sigma / sqrt(p(f))``).  ``method``:
    ``"randomized"`` (default; ``n_iter`` power iterations) or ``"arpack"``
    (``scipy.sparse.linalg.svds``) or ``"dense"`` (``numpy.linalg.svd``, small matrices).
    Singular vectors are sign-normalised (largest-magnitude entry of each column of ``V``
    positive) so results are reproducible.  With ``return_details=True`` returns ``(phi, info)``
    with ``info = {"U", "sigma", "Vt", "p_f", "p_g"}``.
    """
    Omega, p_f, p_g = whiten(Q)
    n, d = Omega.shape
    l = int(l)
    if l < 1 or l > min(n, d):
        raise ValueError(f"l must be in 1..{min(n, d)}, got {l}")
    if method == "randomized":
        U, s, Vt = randomized_svd(Omega, l, oversample=oversample, n_iter=n_iter,
                                  random_state=random_state)
    elif method == "arpack":
        from scipy.sparse.linalg import svds

        if l >= min(n, d):
            A = Omega.toarray() if sp.issparse(Omega) else Omega
            U, s, Vt = np.linalg.svd(A, full_matrices=False)
        else:
            U, s, Vt = svds(sp.csr_matrix(Omega) if sp.issparse(Omega) else Omega, k=l,
                            random_state=random_state)
        order = np.argsort(-s)
        U, s, Vt = U[:, order], s[order], Vt[order]
    elif method == "dense":
        A = Omega.toarray() if sp.issparse(Omega) else Omega
        U, s, Vt = np.linalg.svd(A, full_matrices=False)
    else:
        raise ValueError(f"unknown SVD method {method!r} (randomized, arpack, dense)")
    U, s, Vt = U[:, :l], s[:l], Vt[:l]
    # sign convention
    idx = np.argmax(np.abs(Vt), axis=1)
    signs = np.sign(Vt[np.arange(l), idx])
    signs[signs == 0] = 1.0
    Vt = Vt * signs[:, None]
    U = U * signs[None, :]
    sg = np.zeros_like(p_g)
    sg[p_g > 0] = 1.0 / np.sqrt(p_g[p_g > 0])
    phi = Vt.T * sg[:, None]
    if return_details:
        return phi, {"U": U, "sigma": s, "Vt": Vt, "p_f": p_f, "p_g": p_g}
    return phi


def conditional_means(Q, phi):
    """``v_f = E[phi(g) | f] = sum_g Q[f, g] phi(g) / sum_g Q[f, g]`` for every row ``f``.

    Rows without mass get ``v_f = 0``.
    """
    rs = np.asarray(Q.sum(axis=1)).ravel()
    V = np.asarray(Q @ phi)
    inv = np.zeros_like(rs, dtype=np.float64)
    inv[rs > 0] = 1.0 / rs[rs > 0]
    return V * inv[:, None]
