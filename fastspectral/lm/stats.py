"""Mergeable counts of the bigram language models (the statistics protocol of
:mod:`fastspectral.base`).

Both :class:`~fastspectral.lm.kneser_ney.KneserNeyBigramLM` and
:class:`~fastspectral.lm.saul_pereira.LatentBigramLM` read nothing but the bigram matrix of the
training sentences over a vocabulary chosen by frequency (``min_count``, ``<unk>``).  A
partition therefore counts its words and its bigram events keyed by the (lower-cased) *strings*
(``None`` stands for the sentence boundaries ``<s>`` / ``</s>``); the merged counts give the
vocabulary and the bigram matrix exactly as ``fit`` on the concatenated sentences builds them,
and the learner's estimate (Kneser-Ney discounts; the pivot method, EM) runs once on them.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import scipy.sparse as sp

from ..base import Partition, Statistics
from .vocabulary import BOS, EOS, UNK, Vocabulary, _as_word_lists

__all__ = ["BigramCounts", "bigram_statistics", "vocabulary_and_counts"]


class BigramCounts(Statistics):
    """Word counts and bigram counts (``(previous, next)`` strings; ``None`` is ``<s>`` as
    previous word and ``</s>`` as next word) of some sentences."""

    _same = ("lowercase",)

    def __init__(self, lowercase: bool):
        self.lowercase = bool(lowercase)
        self.words = Counter()
        self.bigrams = Counter()
        self.n_sentences = 0


def bigram_statistics(model, items) -> BigramCounts:
    """The :class:`BigramCounts` of a partition of sentences (lists of words or of ``(word,
    tag)`` pairs)."""
    model._validate_params()
    if isinstance(items, Partition):
        items = items.data
    out = BigramCounts(model.lowercase)
    flat: list = []
    lengths = []
    for sent in _as_word_lists(items):
        flat.extend(w.lower() for w in sent) if out.lowercase else flat.extend(sent)
        lengths.append(len(sent))
    out.n_sentences = len(lengths)
    if not lengths:
        return out
    # count with local ids (vectorised), then key the distinct bigrams by their strings
    index: dict = {}
    ids = np.fromiter((index.setdefault(w, len(index)) for w in flat), dtype=np.int64,
                      count=len(flat))
    local = list(index)
    out.words.update(dict(zip(local, np.bincount(ids, minlength=len(local)).tolist())))
    n = len(local)
    lens = np.asarray(lengths, dtype=np.int64)
    seq = np.full(len(flat) + 2 * len(lens), n, dtype=np.int64)     # n: a boundary
    starts = np.zeros(len(lens), dtype=np.int64)
    np.cumsum(lens[:-1] + 2, out=starts[1:])
    pos = np.repeat(starts + 1, lens) + (np.arange(len(flat)) - np.repeat(
        np.cumsum(lens) - lens, lens))
    seq[pos] = ids
    prev, nxt = seq[:-1], seq[1:]
    keep = np.ones(prev.shape[0], dtype=bool)
    keep[(starts + lens + 1)[:-1]] = False          # </s> of a sentence -> <s> of the next
    codes = prev[keep] * (n + 1) + nxt[keep]
    uc, cnt = np.unique(codes, return_counts=True)
    names = local + [None]
    out.bigrams.update(dict(zip(((names[a], names[b]) for a, b in
                                 zip((uc // (n + 1)).tolist(), (uc % (n + 1)).tolist())),
                                cnt.tolist())))
    return out


def check_counts(stats, cls, model, what: str) -> None:
    """The checks of merged token statistics before an estimate (the LM's bigram counts, the
    HMM's token counts): the right class, the model's ``lowercase`` setting, and a non-zero
    ``stats.n_<what>`` (``what``: "sentences" or "sequences")."""
    if not isinstance(stats, cls):
        raise TypeError(f"expected {cls.__name__}, got {type(stats).__name__}")
    if stats.lowercase != bool(model.lowercase):
        raise ValueError("these counts were computed with another lowercase setting")
    if getattr(stats, f"n_{what}") == 0:
        raise ValueError(f"no training {what}")


def vocabulary_and_counts(model, stats: BigramCounts):
    """``(Vocabulary, bigram count matrix)`` of merged counts (``Vocabulary.build`` and
    ``bigram_matrix`` of ``fit``)."""
    check_counts(stats, BigramCounts, model, "sentences")
    counts = Counter(stats.words)
    for special in (BOS, EOS, UNK):
        counts.pop(special, None)
    min_count = int(model.min_count)
    kept = sorted((w for w, c in counts.items() if c >= min_count),
                  key=lambda w: (-counts[w], w))
    vocab = Vocabulary([BOS, EOS, UNK] + kept, lowercase=bool(model.lowercase),
                       min_count=min_count)
    idx = vocab.index
    n = len(vocab)
    k = len(stats.bigrams)
    prev = np.empty(k, dtype=np.int64)
    nxt = np.empty(k, dtype=np.int64)
    cnt = np.empty(k, dtype=np.float64)
    for i, ((a, b), c) in enumerate(stats.bigrams.items()):
        prev[i] = 0 if a is None else idx.get(a, 2)
        nxt[i] = 1 if b is None else idx.get(b, 2)
        cnt[i] = c
    C = sp.csr_matrix((cnt, (prev, nxt)), shape=(n, n))
    C.sum_duplicates()
    C.sort_indices()
    return vocab, C
