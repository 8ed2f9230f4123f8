"""Least squares over the probability simplex by Frank–Wolfe, and mixture-weight EM.

:func:`frank_wolfe_simplex` solves, for every target row ``v_f``,

    min_gamma  || gamma @ V - v_f ||^2   subject to  gamma >= 0,  sum(gamma) = 1

(``V``: ``m x d`` anchor vectors), the convex problem of section 5.2 of Cohen & Collins (2014).
With the Gram matrix ``G = V V^T``, ``b_f = V v_f`` and ``c_f = v_f . v_f`` the objective is
``gamma^T G gamma - 2 b_f . gamma + c_f``: after the ``O(n m d)`` products the solver never
touches ``d`` again.

The stopping rule is the Frank–Wolfe duality gap ``g(gamma) = grad . (gamma - e_s)``
(``s = argmin grad``, the Frank–Wolfe vertex), an upper bound on ``f(gamma) - f*``: a row
stops as soon as its gap is ``<= tol`` (or ``<= rtol * f(gamma)``).  Three variants
(``variant=``), all starting at the best vertex:

``"corrective"`` (default) — fully-corrective Frank–Wolfe: the Frank–Wolfe vertex joins the
    active set and the quadratic is then minimised EXACTLY over the convex hull of the active
    vertices (the exact line search generalised to the active face: the KKT system of the face
    is solved, ``O(k^3)`` for ``k`` active vertices, stepping back to the boundary and dropping
    vertices when the affine minimiser leaves the simplex, as in Wolfe's minimum-norm-point
    algorithm).  Terminates after a few dozen vertex additions even when ``V V^T`` is badly
    conditioned (condition numbers ~1e8 occur for CCA anchor vectors of word co-occurrences),
    where the two variants below need tens of thousands of steps.

``"away"`` — Frank–Wolfe with away steps (Lacoste-Julien & Jaggi 2015) and exact line search;
    ``G gamma`` and ``gamma^T G gamma`` are updated by rank-one updates, ``O(m)`` per step
    (refreshed exactly every 64 steps).  Linear convergence, with a rate that degrades with
    the conditioning.

``"plain"`` — the classical algorithm with exact line search (``O(1/k)``).

:func:`mixture_weights_em` is the other convex simplex problem of the paper: for every row of a
sparse count matrix ``C`` the maximum-likelihood mixture weights over fixed component
distributions (the concave objective of eqs. 1 and 3 and of the Saul–Pereira ``r(h | w1)``
given ``s(w2 | h)``), solved by EM (multiplicative updates, monotone in the likelihood).

Both kernels are Numba-compiled (``cache=True``) and run in parallel over rows (``prange``).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from .._jit import njit, prange

__all__ = ["frank_wolfe_simplex", "frank_wolfe_gram", "mixture_weights_em",
           "simplex_objective"]

_VARIANTS = ("corrective", "away", "plain")


@njit(cache=True, inline="always")
def _gram_apply(G, g, gv):  # pragma: no cover - numba
    """``gv = G gamma``; returns ``gamma^T G gamma``."""
    m = g.shape[0]
    quad = 0.0
    for i in range(m):
        acc = 0.0
        for j in range(m):
            acc += G[i, j] * g[j]
        gv[i] = acc
        quad += acc * g[i]
    return quad


@njit(cache=True, inline="always")
def _fw_vertex(gv, b, g, grad):  # pragma: no cover - numba
    """From ``gv = G gamma``: the gradient ``grad = 2 (G gamma - b)``, ``grad . gamma``, the
    duality gap ``grad . gamma - min grad`` and the Frank-Wolfe vertex ``s = argmin grad``."""
    s = 0
    gs = np.inf
    gdot = 0.0
    for i in range(gv.shape[0]):
        gr = 2.0 * (gv[i] - b[i])
        grad[i] = gr
        gdot += gr * g[i]
        if gr < gs:
            gs = gr
            s = i
    return gdot, gdot - gs, s


@njit(cache=True, inline="always")
def _fw_converged(gap, gdot, quad, cf, it, max_iter, tol, rtol):  # pragma: no cover - numba
    """The stopping rule: ``gap <= tol``, ``max_iter`` steps, or ``gap <= rtol f(gamma)``.
    ``f(gamma) = quad - 2 b.gamma + c = gdot - quad + c``, so ``gap <= rtol f`` gives
    ``f - f* <= rtol f``, i.e. ``f <= f* / (1 - rtol)``."""
    if gap <= tol or it >= max_iter:
        return True
    return rtol > 0.0 and gap <= rtol * (gdot - quad + cf)


@njit(cache=True, inline="always")
def _clip_renormalise(g):  # pragma: no cover - numba
    """Clean up round-off: clip ``g`` at 0 and rescale it to sum 1."""
    tot = 0.0
    for i in range(g.shape[0]):
        if g[i] < 0.0:
            g[i] = 0.0
        tot += g[i]
    for i in range(g.shape[0]):
        g[i] /= tot


@njit(cache=True)
def _start_at_best_vertex(G, b, g):  # pragma: no cover - numba
    """Set g to the simplex vertex e_i with the lowest objective G_ii - 2 b_i (+ const);
    returns i."""
    m = b.shape[0]
    best = 0
    bestval = G[0, 0] - 2.0 * b[0]
    for i in range(1, m):
        val = G[i, i] - 2.0 * b[i]
        if val < bestval:
            bestval = val
            best = i
    for i in range(m):
        g[i] = 0.0
    g[best] = 1.0
    return best


@njit(cache=True, parallel=True, fastmath=False)
def _fw_kernel(G, B, c, gamma, gaps, iters, max_iter, tol, rtol, away):  # pragma: no cover - numba
    n, m = B.shape
    for f in prange(n):
        b = B[f]
        g = gamma[f]
        best = _start_at_best_vertex(G, b, g)
        gv = np.empty(m)
        grad = np.empty(m)
        for i in range(m):
            gv[i] = G[i, best]
        quad = G[best, best]
        gap = np.inf
        it = 0
        while True:
            if it > 0 and it % 64 == 0:  # exact refresh of G gamma and gamma^T G gamma
                quad = _gram_apply(G, g, gv)
            gdot, gap, s = _fw_vertex(gv, b, g, grad)
            if _fw_converged(gap, gdot, quad, c[f], it, max_iter, tol, rtol):
                break
            it += 1
            use_away = False
            a = -1
            if away:
                ga = -np.inf
                for i in range(m):
                    if g[i] > 0.0 and grad[i] > ga:
                        ga = grad[i]
                        a = i
                if a >= 0 and g[a] < 1.0 and ga - gdot > gap:
                    use_away = True
            if not use_away:
                # d = e_s - gamma; grad.d = -gap; d^T G d = G_ss - 2 (G gamma)_s + quad
                curv = G[s, s] - 2.0 * gv[s] + quad
                if curv <= 0.0:
                    t = 1.0
                else:
                    t = gap / (2.0 * curv)
                    if t > 1.0:
                        t = 1.0
                gvs = gv[s]
                for i in range(m):
                    g[i] *= (1.0 - t)
                    gv[i] = (1.0 - t) * gv[i] + t * G[i, s]
                g[s] += t
                quad = (1.0 - t) * (1.0 - t) * quad + 2.0 * t * (1.0 - t) * gvs + t * t * G[s, s]
            else:
                # d = gamma - e_a; grad.d = gdot - grad_a; d^T G d = quad - 2 (G gamma)_a + G_aa
                tmax = g[a] / (1.0 - g[a])
                slope = grad[a] - gdot
                curv = quad - 2.0 * gv[a] + G[a, a]
                if curv <= 0.0:
                    t = tmax
                else:
                    t = slope / (2.0 * curv)
                    if t > tmax:
                        t = tmax
                gva = gv[a]
                drop = t >= tmax
                for i in range(m):
                    g[i] *= (1.0 + t)
                    gv[i] = (1.0 + t) * gv[i] - t * G[i, a]
                g[a] -= t
                if drop:
                    g[a] = 0.0
                quad = (1.0 + t) * (1.0 + t) * quad - 2.0 * t * (1.0 + t) * gva + t * t * G[a, a]
        _clip_renormalise(g)
        gaps[f] = gap
        iters[f] = it


@njit(cache=True, parallel=True)
def _fcfw_kernel(G, B, c, gamma, gaps, iters, max_iter, tol, rtol):  # pragma: no cover - numba
    """Fully-corrective Frank-Wolfe: after each Frank-Wolfe vertex is added to the active set,
    the objective is minimised exactly over the convex hull of the active vertices (active-set
    method on the KKT system of the face, as in Wolfe's minimum-norm-point algorithm)."""
    n, m = B.shape
    for f in prange(n):
        b = B[f]
        g = gamma[f]
        best = _start_at_best_vertex(G, b, g)
        active = np.zeros(m, dtype=np.bool_)
        active[best] = True
        gv = np.empty(m)
        grad = np.empty(m)
        idx = np.empty(m, dtype=np.int64)
        x = np.empty(m)
        gap = np.inf
        it = 0
        while True:
            quad = _gram_apply(G, g, gv)
            gdot, gap, s = _fw_vertex(gv, b, g, grad)
            if _fw_converged(gap, gdot, quad, c[f], it, max_iter, tol, rtol):
                break
            it += 1
            if active[s]:
                # the face minimum was not exact (round-off): plain FW step with line search
                curv = 0.0
                for i in range(m):
                    for j in range(m):
                        di = (1.0 if i == s else 0.0) - g[i]
                        dj = (1.0 if j == s else 0.0) - g[j]
                        curv += di * G[i, j] * dj
                t = 1.0 if curv <= 0.0 else min(1.0, gap / (2.0 * curv))
                for i in range(m):
                    g[i] *= (1.0 - t)
                g[s] += t
                if gap < 1e-15 * (abs(quad) + abs(c[f]) + 1.0):
                    break
                continue
            active[s] = True
            # active-set loop: affine minimiser on the face, step back into the simplex if needed
            for _inner in range(2 * m + 2):
                k = 0
                for i in range(m):
                    if active[i]:
                        idx[k] = i
                        k += 1
                K = np.zeros((k + 1, k + 1))
                rhs = np.zeros(k + 1)
                for a in range(k):
                    for bb in range(k):
                        K[a, bb] = 2.0 * G[idx[a], idx[bb]]
                    K[a, k] = 1.0
                    K[k, a] = 1.0
                    rhs[a] = 2.0 * b[idx[a]]
                rhs[k] = 1.0
                # tiny ridge against singular faces (affinely dependent vertices)
                tr = 0.0
                for a in range(k):
                    tr += K[a, a]
                for a in range(k):
                    K[a, a] += 1e-13 * tr / k
                sol = np.linalg.solve(K, rhs)
                for i in range(m):
                    x[i] = 0.0
                feasible = True
                for a in range(k):
                    x[idx[a]] = sol[a]
                    if sol[a] <= 0.0:
                        feasible = False
                if feasible:
                    for i in range(m):
                        g[i] = x[i]
                    break
                # largest theta in [0, 1] keeping g + theta (x - g) >= 0
                theta = 1.0
                for a in range(k):
                    i = idx[a]
                    if x[i] <= 0.0 and g[i] - x[i] > 0.0:
                        th = g[i] / (g[i] - x[i])
                        if th < theta:
                            theta = th
                for a in range(k):
                    i = idx[a]
                    g[i] = g[i] + theta * (x[i] - g[i])
                    if g[i] <= 1e-300 or (x[i] <= 0.0 and g[i] <= 1e-15):
                        g[i] = 0.0
                        active[i] = False
        _clip_renormalise(g)
        gaps[f] = gap
        iters[f] = it


def frank_wolfe_gram(G, B, c=None, max_iter: int = 1000, tol: float = 1e-9, rtol: float = 0.0,
                     variant: str = "corrective"):
    """Frank–Wolfe on the simplex from precomputed quadratic-form data.

    Minimises ``gamma^T G gamma - 2 B[f] . gamma (+ c[f])`` over the simplex for every row ``f``.
    ``G`` (``m x m``, symmetric positive semi-definite) is usually ``V V^T`` and ``B = targets @
    V^T``; ``c`` only shifts the objective and is accepted for symmetry.  Returns ``(gamma,
    gaps, n_iter)``: ``gamma`` (``n x m``, rows on the simplex), the final duality gaps
    (``>= f(gamma) - f*``; ``<= tol`` unless ``max_iter`` ran out) and the iterations used.
    """
    G = np.ascontiguousarray(G, dtype=np.float64)
    B = np.ascontiguousarray(np.atleast_2d(B), dtype=np.float64)
    n, m = B.shape
    if G.shape != (m, m):
        raise ValueError(f"G must be {m} x {m}, got {G.shape}")
    if m == 0:
        raise ValueError("need at least one vertex (m >= 1)")
    if max_iter < 0:
        raise ValueError("max_iter must be >= 0")
    gamma = np.zeros((n, m))
    gaps = np.zeros(n)
    iters = np.zeros(n, dtype=np.int64)
    if variant not in _VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(_VARIANTS)}; got {variant!r}")
    if rtol and c is None:
        raise ValueError("the relative stopping rule (rtol > 0) needs c")
    if n:
        cc = np.zeros(n) if c is None else np.ascontiguousarray(c, dtype=np.float64)
        if variant == "corrective":
            _fcfw_kernel(G, B, cc, gamma, gaps, iters, int(max_iter), float(tol), float(rtol))
        else:
            _fw_kernel(G, B, cc, gamma, gaps, iters, int(max_iter), float(tol), float(rtol),
                       variant == "away")
    return gamma, gaps, iters


def frank_wolfe_simplex(V, targets, max_iter: int = 1000, tol: float = 1e-9, rtol: float = 0.0,
                        variant: str = "corrective", return_iterations: bool = False):
    """Project every target row onto the convex hull of the rows of ``V`` (least squares).

    Solves ``min_gamma ||gamma @ V - v_f||^2`` over the probability simplex for each row ``v_f``
    of ``targets`` (``n x d``), with ``V`` the ``m x d`` vertex (anchor) vectors, by Frank–Wolfe
    with exact line search (away steps by default) and the duality-gap stopping rule ``gap <=
    tol`` (or, with ``rtol > 0``, ``gap <= rtol * f(gamma)``, a relative guarantee ``f <= f* /
    (1 - rtol)`` useful when targets far from the hull make an absolute ``tol`` needlessly
    strict); the gap bounds the distance of the objective to its optimum.  The Gram matrix
    ``V V^T`` is computed once, so an iteration costs ``O(m)`` per row; rows run in parallel
    (Numba ``prange``).

    Returns ``(gamma, gaps)`` — ``gamma`` is ``n x m`` with rows on the simplex — or ``(gamma,
    gaps, n_iter)`` with ``return_iterations=True``.  ``targets`` may be a SciPy sparse matrix.
    """
    V = np.asarray(V, dtype=np.float64)
    if V.ndim != 2:
        raise ValueError("V must be a 2-D array (m x d)")
    if sp.issparse(targets):
        B = np.asarray((targets @ V.T))
        c = np.asarray(targets.multiply(targets).sum(axis=1)).ravel()
    else:
        targets = np.asarray(targets, dtype=np.float64)
        if targets.ndim == 1:
            targets = targets[None, :]
        if targets.shape[1] != V.shape[1]:
            raise ValueError(f"targets have {targets.shape[1]} columns, V has {V.shape[1]}")
        B = targets @ V.T
        c = np.einsum("ij,ij->i", targets, targets)
    G = V @ V.T
    gamma, gaps, iters = frank_wolfe_gram(G, B, c, max_iter=max_iter, tol=tol, rtol=rtol,
                                          variant=variant)
    return (gamma, gaps, iters) if return_iterations else (gamma, gaps)


def simplex_objective(V, targets, gamma):
    """The least-squares objective ``||gamma[f] @ V - targets[f]||^2`` for every row ``f``."""
    V = np.asarray(V, dtype=np.float64)
    T = targets.toarray() if sp.issparse(targets) else np.asarray(targets, dtype=np.float64)
    R = np.asarray(gamma) @ V - np.atleast_2d(T)
    return np.einsum("ij,ij->i", R, R)


# ------------------------------------------------------------------------------------------------
# mixture weights by EM
# ------------------------------------------------------------------------------------------------
@njit(cache=True, parallel=True)
def _mix_em_kernel(indptr, indices, data, S, W, max_iter, tol, loglik, iters):  # pragma: no cover
    n, m = W.shape
    for i in prange(n):
        lo = indptr[i]
        hi = indptr[i + 1]
        w = W[i]
        if hi == lo:
            loglik[i] = 0.0
            iters[i] = 0
            continue
        tot = 0.0
        for k in range(lo, hi):
            tot += data[k]
        acc = np.empty(m)
        prev = -np.inf
        it = 0
        ll = 0.0
        while True:
            for h in range(m):
                acc[h] = 0.0
            ll = 0.0
            for k in range(lo, hi):
                j = indices[k]
                den = 0.0
                for h in range(m):
                    den += w[h] * S[j, h]
                if den <= 0.0:
                    ll += data[k] * -745.0  # log of the smallest double: an impossible event
                    continue
                ll += data[k] * np.log(den)
                x = data[k] / den
                for h in range(m):
                    acc[h] += x * S[j, h]
            # the likelihood of the weights before this update is ll (monotone under EM)
            if it >= max_iter or (it > 0 and ll - prev <= tol * tot):
                break
            prev = ll
            for h in range(m):
                w[h] = w[h] * acc[h] / tot
            it += 1
        loglik[i] = ll
        iters[i] = it


def mixture_weights_em(C, S, init=None, max_iter: int = 200, tol: float = 1e-7,
                       return_loglik: bool = False):
    """Maximum-likelihood mixture weights over fixed components, per row, by EM.

    For every row ``i`` of the count matrix ``C`` (``n x G``, sparse or dense, non-negative)
    maximises the concave ``sum_g C[i, g] log sum_h w[i, h] S[g, h]`` over the simplex, with
    ``S`` (``G x m``) holding one component distribution per column.  EM (``w_h <- w_h *
    sum_g C[i,g] S[g,h] / (sum_h' w_h' S[g,h']) / sum_g C[i,g]``) never decreases the
    likelihood; a row stops when the per-token gain drops below ``tol`` or after ``max_iter``
    updates.  ``init`` (``n x m``) defaults to uniform weights; rows of ``C`` with no counts keep
    their initial weights.  Returns ``W`` (``n x m``), with ``return_loglik=True`` also the
    final per-row log-likelihoods and iteration counts.
    """
    C = sp.csr_matrix(C, dtype=np.float64)
    C.sum_duplicates()
    C.sort_indices()
    S = np.ascontiguousarray(S, dtype=np.float64)
    n, ncols = C.shape
    if S.ndim != 2 or S.shape[0] != ncols:
        raise ValueError(f"S must have {ncols} rows (one per column of C), got {S.shape}")
    m = S.shape[1]
    if init is None:
        W = np.full((n, m), 1.0 / m)
    else:
        W = np.array(init, dtype=np.float64, copy=True)
        if W.shape != (n, m):
            raise ValueError(f"init must be {n} x {m}, got {W.shape}")
        W = np.maximum(W, 0.0)
        W /= np.maximum(W.sum(axis=1, keepdims=True), 1e-300)
    loglik = np.zeros(n)
    iters = np.zeros(n, dtype=np.int64)
    _mix_em_kernel(C.indptr.astype(np.int64), C.indices.astype(np.int64), C.data, S, W,
                   int(max_iter), float(tol), loglik, iters)
    return (W, loglik, iters) if return_loglik else W
