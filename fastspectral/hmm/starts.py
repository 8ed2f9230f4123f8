"""Starting points of EM from the moments of the spectral learner's Hankel data.

:func:`hmm_from_anchors` recovers HMM parameters for the spectral initialisation of EM (the
pivot idea of Cohen & Collins 2014 for sequences): under an HMM the previous and the next
symbol are independent of the current one given its hidden state, so the symbol-context
matrix is ``sum_h pi(h) O(. | h) s(. | h)^T``; its CCA representation, anchor symbols and
Frank-Wolfe decomposition (:func:`fastspectral.linalg.mdp2`) give the emissions, and the
transitions, start and stop probabilities follow from the bigram, first- and last-symbol
moments by least squares.  :func:`hmm_from_token_classes` clusters token contexts on a
spectral embedding of the symbols instead (:func:`symbol_embedding`).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._blas import blas_single_thread
from .hankel import HankelData

__all__ = ["context_matrix", "hmm_from_anchors", "symbol_embedding", "hmm_from_token_classes",
           "hmm_from_emissions"]


def context_matrix(H: HankelData) -> sp.csr_matrix:
    """``C[x, c]``: how often symbol ``x`` follows ``c`` (columns ``0..M``: a symbol or START)
    and precedes ``c`` (columns ``M+1..2M+1``: a symbol or STOP).  Under an HMM the previous
    and the next symbol are independent of ``x`` given ``x``'s hidden state, so
    ``C = sum_h pi(h) O(. | h) s(. | h)^T``: the anchor decomposition of MDP 2."""
    M, F, t = H.M, H.F, H.tok
    rows = np.concatenate([F[t], F[t]])
    cols = np.concatenate([F[t - 1], M + 1 + np.minimum(F[t + 1], M)])
    C = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(M, 2 * M + 2))
    C.sum_duplicates()
    return C


def hmm_from_anchors(H: HankelData, n_states: int, random_state=0, floor: float = 0.1,
                     anchor_top: int | None = None):
    """HMM parameters ``(start [m], trans [m, m], emit [m, M + 1])`` from the moments of
    ``H``: the spectral (CCA) anchor decomposition of the symbol-context matrix
    (:func:`context_matrix`, :func:`fastspectral.linalg.mdp2`) gives the emissions ``O(x | h)``
    and the anchor symbols; the transitions, start and stop probabilities follow from the
    bigram, first- and last-symbol counts by least squares through ``O^+`` (clipped at 0).
    ``emit[h, M]`` is the stop probability; rows of ``trans`` and ``emit`` sum to 1.  Every
    distribution is mixed with the uniform one (weight ``floor``) so that EM can move every
    parameter.  Anchors are taken among the ``anchor_top`` most frequent symbols (default:
    ``max(100, 4 n_states)``).  States beyond the number of possible anchors are copies of
    the most probable states, with noise (EM separates them)."""
    from ..linalg import mdp2

    M, F, t = H.M, H.F, H.tok
    rng = np.random.default_rng(random_state)
    counts = np.bincount(F[t], minlength=M).astype(np.float64)
    top = int(anchor_top) if anchor_top is not None else max(100, 4 * int(n_states))
    order = np.argsort(-counts, kind="stable")[:top]
    cand = np.zeros(M, dtype=bool)
    cand[order[counts[order] > 0]] = True
    k = int(min(n_states, cand.sum()))
    if k < 1:
        raise ValueError("no symbol occurs in the training sequences")
    with blas_single_thread():
        res = mdp2(context_matrix(H), k, candidates=cand, random_state=random_state)
    return hmm_from_emissions(H, np.asarray(res.r, dtype=np.float64), n_states, rng, floor)


def symbol_embedding(H, dim: int, random_state=0) -> np.ndarray:
    """``[M, dim]``: the symbols' coordinates on the top ``dim`` singular vectors (scaled by
    the singular values) of the Hellinger-scaled symbol-context matrix, ``sqrt`` of the rows
    of :func:`context_matrix` normalised to distributions over (previous symbol or START,
    next symbol or STOP): symbols with similar left and right contexts lie close."""
    C = context_matrix(H).tocsr()
    tot = np.asarray(C.sum(axis=1)).ravel()
    C = sp.diags(1.0 / np.where(tot > 0, tot, 1.0)) @ C
    C.data = np.sqrt(C.data)
    M = C.shape[0]
    d = int(min(dim, M))
    with blas_single_thread():
        if M <= 500:
            U, s, _ = np.linalg.svd(C.toarray(), full_matrices=False)
        else:
            from ..linalg import randomized_svd

            U, s, _ = randomized_svd(C, d, random_state=random_state)
    return U[:, :d] * s[:d]


def hmm_from_token_classes(H, n_states: int, random_state=0, floor: float = 0.1,
                           context_weight: float = 0.3, temperature: float = 2.0):
    """HMM parameters ``(start [m], trans [m, m], emit [m, M + 1])`` from token classes:
    every distinct (previous symbol, symbol) pair is placed at
    ``(e(symbol), context_weight * e(previous))`` (``e``: :func:`symbol_embedding` with
    ``m`` dimensions, START at the origin), the pairs are clustered into ``m`` classes by
    k-means weighted by their counts (scikit-learn, 5 restarts), every pair gets soft class
    weights ``exp(-d_h^2 / (temperature * D))`` (``d_h``: its distance to centroid ``h``,
    ``D``: the count-weighted mean squared distance of the pairs to their own centroids;
    normalised; ``temperature`` 0: the hard k-means classes) which every token inherits, and
    the start, transition, emission and stop probabilities are the weighted relative
    frequencies of the classes of first tokens, of consecutive tokens (``sum_t r_t r_{t+1}^T``,
    summed over distinct consecutive pairs), of each class's symbols and of last tokens, each
    mixed with the uniform distribution (weight ``floor``).  The spectral step is the
    embedding (a spectral clustering, not a method-of-moments estimate of the HMM);
    ``context_weight`` 0.3, ``temperature`` 2 and ``floor`` 0.1 were chosen on the WSJ-tag
    development split (docs/notes/hmm.md).  Fewer distinct pairs than states: the classes are split
    into noisy copies (:func:`_split_states`)."""
    from sklearn.cluster import KMeans

    M, F, t = H.M, H.F, H.tok
    m = int(n_states)
    rng = np.random.default_rng(random_state)
    emb = np.vstack([symbol_embedding(H, m, random_state), np.zeros((1, min(m, M)))])
    code = F[t - 1].astype(np.int64) * M + F[t]       # (previous symbol or START, symbol)
    u, inv, cnt = np.unique(code, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    k = int(min(m, len(u)))
    if k < 1:
        raise ValueError("no symbol occurs in the training sequences")
    feats = np.hstack([emb[u % M], float(context_weight) * emb[u // M]])
    w = cnt.astype(np.float64)
    seed = None if random_state is None else int(random_state)
    with blas_single_thread():
        km = KMeans(k, n_init=5, random_state=seed).fit(feats, sample_weight=w)
        d2 = ((feats[:, None, :] - km.cluster_centers_[None, :, :]) ** 2).sum(axis=2)
        if temperature > 0:
            within = float(np.average(d2[np.arange(len(u)), km.labels_], weights=w))
            R = np.exp(-(d2 - d2.min(axis=1, keepdims=True)) /
                       (float(temperature) * within + 1e-300))
            R /= R.sum(axis=1, keepdims=True)           # [pairs, k]
        else:
            R = np.zeros((len(u), k))
            R[np.arange(len(u)), km.labels_] = 1.0
        npairs = len(u)
        sym = (u % M).astype(np.int64)
        O = np.zeros((M, k))
        np.add.at(O, sym, R * w[:, None])
        O = O.T                                          # [k, M]
        first = np.bincount(inv[F[t - 1] == M], minlength=npairs).astype(np.float64)
        last = np.bincount(inv[F[t + 1] == M + 1], minlength=npairs).astype(np.float64)
        pi = R.T @ first
        stops = R.T @ last
        nxt = np.nonzero(F[t[:-1] + 1] < M)[0]           # token i is followed by token i + 1
        Cpp = sp.csr_matrix((np.ones(len(nxt)), (inv[nxt], inv[nxt + 1])),
                            shape=(npairs, npairs))
        C = R.T @ np.asarray(Cpp @ R)
    stop = np.clip(stops / np.maximum(O.sum(axis=1), 1.0), 1e-3, 1.0 - 1e-3)
    start, trans, emit_o = pi, C, O
    if k < m:
        start, trans, emit_o, stop = _split_states(_norm(pi, 0.0), _norm(C, 0.0), _norm(O, 0.0),
                                                   stop, m, rng)
    emit = np.empty((len(start), M + 1))
    emit[:, :M] = _norm(emit_o, floor) * (1.0 - stop)[:, None]
    emit[:, M] = stop
    return _norm(start, floor), _norm(trans, floor), emit


def hmm_from_emissions(H, O, n_states: int, rng, floor: float = 0.1):
    """HMM parameters ``(start, trans, emit)`` from emission estimates ``O`` [M, k]
    (``O[x, h]``, clipped at 0 and normalised per state): the transitions, start and stop
    probabilities by least squares through ``O^+`` on the bigram, first- and last-symbol
    counts (clipped at 0), every distribution mixed with the uniform one (weight ``floor``);
    states beyond ``k`` are noisy copies of the most probable ones."""
    M, F, t = H.M, H.F, H.tok
    counts = np.bincount(F[t], minlength=M).astype(np.float64)
    with blas_single_thread():
        O = np.clip(np.asarray(O, dtype=np.float64), 0.0, None)         # [M, k]
        O /= np.where(O.sum(axis=0) > 0, O.sum(axis=0), 1.0)[None, :]
        k = O.shape[1]
        first = np.bincount(F[t][F[t - 1] == M], minlength=M).astype(np.float64)
        last = np.bincount(F[t][F[t + 1] == M + 1], minlength=M).astype(np.float64)
        b = t[F[t + 1] < M]
        big = sp.csr_matrix((np.ones(len(b)), (F[b], F[b + 1])), shape=(M, M))
        Op = np.linalg.pinv(O)                                          # [k, M]
        occ = np.clip(Op @ counts, 1e-12, None)
        pi = np.clip(Op @ first, 0.0, None)
        stops = np.clip(Op @ last, 0.0, None)
        C = np.clip(np.asarray((big.T @ Op.T).T) @ Op.T, 0.0, None)     # O^+ B O^+T: [k, k]
    stop = np.clip(stops / (occ + stops), 1e-3, 1.0 - 1e-3)
    start, trans, emit_o = pi, C, O.T
    if k < n_states:                           # split states: copies with noise
        start, trans, emit_o, stop = _split_states(_norm(pi, 0.0), _norm(C, 0.0), emit_o, stop,
                                                   int(n_states), rng)
    m = len(start)
    emit = np.empty((m, M + 1))
    emit[:, :M] = _norm(emit_o, floor) * (1.0 - stop)[:, None]
    emit[:, M] = stop
    return _norm(start, floor), _norm(trans, floor), emit


def _split_states(start, trans, emit, stop, m, rng):
    """``m`` states from ``k < m``: the most probable states are copied (emissions times
    Uniform(0.8, 1.2) noise); a copy shares its source's start and incoming probability."""
    k = len(start)
    src = list(range(k))
    order = np.argsort(-start - trans.sum(axis=0), kind="stable")
    while len(src) < m:
        src.append(int(order[(len(src) - k) % k]))
    src = np.asarray(src)
    copies = np.bincount(src, minlength=k).astype(np.float64)
    start2 = start[src] / copies[src]
    trans2 = trans[src][:, src] / copies[src][None, :]
    emit2 = emit[src] * rng.uniform(0.8, 1.2, size=(m, emit.shape[1]))
    return start2, trans2, emit2, stop[src]


def _norm(X, floor):
    """Rows of ``X`` (or the vector) normalised and mixed with the uniform distribution."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        s = X.sum()
        p = X / s if s > 0 else np.full(len(X), 1.0 / len(X))
        return (1 - floor) * p + floor / len(X)
    s = X.sum(axis=1, keepdims=True)
    p = np.where(s > 0, X / np.where(s > 0, s, 1.0), 1.0 / X.shape[1])
    return (1 - floor) * p + floor / X.shape[1]
