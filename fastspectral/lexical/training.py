"""The training pipeline of the lexical disambiguator (Shah et al. 2010): the split of the
training sentences, the lexicon and context tables of the first part, the candidates of the
second, the inner choices and the fit of every ranker (:func:`train`, shared by
:class:`~fastspectral.lexical.model.LexicalDisambiguator` and the cross-validation of
:mod:`fastspectral.lexical.cv`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import engine as E
from .analyser import SuffixGuesser
from .candidates import _guesser_pairs, _LazyGuesser, candidates
from .data import Corpus, LabelScheme, corpus_from_sentences, corpus_vocalised
from .features import FeatureSpace, parse_features
from .inner_cv import _choose_known_guesses, _choose_settings, _InnerE1
from .rankers import _fit_ranker, _graded_value, _specs

__all__ = ["Learned", "train", "GRADED_GRID", "UNKNOWN_WEIGHTS_GRID", "STAGE2_TOKENS"]


#: the options ``graded="inner"`` compares, the first winning ties (the simpler targets)
GRADED_GRID = ("no", "unknown")
#: the options ``unknown_weights="inner"`` compares, the first winning ties (one weight set)
UNKNOWN_WEIGHTS_GRID = ("no", "yes")


@dataclass
class Learned:
    """Everything ``fit`` learns (shared by the estimator and the cross-validation)."""

    vocalised: bool
    scheme: LabelScheme
    space: E.LabelSpace
    fs: FeatureSpace
    cols: list             # template columns of F used as features
    tables: E.Tables
    guesser: SuffixGuesser
    rankers: dict          # name -> Ranker
    n_bins: int
    unknown: str
    stage2: dict           # name -> rows used by stage 2
    known_guesses: bool = False
    known_guesses_scores: dict | None = None   # E1 of the inner choice ("inner")
    graded: str = "unknown"                    # the resolved g(i, k) ("no", "unknown", "all")
    graded_scores: dict | None = None          # E1 of the inner choice ("inner")
    unknown_weights: bool = True               # the resolved second weight set
    unknown_weights_scores: dict | None = None  # E1 of the inner choice ("inner")

    def target(self, name: str) -> int:
        return self.space.target(name)


def _split_point(corpus: Corpus, fraction: float) -> int:
    """First sentence of the second part: ``fraction`` of the sentences, moved forward to the
    next document boundary when there is one before the end."""
    n = corpus.n_sentences
    s1 = min(max(1, int(round(fraction * n))), n - 1) if n > 1 else n
    starts = corpus.sent_starts
    k = s1
    while 0 < k < n and corpus.docs[starts[k]] == corpus.docs[starts[k] - 1]:
        k += 1
    return k if k < n else s1


#: stage-2 tokens (both directions together, per weight set) of each ranker's final fit,
#: drawn with ``random_state`` when there are more (a cost bound, not tuned; 20,000 until
#: the smaller stage-2 fits, see docs/notes/lexical.md)
STAGE2_TOKENS = 10000


def train(sentences, *, rankers, features="all", vocalised="auto", split=0.5, refit=True,
          C=None, epsilon=None, frequency_classes=5, unknown="suffix", analyser=None,
          max_iter=1000, random_state=0, with_morph=False,
          loss="squared_epsilon_insensitive", graded="inner", unknown_weights="inner",
          cross_fit=True, stage2_tokens=STAGE2_TOKENS, known_guesses="inner") -> Learned:
    """Fit the stage-1 tables and the ``rankers`` (see :func:`_specs`) on labelled
    sentences (the body of :meth:`LexicalDisambiguator.fit`, shared with the
    cross-validation).  ``known_guesses``, ``graded`` and ``unknown_weights`` equal to
    ``"inner"`` are chosen on an inner split of these sentences (:func:`_choose_settings`)."""
    templates = parse_features(features)
    voc = corpus_vocalised(sentences) if vocalised == "auto" else vocalised == "yes"
    choose = known_guesses == "inner" and unknown == "suffix"
    kg_scores = g_scores = uw_scores = None
    known_guesses = voc if known_guesses == "auto" else known_guesses in (True, "yes")
    choose_g = graded == "inner"
    graded = "unknown" if choose_g else _graded_value(graded)
    choose_uw = unknown_weights == "inner"
    unknown_weights = True if choose_uw else unknown_weights in (True, "yes")
    corpus = corpus_from_sentences(sentences, voc)
    scheme = LabelScheme.from_labels(set(corpus.labels), voc)
    space = E.LabelSpace(scheme, with_morph)
    label_id = {lab: space.add(lab) for lab in dict.fromkeys(corpus.labels)}
    ids = np.fromiter((label_id[lab] for lab in corpus.labels), dtype=np.int64,
                      count=len(corpus.labels))
    fs = FeatureSpace.for_features(templates).fit(corpus.tokens, corpus.sent_starts)
    F = fs.transform(corpus.tokens, corpus.sent_starts)
    V = space.lv[ids]
    cols = [c for c, name in enumerate(fs.names) if name in templates]
    use_doc = "Doc" in templates

    def make_specs(uw):
        return [E.RankerSpec(s.name, s.level, s.targets, s.doc_targets if use_doc else (),
                             s.uniform, 2 if uw and not s.uniform else 1)
                for s in _specs(space, rankers)]

    specs = make_specs(unknown_weights)
    targets = sorted({m for s in specs for m in s.targets} | {0})
    doc_targets = sorted({m for s in specs for m in s.doc_targets})
    n_values = space.n_values()
    n_bins = int(frequency_classes)
    all_idx = np.arange(len(corpus))
    rankers_out: dict = {}
    stage2: dict = {}
    trainable = [s for s in specs if not s.uniform]
    # graded targets and the second weight set only matter to rankers with a stage 2
    choose_g = choose_g and bool(trainable)
    choose_uw = choose_uw and bool(trainable)
    if corpus.n_sentences < 2:
        choose = choose_g = choose_uw = False
    if (trainable or choose) and corpus.n_sentences >= 2:
        s1 = _split_point(corpus, split)
        cut = corpus.sent_starts[s1]
        parts = [(all_idx[:cut], all_idx[cut:])]
        if cross_fit:
            parts.append((all_idx[cut:], all_idx[:cut]))
        n_les = len(scheme.names)
        dirs = []
        for count_idx, row_idx in parts:
            tab = E.Tables.build(F, V, count_idx, corpus.docs, targets, doc_targets, fs.sizes,
                                 n_values)
            gue = SuffixGuesser().fit(_guesser_pairs(tab, fs, space), voc)
            Fr = np.ascontiguousarray(F[row_idx])
            cands = candidates(tab, space, fs, gue, [corpus.tokens[i] for i in row_idx], Fr,
                               analyser=analyser, unknown=unknown, vocalised=voc,
                               known_guesses=known_guesses or choose)
            S, qloc = tab.doc_similarity(Fr[:, 0], np.asarray(corpus.docs)[row_idx])
            dirs.append((tab, gue, Fr, cands, S, qloc, V[row_idx]))
        tables1, guesser1 = dirs[0][0], dirs[0][1]
        if choose or choose_g or choose_uw:
            inner = _InnerE1(dirs, space, cols, n_bins, n_les, C, epsilon, max_iter,
                             random_state, loss, use_doc)
            if choose:
                kg, kg_scores = _choose_known_guesses(inner, graded, unknown_weights)
                known_guesses = kg
            if choose_g:
                graded, g_scores = _choose_settings(
                    inner, {g: (known_guesses, g, unknown_weights) for g in GRADED_GRID})
            if choose_uw:
                uw, uw_scores = _choose_settings(
                    inner, {u: (known_guesses, graded, u == "yes")
                            for u in UNKNOWN_WEIGHTS_GRID})
                unknown_weights = uw == "yes"
            inner._fits.clear()     # the memo's design matrices: not needed any more
        if choose and not known_guesses:
            dirs = inner._plain if inner._plain is not None else \
                [d[:3] + (d[3].without_inflections(),) + d[4:] for d in dirs]
        specs = make_specs(unknown_weights)
        trainable = [s for s in specs if not s.uniform]
        for spec in trainable:      # each final fit chooses its own (C, epsilon)
            ranker, n_rows = _fit_ranker(spec, dirs, space, cols, n_bins, graded, n_les, C,
                                         epsilon, max_iter, random_state, loss, stage2_tokens)
            stage2[spec.name] = n_rows
            if ranker is not None:
                rankers_out[spec.name] = ranker
        if not refit:
            tables, guesser = tables1, guesser1
    for spec in specs:
        if spec.name not in rankers_out:
            lam, lam_doc = E.uniform_weights(spec, len(cols), n_bins)
            rankers_out[spec.name] = E.Ranker(spec, lam, lam_doc, 0.0, None, 0)
    if refit or not trainable or corpus.n_sentences < 2:
        tables = E.Tables.build(F, V, all_idx, corpus.docs, targets, doc_targets, fs.sizes,
                                n_values)
        guesser = _LazyGuesser(tables, fs, space, voc)
    return Learned(voc, scheme, space, fs, cols, tables, guesser, rankers_out, n_bins,
                   unknown, stage2, bool(known_guesses), kg_scores, graded, g_scores,
                   bool(unknown_weights), uw_scores)
