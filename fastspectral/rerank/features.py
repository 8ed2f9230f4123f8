"""Hashed first-order arc features (McDonald, Crammer & Pereira 2005) and their compiled scoring.

Every arc ``h -> m`` of a sentence (positions ``0..n``, 0 = the root) has the feature set of
McDonald et al. (ACL 2005, table 1), each template emitted twice, alone and conjoined with the
arc's direction and binned distance (1, 2, 3, 4, 5, 6-10, > 10):

* unigram: head word+tag, word, tag; modifier word+tag, word, tag; the 5-character prefixes
  of both words (alone and with the tag);
* bigram: the seven word/tag combinations of head and modifier (and the prefix versions);
* in-between: head tag . tag of each word strictly between . modifier tag;
* surrounding: head tag, modifier tag and the tags left / right of each (the four 4-tag
  templates and their four 3-tag back-offs).

Feature ids are hashed (the "hashing trick") into ``2**bits`` weights, so no feature dictionary
is stored; tokens enter as small integer ids of words, tags and prefixes (vocabularies built by
:class:`~fastspectral.rerank.mst.MSTParser`).  The kernels are Numba (``cache=True``), the
batch scoring parallel across sentences.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["ROOT_ID", "UNK_ID", "NONE_ID", "FIRST_ID", "MAX_FEATS", "arc_scores",
           "perceptron_update", "arc_features"]

#: reserved token ids of every vocabulary: unknown, the root, "no token" (left of the first
#: / right of the last word); real symbols start at FIRST_ID
UNK_ID, ROOT_ID, NONE_ID, FIRST_ID = 0, 1, 2, 3
#: templates without the in-between ones (times 2: alone and with direction + distance)
N_FIXED = 29
MAX_FEATS = 2 * N_FIXED

_M1 = np.int64(-7046029254386353131)   # 0x9E3779B97F4A7C15
_M2 = np.int64(1099511628211)          # FNV prime
_M3 = np.int64(-4658895280553007687)   # 0xBF58476D1CE4E5B9


@njit(cache=True, inline="always")
def _h(t, a, b, c, d, e):
    """Hash of template ``t`` with atoms ``a..e`` (int64 arithmetic wraps around)."""
    x = (np.int64(t) + 1) * _M1
    x = (x ^ a) * _M2
    x = (x ^ b) * _M2
    x = (x ^ c) * _M2
    x = (x ^ d) * _M2
    x = (x ^ e) * _M2
    x ^= (x >> 31)
    x *= _M3
    x ^= (x >> 29)
    return x


@njit(cache=True, inline="always")
def _dist_bin(d):
    if d <= 5:
        return d
    if d <= 10:
        return 6
    return 7


@njit(cache=True)
def _feats(W, P, F, base, n, h, m, mask, out):
    """Write the hashed feature ids of arc ``h -> m`` into ``out``; returns how many.

    ``W, P, F``: word, tag and prefix ids of the sentence at ``base`` (position 0 the root).
    """
    hw = W[base + h]; ht = P[base + h]; hf = F[base + h]
    mw = W[base + m]; mt = P[base + m]; mf = F[base + m]
    if h < m:
        lo = h; hi = m; att = 16 + _dist_bin(m - h)
    else:
        lo = m; hi = h; att = 32 + _dist_bin(h - m)
    hl = P[base + h - 1] if h > 0 else NONE_ID
    hr = P[base + h + 1] if h < n else NONE_ID
    ml = P[base + m - 1] if m > 0 else NONE_ID
    mr = P[base + m + 1] if m < n else NONE_ID
    k = 0
    for rep in range(2):
        a = att if rep == 1 else 0
        # unigram (McDonald et al. 2005, table 1a) and prefixes
        out[k] = _h(0, hw, ht, 0, 0, a); k += 1
        out[k] = _h(1, hw, 0, 0, 0, a); k += 1
        out[k] = _h(2, ht, 0, 0, 0, a); k += 1
        out[k] = _h(3, mw, mt, 0, 0, a); k += 1
        out[k] = _h(4, mw, 0, 0, 0, a); k += 1
        out[k] = _h(5, mt, 0, 0, 0, a); k += 1
        out[k] = _h(6, hf, ht, 0, 0, a); k += 1
        out[k] = _h(7, hf, 0, 0, 0, a); k += 1
        out[k] = _h(8, mf, mt, 0, 0, a); k += 1
        out[k] = _h(9, mf, 0, 0, 0, a); k += 1
        # bigram (table 1b) and prefixes
        out[k] = _h(10, hw, ht, mw, mt, a); k += 1
        out[k] = _h(11, ht, mw, mt, 0, a); k += 1
        out[k] = _h(12, hw, mw, mt, 0, a); k += 1
        out[k] = _h(13, hw, ht, mt, 0, a); k += 1
        out[k] = _h(14, hw, ht, mw, 0, a); k += 1
        out[k] = _h(15, hw, mw, 0, 0, a); k += 1
        out[k] = _h(16, ht, mt, 0, 0, a); k += 1
        out[k] = _h(17, hf, ht, mf, mt, a); k += 1
        out[k] = _h(18, hf, mf, 0, 0, a); k += 1
        out[k] = _h(19, hf, ht, mt, 0, a); k += 1
        out[k] = _h(20, ht, mf, mt, 0, a); k += 1
        # surrounding tags (table 1c)
        out[k] = _h(21, ht, hr, ml, mt, a); k += 1
        out[k] = _h(22, hl, ht, ml, mt, a); k += 1
        out[k] = _h(23, ht, hr, mt, mr, a); k += 1
        out[k] = _h(24, hl, ht, mt, mr, a); k += 1
        out[k] = _h(25, hl, ht, mt, 0, a); k += 1
        out[k] = _h(26, ht, hr, mt, 0, a); k += 1
        out[k] = _h(27, ht, ml, mt, 0, a); k += 1
        out[k] = _h(28, ht, mt, mr, 0, a); k += 1
        # in-between tags (table 1c)
        for b in range(lo + 1, hi):
            out[k] = _h(29, ht, P[base + b], mt, 0, a); k += 1
    for i in range(k):
        out[i] &= mask
    return k


@njit(cache=True, parallel=True)
def arc_scores(w, W, P, F, tok_off, lengths, pair_off, out):
    """Arc scores of a batch: ``out[pair_off[b] + h * (n+1) + m] = w . f(h -> m)`` for every
    sentence ``b`` (``lengths[b] = n`` words, tokens at ``tok_off[b]``); the root column and
    the diagonal get ``-inf``.  Parallel across sentences."""
    mask = np.int64(w.shape[0] - 1)
    for b in prange(lengths.shape[0]):
        n = lengths[b]
        base = tok_off[b]
        n1 = n + 1
        buf = np.empty(MAX_FEATS + 2 * n1, dtype=np.int64)
        o = pair_off[b]
        for h in range(n1):
            out[o + h * n1] = -np.inf
            for m in range(1, n1):
                if h == m:
                    out[o + h * n1 + m] = -np.inf
                    continue
                k = _feats(W, P, F, base, n, h, m, mask, buf)
                s = 0.0
                for i in range(k):
                    s += w[buf[i]]
                out[o + h * n1 + m] = s
    return out


@njit(cache=True)
def perceptron_update(w, u, c, W, P, F, tok_off, lengths, gold, pred, head_off, scale):
    """Averaged-perceptron update of a batch (Collins 2002; the lazy averaging of Daume):
    for every word whose predicted head differs from the gold one, ``+scale`` on the gold
    arc's features and ``-scale`` on the predicted arc's, in ``w`` and ``c * scale`` in ``u``
    (the averaged weights are ``w - u / c``).  Returns the number of wrong heads."""
    mask = np.int64(w.shape[0] - 1)
    wrong = 0
    for b in range(lengths.shape[0]):
        n = lengths[b]
        base = tok_off[b]
        buf = np.empty(MAX_FEATS + 2 * (n + 1), dtype=np.int64)
        for i in range(n):
            g = gold[head_off[b] + i]
            p = pred[head_off[b] + i]
            if g == p:
                continue
            wrong += 1
            k = _feats(W, P, F, base, n, g, i + 1, mask, buf)
            for j in range(k):
                w[buf[j]] += scale
                u[buf[j]] += c * scale
            k = _feats(W, P, F, base, n, p, i + 1, mask, buf)
            for j in range(k):
                w[buf[j]] -= scale
                u[buf[j]] -= c * scale
    return wrong


def arc_features(W, P, F, n, h, m, bits):
    """The hashed feature ids of one arc ``h -> m`` of one sentence (token id arrays with the
    root at position 0): for tests and inspection."""
    buf = np.empty(MAX_FEATS + 2 * (n + 1), dtype=np.int64)
    k = _feats(np.asarray(W, np.int64), np.asarray(P, np.int64), np.asarray(F, np.int64), 0, n,
               h, m, np.int64((1 << bits) - 1), buf)
    return buf[:k].copy()
