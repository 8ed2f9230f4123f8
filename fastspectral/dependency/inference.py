"""Arc posteriors of SHAG models (compiled inside-outside) and MBR decoding."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base import check_jobs
from .backoff import BackoffSHAG
from .data import N_CLASSES, Encoded
from .eisner import PackedHeads, eisner_packed
from .spectral import OperatorSHAG

__all__ = ["pair_offsets", "arc_marginals", "mbr_decode", "unpack_square", "ArcMarginals"]


@dataclass
class ArcMarginals:
    """Arc posteriors of a batch of sentences (:func:`arc_marginals`).

    Attributes
    ----------
    mu : ndarray of float64
        Sentence ``b``'s row-major ``(n+1) x (n+1)`` posteriors ``mu[h, m]`` of the arcs
        ``h -> m`` are ``mu[pair_off[b]:pair_off[b+1]]`` (:func:`unpack_square`).
    pair_off : ndarray of int64
        Offsets of the sentences' blocks (:func:`pair_offsets`).
    logz : ndarray of float64
        ``log |Z|`` of every sentence.
    status : ndarray of int32
        0 when ok, 1 when the model gives the sentence no (finite, non-zero) total weight.
    """

    mu: np.ndarray
    pair_off: np.ndarray
    logz: np.ndarray
    status: np.ndarray


def pair_offsets(enc: Encoded) -> np.ndarray:
    """Offsets of each sentence's ``(n+1)^2`` block in packed pair arrays."""
    lens1 = np.diff(enc.tok_off)
    off = np.zeros(len(lens1) + 1, dtype=np.int64)
    np.cumsum(lens1 * lens1, out=off[1:])
    return off


def det_arrays(det: BackoffSHAG | None, enc: Encoded, pair_off: np.ndarray,
               det_power: float = 1.0, index_dtype=np.int32) -> tuple:
    """The deterministic part of the product model for ``enc``: its number of states ``K``,
    its state table ``next_state`` (as ``index_dtype``) and its arc / stop weights ``lw``
    (``K`` per packed pair) and ``ls`` (``2 K`` per token); without one (``det`` None) a
    single state and unit weights."""
    if det is None:
        return (1, np.zeros((1, N_CLASSES), dtype=index_dtype), np.ones(int(pair_off[-1])),
                np.ones(2 * len(enc.hsym)))
    lw, ls = det.weights(enc, pair_off, det_power)
    return (int(det.K), np.ascontiguousarray(det.next_state, dtype=index_dtype),
            np.ascontiguousarray(lw, dtype=np.float64), np.ascontiguousarray(ls, dtype=np.float64))


def arc_marginals(op: OperatorSHAG, det: BackoffSHAG | None, enc: Encoded,
                  single_root: bool = False, jobs=None, det_power: float = 1.0,
                  arc_mask: np.ndarray | None = None) -> ArcMarginals:
    """Arc posteriors of the product model ``op x det`` for every sentence of ``enc``
    (inside-outside over split head automata, Luque et al. 2012 section 4; the operator
    weights of eq. 1-2 times the deterministic model's arc weights).

    Returns an :class:`ArcMarginals`: ``mu[pair_off[b]:]`` is sentence ``b``'s row-major
    ``(n+1) x (n+1)`` matrix of posteriors ``mu[h, m]`` of arc ``h -> m``; ``logz[b]`` is
    ``log |Z|`` and ``status[b]`` 0 when ok, 1 when the model gives the sentence no (finite,
    non-zero) total weight; a chart that cannot be allocated is a ``MemoryError`` (from the
    kernel, naming the sentence).  ``arc_mask`` (packed like ``mu``) multiplies every arc's weight,
    e.g. 0/1 to prune arcs.  ``jobs``: threads (None: every core available).
    """
    from .._ext import shag as _k

    pair_off = pair_offsets(enc)
    K, next_state, lw, ls = det_arrays(det, enc, pair_off, det_power)
    if arc_mask is not None:
        lw = (lw.reshape(-1, K) * np.asarray(arc_mask, dtype=np.float64)[:, None]).ravel()
    op = op.astype_contiguous()
    B = len(enc.tok_off) - 1
    mu = np.zeros(int(pair_off[-1]))
    logz = np.zeros(B)
    status = np.zeros(B, dtype=np.int32)
    _k.inside_outside_batch(op.alpha1, op.beta, op.A, next_state,
                            np.ascontiguousarray(enc.hsym, dtype=np.int32),
                            np.ascontiguousarray(enc.msym, dtype=np.int32),
                            np.ascontiguousarray(enc.cls, dtype=np.int32),
                            np.ascontiguousarray(enc.tok_off, dtype=np.int64),
                            np.ascontiguousarray(lw, dtype=np.float64),
                            np.ascontiguousarray(ls, dtype=np.float64),
                            pair_off, mu, logz, status, int(bool(single_root)),
                            check_jobs(jobs))
    return ArcMarginals(mu, pair_off, logz, status)


def unpack_square(packed: np.ndarray, pair_off: np.ndarray, b: int) -> np.ndarray:
    """Sentence ``b``'s square block of a packed pair array."""
    size = int(pair_off[b + 1] - pair_off[b])
    n1 = int(round(size ** 0.5))
    return packed[pair_off[b]:pair_off[b + 1]].reshape(n1, n1)


def mbr_decode(mu: np.ndarray, pair_off: np.ndarray, lengths: np.ndarray,
               single_root: bool = False, jobs=None, eps: float = 1e-300) -> PackedHeads:
    """MBR trees: ``argmax_y sum_{(h,m) in y} log mu[h, m]`` by first-order Eisner.

    Posteriors below ``eps`` (including negative values an unnormalised spectral model can
    produce) are clipped to ``eps``.  Returns a :class:`~fastspectral.dependency.eisner.
    PackedHeads` (``best``: the trees' sums of log posteriors).
    """
    scores = np.log(np.maximum(mu, eps))
    return eisner_packed(scores, pair_off, lengths, single_root, jobs)
