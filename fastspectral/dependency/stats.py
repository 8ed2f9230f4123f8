"""Learning :class:`~fastspectral.dependency.model.SHAGParser` from partitioned treebanks (the
statistics protocol of :mod:`fastspectral.base`).

Everything ``fit`` estimates is a function of counts over the training sentences:

* the tag column (``tag_column="auto"``: UPOS when *every* sentence has Universal POS tags), the
  tag list (by frequency), the word list (lexical models) and ``single_root``;
* the multiset of head-outwards modifier sequences ``(head tag, direction, modifier tags)``:
  the spectral learner (Hankel blocks, basis, back-off automaton) and EM only read these
  merged sequences (:func:`~fastspectral.dependency.spectral.distinct_sequences`), and the
  unlexicalised deterministic models (DET, DET+F, the fallback) count their events on them;
* the events of the lexicalised models (head word, head tag, direction, automaton state,
  outcome; modifier word given its tag and head).

A partition counts them keyed by *strings*; the merged counts give the symbol tables and the
integer arrays ``fit`` builds (the distinct sequences in the same order, so that the floating-
point sums of the spectral learner and EM are the same), and the estimate runs once.  With
``tag_column="auto"`` a first pass decides the tag column.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..base import Partition, Statistics
from ..errors import FormatError
from .backoff import _LEX_STATES, BackoffLevel, BackoffSHAG, next_state_table
from .data import ROOT, UD_UPOS, SymbolVocab, check_sentence, token_classes, with_tagset

__all__ = ["TagsetVote", "SHAGCounts", "SHAGFitInfo", "shag_statistics", "shag_fit_statistics"]


@dataclass
class SHAGFitInfo:
    """Training details of :meth:`SHAGParser.fit` (``fit_info_``).

    Attributes
    ----------
    n_sentences : int
        Training sentences.
    loglik : list of float
        ``method="em"``: the training log-likelihood of every EM iteration (empty otherwise;
        not stored in model files).
    """

    n_sentences: int = 0
    loglik: list = field(default_factory=list)


class TagsetVote(Statistics):
    """Pass 0 of ``tag_column="auto"``: sentences read and those without Universal POS tags."""

    def __init__(self, n_sentences: int, not_upos: int):
        self.n_sentences = n_sentences
        self.not_upos = not_upos


class SHAGCounts(Statistics):
    """The counts of a partition (see the module docstring); ``None`` stands for the root
    (head tag / head word) and for STOP (outcome)."""

    _same = ("settings",)

    def __init__(self, settings):
        self.settings = settings
        self.n_sentences = 0
        self.multi_root = 0            # sentences without exactly one root
        self.tags = Counter()
        self.words = Counter()
        self.sequences = Counter()     # (head tag, direction, modifier tags) -> count
        self.lex_a = Counter()         # (head word, head tag, direction, state, outcome)
        self.lex_b = Counter()         # (modifier tag, head word, head tag, direction, word)


def _settings(model, tagset) -> tuple:
    return ("shag", tagset, model.lexical)


def shag_statistics(model, items, context):
    """The statistics of a partition of dependency sentences for the pass of ``context``."""
    model._validate_params()
    sents = list(items.data if isinstance(items, Partition) else items)
    if context is None and model.tag_column == "auto":
        bad = 0
        for s in sents:
            upos = getattr(s, "upos", None)
            if not upos or len(upos) != len(s.words) or not UD_UPOS.issuperset(upos):
                bad += 1
        return TagsetVote(len(sents), bad)
    tagset = model.tag_column if context is None else context
    sents = with_tagset(sents, tagset)
    for i, s in enumerate(sents):
        check_sentence(s, i, need_heads=True)
    out = SHAGCounts(_settings(model, tagset))
    lexical = model.lexical != "none"
    if lexical:

        nxt = next_state_table(_LEX_STATES[model.lexical])
    for s in sents:
        words, tags, heads = list(s.words), list(s.tags), list(s.heads)
        n = len(words)
        out.n_sentences += 1
        out.tags.update(tags)
        if sum(1 for h in heads if h == 0) != 1:
            out.multi_root += 1
        left = [[] for _ in range(n + 1)]
        right = [[] for _ in range(n + 1)]
        for m in range(1, n + 1):
            h = int(heads[m - 1])
            (left if m < h else right)[h].append(m)
        if lexical:
            out.words.update(words)
            cls = token_classes(words, tags)
        # sequences in fit's order: position by position, left then right (not the root's left)
        for p in range(n + 1):
            htag = tags[p - 1] if p else None
            hword = words[p - 1] if p else None
            for d, mods in ((0, left[p][::-1]), (1, right[p])):
                if p == 0 and d == 0:
                    continue
                out.sequences[(htag, d, tuple(tags[m - 1] for m in mods))] += 1
                if lexical:
                    st = 0
                    for m in mods:
                        out.lex_a[(hword, htag, d, st, tags[m - 1])] += 1
                        out.lex_b[(tags[m - 1], hword, htag, d, words[m - 1])] += 1
                        st = int(nxt[st, cls[m - 1]])
                    out.lex_a[(hword, htag, d, st, None)] += 1
    return out


# ------------------------------------------------------------------------------------------------
# the estimate
# ------------------------------------------------------------------------------------------------
def _distinct(stats: SHAGCounts, tags: SymbolVocab, H: int, M: int):
    """The output of ``spectral._distinct_sequences`` from the merged sequence counts: the
    sequences of at most one modifier in (group, tag) order, then the longer ones in the order
    they were first seen (all in first-seen order for a very large tag set), grouped."""
    G = 2 * H
    use1 = G * (M + 1) <= (1 << 18)
    tid = tags.index
    short, long_ = [], []
    for (htag, d, mods), c in stats.sequences.items():
        g = (0 if htag is None else tid[htag] + 1) * 2 + d
        ids = [tid[t] for t in mods]
        if use1 and len(ids) <= 1:
            short.append((g * (M + 1) + (ids[0] + 1 if ids else 0), g, ids, c))
        else:
            long_.append((g, ids, c))
    short.sort(key=lambda x: x[0])
    entries = [(g, ids, c) for _, g, ids, c in short] + long_
    nd = len(entries)
    dg = np.array([e[0] for e in entries], dtype=np.int64)
    dlen = np.array([len(e[1]) for e in entries], dtype=np.int64)
    dw = np.array([e[2] for e in entries], dtype=np.int64)
    doff = np.zeros(nd, dtype=np.int64)
    if nd:
        np.cumsum(dlen[:-1], out=doff[1:])
    dtags = np.array([t for e in entries for t in e[1]], dtype=np.int64)
    B = M + 2
    big = np.zeros((2, B * B), dtype=np.int64)
    for g, ids, c in entries:
        x = M
        for y in ids + [M + 1]:
            big[g & 1, x * B + y] += c
            x = y
    gstart = np.zeros(G + 1, dtype=np.int64)
    np.cumsum(np.bincount(dg, minlength=G), out=gstart[1:])
    order = np.argsort(dg, kind="stable").astype(np.int64)
    return dlen, doff, dw, dtags, order, gstart, big


def _level(ctx, out, w, n_out: int) -> BackoffLevel:
    """``BackoffLevel.fit`` of weighted (context, outcome) events."""
    key = np.asarray(ctx, np.int64) * n_out + np.asarray(out, np.int64)
    keys, inv = np.unique(key, return_inverse=True)
    counts = np.bincount(inv, weights=np.asarray(w, np.float64), minlength=len(keys))
    ctx_keys, inv2 = np.unique(keys // n_out, return_inverse=True)
    ctx_tot = np.bincount(inv2, weights=counts, minlength=len(ctx_keys))
    ctx_types = np.bincount(inv2, minlength=len(ctx_keys)).astype(np.float64)
    return BackoffLevel(keys, counts, ctx_keys, ctx_tot, ctx_types, n_out)


def _unlexicalised(states: str, distinct, M: int) -> BackoffSHAG:
    """``BackoffSHAG(states, False, M).fit`` from the merged sequences (DET: one state; DET+F:
    the first modifier, then the others)."""
    dlen, doff, dw, dtags, _, _, _ = distinct
    b = BackoffSHAG(states, False, M)
    K = b.K
    g_l, k_l, o_l, w_l = [], [], [], []
    dg = _groups_of(distinct)
    for i in range(len(dlen)):
        T, o, c, g = int(dlen[i]), int(doff[i]), int(dw[i]), int(dg[i])
        for j in range(T):
            g_l.append(g)
            k_l.append(0 if (K == 1 or j == 0) else 1)
            o_l.append(int(dtags[o + j]))
            w_l.append(c)
        g_l.append(g)
        k_l.append(0 if (K == 1 or T == 0) else 1)
        o_l.append(M)
        w_l.append(c)
    g_a = np.array(g_l, dtype=np.int64)
    k_a = np.array(k_l, dtype=np.int64)
    d_a = g_a & 1
    n_out = M + 1
    b.levels = {"a0": _level(g_a * K + k_a, o_l, w_l, n_out),
                "abase": _level(d_a * K + k_a, o_l, w_l, n_out)}
    return b


def _groups_of(distinct) -> np.ndarray:
    dlen, _, _, _, order, gstart, _ = distinct
    dg = np.empty(len(dlen), dtype=np.int64)
    for g in range(len(gstart) - 1):
        dg[order[gstart[g]:gstart[g + 1]]] = g
    return dg


def _lexicalised(model, stats: SHAGCounts, tags: SymbolVocab, words: SymbolVocab,
                 M: int) -> BackoffSHAG:
    """``BackoffSHAG(kind, True, M, n_words).fit`` from the merged lexical events."""

    nw = len(words)
    b = BackoffSHAG(_LEX_STATES[model.lexical], True, M, nw)
    K = b.K
    H = M + 1
    tid, wid = tags.index, words.index

    def hs(t):
        return 0 if t is None else tid[t] + 1

    def hw(w):
        return nw + 1 if w is None else wid[w]

    a = list(stats.lex_a.items())
    hwa = np.array([hw(k[0]) for k, _ in a], dtype=np.int64)
    hsa = np.array([hs(k[1]) for k, _ in a], dtype=np.int64)
    da = np.array([k[2] for k, _ in a], dtype=np.int64)
    ka = np.array([k[3] for k, _ in a], dtype=np.int64)
    oa = np.array([M if k[4] is None else tid[k[4]] for k, _ in a], dtype=np.int64)
    wa = np.array([c for _, c in a], dtype=np.float64)
    coarse = (hsa * 2 + da) * K + ka
    fine = hwa * (H * 2 * K) + coarse
    n_out = M + 1
    b.levels = {"a0": _level(fine, oa, wa, n_out), "a1": _level(coarse, oa, wa, n_out)}
    bb = list(stats.lex_b.items())
    mt = np.array([tid[k[0]] for k, _ in bb], dtype=np.int64)
    hwb = np.array([hw(k[1]) for k, _ in bb], dtype=np.int64)
    hsb = np.array([hs(k[2]) for k, _ in bb], dtype=np.int64)
    db = np.array([k[3] for k, _ in bb], dtype=np.int64)
    mw = np.array([wid[k[4]] for k, _ in bb], dtype=np.int64)
    wb = np.array([c for _, c in bb], dtype=np.float64)
    c3 = mt
    c2 = (c3 * H + hsb) * 2 + db
    c1 = hwb * (M * H * 2) + c2
    for i, c in enumerate((c1, c2, c3)):
        b.levels[f"b{i}"] = _level(c, mw, wb, nw + 1)
    return b


def shag_fit_statistics(model, stats, context):
    """The estimate of the merged statistics: the tag column (pass 0 of ``tag_column="auto"``,
    returned as the next context), then the model (None: fitted)."""
    from .._blas import blas_single_thread
    from .spectral import OperatorSHAG, spectral_from_distinct

    model._validate_params()
    t0 = time.perf_counter()
    if isinstance(stats, TagsetVote):
        if context is not None or model.tag_column != "auto":
            raise ValueError("unexpected tag-column statistics")
        if stats.n_sentences == 0:
            raise ValueError("cannot fit a SHAGParser on an empty treebank")
        return "xpos" if stats.not_upos else "upos"
    if not isinstance(stats, SHAGCounts):
        raise TypeError(f"expected SHAGCounts, got {type(stats).__name__}")
    tagset = model.tag_column if context is None else context
    if stats.settings != _settings(model, tagset):
        raise ValueError(f"these statistics were computed with other settings "
                         f"({stats.settings} != {_settings(model, tagset)})")
    if stats.n_sentences == 0:
        raise ValueError("cannot fit a SHAGParser on an empty treebank")
    tc = stats.tags
    if ROOT in tc:
        raise FormatError(f"the tag {ROOT!r} is reserved", None, None)
    tag_list = sorted(tc, key=lambda t: (-tc[t], t))
    model.tag_column_ = tagset
    model.tags_ = SymbolVocab(tag_list, unk_id=0)
    if model.lexical != "none":
        word_list = sorted(stats.words)
        model.words_ = SymbolVocab(word_list, unk_id=len(word_list))
    else:
        model.words_ = None
    model.single_root_ = stats.multi_root == 0 if model.single_root is None \
        else bool(model.single_root)
    H, M = model._H, model._M
    distinct = _distinct(stats, model.tags_, H, M)
    info = SHAGFitInfo(n_sentences=stats.n_sentences)
    weight = float(model.backoff_weight)
    if model.method == "spectral":
        with blas_single_thread():
            model.op_ = spectral_from_distinct(distinct, H, M, int(model.n_states),
                                               basis=int(model.basis), smoothing=weight,
                                               ridge=float(model.ridge))
    elif model.method == "em":
        from .em import fit_em
        from .spectral import _grouped

        res = fit_em(None, None, H, M, int(model.n_states), int(model.iterations),
                     model.random_state, smoothing=weight, data=_grouped(*distinct[:6]))
        model.op_ = res.model
        info.loglik = res.loglik
    else:
        model.op_ = OperatorSHAG.trivial(H, M)
    if model.lexical != "none":
        model.det_ = _lexicalised(model, stats, model.tags_, model.words_, M)
    elif model.method in ("det", "det+f"):
        model.det_ = _unlexicalised("none" if model.method == "det" else "f", distinct, M)
    else:
        model.det_ = None
    model.fallback_ = _unlexicalised("f", distinct, M)
    model.fit_time_ = time.perf_counter() - t0
    model.fit_info_ = info
    return None
