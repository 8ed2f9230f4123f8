"""``SHAGParser``: spectral / EM / deterministic split-head-automaton dependency parsers.

The parser scores a tree with the product of (i) an unlexicalised *operator* SHAG over POS
tags (spectral, EM, or the trivial one-state automaton) and (ii) optionally a *deterministic*
back-off SHAG (DET, DET+F, or the lexicalised LEX, LEX+F, LEX+FCP of Luque et al. 2012,
sec. 5.2).  Parsing computes arc posteriors with the compiled inside-outside kernel and returns
the minimum-Bayes-risk tree ``argmax_y sum_{(h,m) in y} log mu_hm`` (first-order Eisner).

``method``:

* ``"det"`` / ``"det+f"``: deterministic unlexicalised SHAG with one state / first-vs-rest
  states (no operator part);
* ``"spectral"``: operator SHAG with ``n_states`` states learned by Algorithm 1;
* ``"em"``: operator SHAG with ``n_states`` states trained by ``iterations`` EM iterations.

``lexical`` (``"none"``, ``"lex"``, ``"lex+f"``, ``"lex+fcp"``) multiplies the model by a
lexicalised deterministic SHAG (log-linear combination, the lexical log-probability weighted
by ``lex_weight``).  The lexical models contain their own tag-level estimates (P_A), so with
``method="det"`` or ``"det+f"`` a lexical model is used *alone* (the paper's LEX rows); with
``"spectral"`` or ``"em"`` it is combined with the operator model.

``backoff_weight`` (default :data:`BACKOFF_WEIGHT`) interpolates the spectral / EM automata
with the DET+F back-off automaton (a mixture of weighted automata is one, with
``n_states + 2`` states), so that modifier sequences never seen in training keep a positive
weight; ``backoff_weight=0`` is the paper's unsmoothed model.
"""
from __future__ import annotations

import copy
import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from itertools import chain
from operator import countOf

import numpy as np

from ..base import Interval, Parser, PartitionedFit, check_jobs
from ..errors import FormatError, ModelFileError
from .backoff import _LEX_STATES, BackoffSHAG
from .data import (ROOT, TAGSETS, SymbolVocab, check_sentences, choose_tagset,
                   encode_sentences, modifier_sequences, tag_view, with_tagset)
from .inference import ArcMarginals, arc_marginals, mbr_decode, unpack_square
from .spectral import OperatorSHAG, learn_spectral
from .stats import SHAGFitInfo

__all__ = ["SHAGParser", "SHAGFitInfo", "SHAGParseStats", "METHODS", "MODELS", "LEXICAL"]

#: the estimation methods (``method``) of :class:`SHAGParser`
METHODS = ("det", "det+f", "spectral", "em")
#: older name of :data:`METHODS`
MODELS = METHODS
#: default number of states: the development splits chose 8 / 6 / 8 (WSJ / Spanish / EWT) for
#: the default spectral model, whose accuracy is flat for larger n (docs/notes/dependency.md)
STATES = 8
#: default interpolation weight of the DET+F back-off automaton (spectral and EM models),
#: chosen on the development splits (docs/notes/dependency.md)
BACKOFF_WEIGHT = 0.3
#: older name of :data:`BACKOFF_WEIGHT`
SMOOTHING = BACKOFF_WEIGHT
#: default ridge of the spectral learner's regularised pseudo-inverse (``learn_spectral``),
#: chosen on the development splits (docs/notes/dependency.md)
RIDGE = 1.0
LEXICAL = ("none", "lex", "lex+f", "lex+fcp")


@dataclass
class SHAGParseStats:
    """What happened to the sentences of the last :meth:`SHAGParser.parse` (or
    :meth:`~SHAGParser.predict_heads`) call (``last_parse_stats_``).

    Attributes
    ----------
    sentences : int
        Sentences parsed.
    fallback : int
        Sentences to which the model gives no (finite, non-zero) weight, parsed with the
        always-positive DET+F back-off model instead.
    too_long : int
        Sentences whose chart would exceed the memory budget ``max_memory``: parsed with the
        DET+F back-off model (one operator state) when its chart fits, else given the chain
        where every word depends on its left neighbour (the first on the root).
    """

    sentences: int = 0
    fallback: int = 0
    too_long: int = 0




class SHAGParser(PartitionedFit, Parser):
    """Split head-automaton grammar dependency parser (Luque et al., EACL 2012).

    Parameters
    ----------
    method : {"spectral", "em", "det", "det+f"}, default "spectral"
        The unlexicalised model (see the module docstring): a spectral operator SHAG, an
        EM-trained one, or the deterministic one-state / first-vs-rest SHAG.
    n_states : int, default 8
        Hidden states N of the spectral / EM automata (:data:`STATES`).
    lexical : {"none", "lex", "lex+f", "lex+fcp"}, default "none"
        Lexicalised deterministic back-off SHAG multiplied into the model (used alone with
        ``method="det"`` / ``"det+f"``).
    iterations : int, default 25
        EM iterations (``method="em"``).
    lex_weight : float, default 1.0
        Exponent of the lexical model's probabilities.
    random_state : int or None, default 0
        Seed of the EM initialisation (None: fresh entropy).
    single_root : bool or None, default None
        Trees with exactly one root child; None: learnt from the training data (True when
        every training tree has one).
    batch_size : int, default 512
        Sentences per kernel call while parsing.
    basis : {1, 2}, default 2
        Spectral Hankel basis: 1 = single symbols (the paper's bigram / trigram statistics);
        2 = also the frequent length-2 prefixes and suffixes.
    backoff_weight : float, default 0.3
        Spectral and EM models: the learned automata are interpolated with the DET+F back-off
        automaton, ``(1 - backoff_weight) * model + backoff_weight * DET+F``, which gives every
        tag sequence a positive weight (the operator model then has ``n_states + 2`` states);
        0 is the paper's unsmoothed model; in [0, 1).  Ignored by ``det`` / ``det+f``.
    tag_column : {"auto", "upos", "xpos"}, default "auto"
        The tag column read as POS tags: ``"xpos"`` (the sentences' ``tags``: XPOS, or UPOS
        when they have no XPOS), ``"upos"``, or ``"auto"``: UPOS for Universal Dependencies
        treebanks (every UPOS tag one of the 17 universal ones), XPOS otherwise.
    ridge : float, default 1.0
        Spectral model: regularisation of the pseudo-inverse in the operators, in units of the
        Hankel blocks' sampling noise; 0 is the paper's plain pseudo-inverse.

    Attributes
    ----------
    tag_column_ : str
        The tag column used (``"upos"`` or ``"xpos"``).
    tags_ : SymbolVocab
        The POS tags, most frequent first (unseen tags read as the most frequent one).
    words_ : SymbolVocab or None
        The training words (lexical models only).
    op_ : OperatorSHAG
        The operator model (the trivial one-state automaton for ``det`` / ``det+f``).
    det_ : BackoffSHAG or None
        The deterministic (DET, DET+F, LEX...) model multiplied into ``op_``.
    fallback_ : BackoffSHAG
        The DET+F model that parses the sentences ``op_`` gives no weight.
    single_root_ : bool
        Whether parses have exactly one root child.
    fit_time_ : float
        Seconds spent in the last :meth:`fit`.
    fit_info_ : SHAGFitInfo
        Training details (training sentences, EM log-likelihoods).
    last_parse_stats_ : SHAGParseStats
        Counts of the last :meth:`parse` call (sentences parsed by the fallback model).

    References
    ----------
    F. M. Luque, A. Quattoni, B. Balle and X. Carreras, "Spectral Learning for Non-Deterministic
    Dependency Parsing", EACL 2012: the operator SHAG (section 3, eq. 1-2), its spectral
    learning (Algorithm 1, eq. 6-8), inside-outside arc posteriors and MBR decoding (section 4),
    the deterministic and lexicalised baselines (section 5.2).  J. Eisner, "Three new
    probabilistic models for dependency parsing", COLING 1996 (first-order projective decoding).

    Examples
    --------
    >>> from fastspectral.dependency import SHAGParser
    >>> from fastspectral.trees.conll import DepSentence, toy_treebank
    >>> train = toy_treebank()
    >>> parser = SHAGParser(method="spectral", n_states=2).fit(train)
    >>> parser.parse([DepSentence.from_tagged("a/DT big/JJ cat/NN barks/VBZ")])[0].heads
    [3, 3, 4, 0]
    """

    kind = "shag"
    input_kind = "dependency"
    #: names of model files written by older versions
    _renamed_params = {"model": "method", "states": "n_states", "seed": "random_state",
                       "smoothing": "backoff_weight", "tagset": "tag_column"}
    _parameter_constraints = {
        "method": set(METHODS), "lexical": set(LEXICAL), "tag_column": set(TAGSETS),
        "n_states": Interval(int, 1), "iterations": Interval(int, 0),
        "batch_size": Interval(int, 1), "random_state": Interval(int, 0, allow_none=True),
        "basis": {1, 2}, "backoff_weight": Interval(float, 0.0, 1.0),
        "ridge": Interval(float, 0.0), "lex_weight": Interval(float, 0.0),
        "single_root": {None, True, False}}

    def __init__(self, method: str = "spectral", n_states: int = STATES, lexical: str = "none",
                 iterations: int = 25, lex_weight: float = 1.0, random_state: int | None = 0,
                 single_root: bool | None = None, batch_size: int = 512, basis: int = 2,
                 backoff_weight: float = BACKOFF_WEIGHT, tag_column: str = "auto",
                 ridge: float = RIDGE):
        self.method = method
        self.n_states = n_states
        self.lexical = lexical
        self.iterations = iterations
        self.lex_weight = lex_weight
        self.random_state = random_state
        self.single_root = single_root
        self.batch_size = batch_size
        self.basis = basis
        self.backoff_weight = backoff_weight
        self.tag_column = tag_column
        self.ridge = ridge

    # ------------------------------------------------------------------ helpers
    @property
    def _H(self) -> int:
        return len(self.tags_) + 1

    @property
    def _M(self) -> int:
        return len(self.tags_)

    def _encode(self, sents, with_heads):
        """Encode sentences already seen through the model's tag column (``with_tagset``)."""
        return encode_sentences(sents, self.tags_, self.words_, with_heads=with_heads)

    def _model_view(self, sents, tags=None) -> list:
        """``sents`` seen through the model's tag column, or with the given ``tags`` (one list
        per sentence; a None entry keeps that sentence's own column), checked."""
        return tag_view(sents, self.tag_column_, tags)

    def encode(self, sents, with_heads: bool = True):
        """The fitted model's flat encoding (``data.Encoded``) of ``sents``, read through its
        tag column (``tag_column_``) and checked; for learners called directly (benchmarks)."""
        self._check_fitted()
        sents = with_tagset(list(sents), self.tag_column_)
        check_sentences(sents, need_heads=with_heads)
        return self._encode(sents, with_heads)

    # ------------------------------------------------------------------ training
    def fit(self, X) -> "SHAGParser":
        """Learn the model from dependency sentences (objects with ``words``, ``tags``,
        ``heads``, e.g. :class:`~fastspectral.trees.conll.DepSentence`).  Returns self."""
        from ..base import check_dep_sentences

        self._validate_params()
        X = check_dep_sentences(X, "sentences")
        if not X:
            raise ValueError("cannot fit a SHAGParser on an empty treebank")
        tagset = choose_tagset(X) if self.tag_column == "auto" else self.tag_column
        X = with_tagset(X, tagset)
        check_sentences(X, need_heads=True)
        t0 = time.perf_counter()
        tag_counts = Counter(chain.from_iterable(s.tags for s in X))
        tag_list = sorted(tag_counts, key=lambda t: (-tag_counts[t], t))
        if ROOT in tag_counts:
            raise FormatError(f"the tag {ROOT!r} is reserved", None, None)
        self.tag_column_ = tagset
        self.tags_ = SymbolVocab(tag_list, unk_id=0)   # unseen tags -> most frequent tag
        if self.lexical != "none":
            word_list = sorted(set(chain.from_iterable(s.words for s in X)))
            self.words_ = SymbolVocab(word_list, unk_id=len(word_list))
        else:
            self.words_ = None
        if self.single_root is None:
            self.single_root_ = all(countOf(s.heads, 0) == 1 for s in X)
        else:
            self.single_root_ = bool(self.single_root)
        enc = self._encode(X, True)
        seqs = modifier_sequences(enc)
        H, M = self._H, self._M
        info = SHAGFitInfo(n_sentences=len(X))
        weight = float(self.backoff_weight)
        if self.method == "spectral":
            self.op_ = learn_spectral(enc, seqs, H, M, int(self.n_states), basis=int(self.basis),
                                      smoothing=weight, ridge=float(self.ridge))
        elif self.method == "em":
            from .em import fit_em
            res = fit_em(enc, seqs, H, M, int(self.n_states), int(self.iterations),
                         self.random_state, smoothing=weight)
            self.op_ = res.model
            info.loglik = res.loglik
        else:
            self.op_ = OperatorSHAG.trivial(H, M)
        n_words = len(self.words_) if self.words_ is not None else 0
        if self.lexical != "none":
            self.det_ = BackoffSHAG(_LEX_STATES[self.lexical], True, M, n_words).fit(enc, seqs)
        elif self.method in ("det", "det+f"):
            self.det_ = BackoffSHAG("none" if self.method == "det" else "f", False, M).fit(enc,
                                                                                         seqs)
        else:
            self.det_ = None
        self.fallback_ = BackoffSHAG("f", False, M).fit(enc, seqs)
        self.fit_time_ = time.perf_counter() - t0
        self.fit_info_ = info
        return self

    # ------------------------------------------------------------------ learning from partitions
    def sufficient_statistics(self, items, context=None):
        """The mergeable counts of a partition of dependency sentences (string keys; with
        ``tag_column="auto"`` a first pass chooses the tag column; see
        :mod:`fastspectral.dependency.stats`)."""
        from .stats import shag_statistics

        return shag_statistics(self, items, context)

    def fit_statistics(self, stats, context=None):
        """Estimate from merged statistics (the model ``fit`` gives on the concatenated
        partitions); returns the tag column after the first pass of ``tag_column="auto"``, then
        None (fitted)."""
        from .stats import shag_fit_statistics

        return shag_fit_statistics(self, stats, context)

    # ------------------------------------------------------------------ parsing
    def _det_power(self) -> float:
        return float(self.lex_weight) if self.lexical != "none" else 1.0

    def _marginals(self, enc, n_threads) -> tuple[ArcMarginals, int]:
        """Arc posteriors of ``enc``'s sentences and how many came from the fallback model."""
        res = arc_marginals(self.op_, self.det_, enc, self.single_root_, n_threads,
                            self._det_power())
        bad = np.nonzero(res.status != 0)[0]
        if len(bad):
            # sentences the model gives no weight: use the always-positive DET+F back-off model
            fb = arc_marginals(OperatorSHAG.trivial(self._H, self._M), self.fallback_,
                               enc.subset(bad), self.single_root_, n_threads)
            mu, pair_off = res.mu, res.pair_off
            for i, b in enumerate(bad):
                mu[pair_off[b]:pair_off[b + 1]] = fb.mu[fb.pair_off[i]:fb.pair_off[i + 1]]
        return res, len(bad)

    def _chunks(self, sents, max_pairs: int = 1 << 21):
        """Consecutive batches of at most ``batch_size`` sentences and about ``max_pairs``
        (head, modifier) pairs, so that the per-batch arc-weight arrays stay small."""
        batch = int(self.batch_size)
        a = 0
        while a < len(sents):
            b, pairs = a, 0
            while b < len(sents) and b - a < batch:
                pairs += (len(sents[b].words) + 1) ** 2
                if b > a and pairs > max_pairs:
                    break
                b += 1
            yield sents[a:b]
            a = b

    #: memory budget of the charts of :meth:`parse` (see :mod:`fastspectral._memory`): None
    #: for half the physical memory (or ``$FASTSPECTRAL_MAX_MEMORY``), bytes, a size such as
    #: ``"2G"``, 0 for no limit; an attribute, not a hyperparameter (it is not saved)
    max_memory = None

    def predict_heads(self, items, *, tags=None, jobs=None, progress=None) -> list[np.ndarray]:
        """Predicted heads (1-based int32 arrays, 0 = root) of each sentence; the arguments are
        those of :meth:`parse`.

        A sentence whose chart would exceed the memory budget ``max_memory``
        (:func:`fastspectral._memory.shag_chart_bytes`) is parsed by the DET+F back-off model
        when its smaller chart fits, else given the chain where every word depends on its left
        neighbour; a warning names it and ``last_parse_stats_.too_long`` counts it."""
        from .. import _memory

        items = list(items)
        n_threads = self._check_parse_args(items, tags, jobs)
        sents = self._model_view(items, tags)
        out: list = [None] * len(sents)
        stats = SHAGParseStats(sentences=len(sents))
        budget = _memory.resolve_budget(self.max_memory)
        K = self.det_.K if self.det_ is not None else 1
        N = int(self.op_.alpha1.shape[2])
        need = {k: _memory.shag_chart_bytes(len(s.words), N, K) for k, s in enumerate(sents)}
        plan = _memory.plan(range(len(sents)), need, budget, n_threads)
        fb_need = {k: _memory.shag_chart_bytes(len(sents[k].words), 1, self.fallback_.K)
                   for k in plan.refused}
        fb_plan = _memory.plan(plan.refused, fb_need, budget, n_threads)
        if plan.refused:
            stats.too_long = len(plan.refused)
            _memory.warn_refused(plan.refused, [s.words for s in sents], need, budget,
                                 "the DET+F back-off parse (or the left-attached chain when "
                                 "even that is over the budget)")
        done = 0
        # (sentence ids, threads, DET+F back-off only): sentences that fit the budget only
        # alone are parsed one at a time
        runs = [(plan.parallel, n_threads, False), (plan.alone, 1, False),
                (fb_plan.parallel, n_threads, True), (fb_plan.alone, 1, True)]
        for ids, threads, backoff in runs:
            for chunk_ids in self._chunks_of(sents, ids):
                chunk = [sents[k] for k in chunk_ids]
                enc = self._encode(chunk, False)
                if backoff:
                    res = arc_marginals(OperatorSHAG.trivial(self._H, self._M), self.fallback_,
                                        enc, self.single_root_, threads)
                else:
                    res, n_fallback = self._marginals(enc, threads)
                    stats.fallback += n_fallback
                dec = mbr_decode(res.mu, res.pair_off, enc.lengths, self.single_root_, threads)
                for b, k in enumerate(chunk_ids):
                    out[k] = dec.heads[dec.head_off[b]:dec.head_off[b + 1]].copy()
                done += len(chunk_ids)
                if progress is not None:
                    progress(done, len(sents))
        for k in fb_plan.refused:
            out[k] = np.arange(len(sents[k].words), dtype=np.int32)   # word i -> word i - 1
        if fb_plan.refused and progress is not None:
            progress(len(sents), len(sents))
        self.last_parse_stats_ = stats
        return out

    def _chunks_of(self, sents, ids):
        """:meth:`_chunks` of the sentences ``ids``, as lists of ids."""
        ids = list(ids)
        pos = 0
        for chunk in self._chunks([sents[k] for k in ids]):
            yield ids[pos:pos + len(chunk)]
            pos += len(chunk)

    def parse(self, items, *, tags=None, jobs=None, progress=None) -> list:
        """Parse dependency sentences; returns copies with ``heads`` filled (and ``rels`` set
        to ``"_"``).

        Parameters
        ----------
        items : list of DepSentence
            Sentences with ``words`` and POS tags (their heads are ignored).
        tags : list of lists of str, optional
            POS tags to parse with, one list per sentence (a None entry keeps that sentence's
            own tags); they replace the sentences' tags in the model's tag column
            (``tag_column_``).  The returned sentences keep their own tags.
        jobs : int, optional
            Threads (None: every core available).
        progress : callable, optional
            ``progress(done, total)`` called after each batch.

        Returns
        -------
        list
            One parsed copy per sentence, in order; ``last_parse_stats_`` counts the sentences
            parsed by the fallback model.
        """
        items = list(items)
        heads = self.predict_heads(items, tags=tags, jobs=jobs, progress=progress)
        out = []
        for s, h in zip(items, heads):
            hl = [int(x) for x in h]
            if dataclasses.is_dataclass(s):
                fields = {f.name for f in dataclasses.fields(s)}
                kw = {"heads": hl}
                if "rels" in fields:
                    kw["rels"] = ["_"] * len(hl)
                out.append(dataclasses.replace(s, **kw))
            else:
                c = copy.copy(s)
                c.heads = hl
                out.append(c)
        return out

    def arc_posteriors(self, sent, jobs=1) -> np.ndarray:
        """``(n+1) x (n+1)`` matrix of arc posteriors ``mu[h, m]`` for one sentence."""
        self._check_fitted()
        enc = self._encode(self._model_view([sent]), False)
        res, _ = self._marginals(enc, check_jobs(jobs))
        return unpack_square(res.mu, res.pair_off, 0).copy()

    def log_weight(self, sents, jobs=None) -> np.ndarray:
        """``log |total weight|`` (log of the sum over all projective trees) of each sentence
        (NaN where the model gives a sentence no weight)."""
        self._check_fitted()
        enc = self._encode(self._model_view(list(sents)), False)
        res = arc_marginals(self.op_, self.det_, enc, self.single_root_, check_jobs(jobs),
                            self._det_power())
        return np.where(res.status == 0, res.logz, np.nan)

    # ------------------------------------------------------------------ model files
    def _model_file(self):
        meta = {"params": self.get_params(), "tagset_": self.tag_column_,
                "single_root_": self.single_root_, "tags": self.tags_.symbols,
                "words": self.words_.symbols if self.words_ is not None else None,
                "fit_time": self.fit_time_, "n_sentences": self.fit_info_.n_sentences}
        arrays = {"op_alpha1": self.op_.alpha1, "op_beta": self.op_.beta, "op_A": self.op_.A}
        fb_meta, fb_arrays = self.fallback_.to_arrays("fb_")
        meta["fallback"] = fb_meta
        arrays.update(fb_arrays)
        if self.det_ is not None:
            det_meta, det_arrays = self.det_.to_arrays("det_")
            meta["det"] = det_meta
            arrays.update(det_arrays)
        else:
            meta["det"] = None
        return meta, arrays

    @staticmethod
    def _old_params(meta: dict) -> dict:
        """The constructor arguments of a model file written before the estimator base: its
        meta held the parameters as top-level fields under their old names (``model``,
        ``states``, ``seed``, ``smoothing``), and fields added over time are absent from older
        files, whose models had ``basis=1``, no back-off, the ``xpos`` column and ``ridge=0``."""
        params = {name: meta[name] for name in ("model", "states", "lexical", "iterations",
                                                "lex_weight", "seed", "single_root")}
        params.update(basis=int(meta.get("basis", 1)), smoothing=float(meta.get("smoothing", 0.0)),
                      tag_column=meta.get("tagset", "xpos"), ridge=float(meta.get("ridge", 0.0)))
        return params

    @classmethod
    def _from_model_file(cls, meta: dict, arrays: dict) -> "SHAGParser":
        """Rebuild a parser from a model file's ``meta`` and ``arrays`` (files written by
        older versions included); every array is validated first, a bad one raises
        :class:`~fastspectral.errors.ModelFileError` naming it."""
        from ..io import validate as V

        try:
            if "params" in meta:
                params = meta["params"]
                fit_time = float(meta.get("fit_time", 0.0))
                n_sentences = int(meta.get("n_sentences", 0))
            else:
                params = cls._old_params(meta)
                old_info = meta.get("train_info", {})
                fit_time = float(old_info.get("train_seconds", 0.0))
                n_sentences = int(old_info.get("n_sentences", 0))
            p = cls(**cls._params_from_file(params))
            p._validate_params()
            p.tag_column_ = meta.get("tagset_", "xpos")
            if p.tag_column_ not in TAGSETS[1:]:
                raise ValueError(f"unknown tagset {p.tag_column_!r}")
            p.single_root_ = bool(meta["single_root_"])
            p.tags_ = SymbolVocab(V.meta_list(meta, "tags", str), unk_id=0)
            p.words_ = None
            if meta.get("words") is not None:
                p.words_ = SymbolVocab(V.meta_list(meta, "words", str),
                                       unk_id=len(meta["words"]))
            # every array validated before a kernel sees it (fastspectral.io.validate)
            H, M = len(p.tags_) + 1, len(p.tags_)
            if M < 1:
                raise ModelFileError("corrupt shag model file (no tags)")
            alpha1 = V.get(arrays, "op_alpha1", "float", ndim=3, shape=(H, 2, None),
                           dtype=np.float64)
            N = alpha1.shape[2]
            if not 1 <= N <= 4096:
                V.fail("op_alpha1", f"{N} operator states")
            beta = V.get(arrays, "op_beta", "float", ndim=3, shape=(H, 2, N), dtype=np.float64)
            A = V.get(arrays, "op_A", "float", ndim=5, shape=(H, 2, M, N, N), dtype=np.float64)
            for name, a in (("op_alpha1", alpha1), ("op_beta", beta), ("op_A", A)):
                V.check_finite(a, name)
            p.op_ = OperatorSHAG(alpha1, beta, A)
            W = len(p.words_) if p.words_ is not None else None
            p.fallback_ = BackoffSHAG.from_arrays(meta["fallback"], arrays, "fb_", M)
            p.det_ = None
            if meta.get("det") is not None:
                p.det_ = BackoffSHAG.from_arrays(meta["det"], arrays, "det_", M, W)
                if p.det_.lexical and W is None:
                    raise ModelFileError("corrupt shag model file (a lexical model without "
                                         "words)")
            p.fit_time_ = fit_time
            p.fit_info_ = SHAGFitInfo(n_sentences=n_sentences)
        except ModelFileError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelFileError(f"corrupt shag model file ({exc!r})") from None
        return p
