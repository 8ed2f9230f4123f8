"""Compiled rule moments of the spectral L-PCFG estimate (Cohen et al. 2012, figure 4, step 4).

:func:`binary_rule_tensors` gives, for every binary rule at once, what
:func:`fastspectral.lpcfg.estimate.smoothed_triple` gives for one (the smoothed
``E_r[z (x) y_b (x) y_c]``, scaled by ``n_r / M_a``), in one pass of the compiled kernel
:func:`fastspectral._ext.lpcfg_features.binary_rule_tensors` over the nodes sorted by rule.
The NumPy loop over the ~7,000 rules of the WSJ sample spent most of its 0.5 CPU-s gathering
rows and calling small BLAS products; the kernel sums the same products node by node (equal up
to rounding).

The projections of all symbols live in two flat arrays, :class:`Projections`, whose per-symbol
blocks are the ``Y[a]`` / ``Z[a]`` matrices the rest of the estimate reads.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Projections", "binary_rule_tensors"]


class Projections:
    """Inside (``Y``) and outside (``Z``) projections of every node, one ``[M_a, m_a]`` block
    per symbol in two flat arrays: ``Y[a]`` / ``Z[a]`` are views of the blocks (rows: the nodes
    of ``a`` in label-sorted order), ``offsets[a]`` where they start."""

    def __init__(self, counts, m):
        counts = np.asarray(counts, dtype=np.int64)
        self.m = np.asarray(m, dtype=np.int64)
        sizes = counts * self.m
        self.offsets = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.offsets[1:])
        self.y_flat = np.zeros(int(self.offsets[-1]))
        self.z_flat = np.zeros(int(self.offsets[-1]))
        self.counts = counts
        S = counts.shape[0]
        self.Y = [None] * S
        self.Z = [None] * S
        for a in np.flatnonzero(counts > 0):
            self.Y[a] = self._block(self.y_flat, a)
            self.Z[a] = self._block(self.z_flat, a)

    def _block(self, flat, a):
        o = self.offsets
        return flat[o[a]:o[a + 1]].reshape(int(self.counts[a]), int(self.m[a]))

    def set(self, a, y, z) -> None:
        """Write symbol ``a``'s projections (``[M_a, m_a]`` each, ``m_a`` as given to the
        constructor)."""
        self.Y[a][...] = y
        self.Z[a][...] = z


def binary_rule_tensors(rules, order, rptr, nodes, grammar, proj: Projections, pos, weight,
                        C: float, toff, tensors, symbol_means=None) -> None:
    """Write ``weight[r] * S_r`` into ``tensors[toff[r]:toff[r+1]]`` for every rule of
    ``rules``: ``S_r`` the smoothed third moment of
    :func:`~fastspectral.lpcfg.estimate.smoothed_triple` over the nodes
    ``order[rptr[r]:rptr[r+1]]`` of rule ``r`` (``nodes``: the
    :class:`~fastspectral.lpcfg.features.NodeData`; ``pos``: each node's row in its label's
    block of ``proj``; ``symbol_means``: ``(mean_y, mean_z)``, every symbol's mean inside and
    outside projection, ``m[a]`` values a symbol in symbol order, for the three-level smoothing
    of ``moment_backoff="symbol"``; None: the two levels of ``"rule"``).  Every index is
    checked here; the kernel trusts them."""
    from .._ext.lpcfg_features import binary_rule_tensors as kernel

    rules = np.ascontiguousarray(rules, dtype=np.int64)
    order = np.ascontiguousarray(order, dtype=np.int64)
    rptr = np.ascontiguousarray(rptr, dtype=np.int64)
    pos = np.ascontiguousarray(pos, dtype=np.int64)
    toff = np.ascontiguousarray(toff, dtype=np.int64)
    weight = np.ascontiguousarray(weight, dtype=np.float64)
    pa = np.ascontiguousarray(grammar.bin_parent, dtype=np.int32)
    pb = np.ascontiguousarray(grammar.bin_left, dtype=np.int32)
    pc = np.ascontiguousarray(grammar.bin_right, dtype=np.int32)
    R = pa.shape[0]
    N = nodes.label.shape[0]
    m = proj.m
    if rptr.shape[0] != R + 1 or toff.shape[0] != R + 1 or weight.shape[0] < R:
        raise ValueError("rptr, toff and weight must have a row per binary rule")
    if not (tensors.flags.c_contiguous and tensors.dtype == np.float64):
        raise ValueError("tensors must be a contiguous float64 array")
    if toff[-1] > tensors.shape[0] or np.any(np.diff(toff) != m[pa] * m[pb] * m[pc]):
        raise ValueError("toff does not match the states of the rules")
    if rules.size:
        if rules.min() < 0 or rules.max() >= R:
            raise ValueError("rule id out of range")
        if np.any(rptr[rules + 1] <= rptr[rules]):
            raise ValueError("a listed rule has no nodes")
    if np.any(np.diff(rptr) < 0) or rptr[0] != 0 or rptr[-1] > order.shape[0]:
        raise ValueError("rptr must be non-decreasing offsets into order from 0")
    if pos.shape[0] != N:
        raise ValueError("pos must have a row per node")
    at = np.repeat(np.arange(R, dtype=np.int64), np.diff(rptr))     # rule of order[:rptr[-1]]
    listed = np.zeros(R, dtype=bool)
    listed[rules] = True
    keep = listed[at]
    sel = order[rptr[0]:rptr[-1]][keep]
    rule_of = at[keep]
    if sel.size:
        if sel.min() < 0 or sel.max() >= N:
            raise ValueError("node index out of range")
        lft, rgt = nodes.left[sel], nodes.right[sel]
        if lft.min() < 0 or rgt.min() < 0:
            raise ValueError("a node of a binary rule without two children")
        lab = nodes.label
        if (np.any(lab[sel] != pa[rule_of]) or np.any(lab[lft] != pb[rule_of])
                or np.any(lab[rgt] != pc[rule_of])):
            raise ValueError("a node's symbols differ from its rule's")
        for side in (sel, lft, rgt):
            if pos[side].min() < 0 or np.any(pos[side] >= proj.counts[lab[side]]):
                raise ValueError("a node's row is outside its symbol's block")
    from .._blas import blas_single_thread

    mean_off = np.zeros(m.shape[0] + 1, dtype=np.int64)
    np.cumsum(m, out=mean_off[1:])
    if symbol_means is None:
        mean_y = mean_z = np.zeros(int(mean_off[-1]))
    else:
        mean_y, mean_z = (np.ascontiguousarray(v, dtype=np.float64) for v in symbol_means)
        if mean_y.shape[0] != mean_off[-1] or mean_z.shape[0] != mean_off[-1]:
            raise ValueError("symbol_means must hold m[a] values per symbol")
    with blas_single_thread():
        kernel(rules, rptr, order, np.ascontiguousarray(nodes.left, dtype=np.int32),
               np.ascontiguousarray(nodes.right, dtype=np.int32), pos, pa, pb, pc, m,
               proj.offsets, proj.y_flat, proj.z_flat, weight, float(C), toff, tensors,
               mean_y, mean_z, mean_off, symbol_means is not None)
