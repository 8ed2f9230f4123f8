"""Spectral estimation of L-PCFG parameters (Cohen et al. 2012, figure 4; NAACL 2013 practice).

For every symbol ``a`` with ``M_a`` training nodes, inside features ``phi`` and outside features
``psi`` (scaled one-hot, :mod:`fastspectral.lpcfg.features`):

1. ``Omega^a = (1/M_a) sum_nodes phi psi^T`` (sparse ``d_in x d_out``);
2. truncated SVD ``Omega^a ~ U S V^T`` with ``m_a`` components, where ``m_a`` is ``n_states``
   (in-terminals) or ``n_states_pre`` (pre-terminals), capped by the numerical rank of ``Omega^a``
   and set to 1 for symbols with fewer than ``min_count`` nodes;
3. projections ``y = U^T phi`` (inside) and ``z = S^-1 V^T psi`` (outside), so that
   ``E[y z^T | a] = I``; a symbol with ``m_a = 1`` uses ``y = z = 1`` (it is then exactly the
   relative-frequency PCFG symbol);
4. from *all* nodes of all trees (``E_r`` is an average over the ``n_r`` nodes using rule ``r``):

   * ``C^{a->b c} = (n_r / M_a) * S_r`` with ``S_r`` the smoothed ``E_r[z (x) y_left (x) y_right]``,
   * ``C^{a->p} = (n_r / M_a) * S_r`` with ``S_r`` the smoothed ``E_r[z (x) y_child]`` (unary),
   * ``c1_a = (n_root(a) / n_trees) * E_root(a)[y]`` smoothed towards ``E_a[y]``,
   * ``c_inf_{p->x} = P(x | p) * zhat(p, x)``, where ``P(x | p)`` is the PCFG lexicon (smoothed,
     unknown-word signatures: the same lexical model as the PCFG baseline) and
     ``zhat(p, x) = (n_px * E_px[z] + s_w * E_p,rare[z]) / (n_px + s_w)`` backs off to the mean
     outside projection of ``p``'s rare-word (count <= 1) tokens; unknown words use that mean.

Smoothing (the interpolation with lower-order terms of Cohen et al. 2013, section 3.2), with
``lam = sqrt(n_r) / (C + sqrt(n_r))`` (``C = moment_smoothing``; ``C = 0`` disables smoothing);
``E`` averages over the rule's nodes, ``H_a = E_a[z]`` and ``F_b = E_b[y]`` over all nodes of a
symbol.  ``moment_backoff="symbol"`` (the paper's three levels)::

    S_r = lam * E[z y2 y3] + (1 - lam) * ( lam * F_r + (1 - lam) * K_r )
    F_r = (E[z y2] (x) E[y3] + E[z y3] (x)_2 E[y2] + E[z] (x) E[y2 y3]) / 3
    K_r = lam * E[z] (x) E[y2] (x) E[y3] + (1 - lam) * H_a (x) F_b (x) F_c

``moment_backoff="rule"`` (two levels from the rule's own nodes; the estimate of versions
before this option)::

    S_r = lam * E[z y2 y3] + (1 - lam) * ( lam * (E[z y2] (x) E[y3] + E[z y3] (x)_2 E[y2]) / 2
                                           + (1 - lam) * E[z] (x) E[y2] (x) E[y3] )

(``(x)_2`` puts the factor in the middle index).  For unary rules and the root
``S = lam * E[z y] + (1 - lam) * E[z] (x) E[y]``.  For a rule whose three symbols all have one
state either is exactly the relative frequency ``n_r / M_a``.  The symbols' means are what
rare rules need: a rule seen a few times has noisy means of its own, and with them the
estimates give many negative marginals (WSJ section 22, m=32: 41 % of the L-PCFG items with
``"rule"``, 27 % with ``"symbol"``; docs/benchmarks-constituency.md).
"""
from __future__ import annotations

import numpy as np

from ..linalg.svd import truncated_svd  # noqa: F401  (the step-2 SVD; re-exported)
from .params import block_offsets

__all__ = ["truncated_svd", "choose_rank", "smoothed_triple", "smoothed_pair",
           "smooth_triple_moments", "binary_tensor_start", "root_vector", "lexical_table"]


def choose_rank(s: np.ndarray, m_max: int, rank_tol: float) -> int:
    """Number of singular values above ``rank_tol * s[0]``, capped at ``m_max`` (at least 1)."""
    if s.size == 0 or s[0] <= 0:
        return 1
    return int(max(1, min(m_max, np.count_nonzero(s > rank_tol * s[0]))))


def _lam(n: np.ndarray | float, C: float):
    if C <= 0:
        return np.ones_like(np.asarray(n, dtype=np.float64))
    r = np.sqrt(np.asarray(n, dtype=np.float64))
    return r / (C + r)


def smoothed_triple(za: np.ndarray, yb: np.ndarray, yc: np.ndarray, C: float,
                    symbol_means=None) -> np.ndarray:
    """Smoothed ``E[z (x) y_b (x) y_c]`` over the rows (nodes) of the three projections;
    ``symbol_means``: ``(H_a, F_b, F_c)`` for the three-level smoothing (``"symbol"``), None for
    the two levels (``"rule"``)."""
    n = za.shape[0]
    ma, mb, mc = za.shape[1], yb.shape[1], yc.shape[1]
    kr = (yb[:, :, None] * yc[:, None, :]).reshape(n, mb * mc)
    E3 = (za.T @ kr).reshape(ma, mb, mc) / n
    lam = float(_lam(n, C))
    if lam >= 1.0:
        return E3
    e1, e2, e3 = za.mean(0), yb.mean(0), yc.mean(0)
    E12 = za.T @ yb / n
    E13 = za.T @ yc / n
    E23 = None if symbol_means is None else yb.T @ yc / n
    return smooth_triple_moments(E3, e1, e2, e3, E12, E13, lam, E23, symbol_means)


def smooth_triple_moments(E3, e1, e2, e3, E12, E13, lam: float, E23=None,
                          symbol_means=None) -> np.ndarray:
    """The smoothing of a binary rule's moments (see the module docstring), in place.

    Parameters
    ----------
    E3 : numpy.ndarray
        ``E[z (x) y_b (x) y_c]``, shape ``(m_a, m_b, m_c)``; overwritten with the result.
    e1, e2, e3 : numpy.ndarray
        ``E[z]``, ``E[y_b]``, ``E[y_c]``.
    E12, E13 : numpy.ndarray
        ``E[z (x) y_b]`` and ``E[z (x) y_c]``.
    lam : float
        The interpolation weight ``sqrt(n_r) / (C + sqrt(n_r))``.
    E23 : numpy.ndarray or None
        ``E[y_b (x) y_c]`` (with ``symbol_means``).
    symbol_means : tuple of numpy.ndarray or None
        ``(H_a, F_b, F_c)``: the three-level smoothing (``moment_backoff="symbol"``); None:
        the two levels (``"rule"``).

    Returns
    -------
    numpy.ndarray
        ``E3`` smoothed as the module docstring gives, accumulated in place (the tensors are
        ``m^3``).
    """
    if symbol_means is not None:
        h, fb, fc = symbol_means
        E3 *= lam
        w_low = (1 - lam) * lam / 3
        low = w_low * E12 + ((1 - lam) ** 2 * lam) * np.outer(e1, e2)
        E3 += low[:, :, None] * e3[None, None, :]
        E3 += (w_low * E13)[:, None, :] * e2[None, :, None]
        E3 += (w_low * e1)[:, None, None] * E23[None, :, :]
        E3 += ((1 - lam) ** 3 * np.outer(h, fb))[:, :, None] * fc[None, None, :]
        return E3
    E3 *= lam
    w_low = 0.5 * (1 - lam) * lam
    E3 += (w_low * E12 + ((1 - lam) ** 2) * np.outer(e1, e2))[:, :, None] * e3[None, None, :]
    E3 += (w_low * E13)[:, None, :] * e2[None, :, None]
    return E3


def smoothed_pair(za: np.ndarray, yb: np.ndarray, C: float) -> np.ndarray:
    """Smoothed ``E[z (x) y]`` over the rows of two projections."""
    n = za.shape[0]
    E2 = za.T @ yb / n
    lam = float(_lam(n, C))
    if lam >= 1.0:
        return E2
    return lam * E2 + (1 - lam) * np.outer(za.mean(0), yb.mean(0))


def binary_tensor_start(g, m: np.ndarray, rcount: np.ndarray, counts: np.ndarray):
    """The flat array of the binary tensors ``C^{a->b c}`` with the one-state rules set.

    A rule whose three symbols all have one state is the relative frequency ``n_r / M_a``
    (see the module docstring); the tensors of the other rules are left at zero for the caller
    to fill.

    Parameters
    ----------
    g : Grammar
        The PCFG grammar (``bin_parent``, ``bin_left``, ``bin_right``).
    m : numpy.ndarray
        Latent states of every symbol.
    rcount : numpy.ndarray
        Training nodes ``n_r`` of every binary rule.
    counts : numpy.ndarray
        Training nodes ``M_a`` of every symbol.

    Returns
    -------
    toff : numpy.ndarray
        Offsets of the rules' tensors (int64, ``n_binary + 1`` entries).
    tensors : numpy.ndarray
        The flat tensors (float64, ``toff[-1]`` entries).
    scalar : numpy.ndarray
        Per rule, whether its tensor is one entry (set here).
    """
    pa, pb, pc = g.bin_parent, g.bin_left, g.bin_right
    m64 = m.astype(np.int64)
    toff = block_offsets(m64[pa] * m64[pb] * m64[pc])
    tensors = np.zeros(int(toff[-1]))
    scalar = (m[pa] == 1) & (m[pb] == 1) & (m[pc] == 1)
    tensors[toff[:-1][scalar]] = rcount[scalar] / counts[pa[scalar]]
    return toff, tensors, scalar


def root_vector(n_root: int, n_trees: int, e_root, e_all, C: float) -> np.ndarray:
    """``c1_a = (n_root(a) / n_trees) * S`` with ``S = lam * E_root(a)[y] + (1 - lam) * E_a[y]``
    and ``lam = sqrt(n_root) / (C + sqrt(n_root))`` (1 when ``C <= 0``).

    Parameters
    ----------
    n_root : int
        Training trees whose root is ``a``.
    n_trees : int
        Training trees.
    e_root, e_all : numpy.ndarray
        ``E_root(a)[y]`` (over the root nodes labelled ``a``) and ``E_a[y]`` (over all nodes
        labelled ``a``).
    C : float
        ``moment_smoothing``.

    Returns
    -------
    numpy.ndarray
        ``c1_a``.
    """
    lam = 1.0 if C <= 0 else np.sqrt(n_root) / (C + np.sqrt(n_root))
    return (n_root / n_trees) * (lam * e_root + (1 - lam) * e_all)


def lexical_table(tag_blocks, n_pairs: int, n_symbols: int, word_smoothing: float):
    """The lexical back-off table ``zhat(p, x)`` of every (tag, word) pair and the rare-word
    row ``E_p,rare[z]`` of every tag (see the module docstring), as flat rows.

    Parameters
    ----------
    tag_blocks : iterable of tuple
        Per tag ``(p, pairs, sums, pair_counts, zr)``: the tag's symbol id, the ids of its
        (tag, word) pairs, the sums ``n_px * E_px[z]`` of their outside projections (one row a
        pair, ``m_p`` columns), the pairs' counts ``n_px`` and the tag's rare-word mean
        ``zr`` (``m_p`` entries).
    n_pairs : int
        Number of (tag, word) pairs.
    n_symbols : int
        Number of symbols.
    word_smoothing : float
        ``s_w`` of ``zhat = (n_px * E_px[z] + s_w * zr) / (n_px + s_w)``.

    Returns
    -------
    offsets : numpy.ndarray
        Start of every pair's row in ``table`` (int64).
    rare_offsets : numpy.ndarray
        Start of every tag's rare-word row (-1: not a tag).
    table : numpy.ndarray
        The rows, tag by tag: its pairs' rows, then its rare-word row.
    """
    sw = float(word_smoothing)
    offs = np.zeros(n_pairs, dtype=np.int64)
    rare_off = np.full(n_symbols, -1, dtype=np.int64)
    table = []
    pos_t = 0
    for p, pairs, sums, pair_counts, zr in tag_blocks:
        mp = zr.shape[0]
        n_px = pair_counts.astype(np.float64)[:, None]
        zhat = (sums + sw * zr[None, :]) / (n_px + sw)
        block = np.vstack([zhat, zr[None, :]])
        offs[pairs] = pos_t + np.arange(len(pairs)) * mp
        rare_off[p] = pos_t + len(pairs) * mp
        table.append(block.ravel())
        pos_t += block.size
    return offs, rare_off, np.concatenate(table) if table else np.zeros(0)
