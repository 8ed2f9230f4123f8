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

Second-order sibling parts ``(h, s, m)`` (McDonald & Pereira, EACL 2006; ``MSTParser(order=2)``):
``s`` and ``m`` consecutive modifiers of ``h`` on one side, ``s`` the closer to ``h``, ``s = h``
for the innermost modifier (then ``s``'s word and tag are a "first modifier" marker).  Their
templates (ids 40..44, MSTParser's second-order set): tag(h).tag(s).tag(m), tag(s).tag(m),
word(s).word(m), word(s).tag(m), tag(s).word(m); each alone and with the direction and the
"first modifier" flag; the two tag templates also with the direction and the binned distance
between ``s`` and ``m`` (12 features per part).

Feature ids are hashed (the "hashing trick") into ``2**bits`` weights, so no feature dictionary
is stored; tokens enter as small integer ids of words, tags and prefixes (vocabularies built by
:class:`~fastspectral.rerank.mst.MSTParser`).  The kernels are Numba (``cache=True``), the
batch scoring parallel across sentences.
"""
from __future__ import annotations

import numpy as np
from .._jit import njit, prange

__all__ = ["ROOT_ID", "UNK_ID", "NONE_ID", "FIRST_ID", "MAX_FEATS", "LONG_BETWEEN",
           "arc_scores", "perceptron_update", "arc_features", "N_SIB_FEATS", "sibling_scores",
           "sibling_update", "sibling_features", "tree_sibling_parts", "candidate_tree_scores"]

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


#: sentences longer than this get the in-between-tag part of their arc scores from prefix
#: sums over the positions, one pass per head and distinct modifier tag (``O(n^2 T)`` hashes
#: for ``T`` distinct tags), instead of one hash per word between head and modifier
#: (``O(n^3)``); the sums then round differently in the last bits
LONG_BETWEEN = 256


@njit(cache=True)
def _feats(W, P, F, base, n, h, m, mask, out, between=True):
    """Write the hashed feature ids of arc ``h -> m`` into ``out``; returns how many.

    ``W, P, F``: word, tag and prefix ids of the sentence at ``base`` (position 0 the root);
    ``between=False`` leaves out the in-between-tag features.
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
        if between:
            for b in range(lo + 1, hi):
                out[k] = _h(29, ht, P[base + b], mt, 0, a); k += 1
    for i in range(k):
        out[i] &= mask
    return k


@njit(cache=True)
def _between_by_prefix(w, P, base, n, o, mask, out):
    """Add the in-between-tag feature weights of every arc of a long sentence to ``out``
    (its ``(n+1)^2`` block at ``o``), from prefix sums: for head ``h`` and modifier tag
    ``T``, ``pre_a[x] = sum_{b < x} w[hash(29, tag h, tag b, T, a)]`` for the attribute
    ``a = 0`` and the far-distance attributes of each direction (``16 + 7``, ``32 + 7``);
    an arc of distance at most 10 sums its few attributed terms directly."""
    n1 = n + 1
    tags = P[base + 1:base + n1]
    order = np.argsort(tags, kind="mergesort")
    pre0 = np.empty(n1 + 1)
    preR = np.empty(n1 + 1)
    preL = np.empty(n1 + 1)
    for h in range(n1):
        ht = P[base + h]
        a = 0
        while a < n:
            T = tags[order[a]]
            e = a
            while e < n and tags[order[e]] == T:
                e += 1
            pre0[0] = 0.0
            preR[0] = 0.0
            preL[0] = 0.0
            for b in range(n1):
                tb = P[base + b]
                pre0[b + 1] = pre0[b] + w[_h(29, ht, tb, T, 0, 0) & mask]
                preR[b + 1] = preR[b] + w[_h(29, ht, tb, T, 0, 16 + 7) & mask]
                preL[b + 1] = preL[b] + w[_h(29, ht, tb, T, 0, 32 + 7) & mask]
            for q in range(a, e):
                m = order[q] + 1
                if m == h:
                    continue
                if h < m:
                    lo = h
                    hi = m
                    att = 16 + _dist_bin(m - h)
                else:
                    lo = m
                    hi = h
                    att = 32 + _dist_bin(h - m)
                s = pre0[hi] - pre0[lo + 1]
                if hi - lo > 10:
                    if h < m:
                        s += preR[hi] - preR[lo + 1]
                    else:
                        s += preL[hi] - preL[lo + 1]
                else:
                    for b in range(lo + 1, hi):
                        s += w[_h(29, ht, P[base + b], T, 0, att) & mask]
                out[o + h * n1 + m] += s
            a = e


@njit(cache=True, parallel=True)
def arc_scores(w, W, P, F, tok_off, lengths, pair_off, out, long_between=LONG_BETWEEN):
    """Arc scores of a batch: ``out[pair_off[b] + h * (n+1) + m] = w . f(h -> m)`` for every
    sentence ``b`` (``lengths[b] = n`` words, tokens at ``tok_off[b]``); the root column and
    the diagonal get ``-inf``.  Parallel across sentences.  Sentences of more than
    ``long_between`` words take their in-between-tag features from prefix sums
    (:data:`LONG_BETWEEN`)."""
    mask = np.int64(w.shape[0] - 1)
    for b in prange(lengths.shape[0]):
        n = lengths[b]
        base = tok_off[b]
        n1 = n + 1
        buf = np.empty(MAX_FEATS + 2 * n1, dtype=np.int64)
        o = pair_off[b]
        direct = n <= long_between          # else the in-between tags from prefix sums
        for h in range(n1):
            out[o + h * n1] = -np.inf
            for m in range(1, n1):
                if h == m:
                    out[o + h * n1 + m] = -np.inf
                    continue
                k = _feats(W, P, F, base, n, h, m, mask, buf, direct)
                s = 0.0
                for i in range(k):
                    s += w[buf[i]]
                out[o + h * n1 + m] = s
        if not direct:
            _between_by_prefix(w, P, base, n, o, mask, out)
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


# ---------------------------------------------------------------- second-order sibling parts
#: features of one sibling part
N_SIB_FEATS = 12
#: the word / tag atom of the "sibling" of an innermost modifier (no real token has it)
FIRST_MOD = -5


@njit(cache=True, inline="always")
def _sib_atoms(W, P, base, h, s, m):
    """``(s's tag, s's word, direction + first flag, direction + binned s-m distance)`` of the
    sibling part ``(h, s, m)``."""
    right = 1 if m > h else 0
    if s == h:
        return np.int64(FIRST_MOD), np.int64(FIRST_MOD), 64 + 2 * right + 1, 128 + 16 * right
    d = _dist_bin(m - s if m > s else s - m)
    return P[base + s], W[base + s], 64 + 2 * right, 128 + 16 * right + d


@njit(cache=True)
def _sib_sm_feats(W, P, base, h, s, m, mask, out, k0):
    """The 9 features of sibling part ``(h, s, m)`` that do not read ``h``'s token (only the
    side and whether ``s = h``), written at ``out[k0:]``; returns ``k0 + 9``."""
    st, sw, a, ad = _sib_atoms(W, P, base, h, s, m)
    mt = P[base + m]
    mw = W[base + m]
    out[k0] = _h(41, st, mt, 0, 0, 0) & mask
    out[k0 + 1] = _h(42, sw, mw, 0, 0, 0) & mask
    out[k0 + 2] = _h(43, sw, mt, 0, 0, 0) & mask
    out[k0 + 3] = _h(44, st, mw, 0, 0, 0) & mask
    out[k0 + 4] = _h(41, st, mt, 0, 0, a) & mask
    out[k0 + 5] = _h(42, sw, mw, 0, 0, a) & mask
    out[k0 + 6] = _h(43, sw, mt, 0, 0, a) & mask
    out[k0 + 7] = _h(44, st, mw, 0, 0, a) & mask
    out[k0 + 8] = _h(41, st, mt, 0, 0, ad) & mask
    return k0 + 9


@njit(cache=True)
def _sib_h_feats(W, P, base, h, s, m, mask, out, k0):
    """The 3 features of sibling part ``(h, s, m)`` with ``h``'s tag (template 40), written
    at ``out[k0:]``; returns ``k0 + 3``."""
    st, sw, a, ad = _sib_atoms(W, P, base, h, s, m)
    ht = P[base + h]
    mt = P[base + m]
    out[k0] = _h(40, ht, st, mt, 0, 0) & mask
    out[k0 + 1] = _h(40, ht, st, mt, 0, a) & mask
    out[k0 + 2] = _h(40, ht, st, mt, 0, ad) & mask
    return k0 + 3


@njit(cache=True)
def _sib_feats(W, P, base, h, s, m, mask, out):
    """Write the hashed feature ids of sibling part ``(h, s, m)`` (``s = h``: ``m`` is the
    innermost modifier of its side) into ``out``; returns how many (``N_SIB_FEATS``)."""
    k = _sib_h_feats(W, P, base, h, s, m, mask, out, 0)
    return _sib_sm_feats(W, P, base, h, s, m, mask, out, k)


@njit(cache=True, parallel=True)
def sibling_scores(w, W, P, F, tok_off, lengths, trip_off, out):
    """Sibling-part scores of a batch: ``out[trip_off[b] + (h * (n+1) + s) * (n+1) + m] =
    w . f(h, s, m)`` for every sentence ``b`` (``n = lengths[b]``), every arc ``h -> m`` and
    every ``s = h`` or strictly between ``h`` and ``m``; the other entries are left as they
    are (the decoder never reads them).  The 9 features without ``h``'s token are summed once
    per ``(s, m)`` pair (and per side for ``s = h``), so a part costs 3 hashes.  Parallel
    across sentences."""
    mask = np.int64(w.shape[0] - 1)
    for b in prange(lengths.shape[0]):
        n = lengths[b]
        base = tok_off[b]
        n1 = n + 1
        buf = np.empty(N_SIB_FEATS, dtype=np.int64)
        o = trip_off[b]
        # pair[s, m]: s a real sibling (1..n); inner[side, m]: m innermost on that side
        pair = np.zeros(n1 * n1)
        inner = np.zeros(2 * n1)
        for s in range(1, n1):
            for m in range(1, n1):
                if s != m:
                    # any head beyond s on the far side of m gives the same 9 features
                    k = _sib_sm_feats(W, P, base, 0 if m > s else n1, s, m, mask, buf, 0)
                    v = 0.0
                    for i in range(k):
                        v += w[buf[i]]
                    pair[s * n1 + m] = v
        for m in range(1, n1):
            for side in range(2):
                hh = 0 if side == 1 else n1      # a head left (side 1) / right (0) of m
                k = _sib_sm_feats(W, P, base, hh, hh, m, mask, buf, 0)
                v = 0.0
                for i in range(k):
                    v += w[buf[i]]
                inner[side * n1 + m] = v
        # (h, s) outer and m inner: the writes run along the last axis
        for h in range(n1):
            for s in range(h, n1):          # right modifiers m > s >= h (s = h: innermost)
                row = o + (h * n1 + s) * n1
                for m in range(s + 1, n1):
                    k = _sib_h_feats(W, P, base, h, s, m, mask, buf, 0)
                    v = inner[n1 + m] if s == h else pair[s * n1 + m]
                    for i in range(k):
                        v += w[buf[i]]
                    out[row + m] = v
            for s in range(1, h + 1):       # left modifiers m < s <= h (s = h: innermost)
                row = o + (h * n1 + s) * n1
                for m in range(1, s):
                    k = _sib_h_feats(W, P, base, h, s, m, mask, buf, 0)
                    v = inner[m] if s == h else pair[s * n1 + m]
                    for i in range(k):
                        v += w[buf[i]]
                    out[row + m] = v
    return out


@njit(cache=True)
def _fill_sibling_parts(heads, off, n, sib):
    """``sib[i]`` = the sibling ``s`` of word ``i + 1`` (its head's modifier next to it on the
    head's side, closer to the head; the head itself for the innermost), from the 1-based
    ``heads[off:off + n]`` (linear time: one scan per side)."""
    last = np.empty(n + 1, dtype=np.int64)
    for j in range(n + 1):          # right modifiers, scanning left to right
        last[j] = j
    for m in range(1, n + 1):
        h = heads[off + m - 1]
        if 0 <= h < m:
            sib[m - 1] = last[h]
            last[h] = m
    for j in range(n + 1):          # left modifiers, scanning right to left
        last[j] = j
    for m in range(n, 0, -1):
        h = heads[off + m - 1]
        if h > m:
            sib[m - 1] = last[h]
            last[h] = m


@njit(cache=True)
def tree_sibling_parts(heads):
    """The ``(h, s, m)`` sibling parts of one tree (1-based heads, 0 = root): an ``(n, 3)``
    array, row ``m - 1`` for word ``m``."""
    n = heads.shape[0]
    sib = np.empty(n, dtype=np.int64)
    _fill_sibling_parts(heads, 0, n, sib)
    out = np.empty((n, 3), dtype=np.int64)
    for i in range(n):
        out[i, 0] = heads[i]
        out[i, 1] = sib[i]
        out[i, 2] = i + 1
    return out


@njit(cache=True)
def sibling_update(w, u, c, W, P, F, tok_off, lengths, gold, pred, head_off, scale):
    """Averaged-perceptron update of the sibling features of a batch (with
    :func:`perceptron_update` for the arcs): for every sentence whose predicted tree differs
    from the gold one, ``+scale`` on the features of the gold tree's sibling parts and
    ``-scale`` on the predicted tree's that differ from them (a part of both trees cancels),
    in ``w`` and ``c * scale`` in ``u``.  Returns the number of sibling parts that differ."""
    mask = np.int64(w.shape[0] - 1)
    buf = np.empty(N_SIB_FEATS, dtype=np.int64)
    changed = 0
    for b in range(lengths.shape[0]):
        n = lengths[b]
        if n == 0:
            continue
        base = tok_off[b]
        o = head_off[b]
        sg = np.empty(n, dtype=np.int64)
        sp = np.empty(n, dtype=np.int64)
        _fill_sibling_parts(gold, o, n, sg)
        _fill_sibling_parts(pred, o, n, sp)
        for i in range(n):
            g = gold[o + i]
            p = pred[o + i]
            if g == p and sg[i] == sp[i]:
                continue
            changed += 1
            k = _sib_feats(W, P, base, g, sg[i], i + 1, mask, buf)
            for j in range(k):
                w[buf[j]] += scale
                u[buf[j]] += c * scale
            k = _sib_feats(W, P, base, p, sp[i], i + 1, mask, buf)
            for j in range(k):
                w[buf[j]] -= scale
                u[buf[j]] -= c * scale
    return changed


def sibling_features(W, P, F, n, h, s, m, bits):
    """The hashed feature ids of one sibling part ``(h, s, m)`` of one sentence (token id
    arrays with the root at position 0; ``s = h``: ``m`` is the innermost modifier): for tests
    and inspection."""
    buf = np.empty(N_SIB_FEATS, dtype=np.int64)
    k = _sib_feats(np.asarray(W, np.int64), np.asarray(P, np.int64), 0, h, s, m,
                   np.int64((1 << bits) - 1), buf)
    return buf[:k].copy()


@njit(cache=True, parallel=True)
def candidate_tree_scores(w, W, P, F, tok_off, lengths, heads, cand_off, cand_hoff, out_arc,
                          out_sib):
    """Scores of given trees under a second-order model (``w``): for every candidate ``c`` of
    every sentence ``b`` (candidates ``cand_off[b] .. cand_off[b+1]``, 1-based heads at
    ``heads[cand_hoff[c]:]``, tokens at ``tok_off[b]`` with the root first),
    ``out_arc[c]`` = the sum of its arcs' scores ``w . f(h -> m)`` and ``out_sib[c]`` = the sum
    of its sibling parts' scores ``w . f(h, s, m)`` (:func:`tree_sibling_parts`).  The arc
    scores of a sentence are computed once per distinct arc of its candidates (a lazily filled
    ``(n+1)^2`` block: a k-best list shares most arcs); the 12 sibling features of each part
    are hashed per candidate.  Parallel across sentences."""
    mask = np.int64(w.shape[0] - 1)
    for b in prange(lengths.shape[0]):
        n = lengths[b]
        base = tok_off[b]
        n1 = n + 1
        arc = np.full(n1 * n1, np.nan)
        buf = np.empty(MAX_FEATS + 2 * n1, dtype=np.int64)
        sib = np.empty(max(n, 1), dtype=np.int64)
        for c in range(cand_off[b], cand_off[b + 1]):
            hb = cand_hoff[c]
            sa = 0.0
            ss = 0.0
            if n > 0:
                _fill_sibling_parts(heads, hb, n, sib)
            for i in range(n):
                h = heads[hb + i]
                m = i + 1
                v = arc[h * n1 + m]
                if np.isnan(v):
                    k = _feats(W, P, F, base, n, h, m, mask, buf)
                    v = 0.0
                    for t in range(k):
                        v += w[buf[t]]
                    arc[h * n1 + m] = v
                sa += v
                k = _sib_feats(W, P, base, h, sib[i], m, mask, buf)
                for t in range(k):
                    ss += w[buf[t]]
            out_arc[c] = sa
            out_sib[c] = ss
    return out_arc, out_sib
