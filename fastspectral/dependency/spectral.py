"""Operator SHAGs and their spectral estimation (Luque et al. 2012, Algorithm 1).

Kept as one module (about 830 lines): the operator SHAG, its Hankel counts, the compiled fit
and the DET+F back-off automaton interpolated into it share the basis index tables and the
modifier-symbol helper (``_sym``), and call each other inside Numba (``_fit_groups`` runs
``_fit_one`` per automaton in a parallel loop).

An operator SHAG gives, for every head symbol ``h`` and direction ``d``, a weighted automaton
over modifier symbols::

    P(x_1 .. x_T | h, d) = beta[h,d]^T  A[h,d,x_T] ... A[h,d,x_1]  alpha1[h,d]

(column convention), with START and STOP folded into ``alpha1`` and ``beta`` (the paper's
footnote 6).

Spectral learning, per ``(h, d)``, on the START/STOP-framed sequences ``z = START x STOP``
and *all* their substrings (expected counts per sequence), with a basis of prefixes ``p`` and
suffixes ``s`` (Balle et al.'s generalised Hankel basis):

* ``P[s, p]``    = E #(p s)       substring counts;
* ``P_a[s, p]``  = E #(p a s)     with a real modifier ``a`` between prefix and suffix;
* ``p_1[s]``     = E #(START s) = ``P[:, START]``;
* ``p_inf[p]``   = E #(p STOP)  = ``P[STOP, :]``;

then ``U`` = top-``n`` left singular vectors of ``P``, ``alpha1 = U^T p_1``,
``beta^T = p_inf^T (U^T P)^+`` and ``A_a = U^T P_a (U^T P)^+``.  The paper's algorithm is the
basis of single symbols (``P`` = bigram, ``P_a`` = trigram counts; ``basis=1``); ``basis=2``
adds the most frequent length-2 prefixes and suffixes (per direction).  With ``F_p`` the
summed forward state after every occurrence of ``p`` and ``S_s`` the backward vector of the
suffix ``s``, ``P = S F`` and ``P_a = S A_a F`` for any basis, and ``p_1``, ``p_inf`` are a row
/ column of them, so the learned operators are a similarity transform of the true ones and the
sequence probabilities are recovered exactly in the limit (a consistent estimator).

Implementation (two Numba kernels, :func:`_distinct_sequences` and :func:`_fit_groups`):
identical (head, direction, modifier sequence) occurrences are merged and weighted first
(153,901 sequences -> 5,191 distinct ones on WSJ), which also gives the framed-bigram counts
that choose the basis; then, automaton by automaton, the Hankel block ``P`` is counted on its
non-zero rows and columns only and factored by a seeded randomised range finder with ``power``
power iterations (test matrix ``Om`` with ``k = N+5`` columns, fewer for a small basis, and row
``j`` for the block's ``j``-th non-zero column; Cholesky QR re-orthonormalisation, Householder
QR when a sketch is ill-conditioned) followed by an SVD of the ``k x c`` projection, or by an
exact SVD when the block has at most ``k`` non-zero rows or columns.  These SVDs of matrices
with at most ``k`` rows take the eigenvectors of the Gram matrix and refine them by one-sided
Jacobi rotations (each singular value and vector to the accuracy of a Jacobi SVD, without
LAPACK's per-call overhead).  ``U^T P = diag(s) V^T`` holds, so ``(U^T P)^+ = V diag(1/s)``;
``A_a`` is accumulated directly as ``sum_occurrences (U^T e_s)(e_p^T (U^T P)^+)``, never
forming the ``P_a`` blocks.

Two additions, off in :func:`learn_spectral` by default and on in ``SHAGParser``'s defaults
(chosen on development splits): ``ridge`` regularises ``(U^T P)^+`` to
``V diag(s / (s^2 + lam^2))`` with ``lam`` = ridge / sqrt(#sequences of the automaton), and
``smoothing`` interpolates the result with the DET+F back-off automaton
(:func:`backoff_automaton`) as a direct sum with two more states.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from .._jit import njit

from .._blas import blas_single_thread
from ..linalg.ridge import ridge_inverse
from ..linalg.svd import range_svd, small_svd
from .data import Encoded, SequenceData

__all__ = ["OperatorSHAG", "hankel_basis", "learn_spectral", "distinct_sequences",
           "backoff_automaton", "with_backoff"]


@dataclass
class OperatorSHAG:
    """Operators of a (possibly non-deterministic) SHAG: ``alpha1`` and ``beta`` are
    ``[H, 2, N]``, ``A`` is ``[H, 2, M, N, N]`` (H head symbols, 0 = root; M modifier tags)."""
    alpha1: np.ndarray
    beta: np.ndarray
    A: np.ndarray

    @property
    def n_states(self) -> int:
        """Number of states N."""
        return int(self.alpha1.shape[2])

    @classmethod
    def trivial(cls, H: int, M: int) -> "OperatorSHAG":
        """The one-state automaton giving weight 1 to every sequence (used when a model has
        only a deterministic part)."""
        return cls(np.ones((H, 2, 1)), np.ones((H, 2, 1)), np.ones((H, 2, M, 1, 1)))

    def sequence_weight(self, h: int, d: int, mods) -> float:
        """Weight of one modifier sequence (reference implementation, for tests)."""
        v = self.alpha1[h, d]
        for a in mods:
            v = self.A[h, d, a] @ v
        return float(self.beta[h, d] @ v)

    def interpolate(self, other: "OperatorSHAG", weight: float) -> "OperatorSHAG":
        """The mixture ``(1 - weight) * self + weight * other`` of two SHAGs' sequence weights,
        as one operator SHAG with ``N1 + N2`` states (the direct sum of the two automata:
        block-diagonal operators, concatenated ``alpha1`` scaled by the mixture weights and
        concatenated ``beta``)."""
        w = float(weight)
        H, _, N1 = self.alpha1.shape
        N2 = other.alpha1.shape[2]
        M = self.A.shape[2]
        if other.alpha1.shape[:2] != (H, 2) or other.A.shape[2] != M:
            raise ValueError("cannot interpolate SHAGs over different symbol sets")
        alpha1 = np.concatenate([(1.0 - w) * self.alpha1, w * other.alpha1], axis=2)
        beta = np.concatenate([self.beta, other.beta], axis=2)
        A = np.zeros((H, 2, M, N1 + N2, N1 + N2))
        A[..., :N1, :N1] = self.A
        A[..., N1:, N1:] = other.A
        return OperatorSHAG(alpha1, beta, A)

    def astype_contiguous(self) -> "OperatorSHAG":
        """C-contiguous float64 copies (as the kernel needs)."""
        return OperatorSHAG(np.ascontiguousarray(self.alpha1, dtype=np.float64),
                            np.ascontiguousarray(self.beta, dtype=np.float64),
                            np.ascontiguousarray(self.A, dtype=np.float64))


# ---------------------------------------------------------------------------- compiled counts
# Symbols of the framed sequences: tags 0..M-1, START = M, STOP = M+1 (B = M+2 symbols).
# Prefix indices: tag t -> t, START -> M, length-2 prefixes -> M+1.. (pmap2[d, x*B+y]);
# suffix indices: tag t -> t, STOP -> M, length-2 suffixes -> M+1.. (smap2[d, x*B+y]).

@njit(cache=True, inline="always")
def _sym(tags, s0, T, j, M):  # pragma: no cover - numba
    """Symbol j (0..T+1) of the framed sequence START tags[s0:s0+T] STOP."""
    if j == 0:
        return M
    if j == T + 1:
        return M + 1
    return tags[s0 + j - 1]


@njit(cache=True)
def _bigram_counts(tags, starts, lens, dirs, M):  # pragma: no cover - numba
    """Counts of every bigram (x, y) of the framed sequences, per direction: ``[2, B*B]``
    (reference for the tests; the learner gets them from :func:`_distinct_sequences`)."""
    B = M + 2
    c = np.zeros((2, B * B), dtype=np.int64)
    for q in range(len(lens)):
        T, s0, d = lens[q], starts[q], dirs[q]
        x = M
        for j in range(1, T + 2):
            y = _sym(tags, s0, T, j, M)
            c[d, x * B + y] += 1
            x = y
    return c


@njit(cache=True)
def _hankel_counts(tags, starts, lens, dirs, grp, pmap2, smap2, M, P):  # pragma: no cover
    """Add E#(p s) counts (raw) of every sequence to ``P[grp, s, p]`` (dense reference for
    the tests; the learner counts each block in :func:`_fit_groups`)."""
    B = M + 2
    for q in range(len(lens)):
        T, s0, d, g = lens[q], starts[q], dirs[q], grp[q]
        if T == 0:                     # START STOP: the only (prefix, suffix) pair
            P[g, M, M] += 1.0
            continue
        for j in range(0, T + 1):      # split between framed positions j and j+1
            zj = _sym(tags, s0, T, j, M)
            p1 = zj                    # a tag, or START (= M) at j = 0
            p2 = -1
            if j >= 1:
                p2 = pmap2[d, _sym(tags, s0, T, j - 1, M) * B + zj]
            zn = _sym(tags, s0, T, j + 1, M)
            s1 = zn if zn < M else M   # a tag, or STOP (= M)
            s2 = -1
            if j + 1 <= T:
                s2 = smap2[d, zn * B + _sym(tags, s0, T, j + 2, M)]
            P[g, s1, p1] += 1.0
            if p2 >= 0:
                P[g, s1, p2] += 1.0
            if s2 >= 0:
                P[g, s2, p1] += 1.0
                if p2 >= 0:
                    P[g, s2, p2] += 1.0


# Distinct sequences: identical (group, tag sequence) occurrences are merged and weighted
# (153,901 sequences -> 5,191 on WSJ).  Empty and single-modifier sequences are counted in a
# (group, tag) table when it is small; the others go through an open-addressing hash table
# (linear probing) keyed by the bit-packed (group, length, tags) when they fit in 62 bits, else
# by a 64-bit hash confirmed by comparing the tags.
_HMUL = -7046029254386353131          # 0x9E3779B97F4A7C15 as int64 (wrapping arithmetic)
_HMIX = -49064778989728563            # 0xFF51AFD7ED558CCD as int64
_HMIX2 = -4265267296055464877         # 0xC4CEB9FE1A85EC53 as int64
_SIGN = -9223372036854775808          # the sign bit


@njit(cache=True, inline="always")
def _mix(h):  # pragma: no cover - numba
    """MurmurHash3's 64-bit finaliser (on int64, wrapping)."""
    h ^= (h >> 33) & 0x7FFFFFFF
    h *= _HMIX
    h ^= (h >> 33) & 0x7FFFFFFF
    h *= _HMIX2
    h ^= (h >> 33) & 0x7FFFFFFF
    return h


@njit(cache=True)
def _distinct_sequences(hsym, msym, seq_pos, seq_dir, seq_start, seq_len, mods, M,
                        G):  # pragma: no cover - numba
    """Merge identical (group ``h*2+d``, modifier tags) sequences.

    Returns ``(dlen, doff, dw, dtags, order, gstart, bigrams)``: distinct sequence ``i`` has
    ``dlen[i]`` tags ``dtags[doff[i]:doff[i]+dlen[i]]`` and weight (count) ``dw[i]``; group
    ``g``'s distinct sequences are ``order[gstart[g]:gstart[g+1]]``; ``bigrams[d, x*B+y]`` are
    the (weighted) framed-bigram counts of direction ``d`` (as :func:`_bigram_counts`)."""
    nq = len(seq_len)
    nm = len(mods)
    B = M + 2
    # sequences of length <= 1 are counted directly by (group, tag + 1 or 0) when that table
    # is small; longer ones go through a hash table.  A sequence of at most `maxT` tags is
    # keyed exactly by one integer (group, length, tags bit-packed); longer ones by a hash
    # confirmed by comparing the tags.
    use1 = G * (M + 1) <= (1 << 18)
    cnt01 = np.zeros(G * (M + 1) if use1 else 1, dtype=np.int64)
    tb = 1
    while (1 << tb) < M:
        tb += 1
    gb = 1
    while (1 << gb) < G:
        gb += 1
    maxT = (62 - gb - 6) // tb
    cap_d = 256
    hg = np.empty(cap_d, dtype=np.int64)
    hl = np.empty(cap_d, dtype=np.int64)
    ho = np.empty(cap_d, dtype=np.int64)
    hh = np.empty(cap_d, dtype=np.int64)
    hw = np.empty(cap_d, dtype=np.int64)
    htags = np.empty(nm, dtype=np.int64)
    cap = 1024                                     # open addressing: key and entry per slot
    tkey = np.empty(cap, dtype=np.int64)
    tid = np.full(cap, -1, dtype=np.int64)
    nh = 0
    nt = 0
    # the sequences to hash: group, length, offset of their tags in lbuf (copied while the
    # input arrays are streamed)
    lg = np.empty(nq, dtype=np.int64)
    ll = np.empty(nq, dtype=np.int64)
    lbuf = np.empty(nm, dtype=np.int64)
    nlong = 0
    nb = 0
    lmin = 2 if use1 else 0
    for q in range(nq):
        T = seq_len[q]
        g = np.int64(hsym[seq_pos[q]]) * 2 + seq_dir[q]
        if T >= lmin:
            lg[nlong] = g
            ll[nlong] = T
            nlong += 1
            s0 = seq_start[q]
            for j in range(T):
                lbuf[nb + j] = msym[mods[s0 + j]]
            nb += T
        elif T == 0:
            cnt01[g * (M + 1)] += 1
        else:
            cnt01[g * (M + 1) + 1 + msym[mods[seq_start[q]]]] += 1
    s0 = 0
    for qq in range(nlong):
        T = ll[qq]
        g = lg[qq]
        if qq > 0:
            s0 += ll[qq - 1]
        short = T <= maxT
        if short:                                  # exact key, non-negative
            key = 0
            for j in range(T):
                key = (key << tb) | lbuf[s0 + j]
            key |= (g * 64 + T) << (tb * maxT)
        else:                                      # hash, negative
            key = g * _HMUL + T
            for j in range(T):
                key = (key ^ lbuf[s0 + j]) * _HMUL
            key |= _SIGN
        mask = cap - 1
        idx = _mix(key) & mask
        while True:
            i = tid[idx]
            if i < 0:
                if nh == cap_d:                    # grow the per-sequence arrays
                    cap_d *= 2
                    hg = _grow(hg, cap_d)
                    hl = _grow(hl, cap_d)
                    ho = _grow(ho, cap_d)
                    hh = _grow(hh, cap_d)
                    hw = _grow(hw, cap_d)
                i = nh
                nh += 1
                hg[i] = g
                hl[i] = T
                ho[i] = nt
                hh[i] = key
                hw[i] = 0
                for j in range(T):
                    htags[nt + j] = lbuf[s0 + j]
                nt += T
                tid[idx] = i
                tkey[idx] = key
                if 2 * nh > cap:                   # rehash into a larger table
                    cap *= 4
                    tkey = np.empty(cap, dtype=np.int64)
                    tid = np.full(cap, -1, dtype=np.int64)
                    mask = cap - 1
                    for e in range(nh):
                        x = _mix(hh[e]) & mask
                        while tid[x] >= 0:
                            x = (x + 1) & mask
                        tid[x] = e
                        tkey[x] = hh[e]
                break
            if tkey[idx] == key:
                if short:
                    break
                if hg[i] == g and hl[i] == T:
                    o = ho[i]
                    same = True
                    for j in range(T):
                        if htags[o + j] != lbuf[s0 + j]:
                            same = False
                            break
                    if same:
                        break
            idx = (idx + 1) & mask
        hw[i] += 1
    # all distinct sequences: the empty ones and single modifiers, then the hashed ones
    n01 = 0
    n1 = 0
    for e in range(len(cnt01)):
        if cnt01[e] > 0:
            n01 += 1
            n1 += (e % (M + 1)) > 0
    nd = n01 + nh
    dg = np.empty(nd, dtype=np.int64)
    dlen = np.empty(nd, dtype=np.int64)
    doff = np.empty(nd, dtype=np.int64)
    dw = np.empty(nd, dtype=np.int64)
    dtags = np.empty(n1 + nt, dtype=np.int64)
    i = 0
    o = 0
    if use1:
        for e in range(G * (M + 1)):
            if cnt01[e] > 0:
                t1 = e % (M + 1)
                dg[i] = e // (M + 1)
                dlen[i] = 1 if t1 > 0 else 0
                doff[i] = o
                if t1 > 0:
                    dtags[o] = t1 - 1
                    o += 1
                dw[i] = cnt01[e]
                i += 1
    for e in range(nh):
        dg[i] = hg[e]
        dlen[i] = hl[e]
        doff[i] = n1 + ho[e]
        dw[i] = hw[e]
        i += 1
    dtags[n1:] = htags[:nt]
    # weighted framed-bigram counts per direction
    big = np.zeros((2, B * B), dtype=np.int64)
    for i in range(nd):
        d = dg[i] & 1
        T = dlen[i]
        o = doff[i]
        w = dw[i]
        x = M
        for j in range(1, T + 2):
            y = _sym(dtags, o, T, j, M)
            big[d, x * B + y] += w
            x = y
    # group the distinct sequences (counting sort)
    gstart = np.zeros(G + 1, dtype=np.int64)
    for i in range(nd):
        gstart[dg[i] + 1] += 1
    for g in range(G):
        gstart[g + 1] += gstart[g]
    fill = gstart[:G].copy()
    order = np.empty(nd, dtype=np.int64)
    for i in range(nd):
        order[fill[dg[i]]] = i
        fill[dg[i]] += 1
    return dlen, doff, dw, dtags, order, gstart, big


@njit(cache=True)
def _grow(a, n):  # pragma: no cover - numba
    """``a`` copied into a new array of length ``n``."""
    b = np.empty(n, dtype=a.dtype)
    b[:len(a)] = a
    return b


@njit(cache=True)
def _fit_one(g, dlen, doff, dw, dtags, order, gstart, sb, spl, M, n, Ns, Np, k, rcond, noise,
             ridge, scaled, power, Om, alpha1, beta, A):  # pragma: no cover - numba
    """Group ``g`` of :func:`_fit_groups`: its Hankel block (on the non-zero rows / columns),
    factorisation and operators, written to ``alpha1[g]``, ``beta[g]``, ``A[g]``."""
    q0, q1 = gstart[g], gstart[g + 1]
    if q0 == q1:
        return
    rloc = np.empty(Ns + 1, dtype=np.int64)
    cloc = np.empty(Np + 1, dtype=np.int64)
    wv = np.empty(n)
    e0, e1 = sb[q0], sb[q1]
    nsq = 0.0
    for qi in range(q0, q1):
        nsq += dw[order[qi]]
    # the block's non-zero rows and columns, numbered in increasing basis order; the
    # splits' indices become block indices (nr, nc: none)
    rloc[:] = 0
    cloc[:] = 0
    for e in range(e0, e1):
        cloc[spl[e, 0]] = 1
        cloc[spl[e, 1]] = 1
        rloc[spl[e, 2]] = 1
        rloc[spl[e, 3]] = 1
    nr = 0
    for s in range(Ns):
        if rloc[s]:
            rloc[s] = nr
            nr += 1
    nc = 0
    for p in range(Np):
        if cloc[p]:
            cloc[p] = nc
            nc += 1
    rloc[Ns] = nr
    cloc[Np] = nc
    for e in range(e0, e1):
        spl[e, 0] = cloc[spl[e, 0]]
        spl[e, 1] = cloc[spl[e, 1]]
        spl[e, 2] = rloc[spl[e, 2]]
        spl[e, 3] = rloc[spl[e, 3]]
    P = np.zeros((nr, nc))
    for qi in range(q0, q1):          # E#(p s) counts (raw, weighted)
        w = np.float64(dw[order[qi]])
        for e in range(sb[qi], sb[qi + 1]):
            c1, c2, r1, r2 = spl[e, 0], spl[e, 1], spl[e, 2], spl[e, 3]
            P[r1, c1] += w
            if c2 < nc:
                P[r1, c2] += w
            if r2 < nr:
                P[r2, c1] += w
                if c2 < nc:
                    P[r2, c2] += w
    P /= nsq
    dr = np.empty(nr)
    dc = np.empty(nc)
    if scaled:
        eps = 1e-3 / nsq
        dc[:] = 0.0
        for i in range(nr):
            acc = 0.0
            for j in range(nc):
                acc += P[i, j]
                dc[j] += P[i, j]
            dr[i] = 1.0 / np.sqrt(acc + eps)
        for j in range(nc):
            dc[j] = 1.0 / np.sqrt(dc[j] + eps)
        Q = np.empty((nr, nc))
        for i in range(nr):
            for j in range(nc):
                Q[i, j] = dr[i] * P[i, j] * dc[j]
    else:
        Q = P
    if min(nr, nc) <= k:
        U, s, Vt = small_svd(Q, rcond)
    else:
        U, s, Vt = range_svd(Q, Om, k, power, rcond)
    m = min(n, len(s))
    # kept singular values: above rcond * largest (and the noise level, except the first)
    thr = rcond * max(s[0], 1e-300)
    nthr = noise / np.sqrt(nsq) if noise > 0 else -1.0
    # Tikhonov-regularised inverse s / (s^2 + lam^2), lam = ridge / sqrt(#sequences)
    # (fastspectral.linalg.ridge): the order of the block's sampling noise, so lam -> 0 with data
    keep = np.zeros(n, dtype=np.bool_)
    for i in range(m):
        keep[i] = s[i] > thr and (i == 0 or s[i] > nthr)
    inv = ridge_inverse(s, keep, ridge, nsq)
    # U (kept columns) and X = (U^T Q)^+ = V diag(1/s) (regularised: V diag(inv)), mapped back
    # if scaled; one more zero row each for the "none" index
    Ul = np.zeros((nr + 1, n))
    Xl = np.zeros((nc + 1, n))
    for i in range(m):
        if inv[i] == 0.0:
            continue
        for r in range(nr):
            Ul[r, i] = U[r, i] * dr[r] if scaled else U[r, i]
        for c in range(nc):
            Xl[c, i] = Vt[i, c] * inv[i] * dc[c] if scaled else Vt[i, c] * inv[i]
    # alpha1 = U^T p_1 (the START column), beta^T = p_inf^T X (the STOP row)
    cs, rs = cloc[M], rloc[M]
    for i in range(n):
        a = 0.0
        for r in range(nr):
            a += Ul[r, i] * P[r, cs]
        alpha1[g, i] = a
        b = 0.0
        for c in range(nc):
            b += P[rs, c] * Xl[c, i]
        beta[g, i] = b
    # A_a = U^T P_a X: sum over occurrences of p a s of (U^T e_s)(X^T e_p)^T (raw counts)
    Xl /= nsq
    for qi in range(q0, q1):
        q = order[qi]
        T, o, b = dlen[q], doff[q], sb[qi]
        w = np.float64(dw[q])
        for j in range(T):            # a = framed symbol j+1, prefix ends at j
            a = dtags[o + j]
            c1, c2 = spl[b + j, 0], spl[b + j, 1]
            r1, r2 = spl[b + j + 1, 2], spl[b + j + 1, 3]
            for l in range(n):
                wv[l] = Xl[c1, l] + Xl[c2, l]
            Aga = A[g, a]
            for i in range(n):
                ui = w * (Ul[r1, i] + Ul[r2, i])
                row = Aga[i]
                for l in range(n):
                    row[l] += ui * wv[l]


@njit(cache=True)
def _fit_groups(dlen, doff, dw, dtags, order, gstart, pmap2, smap2, M, N, Ns, Np, k, rcond,
                noise, ridge, scaled, power, Om, extra):  # pragma: no cover - numba
    """Hankel block, factorisation and operators of every group ``g = h*2+d``; returns
    ``(alpha1 [G, N+extra], beta [G, N+extra], A [G, M, N+extra, N+extra])`` with the
    spectral operators in the first ``N`` states and zeros in the ``extra`` others (room for
    the back-off automaton, :func:`_put_backoff`).  One thread: splitting the automata over
    two threads measured no faster, the largest automata dominate."""
    G = len(gstart) - 1
    B = M + 2
    n = min(N, k)
    alpha1 = np.zeros((G, N + extra))
    beta = np.zeros((G, N + extra))
    A = np.zeros((G, M, N + extra, N + extra))
    # basis indices at every split of every distinct sequence (group order): single-symbol
    # prefix, length-2 prefix (Np: none), single-symbol suffix, length-2 suffix (Ns: none);
    # the framed sequence is padded with STOP on both sides, which no basis string contains
    # in those positions, so that every lookup is unconditional
    nd = len(order)
    sb = np.empty(nd + 1, dtype=np.int64)
    sb[0] = 0
    maxT = 0
    for qi in range(nd):
        sb[qi + 1] = sb[qi] + dlen[order[qi]] + 1
        maxT = max(maxT, dlen[order[qi]])
    spl = np.empty((sb[nd], 4), dtype=np.int64)
    for g in range(G):
        d = g & 1
        fz = np.empty(maxT + 4, dtype=np.int64)
        for qi in range(gstart[g], gstart[g + 1]):
            q = order[qi]
            T, o, b = dlen[q], doff[q], sb[qi]
            fz[0] = M + 1
            fz[1] = M
            for j in range(T):
                fz[j + 2] = dtags[o + j]
            fz[T + 2] = M + 1
            fz[T + 3] = M + 1
            for j in range(T + 1):        # split between framed positions j and j+1
                x1 = fz[j + 1]
                x2 = fz[j + 2]
                p2 = pmap2[d, fz[j] * B + x1]
                s2 = smap2[d, x2 * B + fz[j + 3]]
                spl[b + j, 0] = x1
                spl[b + j, 1] = p2 if p2 >= 0 else Np
                spl[b + j, 2] = min(x2, M)
                spl[b + j, 3] = s2 if s2 >= 0 else Ns
    for g in range(G):
        _fit_one(g, dlen, doff, dw, dtags, order, gstart, sb, spl, M, n, Ns, Np, k, rcond, noise,
                 ridge, scaled, power, Om, alpha1, beta, A)
    return alpha1, beta, A


# ---------------------------------------------------------------------------- learner
def _flat_sequences(enc: Encoded, seqs: SequenceData):
    """Per sequence: group ``h*2+d``, direction, start and length in the flat tag array (for
    the reference counts :func:`_bigram_counts` and :func:`_hankel_counts`)."""
    grp = (enc.hsym[seqs.seq_pos].astype(np.int64) * 2 + seqs.seq_dir).astype(np.int64)
    tags = np.ascontiguousarray(enc.msym[seqs.mods], dtype=np.int64)
    return (grp, np.ascontiguousarray(seqs.seq_dir, dtype=np.int64),
            np.ascontiguousarray(seqs.seq_start, dtype=np.int64),
            np.ascontiguousarray(seqs.seq_len, dtype=np.int64), tags)


def hankel_basis(bigram_counts: np.ndarray, M: int, basis: int = 2, max_basis: int = 32,
                 min_count: int = 1):
    """Length-2 basis prefixes and suffixes of each direction.

    ``bigram_counts[d, x*B+y]`` are the framed-bigram counts (``B = M+2``; START = M,
    STOP = M+1).  Prefixes ``x y`` need a tag ``y``, suffixes ``x y`` a tag ``x``; the
    ``max_basis`` most frequent of each (with at least ``min_count`` occurrences) are kept.
    Returns ``(pmap2, smap2, Np, Ns)``: ``pmap2[d, x*B+y]`` is the prefix's row index
    (``M+1+j``) or -1, likewise ``smap2``; ``Np``, ``Ns`` the basis sizes.
    """
    B = M + 2
    pmap2 = np.full((2, B * B), -1, dtype=np.int64)
    smap2 = np.full((2, B * B), -1, dtype=np.int64)
    Np = Ns = M + 1
    if basis < 2 or max_basis <= 0:
        return pmap2, smap2, Np, Ns
    codes = np.arange(B * B)
    is_pre = (codes % B) < M                 # y is a tag
    is_suf = (codes // B) < M                # x is a tag
    for d in range(2):
        c = bigram_counts[d]
        for ok, mp in ((is_pre, pmap2), (is_suf, smap2)):
            cand = np.nonzero(ok & (c >= max(min_count, 1)))[0]
            top = cand[np.argsort(-c[cand], kind="stable")[:max_basis]]
            mp[d, top] = M + 1 + np.arange(len(top))
        Np = max(Np, M + 1 + int((pmap2[d] >= 0).sum()))
        Ns = max(Ns, M + 1 + int((smap2[d] >= 0).sum()))
    return pmap2, smap2, Np, Ns


def _grouped(dlen, doff, dw, dtags, order, gstart):
    """:func:`_distinct_sequences`' output as ``(grp_start, q_start, q_len, q_w, mods)``:
    distinct sequences sorted by group, their tags stored contiguously."""
    q_len = dlen[order]
    q_start = np.zeros(len(order), dtype=np.int64)
    if len(order):
        np.cumsum(q_len[:-1], out=q_start[1:])
    total = int(q_len.sum())
    mods = dtags[np.repeat(doff[order] - q_start, q_len) + np.arange(total, dtype=np.int64)]
    return (np.ascontiguousarray(gstart, dtype=np.int64), q_start, q_len.astype(np.int64),
            dw[order].astype(np.float64), mods.astype(np.int64))


def distinct_sequences(enc: Encoded, seqs: SequenceData, H: int, M: int):
    """Distinct modifier-tag sequences of every (head symbol, direction) with their counts
    (compiled merging, :func:`_distinct_sequences`).

    Returns ``(grp_start, q_start, q_len, q_w, mods)`` sorted by group ``g = h*2+d``: group
    ``g``'s sequences are ``grp_start[g] .. grp_start[g+1]-1``; sequence ``q`` has the
    ``q_len[q]`` tags ``mods[q_start[q]:q_start[q]+q_len[q]]`` and count ``q_w[q]``.
    """
    c = np.ascontiguousarray
    dlen, doff, dw, dtags, order, gstart, _ = _distinct_sequences(
        c(enc.hsym), c(enc.msym), c(seqs.seq_pos), c(seqs.seq_dir), c(seqs.seq_start),
        c(seqs.seq_len), c(seqs.mods), M, 2 * H)
    return _grouped(dlen, doff, dw, dtags, order, gstart)


@njit(cache=True)
def _backoff_probs(gstart, order, dlen, doff, dw, dtags, M):  # pragma: no cover - numba
    """DET+F probabilities ``p[g, k, x]`` of outcome ``x`` (tag, or STOP = ``M``) in state
    ``k`` (0 first, 1 later) of group ``g``: Witten-Bell ``(c + T p_back) / (c(ctx) + T)``
    backed off to ``P(x | direction, k)`` and then to the uniform distribution (the
    probabilities of ``backoff.BackoffSHAG("f")``), counted from the merged sequences."""
    G = len(gstart) - 1
    O = M + 1
    C = np.zeros((G, 2, O))
    for g in range(G):
        for qi in range(gstart[g], gstart[g + 1]):
            q = order[qi]
            w = np.float64(dw[q])
            T, o = dlen[q], doff[q]
            for j in range(T):
                C[g, 1 if j > 0 else 0, dtags[o + j]] += w
            C[g, 1 if T > 0 else 0, M] += w
    Cb = np.zeros((2, 2, O))                       # (direction, state) contexts
    for g in range(G):
        for kk in range(2):
            for x in range(O):
                Cb[g & 1, kk, x] += C[g, kk, x]
    pb = np.empty((2, 2, O))
    for d in range(2):
        for kk in range(2):
            _wb_row(Cb[d, kk], np.full(O, 1.0 / O), pb[d, kk])
    p = np.empty((G, 2, O))
    for g in range(G):
        for kk in range(2):
            _wb_row(C[g, kk], pb[g & 1, kk], p[g, kk])
    return p


@njit(cache=True)
def _wb_row(c, back, out):  # pragma: no cover - numba
    """One Witten-Bell row: ``out = (c + T back) / (sum c + T)``, ``back`` when ``c`` is 0."""
    tot = 0.0
    typ = 0.0
    for x in range(len(c)):
        tot += c[x]
        if c[x] > 0:
            typ += 1.0
    den = tot + typ
    for x in range(len(c)):
        out[x] = (c[x] + typ * back[x]) / den if den > 0 else back[x]


@njit(cache=True)
def _put_backoff(alpha1, beta, A, p, N, weight):  # pragma: no cover - numba
    """Turn ``(alpha1, beta, A)`` (``[G, N+2]``, ``[G, N+2]``, ``[G, M, N+2, N+2]``, a learned
    automaton in the first ``N`` states) into the mixture ``(1 - weight) * learned + weight *
    DET+F``: the DET+F automaton of probabilities ``p`` (:func:`_backoff_probs`) goes into
    states ``N`` (first) and ``N+1`` (later)."""
    G, M = A.shape[0], A.shape[1]
    for g in range(G):
        for i in range(N):
            alpha1[g, i] *= 1.0 - weight
        alpha1[g, N] = weight
        alpha1[g, N + 1] = 0.0
        beta[g, N] = p[g, 0, M]
        beta[g, N + 1] = p[g, 1, M]
        for a in range(M):
            A[g, a, N + 1, N] = p[g, 0, a]
            A[g, a, N + 1, N + 1] = p[g, 1, a]


def backoff_automaton(grp_start, q_start, q_len, q_w, mods, H: int, M: int) -> OperatorSHAG:
    """The DET+F back-off model as a 2-state operator SHAG.

    States "first modifier" and "later modifier"; ``P(tag or STOP | head, dir, state)`` is
    the Witten-Bell estimate backed off to ``P(. | dir, state)`` and then to the uniform
    distribution over tags + STOP: the same probabilities as ``BackoffSHAG("f")``, counted
    from the merged sequences (:func:`distinct_sequences`).  Every sequence gets a positive
    weight, so it smooths a learned SHAG by interpolation (:meth:`OperatorSHAG.interpolate`;
    the learners fuse that step, see :func:`_put_backoff`).
    """
    G = 2 * H
    order = np.arange(len(q_len), dtype=np.int64)
    p = _backoff_probs(np.ascontiguousarray(grp_start, dtype=np.int64), order,
                       np.ascontiguousarray(q_len, dtype=np.int64),
                       np.ascontiguousarray(q_start, dtype=np.int64), np.asarray(q_w),
                       np.ascontiguousarray(mods, dtype=np.int64), M)
    alpha1 = np.zeros((G, 2))
    beta = np.zeros((G, 2))
    A = np.zeros((G, M, 2, 2))
    _put_backoff(alpha1, beta, A, p, 0, 1.0)
    return OperatorSHAG(alpha1.reshape(H, 2, 2), beta.reshape(H, 2, 2), A.reshape(H, 2, M, 2, 2))


def with_backoff(alpha1, beta, A, p, N: int, weight: float, H: int, M: int) -> OperatorSHAG:
    """An ``N``-state learned automaton (per group ``[G, N]``, ``[G, N]``, ``[G, M, N, N]``)
    interpolated with the DET+F probabilities ``p``: the ``N + 2``-state OperatorSHAG of
    :meth:`OperatorSHAG.interpolate`, built in one pass."""
    G = 2 * H
    a2 = np.zeros((G, N + 2))
    b2 = np.zeros((G, N + 2))
    A2 = np.zeros((G, M, N + 2, N + 2))
    a2[:, :N] = alpha1
    b2[:, :N] = beta
    A2[:, :, :N, :N] = A
    _put_backoff(a2, b2, A2, p, N, weight)
    N2 = N + 2
    return OperatorSHAG(a2.reshape(H, 2, N2), b2.reshape(H, 2, N2), A2.reshape(H, 2, M, N2, N2))


def learn_spectral(enc: Encoded, seqs: SequenceData, H: int, M: int, n_states: int,
                   basis: int = 2, max_basis: int = 32, rcond: float = 1e-6,
                   noise: float = 0.0, scaled: bool = False, power: int = 1,
                   seed: int = 0, smoothing: float = 0.0, ridge: float = 0.0) -> OperatorSHAG:
    """Spectral operators for every (head, direction) (Algorithm 1 of Luque et al. 2012 with a
    generalised Hankel basis).

    ``basis=1`` is the paper's algorithm (single-symbol prefixes and suffixes: bigram and
    trigram statistics); ``basis=2`` adds the ``max_basis`` most frequent length-2 prefixes
    and suffixes of each direction (rows / columns of ``P``; still consistent, and the larger
    Hankel block averages the sampling noise of more substrings into each singular vector).
    ``n_states`` is the number of states N (the SVD rank) of every automaton; singular values
    below ``rcond`` times the largest are dropped (a rarely seen head can have a lower rank).
    ``noise > 0`` also drops singular values below ``noise / sqrt(#sequences)`` (the order of
    an empirical Hankel matrix's sampling noise).  ``scaled=True`` takes the singular vectors
    of ``D_r^{-1/2} P D_c^{-1/2}`` (row / column sums of ``P``) and maps them back, a CCA-like
    variant that is consistent as well.  The SVDs are a seeded randomised range finder with
    ``power`` power iterations (deterministic for a given ``seed``); a Hankel block with at
    most ``n_states + 5`` non-zero rows or columns gets an exact SVD.  Identical sequences
    are counted once, with their multiplicity (see the module docstring).

    ``ridge >= 0`` regularises the pseudo-inverse ``(U^T P)^+ = V diag(1/s)`` to
    ``V diag(s / (s^2 + lam^2))`` with ``lam = ridge / sqrt(#sequences)`` of each automaton,
    the order of its Hankel block's sampling noise: directions with small singular values,
    which the noise dominates, are shrunk instead of amplified.  ``lam -> 0`` as the data
    grow, so the estimator stays consistent; 0 is the plain pseudo-inverse (Algorithm 1).

    ``smoothing`` in [0, 1): the result is the mixture ``(1 - smoothing) * spectral +
    smoothing * DET+F`` (:func:`backoff_automaton`, counted from the same merged sequences),
    an operator SHAG with ``n_states + 2`` states; 0 returns the plain spectral SHAG.
    """
    if n_states < 1:
        raise ValueError("n_states must be >= 1")
    if basis not in (1, 2):
        raise ValueError("basis must be 1 or 2")
    if not 0.0 <= smoothing < 1.0:
        raise ValueError("smoothing must be in [0, 1)")
    if not ridge >= 0.0:
        raise ValueError("ridge must be >= 0")
    # the matrices are small: multi-threaded BLAS only adds overhead
    with blas_single_thread():
        return _learn_spectral(enc, seqs, H, M, int(n_states), basis, int(max_basis), rcond,
                               noise, scaled, int(power), int(seed), float(smoothing),
                               float(ridge))


def _learn_spectral(enc, seqs, H, M, N, basis, max_basis, rcond, noise, scaled, power,
                    seed, smoothing, ridge) -> OperatorSHAG:
    G = 2 * H
    c = np.ascontiguousarray
    distinct = _distinct_sequences(
        c(enc.hsym), c(enc.msym), c(seqs.seq_pos), c(seqs.seq_dir), c(seqs.seq_start),
        c(seqs.seq_len), c(seqs.mods), M, G)
    return spectral_from_distinct(distinct, H, M, N, basis, max_basis, rcond, noise, scaled,
                                  power, seed, smoothing, ridge)


def spectral_from_distinct(distinct, H, M, N, basis=2, max_basis=32, rcond=1e-6, noise=0.0,
                           scaled=False, power=1, seed=0, smoothing=0.0,
                           ridge=0.0) -> OperatorSHAG:
    """The rest of :func:`learn_spectral` from the merged sequences ``distinct`` (the output
    of :func:`_distinct_sequences`: also built from merged partition counts by
    :mod:`fastspectral.dependency.stats`); call it with BLAS single-threaded."""
    dlen, doff, dw, dtags, order, gstart, big = distinct
    pmap2, smap2, Np, Ns = hankel_basis(big, M, basis, max_basis)
    k = min(N + 5, Ns, Np)
    # the range finder's test matrix: row j multiplies the j-th non-zero column of a block
    Om = np.random.default_rng(seed).standard_normal((Np, k))
    extra = 2 if smoothing > 0.0 else 0
    alpha1, beta, A = _fit_groups(dlen, doff, dw, dtags, order, gstart, pmap2, smap2, M, N, Ns,
                                  Np, k, float(rcond), float(noise), float(ridge), bool(scaled),
                                  power, Om, extra)
    if extra:                   # the DET+F automaton in the two extra states
        _put_backoff(alpha1, beta, A, _backoff_probs(gstart, order, dlen, doff, dw, dtags, M), N,
                     smoothing)
    N2 = N + extra
    return OperatorSHAG(alpha1.reshape(H, 2, N2), beta.reshape(H, 2, N2),
                        A.reshape(H, 2, M, N2, N2))
