"""Plain (markovised) PCFG: the baseline parser, and the coarse grammar of the L-PCFGs.

>>> from fastspectral import PCFG
>>> from fastspectral.trees import read_ptb
>>> model = PCFG(v=2, h=1).fit(read_ptb("wsj-sample.mrg"))          # doctest: +SKIP
>>> trees = model.parse([["The", "dog", "barks", "."]])            # doctest: +SKIP

Training cleans each tree (function tags, traces), collapses unary chains and binarises with
vertical order ``v`` and horizontal order ``h`` (:func:`fastspectral.trees.transforms.prepare`),
then takes relative frequencies (:class:`~fastspectral.grammar.grammar.Grammar`).

Parsing runs the compiled CKY kernels on all sentences in parallel (``jobs`` OpenMP threads):

* ``decode="max-recall"`` (default): inside-outside, then Goodman's maximum expected labelled
  recall tree over base labels (intermediate ``@`` symbols are spliced out afterwards);
* ``decode="viterbi"``: the most probable derivation.

With ``prune_threshold`` (default 1e-4) and a fine grammar (v > 1 or h != 0) a coarse grammar
(v=1, h=0) is trained too and used for coarse-to-fine pruning: fine items whose coarse posterior
is below the threshold are never built.  If pruning leaves no parse, the sentence is reparsed
exhaustively; if the grammar has no parse at all (rare), the output is a flat tree over the
lexicon's best tags, and ``last_parse_stats_.fallback`` counts those sentences of the last
:meth:`PCFG.parse` call.  An empty sentence yields the empty tree ``(TOP )`` (EVALB treats it as
a skip sentence).

Memory: the charts of an n-word sentence take ``C (41 S + 17) + C (41 S_c + 5) + 16 S_c (n + 1)`` bytes with
``C = n (n + 1) / 2`` cells, S fine and S_c coarse symbols (max-recall; about 1.3 GB for n = 100
with the default WSJ grammar), per thread (:func:`fastspectral._memory.pcfg_chart_bytes`).  A
sentence whose charts would exceed the budget ``max_memory`` (default: half the physical
memory; see :mod:`fastspectral._memory` and ``docs/limits.md``) is not parsed: a warning names
it, it gets the flat fallback tree and is counted in ``last_parse_stats_.too_long``.

Models built on a PCFG (the L-PCFGs of :mod:`fastspectral.lpcfg`, which use it as their pruning,
lexicon and fallback grammar) go through its public hooks only: :meth:`PCFG.fit_prepared` (fit
from trees and grammars they have already prepared), :meth:`PCFG.lexicon_options`,
:meth:`PCFG.best_tags`, and :meth:`PCFG.state` / :meth:`PCFG.from_state` (the model-file content).
"""
from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .._threads import map_groups, python_workers
from ..base import Interval, Parser, PartitionedFit, check_jobs
from ..errors import ModelFileError
from ..trees.transforms import base_label, prepare
from ..trees.tree import Tree
from .chart import MAX_RECALL, VITERBI, flat_tree, nodes_to_tree, pack_lexical
from .grammar import Grammar, training_trees

__all__ = ["PCFG", "PCFGParseStats"]

_DECODERS = {"max-recall": MAX_RECALL, "viterbi": VITERBI}
#: sentences per thread handed to one call of the CKY kernel
_CHUNK_PER_THREAD = 256


@dataclass
class PCFGParseStats:
    """What happened to the sentences of one :meth:`PCFG.parse` call (``last_parse_stats_``).

    Attributes
    ----------
    sentences : int
        Sentences parsed.
    empty : int
        Empty sentences (given the empty tree ``(TOP )``).
    fallback : int
        Sentences the grammar has no parse for (given a flat tree over the best tags).
    too_long : int
        Sentences whose chart would exceed the memory budget ``max_memory`` (given the flat
        tree, unparsed).
    """

    sentences: int = 0
    empty: int = 0
    fallback: int = 0
    too_long: int = 0

    @property
    def flat_fallbacks(self) -> int:
        """Sentences given a flat tree because the grammar has no parse for them."""
        return self.fallback


def _chunked(ids, size):
    return [ids[c:c + size] for c in range(0, len(ids), size)]


_WHITESPACE = re.compile(r"\s")


def _flat(k: int):
    raise TypeError(f"sentence {k} is a string: sentences are lists of tokens (a flat list of "
                    "strings is one sentence: pass [words])")


def _check_sentences(sentences, tags):
    if isinstance(sentences, (str, bytes)):
        raise TypeError("sentences must be a list of token lists, not a string")
    sentences = [list(s) if not isinstance(s, (str, bytes)) else _flat(k)
                 for k, s in enumerate(sentences)]
    for k, s in enumerate(sentences):
        # one C-level pass per sentence (str.join checks the types; \s is str.isspace)
        try:
            bad = "" in s or _WHITESPACE.search("\0".join(s)) is not None
        except TypeError:
            bad = True
        if bad:
            for w in s:
                if not isinstance(w, str):
                    raise TypeError(f"sentence {k}: tokens must be str, got {type(w).__name__}")
                if not w or any(ch.isspace() for ch in w):
                    raise ValueError(f"sentence {k}: invalid token {w!r} "
                                     "(empty or with whitespace)")
    if tags is not None:
        tags = list(tags)
        if len(tags) != len(sentences):
            raise ValueError(f"{len(tags)} tag sequences for {len(sentences)} sentences")
        for k, (s, t) in enumerate(zip(sentences, tags)):
            if t is not None and len(t) != len(s):
                raise ValueError(f"sentence {k}: {len(t)} tags for {len(s)} words")
    return sentences, tags


class PCFG(PartitionedFit, Parser):
    """Markovised PCFG estimated by relative frequency, parsed with compiled CKY.

    Parameters
    ----------
    v : int, default 2
        Vertical markovisation order (>= 1; 2 = parent annotation).
    h : int or None, default 1
        Horizontal markovisation order (>= 0; None: infinite).
    tag_parent : bool, default True
        Also parent-annotate preterminals (``NN^NP``); it gains about 1.5 F1 on WSJ section 22
        at the same speed.
    decode : {"max-recall", "viterbi"}, default "max-recall"
        Goodman's maximum expected labelled recall tree, or the most probable derivation.
    prune_threshold : float or None, default 1e-4
        Coarse-to-fine posterior threshold in [0, 1) (None disables the coarse pass).
    rare_threshold : int, default 1
        Words seen at most this often train the unknown-word signatures
        (:mod:`fastspectral.grammar.lexicon`).
    lex_smoothing : float, default 0.5
        Smoothing of ``P(tag | word)`` towards the signature distribution.
    sig_smoothing : float, default 1.0
        Smoothing of ``P(tag | signature)`` towards the tag prior.
    jobs : int or None, default None
        Default number of parsing threads (None: every core available,
        :func:`fastspectral._threads.available_cores`).

    The memory budget of parsing is the attribute ``max_memory`` (not a hyperparameter: it
    belongs to the machine that parses, and is not saved): None (default) for half the physical
    memory (or ``$FASTSPECTRAL_MAX_MEMORY``), bytes, a size such as ``"2G"``, or 0 for no limit;
    sentences whose chart would be larger get the flat fallback tree (see the module docstring).
    ``max_chart_bytes`` is its older name.

    Attributes
    ----------
    grammar_ : Grammar
        The fine (markovised) grammar with its lexicon.
    coarse_ : Grammar or None
        The coarse ``v=1, h=0`` grammar of coarse-to-fine pruning (None without pruning).
    proj_ : ndarray of int32
        Fine symbol -> coarse symbol (only when ``coarse_`` is set).
    root_label_ : str
        The most frequent label under ``TOP`` (root of the flat fallback trees).
    n_train_trees_ : int
        Training trees.
    fit_time_ : float
        Seconds spent in the last :meth:`fit`.
    last_parse_stats_ : PCFGParseStats
        Counts of the last :meth:`parse` call (empty, fallback and too-long sentences).

    References
    ----------
    M. Johnson, "PCFG models of linguistic tree representations", Computational Linguistics
    24(4), 1998 (parent annotation; relative-frequency estimates, eq. 2); D. Klein and
    C. Manning, "Accurate unlexicalized parsing", ACL 2003 (vertical / horizontal
    markovisation); J. Goodman, "Parsing algorithms and metrics", ACL 1996 (maximum expected
    labelled recall decoding, section 3).

    Examples
    --------
    >>> from fastspectral import PCFG
    >>> from fastspectral.synthetic import LatentPCFG
    >>> trees = LatentPCFG.default().sample(200, seed=0)
    >>> model = PCFG(v=2, h=1, jobs=1).fit(trees)
    >>> model.n_train_trees_
    200
    >>> out = model.parse([["the", "dog", "sees", "a", "cat", "."]])
    >>> out[0].leaves()
    ['the', 'dog', 'sees', 'a', 'cat', '.']
    >>> out[0].label
    'TOP'
    """

    kind = "pcfg"
    input_kind = "sentences"
    _parameter_constraints = {"v": Interval(int, 1), "h": Interval(int, 0, allow_none=True),
                              "decode": set(_DECODERS),
                              "prune_threshold": Interval(float, 0.0, 1.0, allow_none=True)}

    def __init__(self, v=2, h=1, tag_parent=True, decode="max-recall", prune_threshold=1e-4,
                 rare_threshold=1, lex_smoothing=0.5, sig_smoothing=1.0, jobs=None):
        self.v = v
        self.h = h
        self.tag_parent = tag_parent
        self.decode = decode
        self.prune_threshold = prune_threshold
        self.rare_threshold = rare_threshold
        self.lex_smoothing = lex_smoothing
        self.sig_smoothing = sig_smoothing
        self.jobs = jobs

    #: memory budget of the charts of :meth:`parse` (see :mod:`fastspectral._memory`)
    max_memory = None

    @property
    def max_chart_bytes(self):
        """Older name of ``max_memory``."""
        return self.max_memory

    @max_chart_bytes.setter
    def max_chart_bytes(self, value):
        self.max_memory = value

    # -- validation ----------------------------------------------------------------------------
    def _check_params(self):
        if self.jobs is not None:
            check_jobs(self.jobs)

    def lexicon_options(self) -> dict:
        """Keyword arguments of :class:`~fastspectral.grammar.lexicon.Lexicon` for this model's
        lexicon settings (for :meth:`Grammar.from_trees` of grammars built outside :meth:`fit`)."""
        return {"rare_threshold": self.rare_threshold, "s1": self.lex_smoothing,
                "s2": self.sig_smoothing}

    @property
    def _uses_coarse(self):
        return self.prune_threshold is not None and (self.v > 1 or self.h != 0 or self.tag_parent)

    # -- learning ------------------------------------------------------------------------------
    def fit(self, X):
        """Estimate from an iterable of treebank trees (raw or cleaned). Returns self."""
        self._validate_params()
        t0 = time.perf_counter()
        raw = training_trees(X, "a PCFG")
        fine = [prepare(t, self.v, self.h, self.tag_parent) for t in raw]
        coarse = None
        if self._uses_coarse:
            coarse = Grammar.from_trees([prepare(t, 1, 0, False) for t in raw],
                                        self.lexicon_options())
        self.fit_prepared(fine, coarse=coarse)
        self.fit_time_ = time.perf_counter() - t0
        return self

    def fit_prepared(self, fine_trees, grammar=None, coarse=None, fit_time=None):
        """Fit from trees that are already prepared; the hook of models built on this one.

        ``fine_trees``: the training trees after :func:`~fastspectral.trees.transforms.prepare`
        with this model's ``v``, ``h`` and ``tag_parent`` (rooted at ``TOP``), one per treebank
        tree.  ``grammar``: their :class:`~fastspectral.grammar.grammar.Grammar` when the caller
        has already estimated it with :meth:`lexicon_options` (default: estimated here).
        ``coarse``: the coarse grammar of coarse-to-fine parsing (symbols: the base labels of
        the fine ones, e.g. the ``v=1, h=0`` grammar of the same treebank); it is used as given,
        whatever ``prune_threshold``, ``v`` and ``h`` are; None: no coarse pass.
        ``fit_time``: recorded as ``fit_time_`` (default: the seconds this call took).

        Sets ``grammar_``, ``coarse_`` (with the fine-to-coarse projection ``proj_``),
        ``root_label_`` (most frequent label under ``TOP``, the root of fallback trees),
        ``n_train_trees_`` and ``fit_time_``, as :meth:`fit` does.  Returns self.
        """
        self._validate_params()
        t0 = time.perf_counter()
        fine = list(fine_trees)
        if not fine:
            raise ValueError("cannot fit a PCFG on an empty treebank")
        self.grammar_ = grammar if grammar is not None else \
            Grammar.from_trees(fine, self.lexicon_options())
        self.coarse_ = coarse
        if coarse is not None:
            self.proj_ = self._projection(self.grammar_, coarse)
        self.root_label_ = self._most_frequent_root(fine)
        self.n_train_trees_ = len(fine)
        self.fit_time_ = time.perf_counter() - t0 if fit_time is None else fit_time
        return self

    # -- learning from partitions (the statistics protocol of fastspectral.base) -------------
    def sufficient_statistics(self, items, context=None):
        """The mergeable counts of a partition of treebank trees (one pass; see
        :mod:`fastspectral.grammar.stats`)."""
        from .stats import pcfg_statistics
        from ..base import Partition

        return pcfg_statistics(self, items.data if isinstance(items, Partition) else items)

    def fit_statistics(self, stats, context=None):
        """Estimate from merged :meth:`sufficient_statistics` (the model ``fit`` gives on the
        concatenated partitions); returns None (fitted)."""
        from .stats import pcfg_from_statistics

        pcfg_from_statistics(self, stats)
        return None

    @staticmethod
    def _most_frequent_root(prepared):
        from collections import Counter
        c = Counter(base_label(t.children[0].label) for t in prepared if t.children)
        return c.most_common(1)[0][0] if c else "S"

    @staticmethod
    def _projection(fine: Grammar, coarse: Grammar) -> np.ndarray:
        """Fine symbol -> the coarse symbol of its base label."""
        cidx = {}
        for i, s in enumerate(coarse.symbols):
            cidx.setdefault(base_label(s), i)
        proj = np.empty(fine.n_symbols, dtype=np.int32)
        for i, s in enumerate(fine.symbols):
            b = base_label(s)
            if b not in cidx:
                raise ValueError(f"fine symbol {s!r} has no coarse counterpart")
            proj[i] = cidx[b]
        return proj

    # -- parsing -------------------------------------------------------------------------------
    def parse(self, items, *, tags=None, jobs=None, progress=None):
        """Parse tokenised sentences; returns one :class:`Tree` per sentence (rooted at TOP).

        Parameters
        ----------
        items : list of list of str
            The sentences (lists of words).
        tags : list, optional
            One entry per sentence: None, or a list of POS tags that the parse must use (a
            tag the grammar does not know leaves that word free).
        jobs : int, optional
            Threads (default: the model's ``jobs``, else every core available).
        progress : callable, optional
            ``progress(done, total)`` called as batches of sentences finish.

        Returns
        -------
        list of Tree
            One tree per sentence, in order; ``last_parse_stats_`` counts the fallbacks.
        """
        if not isinstance(items, (str, bytes, list, tuple)):
            items = list(items)
        n_threads = self._check_parse_args(items, tags, jobs)
        sentences, tags = _check_sentences(items, tags)
        out: list = [None] * len(sentences)
        from .. import _memory

        mode = _DECODERS[self.decode]
        g = self.grammar_
        use_coarse = self.coarse_ is not None and self.prune_threshold is not None
        # chart memory of every sentence, before anything is allocated (docs/limits.md)
        budget = _memory.resolve_budget(self.max_memory)
        n_coarse = self.coarse_.n_symbols if use_coarse else 0
        need = {k: _memory.pcfg_chart_bytes(len(s), g.n_symbols, n_coarse, mode == VITERBI)
                for k, s in enumerate(sentences) if s}
        # longest first: better load balance across threads
        plan = _memory.plan(sorted(need, key=lambda k: -len(sentences[k])), need, budget,
                            n_threads)
        too_long = plan.refused
        for k, s in enumerate(sentences):
            if not s:
                out[k] = Tree("TOP", [])
        for k in too_long:
            out[k] = flat_tree(sentences[k], self.best_tags(sentences[k], None if tags is None
                                                             else tags[k]), self.root_label_)
        if too_long:
            _memory.warn_refused(too_long, sentences, need, budget,
                                 "the flat tree over the best tags")
        stats = PCFGParseStats(sentences=len(sentences),
                               empty=sum(1 for s in sentences if not s), too_long=len(too_long))
        cg = g.chart_grammar("max" if mode == VITERBI else "sum")
        from .._ext.cky import parse_batch

        done = 0
        if progress:
            progress(0, len(sentences))
        # sentences whose chart fits the budget only alone are parsed one at a time
        batches = [(ids, n_threads) for ids in _chunked(plan.parallel,
                                                        _CHUNK_PER_THREAD * n_threads)]
        batches += [(ids, 1) for ids in _chunked(plan.alone, _CHUNK_PER_THREAD)]
        coarse_cg = self.coarse_.chart_grammar("sum") if use_coarse else None

        def parse_group(ids, threads):
            """Parse sentences ``ids`` into ``out``; returns how many fell back."""
            fallback = 0
            sents = [sentences[k] for k in ids]
            stags = None if tags is None else [tags[k] for k in ids]
            lengths, offs, pos, sym, prob = pack_lexical(g, sents, stags)
            kwargs = {}
            if use_coarse:
                _, coffs, cpos, csym, cprob = pack_lexical(self.coarse_, sents, stags)
                kwargs = dict(coarse=coarse_cg, proj=self.proj_,
                              coarse_lex_offsets=coffs, coarse_lex_pos=cpos,
                              coarse_lex_sym=csym, coarse_lex_prob=cprob,
                              threshold=float(self.prune_threshold))
            nodes, noff, counts, logz = parse_batch(cg, lengths, offs, pos, sym, prob, mode,
                                                    n_threads=threads, **kwargs)
            for r, k in enumerate(ids):
                cnt = counts[r]
                words = sentences[k]
                if cnt == 0:
                    fallback += 1
                    out[k] = flat_tree(words, self.best_tags(words, None if stags is None else stags[r]),
                                       self.root_label_)
                    continue
                triples = nodes[noff[r]: noff[r] + 3 * cnt].reshape(-1, 3)
                out[k] = nodes_to_tree(triples, words, g.classes, g.class_is_tag)
            return fallback

        # groups of a batch in flight at once: one group's Python steps (lexicon, tree
        # building) overlap the others' kernels (fastspectral._threads.map_groups)
        workers = python_workers(n_threads)
        pool = ThreadPoolExecutor(workers, thread_name_prefix="fastspectral-parse") \
            if workers > 1 else None
        try:
            for ids, threads in batches:
                stats.fallback += sum(map_groups(parse_group, ids, threads, pool, workers))
                done += len(ids)
                if progress:
                    progress(done + stats.empty + len(too_long), len(sentences))
        finally:
            if pool is not None:
                pool.shutdown()
        self.last_parse_stats_ = stats
        return out

    def best_tags(self, words, tags=None):
        """The most probable tag (a base label) of every word of ``words``:
        ``argmax_t P(t | w) = argmax_t P(w | t) P(t)`` under the lexicon.

        ``tags``: None, or one given tag per word (a None entry, or a tag the grammar does not
        know, leaves that word free).  These are the tags of the flat fallback trees.  (The
        prior matters: ``argmax_t P(w | t)`` alone prefers rare tags, whose few words each get
        a large share.)
        """
        self._check_fitted()
        g = self.grammar_
        scores = g.lexicon.tag_word_scores(words, tags, g.tag_symbols)
        weighted = scores * g.lexicon.p_tag
        best = np.argmax(weighted, axis=1) if len(scores) else np.zeros(0, dtype=np.int64)
        free = weighted.max(axis=1, initial=0.0) <= 0       # only tags never seen as tags
        best[free] = np.argmax(scores[free], axis=1)
        return [g.classes[g.sym_class[int(b)]] for b in best]

    def log_probability(self, sentences, tags=None):
        """log P(sentence) under the grammar (inside algorithm), -inf when unparsable."""
        self._check_fitted()
        from .chart import marginals
        sentences, tags = _check_sentences(sentences, tags)
        return np.array([marginals(self.grammar_, s, None if tags is None else tags[k])["logz"]
                         if s else -np.inf for k, s in enumerate(sentences)])

    def prune(self, sentences, threshold=1e-5, tags=None, jobs=None):
        """Posterior pruning items (see :func:`fastspectral.grammar.chart.posterior_prune`);
        ``jobs``: threads (default: the model's ``jobs``, else every core available)."""
        self._check_fitted()
        from .chart import posterior_prune
        sentences, tags = _check_sentences(sentences, tags)
        return posterior_prune(self.grammar_, sentences, threshold, tags,
                               check_jobs(jobs if jobs is not None else self.jobs))

    # -- model files ---------------------------------------------------------------------------
    def state(self):
        """The fitted model as ``(meta, arrays)``: a JSON-serialisable dict and a dict of numeric
        arrays, the content of the model file written by :meth:`save` (the array names start
        with ``fine_`` and ``coarse_``).  :meth:`from_state` reads it back."""
        self._check_fitted()
        gmeta, garr = self.grammar_.to_state("fine_")
        meta = {"params": self.get_params(), "grammar": gmeta, "root_label": self.root_label_,
                "n_train_trees": self.n_train_trees_, "fit_time": self.fit_time_}
        arrays = dict(garr)
        if self.coarse_ is not None:
            cmeta, carr = self.coarse_.to_state("coarse_")
            meta["coarse"] = cmeta
            arrays.update(carr)
        return meta, arrays

    @classmethod
    def from_state(cls, meta, arrays, prefix: str = ""):
        """The fitted model of a :meth:`state` ``(meta, arrays)`` pair (e.g. read from a file;
        states written by older versions, with ``fit_seconds``, are read too).  ``prefix``: the
        prefix of its array names in ``arrays`` (models that embed a PCFG).  Every array is
        validated (:meth:`Grammar.from_state`); a bad one raises
        :class:`~fastspectral.errors.ModelFileError` naming it."""
        try:
            model = cls(**cls._params_from_file(meta["params"]))
            model._validate_params()
            model.grammar_ = Grammar.from_state(meta["grammar"], arrays, prefix + "fine_")
            model.coarse_ = None
            if "coarse" in meta:
                model.coarse_ = Grammar.from_state(meta["coarse"], arrays, prefix + "coarse_")
                model.proj_ = cls._projection(model.grammar_, model.coarse_)
            model.root_label_ = meta["root_label"]
            if not isinstance(model.root_label_, str):
                raise ValueError("root_label is not a string")
            model.n_train_trees_ = meta["n_train_trees"]
            model.fit_time_ = meta["fit_time"] if "fit_time" in meta else meta["fit_seconds"]
        except ModelFileError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelFileError(f"corrupt PCFG model state ({exc!r})") from None
        return model

    def _model_file(self):
        return self.state()

    @classmethod
    def _from_model_file(cls, meta, arrays):
        return cls.from_state(meta, arrays)
