"""Prediction of the lexical disambiguator: the candidates of every token of a corpus and the
top two labels of each requested model (:func:`predict_labels`).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import engine as E
from .data import Corpus
from .candidates import candidates
from .training import Learned

__all__ = ["predict_labels", "CandidateLists"]


def _rank(learned: Learned, cands, F, S, qloc, name, threads=None):
    r = learned.rankers[name]
    ptr, vals = E.row_values(cands, r.spec.level, learned.space.n_targets)
    scores = E.score(learned.tables, F, learned.cols, ptr, vals, r, learned.n_bins, S, qloc,
                     E.token_blocks(r.spec, cands.known), threads)
    best, second = E.top2(ptr, scores)
    col = 0 if r.spec.level < 0 else r.spec.level
    return vals[:, col], scores, best, second


def predict_labels(learned: Learned, corpus: Corpus, models, *, analyser=None, tags=None,
                   threads=None):
    """Top-two labels of every token for each model of ``models`` (``unigram``, ``M_full``,
    ``M_uni``, ``M_baseline``, ``M_ind``, ``M_e:<LE>`` — the last gives LE values): ``{name:
    (first, second)}``, lists of label tuples (values for ``M_e``; ``None`` where there is no
    second choice), plus ``"_candidates"``: the candidate labels of every token."""
    F = learned.fs.transform(corpus.tokens, corpus.sent_starts)
    cands = candidates(learned.tables, learned.space, learned.fs, learned.guesser,
                       corpus.tokens, F, analyser=analyser, unknown=learned.unknown,
                       vocalised=learned.vocalised, tags=tags,
                       known_guesses=learned.known_guesses)
    S, qloc = learned.tables.doc_similarity(F[:, 0], np.asarray(corpus.docs))
    ov = cands.overlay
    out = {}
    n = len(corpus)
    labels = _LabelLookup(ov)
    for name in models:
        if name == "unigram":
            ptr = cands.ptr
            lab = cands.label
            first = labels.take(lab[ptr[:-1]]) if n else []
            has2 = np.diff(ptr) > 1
            second = labels.take(np.where(has2, lab[np.minimum(ptr[:-1] + 1, len(lab) - 1)],
                                          -1)) if n else []
            out[name] = (first, second)
        elif name == "M_ind":
            lem = learned.target("Lemma")
            mor = learned.target("Morph")
            lv, ls, lb, l2 = _rank(learned, cands, F, S, qloc, "M_e:Lemma", threads)
            mv, ms, mb, m2 = _rank(learned, cands, F, S, qloc, "M_morph", threads)
            first, second = [], []
            for j in range(n):
                lemma1 = ov.value(lem, int(lv[lb[j]]))
                morph1 = ov.value(mor, int(mv[mb[j]]))
                first.append((lemma1,) + tuple(morph1))
                alts = []
                if l2[j] >= 0:
                    alts.append((ls[l2[j]] + ms[mb[j]],
                                 (ov.value(lem, int(lv[l2[j]])),) + tuple(morph1)))
                if m2[j] >= 0:
                    alts.append((ls[lb[j]] + ms[m2[j]],
                                 (lemma1,) + tuple(ov.value(mor, int(mv[m2[j]])))))
                second.append(max(alts, key=lambda a: a[0])[1] if alts else None)
            out[name] = (first, second)
        elif name.startswith("M_e:") or name == "M_morph":
            m = learned.rankers[name].spec.level
            v, _, b, s2 = _rank(learned, cands, F, S, qloc, name, threads)
            out[name] = ([ov.value(m, int(v[b[j]])) for j in range(n)],
                         [ov.value(m, int(v[s2[j]])) if s2[j] >= 0 else None
                          for j in range(n)])
        else:
            v, _, b, s2 = _rank(learned, cands, F, S, qloc, name, threads)
            out[name] = (labels.take(v[b]), labels.take(np.where(s2 >= 0, v[s2], -1)))
    out["_candidates"] = CandidateLists(cands, labels)
    return out


class _LabelLookup:
    """Label tuples of label ids of an :class:`~fastspectral.lexical.engine.Overlay`, many at
    a time (``take``; id -1 gives None)."""

    def __init__(self, ov):
        self.ov = ov
        self.table = list(ov.base.labels) + list(ov.labels) + [None]

    def take(self, ids) -> list:
        table = self.table
        return [table[k] for k in np.asarray(ids, dtype=np.int64).tolist()]


class CandidateLists(Sequence):
    """The candidate labels of every token (a read-only sequence of lists of label tuples),
    built token by token when asked for: tagging does not need them.  ``known``: per token,
    whether the lexicon knows it; ``tag_unmatched``: per token, whether it had a tag that no
    candidate carries (None without tags)."""

    def __init__(self, cands, labels: _LabelLookup):
        self._ptr = cands.ptr
        self._label = cands.label
        self._labels = labels
        self.known = cands.known
        self.tag_unmatched = cands.tag_unmatched

    def __len__(self) -> int:
        return len(self._ptr) - 1

    def __getitem__(self, j):
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(len(self)))]
        n = len(self)
        if j < 0:
            j += n
        if not 0 <= j < n:
            raise IndexError("token index out of range")
        return self._labels.take(self._label[self._ptr[j]:self._ptr[j + 1]])
