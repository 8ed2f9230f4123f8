"""A moment-matched start for EM: an HMM fitted to the distribution of short windows.

The spectral learner of :mod:`fastspectral.hmm.spectral` reads the training sequences through
their low-order moments only: the unigram, bigram and trigram counts ``P_1``, ``P_21``,
``P_3x1`` of the framed sequences ``START x_1 .. x_T STOP``.  This module fits the parameters
of an HMM (start, transitions, emissions with the end as one more emission) to those same
moments, generalised to windows of ``length`` events: every event position ``t`` of every
sequence (its tokens and its end) opens the window ``x_t .. x_{t+length-1}``, cut after the
end.  Under an HMM with the end event the window at position ``t`` has probability
``sum_h p(h_t = h) p(window | h)``, and ``p(window | h)`` does not depend on ``t``; so the
distribution of the windows of the first positions is that of the model started from
``start``, and the distribution of all other windows, pooled over positions, is that of the
model started from the average state occupancy ``q`` (a free parameter of the fit).  The
composite log-likelihood ``sum_windows count(w) log p(w)`` is maximised by EM on the DISTINCT
windows weighted by their counts (7,910 for the WSJ POS-tag trigrams, against ~10^5
tokens): the E-step is a batched forward-backward over ``length`` steps written as dense
matrix products (``[windows, m] @ [m, m]``), and for trigram windows (the default) one
compiled pass over the windows plus matrix products over their distinct prefixes
``(opens a sequence, x_t, x_{t+1})`` (:func:`_estep3`); the M-step is the usual
normalisations.  Several
random starts (and optionally a given start, e.g. the class start of
:func:`fastspectral.hmm.spectral.hmm_from_token_classes`) are run and the one with the best
window likelihood is kept.

This is a method-of-moments estimate in the moment-matching sense (the parameters whose
low-order window distribution is closest in KL divergence to the empirical one; Lindsay's
composite likelihood, Varin, Reid & Firth 2011), not the observable-operator (SVD) estimate of
Hsu, Kakade & Zhang 2009, and, like EM, it can stop in a local optimum of its own objective
(hence the restarts).  It reads only the window table, not the corpus, but it is not free: its
cost is reported beside the EM iterations it saves (docs/notes/hmm.md).

Kept as one module (about 830 lines): one method (EM on the window distribution); its
E-step kernels and plans serve only it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from .._jit import njit

from .._blas import blas_single_thread
from .em import _normalise as _renorm

__all__ = ["Windows", "window_table", "windows_from_sequences", "window_loglik",
           "window_em", "hmm_from_moments", "split_states", "split_sizes", "hmm_by_splitting"]


@dataclass
class Windows:
    """The distinct windows of a training set: ``W[i, k]`` the ``k``-th event of window ``i``
    (a symbol ``0..M-1``, the end ``M``, or padding ``M + 1`` after the end), ``begin[i]``:
    the window opens a sequence (its first state is drawn from ``start``, else from the
    occupancy ``q``), ``counts[i]``: how many positions of the training sequences open it;
    ``M``: the number of symbols."""
    W: np.ndarray
    begin: np.ndarray
    counts: np.ndarray
    M: int

    @property
    def length(self) -> int:
        return int(self.W.shape[1])

    @property
    def n_positions(self) -> float:
        return float(self.counts.sum())


def window_table(F: np.ndarray, M: int, length: int = 3) -> Windows:
    """:class:`Windows` of the framed sequences ``F`` (START = ``M``, STOP = ``M + 1``, as
    :func:`fastspectral.hmm.spectral.frame`): one window per event position (tokens and
    STOP), ``length`` events long, cut after the STOP."""
    L = int(length)
    if L < 1:
        raise ValueError(f"window length must be >= 1, got {length}")
    F = np.asarray(F, dtype=np.int64)
    pos = np.nonzero(F != M)[0]                       # every event: tokens and STOP
    if len(pos) == 0:
        raise ValueError("no training sequences")
    idx = np.minimum(pos[:, None] + np.arange(L)[None, :], len(F) - 1)
    W = F[idx]
    stop = W == M + 1
    after = (np.cumsum(stop, axis=1) - stop) > 0      # events after the window's STOP
    W[stop] = M
    W[after] = M + 1
    begin = F[pos - 1] == M
    base = np.int64(M + 2)
    code = begin.astype(np.int64)
    for k in range(L):
        code = code * base + W[:, k]
    u, cnt = np.unique(code, return_counts=True)
    Wu = np.empty((len(u), L), dtype=np.int64)
    rest = u.copy()
    for k in range(L - 1, -1, -1):
        Wu[:, k] = rest % base
        rest //= base
    return Windows(Wu, rest.astype(bool), cnt.astype(np.float64), int(M))


def windows_from_sequences(offsets, ids, M: int, length: int = 3) -> Windows:
    """:func:`window_table` of sequences given as flat ``offsets`` / ``ids`` (ids < ``M``)."""
    from .data import Encoded
    from .hankel import frame

    return window_table(frame(Encoded(np.asarray(offsets, dtype=np.int64),
                                      np.asarray(ids, dtype=np.int64)), M), M, length)


def _estep(win: Windows, start, trans, emit, q, plan):
    """Batched scaled forward-backward over the windows: ``(loglik, start_acc, q_acc,
    trans_acc, emit_acc [m, M + 1])``, every window weighted by its count (``plan``:
    :func:`_plan`; windows of length 3 take :func:`_estep3`)."""
    if isinstance(plan, _TrigramPlan):
        return _estep3(win, plan, start, trans, emit, q)
    if isinstance(plan, _PrefixPlan):
        return _estep_prefix(win, plan, start, trans, emit, q)
    onehot = plan
    W, cnt = win.W, win.counts
    n, L = W.shape
    m = len(start)
    M = win.M
    EmT = np.ones((M + 2, m))
    EmT[:M + 1] = emit.T                              # padding: emission 1 in every state
    A = np.empty((L, n, m))
    c = np.empty((L, n))
    a = np.where(win.begin[:, None], start[None, :], q[None, :]) * EmT[W[:, 0]]
    for k in range(L):
        if k:
            a = (A[k - 1] @ trans) * EmT[W[:, k]]
        s = a.sum(axis=1)
        s = np.where(s > 0, s, 1e-300)
        c[k] = s
        A[k] = a / s[:, None]
    ll = float(cnt @ np.log(c).sum(axis=0))
    trans_acc = np.zeros((m, m))
    G = np.empty((L, n, m))
    b = np.ones((n, m))
    G[L - 1] = A[L - 1] * cnt[:, None]
    for k in range(L - 2, -1, -1):
        g = EmT[W[:, k + 1]] * b / c[k + 1][:, None]  # [n, m]
        real = W[:, k + 1] <= M                       # a real event follows (not padding)
        trans_acc += (A[k].T @ (g * (cnt * real)[:, None]))
        b = g @ trans.T
        G[k] = A[k] * b * cnt[:, None]
    trans_acc *= trans
    emit_acc = np.asarray(onehot @ G.reshape(L * n, m)).T   # [m, M + 2]
    g0 = G[0]
    start_acc = g0[win.begin].sum(axis=0)
    q_acc = g0[~win.begin].sum(axis=0)
    return ll, start_acc, q_acc, trans_acc, emit_acc[:, :M + 1]


def _onehot(win: Windows) -> sp.csr_matrix:
    """``[M + 2, L * n]``: event ``W[i, k]`` of every window (row-major over ``k``, then
    ``i``), the emission accumulator of :func:`_estep`."""
    L, n = win.length, len(win.W)
    rows = win.W.T.ravel()
    return sp.csr_matrix((np.ones(L * n), (rows, np.arange(L * n))), shape=(win.M + 2, L * n))


@dataclass
class _TrigramPlan:
    """Index structure of :func:`_estep3` for windows of length 3 (sorted by ``(begin, x0,
    x1, x2)``, as :func:`window_table` returns them): prefixes ``(begin, x0, x1)`` and groups
    ``(begin, x0)``."""
    pre: np.ndarray        # [n] prefix of every window
    x2: np.ndarray         # [n] last event of every window
    pgrp: np.ndarray       # [n_pre] group of every prefix
    px1: np.ndarray        # [n_pre] middle event of every prefix
    gb: np.ndarray         # [n_grp] begin flag of every group
    gx0: np.ndarray        # [n_grp] first event of every group


@dataclass
class _PrefixPlan:
    """Index structure of :func:`_estep_prefix` for windows of any length ``L >= 2`` (sorted
    as :func:`window_table` returns them): for every level ``k = 0 .. L - 2`` the distinct
    prefixes ``(begin, x_0 .. x_k)``, their last event ``last[k]`` and (``k >= 1``) the
    prefix of level ``k - 1`` they extend, ``parent[k]``; ``begin0``: the begin flag of the
    level-0 prefixes; ``pre``: the level-``L - 2`` prefix of every window, ``x_end`` its last
    event."""
    last: list
    parent: list
    begin0: np.ndarray
    pre: np.ndarray
    x_end: np.ndarray


def _prefix_plan(win: Windows) -> _PrefixPlan:
    """:class:`_PrefixPlan` of ``win`` (length >= 2)."""
    W = win.W
    L = W.shape[1]
    B = np.int64(win.M + 2)
    code = win.begin.astype(np.int64)
    last, parent, prev_u = [], [], None
    inv = None
    for k in range(L - 1):
        code = code * B + W[:, k]
        u, inv = np.unique(code, return_inverse=True)
        inv = inv.ravel()
        last.append(u % B)
        if k == 0:
            begin0 = (u // B).astype(bool)
            parent.append(None)
        else:
            parent.append(np.searchsorted(prev_u, u // B))
        prev_u = u
    if np.any(np.diff(inv) < 0):
        raise ValueError("windows must be sorted (window_table's order)")
    return _PrefixPlan(last, parent, begin0, inv, W[:, L - 1].copy())


def _estep_prefix(win: Windows, plan: _PrefixPlan, start, trans, emit, q):
    """:func:`_estep` for windows of any length ``L >= 2``, level by level over the distinct
    prefixes (the generalisation of :func:`_estep3`): forward vectors
    ``a_k = (a_{k-1} T) * E[x_k]`` per prefix of level ``k``; one compiled pass over the
    windows (:func:`_trigram_pass`: ``p(w) = a_{L-2} . T E[x_{L-1}]``, the sums ``Y`` of
    ``count / p(w)`` times the backward vector per last-level prefix); then backwards, level
    by level, the summed backward messages ``S_k`` (``S_{L-2} = Y``; ``S_{k-1} = (sum over
    the extensions p of E[x_k(p)] * S_k[p]) T^T``), the posteriors ``a_k * S_k`` (emissions)
    and ``a_{k-1}^T (E[x_k] * S_k)`` (transitions into real events)."""
    M = win.M
    m = len(start)
    EmT = np.ones((M + 2, m))
    EmT[:M + 1] = emit.T
    V = np.where(plan.begin0[:, None], start[None, :], q[None, :])
    a = [V * EmT[plan.last[0]]]
    for k in range(1, len(plan.last)):
        a.append((a[-1] @ trans)[plan.parent[k]] * EmT[plan.last[k]])
    TEt = EmT @ trans.T
    S = np.zeros_like(a[-1])
    Kt = np.zeros((M + 2, m))
    ll = _trigram_pass(plan.pre, plan.x_end, win.counts, a[-1], TEt, S, Kt)
    K = Kt.T
    trans_acc = trans * (K[:, :M + 1] @ EmT[:M + 1])
    emit_acc = (trans.T @ K) * EmT.T
    for k in range(len(plan.last) - 1, 0, -1):
        xk = plan.last[k]
        emit_acc += _rows_add(np.zeros((M + 2, m)), xk, a[k] * S).T
        C = EmT[xk] * S
        D = _rows_add(np.zeros_like(a[k - 1]), plan.parent[k], C)
        pad = xk > M
        D_real = D - _rows_add(np.zeros_like(D), plan.parent[k][pad], C[pad]) if pad.any() \
            else D
        trans_acc += trans * (a[k - 1].T @ D_real)
        S = D @ trans.T
    G0 = a[0] * S
    emit_acc += _rows_add(np.zeros((M + 2, m)), plan.last[0], G0).T
    start_acc = G0[plan.begin0].sum(axis=0)
    q_acc = G0[~plan.begin0].sum(axis=0)
    return ll, start_acc, q_acc, trans_acc, emit_acc[:, :M + 1]


def _plan(win: Windows):
    """The accumulator structure of the E-step: :class:`_TrigramPlan` for windows of length
    3, :class:`_PrefixPlan` for other lengths >= 2, else (length 1) the one-hot matrix of
    :func:`_onehot`."""
    if win.length == 1:
        return _onehot(win)
    if win.length != 3:
        return _prefix_plan(win)
    W = win.W
    B = np.int64(win.M + 2)
    pcode = (win.begin.astype(np.int64) * B + W[:, 0]) * B + W[:, 1]
    upre, pre = np.unique(pcode, return_inverse=True)
    pre = pre.ravel()
    if np.any(np.diff(pre) < 0):
        raise ValueError("windows must be sorted (window_table's order)")
    gcode = upre // B
    ugrp, pgrp = np.unique(gcode, return_inverse=True)
    pgrp = pgrp.ravel()
    return _TrigramPlan(pre, W[:, 2].copy(), pgrp, upre % B, (ugrp // B).astype(bool),
                        ugrp % B)


@njit(cache=True)
def _trigram_pass(pre, x2, cnt, a1, TEt, Y, Kt):  # pragma: no cover - numba
    """Per window ``i`` (prefix ``pre[i]``, last event ``x2[i]``): ``p = a1[pre] . TEt[x2]``,
    ``r = cnt / p``; ``Y[pre] += r TEt[x2]``, ``Kt[x2] += r a1[pre]``; returns
    ``sum cnt log p``."""
    m = a1.shape[1]
    ll = 0.0
    for i in range(len(pre)):
        P = pre[i]
        x = x2[i]
        p = 0.0
        for h in range(m):
            p += a1[P, h] * TEt[x, h]
        if p < 1e-300:
            p = 1e-300
        ll += cnt[i] * np.log(p)
        r = cnt[i] / p
        for h in range(m):
            Y[P, h] += r * TEt[x, h]
            Kt[x, h] += r * a1[P, h]
    return ll


@njit(cache=True)
def _rows_add(out, idx, X):  # pragma: no cover - numba
    """``out[idx[i]] += X[i]`` for every row ``i`` of ``X``."""
    for i in range(X.shape[0]):
        o = out[idx[i]]
        for h in range(X.shape[1]):
            o[h] += X[i, h]
    return out


@njit(cache=True, fastmath=True)
def _estep3_small(gb, gx0, pgrp, px1, pre, x2, cnt, start, q, trans, EmT):  # pragma: no cover
    """:func:`_estep3` in one compiled pass for few states (the NumPy version's ~25 array
    operations per iteration cost more than the arithmetic there): the same quantities in
    the same order of reasoning (see :func:`_estep3`), loops instead of matrix products."""
    m = start.shape[0]
    V2 = EmT.shape[0]
    M = V2 - 2
    n_grp = gb.shape[0]
    n_pre = pgrp.shape[0]
    a0 = np.empty((n_grp, m))
    for g in range(n_grp):
        x = gx0[g]
        for h in range(m):
            a0[g, h] = (start[h] if gb[g] else q[h]) * EmT[x, h]
    a1 = np.zeros((n_pre, m))
    for p in range(n_pre):
        g = pgrp[p]
        for h in range(m):
            v = a0[g, h]
            if v != 0.0:
                for h2 in range(m):
                    a1[p, h2] += v * trans[h, h2]
        x = px1[p]
        for h in range(m):
            a1[p, h] *= EmT[x, h]
    TEt = np.zeros((V2, m))                            # (T E[x])^T
    for x in range(V2):
        for h in range(m):
            v = 0.0
            for h2 in range(m):
                v += trans[h, h2] * EmT[x, h2]
            TEt[x, h] = v
    Y = np.zeros((n_pre, m))
    Kt = np.zeros((V2, m))
    ll = 0.0
    for i in range(pre.shape[0]):
        P = pre[i]
        x = x2[i]
        pw = 0.0
        for h in range(m):
            pw += a1[P, h] * TEt[x, h]
        if pw < 1e-300:
            pw = 1e-300
        ll += cnt[i] * np.log(pw)
        r = cnt[i] / pw
        for h in range(m):
            Y[P, h] += r * TEt[x, h]
            Kt[x, h] += r * a1[P, h]
    trans_acc = np.zeros((m, m))
    emit_acc = np.zeros((m, V2))
    for x in range(V2):
        for h0 in range(m):
            k = Kt[x, h0]
            if k == 0.0:
                continue
            for h in range(m):
                emit_acc[h, x] += trans[h0, h] * k
            if x <= M:
                for h in range(m):
                    trans_acc[h0, h] += k * EmT[x, h]
    for x in range(V2):
        for h in range(m):
            emit_acc[h, x] *= EmT[x, h]
    for h in range(m):
        for h2 in range(m):
            trans_acc[h, h2] *= trans[h, h2]
    Bg = np.zeros((n_grp, m))
    Bg_real = np.zeros((n_grp, m))
    for p in range(n_pre):
        x = px1[p]
        g = pgrp[p]
        for h in range(m):
            emit_acc[h, x] += a1[p, h] * Y[p, h]
            b = EmT[x, h] * Y[p, h]
            Bg[g, h] += b
            if x <= M:
                Bg_real[g, h] += b
    start_acc = np.zeros(m)
    q_acc = np.zeros(m)
    for g in range(n_grp):
        x = gx0[g]
        for h in range(m):
            a = a0[g, h]
            if a == 0.0:
                continue
            bt = 0.0
            for h2 in range(m):
                trans_acc[h, h2] += trans[h, h2] * a * Bg_real[g, h2]
                bt += Bg[g, h2] * trans[h, h2]
            G = a * bt
            emit_acc[h, x] += G
            if gb[g]:
                start_acc[h] += G
            else:
                q_acc[h] += G
    return ll, start_acc, q_acc, trans_acc, emit_acc[:, :M + 1].copy()


@njit(cache=True)
def _renorm_rows(acc, old):  # pragma: no cover - numba
    """``old[i] = acc[i] / sum(acc[i])`` for the rows with mass (:func:`em._normalise`)."""
    for i in range(acc.shape[0]):
        tot = 0.0
        for j in range(acc.shape[1]):
            tot += acc[i, j]
        if tot > 0:
            for j in range(acc.shape[1]):
                old[i, j] = acc[i, j] / tot


@njit(cache=True)
def _window_em_small(gb, gx0, pgrp, px1, pre, x2, cnt, start, q, trans, emit, hist, npos,
                     tol, M):  # pragma: no cover - numba
    """:func:`window_em`'s loop for few states in one compiled call (E-step
    :func:`_estep3_small`, then the M-step's normalisations), updating ``start``, ``q``,
    ``trans``, ``emit`` in place and ``hist`` with the per-position likelihood entering every
    iteration; returns the number of iterations run."""
    m = start.shape[0]
    EmT = np.ones((M + 2, m))
    for it in range(hist.shape[0]):
        for x in range(M + 1):
            for h in range(m):
                EmT[x, h] = emit[h, x]
        ll, s_acc, q_acc, t_acc, e_acc = _estep3_small(gb, gx0, pgrp, px1, pre, x2, cnt,
                                                       start, q, trans, EmT)
        hist[it] = ll / npos
        if it >= 1 and hist[it] - hist[it - 1] < tol:
            return it + 1
        _renorm_rows(s_acc.reshape(1, m), start.reshape(1, m))
        _renorm_rows(q_acc.reshape(1, m), q.reshape(1, m))
        _renorm_rows(t_acc, trans)
        _renorm_rows(e_acc, emit)
    return hist.shape[0]


#: up to this many states the E-step of trigram windows runs :func:`_estep3_small`
SMALL_ESTEP = 16


def _estep3(win: Windows, plan: _TrigramPlan, start, trans, emit, q):
    """:func:`_estep` for windows of length 3, with every matrix product over the distinct
    prefixes ``(begin, x0, x1)`` or groups ``(begin, x0)`` instead of the windows: for a
    window ``(x0, x1, x2)`` opened from ``v`` (``start`` or ``q``), ``a0 = v * E[x0]``,
    ``a1 = (a0 T) * E[x1]`` depend on its group and prefix only, the backward vector after
    ``x1`` is ``T E[x2]`` (its last event only), and ``p(w) = a1 . (T E[x2])``; the expected
    counts are sums over windows of ``count / p(w)`` times products of these (one compiled
    pass over the windows, :func:`_trigram_pass`), then matrix products over prefixes."""
    M = win.M
    m = len(start)
    EmT = np.ones((M + 2, m))
    EmT[:M + 1] = emit.T                              # padding: emission 1 in every state
    if m <= SMALL_ESTEP:
        return _estep3_small(plan.gb, plan.gx0, plan.pgrp, plan.px1, plan.pre, plan.x2,
                             win.counts, start, q, np.ascontiguousarray(trans), EmT)
    V = np.where(plan.gb[:, None], start[None, :], q[None, :])
    a0 = V * EmT[plan.gx0]                            # [n_grp, m]
    a1 = (a0 @ trans)[plan.pgrp] * EmT[plan.px1]      # [n_pre, m]
    TEt = EmT @ trans.T                               # [M + 2, m]: (T E[x])^T, pad: ones
    Y = np.zeros_like(a1)                             # sum r_w (T E[x2_w]) per prefix
    Kt = np.zeros((M + 2, m))                         # sum r_w a1 per last event
    ll = _trigram_pass(plan.pre, plan.x2, win.counts, a1, TEt, Y, Kt)
    K = Kt.T
    # position 2 (x2) and the transition 1 -> 2 (real events only)
    trans_acc = trans * (K[:, :M + 1] @ EmT[:M + 1])
    emit_acc = (trans.T @ K) * EmT.T                  # [m, M + 2]
    # position 1 (x1) and the transition 0 -> 1
    emit_acc += _rows_add(np.zeros((M + 2, m)), plan.px1, a1 * Y).T
    Bp = EmT[plan.px1] * Y                            # [n_pre, m]
    Bg = _rows_add(np.zeros_like(a0), plan.pgrp, Bp)  # [n_grp, m]
    pad = plan.px1 > M
    Bg_real = Bg - _rows_add(np.zeros_like(a0), plan.pgrp[pad], Bp[pad]) if pad.any() else Bg
    trans_acc += trans * (a0.T @ Bg_real)
    # position 0 (x0), start and occupancy
    G0 = a0 * (Bg @ trans.T)                          # [n_grp, m]
    emit_acc += _rows_add(np.zeros((M + 2, m)), plan.gx0, G0).T
    start_acc = G0[plan.gb].sum(axis=0)
    q_acc = G0[~plan.gb].sum(axis=0)
    return ll, start_acc, q_acc, trans_acc, emit_acc[:, :M + 1]


def window_loglik(win: Windows, start, trans, emit, q=None) -> float:
    """The composite log-likelihood ``sum_w count(w) log p(w)`` of the windows (natural
    log; ``q``: the occupancy of the non-initial windows, default ``start``)."""
    start = np.asarray(start, dtype=np.float64)
    q = start if q is None else np.asarray(q, dtype=np.float64)
    return _estep(win, start, np.asarray(trans, dtype=np.float64),
                  np.asarray(emit, dtype=np.float64), q, _plan(win))[0]


def window_em(win: Windows, start, trans, emit, q=None, iterations: int = 100,
              tol: float | None = 1e-6):
    """EM on the window composite likelihood from ``(start, trans, emit, q)``: returns
    ``(start, trans, emit, q, history)`` with ``history`` the per-position log-likelihood of
    the parameters entering every iteration (non-decreasing, the EM property); stops when an
    iteration gains less than ``tol`` nats per position."""
    start = np.asarray(start, dtype=np.float64).copy()
    trans = np.asarray(trans, dtype=np.float64).copy()
    emit = np.asarray(emit, dtype=np.float64).copy()
    q = start.copy() if q is None else np.asarray(q, dtype=np.float64).copy()
    plan = _plan(win)
    npos = win.n_positions
    if isinstance(plan, _TrigramPlan) and len(start) <= SMALL_ESTEP:
        M = win.M
        hist = np.zeros(max(int(iterations), 0))
        n = _window_em_small(plan.gb, plan.gx0, plan.pgrp, plan.px1, plan.pre, plan.x2,
                             win.counts, start, q, trans, emit, hist, float(npos),
                             -np.inf if tol is None else float(tol), M)
        return start, trans, emit, q, hist[:n].copy()
    hist = []
    for _ in range(int(iterations)):
        ll, s_acc, q_acc, t_acc, e_acc = _estep(win, start, trans, emit, q, plan)
        hist.append(ll / npos)
        if tol is not None and len(hist) >= 2 and hist[-1] - hist[-2] < tol:
            break
        start = _renorm(s_acc, start)
        q = _renorm(q_acc, q)
        trans = _renorm(t_acc, trans)
        emit = _renorm(e_acc, emit)
    return start, trans, emit, q, np.asarray(hist)


def _random_start(win: Windows, m: int, rng):
    """``start``, ``q`` and the rows of ``trans`` ~ Dirichlet(1); ``emit[h]`` = the event
    unigram times Exponential(1) noise (the random start of :func:`fastspectral.hmm.em.random_init`)."""
    M = win.M
    uni = np.bincount(win.W[:, 0], weights=win.counts, minlength=M + 2)[:M + 1] + 1e-3
    uni /= uni.sum()
    start = rng.dirichlet(np.ones(m))
    trans = rng.dirichlet(np.ones(m), size=m)
    emit = uni[None, :] * rng.exponential(1.0, size=(m, M + 1))
    emit /= emit.sum(axis=1, keepdims=True)
    return start, trans, emit, rng.dirichlet(np.ones(m))


def hmm_from_moments(H, n_states: int, random_state=0, length: int = 3, restarts: int = 8,
                     iterations: int = 300, screen: int = 0, tol: float | None = 1e-6,
                     init="classes", floor: float = 0.0, windows: Windows | None = None,
                     info: dict | None = None):
    """HMM parameters ``(start [m], trans [m, m], emit [m, M + 1])`` matched to the window
    moments of the training sequences (module docstring).  ``H``: the spectral learner's
    Hankel data (its framed sequences ``H.F`` and ``H.M``), or pass ``windows``.

    ``restarts`` random starts (seeded by ``random_state``) and ``init``: ``"classes"``, the
    class start of :func:`fastspectral.hmm.spectral.hmm_from_token_classes` (needs ``H``),
    a tuple ``(start, trans, emit)``, or None (random starts only), each run ``screen``
    window-EM iterations (0: no screening, every start runs ``iterations``); the start with
    the best window likelihood then runs up to ``iterations`` (stopping when an iteration
    gains less than ``tol`` nats per position).  The defaults (trigram windows, the class
    start and 8 random starts, 300 iterations each) were chosen on the WSJ-tag development
    split (docs/notes/hmm.md).  Every distribution of the result is mixed with the uniform one (weight
    ``floor``).  ``info``, if a dict, receives ``loglik`` (per position, of every start after
    screening), ``chosen``, ``history`` (the chosen start's), ``windows`` (distinct),
    ``positions``, ``iterations`` (window-EM iterations run in all) and ``occupancy`` (the fitted
    ``q``, before the uniform mix)."""
    m = int(n_states)
    if m < 1:
        raise ValueError(f"n_states must be >= 1, got {n_states}")
    win = windows if windows is not None else window_table(H.F, H.M, length)
    rng = np.random.default_rng(random_state)
    starts = []
    if isinstance(init, str):
        if init != "classes":
            raise ValueError(f"init must be 'classes', a (start, trans, emit) tuple or None, "
                             f"got {init!r}")
        from .starts import hmm_from_token_classes

        init = hmm_from_token_classes(H, m, random_state)
    if init is not None:
        s0, t0, e0 = (np.asarray(x, dtype=np.float64) for x in init)
        starts.append((s0, t0, e0, s0.copy()))
    for _ in range(int(restarts)):
        starts.append(_random_start(win, m, rng))
    if not starts:
        raise ValueError("hmm_from_moments needs restarts >= 1 or an init")
    with blas_single_thread():
        s, t, e, q, hist, lls, best, total = _fit_starts(win, starts, iterations, screen, tol)
    if info is not None:
        info.update(loglik=lls, chosen=best, history=hist, windows=len(win.W),
                    positions=win.n_positions, iterations=total, occupancy=q)
    return _finish(s, t, e, floor)


def _finish(s, t, e, floor):
    """``(start, trans, emit)`` with every distribution mixed with the uniform one (weight
    ``floor``; the emissions' symbol part only, the stop probabilities kept)."""
    def mix(x):
        x = np.asarray(x, dtype=np.float64)
        return (1 - floor) * x + floor / x.shape[-1]

    stop = e[:, -1].copy()
    emit = np.empty_like(e)
    emit[:, :-1] = mix(_renorm(e[:, :-1], np.full_like(e[:, :-1], 1.0 / (e.shape[1] - 1)))) \
        * (1 - stop)[:, None]
    emit[:, -1] = stop
    return mix(s), mix(t), emit


def split_states(start, trans, emit, q=None, n_split=None, noise: float = 0.01, rng=None):
    """Split hidden states in two (the split step of Petrov, Barrett, Thibaux & Klein 2006's
    split-merge training, here for an HMM): state ``h`` becomes ``h`` and a new state
    ``m + j`` (``j``-th split state), each with half of ``h``'s start and occupancy mass and
    half of every transition into ``h``, both keeping ``h``'s outgoing transitions and
    emissions.  At ``noise = 0`` the two copies are exchangeable and the model's distribution
    over sequences (and windows) is unchanged; ``noise > 0`` breaks the symmetry
    symmetrically: copy one's share of a split probability is multiplied by ``1 + noise u``,
    copy two's by ``1 - noise u`` (``u ~ Uniform(-1, 1)``), and the emission rows by
    ``1 +/- noise u`` (renormalised), so the pair's sums are unchanged.  ``n_split``: how many
    states to split (default all), the ones with the largest occupancy ``q`` (or ``start``).
    Returns ``(start, trans, emit, q)`` with ``m + n_split`` states."""
    start = np.asarray(start, dtype=np.float64)
    trans = np.asarray(trans, dtype=np.float64)
    emit = np.asarray(emit, dtype=np.float64)
    q = start.copy() if q is None else np.asarray(q, dtype=np.float64)
    m = len(start)
    k = m if n_split is None else int(n_split)
    if not 0 <= k <= m:
        raise ValueError(f"n_split must be in 0..{m}, got {n_split}")
    rng = np.random.default_rng(rng)
    src = np.sort(np.argsort(-q, kind="stable")[:k])     # the states that are split
    old = np.concatenate([np.arange(m), src])            # the old state of every new state
    n = m + k
    half = np.ones(n)                                   # share of the mass into a state
    half[src] = 0.5
    half[m:] = 0.5
    other = np.full(n, -1)                              # the other copy of a split state
    other[src] = np.arange(m, n)
    other[m:] = src

    def shares(shape):
        """``1 + noise u`` for the first copies, ``1 - noise u`` (same u) for the second."""
        u = rng.uniform(-1.0, 1.0, size=shape + (k,))
        f = np.ones(shape + (n,))
        f[..., src] = 1 + noise * u
        f[..., m:] = 1 - noise * u
        return f

    s2 = start[old] * half * shares(())
    q2 = q[old] * half * shares(())
    t2 = trans[old][:, old] * half[None, :] * shares((n,))
    e2 = emit[old].copy()
    if k and noise > 0:
        u = rng.uniform(-1.0, 1.0, size=(k, emit.shape[1]))
        e2[src] *= 1 + noise * u
        e2[m:] *= 1 - noise * u
        e2 /= e2.sum(axis=1, keepdims=True)
    return s2, t2, e2, q2


def _encoded_from_frame(F, M: int):
    """The sequences of the framed array ``F`` (START = ``M``, STOP = ``M + 1``) as an
    :class:`~fastspectral.hmm.data.Encoded`."""
    from .data import Encoded

    F = np.asarray(F, dtype=np.int64)
    tok = F < M
    seq = np.cumsum(F == M) - 1                        # sequence of every position
    lens = np.bincount(seq[tok], minlength=int((F == M).sum()))
    off = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    return Encoded(off, F[tok].copy())


def split_sizes(n_states: int, levels: int) -> list[int]:
    """The numbers of states of progressive splitting: ``ceil(m / 2^levels)``, ..., ``ceil(m
    / 2)``, ``m`` (each at most twice the one before)."""
    sizes = [int(n_states)]
    for _ in range(int(levels)):
        nxt = -(-sizes[-1] // 2)
        if nxt == sizes[-1]:
            break
        sizes.append(nxt)
    return sizes[::-1]


def hmm_by_splitting(H, n_states: int, random_state=0, levels: int = 3, length: int = 3,
                     restarts: int = 0, iterations: int = 100, final_iterations=300,
                     tol: float | None = 1e-6, init="classes", noise: float = 0.01,
                     floor: float = 0.0, direct="classes", screen: int = 0,
                     corpus_iterations: int = 0, refine: int = 0, refine_length: int = 4,
                     windows: Windows | None = None, info: dict | None = None):
    """Progressive splitting on the window moments (Petrov et al. 2006's split training
    without the merge, each stage fitted by the window EM of :func:`window_em` instead of
    corpus EM): the moment start of :func:`hmm_from_moments` at ``split_sizes(m, levels)[0]``
    states (``init`` at that size and ``restarts`` random starts, ``iterations`` window-EM
    iterations each), then at every later size its states split by :func:`split_states`
    (``noise``) and ``iterations`` more window-EM iterations (``final_iterations`` at the
    last size, default ``iterations``), stopping an EM run when an iteration gains less than
    ``tol`` nats per position.  ``direct``: ``"classes"`` (the class start at ``m`` states)
    or a ``(start, trans, emit)`` tuple at ``m`` states, fitted by ``final_iterations`` window-EM
    iterations beside the split chain, the one with the better window likelihood kept (the
    objective decides between the two routes, as between restarts in
    :func:`hmm_from_moments`); with ``screen > 0`` both run ``screen`` iterations at the last
    size, and only the better one continues to ``final_iterations``.  ``info``, if a dict,
    receives ``sizes``, ``iterations`` (window-EM iterations of every stage: the sizes, then
    the direct fit, then the continuation when screened), ``loglik`` (the per-position window
    likelihood at the end of each of those stages) and ``chosen`` (``"split"`` or
    ``"direct"``).  ``corpus_iterations``: at the size before the last, after its window EM,
    that many Baum-Welch iterations on the training sequences themselves (:func:`fastspectral.
    hmm.em.em_step` on the sequences of ``H.F``; the split-then-EM of Petrov et al. with corpus
    EM at half the states, where an iteration costs about a quarter of one at ``m``), and
    ``final_iterations`` 0 skips the window EM after the last split.  Returns ``(start, trans,
    emit)`` as :func:`hmm_from_moments`.  ``refine``: then that many window-EM iterations on
    the windows of length ``refine_length`` (4: the 4-gram moments; prefix-grouped E-step,
    :func:`_estep_prefix`) from the result, stopping by ``tol`` as well.

    The defaults (``spectral_init="split"`` of :class:`~fastspectral.hmm.HMM`): three levels
    (``m / 8 .. m``, e.g. 5, 10, 20, 40), the class start at the first size, 100 window-EM
    iterations per size and 300 at ``m``, noise 0.01, the direct class-start fit at ``m``
    beside it, unscreened; chosen on the WSJ-tag development split (docs/notes/hmm.md), where the
    split chain won at m = 10 and the direct fit at m = 20 and 40."""
    m = int(n_states)
    if m < 1:
        raise ValueError(f"n_states must be >= 1, got {n_states}")
    win = windows if windows is not None else window_table(H.F, H.M, length)
    sizes = split_sizes(m, levels)
    rng = np.random.default_rng(random_state)
    m0 = sizes[0]
    if isinstance(init, str):
        if init != "classes":
            raise ValueError(f"init must be 'classes', a (start, trans, emit) tuple or None, "
                             f"got {init!r}")
        from .starts import hmm_from_token_classes

        init = hmm_from_token_classes(H, m0, random_state)
    starts = []
    if init is not None:
        s0, t0, e0 = (np.asarray(x, dtype=np.float64) for x in init)
        if len(s0) != m0:
            raise ValueError(f"init has {len(s0)} states, the first size is {m0}")
        starts.append((s0, t0, e0, s0.copy()))
    for _ in range(int(restarts)):
        starts.append(_random_start(win, m0, rng))
    if not starts:
        raise ValueError("hmm_by_splitting needs restarts >= 1 or an init")
    fin = iterations if final_iterations is None else final_iterations
    if direct is not None:
        if isinstance(direct, str):
            if direct != "classes":
                raise ValueError(f"direct must be 'classes' or a (start, trans, emit) tuple, "
                                 f"got {direct!r}")
            from .starts import hmm_from_token_classes

            direct = hmm_from_token_classes(H, m, random_state)
        direct = tuple(np.asarray(x, dtype=np.float64) for x in direct)
        if len(direct[0]) != m:
            raise ValueError(f"direct has {len(direct[0])} states, not {m}")
    # the last size's window EM runs `first` iterations, then (when the direct fit is
    # screened against the split chain) the better of the two continues
    first = fin if direct is None or screen <= 0 else min(int(screen), fin)
    with blas_single_thread():
        s, t, e, q, hist, _, _, total = _fit_starts(win, starts,
                                                    first if len(sizes) == 1 else iterations,
                                                    0, tol)
        its, lls = [total], [float(hist[-1])]
        for k, size in enumerate(sizes[1:], 1):
            if k == len(sizes) - 1 and corpus_iterations > 0:
                from . import em as _em

                enc = _encoded_from_frame(H.F, H.M)
                for _ in range(int(corpus_iterations)):
                    s, t, e, _ll = _em.em_step(enc, s, t, e)
            s, t, e, q = split_states(s, t, e, q, size - len(s), noise, rng)
            n_it = first if k == len(sizes) - 1 else iterations
            if n_it > 0:
                s, t, e, q, hist = window_em(win, s, t, e, q, iterations=n_it, tol=tol)
                its.append(len(hist))
                lls.append(float(hist[-1]))
            else:
                its.append(0)
                lls.append(float(window_loglik(win, s, t, e, q) / win.n_positions))
        chosen = "split"
        if direct is not None:
            d = direct
            ds, dt, de, dq, dh = window_em(win, d[0], d[1], d[2], d[0].copy(),
                                           iterations=first, tol=tol)
            its.append(len(dh))
            lls.append(float(dh[-1]))
            if lls[-1] > lls[-2]:
                s, t, e, q, chosen = ds, dt, de, dq, "direct"
            if fin > first:
                s, t, e, q, hist = window_em(win, s, t, e, q, iterations=fin - first, tol=tol)
                its.append(len(hist))
                lls.append(float(hist[-1]))
        if refine > 0:
            wr = window_table(H.F, H.M, refine_length)
            s, t, e, q, hr = window_em(wr, s, t, e, q, iterations=int(refine), tol=tol)
            if info is not None:
                info.update(refine_iterations=len(hr), refine_loglik=float(hr[-1]),
                            refine_windows=len(wr.W))
    if info is not None:
        info.update(sizes=sizes, iterations=its, loglik=lls, windows=len(win.W),
                    occupancy=q, chosen=chosen)
    return _finish(s, t, e, floor)


def _fit_starts(win, starts, iterations, screen, tol):
    """Window EM from every start (screened by ``screen`` iterations when > 0), the best by
    window likelihood: ``(start, trans, emit, q, history, logliks, best, iterations run)``."""
    total = 0
    if screen > 0 and len(starts) > 1:
        runs = []
        for s in starts:
            r = window_em(win, *s, iterations=screen, tol=None)
            total += len(r[4])
            runs.append(r)
        lls = [float(window_loglik(win, r[0], r[1], r[2], r[3]) / win.n_positions)
               for r in runs]
        best = int(np.argmax(lls))
        s, t, e, q, h0 = runs[best]
        s, t, e, q, hist = window_em(win, s, t, e, q, iterations=max(iterations - screen, 0) + 1,
                                     tol=tol)
        total += len(hist)
        hist = np.concatenate([h0, hist])
    else:
        best, lls, bestrun = 0, [], None
        for i, s in enumerate(starts):
            r = window_em(win, *s, iterations=iterations, tol=tol)
            total += len(r[4])
            lls.append(float(r[4][-1]))
            if bestrun is None or lls[-1] > lls[best]:
                best, bestrun = i, r
        s, t, e, q, hist = bestrun
    return s, t, e, q, hist, lls, best, total
