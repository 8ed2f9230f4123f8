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

For *vocalised* corpora (Arabic) the guesser works by analogy on whole word shapes instead:
a training pair ``(token, label)`` gives the *shape* ``(vocalisation pattern, lemma rule,
UPOS, XPOS, FEATS)`` — the diacritics of its vocalised form letter by letter
(:func:`~fastspectral.lexical.data.vocal_pattern`) and an edit rule from the vocalised form to
the vocalised lemma (strip a prefix and a suffix around their longest common substring, add
the lemma's own prefix and suffix: ``اَلمُعَارِضِينَ -> مُعَارِض``).  Shapes are indexed by keys
of decreasing precision that all keep the token's length — the *skeleton* (every letter but
alef, waw, ya, alef maqsura, ta marbuta and the hamza forms replaced by ``C``: the template of
Arabic morphology) with the first letter and the last two, the skeleton with the last two /
the last letter, then the length with the last two / last letter, then the length alone —
and an unknown token gets the most frequent shapes of its finest keys (``max_guesses`` in
all): the pattern is put onto its letters (:func:`~fastspectral.lexical.data.revocalize`) and
the lemma rule applied to the result.  On PADT this puts the gold label (vocalised form and
lemma included) among the candidates of about half of the unknown tokens, where the
undiacritised guess could never be right.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from functools import lru_cache

import numpy as np

from .data import revocalize, undiacritize, vocal_pattern

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


_LETTER = "\u00b7"
#: letters an Arabic skeleton keeps (long vowels, alef maqsura, ta marbuta, hamza forms)
_SKELETON_KEEP = frozenset("\u0627\u0648\u064a\u0649\u0629\u0621\u0623\u0625\u0622\u0624"
                           "\u0626")


def _skeleton(token: str) -> str:
    return "".join(c if c in _SKELETON_KEEP else "C" for c in token)


@lru_cache(maxsize=1 << 17)
def _shape_keys(token: str) -> tuple:
    """The keys of a token, finest first (see the module docstring); all keep the length."""
    sk = _skeleton(token)
    n = len(token)
    return (("s3", sk, token[:1], token[-2:]), ("s2", sk, token[-2:]), ("s1", sk, token[-1:]),
            ("l2", n, token[-2:]), ("l1", n, token[-1:]), ("l0", n))


@lru_cache(maxsize=1 << 17)
def _word_shape(token: str, label: tuple):
    """``(vocalisation pattern, lemma rule, UPOS, XPOS, FEATS)`` of a training pair (None when
    the vocalised form does not spell the token)."""
    lemma, upos, xpos, feats, vocalised = label
    pattern = vocal_pattern(vocalised)
    if pattern.count(_LETTER) != len(token):
        return None
    return (pattern, _vocalised_lemma_rule(vocalised, lemma), upos, xpos, feats)


def _vocalised_lemma_rule(form: str, lemma: str) -> tuple:
    """``(strip_front, strip_back, add_front, add_back)``: lemma = add_front +
    form[strip_front:len - strip_back] + add_back around the longest common substring of the
    vocalised form and the lemma (the whole lemma is added when they share nothing)."""
    from difflib import SequenceMatcher

    m = SequenceMatcher(None, form, lemma, autojunk=False).find_longest_match(
        0, len(form), 0, len(lemma))
    if m.size == 0:
        return (len(form), 0, lemma, "")
    return (m.a, len(form) - m.a - m.size, lemma[:m.b], lemma[m.b + m.size:])


def _shape_cut(shape: tuple):
    """``(letters, start, end, front, back)`` of a shape: the lemma its rule gives for a token
    of ``letters`` letters, undiacritised, is ``front + token[start:end] + back``; None when
    the rule gives an empty lemma (no label)."""
    pattern, (a, b, front, back) = shape[0], shape[1]
    n = len(pattern)
    if a + b > n or (a + b == n and not front and not back):
        return None
    pos = [i for i, c in enumerate(pattern) if c == _LETTER]
    start = sum(1 for p in pos if p < a)
    end = sum(1 for p in pos if p < n - b)
    return (len(pos), start, max(start, end), undiacritize(front), undiacritize(back))


def _apply_lemma_rule(form: str, rule: tuple) -> str:
    a, b, front, back = rule
    if a + b > len(form):
        return ""
    return front + form[a:len(form) - b] + back


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
    max_vocalised_guesses : int
        Analyses proposed per token by the shape analogy of vocalised corpora.
    """

    def __init__(self, max_suffix: int = 4, max_guesses: int = 8, min_types: int = 2,
                 max_vocalised_guesses: int = 16):
        self.max_suffix = max_suffix
        self.max_guesses = max_guesses
        self.min_types = min_types
        self.max_vocalised_guesses = max_vocalised_guesses
        self.table: dict = {}

    def fit(self, pairs, vocalised: bool) -> "SuffixGuesser":
        """``pairs``: ``(token, label)`` of every distinct pair seen in training."""
        self.vocalised = vocalised
        if vocalised:
            return self._fit_shapes(pairs)
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

    # -- vocalised corpora: analogy on word shapes ---------------------------------------------
    def _fit_shapes(self, pairs) -> "SuffixGuesser":
        key_ids: dict = {}
        shape_ids: dict = {}
        keys, shapes = [], []
        for token, label in pairs:
            shape = _word_shape(token, label)
            if shape is None:
                continue
            sid = shape_ids.setdefault(shape, len(shape_ids))
            for key in _shape_keys(token):
                keys.append(key_ids.setdefault(key, len(key_ids)))
                shapes.append(sid)
        # the most frequent shapes of every key (ties: first seen), counted in one pass
        n_shapes = max(len(shape_ids), 1)
        pair, count = np.unique(np.asarray(keys, dtype=np.int64) * n_shapes +
                                np.asarray(shapes, dtype=np.int64), return_counts=True)
        k = pair // n_shapes
        sid = pair - k * n_shapes
        order = np.lexsort((sid, -count, k))
        k, sid = k[order], sid[order]
        rank = np.arange(len(k)) - np.searchsorted(k, k)
        keep = rank < self.max_vocalised_guesses
        k, sid = k[keep], sid[keep]
        self._key_ids = key_ids
        self._shapes = list(shape_ids)
        self._key_ptr = np.searchsorted(k, np.arange(len(key_ids) + 1))
        self._key_shapes = sid
        self._cuts = [_shape_cut(sh) for sh in self._shapes]
        # per shape: its cut and the id of its (pattern, UPOS, XPOS, FEATS) — two shapes can
        # give the same label only when these ids and the undiacritised lemmas are equal
        tag_ids: dict = {}
        self._infl = [None if cut is None else
                      cut + (tag_ids.setdefault((sh[0],) + sh[2:], len(tag_ids)),)
                      for sh, cut in zip(self._shapes, self._cuts)]
        self._key_lists: dict = {}
        self.table = {}
        return self

    def _shapes_of(self, kid: int) -> list:
        """The shape ids of key ``kid`` (most frequent first) as a list, kept once built."""
        out = self._key_lists.get(kid)
        if out is None:
            out = self._key_lists[kid] = \
                self._key_shapes[self._key_ptr[kid]:self._key_ptr[kid + 1]].tolist()
        return out

    def _label(self, token: str, sid: int):
        pattern, rule, upos, xpos, feats = self._shapes[sid]
        vocalised = revocalize(token, pattern)
        lemma = _apply_lemma_rule(vocalised, rule)
        return (lemma, upos, xpos, feats, vocalised) if lemma else None

    def _inflections_shapes(self, token: str, n: int, lemmas: set) -> list[tuple]:
        """``[lab for lab in self._guess_shapes(token, n) if lab[0] in lemmas]`` without
        building the labels that cannot match: a shape's undiacritised lemma is a slice of the
        token between its two ends (:func:`_shape_cut`), so a label is built only when that
        is one of the undiacritised ``lemmas``, or to tell apart two shapes that could give
        the same label (same pattern, tags and undiacritised lemma: ``n`` counts distinct
        labels)."""
        ulemmas = {undiacritize(x) for x in lemmas}
        out: list = []
        done: set = set()
        twins: dict = {}
        labels: dict = {}
        count = 0
        m = len(token)

        shapes = self._shapes
        vocs: dict = {}             # the vocalised form of each pattern met (twins share it)

        def label(sid):             # = self._label(token, sid), memoised
            if sid not in labels:
                pattern, rule, upos, xpos, feats = shapes[sid]
                vocalised = vocs.get(pattern)
                if vocalised is None:
                    vocalised = vocs[pattern] = revocalize(token, pattern)
                lemma = _apply_lemma_rule(vocalised, rule)
                labels[sid] = (lemma, upos, xpos, feats, vocalised) if lemma else None
            return labels[sid]

        infl = self._infl
        key_ids = self._key_ids
        for key in _shape_keys(token):
            kid = key_ids.get(key)
            if kid is None:
                continue
            for sid in self._shapes_of(kid):
                if sid in done:         # the same shape gives the same label again
                    continue
                done.add(sid)
                info = infl[sid]
                if info is None:        # empty lemma: never a label
                    continue
                letters, ls, le, front, back, tag_id = info
                if letters != m:        # pragma: no cover - the keys keep the length
                    if label(sid) is None:
                        continue
                    ulem = undiacritize(label(sid)[0])
                else:
                    ulem = front + token[ls:le] + back
                twin = (tag_id, ulem)
                prev = twins.setdefault(twin, [])
                if prev and label(sid) in {label(p) for p in prev}:
                    continue            # a label seen before
                prev.append(sid)
                count += 1
                if ulem in ulemmas and label(sid)[0] in lemmas:
                    out.append(label(sid))
                if count >= n:
                    return out
        return out

    def _guess_shapes(self, token: str, n: int) -> list[tuple]:
        out: list = []
        seen: set = set()
        for key in _shape_keys(token):
            kid = self._key_ids.get(key)
            if kid is None:
                continue
            for sid in self._shapes_of(kid):
                pattern, rule, upos, xpos, feats = self._shapes[sid]
                vocalised = revocalize(token, pattern)
                lemma = _apply_lemma_rule(vocalised, rule)
                if not lemma:
                    continue
                label = (lemma, upos, xpos, feats, vocalised)
                if label not in seen:
                    seen.add(label)
                    out.append(label)
                    if len(out) >= n:
                        return out
        return out

    def inflections(self, token: str, lemmas) -> list[tuple]:
        """Guessed analyses of a *known* token whose lemma is one of ``lemmas`` (its lexicon
        lemmas): the inflections of a known lexeme not seen with the token in training (for
        vocalised corpora, from the ``4 * max_vocalised_guesses`` most frequent shapes)."""
        lemmas = set(lemmas)
        if not token:
            return []
        if self.vocalised:
            return self._inflections_shapes(token, 4 * self.max_vocalised_guesses, lemmas)
        return [lab for lab in self(token) if lab[0] in lemmas]

    def __call__(self, token: str) -> list[tuple]:
        if self.vocalised:
            return self._guess_shapes(token, self.max_vocalised_guesses) if token else []
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
