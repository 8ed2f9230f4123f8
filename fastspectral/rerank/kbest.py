"""k-best projective decoding (Huang & Chiang 2005, Algorithm 3), first or second order.

The compiled kernel :mod:`fastspectral._ext.kbest_eisner` runs the lazy k-best algorithm over
the hypergraph of Eisner's first-order algorithm, or of McDonald & Pereira's (2006)
second-order (sibling) algorithm; sentences of a batch run in parallel.  ``scores[h, m]`` is
the score of the arc head ``h`` -> modifier ``m`` over positions ``0..n`` (0 = the root),
exactly as for :func:`fastspectral.dependency.eisner.eisner`; the sibling scores
``G[h, s, m]`` are those of :func:`fastspectral.dependency.eisner.eisner2_packed`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base import check_jobs

__all__ = ["KBest", "KBEST_MAX_WORDS", "kbest_packed", "kbest_batch", "kbest"]


@dataclass
class KBest:
    """The k best trees of a batch of sentences (:func:`kbest_packed`).

    Attributes
    ----------
    heads : ndarray of int32
        All trees' heads (1-based, 0 = root): tree ``r`` of sentence ``b`` is
        ``heads[head_off[b] + r * n_b : head_off[b] + (r + 1) * n_b]``.
    head_off : ndarray of int64
        Offsets of the sentences' ``k * n_b`` head slots (length ``B + 1``).
    scores : ndarray of float64, shape (B, k)
        Score of each tree, best first (``-inf`` past ``count[b]``).
    count : ndarray of int32
        Trees found per sentence (``<= k``: fewer when the sentence has fewer projective trees).
    lengths : ndarray of int32
        Words per sentence.
    k : int
        Trees asked for per sentence.
    """

    heads: np.ndarray
    head_off: np.ndarray
    scores: np.ndarray
    count: np.ndarray
    lengths: np.ndarray
    k: int

    def trees(self, b: int) -> np.ndarray:
        """The ``(count[b], n_b)`` heads of sentence ``b``'s trees, best first (a view)."""
        n = int(self.lengths[b])
        c = int(self.count[b])
        a = int(self.head_off[b])
        return self.heads[a:a + c * n].reshape(c, n)


#: the longest sentence the k-best kernel takes (``kbest_eisner.kbest_batch``)
KBEST_MAX_WORDS = 4096


def _kernel():
    from .._ext import kbest_eisner as _k  # compiled Cython kernel
    return _k


def kbest_packed(scores: np.ndarray, pair_off: np.ndarray, lengths: np.ndarray, k: int,
                 single_root: bool = False, jobs=None, sibs: np.ndarray | None = None,
                 sib_off: np.ndarray | None = None) -> KBest:
    """The ``k`` best projective trees of packed score blocks (Huang & Chiang 2005, Alg. 3).

    Sentence ``b`` (``lengths[b]`` words) has its ``(n+1)^2`` row-major arc scores at
    ``scores[pair_off[b]:]`` (the layout of :func:`fastspectral.dependency.eisner.
    eisner_packed`).  With ``sibs`` and ``sib_off`` (its ``(n+1)^3`` sibling scores at
    ``sibs[sib_off[b]:]``, the layout of :func:`fastspectral.dependency.eisner.
    eisner2_packed`) the trees are the k best of the second-order (sibling) model, at most
    :data:`~fastspectral.dependency.eisner.EISNER2_MAX_WORDS` words a sentence.  ``jobs``:
    threads (None: every core available).  ``MemoryError`` (from the kernel, naming the
    sentence) when a sentence's chart cannot be allocated.
    """
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be an integer >= 1, not {k!r}")
    lengths = np.ascontiguousarray(lengths, dtype=np.int32)
    B = len(lengths)
    head_off = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(lengths.astype(np.int64) * k, out=head_off[1:])
    heads = np.full(int(head_off[-1]), -1, dtype=np.int32)
    out = np.full(B * k, -np.inf)
    count = np.zeros(B, dtype=np.int32)
    arcs = np.ascontiguousarray(scores, dtype=np.float64)
    aoff = np.ascontiguousarray(pair_off[:B], dtype=np.int64)
    flags = (int(bool(single_root)), check_jobs(jobs))
    if (sibs is None) != (sib_off is None):
        raise ValueError("give both sibs and sib_off, or neither")
    if sibs is None:
        _kernel().kbest_batch(arcs, aoff, lengths, head_off, k, heads, out, count, *flags)
    else:                                       # MemoryError naming the sentence
        _kernel().kbest2_batch(arcs, aoff, np.ascontiguousarray(sibs, dtype=np.float64),
                               np.ascontiguousarray(sib_off[:B], dtype=np.int64), lengths,
                               head_off, k, heads, out, count, *flags)
    return KBest(heads, head_off, out.reshape(B, k), count, lengths, k)


def kbest_batch(score_mats, k: int, single_root: bool = False, jobs=None):
    """The ``k`` best trees of each ``(n+1) x (n+1)`` score matrix: a list of
    ``(heads (c, n) int32, scores (c,))`` pairs, best first."""
    from ..dependency.eisner import pack_score_mats

    flat, pair_off, lengths = pack_score_mats(score_mats)
    res = kbest_packed(flat, pair_off, lengths, k, single_root, jobs)
    return [(res.trees(b).copy(), res.scores[b, :res.count[b]].copy())
            for b in range(len(lengths))]


def kbest(scores, k: int, single_root: bool = False):
    """The ``k`` best projective trees of one ``(n+1) x (n+1)`` score matrix:
    ``(heads (c, n), scores (c,))``, best first (``c <= k``)."""
    return kbest_batch([scores], k, single_root=single_root, jobs=1)[0]
