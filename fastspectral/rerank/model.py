"""``RerankDepParser``: base parser + k-best lists + spectral model + re-ranker in one model
(Dhillon et al. 2012, section 4).

Kept as one module (about 720 lines): the estimator's parameters, their checks, the four
training steps below and the model file, which all read the same nested sub-models; the
scoring of candidates lives in :mod:`~fastspectral.rerank.providers`.

Training (:meth:`RerankDepParser.fit`):

1. jack-knifed k-best lists of the training data (section 4.3): the treebank is cut into
   ``folds`` contiguous parts; an :class:`~fastspectral.rerank.mst.MSTParser` trained on the
   other parts gives each part its ``k`` best trees;
2. with ``features="base+spectral"``, the latent dependency model of section 3
   (``fastspectral.latentdep``, kind ``latent-dep``) scores every candidate with
   ``log p-hat``, jack-knifed the same way (a model that has seen a tree would favour it);
   with ``features="base+shag"`` (or ``"base+spectral+shag"``) the split-head-automaton
   model of Luque et al. 2012 (:class:`~fastspectral.dependency.SHAGParser`, spectral, with
   the LEX+FCP lexical model) gives every candidate its tree weight and summed log arc
   posteriors (:mod:`fastspectral.rerank.shag_scores`), jack-knifed the same way;
3. the averaged-perceptron re-ranker (:mod:`fastspectral.rerank.reranker`) learns from the
   lists;
4. the base parser and the spectral model are trained once more on the whole treebank: they
   make the lists of new sentences.

The sub-models are nested estimators, scikit-learn style: ``mst`` (the base parser),
``spectral`` (the latent dependency model) and ``shag`` (the SHAG model), each None for its
default; ``get_params(deep=True)`` shows ``mst__iterations``, ``spectral__n_states``, ...,
``set_params(spectral__n_states=8)`` sets one, and ``fit`` trains clones of them.  The keywords
of older versions (the base parser's ``iterations``, ``minibatch``, ``bits``, ``tag_column``;
``spectral_params``, ``shag_params``) are still accepted with a ``DeprecationWarning`` and
mapped onto them (:func:`~fastspectral.rerank.providers.nested_from_old`); model files
written with them load the same way.

With ``base_order=2`` a second-order (sibling) :class:`~fastspectral.rerank.mst.MSTParser` is
trained on the same folds: each fold's model rescores that fold's (first-order) lists, and the
re-ranker reads every candidate's score under it (arc + sibling parts,
:func:`~fastspectral.rerank.features.candidate_tree_scores`) minus its list's best; the
second-order model trained on the whole treebank rescores the lists at parse time.  With
``order2_best`` (the default) each list also gets the second-order model's own best tree as
one more candidate when it is not in the list already.

Parsing: the base parser's ``k`` best trees, re-ranked; ``rerank = False`` (``fastspectral
parse --no-rerank``) returns the base parser's best tree.

This module is the learner (hyperparameters, the perceptron's training on the lists, parsing,
model files); the sub-models that score the candidates and the dense features made of their
scores are :mod:`fastspectral.rerank.providers` (its ``ScoreProviders``, mixed in).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..base import Interval, check_jobs
from ..errors import ModelFileError
from .mst import HeadsParser, MSTParser, numba_threads
from . import providers as _providers
from .providers import (LOGP_NORMS, NESTED, OLD_PARAMS, SHAG_SCORES,  # noqa: F401
                        SPECTRAL_DEFAULTS, SPECTRAL_DEFAULTS_POS, SPECTRAL_INPUTS,
                        SPECTRAL_SCORES, ScoreProviders, _concat, _normalise,
                        accepts_old_keywords, add_candidates, check_sub_models,
                        nested_from_file, nested_from_old, nested_to_file, old_keywords_hint,
                        order2_scores, shag_tree_columns)
from .reranker import RerankData, correct_counts, rerank_epoch, score_candidates

__all__ = ["RerankDepParser", "RerankFitInfo", "TrainingLists", "FEATURES"]

#: the re-ranker's feature sets: the paper's baseline features (+ the base score), + the
#: section-3 latent dependency model's log p-hat, + the SHAG model's scores, + both
FEATURES = ("base", "base+spectral", "base+shag", "base+spectral+shag")
#: model-file prefixes of the sub-models
_MST, _SPEC, _SHAG, _MST2 = "mst.", "spec.", "shag.", "mst2."
#: orders of the base parser whose tree score the re-ranker reads (1: the first-order k-best
#: parser's own score; 2: also the second-order model's)
BASE_ORDERS = (1, 2)
INF = float("inf")


@dataclass
class TrainingLists:
    """The re-ranker's training data (:meth:`RerankDepParser.training_lists`): the packed
    jack-knifed lists, their ``log |p-hat|`` (or None), each candidate's correct heads, the tokens
    counted, the seconds taken, the sign of p-hat and the depth-1 fragment scores (sum of
    ``log |p-hat|`` of the fragments, negative fragments; see ``spectral_scores``) or None."""

    data: RerankData
    logp: np.ndarray | None
    correct: np.ndarray
    n_tokens: int
    seconds: dict
    sign: np.ndarray | None = None
    frag: np.ndarray | None = None
    fneg: np.ndarray | None = None
    #: the SHAG model's ``(log |w|, sign, summed log arc posteriors)`` or None
    shag: tuple | None = None
    #: every candidate's score under the jack-knifed second-order model (``base_order=2``)
    #: or None
    mst2: np.ndarray | None = None

    @property
    def spectral(self):
        """``(log |p-hat|, sign, fragment log p-hat, negative fragments)`` (None when not
        computed)."""
        return self.logp, self.sign, self.frag, self.fneg


@dataclass
class RerankFitInfo:
    """Training details of :meth:`RerankDepParser.fit` (``fit_info_``): seconds of each piece
    (``mst``: the final base parser; ``jackknife``: the fold parsers and their k-best lists;
    ``spectral``: the spectral models and their scores; ``rerank``: the re-ranker) and the
    lists predicted wrong in each re-ranker epoch."""

    n_sentences: int = 0
    seconds: dict = field(default_factory=dict)
    mistakes: list = field(default_factory=list)
    oracle_uas: float = 0.0


class RerankDepParser(ScoreProviders, HeadsParser):
    """k-best re-ranking dependency parser with spectral tree probabilities (Dhillon et al. 2012).

    Parameters
    ----------
    k : int, default 50
        Trees per k-best list.
    features : {"base", "base+spectral", "base+shag", "base+spectral+shag"}, default "base+spectral"
        The re-ranker's features: the paper's baseline features and the base parser's score,
        with ``"base+spectral"`` also ``log p-hat`` of the latent dependency model (section
        3), with ``"base+shag"`` the scores of the split-head-automaton model (``shag_scores``),
        with ``"base+spectral+shag"`` both.
    folds : int, default 3
        Jack-knife folds of the training lists.
    rerank_iterations : int, default 5
        Perceptron epochs of the re-ranker.
    rerank_bits : int, default 20
        Hashed weights of the re-ranker: ``2**rerank_bits``.
    dense_gain : float, default 10.0
        The dense features (base score, log p-hat) are divided by their standard deviation
        over the training lists and multiplied by ``dense_gain``: a larger gain is a smaller
        perceptron step on them relative to the sparse features.
    mst : MSTParser or None, default None
        The base parser, e.g. ``MSTParser(iterations=10, minibatch=8, bits=22,
        tag_column="auto")``: its settings (``mst__iterations``, ``mst__bits``, ...) serve
        the jack-knifed fold parsers, the final base parser and, with ``base_order=2``, the
        second-order model (the same settings with ``order=2``).  ``MSTParser(order=2)``
        (CLI ``--kbest-order 2``; with ``base_order=1`` only): the lists are the
        second-order model's own k best and its tree score is the base score, the
        second-order setting of Dhillon et al. (2012).  None: ``MSTParser()``'s defaults
        (first order) with this model's ``random_state`` and ``jobs``.
    spectral : LatentDependencyModel or None, default None
        The latent dependency model of ``features="base+spectral"`` (section 3), e.g.
        ``LatentDependencyModel(n_states=16, embeddings=path)``; without ``embeddings`` it
        learns eigenwords from the training treebank's words.  ``stop_events=True`` (CLI
        ``--stop-events``; ``stop_adjacency``, ``stop_weight``) makes it also score valency
        (STOP events; docs/notes/latentdep.md; on WSJ no better than without,
        docs/notes/rerank.md).  None: ``LatentDependencyModel(n_states=16)``, or with
        ``spectral_input="pos"`` ``LatentDependencyModel(n_states=8, embeddings="one-hot")``
        (the class's own default is 8 states: give ``n_states`` explicitly).
    logp_norm : {"max", "word", "list"}, default "max"
        log p-hat within its k-best list: minus the list's best; that divided by the
        sentence's words; standardised within the list.
    logp_sign : bool, default True
        Also the 'p-hat < 0' indicator (finite-sample estimates can be negative).
    spectral_input : {"words", "pos"}, default "words"
        The spectral model's words: the words (eigenwords, the paper), or the POS tags
        (one-hot vectors; the default model of ``spectral=None``: ``n_states=8``,
        ``embeddings="one-hot"``).
    spectral_scores : {"tree", "fragment", "both"}, default "both"
        The spectral model's scores used: ``log |p-hat(tree)|`` (with its sign), the sum of
        ``log |p-hat|`` of the depth-1 fragments (each node with its children;
        ``LatentDependencyModel.fragment_log_prob``) with the number of negative fragments, or
        both.
    shag : SHAGParser or None, default None
        The split-head-automaton model of ``features="base+shag"``
        (:class:`~fastspectral.dependency.SHAGParser`).  None: ``SHAGParser(method="spectral",
        n_states=8, lexical="lex+fcp")`` (``fastspectral.rerank.shag_scores.SHAG_DEFAULTS``).
    shag_scores : {"tree", "arc", "both"}, default "both"
        The SHAG model's scores: ``log |w(tree)|`` (the product of its automaton weights,
        normalised in the list by ``logp_norm``, with "w <= 0" and "w < 0" indicators), the
        sum over the tree's arcs of ``log max(mu, 1e-6)`` (arc posteriors; normalised the
        same way), or both.
    base_order : {1, 2}, default 1
        2: a second-order (sibling) :class:`~fastspectral.rerank.mst.MSTParser` (the base
        parser's settings, ``mst``, with ``order=2``), jack-knifed on the same folds,
        rescores every candidate of the first-order k-best lists; its score minus the list's
        best is one more dense feature.  1: no second-order model.
    order2_best : bool, default True
        With ``base_order=2``: each k-best list also gets the second-order model's best tree
        (its second-order decoding) as one more candidate, unless the list holds it already
        (its base score: the first-order model's score of it).
    fixed_base : bool or None, default None
        Keep the weight of the base score the perceptron starts from (the first-order score,
        or the second-order score with ``base_order=2``) fixed at ``start_weight``: the
        perceptron learns the other weights, and its updates cannot swamp the base model's
        ranking.  False: every dense weight is updated, the start's too.
        None: True with ``base_order=2``, False otherwise (chosen on the development split
        and by cross-validation over the training lists: docs/notes/rerank.md, "A stable start").
    start_weight : float or None, default None
        That weight at the perceptron's start.  The dense columns are scaled to standard
        deviation ``dense_gain``, so the start's share of a score grows as ``start_weight *
        dense_gain`` and one perceptron update's as ``dense_gain**2``.  None: 1000 when the
        base weight is fixed, else 1.
    random_state : int or None, default 0
        Seed of the re-ranker's perceptron order (and of the default base parser's).
    jobs : int or None, default None
        Threads of the k-best lists, the scores and parsing, and of the default base parser
        (None: every core available); a given sub-model trains with its own ``jobs``.

    The keywords of older versions ``iterations``, ``minibatch``, ``bits``, ``tag_column``
    (now ``mst=MSTParser(...)``, with this model's ``random_state`` and ``jobs``),
    ``spectral_params`` (now ``spectral=``, over the defaults above) and ``shag_params``
    (now ``shag=``, over ``SHAG_DEFAULTS``) are still accepted, with a DeprecationWarning,
    and mapped onto the nested estimators
    (:func:`~fastspectral.rerank.providers.nested_from_old`).

    Attributes
    ----------
    mst_ : MSTParser
        The base parser trained on the whole treebank.
    spectral_ : estimator or None
        The latent dependency model (``features="base+spectral"``).
    shag_ : SHAGParser or None
        The split-head-automaton model (``features="base+shag"``).
    mst2_ : MSTParser or None
        The second-order model trained on the whole treebank (``base_order=2``).
    weights_, dense_weights_ : ndarray
        The averaged re-ranker weights (hashed features; dense features).
    dense_scale_ : ndarray
        Standard deviations dividing the dense features.
    fit_time_ : float
        Seconds of :meth:`fit`.
    fit_info_ : RerankFitInfo
        Seconds of each piece, re-ranker mistakes per epoch, the oracle UAS of the lists.

    References
    ----------
    P. S. Dhillon, J. Rodu, M. Collins, D. P. Foster and L. H. Ungar, "Spectral dependency
    parsing with latent variables", EMNLP-CoNLL 2012, section 4.  M. Collins and T. Koo,
    "Discriminative reranking for natural language parsing", Computational Linguistics 2005.
    L. Huang and D. Chiang, "Better k-best parsing", IWPT 2005.

    Examples
    --------
    >>> from fastspectral.rerank import MSTParser, RerankDepParser
    >>> from fastspectral.trees.conll import DepSentence, toy_treebank
    >>> train = toy_treebank()
    >>> model = RerankDepParser(k=5, features="base", rerank_bits=16,
    ...                         mst=MSTParser(iterations=5, bits=16)).fit(train)
    >>> model.parse([DepSentence.from_tagged("a/DT big/JJ cat/NN barks/VBZ")])[0].heads
    [3, 3, 4, 0]
    >>> model.get_params()["mst__iterations"]
    5
    """

    kind = "rerank-dep"
    input_kind = "dependency"
    #: parse with the re-ranker (False: the base parser's best tree); not a hyperparameter
    rerank = True

    #: names of model files written by older versions (``iterations``, ``minibatch``,
    #: ``bits``, ``tag_column``, ``spectral_params`` and ``shag_params`` of a file become the
    #: nested estimators: :meth:`_params_from_file`)
    _renamed_params = {"epochs": "iterations", "rerank_epochs": "rerank_iterations",
                       "tagset": "tag_column"}
    _parameter_constraints = {
        "k": Interval(int, 1), "folds": Interval(int, 2),
        "rerank_iterations": Interval(int, 1), "rerank_bits": Interval(int, 16, 28, closed="both"),
        "features": set(FEATURES), "dense_gain": Interval(float, 0.0, INF, closed="neither"),
        "logp_norm": set(LOGP_NORMS), "spectral_scores": set(SPECTRAL_SCORES),
        "spectral_input": set(SPECTRAL_INPUTS), "logp_sign": "boolean",
        "shag_scores": set(SHAG_SCORES), "base_order": set(BASE_ORDERS),
        "order2_best": "boolean", "fixed_base": "boolean or None",
        "start_weight": Interval(float, 0.0, INF, closed="neither", allow_none=True),
        "random_state": Interval(int, 0, allow_none=True),
        "jobs": Interval(int, 1, allow_none=True)}

    @accepts_old_keywords
    def __init__(self, k: int = 50, features: str = "base+spectral", folds: int = 3, *,
                 rerank_iterations: int = 5, rerank_bits: int = 20, dense_gain: float = 10.0,
                 logp_norm: str = "max", logp_sign: bool = True, spectral_scores: str = "both",
                 spectral_input: str = "words", shag_scores: str = "both",
                 random_state: int | None = 0, jobs: int | None = None, base_order: int = 1,
                 order2_best: bool = True, fixed_base: bool | None = None,
                 start_weight: float | None = None, mst: MSTParser | None = None,
                 spectral=None, shag=None):
        self.k = k
        self.features = features
        self.folds = folds
        self.rerank_iterations = rerank_iterations
        self.rerank_bits = rerank_bits
        self.dense_gain = dense_gain
        self.logp_norm = logp_norm
        self.logp_sign = logp_sign
        self.spectral_scores = spectral_scores
        self.spectral_input = spectral_input
        self.shag_scores = shag_scores
        self.random_state = random_state
        self.jobs = jobs
        self.base_order = base_order
        self.order2_best = order2_best
        self.fixed_base = fixed_base
        self.start_weight = start_weight
        self.mst = mst
        self.spectral = spectral
        self.shag = shag

    # ------------------------------------------------------------------ helpers
    def _check_params(self) -> None:
        """The nested estimators' checks (the table has the re-ranker's own): their types,
        a first-order ``mst``, and the hyperparameters of those in use."""
        check_sub_models(self.mst, self.spectral, self.shag, self._spectral, self._shag,
                         self.base_order)

    def set_params(self, **params):
        """Set hyperparameters (``name=value``, nested ``mst__bits=18``,
        ``spectral__n_states=8``); returns self.  A keyword of older versions (``iterations``,
        ``spectral_params``, ...) is a ValueError naming its nested form."""
        for name in params:
            if name in OLD_PARAMS:
                nested = "spectral__NAME" if name == "spectral_params" else \
                    "shag__NAME" if name == "shag_params" else f"mst__{name}"
                raise ValueError(f"{name!r} is no longer a parameter of RerankDepParser: use "
                                 f"{old_keywords_hint([name])} or set_params({nested}=...)")
        return super().set_params(**params)

    # ------------------------------------------------------------------ training
    def fit(self, X) -> "RerankDepParser":
        """Train the base parser, its jack-knifed k-best lists, the spectral model (with
        ``features="base+spectral"``), the SHAG model (``"base+shag"``) and the re-ranker;
        returns self."""
        from ..base import check_dep_sentences

        self._validate_params()
        X = check_dep_sentences(X, "sentences")
        t_start = time.perf_counter()
        lists = self.training_lists(X)
        self.fit_lists(lists)
        info = self.fit_info_
        t0 = time.perf_counter()
        self.mst_ = self._new_mst().fit(X)
        info.seconds["mst"] = time.perf_counter() - t0
        self.spectral_ = None
        if self._spectral:
            t0 = time.perf_counter()
            self.spectral_ = self._new_spectral().fit(self._spectral_view(X))
            info.seconds["spectral"] += time.perf_counter() - t0
        self.shag_ = None
        if self._shag:
            t0 = time.perf_counter()
            self.shag_ = self._new_shag().fit(X)
            info.seconds["shag"] = info.seconds.get("shag", 0.0) + time.perf_counter() - t0
        self.mst2_ = None
        if self._order2:
            t0 = time.perf_counter()
            self.mst2_ = self._new_mst2().fit(X)
            info.seconds["mst2"] = info.seconds.get("mst2", 0.0) + time.perf_counter() - t0
        self.fit_time_ = time.perf_counter() - t_start
        return self

    def training_lists(self, sents) -> "TrainingLists":
        """Steps 1-2 of :meth:`fit`: the jack-knifed k-best lists of ``sents`` (and their
        jack-knifed log p-hat with ``features="base+spectral"``), each candidate's correct
        heads (punctuation excluded) and the time taken."""
        self._validate_params()
        sents = list(sents)
        if len(sents) < int(self.folds):
            raise ValueError(f"cannot fit a RerankDepParser on {len(sents)} sentences with "
                             f"{self.folds} folds")
        threads = check_jobs(self.jobs)
        sec = {"jackknife": 0.0, "spectral": 0.0}
        cuts = self._cuts(len(sents))
        datas, msts = [], []
        for f in range(len(cuts) - 1):
            held = sents[cuts[f]:cuts[f + 1]]
            rest = sents[:cuts[f]] + sents[cuts[f + 1]:]
            t0 = time.perf_counter()
            mst = self._new_mst().fit(rest)
            datas.append(self._lists(mst, held, threads))
            if self._order2 and self.order2_best:
                msts.append(mst)
            sec["jackknife"] += time.perf_counter() - t0
        data = _concat(datas)
        o2 = None
        if self._order2:
            t0 = time.perf_counter()
            data, o2 = self.jackknife_order2_scores(sents, data, msts or None)
            sec["mst2"] = time.perf_counter() - t0
        spec = (None,) * 4
        if self._spectral:
            t0 = time.perf_counter()
            spec = self.jackknife_log_prob(sents, data)
            sec["spectral"] += time.perf_counter() - t0
        shag = None
        if self._shag:
            t0 = time.perf_counter()
            shag = self.jackknife_shag_scores(sents, data)
            sec["shag"] = time.perf_counter() - t0
        correct, n_tokens = count_correct(sents, data)
        return TrainingLists(data, spec[0], correct, n_tokens, sec, *spec[1:], shag=shag,
                             mst2=o2)

    def fit_lists(self, lists: "TrainingLists") -> "RerankDepParser":
        """Step 3 of :meth:`fit`: the averaged-perceptron re-ranker on ``lists`` (sets
        ``weights_``, ``dense_weights_``, ``dense_scale_`` and ``fit_info_``)."""
        data, correct = lists.data, lists.correct
        info = RerankFitInfo(n_sentences=len(data.lengths), seconds=dict(lists.seconds))
        best = np.maximum.reduceat(correct, data.cand_off[:-1]) if len(correct) else correct
        info.oracle_uas = 100.0 * float(best.sum()) / max(1, lists.n_tokens)
        t0 = time.perf_counter()
        spec = lists.spectral if self._spectral else (None,) * 4
        if self._shag and getattr(lists, "shag", None) is None:
            raise ValueError(f"features={self.features!r} needs training lists with SHAG "
                             "scores (training_lists with the same features)")
        if self._order2 and getattr(lists, "mst2", None) is None:
            raise ValueError("base_order=2 needs training lists with second-order scores "
                             "(training_lists with base_order=2)")
        raw = self._raw_dense(data, *(x if use else None for x, use in
                                      zip(spec, (self._tree,) * 2 + (self._fragments,) * 2)),
                              shag=lists.shag if self._shag else None,
                              mst2=lists.mst2 if self._order2 else None)
        scale = raw.std(axis=0)
        scale[scale <= 0] = 1.0
        scale /= float(self.dense_gain)
        dense = raw / scale
        size = 1 << int(self.rerank_bits)
        w, u = np.zeros(size), np.zeros(size)
        D = dense.shape[1]
        v, uv = self._initial_dense(D), np.zeros(D)
        fixed = int(np.flatnonzero(v)[0]) if self._fixed_base else -1
        rng = np.random.default_rng(self.random_state)
        c = 1.0
        for _ in range(int(self.rerank_iterations)):
            order = rng.permutation(len(data.lengths)).astype(np.int64)
            c, mistakes = rerank_epoch(w, u, v, uv, c, order, data.P, data.tok_off,
                                       data.lengths, data.heads, data.cand_off, data.cand_hoff,
                                       dense, correct, fixed)
            info.mistakes.append(int(mistakes))
        self.weights_ = w - u / c
        self.dense_weights_ = v - uv / c
        self.dense_scale_ = scale
        info.seconds["rerank"] = time.perf_counter() - t0
        self.fit_info_ = info
        return self

    def _initial_dense(self, D: int) -> np.ndarray:
        """The dense weights the perceptron starts from: the ranking of the best base model,
        i.e. the first-order score (column 0), or with ``base_order=2`` the second-order
        score (the last column) alone, with weight ``start_weight``."""
        v = np.zeros(D)
        v[-1 if self._order2 else 0] = self._start_weight
        return v

    @property
    def _fixed_base(self) -> bool:
        return self._order2 if self.fixed_base is None else bool(self.fixed_base)

    @property
    def _start_weight(self) -> float:
        if self.start_weight is not None:
            return float(self.start_weight)
        return 1000.0 if self._fixed_base else 1.0

    # ------------------------------------------------------------------ parsing
    def rerank_scores(self, items, data, logp=None, threads=None, shag=None, mst2=None,
                      tags=None) -> np.ndarray:
        """The re-ranker's score of every candidate of ``data`` (lists of ``items``);
        ``logp``: their spectral scores (:meth:`_log_prob`), ``shag``: their SHAG scores
        (:meth:`_shag_scores`), ``mst2``: their second-order scores
        (:meth:`_order2_scores`), when already computed; ``tags``: the POS tags the lists
        were made with (None: the sentences' own)."""
        if self._spectral and logp is None:
            logp = self._log_prob(self.spectral_, items, data, threads)
        if self._shag and shag is None:
            shag = self._shag_scores(self.shag_, items, data, threads)
        if self._order2 and mst2 is None:
            mst2 = self._order2_scores(self.mst2_, items, data, threads, tags)
        spec = logp if self._spectral else (None,) * 4
        dense = self._raw_dense(data, *(x if use else None for x, use in
                                        zip(spec, (self._tree,) * 2 + (self._fragments,) * 2)),
                                shag=shag if self._shag else None,
                                mst2=mst2 if self._order2 else None)
        dense /= self.dense_scale_
        out = np.empty(data.n_candidates)
        score_candidates(self.weights_, self.dense_weights_, data.P, data.tok_off, data.lengths,
                         data.heads, data.cand_off, data.cand_hoff, dense, out)
        return out

    #: memory budget of the k-best charts of a parse (see :mod:`fastspectral._memory`): None
    #: for half the physical memory (or ``$FASTSPECTRAL_MAX_MEMORY``), bytes, a size such as
    #: ``"2G"``, 0 for no limit; an attribute, not a hyperparameter (it is not saved)
    max_memory = None

    def predict_heads(self, items, *, tags=None, jobs=None, progress=None) -> list:
        """Heads (int32 arrays) of each sentence: the re-ranked best of its k-best list (the
        base parser's best when ``rerank`` is False).

        A sentence of more than :data:`~fastspectral.rerank.kbest.KBEST_MAX_WORDS` words, or
        whose k-best chart (:func:`fastspectral._memory.kbest_chart_bytes`) would exceed the
        memory budget ``max_memory``, gets the base parser's best tree (the second-order
        model's with ``base_order=2``; no k-best list, no re-ranking); a warning names it and
        ``last_parse_stats_.too_long`` counts it.
        """
        from .. import _memory
        from .kbest import KBEST_MAX_WORDS
        from .mst import MSTParseStats

        items = list(items)
        threads = self._check_parse_args(items, tags, jobs)
        self.mst_.max_memory = self.max_memory
        if not self.rerank:
            out = self.mst_.predict_heads(items, tags=tags, jobs=threads, progress=progress)
            self.last_parse_stats_ = self.mst_.last_parse_stats_
            return out
        stats = MSTParseStats(sentences=len(items))
        budget = _memory.resolve_budget(self.max_memory)
        lengths = np.array([len(s.words) for s in items], dtype=np.int64)
        # a second-order mst_ falls back to first-order k-best lists by itself (kbest_encoded)
        need = np.array([_memory.kbest_chart_bytes(int(n)) for n in lengths], dtype=np.float64)
        # the fallback: the best tree of the second-order model when there is one (its own
        # budget may send it to first-order decoding), else of the first-order base parser
        base = self.mst2_ if self._order2 and getattr(self, "mst2_", None) is not None \
            else self.mst_
        base.max_memory = self.max_memory
        long_ids = _memory.over_limits(
            lengths, need, budget, KBEST_MAX_WORDS, "k-best", [s.words for s in items],
            f"the {'second-order ' if base is not self.mst_ else ''}base parser's best tree "
            "(no k-best list, no re-ranking)")
        ids = np.setdiff1d(np.arange(len(items)), long_ids)
        out: list = [None] * len(items)
        if len(long_ids):
            stats.too_long = len(long_ids)
            sub_tags = None if tags is None else [tags[k] for k in long_ids]
            heads = base.predict_heads([items[k] for k in long_ids], tags=sub_tags,
                                       jobs=threads)
            for k, h in zip(long_ids, heads):
                out[int(k)] = h
        if len(ids):
            part = [items[k] for k in ids]
            part_tags = None if tags is None else [tags[k] for k in ids]
            enc = self.mst_.encode(part, part_tags)
            data = RerankData(self.mst_.kbest_encoded(enc, int(self.k), threads,
                                                      [s.words for s in part]), enc)
            if self._order2 and self.order2_best:
                self.mst2_.max_memory = self.max_memory
                data = self._with_order2_best(self.mst_, self.mst2_, part, data, threads,
                                              part_tags)
            with numba_threads(threads):
                scores = self.rerank_scores(part, data, threads=threads, tags=part_tags)
            pick = _argmax_segments(scores, data.cand_off)
            for k, c in zip(ids, pick):
                out[int(k)] = data.candidate_heads(c).astype(np.int32)
        if progress is not None:
            progress(len(items), len(items))
        self.last_parse_stats_ = stats
        return out

    # ------------------------------------------------------------------ model files
    def _model_file(self):
        meta_m, arr_m = self.mst_._model_file()
        meta = {"params": self._file_params(), "mst": meta_m, "fit_time": self.fit_time_,
                "seconds": self.fit_info_.seconds, "mistakes": self.fit_info_.mistakes,
                "oracle_uas": self.fit_info_.oracle_uas,
                "n_sentences": self.fit_info_.n_sentences, "spectral": None, "shag": None}
        nz = np.flatnonzero(self.weights_)
        arrays = {"rerank_index": nz.astype(np.int64), "rerank_value": self.weights_[nz],
                  "dense_weights": self.dense_weights_, "dense_scale": self.dense_scale_}
        arrays.update({_MST + k: a for k, a in arr_m.items()})
        if self.spectral_ is not None:
            meta_s, arr_s = self.spectral_._model_file()
            meta["spectral"] = meta_s
            arrays.update({_SPEC + k: a for k, a in arr_s.items()})
        if getattr(self, "shag_", None) is not None:
            meta_g, arr_g = self.shag_._model_file()
            meta["shag"] = meta_g
            arrays.update({_SHAG + k: a for k, a in arr_g.items()})
        if getattr(self, "mst2_", None) is not None:
            meta_2, arr_2 = self.mst2_._model_file()
            meta["mst2"] = meta_2
            arrays.update({_MST2 + k: a for k, a in arr_2.items()})
        return meta, arrays

    def _file_params(self) -> dict:
        """The hyperparameters as a model file records them (the nested estimators as
        :func:`~fastspectral.rerank.providers.nested_to_file` writes them)."""
        out = self.get_params(deep=False)
        for name in NESTED:
            out[name] = nested_to_file(out[name])
        return out

    @classmethod
    def _params_from_file(cls, params: dict) -> dict:
        """Constructor arguments from the ``params`` of a model file: the nested estimators
        rebuilt from their entries (:func:`~fastspectral.rerank.providers.nested_from_file`),
        and the layout of older versions (the base parser's ``iterations``, ``minibatch``,
        ``bits``, ``tag_column`` and the ``spectral_params`` / ``shag_params`` dicts,
        :func:`~fastspectral.rerank.providers.nested_from_old`) mapped onto them."""
        params = {cls._renamed_params.get(k, k): v for k, v in params.items()}
        old = {k: params.pop(k) for k in OLD_PARAMS if k in params}
        out = super()._params_from_file(params)
        for name in NESTED:
            if name in out:
                out[name] = nested_from_file(name, out[name])
        out.update(nested_from_old(old, random_state=out.get("random_state", 0),
                                   jobs=out.get("jobs"),
                                   spectral_input=out.get("spectral_input", "words"),
                                   mst=out.get("mst"), spectral=out.get("spectral"),
                                   shag=out.get("shag")))
        return out

    @classmethod
    def _from_model_file(cls, meta: dict, arrays: dict) -> "RerankDepParser":
        from ..io import validate as V

        try:
            p = V.from_params(cls, meta)
            p.mst_ = _load_nested(MSTParser, meta, "mst", arrays, _MST)
            p.spectral_ = None
            if p._spectral:
                if meta.get("spectral") is None:
                    raise ModelFileError("a base+spectral re-ranker without its spectral model")
                p.spectral_ = _load_nested(_providers._spectral_class(), meta, "spectral",
                                           arrays, _SPEC)
            p.shag_ = None
            if p._shag:
                from ..dependency import SHAGParser

                if meta.get("shag") is None:
                    raise ModelFileError("a base+shag re-ranker without its SHAG model")
                p.shag_ = _load_nested(SHAGParser, meta, "shag", arrays, _SHAG)
            p.mst2_ = None
            if p._order2:
                if meta.get("mst2") is None:
                    raise ModelFileError("a base_order=2 re-ranker without its second-order "
                                         "model (meta 'mst2')")
                p.mst2_ = _load_nested(MSTParser, meta, "mst2", arrays, _MST2)
                if int(p.mst2_.order) != 2:
                    raise ModelFileError("meta 'mst2': the second-order model has order="
                                         f"{p.mst2_.order}")
            size = 1 << int(p.rerank_bits)
            idx = V.get(arrays, "rerank_index", "int", dtype=np.int64)
            val = V.get(arrays, "rerank_value", "float", dtype=np.float64)
            V.check_len(val, "rerank_value", len(idx))
            V.check_index(idx, "rerank_index", 0, size)
            V.check_magnitude(val, "rerank_value")
            D = p._n_dense()
            v = V.get(arrays, "dense_weights", "float", shape=(D,), dtype=np.float64)
            scale = V.get(arrays, "dense_scale", "float", shape=(D,), dtype=np.float64)
            V.check_magnitude(v, "dense_weights")
            V.check_finite(scale, "dense_scale")
            if (scale <= 0).any():
                V.fail("dense_scale", "non-positive scale")
            w = np.zeros(size)
            w[idx] = val
            p.weights_, p.dense_weights_, p.dense_scale_ = w, v, scale
            p.fit_time_ = float(meta.get("fit_time", 0.0))
            p.fit_info_ = RerankFitInfo(int(meta.get("n_sentences", 0)),
                                        {str(k): float(x) for k, x in
                                         dict(meta.get("seconds", {})).items()},
                                        [int(x) for x in meta.get("mistakes", [])],
                                        float(meta.get("oracle_uas", 0.0)))
        except ModelFileError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelFileError(f"corrupt rerank-dep model file ({exc!r})") from None
        return p


def _load_nested(cls, meta: dict, key: str, arrays: dict, prefix: str):
    """The model ``cls`` stored in a re-ranker's file (meta ``meta[key]``, arrays
    ``PREFIX<name>``); a damaged one is a ModelFileError naming the array or field as the file
    holds it."""
    from ..io import validate as V

    sub = {k[len(prefix):]: a for k, a in arrays.items() if k.startswith(prefix)}
    try:
        return cls._from_model_file(V.meta_dict(meta, key), sub)
    except ModelFileError as exc:
        raise V.nested(exc, prefix, key) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ModelFileError(f"meta {key!r}: corrupt {key} model ({exc!r})") from None


def count_correct(sents, data):
    """``(correct, n_tokens)``: the correct heads of every candidate of ``data`` (k-best lists
    of ``sents``, punctuation excluded) and the non-punctuation tokens of ``sents``."""
    from ..eval.attachment import is_punctuation

    gold = np.array([h for s in sents for h in s.heads], dtype=np.int64)
    keep = np.fromiter((not is_punctuation(w, t, u) for s in sents
                        for w, t, u in zip(s.words, s.tags, _upos(s))), dtype=np.bool_,
                       count=len(gold))
    gold_off = np.zeros(len(sents) + 1, dtype=np.int64)
    np.cumsum([len(s.words) for s in sents], out=gold_off[1:])
    correct = np.zeros(data.n_candidates, dtype=np.int64)
    correct_counts(gold, gold_off, data.heads, data.cand_off, data.cand_hoff, data.lengths,
                   keep, correct)
    return correct, int(keep.sum())


def _upos(s):
    u = getattr(s, "upos", None)
    return u if u and len(u) == len(s.words) else [None] * len(s.words)


def _argmax_segments(x: np.ndarray, off: np.ndarray) -> np.ndarray:
    """Index of the first maximum of each segment ``x[off[b]:off[b+1]]`` (vectorised; a NaN
    counts as ``-inf``, so that every segment gets one of its own indices)."""
    if len(off) <= 1:
        return np.zeros(0, dtype=np.int64)
    x = np.where(np.isnan(x), -np.inf, x)
    best = np.maximum.reduceat(x, off[:-1])
    seg = np.repeat(np.arange(len(off) - 1), np.diff(off))
    hit = np.flatnonzero(x >= best[seg])
    first = np.unique(seg[hit], return_index=True)[1]
    return hit[first]


