"""The inner split on which the lexical disambiguator chooses ``known_guesses``, ``graded`` and
``unknown_weights`` (``"inner"``): M_full fitted on the first half of the training part's
stage-2 tokens and scored (E1) on the second half, for each option.
"""
from __future__ import annotations


import numpy as np

from . import engine as E
from . import rankers as _rk
from .rankers import _fit_ranker, _specs

__all__ = ["CHOICE_TOKENS"]


#: stage-2 tokens (both directions together, per weight set) of each fit that chooses
#: ``known_guesses``, ``graded`` or ``unknown_weights`` on the inner split (a cost bound,
#: not tuned; 6,000 before the smaller stage-2 fits, see docs/notes/lexical.md)
CHOICE_TOKENS = 3000


class _InnerE1:
    """The inner split of the training data on which ``known_guesses``, ``graded`` and
    ``unknown_weights`` are chosen: M_full is fitted on the first half of the stage-2 tokens
    of every direction (at most :data:`CHOICE_TOKENS`; ``C`` and ``epsilon`` of each weight
    set chosen by the grid of the first of these fits, then kept in ``pairs`` for the later
    ones — the final fits choose their own) and its E1 measured on all tokens of the second
    halves (scored with the counts of the other part of the training data; uncovered tokens
    are errors).  Training data only.
    ``self(known_guesses, graded, unknown_weights)`` is that E1 (memoised); ``tokens``: the
    number of inner evaluation tokens."""

    def __init__(self, dirs, space, cols, n_bins, n_les, C, epsilon, max_iter, random_state,
                 loss, use_doc):
        self.dirs, self.space, self.cols, self.n_bins, self.n_les = \
            dirs, space, cols, n_bins, n_les
        self.fit_args = (C, epsilon, max_iter, random_state, loss)
        self.base = _specs(space, ["M_full"])[0]
        self.use_doc = use_doc
        self.halves = [len(d[2]) // 2 for d in dirs]
        self.use = [np.arange(len(d[2])) < h for d, h in zip(dirs, self.halves)]
        self.tokens = sum(len(d[2]) - h for d, h in zip(dirs, self.halves))
        self._memo: dict = {}
        self._fits: dict = {}      # design matrices, fits and scores shared by the settings
        self._plain = None
        #: ``(C, epsilon)`` per weight set, chosen by the grid of the first inner fit and
        #: reused by the later inner fits (None: not yet chosen)
        self.pairs = None

    def __call__(self, known_guesses: bool, graded: str, unknown_weights: bool) -> float:
        key = (bool(known_guesses), graded, bool(unknown_weights))
        if key in self._memo:
            return self._memo[key]
        base, space = self.base, self.space
        spec = E.RankerSpec(base.name, base.level, base.targets,
                            base.doc_targets if self.use_doc else (), False,
                            2 if unknown_weights else 1)
        ds = self.dirs
        if not known_guesses:
            if self._plain is None:
                self._plain = [d[:3] + (d[3].without_inflections(),) + d[4:] for d in ds]
            ds = self._plain
        C, epsilon, max_iter, random_state, loss = self.fit_args
        if self.pairs is not None:
            C, epsilon = self.pairs
        ranker, _ = _fit_ranker(spec, ds, space, self.cols, self.n_bins, graded, self.n_les,
                                C, epsilon, max_iter, random_state, loss, CHOICE_TOKENS,
                                self.use, memo=self._fits)
        if self.pairs is None and ranker is not None and ranker.C[0] is not None:
            # a weight set without a fit (too few tokens) keeps the grid (None)
            self.pairs = (list(ranker.C), list(ranker.epsilon))
        if ranker is None:
            lam, lam_doc = E.uniform_weights(spec, len(self.cols), self.n_bins)
            ranker = E.Ranker(spec, lam, lam_doc, 0.0, None, 0)
        errors = 0
        for d, ((tab, _, Fr, cands, S, qloc, gold_lv), h) in enumerate(zip(ds, self.halves)):
            ev = np.arange(h, len(Fr))
            blocks = E.token_blocks(spec, cands.known[ev])
            # the errors depend on the candidates and on the weights of the blocks in use
            used = np.unique(blocks)
            lam = np.asarray(ranker.lam).reshape(spec.blocks, -1)[used]
            lam_doc = np.asarray(ranker.lam_doc).reshape(spec.blocks, -1)[used]
            key = ("errors", d, bool(known_guesses),
                   _rk._digest(blocks, lam, lam_doc, ranker.intercept, spec.targets,
                           spec.doc_targets))
            err = self._fits.get(key)
            if err is None:
                ptr, vals = E.row_values(cands, -1, space.n_targets)
                rows, p2 = E.token_rows(ptr, ev)
                v = np.ascontiguousarray(vals[rows])
                sc = E.score(tab, np.ascontiguousarray(Fr[ev]), self.cols, p2, v, ranker,
                             self.n_bins, S, qloc[ev], blocks)
                best, _ = E.top2(p2, sc)
                err = int(np.sum(v[best, 0] != gold_lv[ev, 0]))
                self._fits[key] = err
            errors += err
        out = 100.0 * errors / max(self.tokens, 1)
        self._memo[key] = out
        return out


def _choose_settings(inner: _InnerE1, options: dict):
    """The option of ``options`` (``{name: (known_guesses, graded, unknown_weights)}``, in
    order of preference) with the lowest inner E1, ties to the earlier:
    ``(name, {name: E1, ..., "tokens": n})``."""
    scores = {name: inner(*setting) for name, setting in options.items()}
    best = min(scores, key=lambda k: (scores[k], list(options).index(k)))
    scores["tokens"] = inner.tokens
    return best, scores


def _choose_known_guesses(inner: _InnerE1, graded, unknown_weights):
    """``known_guesses="inner"``: M_full with and without the guessed inflections of known
    tokens compared on the inner split (:class:`_InnerE1`; ``graded`` and
    ``unknown_weights`` at their defaults when they are chosen too — they are chosen next,
    one after the other).  Returns ``(yes?, {"no": E1, "yes": E1, "tokens": n})``; ties:
    no."""
    name, scores = _choose_settings(inner, {"no": (False, graded, unknown_weights),
                                            "yes": (True, graded, unknown_weights)})
    return name == "yes", scores
