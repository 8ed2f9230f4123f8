"""Accuracy measures of Shah et al. (2010): A1/A2, E1/E2, per label element, coverage.

* ``A1``: share of tokens whose first choice is the gold label; ``A2``: share whose gold label
  is the first or the second choice.  ``E1 = 100 (1 - A1)`` and ``E2 = 100 (1 - A2)`` are the
  error rates in percent that tables 4 and 5 of the paper report (its M_full: E1 9.4, E2 3.8).
* Per label element (LE): the share of tokens whose chosen label has the gold value of the LE
  (first choice; and first-or-second for the top-two rate).
* Coverage: the share of tokens whose gold label is in their candidate set — the upper bound
  of A2 and A1 for any model choosing among the candidates.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Scores", "evaluate", "coverage", "le_accuracy"]


@dataclass
class Scores:
    """A1, A2 (fractions), E1, E2 (percent), the token count and the per-LE accuracy."""

    n: int
    a1: float
    a2: float | None
    per_le: dict = field(default_factory=dict)

    @property
    def e1(self) -> float:
        return 100.0 * (1.0 - self.a1)

    @property
    def e2(self) -> float | None:
        return None if self.a2 is None else 100.0 * (1.0 - self.a2)

    def as_dict(self) -> dict:
        return {"n": self.n, "A1": self.a1, "A2": self.a2, "E1": self.e1, "E2": self.e2,
                "per_le": dict(self.per_le)}


def evaluate(gold, first, second=None, scheme=None) -> Scores:
    """Scores of predicted labels against gold labels (lists of label tuples, aligned).

    ``second``: the second choices (None entries allowed; omit for no A2); ``scheme``: a
    :class:`~fastspectral.lexical.data.LabelScheme` for the per-LE accuracy."""
    n = len(gold)
    if len(first) != n or (second is not None and len(second) != n):
        raise ValueError(f"{len(first)} predictions for {n} gold labels")
    if n == 0:
        raise ValueError("no tokens to evaluate")
    c1 = sum(1 for g, p in zip(gold, first) if g == p)
    a2 = None
    if second is not None:
        c2 = sum(1 for g, p, q in zip(gold, first, second) if g == p or g == q)
        a2 = c2 / n
    per_le = le_accuracy(gold, first, scheme) if scheme is not None else {}
    return Scores(n, c1 / n, a2, per_le)


def le_accuracy(gold, predicted, scheme) -> dict:
    """``{LE name: accuracy}`` of predicted labels (first choices) under a
    :class:`~fastspectral.lexical.data.LabelScheme`."""
    names = scheme.names
    right = [0] * len(names)
    for g, p in zip(gold, predicted):
        ge, pe = scheme.elements(g), scheme.elements(p)
        for k in range(len(names)):
            right[k] += ge[k] == pe[k]
    n = max(len(gold), 1)
    return {name: right[k] / n for k, name in enumerate(names)}


def value_accuracy(gold_values, predicted_values) -> float:
    """Share of equal values (the accuracy of a per-LE model M_e)."""
    n = len(gold_values)
    if n == 0:
        raise ValueError("no tokens to evaluate")
    return sum(1 for g, p in zip(gold_values, predicted_values) if g == p) / n


def coverage(gold, candidate_sets) -> float:
    """Share of tokens whose gold label is among their candidates (eq. 9's upper bound)."""
    n = len(gold)
    if n == 0:
        raise ValueError("no tokens to evaluate")
    return sum(1 for g, c in zip(gold, candidate_sets) if g in c) / n


__all__ += ["value_accuracy", "evaluate_files", "format_scores"]


def evaluate_files(gold_path, pred_path, encoding: str = "utf-8") -> Scores:
    """Scores of a tagged CoNLL-U file (``lexical tag``'s output) against the gold file.

    The files must hold the same sentences with the same tokens (for a vocalised gold file,
    the same FORMs once undiacritised); a FormatError names the prediction file and the line
    of the first sentence that differs.  Gold labels are ``(LEMMA, UPOS, XPOS, FEATS, FORM of a
    vocalised corpus)``, predicted second choices come from MISC ``LexAlt``."""
    from ..errors import FormatError
    from ..trees.corpus import read_conllu_sentences
    from .data import LabelScheme, corpus_vocalised, label_of, predicted_labels, undiacritize

    gold_s = read_conllu_sentences(gold_path, encoding)
    pred_s = read_conllu_sentences(pred_path, encoding)
    if len(gold_s) != len(pred_s):
        raise FormatError(f"{len(pred_s)} sentences, but the gold file has {len(gold_s)}",
                          pred_path)
    voc = corpus_vocalised(gold_s)
    gold, first, second = [], [], []
    any_alt = False
    for gs, ps in zip(gold_s, pred_s):
        gw = [undiacritize(w) for w in gs.words] if voc else gs.words
        pw = [undiacritize(w) for w in ps.words] if voc else ps.words
        if gw != pw:
            k = next((i for i, (a, b) in enumerate(zip(gw, pw)) if a != b), min(len(gw),
                                                                              len(pw)))
            what = (f"word {k + 1} is {pw[k]!r}, the gold file has {gw[k]!r}"
                    if k < min(len(gw), len(pw)) else
                    f"{len(pw)} words, the gold sentence has {len(gw)}")
            raise FormatError(f"sentence does not match the gold file: {what}", pred_path,
                              ps.line)
        gold.extend(label_of(gs, i, voc) for i in range(len(gs)))
        f, s = predicted_labels(ps, voc)
        first.extend(f)
        second.extend(s)
        any_alt = any_alt or any(x is not None for x in s)
    scheme = LabelScheme.from_labels(set(gold), voc)
    return evaluate(gold, first, second if any_alt else None, scheme)


def format_scores(scores: Scores) -> str:
    """The report of ``lexical eval``."""
    lines = [f"tokens {scores.n}"]
    a2 = "n/a (no LexAlt in MISC)" if scores.a2 is None else f"{100 * scores.a2:.2f}%"
    e2 = "n/a" if scores.e2 is None else f"{scores.e2:.2f}"
    lines.append(f"A1 {100 * scores.a1:.2f}%  A2 {a2}")
    lines.append(f"E1 {scores.e1:.2f}  E2 {e2}")
    if scores.per_le:
        lines.append("")
        lines.append(f"{'label element':<16} {'accuracy':>8}")
        for name, acc in scores.per_le.items():
            lines.append(f"{name:<16} {100 * acc:7.2f}%")
    return "\n".join(lines)
