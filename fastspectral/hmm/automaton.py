"""The learned sequence automaton (:class:`SpectralOperators`) and its stabilised filter.

Scoring (:func:`spectral_conditionals`): the state ``v`` after a prefix is kept normalised to
``c^T v = 1``; the conditional of the next event ``x`` (a symbol or STOP) is
``g_x = c^T B_x v`` (``beta^T v`` for STOP) - Hsu, Kakade & Zhang's streaming rule (2009,
section 3, "conditional probabilities") - clipped at 0 and renormalised over all events, so
that every prediction is a distribution.  When the observed symbol's ``g_x`` is not positive,
the next state is reset to the averaged state after ``x`` (``U^T P[:, x]``, normalised).
The operators are learned by :mod:`fastspectral.hmm.spectral`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from .._jit import njit, prange

from .data import Encoded

__all__ = ["SpectralOperators", "spectral_conditionals", "spectral_prefix_states",
           "raw_log_probability"]

#: reset the state when the observed event has less than this share of the clipped mass
_RESET = 1e-6


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
