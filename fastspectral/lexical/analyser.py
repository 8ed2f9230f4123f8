"""Candidate analyses beyond the training lexicon: the analyser interface and the suffix guesser.

An *analyser* is any callable ``analyser(token) -> iterable of analyses`` (the role SAMA plays in
Shah et al. 2010): an analysis is a dict with keys among ``lemma upos xpos feats vocalised`` or
a tuple in that order (missing fields are ``"_"``; a missing vocalised form is the token).
:func:`normalise_analyses` turns the answers into label tuples.

:class:`SuffixGuesser` is the analyser of last resort for tokens that neither the lexicon nor
a given analyser knows: it proposes the analyses seen with training words of the same ending
(the longest suffix of up to ``max_suffix`` letters seen with at least ``min_types`` word
types), the lemma rewritten by the ending rule of the training pair (``dogs -> dog``: strip one
letter) and, for vocalised corpora, the vocalised form left undiacritised.
"""
from __future__ import annotations

from collections import Counter, defaultdict

from .data import undiacritize

__all__ = ["normalise_analyses", "SuffixGuesser"]


def normalise_analyses(token: str, answers, vocalised: bool) -> list[tuple]:
    """Label tuples ``(lemma, upos, xpos, feats, vocalised)`` of an analyser's answers; a
    TypeError names a malformed answer."""
    out = []
    if answers is None:
        return out
    if isinstance(answers, (str, bytes, dict)):
        answers = [answers]
    for a in answers:
        if isinstance(a, dict):
            unknown = set(a) - {"lemma", "upos", "xpos", "feats", "vocalised"}
            if unknown:
                raise TypeError(f"analyser answer for {token!r} has unknown key "
                                f"{sorted(unknown)[0]!r} (expected lemma, upos, xpos, feats, "
                                "vocalised)")
            fields = [a.get("lemma", "_"), a.get("upos", "_"), a.get("xpos", "_"),
                      a.get("feats", "_"), a.get("vocalised")]
        elif isinstance(a, (tuple, list)) and 1 <= len(a) <= 5:
            fields = list(a) + [None] * (5 - len(a))
            fields[:4] = ["_" if f is None else f for f in fields[:4]]
        else:
            raise TypeError(f"analyser answer for {token!r} must be a dict or a tuple of up to "
                            f"5 strings (lemma, upos, xpos, feats, vocalised), got {a!r}")
        if fields[4] is None:
            fields[4] = token if vocalised else ""
        if not vocalised:
            fields[4] = ""
        for f in fields:
            if not isinstance(f, str):
                raise TypeError(f"analyser answer for {token!r} holds a non-string field {f!r}")
        out.append(tuple(fields))
    return out


def _lemma_rule(token: str, lemma: str) -> tuple:
    """``(lower, strip, add)``: lemma = (token lower-cased if ``lower``)[:len - strip] + add."""
    lower = lemma == lemma.lower() and token != token.lower()
    base = token.lower() if lower else token
    k = 0
    m = min(len(base), len(lemma))
    while k < m and base[k] == lemma[k]:
        k += 1
    return (lower, len(base) - k, lemma[k:])


class SuffixGuesser:
    """Analyses of unknown tokens from the endings of training words (see the module
    docstring).

    Parameters
    ----------
    max_suffix : int
        Longest ending looked at.
    max_guesses : int
        Analyses proposed per token (the most frequent for the ending, by word types).
    min_types : int
        An ending must have been seen with this many word types to be used.
    """

    def __init__(self, max_suffix: int = 4, max_guesses: int = 8, min_types: int = 2):
        self.max_suffix = max_suffix
        self.max_guesses = max_guesses
        self.min_types = min_types
        self.table: dict = {}

    def fit(self, pairs, vocalised: bool) -> "SuffixGuesser":
        """``pairs``: ``(token, label)`` of every distinct pair seen in training."""
        self.vocalised = vocalised
        counts: dict = defaultdict(Counter)
        types: dict = defaultdict(set)
        for token, label in pairs:
            lemma, upos, xpos, feats, _ = label
            base_lemma = undiacritize(lemma) if vocalised else lemma
            shape = (_lemma_rule(token, base_lemma), upos, xpos, feats)
            for k in range(0, min(self.max_suffix, len(token) - 1) + 1):
                suffix = token[len(token) - k:] if k else ""
                counts[suffix][shape] += 1
                types[suffix].add(token)
        self.table = {s: [sh for sh, _ in sorted(c.items(), key=lambda kv: -kv[1])
                          [:self.max_guesses]]
                      for s, c in counts.items() if len(types[s]) >= self.min_types or s == ""}
        return self

    def __call__(self, token: str) -> list[tuple]:
        for k in range(min(self.max_suffix, len(token) - 1), -1, -1):
            shapes = self.table.get(token[len(token) - k:] if k else "")
            if shapes:
                break
        else:
            return []
        out = []
        seen = set()
        for (lower, strip, add), upos, xpos, feats in shapes:
            base = token.lower() if lower else token
            if strip > len(base):
                continue
            lemma = base[:len(base) - strip] + add
            if not lemma:
                continue
            label = (lemma, upos, xpos, feats, token if self.vocalised else "")
            if label not in seen:
                seen.add(label)
                out.append(label)
        return out
