"""Deterministic split head automata with Witten-Bell back-off (DET, DET+F, LEX, LEX+F, LEX+FCP).

A deterministic SHAG has, per head and direction, a tiny automaton whose state depends only on
the modifiers generated so far:

* ``none`` (DET, LEX): one state;
* ``f`` (DET+F, LEX+F): "first modifier" vs "later modifier";
* ``fcp`` (LEX+FCP): first / after an ordinary modifier / after a coordination (C) / after
  punctuation (P).

Unlexicalised models (DET, DET+F) generate the next modifier tag (or STOP) with
``P(tag | head tag, direction, state)`` backed off to ``P(tag | direction, state)``.
Lexicalised models (Luque et al. 2012, sec. 5.2) use

* ``P_A(tag | head word, head tag, direction, state)`` backed off to
  ``P_A(tag | head tag, direction, state)`` (two levels) for the modifier tag (or STOP), and
* ``P_B(word | tag, head word, head tag, direction)`` backed off to
  ``P_B(word | tag, head tag, direction)`` and ``P_B(word | tag)`` (three levels) for the
  modifier word,

all interpolated with Witten-Bell weights and finally with a uniform distribution (so that
every arc has a positive weight).  Probabilities are looked up for whole batches with
``np.searchsorted`` on sorted integer keys.

Parsing needs the weight of every (head, modifier, state) of every sentence:
:meth:`BackoffSHAG.weights` computes them with the Numba kernel :func:`_weights_kernel`, with
the same floating-point operations as the NumPy look-ups (kept as the reference,
:meth:`BackoffSHAG._weights_numpy`).  P_A without the head word is a table over (head tag,
direction, state, outcome); the head-word level is applied to a row of it per head and
direction; the P_B counts of a modifier are gathered once per modifier (b1, from its events
re-sorted by word) or per head (b0, the head word's contexts), so that the loop over
(head, modifier) pairs only reads arrays.
"""
from __future__ import annotations

import numpy as np
from .._jit import njit

from .data import N_CLASSES, Encoded, SequenceData

__all__ = ["BackoffLevel", "BackoffSHAG", "STATE_KINDS", "next_state_table"]

STATE_KINDS = {"none": 1, "f": 2, "fcp": 4}
#: the state kind of the lexical back-off automaton of each lexical setting of SHAGParser
_LEX_STATES = {"lex": "none", "lex+f": "f", "lex+fcp": "fcp"}


def next_state_table(kind: str) -> np.ndarray:
    """Transition table ``next[state, token class]`` of a deterministic automaton kind."""
    if kind == "none":
        return np.zeros((1, N_CLASSES), dtype=np.int32)
    if kind == "f":
        return np.ones((2, N_CLASSES), dtype=np.int32)
    if kind == "fcp":
        # class 0 (other) -> 1, class 1 (coordination) -> 2, class 2 (punctuation) -> 3
        return np.tile(np.arange(1, 4, dtype=np.int32), (4, 1))
    raise ValueError(f"unknown state kind {kind!r} (none, f, fcp)")


class BackoffLevel:
    """Counts ``c(context, outcome)`` of one back-off level, as sorted integer keys."""

    def __init__(self, keys, counts, ctx_keys, ctx_tot, ctx_types, n_out: int):
        self.keys = np.asarray(keys, dtype=np.int64)
        self.counts = np.asarray(counts, dtype=np.float64)
        self.ctx_keys = np.asarray(ctx_keys, dtype=np.int64)
        self.ctx_tot = np.asarray(ctx_tot, dtype=np.float64)
        self.ctx_types = np.asarray(ctx_types, dtype=np.float64)
        self.n_out = int(n_out)

    @classmethod
    def fit(cls, ctx: np.ndarray, out: np.ndarray, n_out: int) -> "BackoffLevel":
        """Count the (context, outcome) events given as two integer arrays."""
        key = ctx.astype(np.int64) * n_out + out.astype(np.int64)
        keys, counts = np.unique(key, return_counts=True)
        ctx_keys, inv = np.unique(keys // n_out, return_inverse=True)
        ctx_tot = np.bincount(inv, weights=counts, minlength=len(ctx_keys))
        ctx_types = np.bincount(inv, minlength=len(ctx_keys)).astype(np.float64)
        return cls(keys, counts, ctx_keys, ctx_tot, ctx_types, n_out)

    @staticmethod
    def _find(sorted_keys: np.ndarray, q: np.ndarray):
        i = np.searchsorted(sorted_keys, q)
        i_c = np.minimum(i, max(len(sorted_keys) - 1, 0))
        hit = (i < len(sorted_keys)) & (sorted_keys[i_c] == q) if len(sorted_keys) else \
            np.zeros(q.shape, dtype=bool)
        return i_c, hit

    def smooth(self, ctx: np.ndarray, out: np.ndarray, backoff: np.ndarray) -> np.ndarray:
        """Witten-Bell: ``(c(ctx,out) + T(ctx) p_backoff) / (c(ctx) + T(ctx))``."""
        ctx = ctx.astype(np.int64)
        i, hit = self._find(self.keys, ctx * self.n_out + out.astype(np.int64))
        c = np.where(hit, self.counts[i] if len(self.counts) else 0.0, 0.0)
        j, chit = self._find(self.ctx_keys, ctx)
        tot = np.where(chit, self.ctx_tot[j] if len(self.ctx_tot) else 0.0, 0.0)
        typ = np.where(chit, self.ctx_types[j] if len(self.ctx_types) else 0.0, 0.0)
        denom = tot + typ
        return np.where(denom > 0, (c + typ * backoff) / np.where(denom > 0, denom, 1.0), backoff)

    def _indexed(self, scale: int = 1, n: int = 0) -> tuple:
        """The level as :func:`_weights_kernel` takes it, ``(keys, counts, ctx_keys, ctx_tot,
        ctx_types, lo, hi, ptr)``: ``keys[lo[j]:hi[j]]`` are the events of context
        ``ctx_keys[j]`` and ``ptr[v]`` (``v = 0..n``) is the first context ``>= v * scale``."""
        first = self.ctx_keys * self.n_out
        return (*(np.ascontiguousarray(a) for a in (self.keys, self.counts, self.ctx_keys,
                                                     self.ctx_tot, self.ctx_types)),
                np.searchsorted(self.keys, first), np.searchsorted(self.keys, first + self.n_out),
                np.searchsorted(self.ctx_keys, np.arange(n + 1, dtype=np.int64) * scale))

    def arrays(self, prefix: str) -> dict:
        """The level's arrays for a model file."""
        return {prefix + "keys": self.keys, prefix + "counts": self.counts,
                prefix + "ctxkeys": self.ctx_keys, prefix + "ctxtot": self.ctx_tot,
                prefix + "ctxtypes": self.ctx_types}

    @classmethod
    def from_arrays(cls, arrays: dict, prefix: str, n_out: int) -> "BackoffLevel":
        """Inverse of :meth:`arrays`."""
        return cls(arrays[prefix + "keys"], arrays[prefix + "counts"], arrays[prefix + "ctxkeys"],
                   arrays[prefix + "ctxtot"], arrays[prefix + "ctxtypes"], n_out)


# ---------------------------------------------------------------------- compiled weights
# The scalar look-ups repeat ``BackoffLevel._find`` / ``smooth``: a binary search (as
# ``np.searchsorted``) in a sub-range that holds the key whenever the level has it (levels as
# ``BackoffLevel.fit`` makes them: sorted, distinct keys), then the Witten-Bell formula with
# the same floating-point operations.

@njit(cache=True, inline="always")
def _lower(a, x, lo, hi):  # pragma: no cover - numba
    """First index ``i`` in ``[lo, hi)`` with ``a[i] >= x`` (``hi`` when none)."""
    n = hi - lo
    if n <= 0:
        return lo
    while n > 1:
        half = n >> 1
        if a[lo + half] < x:
            lo += half
        n -= half
    return lo + 1 if a[lo] < x else lo


@njit(cache=True, inline="always")
def _wb(keys, counts, key, lo, hi, typ, den, back):  # pragma: no cover - numba
    """``(c(ctx, out) + T back) / (c(ctx) + T)`` with ``T = typ``, ``den = c(ctx) + T``
    (``back`` unless ``den > 0``), the count of ``key = ctx * n_out + out`` searched in
    ``keys[lo:hi]``."""
    if not den > 0:
        return back
    i = _lower(keys, key, lo, hi)
    c = counts[i] if i < hi and keys[i] == key else 0.0
    return (c + typ * back) / den


@njit(cache=True, inline="always")
def _pow(p, power):  # pragma: no cover - numba
    """``p ** power`` as the NumPy reference computes it (bit for bit for powers 1 and 0.5)."""
    if power == 1.0:
        return p
    if power == 0.5:
        return np.sqrt(p)  # what NumPy's ``p ** 0.5`` computes
    return p ** power


@njit(cache=True)
def _local_tags(t0, n1, msym, n_tags):  # pragma: no cover - numba
    """The outcomes of one sentence: ``utag`` (its modifier tags, then STOP), ``loc[o]`` the
    index of outcome ``o`` in ``utag`` (-1 when absent), and ``start``, ``pos``: the
    modifiers ``pos[start[q]:start[q + 1]]`` (ascending) have tag ``utag[q]``."""
    loc = np.full(n_tags + 1, -1, dtype=np.int64)
    utag = np.empty(min(n1, n_tags + 1), dtype=np.int64)
    start = np.zeros(len(utag) + 1, dtype=np.int64)
    u = 0
    for m in range(1, n1):
        o = msym[t0 + m]
        if loc[o] < 0:
            loc[o] = u
            utag[u] = o
            u += 1
        start[loc[o] + 1] += 1
    loc[n_tags] = u
    utag[u] = n_tags
    for q in range(u):
        start[q + 1] += start[q]
    pos = np.empty(max(n1 - 1, 0), dtype=np.int64)
    fill = start.copy()
    for m in range(1, n1):
        q = loc[msym[t0 + m]]
        pos[fill[q]] = m
        fill[q] += 1
    return utag[:u + 1], loc, start, pos


@njit(cache=True)
def _pa_rows(t0, n1, hsym, wid, K, n_tags, n_words, pa, a0, utag, loc, power,
             ls):  # pragma: no cover - numba
    """Lexical P_A of one sentence: ``tab[i * 2 + dir, q * K + state]`` for head position
    ``i`` and outcome ``utag[q]``, the head-word level ``a0`` over ``pa``; writes the stop
    weights into ``ls``."""
    ak, ac, ack, act, acy, alo, ahi, aptr = a0
    nA = n_tags + 1
    H2K = (n_tags + 1) * 2 * K   # contexts (head tag, dir, state) per head word
    u1 = len(utag)
    tab = np.empty((n1 * 2, u1 * K))
    for i in range(n1):
        t = t0 + i
        w = wid[t] if wid[t] >= 0 else n_words + 1
        for d in range(2):
            c = hsym[t] * 2 + d
            for q in range(u1):
                for k in range(K):
                    tab[i * 2 + d, q * K + k] = pa[c, utag[q] * K + k]
        # the head word's contexts with this head tag: (head tag * 2 + dir) * K + state
        first = w * H2K + hsym[t] * 2 * K
        for j in range(_lower(ack, first, aptr[w], aptr[w + 1]), aptr[w + 1]):
            ctx = ack[j]
            if ctx >= first + 2 * K:
                break
            typ = acy[j]
            den = act[j] + typ
            if not den > 0:
                continue
            d, k = divmod(ctx - first, K)
            c = hsym[t] * 2 + d
            r = i * 2 + d
            for q in range(u1):
                tab[r, q * K + k] = (0.0 + typ * pa[c, utag[q] * K + k]) / den
            for e in range(alo[j], ahi[j]):
                o = ak[e] - ctx * nA
                if loc[o] >= 0:
                    tab[r, loc[o] * K + k] = (ac[e] + typ * pa[c, o * K + k]) / den
        for d in range(2):
            for k in range(K):
                ls[(t * 2 + d) * K + k] = _pow(tab[i * 2 + d, (u1 - 1) * K + k], power)
    return tab


@njit(cache=True)
def _pb_pairs(t0, n1, hsym, msym, wid, n_tags, n_words, b0, b0h, b1w, b1c, b2, loc, start,
              pos):  # pragma: no cover - numba
    """P_B of every (head ``i``, modifier ``m``) pair of one sentence, at ``i * n1 + m``."""
    b0k, b0c, b0ck, b0ct, b0cy, b0lo, b0hi, b0ptr = b0
    hkey, hmt, hd, hj = b0h
    wk, wc, wptr = b1w
    typ1, den1 = b1c
    b2k, b2c, b2ck, b2ct, b2cy, b2lo, b2hi, b2ptr = b2
    nB = n_words + 1
    H = n_tags + 1
    HB = H * 2                   # (head tag, dir) per tag
    # per modifier: the (tag) level ``pb2`` and the b1 counts ``cnt1`` by (head tag, dir)
    pb2 = np.empty(n1)
    mws = np.empty(n1, dtype=np.int64)
    cnt1 = np.zeros((n1, HB))
    for m in range(1, n1):
        t = t0 + m
        mt = msym[t]
        mw = wid[t] if wid[t] >= 0 else n_words
        mws[m] = mw
        j = b2ptr[mt]
        pb2[m] = 1.0 / nB
        if j < len(b2ck) and b2ck[j] == mt:
            pb2[m] = _wb(b2k, b2c, mt * nB + mw, b2lo[j], b2hi[j], b2cy[j], b2ct[j] + b2cy[j],
                         pb2[m])
        first = (mw * n_tags + mt) * HB
        lo = _lower(wk, first, wptr[mw], wptr[mw + 1])
        for e in range(lo, _lower(wk, first + HB, lo, wptr[mw + 1])):
            cnt1[m, wk[e] - first] = wc[e]
    # b1 over b2, every pair
    pb = np.empty(n1 * n1)
    for i in range(n1):
        hs = hsym[t0 + i]
        for m in range(1, n1):
            d = 1 if m > i else 0
            c2 = (msym[t0 + m] * H + hs) * 2 + d
            den = den1[c2]
            v = (cnt1[m, hs * 2 + d] + typ1[c2] * pb2[m]) / (den if den > 0 else 1.0)
            pb[i * n1 + m] = v if den > 0 else pb2[m]
    # b0 over that where the head word has the context (tag, head tag, dir): its contexts
    # with the head's tag, then the modifiers of that tag on that side
    for i in range(n1):
        t = t0 + i
        w = wid[t] if wid[t] >= 0 else n_words + 1
        x = w * H + hsym[t]
        lo = _lower(hkey, x, b0ptr[w], b0ptr[w + 1])
        for q in range(lo, _lower(hkey, x + 1, lo, b0ptr[w + 1])):
            if loc[hmt[q]] < 0:
                continue
            j = hj[q]
            typ = b0cy[j]
            den = b0ct[j] + typ
            for p in range(start[loc[hmt[q]]], start[loc[hmt[q]] + 1]):
                m = pos[p]
                if m != i and (m > i) == (hd[q] == 1):
                    pb[i * n1 + m] = _wb(b0k, b0c, b0ck[j] * nB + mws[m], b0lo[j], b0hi[j], typ,
                                         den, pb[i * n1 + m])
    return pb


@njit(cache=True)
def _weights_kernel(tok_off, pair_off, hsym, msym, wid, K, n_tags, n_words, lexical, pa, a0, b0,
                    b0h, b1w, b1c, b2, power, lw, ls):  # pragma: no cover - numba
    """Fill ``lw`` (zeroed, packed ``(n+1)^2 K`` per sentence) and ``ls`` (``(n+1) 2 K``).

    ``pa[head tag * 2 + dir, (tag or STOP) * K + state]`` is P_A without the head word (all
    of it for unlexicalised models).  Lexical models add the (head word, head tag, dir,
    state) level ``a0`` to it and multiply by P_B = ``b0(b1(b2(uniform)))``.  The levels come
    as :meth:`BackoffLevel._indexed` (``ptr`` by head word for ``a0`` and ``b0``, by tag for
    ``b2``); ``b0h = (word * H + head tag, tag, dir, context index)`` lists b0's contexts
    in that order; ``b1w = (keys, counts, ptr)`` holds b1's events ordered by (word, tag,
    head tag, dir), ``ptr`` by word, and ``b1c = (T, c + T)`` its terms by context.
    """
    loc = np.arange(n_tags + 1)   # column of each outcome: in ``pa``, then in ``tab``
    tab = pa
    pb = np.ones(0)
    for b in range(len(tok_off) - 1):
        t0 = tok_off[b]
        n1 = tok_off[b + 1] - t0
        if lexical:
            utag, loc, start, pos = _local_tags(t0, n1, msym, n_tags)
            tab = _pa_rows(t0, n1, hsym, wid, K, n_tags, n_words, pa, a0, utag, loc, power, ls)
            pb = _pb_pairs(t0, n1, hsym, msym, wid, n_tags, n_words, b0, b0h, b1w, b1c, b2, loc,
                           start, pos)
        else:
            for t in range(t0, t0 + n1):
                for d in range(2):
                    for k in range(K):
                        ls[(t * 2 + d) * K + k] = _pow(pa[hsym[t] * 2 + d, n_tags * K + k], power)
        for i in range(n1):
            for m in range(1, n1):
                if m == i:
                    continue
                d = 1 if m > i else 0
                r = i * 2 + d if lexical else hsym[t0 + i] * 2 + d
                col = loc[msym[t0 + m]] * K
                base = (pair_off[b] + i * n1 + m) * K
                for k in range(K):
                    p = tab[r, col + k] * pb[i * n1 + m] if lexical else tab[r, col + k]
                    lw[base + k] = _pow(p, power)


class BackoffSHAG:
    """Deterministic (optionally lexicalised) SHAG with back-off estimates.

    ``states`` is ``"none"``, ``"f"`` or ``"fcp"``; ``lexical`` adds head words to P_A and the
    word model P_B.  ``n_tags`` is the number of modifier tags (STOP is outcome ``n_tags``),
    ``n_words`` the word vocabulary size (unknown words have id ``n_words``).
    """

    def __init__(self, states: str = "none", lexical: bool = False, n_tags: int = 0,
                 n_words: int = 0):
        self.states = states
        self.lexical = bool(lexical)
        self.K = STATE_KINDS[states]
        self.next_state = next_state_table(states)
        self.n_tags = int(n_tags)
        self.n_words = int(n_words)
        self.levels: dict[str, BackoffLevel] = {}
        self._tables = None   # (levels, tables) of _kernel_tables

    # ------------------------------------------------------------------ contexts
    def _ctx_a(self, hsym, hwid, d, k):
        """P_A contexts: fine (head word, head tag, dir, state), coarse (head tag, dir, state)."""
        H = self.n_tags + 1
        coarse = (hsym.astype(np.int64) * 2 + d) * self.K + k
        if not self.lexical:
            return [coarse], (d.astype(np.int64) * self.K + k)
        w = np.where(hwid < 0, self.n_words + 1, hwid).astype(np.int64)  # root word id
        fine = w * (H * 2 * self.K) + coarse
        return [fine, coarse], None

    def _ctx_b(self, mtag, hsym, hwid, d):
        """P_B contexts: (tag, head word, head tag, dir), (tag, head tag, dir), (tag)."""
        H = self.n_tags + 1
        c3 = mtag.astype(np.int64)
        c2 = (c3 * H + hsym) * 2 + d
        w = np.where(hwid < 0, self.n_words + 1, hwid).astype(np.int64)
        c1 = w * (self.n_tags * H * 2) + c2
        return [c1, c2, c3]

    # ------------------------------------------------------------------ training
    def fit(self, enc: Encoded, seqs: SequenceData) -> "BackoffSHAG":
        """Count events from the gold sequences."""
        st = seqs.states(enc.cls, self.next_state)
        # modifier events
        q_of_mod = np.repeat(np.arange(len(seqs.seq_pos)), seqs.seq_len)
        hpos = seqs.seq_pos[q_of_mod]
        d_m = seqs.seq_dir[q_of_mod].astype(np.int64)
        out_m = enc.msym[seqs.mods].astype(np.int64)
        # STOP events: state after the last modifier
        last = seqs.seq_start + seqs.seq_len - 1
        has = seqs.seq_len > 0
        st_stop = np.zeros(len(seqs.seq_pos), dtype=np.int64)
        st_stop[has] = self.next_state[st[last[has]], enc.cls[seqs.mods[last[has]]]]
        hpos_all = np.concatenate([hpos, seqs.seq_pos])
        d_all = np.concatenate([d_m, seqs.seq_dir.astype(np.int64)])
        k_all = np.concatenate([st.astype(np.int64), st_stop])
        out_all = np.concatenate([out_m, np.full(len(seqs.seq_pos), self.n_tags, dtype=np.int64)])
        ctxs, base_ctx = self._ctx_a(enc.hsym[hpos_all], enc.wid[hpos_all], d_all, k_all)
        n_out = self.n_tags + 1
        self.levels = {}
        for i, c in enumerate(ctxs):
            self.levels[f"a{i}"] = BackoffLevel.fit(c, out_all, n_out)
        if base_ctx is not None:
            self.levels["abase"] = BackoffLevel.fit(base_ctx, out_all, n_out)
        if self.lexical:
            mw = enc.wid[seqs.mods].astype(np.int64)
            mw = np.where(mw < 0, self.n_words, mw)
            for i, c in enumerate(self._ctx_b(out_m, enc.hsym[hpos], enc.wid[hpos], d_m)):
                self.levels[f"b{i}"] = BackoffLevel.fit(c, mw, self.n_words + 1)
        return self

    # ------------------------------------------------------------------ scoring
    def _p_a(self, hsym, hwid, d, k, out):
        ctxs, base_ctx = self._ctx_a(hsym, hwid, d, k)
        p = np.full(len(out), 1.0 / (self.n_tags + 1))
        if base_ctx is not None:
            p = self.levels["abase"].smooth(base_ctx, out, p)
        for i in range(len(ctxs) - 1, -1, -1):
            p = self.levels[f"a{i}"].smooth(ctxs[i], out, p)
        return p

    def _p_b(self, mtag, mw, hsym, hwid, d):
        ctxs = self._ctx_b(mtag, hsym, hwid, d)
        p = np.full(len(mw), 1.0 / (self.n_words + 1))
        mw = np.where(mw < 0, self.n_words, mw).astype(np.int64)
        for i in range(len(ctxs) - 1, -1, -1):
            p = self.levels[f"b{i}"].smooth(ctxs[i], mw, p)
        return p

    def _kernel_tables(self) -> tuple:
        """The model as :func:`_weights_kernel` takes it, ``(pa, a0, b0, b0h, b1w, b1c, b2)``,
        built once for the current level objects and kept (levels are never changed in place)."""
        levels = sorted(self.levels.items())
        cached = getattr(self, "_tables", None)
        if cached is not None and len(cached[0]) == len(levels) and all(
                a == b and x is y for (a, x), (b, y) in zip(cached[0], levels)):
            return cached[1]
        K, M, H = self.K, self.n_tags, self.n_tags + 1
        # P_A without the head word over (head tag, dir, outcome, state), by the NumPy code
        hs, d, out, k = (g.ravel() for g in np.meshgrid(np.arange(H), np.arange(2),
                                                         np.arange(M + 1), np.arange(K),
                                                         indexing="ij"))
        if self.lexical:   # the coarse level over uniform
            pa = self.levels["a1"].smooth((hs * 2 + d) * K + k, out, np.full(len(out), 1.0 / H))
        else:
            pa = self._p_a(hs, np.full(len(hs), -1), d, k, out)
        tables = [np.ascontiguousarray(pa.reshape(H * 2, (M + 1) * K))]
        if self.lexical:
            nB, HB = self.n_words + 1, H * 2
            b1 = self.levels["b1"]
            c2, mw = np.divmod(b1.keys, nB)
            wkey = (mw * M + c2 // HB) * HB + c2 % HB       # (word, tag, head tag, dir)
            order = np.argsort(wkey, kind="stable")
            typ1, den1 = np.zeros(M * HB), np.zeros(M * HB)
            sel = (b1.ctx_keys >= 0) & (b1.ctx_keys < M * HB)
            typ1[b1.ctx_keys[sel]] = b1.ctx_types[sel]
            den1[b1.ctx_keys[sel]] = b1.ctx_tot[sel] + b1.ctx_types[sel]
            b0 = self.levels["b0"]
            w0, c2 = np.divmod(b0.ctx_keys, M * HB)   # c2 = (tag * H + head tag) * 2 + dir
            hkey = w0 * H + (c2 // 2) % H
            horder = np.argsort(hkey * (M * HB) + c2, kind="stable")
            tables += [self.levels["a0"]._indexed(H * 2 * K, self.n_words + 2),
                       b0._indexed(M * HB, self.n_words + 2),
                       (hkey[horder], c2[horder] // HB, c2[horder] % 2, horder),
                       (wkey[order], b1.counts[order],
                        np.searchsorted(wkey[order], np.arange(nB + 1, dtype=np.int64) * M * HB)),
                       (typ1, den1), self.levels["b2"]._indexed(1, M)]
        else:              # only ``pa`` is read: placeholders of the right types
            lev = self.levels["a0"]._indexed()
            tables += [lev, lev, (lev[0], lev[0], lev[0], lev[0]), (lev[0], lev[1], lev[7]),
                       (lev[3], lev[4]), lev]
        self._tables = (levels, tuple(tables))
        return self._tables[1]

    def weights(self, enc: Encoded, pair_off: np.ndarray, power: float = 1.0):
        """Arc weights ``lw`` (packed ``(n+1)^2 K`` per sentence) and stop weights ``ls``
        (``(n+1) 2 K`` per sentence) for the kernel, raised to ``power``.

        Computed by :func:`_weights_kernel`; a batch the encoder cannot have made (a tag out
        of ``0..n_tags-1``, a word id out of ``-1..n_words``, ``pair_off`` other than
        ``pair_offsets``) goes to the NumPy reference :meth:`_weights_numpy`.
        """
        hsym = np.ascontiguousarray(enc.hsym, dtype=np.int64)
        msym = np.ascontiguousarray(enc.msym, dtype=np.int64)
        wid = np.ascontiguousarray(enc.wid, dtype=np.int64)
        tok_off = np.ascontiguousarray(enc.tok_off, dtype=np.int64)
        lens1 = np.diff(tok_off)
        off = np.zeros(len(lens1) + 1, dtype=np.int64)
        np.cumsum(lens1 * lens1, out=off[1:])
        if not np.array_equal(pair_off, off) or len(hsym) and (
                hsym.min() < 0 or hsym.max() > self.n_tags or msym.min() < 0
                or msym.max() >= self.n_tags or wid.min() < -1 or wid.max() > self.n_words):
            return self._weights_numpy(enc, pair_off, power)
        lw = np.zeros(int(off[-1]) * self.K)
        ls = np.empty(len(hsym) * 2 * self.K)
        _weights_kernel(tok_off, off, hsym, msym, wid, self.K, self.n_tags, self.n_words,
                        self.lexical, *self._kernel_tables(), float(power), lw, ls)
        return lw, ls

    def _weights_numpy(self, enc: Encoded, pair_off: np.ndarray, power: float = 1.0):
        """NumPy reference of :meth:`weights` (batched ``np.searchsorted`` look-ups)."""
        K = self.K
        lens1 = np.diff(enc.tok_off)
        n_pairs = lens1 * lens1
        total = int(n_pairs.sum())
        # global head / modifier position of every (h, m) pair, sentence by sentence
        sent = np.repeat(np.arange(len(lens1)), n_pairs)
        local = np.arange(total) - np.repeat(pair_off[:-1], n_pairs)
        n1 = lens1[sent]
        h = enc.tok_off[sent] + local // n1
        m = enc.tok_off[sent] + local % n1
        valid = (local % n1 != 0) & (h != m)
        hv, mv = h[valid], m[valid]
        d = (mv > hv).astype(np.int64)
        P = len(hv)
        hsym_r = np.repeat(enc.hsym[hv], K)
        hwid_r = np.repeat(enc.wid[hv], K)
        d_r = np.repeat(d, K)
        k_r = np.tile(np.arange(K, dtype=np.int64), P)
        out_r = np.repeat(enc.msym[mv].astype(np.int64), K)
        p = self._p_a(hsym_r, hwid_r, d_r, k_r, out_r)
        if self.lexical:
            pb = self._p_b(enc.msym[mv], enc.wid[mv], enc.hsym[hv], enc.wid[hv], d)
            p = p * np.repeat(pb, K)
        lw = np.zeros(total * K)
        idx = (np.nonzero(valid)[0][:, None] * K + np.arange(K)[None, :]).ravel()
        lw[idx] = p ** power if power != 1.0 else p
        # stops: every position, both directions, every state
        T = len(enc.hsym)
        pos = np.repeat(np.arange(T), 2 * K)
        dd = np.tile(np.repeat(np.arange(2, dtype=np.int64), K), T)
        kk = np.tile(np.arange(K, dtype=np.int64), 2 * T)
        ls = self._p_a(enc.hsym[pos], enc.wid[pos], dd, kk,
                       np.full(len(pos), self.n_tags, dtype=np.int64))
        if power != 1.0:
            ls = ls ** power
        return lw, ls

    # ------------------------------------------------------------------ persistence
    def to_arrays(self, prefix: str) -> tuple[dict, dict]:
        """(meta, arrays) describing this model, array names prefixed by ``prefix``."""
        meta = {"states": self.states, "lexical": self.lexical, "n_tags": self.n_tags,
                "n_words": self.n_words, "levels": sorted(self.levels)}
        arrays = {}
        for name, lev in self.levels.items():
            arrays.update(lev.arrays(f"{prefix}{name}_"))
        return meta, arrays

    @classmethod
    def from_arrays(cls, meta: dict, arrays: dict, prefix: str, n_tags: int | None = None,
                    n_words: int | None = None) -> "BackoffSHAG":
        """Inverse of :meth:`to_arrays`, every field and array validated first (model files are
        untrusted: :mod:`fastspectral.io.validate`): the state kind, the levels the model kind
        has, each level's keys sorted, distinct and within its context space, its counts
        finite and >= 0; ``n_tags`` / ``n_words``: the sizes the parser's vocabularies give.
        A bad one raises :class:`~fastspectral.errors.ModelFileError` naming it."""
        from ..errors import ModelFileError
        from ..io import validate as V

        where = f"{prefix}back-off model"
        if not isinstance(meta, dict) or meta.get("states") not in STATE_KINDS or \
                not isinstance(meta.get("lexical"), bool):
            raise ModelFileError(f"{where}: unknown state kind or lexical flag")
        M = V.meta_int(meta, "n_tags", 1, where)
        W = V.meta_int(meta, "n_words", 0, where)
        if (n_tags is not None and M != n_tags) or (n_words is not None and W != n_words):
            raise ModelFileError(f"{where}: {M} tags / {W} words where the parser has "
                                 f"{n_tags} / {n_words}")
        m = cls(meta["states"], meta["lexical"], M, W)
        H, K = M + 1, m.K
        # context spaces of the levels (see _ctx_a / _ctx_b)
        space = ({"a0": (W + 2) * H * 2 * K, "a1": H * 2 * K, "b0": (W + 2) * M * H * 2,
                  "b1": M * H * 2, "b2": M} if m.lexical else {"a0": H * 2 * K, "abase": 2 * K})
        names = V.meta_list(meta, "levels", str, where)
        if sorted(names) != sorted(space):
            raise ModelFileError(f"{where}: levels {sorted(names)} where a "
                                 f"{'lexical ' if m.lexical else ''}model has {sorted(space)}")
        for name in names:
            n_out = W + 1 if name.startswith("b") else M + 1
            p = f"{prefix}{name}_"
            keys = V.get(arrays, p + "keys", "int", dtype=np.int64)
            V.check_index(keys, p + "keys", 0, space[name] * n_out)
            V.check_sorted(keys, p + "keys")
            V.check_nonneg(V.get(arrays, p + "counts", "float", shape=keys.shape), p + "counts")
            ctx = V.get(arrays, p + "ctxkeys", "int", dtype=np.int64)
            V.check_index(ctx, p + "ctxkeys", 0, space[name])
            V.check_sorted(ctx, p + "ctxkeys")
            if keys.size and not np.isin(keys // n_out, ctx).all():
                V.fail(p + "keys", "an event whose context is not in ctxkeys")
            for k in ("ctxtot", "ctxtypes"):
                V.check_nonneg(V.get(arrays, p + k, "float", shape=ctx.shape), p + k)
            m.levels[name] = BackoffLevel.from_arrays(arrays, p, n_out)
        return m

