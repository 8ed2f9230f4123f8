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
"""
from __future__ import annotations

import numpy as np

from .data import N_CLASSES, Encoded, SequenceData

__all__ = ["BackoffLevel", "BackoffSHAG", "STATE_KINDS", "next_state_table"]

STATE_KINDS = {"none": 1, "f": 2, "fcp": 4}


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

    def weights(self, enc: Encoded, pair_off: np.ndarray, power: float = 1.0):
        """Arc weights ``lw`` (packed ``(n+1)^2 K`` per sentence) and stop weights ``ls``
        (``(n+1) 2 K`` per sentence) for the kernel, raised to ``power``."""
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
    def from_arrays(cls, meta: dict, arrays: dict, prefix: str) -> "BackoffSHAG":
        """Inverse of :meth:`to_arrays`."""
        m = cls(meta["states"], meta["lexical"], meta["n_tags"], meta["n_words"])
        for name in meta["levels"]:
            n_out = m.n_words + 1 if name.startswith("b") else m.n_tags + 1
            m.levels[name] = BackoffLevel.from_arrays(arrays, f"{prefix}{name}_", n_out)
        return m

