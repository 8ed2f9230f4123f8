"""The lexical disambiguator of Shah et al. (2010) on the estimator base.

See :class:`LexicalDisambiguator`; the training pipeline is :mod:`fastspectral.lexical.training`
(stage 1's candidates in :mod:`~fastspectral.lexical.candidates`, the rankers in
:mod:`~fastspectral.lexical.rankers`, the inner choices in :mod:`~fastspectral.lexical.inner_cv`),
prediction :mod:`fastspectral.lexical.prediction`; the two stages' kernels are in
:mod:`fastspectral.lexical.engine`, the data layer in :mod:`fastspectral.lexical.data`, the
context statistics in :mod:`fastspectral.lexical.features`, the metrics in
:mod:`fastspectral.lexical.metrics` and the cross-validation of table 5 in
:mod:`fastspectral.lexical.cv`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..base import Parser, check_float, check_int
from ..errors import FormatError, ModelFileError
from . import engine as E
from .candidates import _LazyGuesser, candidates
from .data import Corpus, LabelScheme, apply_labels, corpus_from_sentences, gc_paused
from .features import FeatureSpace, parse_features
from .prediction import predict_labels
from .rankers import _check_choice, _graded_value, _specs, variant_rankers
from .training import GRADED_GRID, UNKNOWN_WEIGHTS_GRID, Learned, train  # noqa: F401

__all__ = ["LexicalDisambiguator", "LexicalParseStats", "VARIANTS", "Learned", "train",
           "candidates", "predict_labels", "check_sentences"]

#: the models of table 5 that :class:`LexicalDisambiguator` can be
VARIANTS = ("full", "uni", "baseline", "ind", "unigram")
#: the paper's names of the variants
PAPER_NAMES = {"full": "M_full", "uni": "M_uni", "baseline": "M_baseline", "ind": "M_ind",
               "unigram": "unigram"}
_UNKNOWN = ("suffix", "none")
_VOCALISED = ("auto", "yes", "no")
#: ``graded``: the targets g(i, k) of stage 2 — "no": 1 for the gold candidate, 0 for the
#: others (the paper's reading); "unknown": graded (share of LEs shared with the gold label)
#: for tokens outside the lexicon; "all": graded for every token; "inner": chosen
_GRADED = ("inner", "no", "unknown", "all")
#: ``unknown_weights``: a second weight set for the tokens outside the lexicon
_UNKNOWN_WEIGHTS = ("inner", "yes", "no", True, False)


@dataclass
class LexicalParseStats:
    """What happened to the tokens of the last :meth:`LexicalDisambiguator.parse` call
    (``last_parse_stats_``).

    Attributes
    ----------
    sentences : int
        Sentences disambiguated (empty ones included).
    words : int
        Tokens disambiguated.
    unknown_words : int
        Tokens the lexicon does not know (not even lower-cased): their candidates come from
        the analyser or the guesser (``unknown``), scored with the weights of the unknown
        tokens when the model has them (``unknown_weights_``).
    tag_fallbacks : int
        Tokens given a tag (``tags``) that none of their candidates carries: every candidate
        was kept, as without the tag.
    """

    sentences: int = 0
    words: int = 0
    unknown_words: int = 0
    tag_fallbacks: int = 0


# ------------------------------------------------------------------------------------------
# checks
# ------------------------------------------------------------------------------------------
def check_sentences(items, labelled: bool):
    """A list of :class:`~fastspectral.trees.conll.DepSentence` (TypeError otherwise); with
    ``labelled``, FormatError naming the sentence's line for a word whose LEMMA, UPOS and XPOS
    are all ``_`` (nothing to learn)."""
    from ..base import check_dep_sentences
    from ..trees.conll import DepSentence

    if isinstance(items, (str, bytes)):
        raise TypeError("expected a list of DepSentence objects (read_conllu), not a string")
    items = list(items)
    for s in items:
        if not isinstance(s, DepSentence):
            raise TypeError(f"expected DepSentence objects (fastspectral.trees.conll."
                            f"read_conllu), got {type(s).__name__}")
    check_dep_sentences(items)                  # string words
    if labelled:
        if not items or not any(len(s) for s in items):
            raise ValueError("no training sentences (the corpus is empty)")
        for s in items:
            for i in range(len(s)):
                if s.lemmas[i] == "_" and s.upos[i] == "_" and s.xpos[i] == "_" and \
                        s.feats[i] == "_":
                    line = None if s.line is None else s.line + len(s.comments) + i
                    raise FormatError(f"word {i + 1} ({s.words[i]!r}) has no LEMMA, UPOS, "
                                      "XPOS or FEATS: nothing to learn (lexical training needs "
                                      "annotated CoNLL-U)", None, line)
    return items


# ------------------------------------------------------------------------------------------
# the estimator
# ------------------------------------------------------------------------------------------
class LexicalDisambiguator(Parser):
    """Lexical disambiguation with factored labels and two-stage shrinkage (Shah et al. 2010).

    Each token ``t`` of a CoNLL-U corpus (for Arabic: the undiacritised FORM) gets a label
    ``l = (lemma, UPOS, XPOS, FEATS, vocalised form)`` chosen among its candidate set ``C(t)``
    (eq. 9: the labels seen with ``t`` in training and an analyser's answers; the guesser's
    analyses for unknown tokens — by shape analogy, vocalised form and lemma included, for
    vocalised corpora — and, with ``known_guesses``, unseen inflections of known tokens).  Labels factor into label elements (LEs: lemma, UPOS, the XPOS
    positions or the whole XPOS, each FEATS key, the vocalisation; see
    :class:`~fastspectral.lexical.data.LabelScheme`).

    Stage 1 counts, for every context template of table 3 (``Freq``, ``PrevWord``,
    ``NextWord``, the first/last letters of the neighbours, the document's words) and every
    target (the label and each LE), the univariate estimates ``beta*_jk`` (relative frequency
    of value ``k`` among the tokens with feature ``j``).  Stage 2 fits one shrinkage weight
    ``lambda_j`` per template, target and frequency class of the feature by a linear
    epsilon-SVR (liblinear) on the rows (token, candidate) of a held-out second part of the
    training data, target ``g(i, k) = 1`` for the gold candidate, 0 for the others; a token's
    label is ``argmax_{k in C(t)} sum_j lambda_j beta*_jk x_ij`` (eq. 6), where the sum runs
    over the estimates of the label and of each of its LEs.

    Parameters
    ----------
    variant : {"full", "uni", "baseline", "ind", "unigram"}, default "full"
        The model of table 5: ``"full"`` (M_full: the label and every LE, stage 2),
        ``"uni"`` (M_uni: the univariate stage-1 estimates of the label and every LE summed
        with ``lambda = 1``, no stage 2), ``"baseline"`` (M_baseline: whole labels only),
        ``"ind"`` (M_ind: the lemma and the morphological analysis chosen by two independent
        models) or ``"unigram"`` (the most frequent label of the token).
    features : str, default "all"
        Context templates: ``"table3"`` (the paper's), ``"all"`` (plus ``Prefix2``,
        ``Suffix2``, ``Suffix3``) or a comma-separated list (:mod:`fastspectral.lexical.features`).
    vocalised : {"auto", "yes", "no"}, default "auto"
        Whether FORMs are vocalised (Arabic): tokens are then the undiacritised FORMs and the
        label carries the vocalised form.  ``"auto"``: yes when a training FORM holds an
        Arabic diacritic.
    split : float in (0, 1), default 0.5
        Share of the training sentences (moved to a document boundary) counted in stage 1
        while stage 2 is fitted on the rest.
    refit : bool, default True
        After stage 2, count stage 1 (and the candidate sets) again on all training data.
    cross_fit : bool, default True
        Stage 2 also fits on the rows of the first part scored with the counts of the second
        (twice the stage-2 rows; False: the paper's one direction).
    C : float or None, default None
        SVR regularisation; None: chosen among ``engine.C_GRID`` on a held-out half of the
        stage-2 rows (never on test data).
    epsilon : float or None, default None
        Width of the SVR's insensitive zone; None: chosen with ``C`` among
        ``engine.EPSILON_GRID`` on the same held-out half of the stage-2 rows.
    frequency_classes : int, default 5
        Frequency classes of a feature (1, 2-3, 4-7, ... occurrences) with their own lambda.
    unknown : {"suffix", "none"}, default "suffix"
        Candidates of tokens unknown to the lexicon and the analyser: the suffix guesser's
        (:class:`~fastspectral.lexical.analyser.SuffixGuesser`) or a single empty analysis.
    known_guesses : {"inner", "auto", "yes", "no"} or bool, default "inner"
        Known tokens also get the guesser's analyses whose lemma is one of their lexicon
        lemmas (unseen inflections of a known lexeme; the role of SAMA's full analysis
        lists); "no"/False: exactly eq. 9 for known tokens; "inner": chosen on the training
        data — M_full fitted both ways on the first half of the stage-2 tokens and its E1
        compared on the second half (ties: no; ``known_guesses_``); "auto": yes for vocalised
        corpora (a setting chosen after seeing cross-validation results: kept for
        reproducing them, not a default).
    graded : {"inner", "no", "unknown", "all"}, default "inner"
        The stage-2 targets g(i, k) of the label rankers: "no": 1 for the gold candidate and
        0 for the others; "unknown": the share of LEs a candidate shares with the gold label
        for the tokens outside the lexicon (whose gold label is rarely a candidate); "all":
        graded for every token; "inner": "no" or "unknown" chosen on the training data (after
        ``known_guesses``, the same inner split and score; ties: "no"; ``graded_``).
    unknown_weights : {"inner", "yes", "no"} or bool, default "inner"
        A second weight set for the tokens outside the lexicon; "inner": chosen on the
        training data (after ``graded``, the same inner split and score; ties: no;
        ``unknown_weights_``).
    analyser : callable or None, default None
        ``analyser(token) -> analyses`` added to every candidate set (the role of SAMA; see
        :mod:`.analyser`).  Not saved in model files: set it again after loading.
    loss : {"squared_epsilon_insensitive", "epsilon_insensitive"}, default \
"squared_epsilon_insensitive"
        The SVR loss: liblinear's L2-loss epsilon-SVR (solved in the primal by trust-region
        Newton: fast and converged) or the L1-loss epsilon-SVR (dual coordinate descent).
    iterations : int, default 1000
        Iterations of liblinear (its ``max_iter``).
    random_state : int or None, default 0
        Seed of liblinear's coordinate order.

    Attributes
    ----------
    vocalised_ : bool
        Whether the model reads undiacritised tokens and chooses vocalised forms.
    label_elements_ : list of str
        The LE names.
    n_labels_ : int
        Labels seen in training.
    lambdas_ : dict
        ``{ranker: (lambda, lambda of the document features, intercept)}``; ``lambda`` has one
        row per weight set (tokens the lexicon knows, the others) and one column per template,
        target and frequency class.
    C_ : dict
        The SVR ``C`` of each ranker, one per weight set (None: no stage-2 rows, uniform
        weights).
    epsilon_ : dict
        The SVR ``epsilon`` of each ranker, one per weight set (as ``C_``).
    known_guesses_ : bool
        Whether known tokens get the guessed inflections (the resolved ``known_guesses``).
    known_guesses_scores_ : dict or None
        With ``known_guesses="inner"``: the inner E1 of M_full without (``"no"``) and with
        (``"yes"``) them and the number of inner evaluation tokens (``"tokens"``).
    graded_ : str
        The resolved ``graded`` ("no", "unknown" or "all").
    graded_scores_ : dict or None
        With ``graded="inner"``: the inner E1 of M_full of each option of ``GRADED_GRID`` and
        ``"tokens"``.
    unknown_weights_ : bool
        Whether tokens outside the lexicon have their own weight set.
    unknown_weights_scores_ : dict or None
        With ``unknown_weights="inner"``: the inner E1 of M_full without (``"no"``) and with
        (``"yes"``) the second weight set and ``"tokens"``.
    fit_time_ : float
        Seconds spent in the last ``fit``.
    last_parse_stats_ : LexicalParseStats
        Counters of the last :meth:`parse` call.

    References
    ----------
    R. Shah, P. S. Dhillon, M. Liberman, D. P. Foster, M. Maamouri and L. H. Ungar (2010).
    A New Approach to Lexical Disambiguation of Arabic Text.  EMNLP 2010, 725-735.
    Implemented: the label-element factoring (section 3), the candidate sets (eq. 9), the
    univariate stage-1 estimates and the shrinkage score (eq. 6), the stage-2 epsilon-SVR on
    (token, candidate) rows, the baselines and models of table 5 and the per-LE models of
    table 4; the metrics A1/A2 and E1/E2 (:mod:`fastspectral.lexical.metrics`).

    Examples
    --------
    >>> from fastspectral.trees.conll import DepSentence
    >>> from fastspectral.lexical import LexicalDisambiguator
    >>> def sent(words, tags):
    ...     return DepSentence(words=words, lemmas=[w.lower() for w in words], upos=tags,
    ...                        xpos=tags, heads=[0] + [1] * (len(words) - 1))
    >>> data = [sent(["they", "can", "fish"], ["PRON", "AUX", "VERB"]),
    ...         sent(["a", "can", "opens"], ["DET", "NOUN", "VERB"])] * 20
    >>> model = LexicalDisambiguator(C=1.0).fit(data)
    >>> out = model.parse([sent(["they", "can", "fish"], ["_"] * 3)])
    >>> out[0].upos
    ['PRON', 'AUX', 'VERB']
    """

    kind = "lexical"
    input_kind = "dependency"
    #: names of model files written by older versions
    _renamed_params = {"max_iter": "iterations"}

    def __init__(self, variant="full", features="all", vocalised="auto", split=0.5,
                 refit=True, cross_fit=True, C=None, epsilon=None, frequency_classes=5,
                 unknown="suffix", known_guesses="inner", graded="inner",
                 unknown_weights="inner", analyser=None,
                 loss="squared_epsilon_insensitive", iterations=1000, random_state=0):
        self.variant = variant
        self.features = features
        self.vocalised = vocalised
        self.split = split
        self.refit = refit
        self.cross_fit = cross_fit
        self.C = C
        self.epsilon = epsilon
        self.frequency_classes = frequency_classes
        self.unknown = unknown
        self.known_guesses = known_guesses
        self.graded = graded
        self.unknown_weights = unknown_weights
        self.analyser = analyser
        self.loss = loss
        self.iterations = iterations
        self.random_state = random_state

    # -- fitting -----------------------------------------------------------------------------
    def _check_params(self):
        _check_choice("variant", self.variant, VARIANTS)
        parse_features(self.features)
        _check_choice("vocalised", self.vocalised, _VOCALISED)
        check_float("split", self.split, 0.0, 1.0)
        if not 0.0 < float(self.split) < 1.0:
            raise ValueError(f"split must be a number in (0, 1), not {self.split!r}")
        if self.known_guesses not in ("inner", "auto", "yes", "no", True, False):
            raise ValueError(f"known_guesses must be 'inner', 'auto', 'yes', 'no', True or "
                             f"False, not {self.known_guesses!r}")
        _check_choice("graded", self.graded, _GRADED)
        if self.unknown_weights not in _UNKNOWN_WEIGHTS:
            raise ValueError(f"unknown_weights must be 'inner', 'yes', 'no', True or False, "
                             f"not {self.unknown_weights!r}")
        for name in ("refit", "cross_fit"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False, not {getattr(self, name)!r}")
        if self.C is not None and check_float("C", self.C, 0.0) == 0.0:
            raise ValueError(f"C must be a number > 0 or None, got {self.C!r}")
        if self.epsilon is not None:
            check_float("epsilon", self.epsilon, 0.0)
        if check_int("frequency_classes", self.frequency_classes, 1) > 30:
            raise ValueError(f"frequency_classes must be an integer in 1..30, got "
                             f"{self.frequency_classes!r}")
        _check_choice("unknown", self.unknown, _UNKNOWN)
        _check_choice("loss", self.loss, E.LOSSES)
        if self.analyser is not None and not callable(self.analyser):
            raise TypeError(f"analyser must be callable (token -> analyses) or None, not "
                            f"{type(self.analyser).__name__}")
        check_int("iterations", self.iterations, 1)
        if self.random_state is not None and (isinstance(self.random_state, bool) or
                                              not isinstance(self.random_state,
                                                             (int, np.integer))):
            raise ValueError(f"random_state must be an integer or None, not "
                             f"{self.random_state!r}")

    def fit(self, X, y=None):
        """Learn from labelled dependency sentences (CoNLL-U: FORM, LEMMA, UPOS, XPOS, FEATS;
        any of them may be ``_`` but not all); returns self."""
        self._validate_params()
        X = check_sentences(X, labelled=True)
        t0 = time.perf_counter()
        seed = self.random_state if self.random_state is not None else \
            int(np.random.SeedSequence().generate_state(1)[0] >> 1)
        with gc_paused():
            self.learned_ = self._train(X, seed)
        self._set_attributes()
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _train(self, sentences, seed):
        return train(
            sentences, rankers=variant_rankers(self.variant), features=self.features,
            vocalised=self.vocalised, split=float(self.split), refit=bool(self.refit),
            cross_fit=bool(self.cross_fit),
            C=None if self.C is None else float(self.C),
            epsilon=None if self.epsilon is None else float(self.epsilon),
            frequency_classes=int(self.frequency_classes), unknown=self.unknown,
            known_guesses=self.known_guesses, graded=self.graded,
            unknown_weights=self.unknown_weights,
            analyser=self.analyser, loss=self.loss, max_iter=int(self.iterations),
            random_state=seed,
            with_morph=self.variant == "ind")

    def _set_attributes(self):
        lr = self.learned_
        self.vocalised_ = lr.vocalised
        self.label_elements_ = list(lr.scheme.names)
        self.n_labels_ = len(lr.space.labels)
        self.lambdas_ = {k: (r.lam, r.lam_doc, r.intercept) for k, r in lr.rankers.items()}
        self.C_ = {k: r.C for k, r in lr.rankers.items()}
        self.epsilon_ = {k: r.epsilon for k, r in lr.rankers.items()}
        self.known_guesses_ = bool(lr.known_guesses)
        self.known_guesses_scores_ = None if lr.known_guesses_scores is None else \
            dict(lr.known_guesses_scores)
        self.graded_ = lr.graded
        self.graded_scores_ = None if lr.graded_scores is None else dict(lr.graded_scores)
        self.unknown_weights_ = bool(lr.unknown_weights)
        self.unknown_weights_scores_ = None if lr.unknown_weights_scores is None else \
            dict(lr.unknown_weights_scores)

    # -- prediction --------------------------------------------------------------------------
    def _model_name(self) -> str:
        return {"full": "M_full", "uni": "M_uni", "baseline": "M_baseline", "ind": "M_ind",
                "unigram": "unigram"}[self.variant]

    def predict_corpus(self, corpus: Corpus, tags=None, jobs=None):
        """``(first, second, candidates)``: the top-two labels of every token of a
        :class:`~fastspectral.lexical.data.Corpus` and its candidate labels (scored on
        ``jobs`` threads; None: Numba's default)."""
        self._check_fitted()
        if not isinstance(corpus, Corpus):
            raise TypeError(f"predict_corpus takes a Corpus (fastspectral.lexical.data), not "
                            f"{type(corpus).__name__}")
        name = self._model_name()
        with gc_paused():
            out = predict_labels(self.learned_, corpus, [name], analyser=self.analyser,
                                 tags=tags, threads=jobs)
        first, second = out[name]
        return first, second, out["_candidates"]

    def parse(self, items, *, tags=None, jobs=None, progress=None) -> list:
        """Disambiguate dependency sentences: a copy of each with LEMMA, UPOS, XPOS, FEATS of
        the chosen label; for a vocalised model FORM becomes the chosen vocalised form and the
        input FORM goes to MISC ``InputForm=`` when it differs; MISC ``LexAlt=`` holds the
        second choice (:func:`fastspectral.lexical.data.encode_alt`).  Heads are copied (an
        unknown head, ``_`` in the input, becomes 0).

        Parameters
        ----------
        items : list of DepSentence
            Sentences (only FORM is read; the document of a sentence comes from its comments).
        tags : list of lists of str, optional
            A tag per word (``"_"``: none): candidates whose UPOS or XPOS is the tag are kept
            when there are any.
        jobs : int, optional
            Threads of the compiled scoring pass (None: every available core).
        progress : callable, optional
            ``progress(done, total)``, called once at the end.

        ``last_parse_stats_`` (:class:`LexicalParseStats`) counts the tokens unknown to the
        lexicon and those whose tag matched no candidate.
        """
        sents = check_sentences(items, labelled=False)
        threads = self._check_parse_args(sents, tags, jobs)
        if tags is not None:
            for s, t in zip(sents, tags):
                if len(t) != len(s):
                    raise ValueError(f"tags of a sentence of {len(s)} words has {len(t)} "
                                     "entries")
        nonempty = [s for s in sents if len(s)]
        corpus = corpus_from_sentences(nonempty, self.vocalised_, labelled=False)
        flat_tags = None
        if tags is not None:
            flat_tags = [t for s, ts in zip(sents, tags) if len(s) for t in ts]
        first, second, cands = self.predict_corpus(corpus, tags=flat_tags, jobs=threads) \
            if len(corpus) else ([], [], None)
        stats = LexicalParseStats(sentences=len(sents), words=len(first))
        if cands is not None:
            stats.unknown_words = int(np.count_nonzero(~cands.known))
            if cands.tag_unmatched is not None:
                stats.tag_fallbacks = int(np.count_nonzero(cands.tag_unmatched))
        self.last_parse_stats_ = stats
        out = []
        k = 0
        for s in sents:
            n = len(s)
            out.append(apply_labels(s, first[k:k + n], second[k:k + n], self.vocalised_))
            k += n
        if progress is not None:
            progress(len(sents), len(sents))
        return out

    # -- model files -------------------------------------------------------------------------
    def _model_file(self):
        lr = self.learned_
        params = {k: (v.item() if isinstance(v, np.generic) else v)
                  for k, v in self.get_params(deep=False).items()}
        params["analyser"] = None
        meta = {
            "params": params,
            "vocalised": lr.vocalised,
            "scheme": lr.scheme.to_meta(),
            "with_morph": lr.space.with_morph,
            "labels": [list(lab) for lab in lr.space.labels],
            "fs_names": list(lr.fs.names),
            "vocabs": lr.fs.vocabs,
            "cols": [int(c) for c in lr.cols],
            "n_bins": lr.n_bins,
            "unknown": lr.unknown,
            "known_guesses": lr.known_guesses,
            "known_guesses_scores": lr.known_guesses_scores,
            "graded": lr.graded,
            "graded_scores": lr.graded_scores,
            "unknown_weights": lr.unknown_weights,
            "unknown_weights_scores": lr.unknown_weights_scores,
            "stage2": lr.stage2,
            "rankers": {k: {"level": r.spec.level, "targets": list(r.spec.targets),
                            "doc_targets": list(r.spec.doc_targets),
                            "uniform": r.spec.uniform, "blocks": r.spec.blocks,
                            "intercept": r.intercept, "C": r.C,
                            "epsilon": r.epsilon, "rows": r.rows}
                        for k, r in lr.rankers.items()},
            "fit_time": self.fit_time_,
        }
        arrays = lr.tables.to_arrays("t_")
        for k, r in lr.rankers.items():
            arrays[f"lam_{k}"] = r.lam
            arrays[f"lamdoc_{k}"] = r.lam_doc
        return meta, arrays

    @classmethod
    def _from_model_file(cls, meta, arrays):
        with gc_paused():
            return cls._from_model_file_body(meta, arrays)

    @classmethod
    def _from_model_file_body(cls, meta, arrays):
        from ..io import validate as V

        from .features import STRING_TEMPLATES

        model = V.from_params(cls, meta)
        try:
            sm = V.meta_dict(meta, "scheme")
            V.meta_bool(sm, "vocalised", "meta 'scheme'")
            if sm.get("xpos_positions") is not None:
                pos = V.meta_list(sm, "xpos_positions", int, "meta 'scheme'")
                if any(p < 0 for p in pos):
                    raise ModelFileError("meta 'scheme' field 'xpos_positions': a negative "
                                         "position")
            V.meta_strings(sm, "feat_keys", "meta 'scheme'")
            scheme = LabelScheme.from_meta(sm)
            with_morph = V.meta_bool(meta, "with_morph")
            if with_morph != (model.variant == "ind"):
                raise ModelFileError(f"meta field 'with_morph': {with_morph} does not match "
                                     f"variant {model.variant!r}")
            space = E.LabelSpace(scheme, with_morph)
            labels = V.meta_list(meta, "labels", list)
            for k, lab in enumerate(labels):
                if len(lab) != 5 or not all(isinstance(x, str) for x in lab):
                    raise ModelFileError(f"meta field 'labels': entry {k} is not a label of 5 "
                                         "strings")
                space.add(tuple(lab))
            if len(space.labels) != len(labels):
                raise ModelFileError("meta field 'labels': a label is listed twice")
            names = V.meta_strings(meta, "fs_names")
            if not names or names[0] != "Freq" or len(set(names)) != len(names) or \
                    any(n not in STRING_TEMPLATES for n in names):
                raise ModelFileError(f"meta field 'fs_names': {names!r} is not a list of "
                                     "distinct templates starting with 'Freq'")
            vocabs = V.meta_list(meta, "vocabs", list)
            if len(vocabs) != len(names) or \
                    not all(isinstance(w, str) for v in vocabs for w in v):
                raise ModelFileError("meta field 'vocabs': not one list of strings per "
                                     "template of 'fs_names'")
            fs = FeatureSpace(names, [list(v) for v in vocabs])
            n_values = space.n_values()
            tables = E.Tables.from_arrays(arrays, "t_", len(fs.vocabs[0]), fs.sizes, n_values)
            cols = V.meta_list(meta, "cols", int)
            if any(not 0 <= c < len(names) for c in cols):
                raise ModelFileError(f"meta field 'cols': {cols!r}: a column outside the "
                                     f"{len(names)} templates")
            n_bins = V.meta_int(meta, "n_bins", 1)
            unknown = V.meta_str(meta, "unknown", _UNKNOWN)
            rankers = {}
            need = set(variant_rankers(model.variant))
            rmeta = V.meta_dict(meta, "rankers")
            if set(rmeta) != need:
                raise ModelFileError(f"meta field 'rankers': {sorted(rmeta)} where variant "
                                     f"{model.variant!r} has {sorted(need)}")
            for k, r in rmeta.items():
                where = f"meta 'rankers' {k!r}"
                want = _specs(space, [k])[0]
                spec = E.RankerSpec(k, V.meta_int(r, "level", -1, where),
                                    tuple(V.meta_list(r, "targets", int, where)),
                                    tuple(V.meta_list(r, "doc_targets", int, where)),
                                    V.meta_bool(r, "uniform", where),
                                    V.meta_int(r, "blocks", 1, where))
                wrong = [f for f, ok in (
                    ("level", spec.level == want.level),
                    ("targets", spec.targets == want.targets),
                    ("doc_targets", spec.doc_targets in (want.doc_targets, ())),  # () without Doc
                    ("uniform", spec.uniform == want.uniform),
                    ("blocks", spec.blocks <= 2)) if not ok]
                if wrong:
                    raise ModelFileError(f"{where} field {wrong[0]!r}: "
                                         f"{getattr(spec, wrong[0])!r} does not match the "
                                         f"label space (expected {getattr(want, wrong[0])!r})"
                                         if wrong[0] != "blocks" else
                                         f"{where} field 'blocks': {spec.blocks} is not 1 or 2")
                G = len(cols) * len(spec.targets)
                lam = V.check_finite(V.get(arrays, f"lam_{k}", "float", ndim=2,
                                           shape=(spec.blocks, G * n_bins), dtype=np.float64),
                                     f"lam_{k}")
                lam_doc = V.check_finite(V.get(arrays, f"lamdoc_{k}", "float", ndim=2,
                                               shape=(spec.blocks, len(spec.doc_targets)),
                                               dtype=np.float64), f"lamdoc_{k}")
                intercept = V.meta_float(r, "intercept", -np.inf, where)
                for key in ("C", "epsilon"):      # None, a number or one per block
                    x = r.get(key)
                    if x is not None and not (isinstance(x, list) and all(
                            isinstance(y, (int, float)) and not isinstance(y, bool)
                            for y in x)):
                        V.meta_float(r, key, 0.0, where)
                rankers[k] = E.Ranker(spec, lam, lam_doc, intercept, r.get("C"),
                                      V.meta_int(r, "rows", 0, where), r.get("epsilon"))
                for m in spec.doc_targets:
                    if m not in tables.doc_values:
                        raise ModelFileError(f"array 't_docv{m}_ptr' is missing (the document "
                                             f"counts of ranker {k!r})")
            voc = V.meta_bool(meta, "vocalised")
            for key in ("known_guesses_scores", "graded_scores", "unknown_weights_scores",
                        "stage2"):
                if meta.get(key) is not None and not isinstance(meta.get(key), dict):
                    raise ModelFileError(f"meta field {key!r}: not an object")
            for key in ("known_guesses", "unknown_weights"):
                if key in meta:
                    V.meta_bool(meta, key)
            guesser = _LazyGuesser(tables, fs, space, voc)
            model.learned_ = Learned(voc, scheme, space, fs, cols, tables, guesser, rankers,
                                     n_bins, unknown, dict(meta.get("stage2") or {}),
                                     bool(meta.get("known_guesses", False)),
                                     meta.get("known_guesses_scores"),
                                     # files before the inner choice: the fixed defaults then
                                     _graded_value(meta.get("graded", "unknown")),
                                     meta.get("graded_scores"),
                                     bool(meta.get("unknown_weights", True)),
                                     meta.get("unknown_weights_scores"))
            model._set_attributes()
            model.fit_time_ = float(meta.get("fit_time", 0.0))
        except ModelFileError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(f"malformed lexical model file ({type(exc).__name__}: "
                                 f"{exc})") from None
        return model

