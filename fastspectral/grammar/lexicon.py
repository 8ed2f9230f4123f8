"""Smoothed lexicon P(word | tag) with unknown-word signatures.

Words are mapped to *signature classes* built from their shape (Berkeley parser style): the class
name starts with ``UNK`` and adds capitalisation (``-INITC`` sentence-initial capital,
``-KNOWNLC`` when its lower-case form is known, ``-CAPS``, ``-LC``), ``-NUM`` (a digit),
``-DASH`` (a hyphen) and an English suffix (``-s``, ``-ed``, ``-ing``, ``-ion``, ``-er``, ``-est``,
``-ly``, ``-ity``, ``-y``, ``-al``).

Estimation, with ``c`` training counts and rare words those seen at most ``rare_threshold`` times:

* ``P(T | sig) = (c_rare(T, sig) + s2 * P_rare(T)) / (c_rare(sig) + s2)`` where ``P_rare(T)`` is the
  tag distribution of rare tokens (so only open-class tags get unknown-word mass);
* a known word: ``P(T | w) = (c(T, w) + s1 * P(T | sig(w))) / (c(w) + s1)``;
* an unknown word: ``P(T | w) = P(T | sig(w))``;
* ``P(w | T) = P(T | w) P(w) / P(T)`` with ``P(w) = (c(w) + 0.5) / (N + 0.5 (V + 1))`` for known
  words and the rare-token mass ``P_unk = N_rare / N`` shared by an unknown word.

The lexicon works over whatever preterminal symbols the grammar uses (plain or parent-annotated
tags); given POS tags restrict a word to the symbols whose base label is that tag.

**Punctuation** (:meth:`Lexicon.set_punctuation`, set by the grammar): the tags EVALB deletes with
COLLINS.prm (:data:`PUNCT_TAGS`: ``,`` ``:`` ````` ``''`` ``.``) decide which words EVALB counts, so
a token given a punctuation tag in one tree and a word tag in the other makes EVALB reject the
sentence ("Length unmatch"; more than ten such sentences abort its report).  Hence:

* a word seen in training only with punctuation tags gets only those tags;
* a word seen in training only with other tags never gets a punctuation tag;
* an unknown token made only of punctuation characters (:data:`PUNCT_CHARS`) gets the punctuation
  tag of its shape (:func:`punctuation_tag`: ``.`` for ``. ? !`` endings, ``:`` for ``; -- ...``,
  `````` / ``''`` for quotes, ``,``), and any other unknown token no punctuation tag;
* the apostrophe ``'`` (a possessive ``POS`` or a closing quote ``''`` in the treebank) is a closing
  quote when an opening single quote ````` before it in the sentence is still open (the Penn
  Treebank pairs ````` and ``'``) or when the word before it does not end in s, z or x (English
  writes the bare possessive apostrophe only after those: *investors'*, *Jones'*), else a
  possessive.
"""
from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

_SUFFIXES = ("ed", "ing", "ion", "er", "est", "ly", "ity", "y", "al")

#: POS tags deleted by EVALB with COLLINS.prm (the words it does not count)
PUNCT_TAGS = frozenset({",", ":", "``", "''", "."})
#: characters a token may consist of to be given a punctuation tag by shape
PUNCT_CHARS = frozenset(".,:;!?`'\"-\u2013\u2014\u2026\u201c\u201d\u2018\u2019\u00ab\u00bb\u201e")


def punctuation_tag(word: str) -> str | None:
    """The punctuation tag of a token made only of :data:`PUNCT_CHARS` (None otherwise): the
    Penn Treebank's conventions (``.`` ``?`` ``!`` -> ``.``; ``,`` -> ``,``; quotes -> ``````
    / ``''``; ``; : -- ...`` and the rest -> ``:``)."""
    if not word or any(ch not in PUNCT_CHARS for ch in word):
        return None
    if all(ch in "`\u201c\u2018\u00ab\u201e" for ch in word):
        return "``"
    if all(ch in "'\"\u201d\u2019\u00bb" for ch in word):
        return "''"
    if word == ",":
        return ","
    if word[-1] in "?!" or word == ".":
        return "."
    return ":"


def signature(word: str, position: int, known_lower: bool = False) -> str:
    """Unknown-word class of ``word`` at sentence position ``position`` (0-based)."""
    sig = ["UNK"]
    n_caps = 0
    has_digit = has_dash = has_lower = False
    for ch in word:
        if ch.isdigit():
            has_digit = True
        elif ch == "-":
            has_dash = True
        elif ch.isalpha():
            if ch.isupper() or ch.istitle():
                n_caps += 1
            elif ch.islower():
                has_lower = True
    lower = word.lower()
    if word[:1].isupper() or word[:1].istitle():
        if position == 0 and n_caps == 1:
            sig.append("-INITC")
            if known_lower:
                sig.append("-KNOWNLC")
        else:
            sig.append("-CAPS")
    elif not word[:1].isalpha() and n_caps > 0:
        sig.append("-CAPS")
    elif has_lower:
        sig.append("-LC")
    if has_digit:
        sig.append("-NUM")
    if has_dash:
        sig.append("-DASH")
    if lower.endswith("s") and len(lower) >= 3:
        if lower[-2] not in "siu'":
            sig.append("-s")
    elif len(lower) >= 5 and not has_dash and not (has_digit and n_caps > 0):
        for suf in _SUFFIXES:
            if lower.endswith(suf):
                sig.append("-" + suf)
                break
    return "".join(sig)


class Lexicon:
    """P(word | tag) over a grammar's preterminal symbols (see the module docstring).

    Build with :meth:`fit` from ``(word, position, tag_symbol_id)`` triples; query with
    :meth:`entries` (sparse, for the kernels) or :meth:`tag_word_scores` (dense).
    """

    def __init__(self, n_symbols: int, rare_threshold: int = 1, s1: float = 0.5, s2: float = 1.0):
        self.n_symbols = n_symbols
        self.rare_threshold = rare_threshold
        self.s1 = s1
        self.s2 = s2
        self._word_cache: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._sig_cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._sig_cols_cache: dict[str, np.ndarray] = {}
        self._punct = None                    # bool per symbol: a punctuation tag (see module doc)
        self._punct_by_tag: dict = {}

    def set_punctuation(self, tag_symbols: dict) -> None:
        """Enable the punctuation rules of the module docstring; ``tag_symbols`` maps each base
        tag to its preterminal symbol ids (:attr:`Grammar.tag_symbols`)."""
        mask = np.zeros(self.n_symbols, dtype=bool)
        by_tag = {}
        for tag, ids in tag_symbols.items():
            if tag in PUNCT_TAGS:
                mask[np.asarray(ids, dtype=np.int64)] = True
                by_tag[tag] = np.asarray(ids, dtype=np.int64)
        self._punct = mask if mask.any() else None
        self._punct_by_tag = by_tag
        self._word_cache.clear()

    # -- estimation ----------------------------------------------------------------------------
    def fit(self, words, positions, tags):
        """Estimate from parallel sequences of training tokens: word, sentence position, tag id."""
        tag_word = Counter(zip(tags, words))
        word_count = Counter(words)
        tag_count = Counter(tags)
        n_tokens = len(words)
        lower_known = {w.lower() for w in word_count}
        rare_tag_sig = Counter()
        rare_tag = Counter()
        for w, p, t in zip(words, positions, tags):
            if word_count[w] <= self.rare_threshold:
                rare_tag_sig[(t, signature(w, p, w.lower() in lower_known and w.lower() != w))] += 1
                rare_tag[t] += 1
        self._set_tables(dict(tag_word), dict(word_count), dict(tag_count), n_tokens,
                         dict(rare_tag_sig), dict(rare_tag))
        return self

    def _set_tables(self, tag_word, word_count, tag_count, n_tokens, rare_tag_sig, rare_tag):
        self.tag_word = tag_word
        self.word_count = word_count
        self.tag_count = tag_count
        self.n_tokens = n_tokens
        self.rare_tag_sig = rare_tag_sig
        self.rare_tag = rare_tag
        self._lower_known = {w.lower() for w in word_count}
        S = self.n_symbols
        self.p_tag = np.zeros(S)
        for t, c in tag_count.items():
            self.p_tag[t] = c / n_tokens
        n_rare = sum(rare_tag.values())
        if n_rare == 0:  # tiny training sets: fall back to all tokens
            rare_tag = dict(tag_count)
            n_rare = n_tokens
        self.p_rare_tag = np.zeros(S)
        for t, c in rare_tag.items():
            self.p_rare_tag[t] = c / n_rare
        self.p_unk = max(n_rare, 1) / (n_tokens + 1.0)
        self._sig_counts: dict[str, dict[int, int]] = defaultdict(dict)
        for (t, sig), c in rare_tag_sig.items():
            self._sig_counts[sig][t] = c
        self._word_tags: dict[str, dict[int, int]] = defaultdict(dict)
        for (t, w), c in tag_word.items():
            self._word_tags[w][t] = c
        self.vocab_size = len(word_count)
        self._cols = np.flatnonzero(self.p_tag > 0)     # the symbols seen in training
        self._col_of = np.full(S, -1, dtype=np.int64)
        self._col_of[self._cols] = np.arange(self._cols.shape[0])
        self._word_cache.clear()
        self._sig_cache.clear()
        self._sig_cols_cache = {}

    # -- queries -------------------------------------------------------------------------------
    def _p_tag_given_sig_cols(self, sig: str) -> np.ndarray:
        """:meth:`_p_tag_given_sig` on the columns of the seen symbols (:attr:`_cols`)."""
        got = self._sig_cols_cache.get(sig)
        if got is None:
            self._sig_cols_cache[sig] = got = self._p_tag_given_sig(sig)[self._cols]
        return got

    def _p_tag_given_sig(self, sig: str) -> np.ndarray:
        got = self._sig_cache.get(sig)
        if got is None:
            dist = self.s2 * self.p_rare_tag.copy()
            counts = self._sig_counts.get(sig)
            total = self.s2
            if counts:
                for t, c in counts.items():
                    dist[t] += c
                    total += c
            dist /= total
            self._sig_cache[sig] = got = dist
        return got

    def _word_entry(self, word: str, position: int):
        """(symbols, P(word | symbol)) for one token.

        The entry depends on the position only through ``position == 0`` (the ``-INITC``
        signatures), so it is cached per word type and that flag, for known and unknown words
        (the cache is emptied when it reaches :attr:`_CACHE_LIMIT` entries).  A miss computes
        one entry alone; callers with many sentences :meth:`prefetch` them first."""
        key = (word, position == 0)
        got = self._word_cache.get(key)
        if got is not None:
            return got
        got = self._compute_entry(word, position)
        if len(self._word_cache) >= self._CACHE_LIMIT:
            self._word_cache.clear()
        self._word_cache[key] = got
        return got

    #: most cached (word, sentence-initial) entries before the cache is emptied
    _CACHE_LIMIT = 500_000

    def _compute_entry(self, word: str, position: int):
        return self._compute_entries([(word, position == 0)])[0]

    #: rows of one block of :meth:`_compute_entries` (a block holds a few (rows, symbols) arrays)
    _BLOCK = 512

    def prefetch(self, sentences) -> None:
        """Compute the cached entries of every word type of ``sentences`` not yet cached, in
        vectorised blocks (:meth:`_compute_entries`), so that :meth:`entries` then only looks
        them up: the per-type work of a first pass over a corpus runs as a few array operations
        per block instead of a dozen small ones per type (it is GIL-held work, serial across
        threads).  :meth:`entries_many` does it by itself."""
        cache = self._word_cache
        keys = {(w, i == 0) for words in sentences for i, w in enumerate(words)}
        self._fill([k for k in keys if k not in cache])   # O(batch), whatever the cache's size

    def _fill(self, keys) -> dict:
        """Compute and cache the entries of ``keys`` (not cached; no repeats); returns them."""
        if not keys:
            return {}
        keys = sorted(keys)                  # a fixed order: the same blocks on every run
        cache = self._word_cache
        if len(cache) + len(keys) > self._CACHE_LIMIT:
            cache.clear()
        new = {}
        B = self._BLOCK
        for a in range(0, len(keys), B):
            block = keys[a:a + B]
            new.update(zip(block, self._compute_entries(block)))
        cache.update(new)
        return new

    def _compute_entries(self, keys):
        """``(symbols, P(word | symbol))`` of each ``(word, sentence-initial)`` key (the module
        docstring's estimates and punctuation rules), for a block of keys at once.

        The work is done on the columns of the symbols seen in training (``p_tag > 0``; a
        parent-annotated grammar has some 45 of them among 1,490 symbols): every estimate is
        zero elsewhere, and only those symbols get entries."""
        n = len(keys)
        cols = self._cols
        col_of = self._col_of
        wc = self.word_count
        lk = self._lower_known
        words = [w for w, _ in keys]
        sigs = [signature(w, 0 if ini else 1, w.lower() in lk and w.lower() != w)
                for w, ini in keys]
        known = np.fromiter((w in wc for w in words), dtype=bool, count=n)
        dist = np.stack([self._p_tag_given_sig_cols(g) for g in sigs])
        kr = np.flatnonzero(known)
        # a known word: (c(T, w) + s1 P(T | sig)) / (c(w) + s1)
        cw = np.array([wc[words[r]] for r in kr], dtype=np.int64)
        tags_of = [self._word_tags[words[r]] for r in kr]
        n_seen = np.fromiter((len(d) for d in tags_of), dtype=np.int64, count=len(kr))
        seen_t = np.fromiter((t for d in tags_of for t in d), dtype=np.int64,
                             count=int(n_seen.sum()))
        seen_c = np.fromiter((c for d in tags_of for c in d.values()), dtype=np.float64,
                             count=seen_t.shape[0])
        dist[kr] *= self.s1
        dist[np.repeat(kr, n_seen), col_of[seen_t]] += seen_c   # one entry per (word, tag)
        dist[kr] /= (cw + self.s1)[:, None]
        p_w = np.full(n, self.p_unk / max(1, self.vocab_size))
        p_w[kr] = (cw + 0.5) / (self.n_tokens + 0.5 * (self.vocab_size + 1))
        if self._punct is not None:
            dist = self._punctuation_rows(words, known, kr, n_seen, seen_t, dist)
        ok = dist > 0
        rows, c = np.nonzero(ok)
        syms = cols[c]
        probs = dist[rows, c] * p_w[rows] / self.p_tag[syms]
        syms = syms.astype(np.int32)
        cuts = np.cumsum(np.count_nonzero(ok, axis=1))[:-1]
        out = list(zip(np.split(syms, cuts), np.split(probs, cuts)))
        for a, b in out:
            a.flags.writeable = False         # shared by every token of the cached type
            b.flags.writeable = False
        return out

    def _punctuation_rows(self, words, known, kr, n_seen, seen_t, dist):
        """The punctuation rules of the module docstring for the rows of
        :meth:`_compute_entries` (``dist``: P(T | w) per row, on the seen symbols' columns)."""
        punct = self._punct
        pc = punct[self._cols]
        keep = np.ones(dist.shape, dtype=bool)
        n_punct = np.bincount(np.repeat(np.arange(len(kr)), n_seen),
                              weights=punct[seen_t].astype(np.float64), minlength=len(kr))
        keep[kr[n_punct == n_seen]] = pc             # seen only with punctuation tags
        keep[kr[n_punct == 0]] = ~pc                 # never with one
        special = []
        for r in np.flatnonzero(~known):
            tag = punctuation_tag(words[r])
            if tag is None:
                keep[r] = ~pc
                continue
            ids = self._punct_by_tag.get(tag)
            if ids is None:                   # the treebank never used that tag
                keep[r] = pc
                continue
            ids = self._col_of[ids]
            ids = ids[ids >= 0]
            keep[r] = False
            keep[r, ids] = True
            if not (dist[r, ids] > 0).any():  # no mass there: the tag's own frequencies
                special.append((r, ids))
        out = np.where(keep, dist, 0.0)
        out = np.where((out > 0).any(axis=1)[:, None], out, dist)
        p_tag = self.p_tag[self._cols]
        for r, ids in special:
            out[r] = 0.0
            out[r, ids] = p_tag[ids]
            out[r] /= max(out[r].sum(), 1e-300)
        return out

    def is_known(self, word: str) -> bool:
        return word in self.word_count

    def entries(self, words, tags=None, tag_symbols=None):
        """Sparse lexical entries of a sentence: ``(positions, symbols, probabilities)`` arrays.

        ``tags`` (optional, one per word or None) restricts each word to ``tag_symbols[tag]`` (the
        symbol ids whose base label is that tag); an unseen tag falls back to the word's full
        distribution, and a (word, tag) pair the lexicon gives zero probability gets the tag's
        unknown-word probability so that the given tag is always usable.
        """
        if tags is None or tag_symbols is None:
            return self._untagged_entries(words)
        pos_l, sym_l, prob_l = [], [], []
        open_quotes = 0
        for i, w in enumerate(words):
            syms, probs = self._word_entry(w, i)
            if self._punct is not None and (w == "`" or w == "'"):
                prev = words[i - 1] if i else ""
                syms, probs, open_quotes = self._single_quote(w, prev, syms, probs, open_quotes)
            t = None if tags is None else tags[i]
            if t is not None and tag_symbols is not None and t in tag_symbols:
                allowed = tag_symbols[t]
                keep = np.isin(syms, allowed)
                if keep.any():
                    syms, probs = syms[keep], probs[keep]
                else:
                    syms = np.asarray(allowed, dtype=np.int32)
                    pt = np.maximum(self.p_tag[syms], 1e-12)
                    probs = np.maximum(self.p_rare_tag[syms], 1e-4) * self.p_unk / pt
            pos_l.append(np.full(len(syms), i, dtype=np.int32))
            sym_l.append(syms)
            prob_l.append(probs)
        if not words:
            return (np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
        return (np.concatenate(pos_l), np.concatenate(sym_l).astype(np.int32),
                np.concatenate(prob_l).astype(np.float64))

    def _untagged_entries(self, words):
        """:meth:`entries` without given tags (one sentence of :meth:`entries_many`)."""
        return self.entries_many((words,))[1:]

    def entries_many(self, sentences):
        """:meth:`entries` without given tags for many sentences at once: ``(offsets, pos,
        symbols, probabilities)``, sentence ``k``'s entries at ``offsets[k]:offsets[k + 1]``.

        One dictionary look-up per token; the word types not yet cached are computed together
        (:meth:`_fill`); then one concatenation for the batch."""
        cache = self._word_cache
        lengths = np.fromiter((len(w) for w in sentences), dtype=np.int64,
                              count=len(sentences))
        keys = [(w, i == 0) for words in sentences for i, w in enumerate(words)]
        got = [cache.get(k) for k in keys]
        if None in got:
            new = self._fill({k for k, g in zip(keys, got) if g is None})
            got = [g if g is not None else new[k] for k, g in zip(keys, got)]
        starts = np.zeros(len(sentences) + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        if self._punct is not None:
            for k, words in enumerate(sentences):
                if "`" in words or "'" in words:
                    self._pair_quotes(words, got, int(starts[k]))
        n = len(keys)
        if not n:
            return (np.zeros(len(sentences) + 1, np.int64), np.zeros(0, np.int32),
                    np.zeros(0, np.int32), np.zeros(0))
        counts = np.fromiter((g[0].shape[0] for g in got), dtype=np.int64, count=n)
        position = (np.arange(n, dtype=np.int64) - np.repeat(starts[:-1], lengths))
        csum = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=csum[1:])
        return (csum[starts], np.repeat(position.astype(np.int32), counts),
                np.concatenate([g[0] for g in got]).astype(np.int32, copy=False),
                np.concatenate([g[1] for g in got]).astype(np.float64, copy=False))

    def _pair_quotes(self, words, got, at):
        """The entries of one sentence's ````` / ``'`` tokens (``got[at + i]``) by quote
        pairing, left to right."""
        open_quotes = 0
        for i, w in enumerate(words):
            if w == "`" or w == "'":
                syms, probs = got[at + i]
                syms, probs, open_quotes = self._single_quote(
                    w, words[i - 1] if i else "", syms, probs, open_quotes)
                got[at + i] = (syms, probs)

    def _single_quote(self, word, prev, syms, probs, open_quotes):
        """Entries of ````` / ``'`` by quote pairing (see the module docstring)."""
        if word == "`":
            return syms, probs, open_quotes + 1
        closing = open_quotes > 0 or not prev[-1:] in ("s", "S", "z", "Z", "x", "X")
        keep = self._punct[syms] if closing else ~self._punct[syms]
        if keep.any():
            syms, probs = syms[keep], probs[keep]
        return syms, probs, open_quotes - 1 if closing else open_quotes

    def tag_word_scores(self, words, tags=None, tag_symbols=None) -> np.ndarray:
        """Dense (n, n_symbols) array of P(word_i | symbol) (zero for non-preterminals)."""
        self.prefetch((words,))
        pos, sym, prob = self.entries(words, tags, tag_symbols)
        out = np.zeros((len(words), self.n_symbols))
        out[pos, sym] = prob
        return out

    # -- serialisation -------------------------------------------------------------------------
    def to_state(self):
        """(json meta, arrays) for model files."""
        words = sorted(self.word_count)
        widx = {w: i for i, w in enumerate(words)}
        tw = np.array([(t, widx[w], c) for (t, w), c in self.tag_word.items()],
                      dtype=np.int64).reshape(-1, 3)
        sigs = sorted({s for (_, s) in self.rare_tag_sig})
        sidx = {s: i for i, s in enumerate(sigs)}
        ts = np.array([(t, sidx[s], c) for (t, s), c in self.rare_tag_sig.items()],
                      dtype=np.int64).reshape(-1, 3)
        meta = {"words": words, "signatures": sigs, "n_tokens": self.n_tokens,
                "rare_threshold": self.rare_threshold, "s1": self.s1, "s2": self.s2,
                "n_symbols": self.n_symbols}
        arrays = {
            "lex_word_count": np.array([self.word_count[w] for w in words], dtype=np.int64),
            "lex_tag_word": tw,
            "lex_tag_count": np.array(sorted(self.tag_count.items()), dtype=np.int64).reshape(-1, 2),
            "lex_rare_tag_sig": ts,
            "lex_rare_tag": np.array(sorted(self.rare_tag.items()), dtype=np.int64).reshape(-1, 2),
        }
        return meta, arrays

    @classmethod
    def from_state(cls, meta, arrays, n_symbols: int | None = None, prefix: str = ""):
        """The lexicon of a :meth:`to_state` pair, every field and array validated first
        (:mod:`fastspectral.io.validate`; ``n_symbols``: the grammar's symbol count the lexicon
        must have; ``prefix``: the arrays' prefix in the model file, for messages)."""
        from ..errors import ModelFileError
        from ..io import validate as V

        where = f"{prefix}lexicon"
        if not isinstance(meta, dict):
            raise ModelFileError(f"{where}: no lexicon description")
        S = V.meta_int(meta, "n_symbols", 1, where)
        if n_symbols is not None and S != n_symbols:
            raise ModelFileError(f"{where}: {S} symbols where the grammar has {n_symbols}")
        words = V.meta_list(meta, "words", str, where)
        sigs = V.meta_list(meta, "signatures", str, where)
        V.meta_int(meta, "n_tokens", 1, where)
        V.meta_int(meta, "rare_threshold", 0, where)
        V.meta_float(meta, "s1", 0.0, where)
        V.meta_float(meta, "s2", 0.0, where)

        def table(name, cols, ranges):
            x = V.get(arrays, name, "int", ndim=2, shape=(None, cols), dtype=np.int64)
            for c, hi in enumerate(ranges):
                V.check_index(x[:, c], prefix + name, 0, hi, f"column {c}")
            V.check_nonneg(x[:, -1], prefix + name, "counts")
            return x

        wc = V.get(arrays, "lex_word_count", "int", shape=(len(words),), dtype=np.int64)
        V.check_nonneg(wc, prefix + "lex_word_count")
        tw = table("lex_tag_word", 3, (S, len(words)))
        tc = table("lex_tag_count", 2, (S,))
        table("lex_rare_tag_sig", 3, (S, len(sigs)))
        table("lex_rare_tag", 2, (S,))
        # the counts of one training set: every table sums to the tokens
        for name, total in (("lex_word_count", wc.sum()), ("lex_tag_word", tw[:, 2].sum()),
                            ("lex_tag_count", tc[:, 1].sum())):
            if int(total) != meta["n_tokens"]:
                V.fail(prefix + name, f"counts sum to {int(total)}, not to the "
                                      f"{meta['n_tokens']} training tokens")
        lex = cls(S, meta["rare_threshold"], meta["s1"], meta["s2"])
        # .tolist(): Python ints at once (indexing a memory-mapped table entry by entry took
        # most of a model's loading time)
        rows = {k: np.asarray(arrays[k]).tolist() for k in
                ("lex_word_count", "lex_tag_word", "lex_tag_count", "lex_rare_tag_sig",
                 "lex_rare_tag")}
        word_count = dict(zip(words, rows["lex_word_count"]))
        tag_word = {(t, words[w]): c for t, w, c in rows["lex_tag_word"]}
        tag_count = {t: c for t, c in rows["lex_tag_count"]}
        rare_tag_sig = {(t, sigs[s]): c for t, s, c in rows["lex_rare_tag_sig"]}
        rare_tag = {t: c for t, c in rows["lex_rare_tag"]}
        lex._set_tables(tag_word, word_count, tag_count, int(meta["n_tokens"]), rare_tag_sig,
                        rare_tag)
        return lex
