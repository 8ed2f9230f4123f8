"""The vocabulary and bigram counting shared by every language model of :mod:`fastspectral.lm`.

Word ids: ``0 = <s>``, ``1 = </s>``, ``2 = <unk>``, then the kept words by decreasing frequency
(ties alphabetically); words seen fewer than ``min_count`` times map to ``<unk>``.  Each sentence
``w_1 .. w_n`` gives the ``n + 1`` bigram events ``(<s>, w_1), ..., (w_n, </s>)``.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

import numpy as np
import scipy.sparse as sp

__all__ = ["BOS", "EOS", "UNK", "Vocabulary", "bigram_ids", "bigram_matrix"]

BOS, EOS, UNK = "<s>", "</s>", "<unk>"


class Vocabulary:
    """Word <-> id map with the ``<s>``, ``</s>``, ``<unk>`` conventions of this module."""

    def __init__(self, words: list[str], lowercase: bool = True, min_count: int = 2):
        self.words = list(words)
        self.lowercase = bool(lowercase)
        self.min_count = int(min_count)
        self.index = {w: i for i, w in enumerate(self.words)}
        if self.words[:3] != [BOS, EOS, UNK]:
            raise ValueError("a vocabulary starts with <s>, </s>, <unk>")

    @classmethod
    def build(cls, sentences: Iterable[list[str]], min_count: int = 2, lowercase: bool = True):
        """Count the words of ``sentences`` and keep those seen at least ``min_count`` times."""
        counts: Counter = Counter()
        for sent in sentences:
            counts.update(w.lower() for w in sent) if lowercase else counts.update(sent)
        for special in (BOS, EOS, UNK):
            counts.pop(special, None)
        kept = sorted((w for w, c in counts.items() if c >= min_count),
                      key=lambda w: (-counts[w], w))
        return cls([BOS, EOS, UNK] + kept, lowercase=lowercase, min_count=min_count)

    def __len__(self):
        return len(self.words)

    def encode(self, sent: list[str]) -> np.ndarray:
        """Word ids of a sentence (unknown words -> ``<unk>``), without boundary symbols."""
        idx = self.index
        if self.lowercase:
            return np.fromiter((idx.get(w.lower(), 2) for w in sent), dtype=np.int64,
                               count=len(sent))
        return np.fromiter((idx.get(w, 2) for w in sent), dtype=np.int64, count=len(sent))


def bigram_ids(sentences: Iterable[list[str]], vocab: Vocabulary):
    """All bigram events of ``sentences`` as two id arrays ``(prev, next)`` (with boundaries)."""
    prev_parts, next_parts = [], []
    for sent in sentences:
        ids = vocab.encode(sent)
        seq = np.empty(len(ids) + 2, dtype=np.int64)
        seq[0] = 0
        seq[1:-1] = ids
        seq[-1] = 1
        prev_parts.append(seq[:-1])
        next_parts.append(seq[1:])
    if not prev_parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(prev_parts), np.concatenate(next_parts)


def bigram_matrix(prev: np.ndarray, nxt: np.ndarray, n: int) -> sp.csr_matrix:
    """Bigram count matrix ``C[v, w]`` (CSR, float64, sorted indices, no duplicates)."""
    C = sp.csr_matrix((np.ones(len(prev)), (prev, nxt)), shape=(n, n))
    C.sum_duplicates()
    C.sort_indices()
    return C


def _as_word_lists(sentences) -> list:
    """Sentences given as lists of words or of ``(word, tag)`` pairs, as lists of words; a
    one-line ``TypeError`` for a string, a flat list of strings (characters are not words)
    or a non-string word (:func:`fastspectral.base.check_sequences`)."""
    from ..base import check_sequences

    if isinstance(sentences, (str, bytes)):
        return check_sequences(sentences)
    sents = [[w for w, _ in sent] if not isinstance(sent, (str, bytes)) and len(sent) and
             isinstance(sent[0], tuple) else sent for sent in sentences]
    return check_sequences(sents, "sentences")
