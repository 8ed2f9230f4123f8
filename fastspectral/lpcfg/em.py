"""EM for latent-variable PCFGs (Matsuzaki et al. 2005; Petrov et al. 2006) on gold skeletal trees.

>>> from fastspectral.lpcfg.em import EMLPCFG
>>> model = EMLPCFG(n_states=16, iterations=20).fit(trees)                 # doctest: +SKIP
>>> model.parse([["The", "dog", "barks", "."]])                              # doctest: +SKIP

The model
---------
The treebank is cleaned, unary-collapsed and binarised exactly as for the spectral L-PCFG (the
symbol and rule sets are those of the plain PCFG with the same ``v``/``h``).  Every symbol ``a``
seen at least ``min_count`` times gets ``m_a = n_states`` latent states (pre-terminals
``n_states_pre``), the others one.  The parameters are genuine probabilities:

* ``t(a -> b c, h2, h3 | a, h1)`` (binary tensors) and ``t(a -> p, h2 | a, h1)`` (unary
  matrices), normalised over all rules of ``a`` and child states for every ``(a, h1)``;
* ``pi(a, h) = P(root = a, h)``;
* emissions ``q(w | p, h) = P(w | p) * q(k(w) | p, h) / P(k(w) | p)`` with ``k(w)`` the word's
  *lexical class*: the word itself when it occurs more than ``rare_threshold`` times in training,
  else the per-tag class "rare" (shared by all rare and unknown words of ``p``).  ``P(w | p)`` is
  the non-latent PCFG lexicon (relative frequencies while training; the smoothed PCFG lexicon with
  unknown-word signatures when parsing), so only the latent *ratio* ``q(k | p, h) / P(k | p)`` is
  learnt and stored (the lexical table of :class:`~fastspectral.lpcfg.spectral.SpectralLPCFG`).

E-step: inside-outside over the gold tree with the latent annotations (compiled with Numba,
parallel over trees; each inside/outside vector is rescaled to max 1 with a log scale so long
sentences do not underflow), then expected rule counts per rule (parallel over rules, race free).
M-step: relative frequencies of the expected counts, optionally smoothed towards the average over
the parent's states (Petrov et al. 2006: ``t' = (1 - alpha) t + alpha * mean_h1 t``; ``alpha = 0``
is exact EM and the training log-likelihood never decreases).

Initialisation: ``init="random"`` spreads the PCFG's relative frequencies uniformly over the
latent states and multiplies every entry by ``1 + noise * U(-1, 1)`` (symmetry breaking);
``init="pivot"`` starts from the estimates of :class:`~fastspectral.lpcfg.pivot.PivotLPCFG`
("Pivot+EM", Cohen & Collins 2014, section 6.3) mixed with ``init_mix`` of the uniform spread so
no entry is exactly zero (EM cannot revive a zero).

Parsing is the spectral model's: coarse-to-fine pruning with the plain PCFG, the compiled tensor
inside-outside over the surviving items, max-recall decoding (see
:class:`~fastspectral.lpcfg.spectral.SpectralLPCFG`).  Marginals are never negative here.
"""
from __future__ import annotations

import math
import time

import numba
import numpy as np
from numba import njit, prange

from .params import LatentGrammar, default_threads
from .spectral import SpectralLPCFG

__all__ = ["EMLPCFG", "LatentLayout", "LatentParams", "LatentModelBase", "e_step", "m_step",
           "uniform_counts", "brute_force_counts"]



# ================================================================================================
# compiled kernels
# ================================================================================================
@njit(parallel=True, fastmath=True, cache=True)
def _inside_outside(tree_ptr, label, left, right, rule, urule, lexrow, leaflogp, m, aoff, toff, T,
                    uoff, U, soff, c1, loff, L, alpha, beta, sa, sb, logZ):  # pragma: no cover
    """Scaled inside (``alpha``, log scale ``sa``) and outside (``beta``, ``sb``) of every node."""
    nt = tree_ptr.shape[0] - 1
    for t in prange(nt):
        n0 = tree_ptr[t]
        n1 = tree_ptr[t + 1]
        ok = True
        for n in range(n1 - 1, n0 - 1, -1):
            a = label[n]
            ma = m[a]
            o = aoff[n]
            if lexrow[n] >= 0:
                lo = loff[lexrow[n]]
                for h in range(ma):
                    alpha[o + h] = L[lo + h]
                s = leaflogp[n]
            elif right[n] >= 0:
                lc = left[n]
                rc = right[n]
                mb = m[label[lc]]
                mc = m[label[rc]]
                ol = aoff[lc]
                orr = aoff[rc]
                base = toff[rule[n]]
                for h1 in range(ma):
                    acc = 0.0
                    for h2 in range(mb):
                        tb = base + (h1 * mb + h2) * mc
                        inner = 0.0
                        for h3 in range(mc):
                            inner += T[tb + h3] * alpha[orr + h3]
                        acc += alpha[ol + h2] * inner
                    alpha[o + h1] = acc
                s = sa[lc] + sa[rc]
            else:
                lc = left[n]
                mb = m[label[lc]]
                ol = aoff[lc]
                base = uoff[urule[n]]
                for h1 in range(ma):
                    acc = 0.0
                    for h2 in range(mb):
                        acc += U[base + h1 * mb + h2] * alpha[ol + h2]
                    alpha[o + h1] = acc
                s = sa[lc]
            mx = 0.0
            for h in range(ma):
                if alpha[o + h] > mx:
                    mx = alpha[o + h]
            if mx > 0.0:
                for h in range(ma):
                    alpha[o + h] /= mx
                s += math.log(mx)
            else:
                ok = False
            sa[n] = s
        a = label[n0]
        o = aoff[n0]
        z = 0.0
        for h in range(m[a]):
            z += c1[soff[a] + h] * alpha[o + h]
        if not ok or not (z > 0.0):
            logZ[t] = -np.inf
            continue
        logZ[t] = math.log(z) + sa[n0]
        # outside, preorder (a parent precedes its children)
        mx = 0.0
        for h in range(m[a]):
            beta[o + h] = c1[soff[a] + h]
            if beta[o + h] > mx:
                mx = beta[o + h]
        for h in range(m[a]):
            beta[o + h] /= mx
        sb[n0] = math.log(mx)
        for n in range(n0, n1):
            if lexrow[n] >= 0:
                continue
            ma = m[label[n]]
            o = aoff[n]
            if right[n] >= 0:
                lc = left[n]
                rc = right[n]
                mb = m[label[lc]]
                mc = m[label[rc]]
                ol = aoff[lc]
                orr = aoff[rc]
                base = toff[rule[n]]
                for h in range(mb):
                    beta[ol + h] = 0.0
                for h in range(mc):
                    beta[orr + h] = 0.0
                for h1 in range(ma):
                    bh = beta[o + h1]
                    if bh == 0.0:
                        continue
                    for h2 in range(mb):
                        tb = base + (h1 * mb + h2) * mc
                        w = bh * alpha[ol + h2]
                        acc = 0.0
                        for h3 in range(mc):
                            tv = T[tb + h3]
                            acc += tv * alpha[orr + h3]
                            beta[orr + h3] += w * tv
                        beta[ol + h2] += bh * acc
                sl = sb[n] + sa[rc]
                sr = sb[n] + sa[lc]
                mx = 0.0
                for h in range(mb):
                    if beta[ol + h] > mx:
                        mx = beta[ol + h]
                if mx > 0.0:
                    for h in range(mb):
                        beta[ol + h] /= mx
                    sb[lc] = sl + math.log(mx)
                else:
                    sb[lc] = -np.inf
                mx = 0.0
                for h in range(mc):
                    if beta[orr + h] > mx:
                        mx = beta[orr + h]
                if mx > 0.0:
                    for h in range(mc):
                        beta[orr + h] /= mx
                    sb[rc] = sr + math.log(mx)
                else:
                    sb[rc] = -np.inf
            else:
                lc = left[n]
                mb = m[label[lc]]
                ol = aoff[lc]
                base = uoff[urule[n]]
                for h2 in range(mb):
                    acc = 0.0
                    for h1 in range(ma):
                        acc += U[base + h1 * mb + h2] * beta[o + h1]
                    beta[ol + h2] = acc
                mx = 0.0
                for h in range(mb):
                    if beta[ol + h] > mx:
                        mx = beta[ol + h]
                if mx > 0.0:
                    for h in range(mb):
                        beta[ol + h] /= mx
                    sb[lc] = sb[n] + math.log(mx)
                else:
                    sb[lc] = -np.inf


@njit(parallel=True, fastmath=True, cache=True)
def _binary_counts(rptr, rnodes, tree_of, logZ, label, left, right, m, aoff, alpha, beta, sa, sb,
                   toff, T, out):  # pragma: no cover
    """Expected counts of every binary tensor entry (parallel over rules)."""
    R = rptr.shape[0] - 1
    for r in prange(R):
        k0 = rptr[r]
        k1 = rptr[r + 1]
        base = toff[r]
        size = toff[r + 1] - base
        for i in range(size):
            out[base + i] = 0.0
        if k0 == k1:
            continue
        n = rnodes[k0]
        ma = m[label[n]]
        mb = m[label[left[n]]]
        mc = m[label[right[n]]]
        for k in range(k0, k1):
            n = rnodes[k]
            lz = logZ[tree_of[n]]
            if lz == -np.inf:
                continue
            lc = left[n]
            rc = right[n]
            coef = math.exp(sb[n] + sa[lc] + sa[rc] - lz)
            if coef == 0.0:
                continue
            o = aoff[n]
            ol = aoff[lc]
            orr = aoff[rc]
            for h1 in range(ma):
                w1 = coef * beta[o + h1]
                if w1 == 0.0:
                    continue
                for h2 in range(mb):
                    w2 = w1 * alpha[ol + h2]
                    tb = base + (h1 * mb + h2) * mc
                    for h3 in range(mc):
                        out[tb + h3] += w2 * alpha[orr + h3]
        for i in range(size):
            out[base + i] *= T[base + i]


@njit(cache=True)
def _other_counts(un_nodes, leaf_nodes, root_nodes, tree_of, logZ, label, left, urule, lexrow, m,
                  aoff, alpha, beta, sa, sb, uoff, U, soff, c1, outU, outL, loff,
                  outR):  # pragma: no cover
    """Expected counts of unary matrices, lexical classes and root states (serial)."""
    outU[:] = 0.0
    outL[:] = 0.0
    outR[:] = 0.0
    for k in range(un_nodes.shape[0]):
        n = un_nodes[k]
        lz = logZ[tree_of[n]]
        if lz == -np.inf:
            continue
        lc = left[n]
        coef = math.exp(sb[n] + sa[lc] - lz)
        ma = m[label[n]]
        mb = m[label[lc]]
        base = uoff[urule[n]]
        o = aoff[n]
        ol = aoff[lc]
        for h1 in range(ma):
            w1 = coef * beta[o + h1]
            for h2 in range(mb):
                outU[base + h1 * mb + h2] += w1 * alpha[ol + h2] * U[base + h1 * mb + h2]
    for k in range(leaf_nodes.shape[0]):
        n = leaf_nodes[k]
        lz = logZ[tree_of[n]]
        if lz == -np.inf:
            continue
        coef = math.exp(sa[n] + sb[n] - lz)
        o = aoff[n]
        lo = loff[lexrow[n]]
        for h in range(m[label[n]]):
            outL[lo + h] += coef * alpha[o + h] * beta[o + h]
    for k in range(root_nodes.shape[0]):
        n = root_nodes[k]
        lz = logZ[tree_of[n]]
        if lz == -np.inf:
            continue
        a = label[n]
        coef = math.exp(sa[n] - lz)
        o = aoff[n]
        for h in range(m[a]):
            outR[soff[a] + h] += coef * alpha[o + h] * c1[soff[a] + h]


@njit(cache=True)
def _normalise_block(out, counts, base, ma, inner, denom, doff, smooth):  # pragma: no cover
    """out[base + h1 * inner + i] = counts / denom[doff + h1], smoothed over the live states h1."""
    alive = 0
    for h1 in range(ma):
        d = denom[doff + h1]
        if d > 0.0:
            alive += 1
        for i in range(inner):
            out[base + h1 * inner + i] = counts[base + h1 * inner + i] / d if d > 0.0 else 0.0
    if smooth > 0.0 and ma > 1 and alive > 0:
        for i in range(inner):
            mean = 0.0
            for h1 in range(ma):
                mean += out[base + h1 * inner + i]
            mean /= alive
            for h1 in range(ma):
                if denom[doff + h1] > 0.0:
                    out[base + h1 * inner + i] = ((1.0 - smooth) * out[base + h1 * inner + i]
                                                  + smooth * mean)


@njit(cache=True)
def _normalise(bin_parent, bin_left, bin_right, un_parent, un_child, lex_sym, row_frac, m, soff,
               toff, uoff, loff, cT, cU, cL, cR, n_roots, smooth, T, U, L, c1):  # pragma: no cover
    """M-step: relative frequencies of the counts per (symbol, state), smoothed over states."""
    denom = np.zeros(soff[-1])
    for r in range(bin_parent.shape[0]):
        a = bin_parent[r]
        ma = m[a]
        inner = m[bin_left[r]] * m[bin_right[r]]
        base = toff[r]
        for h1 in range(ma):
            s = 0.0
            for i in range(inner):
                s += cT[base + h1 * inner + i]
            denom[soff[a] + h1] += s
    for u in range(un_parent.shape[0]):
        a = un_parent[u]
        ma = m[a]
        mb = m[un_child[u]]
        base = uoff[u]
        for h1 in range(ma):
            s = 0.0
            for i in range(mb):
                s += cU[base + h1 * mb + i]
            denom[soff[a] + h1] += s
    for row in range(lex_sym.shape[0]):
        p = lex_sym[row]
        for h in range(m[p]):
            denom[soff[p] + h] += cL[loff[row] + h]
    # binary tensors and unary matrices: rows (h1, .) of each block divided by the parent's
    # per-state total, then smoothed toward the mean over the parent's live states
    for r in range(bin_parent.shape[0]):
        _normalise_block(T, cT, toff[r], m[bin_parent[r]], m[bin_left[r]] * m[bin_right[r]],
                         denom, soff[bin_parent[r]], smooth)
    for u in range(un_parent.shape[0]):
        _normalise_block(U, cU, uoff[u], m[un_parent[u]], m[un_child[u]], denom,
                         soff[un_parent[u]], smooth)
    # lexical classes: q(k | p, h) / P(k | p)
    for row in range(lex_sym.shape[0]):
        p = lex_sym[row]
        mp = m[p]
        lo = loff[row]
        alive = 0
        mean = 0.0
        for h in range(mp):
            d = denom[soff[p] + h]
            if d > 0.0:
                L[lo + h] = cL[lo + h] / d
                alive += 1
                mean += L[lo + h]
            else:
                L[lo + h] = 0.0
        if smooth > 0.0 and mp > 1 and alive > 0:
            mean /= alive
            for h in range(mp):
                if denom[soff[p] + h] > 0.0:
                    L[lo + h] = (1.0 - smooth) * L[lo + h] + smooth * mean
        for h in range(mp):
            L[lo + h] /= row_frac[row]
    for i in range(c1.shape[0]):
        c1[i] = cR[i] / n_roots


# ================================================================================================
# layout and parameters
# ================================================================================================
class LatentLayout:
    """Index arrays tying a treebank's nodes to flat latent parameter arrays.

    Built from :class:`~fastspectral.lpcfg.features.NodeData` ``nodes``, the PCFG grammar ``g``
    and the state counts ``m`` (per symbol).  Offsets: ``toff`` (binary tensors, rule-major,
    entry ``(h1, h2, h3)`` at ``toff[r] + (h1 * m_b + h2) * m_c + h3``), ``uoff`` (unary
    matrices), ``soff`` (per-symbol state blocks: roots and normalisers), ``loff`` (lexical-class
    rows ``(p, k)``), ``aoff`` (per-node inside/outside vectors).
    """

    def __init__(self, nodes, g, m, rare_threshold: int = 1):
        self.nodes = nodes
        self.g = g
        self.m = np.ascontiguousarray(m, dtype=np.int64)
        m64 = self.m
        S = g.n_symbols
        self.S = S
        self.bin_parent = g.bin_parent.astype(np.int64)
        self.bin_left = g.bin_left.astype(np.int64)
        self.bin_right = g.bin_right.astype(np.int64)
        self.un_parent = g.un_parent.astype(np.int64)
        self.un_child = g.un_child.astype(np.int64)
        self.toff = _offsets(m64[self.bin_parent] * m64[self.bin_left] * m64[self.bin_right])
        self.uoff = _offsets(m64[self.un_parent] * m64[self.un_child])
        self.soff = _offsets(m64)
        N = nodes.n_nodes
        self.N = N
        self.label = nodes.label.astype(np.int64)
        self.left = nodes.left.astype(np.int64)
        self.right = nodes.right.astype(np.int64)
        self.rule = nodes.rule.astype(np.int64)
        self.urule = nodes.urule.astype(np.int64)
        self.tree_of = nodes.tree.astype(np.int64)
        self.n_trees = int(self.tree_of.max()) + 1 if N else 0
        self.tree_ptr = _offsets(np.bincount(self.tree_of, minlength=self.n_trees))
        self.aoff = _offsets(m64[self.label])
        # lexical classes: the word when seen more than rare_threshold times, else "rare" (= V)
        V = len(nodes.vocab)
        self.V = V
        pre = np.flatnonzero(nodes.word >= 0)
        self.leaf_nodes = pre.astype(np.int64)
        wid = nodes.word[pre].astype(np.int64)
        self.rare_word = nodes.word_count <= rare_threshold
        cls = np.where(self.rare_word[wid], V, wid)
        p = self.label[pre]
        key = p * (V + 1) + cls
        ukey, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
        self.lex_key = ukey
        self.lex_sym = (ukey // (V + 1)).astype(np.int64)
        self.lex_cls = (ukey % (V + 1)).astype(np.int64)
        self.lex_count = cnt.astype(np.float64)
        self.tag_count = np.bincount(p, minlength=S).astype(np.float64)
        self.row_frac = self.lex_count / self.tag_count[self.lex_sym]
        self.loff = _offsets(m64[self.lex_sym])
        self.lexrow = np.full(N, -1, dtype=np.int64)
        self.lexrow[pre] = inv
        # log P_mle(w | p) of every leaf (a constant of the likelihood)
        pw_key, pw_inv, pw_cnt = np.unique(p * (V + 1) + wid, return_inverse=True,
                                           return_counts=True)
        self.leaflogp = np.zeros(N)
        self.leaflogp[pre] = np.log(pw_cnt[pw_inv] / self.tag_count[p])
        self.pair_key = pw_key                       # (p, w) pairs of the training data
        self.pair_count = pw_cnt.astype(np.int64)
        # nodes grouped by rule
        b = np.flatnonzero(self.rule >= 0)
        order = b[np.argsort(self.rule[b], kind="stable")]
        self.rptr = _offsets(np.bincount(self.rule[b], minlength=g.n_binary))
        self.rnodes = order.astype(np.int64)
        self.un_nodes = np.flatnonzero(self.urule >= 0).astype(np.int64)
        self.root_nodes = np.flatnonzero(nodes.parent < 0).astype(np.int64)
        self.sym_count = np.bincount(self.label, minlength=S).astype(np.float64)
        self.bin_count = np.bincount(self.rule[b], minlength=g.n_binary).astype(np.float64)
        u = self.un_nodes
        self.un_count = np.bincount(self.urule[u], minlength=len(self.un_parent)).astype(np.float64)
        self.root_count = np.bincount(self.label[self.root_nodes], minlength=S).astype(np.float64)

    def zeros(self) -> "LatentParams":
        """All-zero parameter (or count) arrays in this layout."""
        return LatentParams(np.zeros(self.toff[-1]), np.zeros(self.uoff[-1]),
                            np.zeros(self.loff[-1]), np.zeros(self.soff[-1]))


def _offsets(sizes) -> np.ndarray:
    out = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


class LatentParams:
    """Flat parameters (or expected counts) in a :class:`LatentLayout`: ``T`` binary tensors,
    ``U`` unary matrices, ``L`` lexical-class ratios ``q(k | p, h) / P(k | p)`` (counts: expected
    class counts), ``c1`` root vectors ``pi(a, h)`` (all symbols, ``soff`` blocks)."""

    def __init__(self, T, U, L, c1):
        self.T = np.ascontiguousarray(T, dtype=np.float64)
        self.U = np.ascontiguousarray(U, dtype=np.float64)
        self.L = np.ascontiguousarray(L, dtype=np.float64)
        self.c1 = np.ascontiguousarray(c1, dtype=np.float64)

    def copy(self) -> "LatentParams":
        """A deep copy."""
        return LatentParams(self.T.copy(), self.U.copy(), self.L.copy(), self.c1.copy())

    def mix(self, other: "LatentParams", w: float) -> "LatentParams":
        """``(1 - w) * self + w * other`` (stays normalised when both are)."""
        return LatentParams((1 - w) * self.T + w * other.T, (1 - w) * self.U + w * other.U,
                            (1 - w) * self.L + w * other.L, (1 - w) * self.c1 + w * other.c1)


def _set_threads(jobs):
    n = min(default_threads(jobs), numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(max(1, n))


def e_step(layout: LatentLayout, params: LatentParams, jobs=None):
    """Expected counts under ``params`` (a :class:`LatentParams` of counts) and the total
    log-likelihood of the training trees (``-inf`` when a tree has probability 0)."""
    lay = layout
    _set_threads(jobs)
    tot = int(lay.aoff[-1])
    alpha = np.zeros(tot)
    beta = np.zeros(tot)
    sa = np.zeros(lay.N)
    sb = np.zeros(lay.N)
    logZ = np.zeros(lay.n_trees)
    _inside_outside(lay.tree_ptr, lay.label, lay.left, lay.right, lay.rule, lay.urule, lay.lexrow,
                    lay.leaflogp, lay.m, lay.aoff, lay.toff, params.T, lay.uoff, params.U,
                    lay.soff, params.c1, lay.loff, params.L, alpha, beta, sa, sb, logZ)
    counts = lay.zeros()
    _binary_counts(lay.rptr, lay.rnodes, lay.tree_of, logZ, lay.label, lay.left, lay.right, lay.m,
                   lay.aoff, alpha, beta, sa, sb, lay.toff, params.T, counts.T)
    _other_counts(lay.un_nodes, lay.leaf_nodes, lay.root_nodes, lay.tree_of, logZ, lay.label,
                  lay.left, lay.urule, lay.lexrow, lay.m, lay.aoff, alpha, beta, sa, sb, lay.uoff,
                  params.U, lay.soff, params.c1, counts.U, counts.L, lay.loff, counts.c1)
    return counts, float(logZ.sum()), logZ


def m_step(layout: LatentLayout, counts: LatentParams, smooth: float = 0.0) -> LatentParams:
    """Normalised parameters from expected ``counts`` (smoothing ``smooth`` over parent states)."""
    lay = layout
    out = lay.zeros()
    _normalise(lay.bin_parent, lay.bin_left, lay.bin_right, lay.un_parent, lay.un_child,
               lay.lex_sym, lay.row_frac, lay.m, lay.soff, lay.toff, lay.uoff, lay.loff,
               counts.T, counts.U, counts.L, counts.c1, float(max(lay.n_trees, 1)), float(smooth),
               out.T, out.U, out.L, out.c1)
    return out


def uniform_counts(layout: LatentLayout, noise: float = 0.0, seed=0) -> LatentParams:
    """Counts that spread the treebank's rule counts uniformly over the latent states, times
    ``1 + noise * U(-1, 1)`` per entry; ``m_step`` of these is the (randomised) PCFG."""
    lay = layout
    m = lay.m
    rng = np.random.default_rng(seed)
    c = lay.zeros()
    bl, br = lay.bin_left, lay.bin_right
    per = lay.bin_count / (m[bl] * m[br])
    c.T[:] = np.repeat(per, np.diff(lay.toff))
    c.U[:] = np.repeat(lay.un_count / m[lay.un_child], np.diff(lay.uoff))
    c.L[:] = np.repeat(lay.lex_count, np.diff(lay.loff))
    c.c1[:] = np.repeat(lay.root_count / np.maximum(m, 1), m)
    if noise > 0:
        for arr in (c.T, c.U, c.L, c.c1):
            arr *= 1.0 + noise * rng.uniform(-1.0, 1.0, arr.shape[0])
    return c


def brute_force_counts(layout: LatentLayout, params: LatentParams):
    """Reference E-step: enumerate every joint latent assignment of every (tiny) tree.

    Returns ``(log_likelihood, counts)`` exactly like :func:`e_step`.  Exponential in the number
    of nodes: tests only.
    """
    import itertools

    lay = layout
    counts = lay.zeros()
    total_ll = 0.0
    for tree in range(lay.n_trees):
        n0, n1 = int(lay.tree_ptr[tree]), int(lay.tree_ptr[tree + 1])
        nodes = list(range(n0, n1))
        sizes = [int(lay.m[lay.label[n]]) for n in nodes]
        acc = lay.zeros()
        total = 0.0
        for hs in itertools.product(*[range(k) for k in sizes]):
            st = dict(zip(nodes, hs))
            a = lay.label[n0]
            w = params.c1[lay.soff[a] + st[n0]]
            idx = [("c1", lay.soff[a] + st[n0])]
            for n in nodes:
                if lay.lexrow[n] >= 0:
                    i = lay.loff[lay.lexrow[n]] + st[n]
                    w *= params.L[i] * math.exp(lay.leaflogp[n])
                    idx.append(("L", i))
                    continue
                mb = lay.m[lay.label[lay.left[n]]]
                if lay.right[n] >= 0:
                    mc = lay.m[lay.label[lay.right[n]]]
                    i = lay.toff[lay.rule[n]] + (st[n] * mb + st[lay.left[n]]) * mc \
                        + st[lay.right[n]]
                    w *= params.T[i]
                    idx.append(("T", i))
                else:
                    i = lay.uoff[lay.urule[n]] + st[n] * mb + st[lay.left[n]]
                    w *= params.U[i]
                    idx.append(("U", i))
            total += w
            for name, i in idx:
                getattr(acc, name)[i] += w
        total_ll += math.log(total)
        for name in ("T", "U", "L", "c1"):
            getattr(counts, name)[:] += getattr(acc, name) / total
    return total_ll, counts


# ================================================================================================
# models
# ================================================================================================
class LatentModelBase(SpectralLPCFG):
    """Shared machinery of the probabilistic L-PCFG learners (EM, pivot): state counts, layout,
    conversion of :class:`LatentParams` into the spectral model's parsing arrays.

    Subclasses implement ``_learn(layout) -> LatentParams``; :meth:`fit` (inherited) prepares the
    treebank and the PCFG and calls ``_estimate``.
    """

    model_kind = "latent-lpcfg"

    def __init__(self, n_states=16, n_states_pre=None, v=1, h=0, tag_parent=False, min_count=20,
                 rare_threshold=1, prune_threshold=1e-4, coarse_threshold=1e-3, seed=0,
                 jobs=None, state_map=None):
        super().__init__(n_states=n_states, n_states_pre=n_states_pre, v=v, h=h,
                         tag_parent=tag_parent, min_count=min_count, lexicon="pcfg",
                         prune_threshold=prune_threshold, coarse_threshold=coarse_threshold,
                         seed=seed, jobs=jobs)
        self.rare_threshold = rare_threshold
        self.state_map = state_map

    def get_params(self) -> dict:
        """Constructor arguments."""
        return {"n_states": self.n_states, "n_states_pre": self.n_states_pre, "v": self.v,
                "h": self.h, "tag_parent": self.tag_parent, "min_count": self.min_count,
                "rare_threshold": self.rare_threshold, "prune_threshold": self.prune_threshold,
                "coarse_threshold": self.coarse_threshold, "seed": self.seed, "jobs": self.jobs,
                "state_map": self.state_map}

    def _validate(self):
        super()._validate()
        if not isinstance(self.min_count, (int, np.integer)) or self.min_count < 1:
            raise ValueError(f"min_count must be an integer >= 1, got {self.min_count!r}")
        if not isinstance(self.rare_threshold, (int, np.integer)) or self.rare_threshold < 0:
            raise ValueError(f"rare_threshold must be an integer >= 0, got {self.rare_threshold!r}")

    def state_counts(self, nodes, g) -> np.ndarray:
        """``m_a`` per symbol: ``n_states`` (pre-terminals ``n_states_pre``) when the symbol has
        at least ``min_count`` training nodes, else 1; ``state_map`` (optional dict
        ``{symbol: m}``, for experiments) overrides single symbols."""
        counts = np.bincount(nodes.label, minlength=g.n_symbols)
        target = np.where(g.is_preterminal, int(self.n_states_pre or self.n_states),
                          int(self.n_states))
        m = np.where(counts >= self.min_count, target, 1).astype(np.int64)
        for sym, k in (self.state_map or {}).items():
            if sym in g.sym_index:
                m[g.sym_index[sym]] = int(k)
        return m

    def _estimate(self, nodes, g, n_trees):
        m = self.state_counts(nodes, g)
        layout = LatentLayout(nodes, g, m, self.rare_threshold)
        self.layout_ = layout
        params = self._learn(layout)
        self._set_params(layout, params)
        del self.layout_

    def _learn(self, layout: LatentLayout) -> LatentParams:  # pragma: no cover - abstract
        raise NotImplementedError

    def _set_params(self, layout: LatentLayout, params: LatentParams):
        """Install ``params`` as the parsing arrays of the spectral model (``lpcfg_``, lexicon)."""
        lay = layout
        g = lay.g
        nodes = lay.nodes
        m = lay.m
        roots = {int(a): params.c1[lay.soff[a]:lay.soff[a + 1]]
                 for a in np.flatnonzero(lay.root_count > 0)}
        self.lpcfg_ = LatentGrammar(m, g.bin_parent, g.bin_left, g.bin_right, params.T,
                                    g.un_parent, g.un_child, params.U, roots)
        self.params_ = params
        # lexical table: class rows, then a neutral row (ratio 1) per tag without a rare class
        V = lay.V
        self.vocab_ = list(nodes.vocab)
        self.word_index_ = {w: i for i, w in enumerate(self.vocab_)}
        pk = lay.pair_key
        psym = pk // (V + 1)
        pw = pk % (V + 1)
        cls = np.where(lay.rare_word[pw], V, pw)
        row = np.searchsorted(lay.lex_key, psym * (V + 1) + cls)
        table = [params.L]
        pos = int(lay.loff[-1])
        rare_off = np.full(g.n_symbols, -1, dtype=np.int64)
        rare_rows = np.flatnonzero(lay.lex_cls == V)
        rare_off[lay.lex_sym[rare_rows]] = lay.loff[rare_rows]
        for p in np.flatnonzero(g.is_preterminal):
            if rare_off[p] < 0:
                rare_off[p] = pos
                table.append(np.ones(int(m[p])))
                pos += int(m[p])
        self.lex_keys_ = pk.astype(np.int64)
        self.lex_off_ = lay.loff[row].astype(np.int64)
        self.lex_count_ = lay.pair_count.astype(np.int64)
        self.lex_rare_off_ = rare_off
        self.lex_table_ = np.concatenate(table)
        self.tag_count_ = lay.tag_count.astype(np.int64)
        # per-word scale of the parser: average log rule probability per token (as the spectral)
        bn = np.flatnonzero(nodes.rule >= 0)
        un = np.flatnonzero(nodes.urule >= 0)
        rootn = np.flatnonzero(nodes.parent < 0)
        lp = np.log(np.maximum(g.bin_prob[nodes.rule[bn]], 1e-300)).sum()
        lp += np.log(np.maximum(g.un_prob[nodes.urule[un]], 1e-300)).sum()
        lp += np.log(np.maximum(g.root_prob[nodes.label[rootn]], 1e-300)).sum()
        self.log_rule_per_word_ = float(lp / max(1, nodes.tags.shape[0]))
        self.states_ = m.astype(np.int32)
        self.singular_values_ = {}
        self.sym_counts_ = lay.sym_count.astype(np.int64)
        self._coarse_lg = None

    def log_likelihood(self, trees) -> float:
        """Total log-probability of treebank ``trees`` under the model (same preparation and
        lexicon as parsing: the PCFG's smoothed ``P(w | p)`` times the latent ratios)."""
        return float(sum(math.log(max(self.tree_probability(t), 1e-320)) for t in trees))


class EMLPCFG(LatentModelBase):
    """L-PCFG trained by EM on gold skeletal trees (see the module docstring).

    Parameters (besides those of :class:`LatentModelBase`)
    ----------
    iterations : number of EM iterations; None (default): 50 from a random start, 4 from the
        pivot start (where the WSJ-sample dev F1 peaks: EM 40-60, Pivot+EM 1-4).
    init : ``"random"`` (PCFG spread over the states with multiplicative noise) or ``"pivot"``
        (Pivot+EM: start from :class:`~fastspectral.lpcfg.pivot.PivotLPCFG`'s estimates).
    noise : symmetry-breaking noise of the random initialisation.
    init_mix : weight of the uniform spread mixed into a pivot initialisation.
    smoothing : ``alpha`` of the M-step smoothing over parent states (0: exact EM).
    tol : stop when the relative log-likelihood gain of an iteration falls below ``tol``
        (0: always run ``iterations``).
    pivot_options : keyword arguments of :class:`~fastspectral.lpcfg.pivot.PivotLPCFG` for
        ``init="pivot"``.

    ``fit(trees, callback=None)``: ``callback(iteration, model, loglik)`` is called after every
    iteration with the model ready to parse (return True to stop).  After fitting,
    ``history_`` lists ``(iteration, train log-likelihood before the M-step, seconds)``.
    """

    model_kind = "em-lpcfg"

    def __init__(self, n_states=16, iterations=None, init="random", noise=0.2, init_mix=0.01,
                 smoothing=0.1, tol=0.0, pivot_options=None, n_states_pre=None, v=1, h=0,
                 tag_parent=False, min_count=20, rare_threshold=1, prune_threshold=1e-4,
                 coarse_threshold=1e-3, seed=0, jobs=None, state_map=None):
        super().__init__(n_states=n_states, n_states_pre=n_states_pre, v=v, h=h,
                         tag_parent=tag_parent, min_count=min_count,
                         rare_threshold=rare_threshold, prune_threshold=prune_threshold,
                         coarse_threshold=coarse_threshold, seed=seed, jobs=jobs,
                         state_map=state_map)
        self.iterations = iterations
        self.init = init
        self.noise = noise
        self.init_mix = init_mix
        self.smoothing = smoothing
        self.tol = tol
        self.pivot_options = pivot_options

    def get_params(self) -> dict:
        """Constructor arguments."""
        p = super().get_params()
        p.update({"iterations": self.iterations, "init": self.init, "noise": self.noise,
                  "init_mix": self.init_mix, "smoothing": self.smoothing, "tol": self.tol,
                  "pivot_options": self.pivot_options})
        return p

    def _validate(self):
        super()._validate()
        if self.iterations is not None and (not isinstance(self.iterations, (int, np.integer))
                                            or self.iterations < 0):
            raise ValueError(f"iterations must be None or an integer >= 0, got {self.iterations!r}")
        if self.init not in ("random", "pivot"):
            raise ValueError(f"init must be 'random' or 'pivot', got {self.init!r}")
        if not (0.0 <= self.smoothing < 1.0):
            raise ValueError(f"smoothing must be in [0, 1), got {self.smoothing!r}")
        if not (0.0 <= self.init_mix <= 1.0) or self.noise < 0 or self.tol < 0:
            raise ValueError("init_mix must be in [0, 1]; noise and tol must be >= 0")

    def fit(self, trees, callback=None):
        """Fit on treebank ``trees``; ``callback(iteration, model, loglik)`` after every EM
        iteration (the model can parse inside it; return True to stop early). Returns self."""
        self._callback = callback
        try:
            return super().fit(trees)
        finally:
            self._callback = None

    @property
    def n_iterations(self) -> int:
        """The number of EM iterations ``fit`` runs (``iterations`` or its default)."""
        if self.iterations is not None:
            return int(self.iterations)
        return 4 if self.init == "pivot" else 50

    def initial_params(self, layout: LatentLayout) -> LatentParams:
        """The starting point of EM (see ``init``)."""
        spread = m_step(layout, uniform_counts(layout))
        if self.init == "random":
            return m_step(layout, uniform_counts(layout, self.noise, self.seed))
        from .pivot import PivotLPCFG

        opts = dict(self.pivot_options or {})
        opts.setdefault("seed", self.seed)
        opts.setdefault("jobs", self.jobs)
        piv = PivotLPCFG(n_states=self.n_states, n_states_pre=self.n_states_pre, v=self.v,
                         h=self.h, tag_parent=self.tag_parent, min_count=self.min_count,
                         rare_threshold=self.rare_threshold, state_map=self.state_map, **opts)
        params = piv._learn(layout)
        self.pivot_seconds_ = piv.learn_seconds_
        return params.mix(spread, self.init_mix)

    def _learn(self, layout: LatentLayout) -> LatentParams:
        t0 = time.perf_counter()
        params = self.initial_params(layout)
        self.history_ = []
        prev = None
        cb = getattr(self, "_callback", None)
        for it in range(1, self.n_iterations + 1):
            counts, ll, _ = e_step(layout, params, self.jobs)
            params = m_step(layout, counts, self.smoothing)
            self.history_.append((it, ll, time.perf_counter() - t0))
            if cb is not None:
                self._set_params(layout, params)
                if cb(it, self, ll):
                    break
            if self.tol > 0 and prev is not None and np.isfinite(prev) and \
                    (ll - prev) <= self.tol * abs(prev):
                break
            prev = ll
        self.n_iter_ = len(self.history_)
        self.learn_seconds_ = time.perf_counter() - t0
        return params

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"EMLPCFG({params})"
