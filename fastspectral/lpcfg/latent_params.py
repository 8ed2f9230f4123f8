"""Flat latent parameters of an L-PCFG on a treebank, and the compiled E and M steps.

Shared by the probabilistic L-PCFG learners (:class:`~fastspectral.lpcfg.em.EMLPCFG`,
:class:`~fastspectral.lpcfg.pivot.PivotLPCFG`), which both start from the gold skeletal trees:

* :class:`LatentLayout` ties the nodes of a prepared treebank
  (:class:`~fastspectral.lpcfg.features.NodeData`) to flat parameter arrays, given the number of
  latent states ``m_a`` of every symbol (:func:`state_counts`);
* :class:`LatentParams` holds parameters (or expected counts) in that layout: binary tensors
  ``t(a -> b c, h2, h3 | a, h1)``, unary matrices ``t(a -> p, h2 | a, h1)``, lexical-class ratios
  ``q(k | p, h) / P(k | p)`` and root vectors ``pi(a, h)``;
* :func:`e_step` (inside-outside on the gold trees, Numba, parallel over trees; Matsuzaki et al.
  2005, section 3.1) and :func:`m_step` (relative frequencies, optionally smoothed toward the
  mean over the parent's states, Petrov et al. 2006) are EM's two steps; the M-step is also the
  normalisation of step 3 of the pivot method (Cohen & Collins 2014, section 6.1);
* :func:`latent_arrays` turns fitted :class:`LatentParams` into the parsing arrays of
  :class:`~fastspectral.lpcfg.latent.LatentPCFGBase`.

References
----------
Matsuzaki, Miyao, Tsujii (2005). Probabilistic CFG with latent annotations. ACL.
Petrov, Barrett, Thibaux, Klein (2006). Learning accurate, compact, and interpretable tree
annotation. COLING-ACL.
Cohen, Collins (2014). A provably correct learning algorithm for latent-variable PCFGs. ACL.

Kept as one module (about 790 lines): the flat parameter layout and the Numba E and M
steps that index it; apart, the kernels would lose sight of the offsets they read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from .._jit import njit, prange

from .features import nodes_by_rule
from .latent import LatentArrays, log_rule_per_word
from .params import LatentGrammar, block_offsets, default_threads

__all__ = ["RuleLayout", "LatentLayout", "LatentParams", "EStep", "e_step", "m_step",
           "uniform_counts", "state_counts", "symbol_states", "model_layout", "latent_arrays",
           "set_threads"]


# ================================================================================================
# compiled kernels
# ================================================================================================
@njit(inline="always")
def _scale_to_max(v, o, n):  # pragma: no cover
    """Rescale one inside or outside vector to max 1.

    Parameters
    ----------
    v : numpy.ndarray
        The flat vectors (``alpha`` or ``beta``).
    o : int
        Start of the vector in ``v``.
    n : int
        Its length (the node's latent states).

    Returns
    -------
    float
        The vector's maximum before rescaling; 0.0 when no entry is positive (the vector is
        then left as it is).  Inlined into the kernel (Numba IR), so the kernel's operations
        and their order, hence its results bit for bit, are those of the loops it replaces.
    """
    mx = 0.0
    for h in range(n):
        if v[o + h] > mx:
            mx = v[o + h]
    if mx > 0.0:
        for h in range(n):
            v[o + h] /= mx
    return mx


@njit(inline="always")
def _binary_node(n, label, left, right, rule, m, aoff, toff):  # pragma: no cover
    """Where the kernel finds what a binary node ``n`` reads: its children ``lc`` and ``rc``,
    their states ``mb`` and ``mc``, their vector offsets ``ol`` and ``orr``, and the offset
    ``base`` of its rule's tensor (integer loads, inlined)."""
    lc = left[n]
    rc = right[n]
    return lc, rc, m[label[lc]], m[label[rc]], aoff[lc], aoff[rc], toff[rule[n]]


@njit(inline="always")
def _unary_node(n, label, left, urule, m, aoff, uoff):  # pragma: no cover
    """What a unary node ``n`` reads: its child ``lc``, the child's states ``mb`` and vector
    offset ``ol``, and the offset ``base`` of its rule's matrix (integer loads, inlined)."""
    lc = left[n]
    return lc, m[label[lc]], aoff[lc], uoff[urule[n]]


@njit(parallel=True, fastmath=True, cache=True)
def _inside_outside(tree_ptr, label, left, right, rule, urule, lexrow, leaflogp, m, aoff, toff, T,
                    uoff, U, soff, c1, loff, L, alpha, beta, sa, sb, logZ):  # pragma: no cover
    """Scaled inside (``alpha``, log scale ``sa``) and outside (``beta``, ``sb``) of every node
    of gold skeletal trees with latent annotations (E-step of Matsuzaki et al. 2005, section 3.1;
    the inside/outside recursions of Cohen & Collins 2014, section 2 / figure 2, on one fixed
    tree):

    ``alpha(n, h1) = sum_{h2,h3} t(a -> b c, h2, h3 | a, h1) alpha(l, h2) alpha(r, h3)``,
    ``beta(l, h2) = sum_{h1,h3} beta(n, h1) t(..., h2, h3 | a, h1) alpha(r, h3)`` (likewise for
    the right child and unary rules), ``alpha(leaf, h) = q(k | p, h) / P(k | p)`` (times the
    constant ``P_mle(w | p)`` kept in the log scale), ``p(tree) = sum_h pi(a, h) alpha(root, h)``.
    Each vector is rescaled to max 1 with its log factor in ``sa`` / ``sb``; ``logZ[t]`` is the
    log-probability of tree ``t`` (``-inf`` when it is 0).  Parallel over trees."""
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
                lc, rc, mb, mc, ol, orr, base = _binary_node(n, label, left, right, rule, m,
                                                             aoff, toff)
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
                lc, mb, ol, base = _unary_node(n, label, left, urule, m, aoff, uoff)
                for h1 in range(ma):
                    acc = 0.0
                    for h2 in range(mb):
                        acc += U[base + h1 * mb + h2] * alpha[ol + h2]
                    alpha[o + h1] = acc
                s = sa[lc]
            mx = _scale_to_max(alpha, o, ma)
            if mx > 0.0:
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
                lc, rc, mb, mc, ol, orr, base = _binary_node(n, label, left, right, rule, m,
                                                             aoff, toff)
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
                mx = _scale_to_max(beta, ol, mb)
                if mx > 0.0:
                    sb[lc] = sl + math.log(mx)
                else:
                    sb[lc] = -np.inf
                mx = _scale_to_max(beta, orr, mc)
                if mx > 0.0:
                    sb[rc] = sr + math.log(mx)
                else:
                    sb[rc] = -np.inf
            else:
                lc, mb, ol, base = _unary_node(n, label, left, urule, m, aoff, uoff)
                for h2 in range(mb):
                    acc = 0.0
                    for h1 in range(ma):
                        acc += U[base + h1 * mb + h2] * beta[o + h1]
                    beta[ol + h2] = acc
                mx = _scale_to_max(beta, ol, mb)
                if mx > 0.0:
                    sb[lc] = sb[n] + math.log(mx)
                else:
                    sb[lc] = -np.inf


@njit(parallel=True, fastmath=True, cache=True)
def _binary_counts(rptr, rnodes, tree_of, logZ, label, left, right, m, aoff, alpha, beta, sa, sb,
                   toff, T, out):  # pragma: no cover
    """Expected counts of every binary tensor entry (parallel over rules, race free):
    ``E[count(a -> b c, h1, h2, h3)] = sum_n beta(n, h1) t(., h2, h3 | a, h1) alpha(l, h2)
    alpha(r, h3) / p(tree)`` over the nodes ``n`` using the rule (Matsuzaki et al. 2005,
    section 3.1; Petrov et al. 2006, section 2)."""
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
    """Expected counts of unary matrices, lexical classes and root states (serial): the
    posteriors ``beta(n, h1) u(h1, h2) alpha(child, h2) / p(tree)``, ``alpha(n, h) beta(n, h) /
    p(tree)`` of leaves and ``pi(a, h) alpha(root, h) / p(tree)`` (Matsuzaki et al. 2005)."""
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
def _add_row_sums(denom, doff, counts, base, rows, inner):  # pragma: no cover
    """denom[doff + h1] += sum_i counts[base + h1 * inner + i] for the ``rows`` rows ``h1`` of
    one block (a rule's expected counts, parent state first): the per-state totals of the
    parent that :func:`_normalise` divides by."""
    for h1 in range(rows):
        s = 0.0
        for i in range(inner):
            s += counts[base + h1 * inner + i]
        denom[doff + h1] += s


@njit(cache=True)
def _normalise(bin_parent, bin_left, bin_right, un_parent, un_child, lex_sym, row_frac, m, soff,
               toff, uoff, loff, cT, cU, cL, cR, n_roots, smooth, T, U, L, c1):  # pragma: no cover
    """M-step: relative frequencies of the expected counts per (symbol, state) (Matsuzaki et
    al. 2005, section 3.1), smoothed toward the mean over the parent's live states,
    ``t' = (1 - alpha) t + alpha * mean_h1 t`` (Petrov et al. 2006, section 2.3); the same
    normalisation is step 3 of the pivot method (Cohen & Collins 2014, section 6.1)."""
    denom = np.zeros(soff[-1])
    for r in range(bin_parent.shape[0]):
        a = bin_parent[r]
        _add_row_sums(denom, soff[a], cT, toff[r], m[a], m[bin_left[r]] * m[bin_right[r]])
    for u in range(un_parent.shape[0]):
        a = un_parent[u]
        _add_row_sums(denom, soff[a], cU, uoff[u], m[a], m[un_child[u]])
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
class RuleLayout:
    """The flat parameter blocks of a grammar's rules and symbols for given state counts.

    What :func:`m_step`, :func:`uniform_counts` and :func:`latent_arrays` read besides the
    lexical rows, which subclasses add (``loff``, ``lex_sym``, ...): the layout of one treebank
    (:class:`LatentLayout`) and the layout built from merged partition counts
    (:class:`~fastspectral.lpcfg.stats.GlobalLayout`).

    Parameters
    ----------
    g : Grammar
        The PCFG grammar of the prepared treebank (symbols and rules).
    m : array_like of int
        Latent states of every symbol (:func:`state_counts`).

    Attributes
    ----------
    g : Grammar
        The grammar.
    m : numpy.ndarray
        The state counts (int64).
    S : int
        Number of symbols.
    bin_parent, bin_left, bin_right, un_parent, un_child : numpy.ndarray
        The grammar's rules (int64).
    toff : numpy.ndarray
        Offsets of the binary tensors (rule-major, entry ``(h1, h2, h3)`` at
        ``toff[r] + (h1 * m_b + h2) * m_c + h3``).
    uoff : numpy.ndarray
        Offsets of the unary matrices.
    soff : numpy.ndarray
        Offsets of the per-symbol state blocks (roots and normalisers).
    """

    def __init__(self, g, m):
        self.g = g
        self.m = np.ascontiguousarray(m, dtype=np.int64)
        m64 = self.m
        self.S = g.n_symbols
        self.bin_parent = g.bin_parent.astype(np.int64)
        self.bin_left = g.bin_left.astype(np.int64)
        self.bin_right = g.bin_right.astype(np.int64)
        self.un_parent = g.un_parent.astype(np.int64)
        self.un_child = g.un_child.astype(np.int64)
        self.toff = block_offsets(m64[self.bin_parent] * m64[self.bin_left] * m64[self.bin_right])
        self.uoff = block_offsets(m64[self.un_parent] * m64[self.un_child])
        self.soff = block_offsets(m64)

    def _set_lexical_classes(self, pair_key, pair_count, vocab_size: int, rare_word):
        """Set the lexical-class rows ``(p, k)`` of the training (tag, word) pairs: ``k`` is
        the word, or ``vocab_size`` ("rare") for the words of ``rare_word``.

        Sets ``V``, ``rare_word``, ``lex_key``, ``lex_sym``, ``lex_cls``, ``lex_count`` (tokens
        of every row), ``tag_count`` (tokens of every symbol), ``row_frac``
        (``P(k | p)``) and ``loff`` (the rows' offsets).

        Parameters
        ----------
        pair_key : numpy.ndarray
            The pairs ``p * (vocab_size + 1) + w``.
        pair_count : numpy.ndarray
            Tokens of every pair.
        vocab_size : int
            Training words ``V``.
        rare_word : numpy.ndarray
            Per word id, whether it is rare.

        Returns
        -------
        numpy.ndarray
            The row of every pair.
        """
        V = vocab_size
        self.V = V
        self.rare_word = rare_word
        p = pair_key // (V + 1)
        w = pair_key % (V + 1)
        cls = np.where(rare_word[w], V, w)
        ukey, inv = np.unique(p * (V + 1) + cls, return_inverse=True)
        cnt = np.zeros(ukey.shape[0], dtype=np.int64)
        np.add.at(cnt, inv, pair_count)
        self.lex_key = ukey
        self.lex_sym = (ukey // (V + 1)).astype(np.int64)
        self.lex_cls = (ukey % (V + 1)).astype(np.int64)
        self.lex_count = cnt.astype(np.float64)
        tag_count = np.zeros(self.S, dtype=np.int64)
        np.add.at(tag_count, p, pair_count)
        self.tag_count = tag_count.astype(np.float64)
        self.row_frac = self.lex_count / self.tag_count[self.lex_sym]
        self.loff = block_offsets(self.m[self.lex_sym])
        return inv

    def zeros(self) -> "LatentParams":
        """All-zero parameter (or count) arrays in this layout (with the subclass's ``loff``)."""
        return LatentParams(np.zeros(self.toff[-1]), np.zeros(self.uoff[-1]),
                            np.zeros(self.loff[-1]), np.zeros(self.soff[-1]))


class LatentLayout(RuleLayout):
    """Index arrays tying a treebank's nodes to flat latent parameter arrays.

    Built from :class:`~fastspectral.lpcfg.features.NodeData` ``nodes``, the PCFG grammar ``g``
    and the state counts ``m`` (per symbol).  Offsets: ``toff``, ``uoff``, ``soff`` (the rule and
    symbol blocks of :class:`RuleLayout`), ``loff`` (lexical-class rows ``(p, k)``), ``aoff``
    (per-node inside/outside vectors).
    """

    def __init__(self, nodes, g, m, rare_threshold: int = 1):
        super().__init__(g, m)
        self.nodes = nodes
        m64 = self.m
        S = self.S
        N = nodes.n_nodes
        self.N = N
        self.label = nodes.label.astype(np.int64)
        self.left = nodes.left.astype(np.int64)
        self.right = nodes.right.astype(np.int64)
        self.rule = nodes.rule.astype(np.int64)
        self.urule = nodes.urule.astype(np.int64)
        self.tree_of = nodes.tree.astype(np.int64)
        self.n_trees = int(self.tree_of.max()) + 1 if N else 0
        self.tree_ptr = block_offsets(np.bincount(self.tree_of, minlength=self.n_trees))
        self.aoff = block_offsets(m64[self.label])
        # lexical classes: the word when seen more than rare_threshold times, else "rare" (= V)
        V = len(nodes.vocab)
        pre = np.flatnonzero(nodes.word >= 0)
        self.leaf_nodes = pre.astype(np.int64)
        wid = nodes.word[pre].astype(np.int64)
        p = self.label[pre]
        pw_key, pw_inv, pw_cnt = np.unique(p * (V + 1) + wid, return_inverse=True,
                                           return_counts=True)
        pair_row = self._set_lexical_classes(pw_key, pw_cnt, V,
                                             nodes.word_count <= rare_threshold)
        self.lexrow = np.full(N, -1, dtype=np.int64)
        self.lexrow[pre] = pair_row[pw_inv]
        # log P_mle(w | p) of every leaf (a constant of the likelihood)
        self.leaflogp = np.zeros(N)
        self.leaflogp[pre] = np.log(pw_cnt[pw_inv] / self.tag_count[p])
        self.pair_key = pw_key                       # (p, w) pairs of the training data
        self.pair_count = pw_cnt.astype(np.int64)
        # nodes grouped by rule
        bin_count, order, self.rptr = nodes_by_rule(self.rule, g.n_binary)
        self.rnodes = order.astype(np.int64)
        self.un_nodes = np.flatnonzero(self.urule >= 0).astype(np.int64)
        self.root_nodes = np.flatnonzero(nodes.parent < 0).astype(np.int64)
        self.sym_count = np.bincount(self.label, minlength=S).astype(np.float64)
        self.bin_count = bin_count.astype(np.float64)
        u = self.un_nodes
        self.un_count = np.bincount(self.urule[u], minlength=len(self.un_parent)).astype(np.float64)
        self.root_count = np.bincount(self.label[self.root_nodes], minlength=S).astype(np.float64)


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




@dataclass
class EStep:
    """Result of :func:`e_step`.

    Attributes
    ----------
    counts : LatentParams
        Expected counts of every parameter entry.
    log_likelihood : float
        Total log-probability of the training trees (``-inf`` when one has probability 0).
    tree_log_likelihood : numpy.ndarray
        Log-probability of every training tree.
    """

    counts: LatentParams
    log_likelihood: float
    tree_log_likelihood: np.ndarray


def set_threads(jobs) -> None:
    """Size Numba's thread pool for the kernels: ``jobs`` (``None``: the cores available),
    capped by ``NUMBA_NUM_THREADS``."""
    n = min(default_threads(jobs), numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(max(1, n))


def e_step(layout: LatentLayout, params: LatentParams, jobs=None) -> EStep:
    """E-step of EM: the expected counts under ``params`` and the training log-likelihood.

    Parameters
    ----------
    layout : LatentLayout
        The training treebank.
    params : LatentParams
        Normalised parameters.
    jobs : int, optional
        Numba threads (``None``: the cores available).

    Returns
    -------
    EStep
        ``counts`` (a :class:`LatentParams` of expected counts), ``log_likelihood`` (total,
        ``-inf`` when a tree has probability 0) and ``tree_log_likelihood`` (per tree).
    """
    lay = layout
    set_threads(jobs)
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
    return EStep(counts, float(logZ.sum()), logZ)


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




def state_counts(nodes, g, n_states: int, n_states_pre=None, min_count: int = 20,
                 state_map=None) -> np.ndarray:
    """Latent states ``m_a`` of every symbol.

    Parameters
    ----------
    nodes : NodeData
        The training nodes (:func:`~fastspectral.lpcfg.features.extract_nodes`).
    g : Grammar
        The PCFG grammar of the prepared treebank.
    n_states : int
        States of a phrasal (or intermediate) symbol seen at least ``min_count`` times.
    n_states_pre : int, optional
        States of such a pre-terminal (default: ``n_states``).
    min_count : int, default 20
        Symbols with fewer training nodes keep one state.
    state_map : dict, optional
        ``{symbol: m}`` overriding single symbols (for experiments).

    Returns
    -------
    numpy.ndarray
        ``m`` per symbol id (int64).
    """
    return symbol_states(np.bincount(nodes.label, minlength=g.n_symbols), g, n_states,
                         n_states_pre, min_count, state_map)


def model_layout(model, nodes, g) -> LatentLayout:
    """The :class:`LatentLayout` of a prepared treebank with the state counts
    (:func:`state_counts`) and the ``rare_threshold`` of the L-PCFG learner ``model``.

    Parameters
    ----------
    model : ProbabilisticLPCFGBase
        The learner (``n_states``, ``n_states_pre``, ``min_count``, ``state_map``,
        ``rare_threshold``).
    nodes : NodeData
        The training nodes.
    g : Grammar
        The PCFG grammar of the prepared treebank.

    Returns
    -------
    LatentLayout
    """
    m = state_counts(nodes, g, model.n_states, model.n_states_pre, model.min_count,
                     model.state_map)
    return LatentLayout(nodes, g, m, model.rare_threshold)


def symbol_states(counts, g, n_states: int, n_states_pre=None, min_count: int = 20,
                  state_map=None) -> np.ndarray:
    """Latent states ``m_a`` of every symbol from the symbols' training counts (what
    :func:`state_counts` computes from the nodes; the merged counts of partitions give the
    same).

    Parameters
    ----------
    counts : numpy.ndarray
        Training nodes of every symbol id.
    g, n_states, n_states_pre, min_count, state_map
        As :func:`state_counts`.

    Returns
    -------
    numpy.ndarray
        ``m`` per symbol id (int64).
    """
    target = np.where(g.is_preterminal, int(n_states_pre or n_states), int(n_states))
    m = np.where(counts >= min_count, target, 1).astype(np.int64)
    unknown = []
    for sym, k in (state_map or {}).items():
        if sym in g.sym_index:
            m[g.sym_index[sym]] = int(k)
        else:
            unknown.append(sym)
    if unknown:
        import warnings

        shown = ", ".join(repr(s) for s in sorted(unknown)[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        warnings.warn(f"state_map: {len(unknown)} symbols not in the grammar, ignored: "
                      f"{shown}{more}", stacklevel=2)
    return m


def latent_arrays(layout: LatentLayout, params: LatentParams) -> LatentArrays:
    """The parsing arrays of fitted probabilistic parameters.

    The binary tensors, unary matrices and root vectors become the
    :class:`~fastspectral.lpcfg.params.LatentGrammar`; the lexical table holds the class ratios
    ``q(k | p, h) / P(k | p)`` of every training (tag, word) pair (rare words share their tag's
    "rare" row) and a neutral row (ratio 1) for every tag without a rare class.
    """
    lay = layout
    g = lay.g
    nodes = lay.nodes
    m = lay.m
    roots = {int(a): params.c1[lay.soff[a]:lay.soff[a + 1]]
             for a in np.flatnonzero(lay.root_count > 0)}
    lg = LatentGrammar(m, g.bin_parent, g.bin_left, g.bin_right, params.T, g.un_parent,
                       g.un_child, params.U, roots)
    V = lay.V
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
    return LatentArrays(lpcfg=lg, vocab=list(nodes.vocab), lex_keys=pk.astype(np.int64),
                        lex_off=lay.loff[row].astype(np.int64),
                        lex_count=lay.pair_count.astype(np.int64), lex_rare_off=rare_off,
                        lex_table=np.concatenate(table), tag_count=lay.tag_count.astype(np.int64),
                        log_rule_per_word=log_rule_per_word(nodes, g),
                        sym_counts=lay.sym_count.astype(np.int64))
