"""First-order projective decoding (Eisner's algorithm) over arc-factored scores.

``scores[h, m]`` is the score of the arc head ``h`` -> modifier ``m`` over positions
``0..n`` (0 = the root); column 0 and the diagonal are ignored.  The compiled kernel
(``fastspectral._ext.eisner``) decodes batches of sentences in parallel.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base import check_jobs

__all__ = ["eisner", "eisner_batch", "eisner_packed", "eisner2", "eisner2_packed",
           "EISNER2_MAX_WORDS",
           "PackedHeads"]


@dataclass
class PackedHeads:
    """Decoded trees of a batch of sentences (:func:`eisner_packed`, :func:`~fastspectral.
    dependency.inference.mbr_decode`).

    Attributes
    ----------
    heads : ndarray of int32
        All heads (1-based, 0 = root); sentence ``b``'s are ``heads[head_off[b]:head_off[b+1]]``.
    head_off : ndarray of int64
        Offsets of the sentences in ``heads`` (length ``B + 1``).
    best : ndarray of float64
        The best tree's total score of each sentence.
    """

    heads: np.ndarray
    head_off: np.ndarray
    best: np.ndarray


def _kernel():
    from .._ext import eisner as _k  # compiled Cython kernel
    return _k


def eisner_packed(scores: np.ndarray, pair_off: np.ndarray, lengths: np.ndarray,
                  single_root: bool = False, jobs=None) -> PackedHeads:
    """Decode packed score blocks (Eisner 1996, the first-order projective algorithm).

    Sentence ``b`` (``lengths[b]`` words) has its ``(n+1)^2`` row-major scores at
    ``scores[pair_off[b]:]``; in the returned :class:`PackedHeads` its heads (1-based,
    0 = root) are ``heads[head_off[b]:head_off[b+1]]`` and ``best[b]`` is the best tree's total
    score.  ``jobs``: threads (None: every core available; ValueError when < 1).
    """
    lengths = np.ascontiguousarray(lengths, dtype=np.int32)
    head_off = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=head_off[1:])
    heads = np.zeros(int(head_off[-1]), dtype=np.int32)
    best = np.empty(len(lengths))
    _kernel().eisner_batch(np.ascontiguousarray(scores, dtype=np.float64),
                           np.ascontiguousarray(pair_off[:len(lengths)], dtype=np.int64),
                           lengths, head_off, heads, best, int(bool(single_root)),
                           check_jobs(jobs))
    return PackedHeads(heads, head_off, best)


def pack_score_mats(score_mats):
    """A list of square ``(n+1) x (n+1)`` score matrices as the packed input of
    :func:`eisner_packed` (and of :func:`fastspectral.rerank.kbest.kbest_packed`):
    ``(flat float64, pair_off int64 (B+1,), lengths int32 (B,))``."""
    mats = [np.asarray(S, dtype=np.float64) for S in score_mats]
    for S in mats:
        if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] < 1:
            raise ValueError("each score matrix must be square (n+1) x (n+1)")
    lengths = np.array([S.shape[0] - 1 for S in mats], dtype=np.int32)
    pair_off = np.zeros(len(mats) + 1, dtype=np.int64)
    np.cumsum([S.size for S in mats], out=pair_off[1:])
    flat = np.concatenate([S.ravel() for S in mats]) if mats else np.zeros(0)
    return flat, pair_off, lengths


def eisner_batch(score_mats, single_root: bool = False, jobs=None):
    """Decode a list of ``(n+1) x (n+1)`` score matrices; returns a list of head arrays."""
    flat, pair_off, lengths = pack_score_mats(score_mats)
    res = eisner_packed(flat, pair_off, lengths, single_root, jobs)
    return [res.heads[res.head_off[b]:res.head_off[b + 1]].copy() for b in range(len(lengths))]


def eisner(scores, single_root: bool = False) -> np.ndarray:
    """Best projective tree for one ``(n+1) x (n+1)`` score matrix (heads 1-based, 0 = root)."""
    return eisner_batch([scores], single_root=single_root, jobs=1)[0]


#: the longest sentence the second-order kernel takes (``eisner2.eisner2_batch``; its
#: ``(n+1)^3`` sibling block is 550 GB there)
EISNER2_MAX_WORDS = 4095


def eisner2_packed(arcs: np.ndarray, pair_off: np.ndarray, sibs: np.ndarray,
                   trip_off: np.ndarray, lengths: np.ndarray, single_root: bool = False,
                   jobs=None) -> PackedHeads:
    """Second-order projective decoding with sibling parts (McDonald & Pereira 2006).

    Sentence ``b`` (``n = lengths[b]`` words) has its ``(n+1)^2`` row-major arc scores at
    ``arcs[pair_off[b]:]`` (as :func:`eisner_packed`) and its ``(n+1)^3`` sibling scores at
    ``sibs[trip_off[b]:]``: ``G[h, s, m]`` at ``(h * (n+1) + s) * (n+1) + m`` scores ``s`` and
    ``m`` as consecutive modifiers of ``h`` on one side (``s`` closer to ``h``; ``s = h`` for
    the innermost one).  A tree scores the sum of its arcs' and sibling parts' scores; the
    result is laid out as :func:`eisner_packed`'s.  Compiled kernel:
    ``fastspectral/_ext/eisner2.pyx`` (OpenMP across sentences, ``jobs`` threads).
    """
    from .._ext import eisner2 as _k2

    lengths = np.ascontiguousarray(lengths, dtype=np.int32)
    head_off = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=head_off[1:])
    heads = np.zeros(int(head_off[-1]), dtype=np.int32)
    best = np.empty(len(lengths))
    _k2.eisner2_batch(np.ascontiguousarray(arcs, dtype=np.float64),
                      np.ascontiguousarray(pair_off[:len(lengths)], dtype=np.int64),
                      np.ascontiguousarray(sibs, dtype=np.float64),
                      np.ascontiguousarray(trip_off[:len(lengths)], dtype=np.int64),
                      lengths, head_off, heads, best, int(bool(single_root)), check_jobs(jobs))
    return PackedHeads(heads, head_off, best)


def eisner2(arcs, sibs, single_root: bool = False) -> np.ndarray:
    """Best projective tree of one sentence under arc scores ``(n+1, n+1)`` and sibling scores
    ``(n+1, n+1, n+1)`` (:func:`eisner2_packed`); heads 1-based, 0 = root."""
    A = np.asarray(arcs, dtype=np.float64)
    G = np.asarray(sibs, dtype=np.float64)
    n1 = A.shape[0]
    if A.ndim != 2 or A.shape != (n1, n1) or G.shape != (n1, n1, n1) or n1 < 1:
        raise ValueError("arc scores must be (n+1, n+1) and sibling scores (n+1, n+1, n+1)")
    res = eisner2_packed(A.ravel(), np.array([0, A.size]), G.ravel(), np.array([0, G.size]),
                         np.array([n1 - 1], np.int32), single_root, jobs=1)
    return res.heads.copy()
