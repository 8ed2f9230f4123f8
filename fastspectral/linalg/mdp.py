"""Matrix decomposition problems MDP 2 and MDP 1 of Cohen & Collins (2014), section 5.

**MDP 2** (section 5.2).  ``Q`` (``n_f x n_g``, non-negative, sparse or dense; counts or
probabilities) is taken as the joint ``p(f, g) = Q / sum(Q)`` of a model

    p(f, g) = sum_h pi(h) r(f | h) s(g | h)

in which every hidden state ``h`` has an *anchor* (pivot) row ``f_h`` with ``p(h | f_h) = 1``.
Then ``p(g | f) = sum_h gamma_f(h) s(g | h)`` with ``gamma_f(h) = p(h | f)``: every conditional
row is a convex combination of the anchor rows.  The algorithm:

1. ``phi(g)`` = CCA representation of the columns (:func:`~fastspectral.linalg.cca.cca_projection`,
   ``l = m`` dimensions by default);
2. ``v_f = E[phi(g) | f]`` (linear in ``p(. | f)``, so still ``v_f = sum_h gamma_f(h) v_{f_h}``);
3. anchors ``f_1..f_m`` by FastAnchorWords on the ``v_f`` (only rows with enough mass may be
   anchors: ``min_row_mass``);
4. ``gamma_f = argmin_{gamma in simplex} ||sum_h gamma(h) v_{f_h} - v_f||^2`` by Frank–Wolfe;
5. ``pi(h) = sum_f p(f) gamma_f(h)`` and ``r(f | h) = p(f) gamma_f(h) / pi(h)`` (Bayes).

**MDP 1** (figure 2): MDP 2 on ``Q`` gives ``r(f | h)`` and MDP 2 on ``Q^T`` gives ``s(g | h')``,
each with its own arbitrary numbering of the hidden states.  The model

    p(f, g) = sum_{h, h'} pi(h) t(h' | h) r(f | h) s(g | h')

is then fitted for the joint ``J(h, h') = pi(h) t(h' | h)`` alone, maximising the concave
``sum_{f,g} p(f, g) log sum_{h,h'} J(h, h') r(f | h) s(g | h')`` (eq. 3) by EM over the
``m^2``-simplex.  When both sides satisfy the anchor assumption for the same states, ``t`` is
(close to) the permutation matching the two numberings; in general it is the hidden-state
transition ``h -> h'`` (the L-PCFG learner uses it that way).

Conventions: ``r`` is ``n_f x m`` with columns summing to 1 (``r[f, h] = r(f | h)``), ``s`` is
``n_g x m`` (``s[g, h'] = s(g | h')``), ``t`` is ``m x m`` with ``t[h, h'] = t(h' | h)`` (rows sum
to 1), ``gamma[f, h] = p(h | f)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from .._jit import njit, prange
from .._blas import blas_single_thread

from .anchors import fast_anchor_words
from .cca import cca_projection, conditional_means
from .simplex import frank_wolfe_simplex

__all__ = ["MDP2Result", "MDP1Result", "mdp2", "mdp1", "joint_em"]


@dataclass
class MDP2Result:
    """Output of :func:`mdp2`.

    ``anchors`` (``m``, row indices), ``pi`` (``m``), ``r`` (``n_rows x m``, ``r(f | h)``),
    ``gamma`` (``n_rows x m``, ``p(h | f)``), ``p_f`` (row marginal), ``v`` (``n_rows x l``,
    ``E[phi(g) | f]``), ``phi`` (``n_cols x l``), ``gaps`` (Frank–Wolfe duality gaps),
    ``fw_iterations``.
    """

    anchors: np.ndarray
    pi: np.ndarray
    r: np.ndarray
    gamma: np.ndarray
    p_f: np.ndarray
    v: np.ndarray
    phi: np.ndarray
    gaps: np.ndarray
    fw_iterations: np.ndarray
    timings: dict = field(default_factory=dict)


@dataclass
class MDP1Result:
    """Output of :func:`mdp1`: ``p(f, g) = sum_{h,h'} pi(h) t(h'|h) r(f|h) s(g|h')``.

    ``pi`` (``m``), ``r`` (``n_f x m``), ``s`` (``n_g x m``), ``t`` (``m x m``, ``t[h, h'] =
    t(h' | h)``), ``joint`` (``pi[:, None] * t``), ``matching`` (``m``: for every ``h`` the
    ``h'`` paired with it by a maximum-weight assignment on ``joint``), the two MDP 2 results
    ``rows`` / ``cols`` and the EM log-likelihood trace ``loglik`` (per unit of mass).
    """

    pi: np.ndarray
    r: np.ndarray
    s: np.ndarray
    t: np.ndarray
    joint: np.ndarray
    matching: np.ndarray
    rows: MDP2Result
    cols: MDP2Result
    loglik: np.ndarray


def _as_matrix(Q):
    if sp.issparse(Q):
        Q = sp.csr_matrix(Q, dtype=np.float64)
        Q.sum_duplicates()
        Q.eliminate_zeros()
        return Q
    Q = np.asarray(Q, dtype=np.float64)
    if Q.ndim != 2:
        raise ValueError("Q must be 2-D")
    return Q


def mdp2(Q, m: int, l: int | None = None, min_row_mass: float | None = None, candidates=None,
         svd_method: str = "randomized", svd_iterations: int = 6, fw_max_iter: int = 1000,
         fw_tol: float = 1e-9, fw_rtol: float = 1e-4, anchor_mode: str = "affine",
         random_state=0) -> MDP2Result:
    """MDP 2: anchors, ``pi``, ``r(f | h)`` and ``p(h | f)`` of ``Q = sum_h pi r s^T``.

    ``m``: number of hidden states; ``l``: CCA dimension (default ``m``); ``min_row_mass``:
    rows whose total in ``Q`` (same units as ``Q``) is below it cannot be anchors (default:
    any row with mass); ``candidates``: explicit mask / indices of allowed anchors (combined
    with ``min_row_mass``).  ``svd_method`` / ``svd_iterations``: see
    :func:`~fastspectral.linalg.cca.cca_projection`; ``fw_*``: Frank–Wolfe limits (a row stops
    at duality gap ``<= fw_tol`` or ``<= fw_rtol * objective``, i.e. objective within
    ``fw_rtol`` of its optimum relatively, or after ``fw_max_iter`` steps).
    Rows without mass get ``gamma`` uniform and ``r = 0``.  See the module docstring.
    """
    with blas_single_thread():
        return _mdp2(Q, m, l, min_row_mass, candidates, svd_method, svd_iterations, fw_max_iter,
                     fw_tol, fw_rtol, anchor_mode, random_state)


def _mdp2(Q, m, l, min_row_mass, candidates, svd_method, svd_iterations, fw_max_iter, fw_tol,
          fw_rtol, anchor_mode, random_state):
    import time

    timings = {}
    t0 = time.perf_counter()
    Q = _as_matrix(Q)
    n_f, n_g = Q.shape
    m = int(m)
    if m < 1:
        raise ValueError("m must be >= 1")
    l = m if l is None else int(l)
    l = min(l, n_f, n_g)
    phi = cca_projection(Q, l, method=svd_method, n_iter=svd_iterations,
                         random_state=random_state)
    timings["cca"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    rowmass = np.asarray(Q.sum(axis=1)).ravel()
    total = rowmass.sum()
    p_f = rowmass / total
    v = conditional_means(Q, phi)
    allowed = rowmass > 0
    if min_row_mass is not None:
        allowed &= rowmass >= min_row_mass
    if candidates is not None:
        cand = np.asarray(candidates)
        mask = np.zeros(n_f, dtype=bool)
        if cand.dtype == bool:
            mask[:] = cand
        else:
            mask[cand.astype(np.int64)] = True
        allowed &= mask
    if allowed.sum() < m:
        raise ValueError(f"MDP 2 needs {m} anchor rows but only {int(allowed.sum())} rows are "
                         f"allowed (lower min_row_mass?)")
    anchors = fast_anchor_words(v, m, mode=anchor_mode, candidates=allowed)
    timings["anchors"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    live = np.flatnonzero(rowmass > 0)
    gamma = np.full((n_f, m), 1.0 / m)
    gaps = np.zeros(n_f)
    iters = np.zeros(n_f, dtype=np.int64)
    g_live, gp, it = frank_wolfe_simplex(v[anchors], v[live], max_iter=fw_max_iter, tol=fw_tol,
                                         rtol=fw_rtol, return_iterations=True)
    gamma[live] = g_live
    gaps[live] = gp
    iters[live] = it
    timings["frank_wolfe"] = time.perf_counter() - t2
    pi = p_f @ gamma
    r = p_f[:, None] * gamma / np.where(pi > 0, pi, 1.0)[None, :]
    return MDP2Result(anchors=anchors, pi=pi, r=r, gamma=gamma, p_f=p_f, v=v, phi=phi, gaps=gaps,
                      fw_iterations=iters, timings=timings)


@njit(cache=True, parallel=True)
def _pair_ratio(indptr, indices, data, A, S, out):  # pragma: no cover - numba
    """out[k] = data[k] / (A[f] . S[g]) for the nonzero k = (f, g); returns sum data*log(den)."""
    n = indptr.shape[0] - 1
    m = A.shape[1]
    lls = np.zeros(n)
    for f in prange(n):
        acc = 0.0
        for k in range(indptr[f], indptr[f + 1]):
            g = indices[k]
            den = 0.0
            for h in range(m):
                den += A[f, h] * S[g, h]
            if den > 0.0:
                out[k] = data[k] / den
                acc += data[k] * np.log(den)
            else:
                out[k] = 0.0
                acc += data[k] * -745.0
        lls[f] = acc
    return lls.sum()


def joint_em(Q, R, S, init=None, max_iter: int = 500, tol: float = 1e-10):
    """EM for the joint ``J(h, h')`` maximising ``sum p(f,g) log sum J(h,h') R[f,h] S[g,h']``.

    The objective (eq. 3) is concave in ``J`` over the ``m_R x m_S`` simplex.  One iteration
    is ``O(nnz(Q) m + n m^2)``.  Returns ``(J, loglik_trace)``; the trace (per unit mass of
    ``Q``) is non-decreasing.  Stops when the gain is below ``tol`` or after ``max_iter``.
    """
    Q = sp.csr_matrix(Q, dtype=np.float64)
    Q.sum_duplicates()
    Q.sort_indices()
    total = Q.sum()
    Qn = Q / total
    Qn = sp.csr_matrix(Qn)
    R = np.ascontiguousarray(R, dtype=np.float64)
    S = np.ascontiguousarray(S, dtype=np.float64)
    mr, ms = R.shape[1], S.shape[1]
    J = np.full((mr, ms), 1.0 / (mr * ms)) if init is None else np.array(init, dtype=np.float64)
    J = np.maximum(J, 0)
    J /= J.sum()
    indptr = Qn.indptr.astype(np.int64)
    indices = Qn.indices.astype(np.int64)
    ratio = np.empty_like(Qn.data)
    trace = []
    W = sp.csr_matrix((ratio, Qn.indices, Qn.indptr), shape=Qn.shape)
    for it in range(max_iter + 1):
        A = R @ J
        ll = _pair_ratio(indptr, indices, Qn.data, A, S, ratio)
        trace.append(ll)
        if it == max_iter or (it > 0 and trace[-1] - trace[-2] <= tol):
            break
        W.data = ratio
        M = R.T @ np.asarray(W @ S)  # m_R x m_S
        J = J * M
        J /= J.sum()
    return J, np.asarray(trace)


def mdp1(Q, m: int, l: int | None = None, min_row_mass: float | None = None,
         min_col_mass: float | None = None, em_iterations: int = 500, em_tol: float = 1e-10,
         **mdp2_options) -> MDP1Result:
    """MDP 1 (figure 2): ``r`` and ``s`` by MDP 2 on ``Q`` and ``Q^T``, ``t`` by concave EM.

    ``min_row_mass`` / ``min_col_mass`` restrict the anchor rows / columns; further keyword
    arguments go to both :func:`mdp2` calls.  ``t`` is estimated through the joint ``J(h, h')``
    (EM started from the product of the two ``pi`` estimates); ``pi(h) = sum_h' J(h, h')`` and
    ``t(h' | h) = J(h, h') / pi(h)``.  See :class:`MDP1Result` for the conventions.
    """
    from scipy.optimize import linear_sum_assignment

    Q = _as_matrix(Q)
    Qs = sp.csr_matrix(Q)
    rows = mdp2(Qs, m, l=l, min_row_mass=min_row_mass, **mdp2_options)
    cols = mdp2(sp.csr_matrix(Qs.T), m, l=l, min_row_mass=min_col_mass, **mdp2_options)
    J0 = np.outer(rows.pi, cols.pi)
    J, trace = joint_em(Qs, rows.r, cols.r, init=J0, max_iter=em_iterations, tol=em_tol)
    pi = J.sum(axis=1)
    t = J / np.where(pi > 0, pi, 1.0)[:, None]
    ri, ci = linear_sum_assignment(-J)
    matching = np.empty(J.shape[0], dtype=np.int64)
    matching[ri] = ci
    return MDP1Result(pi=pi, r=rows.r, s=cols.r, t=t, joint=J, matching=matching, rows=rows,
                      cols=cols, loglik=trace)
