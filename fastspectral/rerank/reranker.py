"""Averaged-perceptron re-ranking of k-best dependency trees (Dhillon et al. 2012, section 4.3).

A candidate tree ``y`` of a sentence is scored ``w . phi(y) + sum_d v_d x_d(y)``:

* ``phi``: the paper's baseline features, hashed into ``2**bits`` weights: for every head
  ``h``, ``POS(left modifier) . POS(h) . POS(right modifier)`` for every pair of a left and a
  right modifier of ``h`` (``NONE`` standing for a missing side), and for every modifier
  ``m`` of ``h``, ``POS(m) . POS(h) . POS(grandparent)`` with the side of ``m`` (left / right);
* ``x``: dense real features: the base parser's score of ``y`` (minus the list's best score),
  and optionally the spectral model's ``log p-hat(y)`` (minus the list's best), each divided
  by its standard deviation over the training lists.  A candidate whose ``log p-hat`` is not
  finite (p-hat <= 0) gets the list's lowest finite value and an indicator feature.

Training (Collins 2002, Collins & Koo 2005): the oracle of a list is its candidate with the
most correct heads (ties: the base parser's order); after each list whose predicted candidate
has fewer correct heads than the oracle, ``w += phi(oracle) - phi(prediction)`` (and the dense
weights likewise); the averaged weights are kept.  One Numba call runs a whole epoch; scoring
is parallel across sentences.
"""
from __future__ import annotations

import numpy as np
from .._jit import njit, prange

from .features import NONE_ID, _h

__all__ = ["tree_features", "score_candidates", "rerank_epoch", "correct_counts",
           "RerankData"]


@njit(cache=True)
def _tree_feats(P, base, heads, hb, n, mask, out, cnt, start, kids):
    """Hashed baseline features of one tree (heads ``heads[hb:hb+n]``; tags ``P[base:]`` with
    the root at 0) into ``out``; returns how many.  ``cnt``, ``start``, ``kids``: scratch."""
    for h in range(n + 2):
        cnt[h] = 0
    for i in range(n):
        cnt[heads[hb + i] + 1] += 1
    start[0] = 0
    for h in range(n + 1):
        start[h + 1] = start[h] + cnt[h + 1]
        cnt[h + 1] = 0
    for i in range(n):                       # children of each head, in linear order
        h = heads[hb + i]
        kids[start[h] + cnt[h + 1]] = i + 1
        cnt[h + 1] += 1
    k = 0
    for h in range(n + 1):
        ht = P[base + h]
        g = heads[hb + h - 1] if h > 0 else -1
        gt = P[base + g] if g >= 0 else NONE_ID
        a, b = start[h], start[h + 1]
        split = a
        while split < b and kids[split] < h:
            split += 1
        # (i) POS-left-modifier . POS-head . POS-right-modifier
        for li in range(a, max(split, a + 1)):
            lt = P[base + kids[li]] if li < split else NONE_ID
            for ri in range(split, max(b, split + 1)):
                rt = P[base + kids[ri]] if ri < b else NONE_ID
                if li < split or ri < b:
                    out[k] = _h(40, lt, ht, rt, 0, 0) & mask
                    k += 1
        # (ii) POS-left/right-modifier . POS-head . POS-grandparent
        for j in range(a, b):
            out[k] = _h(41, P[base + kids[j]], ht, gt, 1 if j >= split else 0, 0) & mask
            k += 1
    return k


@njit(cache=True)
def _scratch(n):
    """Scratch of :func:`_tree_feats` for a sentence of ``n`` words: ``(out, cnt, start,
    kids)``."""
    return (np.empty((n + 1) * (n + 1) + 2 * n + 8, np.int64), np.empty(n + 2, np.int64),
            np.empty(n + 2, np.int64), np.empty(n + 1, np.int64))


@njit(cache=True, inline="always")
def _score(w, feats, k, v, dense, c):
    """``w . phi + v . dense[c]``, ``phi`` the ``k`` hashed features ``feats[:k]``."""
    s = 0.0
    for i in range(k):
        s += w[feats[i]]
    for d in range(dense.shape[1]):
        s += v[d] * dense[c, d]
    return s


@njit(cache=True, parallel=True)
def score_candidates(w, v, P, tok_off, lengths, heads, cand_off, cand_hoff, dense, out):
    """``out[c] = w . phi(c) + v . dense[c]`` for every candidate ``c`` of every sentence
    (candidates of sentence ``b``: ``cand_off[b] .. cand_off[b+1]``, heads at
    ``cand_hoff[c]``).  Parallel across sentences."""
    mask = np.int64(w.shape[0] - 1)
    for b in prange(lengths.shape[0]):
        n = lengths[b]
        buf, cnt, start, kids = _scratch(n)
        for c in range(cand_off[b], cand_off[b + 1]):
            k = _tree_feats(P, tok_off[b], heads, cand_hoff[c], n, mask, buf, cnt, start, kids)
            out[c] = _score(w, buf, k, v, dense, c)
    return out


@njit(cache=True)
def rerank_epoch(w, u, v, uv, c, order, P, tok_off, lengths, heads, cand_off, cand_hoff,
                 dense, correct, fixed=-1):
    """One averaged-perceptron epoch over the lists in ``order``; ``c`` is the update
    counter (returned, advanced by one per list); the dense weight ``v[fixed]`` is never
    updated (``fixed = -1``: every weight is).  Returns ``(c, lists predicted wrong)``."""
    mask = np.int64(w.shape[0] - 1)
    mistakes = 0
    for oi in range(order.shape[0]):
        b = order[oi]
        n = lengths[b]
        a, e = cand_off[b], cand_off[b + 1]
        if e - a < 2:
            c += 1.0
            continue
        buf, cnt, start, kids = _scratch(n)
        best, best_s, orac = a, -np.inf, a
        for cc in range(a, e):
            k = _tree_feats(P, tok_off[b], heads, cand_hoff[cc], n, mask, buf, cnt, start, kids)
            s = _score(w, buf, k, v, dense, cc)
            if s > best_s:
                best_s = s
                best = cc
            if correct[cc] > correct[orac]:
                orac = cc
        if correct[best] < correct[orac]:
            mistakes += 1
            k = _tree_feats(P, tok_off[b], heads, cand_hoff[orac], n, mask, buf, cnt, start,
                            kids)
            for i in range(k):
                w[buf[i]] += 1.0
                u[buf[i]] += c
            k = _tree_feats(P, tok_off[b], heads, cand_hoff[best], n, mask, buf, cnt, start,
                            kids)
            for i in range(k):
                w[buf[i]] -= 1.0
                u[buf[i]] -= c
            for d in range(dense.shape[1]):
                if d == fixed:
                    continue
                diff = dense[orac, d] - dense[best, d]
                v[d] += diff
                uv[d] += c * diff
        c += 1.0
    return c, mistakes


@njit(cache=True, parallel=True)
def correct_counts(gold, gold_off, heads, cand_off, cand_hoff, lengths, keep, out):
    """Correct heads of every candidate (``keep``: the tokens that count, e.g. non-punctuation;
    packed like ``gold``)."""
    for b in prange(lengths.shape[0]):
        n = lengths[b]
        g0 = gold_off[b]
        for cc in range(cand_off[b], cand_off[b + 1]):
            h0 = cand_hoff[cc]
            k = 0
            for i in range(n):
                if keep[g0 + i] and heads[h0 + i] == gold[g0 + i]:
                    k += 1
            out[cc] = k
    return out


def tree_features(P, heads, bits=20) -> np.ndarray:
    """The hashed baseline features of one tree (``P``: tag ids with the root at 0; ``heads``
    1-based): for tests and inspection."""
    n = len(heads)
    buf, cnt, start, kids = _scratch(n)
    k = _tree_feats(np.asarray(P, np.int64), 0, np.asarray(heads, np.int64), 0, n,
                    np.int64((1 << bits) - 1), buf, cnt, start, kids)
    return np.sort(buf[:k])


class RerankData:
    """k-best lists of a batch in the packed layout of the kernels above.

    Built from a :class:`~fastspectral.rerank.kbest.KBest` (``kb``) and the base parser's
    :class:`~fastspectral.rerank.mst.Encoded` tags (``enc``): ``heads`` (int64, every
    candidate's heads), ``cand_off`` (B + 1), ``cand_hoff`` (offset of each candidate's heads),
    ``base`` (each candidate's base score), ``sent`` (its sentence).
    """

    def __init__(self, kb, enc):
        counts = kb.count.astype(np.int64)
        B = len(counts)
        self.lengths = kb.lengths.astype(np.int64)
        self.tok_off = enc.tok_off.astype(np.int64)
        self.P = enc.P
        self.cand_off = np.zeros(B + 1, dtype=np.int64)
        np.cumsum(counts, out=self.cand_off[1:])
        self.sent = np.repeat(np.arange(B), counts)
        rank = np.arange(int(self.cand_off[-1])) - self.cand_off[self.sent]
        self.rank = rank
        self.cand_hoff = kb.head_off[self.sent] + rank * self.lengths[self.sent]
        self.heads = kb.heads.astype(np.int64)
        self.base = kb.scores[self.sent, rank]

    @property
    def n_candidates(self) -> int:
        return int(self.cand_off[-1])

    def relative(self, x: np.ndarray) -> np.ndarray:
        """``x`` (one value per candidate) minus the best of its list."""
        best = np.maximum.reduceat(x, self.cand_off[:-1]) if len(x) else x
        return x - best[self.sent]

    def candidate_heads(self, c: int) -> np.ndarray:
        n = int(self.lengths[self.sent[c]])
        return self.heads[self.cand_hoff[c]:self.cand_hoff[c] + n]

    def subset(self, idx) -> tuple:
        """``(lists, candidates)``: a :class:`RerankData` of the lists ``idx`` (in that order)
        and the indices of their candidates in this one (to select per-candidate arrays)."""
        from .mst import _ranges

        idx = np.asarray(idx, dtype=np.int64)
        counts = np.diff(self.cand_off)[idx]
        cand = _ranges(self.cand_off[idx], counts)
        out = RerankData.__new__(RerankData)
        out.lengths = self.lengths[idx]
        out.cand_off = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(counts, out=out.cand_off[1:])
        out.sent = np.repeat(np.arange(len(idx)), counts)
        out.rank, out.base = self.rank[cand], self.base[cand]
        tok_len = np.diff(self.tok_off)[idx]
        out.P = self.P[_ranges(self.tok_off[idx], tok_len)]
        out.tok_off = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(tok_len, out=out.tok_off[1:])
        n = self.lengths[self.sent[cand]]
        out.heads = self.heads[_ranges(self.cand_hoff[cand], n)]
        out.cand_hoff = np.zeros(len(cand), dtype=np.int64)
        np.cumsum(n[:-1], out=out.cand_hoff[1:])
        return out, cand

    def heads_list(self) -> list:
        """Every candidate's heads as a list of int arrays (in candidate order)."""
        ends = self.cand_hoff + self.lengths[self.sent]
        return [self.heads[a:e] for a, e in zip(self.cand_hoff, ends)]
