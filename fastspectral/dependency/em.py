"""EM training of non-deterministic SHAGs (the paper's EM baseline).

Each ``(head symbol, direction)`` automaton is a probabilistic automaton with ``N`` hidden
states: initial distribution ``alpha1``, joint emission/transition ``A[a][i', i] =
P(modifier a, next state i' | state i)`` and stopping ``beta[i] = P(STOP | i)``, so that
``sum_{a,i'} A[a][i',i] + beta[i] = 1``.  Training trees are observed, so the E-step is the
forward-backward algorithm on each head's modifier sequence (no parsing needed); identical
sequences are merged and weighted.  Initialisation is HMM-like (as in Luque et al. 2012):
``A[a][i', i] = (1 - stop) T[i' | i] O[a | i']`` with random transitions ``T``, emissions
``O`` proportional to the empirical modifier distribution of the (head, direction) times
random noise, and the empirical stop rate.

The E-step runs in Numba (``cache=True``), in parallel over (head, direction) automata.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from .._jit import njit, prange

from .data import Encoded, SequenceData
from .spectral import OperatorSHAG, _backoff_probs, distinct_sequences, with_backoff

__all__ = ["em_init", "em_step", "fit_em", "EMResult"]


@dataclass
class EMResult:
    """The result of :func:`fit_em`.

    Attributes
    ----------
    model : OperatorSHAG
        The trained operator SHAG (mixed with DET+F when ``smoothing > 0``).
    loglik : list of float
        Training log-likelihood of every iteration (of the parameters entering it).
    time : list of float
        Cumulative seconds after each iteration, data preparation included.
    snapshots : dict
        Iteration -> ``OperatorSHAG`` for the iteration counts asked for.
    """

    model: OperatorSHAG
    loglik: list = field(default_factory=list)
    time: list = field(default_factory=list)
    snapshots: dict = field(default_factory=dict)


def em_init(grp_start, q_start, q_len, q_w, mods, H: int, M: int, N: int, seed: int = 0):
    """HMM-like random initialisation (arrays indexed by group ``g = h*2+d``)."""
    rng = np.random.default_rng(seed)
    G = 2 * H
    alpha = rng.dirichlet(np.ones(N), size=G)
    beta = np.zeros((G, N))
    A = np.zeros((G, M, N, N))
    nq = len(q_len)
    g_of_q = np.searchsorted(grp_start, np.arange(nq), side="right") - 1
    n_seq = np.bincount(g_of_q, weights=q_w, minlength=G)
    n_mod = np.bincount(g_of_q, weights=q_w * q_len, minlength=G)
    q_of_mod = np.repeat(np.arange(nq), q_len)
    uni_all = np.bincount(g_of_q[q_of_mod] * M + mods, weights=q_w[q_of_mod],
                          minlength=G * M).reshape(G, M) + 1e-3
    for g in range(G):
        uni = uni_all[g] / uni_all[g].sum()
        tot = n_seq[g] + n_mod[g]
        stop = n_seq[g] / tot if tot > 0 else 0.5
        stop_i = np.clip(stop * rng.uniform(0.8, 1.2, size=N), 1e-3, 1 - 1e-3)
        T = rng.dirichlet(np.ones(N), size=N).T            # T[i', i]
        O = uni[None, :] * rng.uniform(0.5, 1.5, size=(N, M))
        O /= O.sum(axis=1, keepdims=True)                   # O[i', a]
        A[g] = np.einsum("ja,ji,i->aji", O, T, 1.0 - stop_i)
        beta[g] = stop_i
    return alpha, A, beta


@njit(cache=True)
def _em_group(g, alpha, A, beta, grp_start, q_start, q_len, q_w, mods, na, nA, nb):  # pragma: no cover
    """E-step and M-step of automaton ``g``; writes ``na[g], nA[g], nb[g]``, returns log-lik."""
    M, N = A.shape[1], A.shape[2]
    ca = np.zeros(N)
    cA = np.zeros((M, N, N))
    cb = np.zeros(N)
    ll = 0.0
    for q in range(grp_start[g], grp_start[g + 1]):
        T = q_len[q]
        s0 = q_start[q]
        f = np.zeros((T + 1, N))
        f[0] = alpha[g]
        for t in range(1, T + 1):
            a = mods[s0 + t - 1]
            for ip in range(N):
                acc = 0.0
                for i in range(N):
                    acc += A[g, a, ip, i] * f[t - 1, i]
                f[t, ip] = acc
        L = 0.0
        for i in range(N):
            L += beta[g, i] * f[T, i]
        if not (L > 0.0):
            continue
        ll += q_w[q] * np.log(L)
        w = q_w[q] / L
        bvec = beta[g].copy()
        for i in range(N):
            cb[i] += w * beta[g, i] * f[T, i]
        for t in range(T, 0, -1):
            a = mods[s0 + t - 1]
            nbv = np.zeros(N)
            for ip in range(N):
                for i in range(N):
                    x = A[g, a, ip, i]
                    cA[a, ip, i] += w * bvec[ip] * x * f[t - 1, i]
                    nbv[i] += x * bvec[ip]
            bvec = nbv
        for i in range(N):
            ca[i] += w * alpha[g, i] * bvec[i]
    sa = ca.sum()
    if sa > 0.0:
        for i in range(N):
            na[g, i] = ca[i] / sa
        for i in range(N):
            tot = cb[i]
            for a in range(M):
                for ip in range(N):
                    tot += cA[a, ip, i]
            if tot > 0.0:
                for a in range(M):
                    for ip in range(N):
                        nA[g, a, ip, i] = cA[a, ip, i] / tot
                nb[g, i] = cb[i] / tot
            else:
                for a in range(M):
                    for ip in range(N):
                        nA[g, a, ip, i] = A[g, a, ip, i]
                nb[g, i] = beta[g, i]
    else:
        na[g] = alpha[g]
        nA[g] = A[g]
        nb[g] = beta[g]
    return ll


@njit(cache=True, parallel=True)
def em_step(alpha, A, beta, grp_start, q_start, q_len, q_w, mods):  # pragma: no cover - numba
    """One EM iteration (forward-backward E-step + M-step); returns new params and log-lik.

    The automata are independent, so they are processed in parallel (one per task)."""
    G = A.shape[0]
    na = np.empty_like(alpha)
    nA = np.empty_like(A)
    nb = np.empty_like(beta)
    ll = np.zeros(G)
    for g in prange(G):
        ll[g] = _em_group(g, alpha, A, beta, grp_start, q_start, q_len, q_w, mods, na, nA, nb)
    return na, nA, nb, ll.sum()


def _to_operator(alpha, A, beta, H, M, N) -> OperatorSHAG:
    return OperatorSHAG(alpha.reshape(H, 2, N).copy(), beta.reshape(H, 2, N).copy(),
                        A.reshape(H, 2, M, N, N).copy())


def fit_em(enc: Encoded, seqs: SequenceData, H: int, M: int, n_states: int,
           iterations: int = 25, seed: int = 0, snapshots=(), callback=None,
           smoothing: float = 0.0, data=None):
    """Train an N-state SHAG with EM (the EM baseline of Luque et al. 2012, section 5).

    Returns an :class:`EMResult`: the model, ``loglik`` (per iteration), ``time`` (cumulative
    seconds after each iteration, data preparation included) and ``snapshots`` (iteration ->
    ``OperatorSHAG``) for the iteration counts listed in ``snapshots``; ``callback(it, ll)`` is
    called after every iteration.  ``seed``: the initialisation's seed.  ``smoothing`` in
    [0, 1): the model (and every snapshot) is the mixture ``(1 - smoothing) * EM +
    smoothing * DET+F`` (``spectral.backoff_automaton``), with ``N + 2`` states.  ``data``:
    the merged sequences of :func:`~fastspectral.dependency.spectral.distinct_sequences` when
    already at hand (``enc`` and ``seqs`` are then not read).
    """
    if not 0.0 <= smoothing < 1.0:
        raise ValueError("smoothing must be in [0, 1)")
    t0 = time.perf_counter()
    N = int(n_states)
    data = distinct_sequences(enc, seqs, H, M) if data is None else data
    if smoothing > 0.0:
        grp_start, q_start, q_len, q_w, mods = data
        p_back = _backoff_probs(grp_start, np.arange(len(q_len), dtype=np.int64), q_len,
                                q_start, q_w, mods, M)

    def model(alpha, A, beta):
        if smoothing > 0.0:
            return with_backoff(alpha, beta, A, p_back, N, smoothing, H, M)
        return _to_operator(alpha, A, beta, H, M, N)

    alpha, A, beta = em_init(*data, H, M, N, seed=seed)
    loglik, times, snaps_out = [], [], {}
    snaps = set(int(s) for s in snapshots)
    for it in range(1, int(iterations) + 1):
        alpha, A, beta, ll = em_step(alpha, A, beta, *data)
        loglik.append(float(ll))
        times.append(time.perf_counter() - t0)
        if it in snaps:
            snaps_out[it] = model(alpha, A, beta)
        if callback is not None:
            callback(it, ll)
    return EMResult(model(alpha, A, beta), loglik, times, snaps_out)
