"""What the latent-variable PCFG learners share: preparation, parsing, tree scoring, model files.

:class:`LatentPCFGBase` is the base of the three L-PCFG learners, which are siblings:
:class:`~fastspectral.lpcfg.spectral.SpectralLPCFG` (Cohen et al. 2012, 2013),
:class:`~fastspectral.lpcfg.pivot.PivotLPCFG` (Cohen & Collins 2014) and
:class:`~fastspectral.lpcfg.em.EMLPCFG` (EM, or EM from the pivot estimates); the last two,
whose parameters are probabilities, through :class:`ProbabilisticLPCFGBase` (the training
log-likelihood, their shared checks).  Each learner differs only in how it estimates the
parameters; the base holds

* the preparation of the treebank (:meth:`LatentPCFGBase._prepare_treebank`): cleaned,
  unary-collapsed and binarised with the learner's ``v`` / ``h`` / ``tag_parent``; the plain PCFG
  of the same trees (``pcfg_``, the pruning model) and its coarse ``v=1, h=0`` grammar; the node
  arrays every estimator reads; the same preparation of the partitions of learning from
  partitions (:meth:`LatentPCFGBase.prepare_partition`);
* the fitted state (:class:`LatentArrays`): the :class:`~fastspectral.lpcfg.params.LatentGrammar`
  ``lpcfg_`` (binary tensors, unary matrices, root vectors) and the lexical table;
* coarse-to-fine parsing (:meth:`LatentPCFGBase.parse`), all compiled and parallel over
  sentences (OpenMP):

  1. the coarse PCFG (``v=1, h=0``) runs exhaustive inside-outside (the PCFG's dense CKY
     kernel); items with posterior below ``coarse_threshold`` are dropped (when the refined
     chart of a sentence then has no parse, it is redone with a 1000x lower threshold, then
     unpruned);
  2. the plain PCFG (same ``v``/``h``) runs inside-outside over the survivors; items with
     posterior below ``prune_threshold`` are dropped;
  3. the tensor inside-outside of the L-PCFG (figure 3 of Cohen et al. 2012) runs over the
     remaining items and gives ``mu(a, i, j) = alpha^{a,i,j} beta^{a,i,j} / Z``;
  4. spectral estimates are not probabilities, so marginals can come out negative: **negative
     marginals are clipped to zero** before decoding (they only ever count as "no evidence").
     The estimate ``mu = alpha beta / Z`` is the ratio of two estimates and is used whatever the
     sign of ``Z`` (on WSJ §22 this beats falling back to the PCFG when ``Z < 0``;
     :class:`ParseStats` ``negative_z`` counts those sentences); a sentence whose ``Z`` is 0 or
     not finite is decoded from the plain PCFG's posteriors (``fallback_pcfg``);
  5. Goodman's max-expected-recall tree over base labels from the clipped marginals, then
     debinarisation.

  To keep products of many small factors in range every lexical vector of word ``i`` is divided
  by ``s_i = max_p P(w_i | p) * exp(r)``, with ``r`` the average log rule probability per word
  of the training trees; every derivation of a sentence is scaled by the same ``prod_i s_i``, so
  marginals are unchanged;
* :meth:`LatentPCFGBase.tree_probability` and the model files (``_model_file`` /
  ``_from_model_file``).

Hyperparameters the base reads (every learner has them): ``v``, ``h``, ``tag_parent``,
``prune_threshold``, ``coarse_threshold``, ``jobs``.
"""
from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields

import numpy as np

from .._ext._status import OVER_BUDGET
from ..base import Parser, Partition, PartitionedFit, check_jobs
from ..base import check_int as _check_int
from ..grammar.grammar import check_trees
from ..trees.transforms import binarize, clean, collapse_unary, drop_empty_trees, prepare
from ..trees.tree import Tree
from .features import extract_nodes
from .params import LatentGrammar

__all__ = ["LatentPCFGBase", "ProbabilisticLPCFGBase", "LatentArrays", "ParseStats",
           "PreparedTreebank", "log_rule_per_word", "log_rule_sum"]


# ================================================================================================
# small records
# ================================================================================================
@dataclass
class ParseStats:
    """Counters of one :meth:`LatentPCFGBase.parse` call (``last_parse_stats_``).

    Attributes
    ----------
    sentences : int
        Sentences parsed.
    empty : int
        Empty sentences (parsed as ``(TOP )``).
    fallback_pcfg : int
        Sentences decoded from the plain PCFG's posteriors (the L-PCFG's ``Z`` was 0 or not
        finite, or every tag of a word was clipped).
    fallback_flat : int
        Sentences the pruned PCFG could not parse at all (a flat tree over the best tags).
    items_pcfg : int
        Chart items of the plain PCFG pass.
    items_lpcfg : int
        Chart items of the L-PCFG pass.
    negative_marginals : int
        Negative L-PCFG marginals clipped to zero.
    negative_z : int
        Sentences whose L-PCFG total weight ``Z`` was negative.
    too_long : int
        Sentences whose charts would exceed the memory budget ``max_memory`` (a flat tree over
        the best tags, unparsed): the dense coarse chart, known before parsing, or the pruned
        charts, counted by the tensor kernel as it allocates them.
    """

    sentences: int = 0
    empty: int = 0
    fallback_pcfg: int = 0
    fallback_flat: int = 0
    items_pcfg: int = 0
    items_lpcfg: int = 0
    negative_marginals: int = 0
    negative_z: int = 0
    too_long: int = 0

    @property
    def flat_fallbacks(self) -> int:
        """Sentences given a flat tree because the grammar has no parse for them."""
        return self.fallback_flat

    def as_dict(self) -> dict:
        """The counters as a dict."""
        return asdict(self)

    def add(self, other: "ParseStats") -> None:
        """Add the counters of ``other`` (a part of the same call) to these."""
        for f in fields(self):
            if f.name not in ("sentences", "empty"):
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class PreparedTreebank:
    """The training treebank as every L-PCFG estimator reads it.

    Attributes
    ----------
    n_trees : int
        Number of training trees.
    grammar : Grammar
        The PCFG grammar of the prepared trees (symbols, rules, lexicon).
    nodes : NodeData
        Every training node (:func:`~fastspectral.lpcfg.features.extract_nodes`).
    pcfg : PCFG
        The fitted plain PCFG of the same trees (with its coarse grammar): the pruning model.
    """

    n_trees: int
    grammar: object
    nodes: object
    pcfg: object


@dataclass
class LatentArrays:
    """The fitted state every L-PCFG parses with (installed as ``<name>_`` attributes).

    Attributes
    ----------
    lpcfg : LatentGrammar
        Binary tensors, unary matrices and root vectors.
    vocab : list of str
        Training words (word ids index it).
    lex_keys, lex_off, lex_count : numpy.ndarray
        Sorted keys ``p * (len(vocab) + 1) + word`` of the training (tag, word) pairs, the
        offset of each pair's latent vector in ``lex_table`` and its count.
    lex_rare_off : numpy.ndarray
        Per symbol: offset of the vector of rare and unknown words (-1: none).
    lex_table : numpy.ndarray
        The latent lexical vectors (multiplied by ``P(word | p)`` when parsing).
    tag_count : numpy.ndarray
        Training count of every pre-terminal.
    log_rule_per_word : float
        Average log rule probability per training token (the scale of the lexical vectors).
    sym_counts : numpy.ndarray
        Training nodes of every symbol.
    """

    lpcfg: LatentGrammar
    vocab: list
    lex_keys: np.ndarray
    lex_off: np.ndarray
    lex_count: np.ndarray
    lex_rare_off: np.ndarray
    lex_table: np.ndarray
    tag_count: np.ndarray
    log_rule_per_word: float
    sym_counts: np.ndarray


@dataclass
class _ParseTables:
    """Tables of coarse-to-fine parsing derived from a fitted PCFG (built once per ``pcfg_``)."""

    pcfg: object
    coarse_lg: LatentGrammar
    fine_lg: LatentGrammar
    coarse_un: np.ndarray
    coarse_bin: np.ndarray
    c2f_ptr: np.ndarray
    c2f_sym: np.ndarray
    fine_is_pre: np.ndarray
    xbar: object = None         # the X-bar grammar in front of the coarse pass (or None)
    same: bool = False          # the PCFG is the coarse grammar itself (v=1, h=0)


@dataclass
class _PrunedCharts:
    """The charts of one batch after the coarse and PCFG passes (see ``_coarse_to_fine``)."""

    lens: np.ndarray
    ptr: np.ndarray             # L-PCFG items per sentence: ptr, ii, jj, ss, lx (leaf index)
    ii: np.ndarray
    jj: np.ndarray
    ss: np.ndarray
    lx: np.ndarray
    fl_prob: np.ndarray         # fine lexical entries: P(w | p), symbol, token
    fl_sym: np.ndarray
    fl_tok: np.ndarray
    smax: np.ndarray            # per-token scale
    words_flat: np.ndarray      # word ids of the tokens (-1 unknown)
    pcfg_ptr: np.ndarray        # the PCFG pass: items, posteriors and totals
    pcfg_ii: np.ndarray
    pcfg_jj: np.ndarray
    pcfg_ss: np.ndarray
    pcfg_mu: np.ndarray
    pcfg_z: np.ndarray
    over: np.ndarray = None     # sentences whose PCFG pass passed the memory budget
    pcfg_pass: object = None    # the PCFG pass when it was skipped (run on demand: ensure_pcfg)

    def ensure_pcfg(self) -> None:
        """Run the PCFG pass if it was skipped (``pcfg_mu`` / ``pcfg_z`` None)."""
        if self.pcfg_mu is None:
            self.pcfg_mu, self.pcfg_z, over = self.pcfg_pass()
            self.over = self.over | over

    def pcfg_ok(self) -> np.ndarray:
        """Sentences whose pruned PCFG chart has a parse.  When the pass was skipped: every
        sentence (the caller runs :meth:`ensure_pcfg` first for those whose L-PCFG chart has
        no usable total, the only ones that can lack one)."""
        if self.pcfg_z is None:
            return np.ones(self.lens.shape[0], dtype=bool)
        return np.isfinite(self.pcfg_z) & (self.pcfg_z > 0)


# ================================================================================================
# grammars
# ================================================================================================
def _pcfg_grammar(g) -> LatentGrammar:
    """A plain PCFG :class:`~fastspectral.grammar.grammar.Grammar` as a one-state L-PCFG."""
    S = g.n_symbols
    roots = {int(a): [float(g.root_prob[a])] for a in np.flatnonzero(g.root_prob > 0)}
    return LatentGrammar(np.ones(S, np.int32), g.bin_parent, g.bin_left, g.bin_right,
                         np.asarray(g.bin_prob, np.float64), g.un_parent, g.un_child,
                         np.asarray(g.un_prob, np.float64), roots)


def _coarse_grammar(nodes, g, lexicon_options):
    """The v=1, h=0 grammar of the same treebank from the fine node arrays (base labels)."""
    from ..grammar.grammar import Grammar
    from ..grammar.lexicon import Lexicon
    from ..trees.transforms import base_label

    base = [base_label(s) for s in g.symbols]
    symbols = sorted(set(base))
    cidx = {c: i for i, c in enumerate(symbols)}
    proj = np.array([cidx[b] for b in base], dtype=np.int64)
    S = len(symbols)
    lab = proj[nodes.label]
    is_pre = np.zeros(S, dtype=bool)
    is_pre[proj[g.is_preterminal]] = True
    roots = lab[nodes.parent < 0]
    root_prob = np.bincount(roots, minlength=S) / max(1, roots.shape[0])
    inner = np.flatnonzero(nodes.left >= 0)
    lhs = np.bincount(lab[inner], minlength=S).astype(np.float64)
    b = np.flatnonzero(nodes.right >= 0)
    bk, bc = np.unique((lab[b] * S + lab[nodes.left[b]]) * S + lab[nodes.right[b]],
                       return_counts=True)
    u = np.flatnonzero((nodes.left >= 0) & (nodes.right < 0))
    uk, uc = np.unique(lab[u] * S + lab[nodes.left[u]], return_counts=True)
    bp = (bk // (S * S)).astype(np.int32)
    up = (uk // S).astype(np.int32)
    pre = np.flatnonzero(nodes.word >= 0)
    lex = Lexicon(S, **(lexicon_options or {}))
    vocab = nodes.vocab
    lex.fit([vocab[w] for w in nodes.word[pre]], nodes.start[pre].tolist(),
            lab[pre].tolist())
    return Grammar(symbols, is_pre, root_prob, bp, ((bk // S) % S).astype(np.int32),
                   (bk % S).astype(np.int32), bc / lhs[bp], up, (uk % S).astype(np.int32),
                   uc / lhs[up], lex)


def log_rule_sum(nodes, g) -> float:
    """Total log PCFG rule probability (binary, unary and root rules) of the training nodes:
    the numerator of :func:`log_rule_per_word` (mergeable over partitions of the treebank).

    Parameters
    ----------
    nodes : NodeData
        The node arrays of the binarised training trees.
    g : Grammar
        The plain PCFG of the same trees (its rule and root probabilities).

    Returns
    -------
    float
        ``sum log max(P(rule), 1e-300)`` over the nodes' binary, unary and root rules.
    """
    bn = np.flatnonzero(nodes.rule >= 0)
    un = np.flatnonzero(nodes.urule >= 0)
    rootn = np.flatnonzero(nodes.parent < 0)
    lp = np.log(np.maximum(g.bin_prob[nodes.rule[bn]], 1e-300)).sum()
    lp += np.log(np.maximum(g.un_prob[nodes.urule[un]], 1e-300)).sum()
    lp += np.log(np.maximum(g.root_prob[nodes.label[rootn]], 1e-300)).sum()
    return float(lp)


def log_rule_per_word(nodes, g) -> float:
    """Average log PCFG rule probability (binary, unary and root rules) per training token: the
    ``r`` of the per-word scale ``s_i = max_p P(w_i | p) * exp(r)`` used when parsing."""
    return log_rule_sum(nodes, g) / max(1, nodes.tags.shape[0])



def resolve_random_state(random_state) -> int:
    """The integer seed of ``random_state`` (an int; ``None``: fresh entropy)."""
    if random_state is None:
        return int(np.random.default_rng().integers(2 ** 31))
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)):
        raise TypeError(f"random_state must be an integer or None, got {random_state!r}")
    return int(random_state)


# ================================================================================================
# the base class
# ================================================================================================
class LatentPCFGBase(PartitionedFit, Parser):
    """Base of the L-PCFG learners (see the module docstring); not a learner itself.

    A subclass lists its hyperparameters in ``__init__`` (among them ``v``, ``h``,
    ``tag_parent``, ``prune_threshold``, ``coarse_threshold`` and ``jobs``, which the base
    reads), and implements ``_learn_prepared``, which ``fit`` calls on the treebank of
    :meth:`_prepare_treebank` to estimate the :class:`LatentArrays` it installs with
    :meth:`_install`; for learning from partitions, ``sufficient_statistics`` and
    ``fit_statistics`` (:class:`~fastspectral.base.PartitionedFit`) on the partitions of
    :meth:`prepare_partition`.

    Attributes
    ----------
    pcfg_ : PCFG
        The plain PCFG of the training trees (coarse-to-fine pruning, fallback parses).
    lpcfg_ : LatentGrammar
        The latent parameters (binary tensors, unary matrices, root vectors).
    states_ : numpy.ndarray
        Latent states of every symbol.
    vocab_ : list of str
        Training words.
    lex_table_ : numpy.ndarray
        Latent lexical vectors (with ``lex_keys_``, ``lex_off_``, ``lex_count_``,
        ``lex_rare_off_``, ``tag_count_``: see :class:`LatentArrays`).
    sym_counts_ : numpy.ndarray
        Training nodes of every symbol.
    n_train_trees_ : int
        Training trees.
    fit_time_ : float
        Seconds of the last ``fit``.
    last_parse_stats_ : ParseStats
        Counters of the last :meth:`parse` call.
    """

    input_kind = "sentences"
    #: memory budget of the charts of :meth:`parse` (see :mod:`fastspectral._memory`): None
    #: for half the physical memory (or ``$FASTSPECTRAL_MAX_MEMORY``), bytes, a size such as
    #: ``"2G"``, 0 for no limit; an attribute, not a hyperparameter (it is not saved)
    max_memory = None
    #: X-bar pre-pass of the coarse pass (:mod:`fastspectral.grammar.hierarchy`): the coarse
    #: grammar builds only the (cell, symbol) pairs whose X-bar posterior is at least
    #: ``xbar_ratio`` times the coarse threshold in use (None or 0: off, the coarse pass is
    #: exhaustive).  Off by default: on the dev split (section 22, sentences 1-400) it saves
    #: time only at ratios that change parses (ratio 1: +30 % sentences per CPU-s for Pivot+EM,
    #: 6 % of the dev parses changed; <= 0.2: no gain), see docs/throughput.md.  An attribute
    #: of the parse path, not saved.
    xbar_ratio = None
    #: skip the PCFG pass when the PCFG is the coarse grammar itself (``v=1, h=0``): the coarse
    #: survivors go to the L-PCFG pass without the second pruning at ``prune_threshold``, and
    #: the PCFG pass runs only for chunks with a sentence whose L-PCFG total is unusable (see
    #: docs/throughput.md: parses changed and F1).  An attribute of the parse path, not saved.
    skip_same_pcfg = True
    #: coarse thresholds of the retries, as factors of ``coarse_threshold``, for the sentences
    #: whose pruned PCFG chart has no parse (the last retry is always unpruned).  An attribute
    #: of the parse path, not saved.
    retry_factors = (1e-3,)

    # -- shared checks -----------------------------------------------------------------------
    def _check_common_params(self) -> None:
        """Validate the hyperparameters every L-PCFG has (called by ``fit``)."""
        _check_int("n_states", self.n_states, 1)
        _check_int("n_states_pre", self.n_states_pre, 1, allow_none=True)
        _check_int("v", self.v, 1)
        _check_int("h", self.h, 0, allow_none=True)
        _check_int("min_count", self.min_count, 1)
        for name in ("prune_threshold", "coarse_threshold"):
            t = getattr(self, name)
            if t is not None and not (isinstance(t, (int, float, np.integer, np.floating))
                                      and 0.0 <= t < 1.0):
                raise ValueError(f"{name} must be in [0, 1) or None, got {t!r}")
        if self.jobs is not None:
            check_jobs(self.jobs)
        if self.random_state is not None:
            resolve_random_state(self.random_state)

    def _uses_mle_lexicon(self) -> bool:
        """True when ``P(word | p)`` is the relative frequency (unknown words 0) instead of the
        PCFG's smoothed lexicon (only :class:`SpectralLPCFG` with ``lexicon="mle"``)."""
        return False

    # -- learning ----------------------------------------------------------------------------
    def fit(self, trees, **fit_params):
        """Estimate the model from treebank trees.

        Parameters
        ----------
        trees : iterable of Tree
            Training trees (raw or cleaned).
        **fit_params
            Passed to the learner's step (:class:`EMLPCFG` takes ``callback``).

        Returns
        -------
        self
            The fitted model.
        """
        from .. import _gc
        from .._blas import blas_single_thread

        self._validate()
        seed = resolve_random_state(self.random_state)
        t0 = time.perf_counter()
        # the learners' products and SVDs are small: BLAS threads only add contention (NumPy's
        # and SciPy's BLAS); the cyclic GC would re-traverse the (acyclic) prepared trees again
        # and again
        with blas_single_thread(), _gc.paused():
            prep = self._prepare_treebank(trees, t0)
            arrays = self._learn_prepared(prep, seed, **fit_params)
        self._install(prep.pcfg, arrays)
        self.n_train_trees_ = prep.n_trees
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _learn_prepared(self, prep: PreparedTreebank, seed: int) -> LatentArrays:
        """The learner's own step on the prepared treebank: set its fitted attributes and
        return the latent arrays to install (subclasses)."""
        raise NotImplementedError

    def _prepare_treebank(self, trees, t0: float) -> PreparedTreebank:
        """Clean, collapse unaries and binarise ``trees`` (with this model's ``v``, ``h``,
        ``tag_parent``), fit the plain PCFG on them with its coarse ``v=1, h=0`` grammar, and
        extract the node arrays.  ``t0``: start of ``fit`` (``perf_counter``)."""
        from ..grammar.grammar import Grammar, training_trees
        from ..grammar.pcfg import PCFG

        raw = training_trees(trees, "an L-PCFG")
        # prepare = binarize(collapse_unary(clean(t))): clean and collapse once for both grammars
        fine = self._binarized(raw)
        # the plain PCFG on the same prepared trees (its own fit() would prepare them again)
        pcfg = PCFG(v=self.v, h=self.h, tag_parent=self.tag_parent, jobs=self.jobs)
        g = Grammar.from_trees(fine, pcfg.lexicon_options())
        nodes = extract_nodes(fine, g)
        # the coarse grammar (v=1, h=0) has the same tree shapes with base labels: count it
        # from the node arrays instead of binarising the treebank again
        coarse = _coarse_grammar(nodes, g, pcfg.lexicon_options())
        pcfg = pcfg.fit_prepared(fine, grammar=g, coarse=coarse,
                                 fit_time=time.perf_counter() - t0)
        return PreparedTreebank(n_trees=len(raw), grammar=g, nodes=nodes, pcfg=pcfg)

    def _binarized(self, trees) -> list:
        """``trees`` cleaned, unary-collapsed and binarised with this model's ``v``, ``h`` and
        ``tag_parent`` (the trees of the fine grammar)."""
        return [binarize(collapse_unary(clean(t)), self.v, self.h, self.tag_parent)
                for t in trees]

    # -- learning from partitions (the statistics protocol of fastspectral.base) -------------
    def prepare_partition(self, items) -> Partition:
        """A partition of treebank trees cleaned and binarised once for every pass.

        Parameters
        ----------
        items : iterable of Tree
            The partition's treebank trees (raw or cleaned).

        Returns
        -------
        Partition
            The binarised trees that have a word, and the number of trees read.
        """
        self._validate()
        raw = check_trees(items)
        return Partition(self._binarized(drop_empty_trees(raw)), len(raw))

    def _install(self, pcfg, arrays: LatentArrays) -> None:
        """Set the fitted attributes from ``pcfg`` and ``arrays``."""
        self.pcfg_ = pcfg
        self.lpcfg_ = arrays.lpcfg
        self.states_ = arrays.lpcfg.m
        self.vocab_ = list(arrays.vocab)
        self.word_index_ = {w: i for i, w in enumerate(self.vocab_)}
        self.lex_keys_ = arrays.lex_keys
        self.lex_off_ = arrays.lex_off
        self.lex_count_ = arrays.lex_count
        self.lex_rare_off_ = arrays.lex_rare_off
        self.lex_table_ = arrays.lex_table
        self.tag_count_ = arrays.tag_count
        self.log_rule_per_word_ = float(arrays.log_rule_per_word)
        self.sym_counts_ = arrays.sym_counts

    def _arrays(self) -> LatentArrays:
        """The installed :class:`LatentArrays`."""
        return LatentArrays(lpcfg=self.lpcfg_, vocab=self.vocab_, lex_keys=self.lex_keys_,
                            lex_off=self.lex_off_, lex_count=self.lex_count_,
                            lex_rare_off=self.lex_rare_off_, lex_table=self.lex_table_,
                            tag_count=self.tag_count_, log_rule_per_word=self.log_rule_per_word_,
                            sym_counts=self.sym_counts_)

    # -- lexical vectors ---------------------------------------------------------------------
    def _lexical_rows(self, lex_sym, lex_word):
        """The rows of the (tag, word) pairs ``(lex_sym, lex_word)`` in ``lex_keys_``:
        ``(k, hit)``, ``k[i]`` the row of pair ``i`` where ``hit[i]`` (a training pair; a word
        id < 0 is an unknown word, never a hit)."""
        V1 = len(self.vocab_) + 1
        key = lex_sym.astype(np.int64) * V1 + np.where(lex_word >= 0, lex_word, -10 ** 9)
        k = np.searchsorted(self.lex_keys_, key)
        k = np.minimum(k, len(self.lex_keys_) - 1)
        hit = (self.lex_keys_[k] == key) & (lex_word >= 0)
        return k, hit

    def _lexical_probs(self, lex_sym, lex_word, lex_prob):
        """P(word | p) per lexical entry: the PCFG lexicon, or relative frequencies (mle)."""
        if not self._uses_mle_lexicon():
            return lex_prob
        k, hit = self._lexical_rows(lex_sym, lex_word)
        out = np.zeros(len(lex_sym))
        out[hit] = self.lex_count_[k[hit]] / np.maximum(self.tag_count_[lex_sym[hit]], 1)
        return out

    def _leaf_offsets(self, lex_sym, lex_word):
        """Per lexical entry the offset of its latent lexical vector in ``lex_table_``: its
        pair's row, or the tag's rare-word row for a word not seen with the tag."""
        k, hit = self._lexical_rows(lex_sym, lex_word)
        off = self.lex_rare_off_[lex_sym].copy()
        off[hit] = self.lex_off_[k[hit]]
        return off

    # -- parsing -----------------------------------------------------------------------------
    @staticmethod
    def _run(grammar, ptr, ii, jj, ss, lw, lo, table, lens, jobs, max_bytes=0, T32=None):
        """The tensor inside-outside of a batch; ``max_bytes``: per-sentence chart budget
        (0: none; a sentence over it gets status ``OVER_BUDGET``); ``T32``: a float32 copy of
        the binary tensors for the products (see :meth:`_tensors_f32`)."""
        from .._ext.tensor_chart import inside_outside_batch

        g = grammar
        return inside_outside_batch(
            g.S, g.m, g.bin_parent, g.bin_left, g.bin_right, g.toff, g.T, g.rl_ptr, g.rl_rule,
            g.un_parent, g.un_child, g.uoff, g.U, g.uc_ptr, g.uc_rule, g.c1, g.c1off,
            lens, ptr, ii, jj, ss, lw, lo, table, n_threads=jobs, max_bytes=int(max_bytes or 0),
            T32=T32)

    def _tensors_f32(self):
        """The parse path's float32 copy of the binary rule tensors (made on first use, again
        after a refit or load; the model keeps float64 and saves float64).  The tensor products
        are memory-bound, and float32 halves their traffic; the inside / outside vectors and all
        sums stay float64.  Values below float32's smallest normal number (1.2e-38) become 0
        (denormals would be slow and carry nothing at that scale)."""
        T = self.lpcfg_.T
        hit = getattr(self, "_t32", None)
        if hit is not None and hit[0] is T:
            return hit[1]
        tiny = np.finfo(np.float32).tiny
        t32 = T.astype(np.float32)
        # |T| < tiny rounds to |t32| <= tiny: test only those entries in float64 (no temporary
        # arrays of the size of T)
        cand = np.flatnonzero(np.abs(t32) <= tiny)
        t32[cand[np.abs(T[cand]) < tiny]] = 0.0
        self._t32 = (T, t32)
        return t32

    def _parse_tables(self) -> _ParseTables:
        """The coarse-to-fine tables of ``pcfg_`` (built on first use, rebuilt after a refit)."""
        tables = getattr(self, "_tables", None)
        if tables is not None and tables.pcfg is self.pcfg_ and \
                (tables.xbar is not None) == bool(self.xbar_ratio):
            return tables
        from ..grammar.hierarchy import xbar_grammar

        pc = self.pcfg_
        cg, fg = pc.coarse_, pc.grammar_
        proj = pc.proj_
        order = np.argsort(proj, kind="stable").astype(np.int32)
        ptr = np.zeros(cg.n_symbols + 1, dtype=np.int32)
        np.cumsum(np.bincount(proj, minlength=cg.n_symbols), out=ptr[1:])
        tables = _ParseTables(pcfg=pc, coarse_lg=_pcfg_grammar(cg), fine_lg=_pcfg_grammar(fg),
                              coarse_un=np.unique(cg.un_parent).astype(np.int32),
                              coarse_bin=np.unique(cg.bin_parent).astype(np.int32),
                              c2f_ptr=ptr, c2f_sym=order,
                              fine_is_pre=fg.is_preterminal.astype(np.uint8),
                              xbar=xbar_grammar(cg) if self.xbar_ratio else None,
                              same=bool(fg.same_as(cg)))
        self._tables = tables
        return tables

    def _coarse_to_fine(self, sents, stags, jobs, coarse_threshold, tables,
                        max_bytes=0) -> _PrunedCharts:
        """The pruned L-PCFG charts of a batch (coarse PCFG -> PCFG cascade); the coarse pass
        prunes at ``coarse_threshold`` (None or 0: no coarse pruning); ``max_bytes``: chart
        budget of one sentence in the PCFG pass (0: none; ``over`` flags the sentences past it)."""
        from .._ext.tensor_chart import full_items, leaf_arrays, project_items
        from ..grammar.chart import pack_lexical, posterior_prune

        fg = self.pcfg_.grammar_
        lens = np.array([len(s) for s in sents], dtype=np.int32)
        _, fl_off, fl_pos, fl_sym, fl_prob = pack_lexical(fg, sents, stags)
        fl_pos = fl_pos.astype(np.int32)
        fl_sym = fl_sym.astype(np.int32)
        tok_off = np.zeros(len(sents) + 1, dtype=np.int64)
        np.cumsum(lens, out=tok_off[1:])
        fl_sent = np.repeat(np.arange(len(sents), dtype=np.int64), np.diff(fl_off))
        fl_tok = tok_off[:-1][fl_sent] + fl_pos
        # per-token scale shared by all passes (see the module docstring)
        smax = np.zeros(int(tok_off[-1]))
        np.maximum.at(smax, fl_tok, fl_prob)
        smax = np.where(smax > 0, smax, 1.0) * np.exp(self.log_rule_per_word_)
        one = np.ones(1)

        def level_lex(proj):
            # lexical entries of a coarser level: fine entries with projected tags (max prob)
            sym = proj[fl_sym]
            key = (fl_tok * (int(proj.max()) + 1) + sym)
            order = np.lexsort((-fl_prob, key))
            first = np.ones(order.shape[0], dtype=bool)
            first[1:] = key[order][1:] != key[order][:-1]
            keep = np.sort(order[first])
            off = np.zeros(len(sents) + 1, dtype=np.int64)
            np.cumsum(np.bincount(fl_sent[keep], minlength=len(sents)), out=off[1:])
            return off, fl_pos[keep], sym[keep].astype(np.int32), fl_prob[keep], fl_tok[keep]

        def run(lg, ptr, ii, jj, ss, lx, lprob, ltok):
            # leaf weights per lexical entry, spread over the items by a parallel kernel
            lw, lo = leaf_arrays(ptr, lx, lprob / smax[ltok], np.zeros(lprob.shape[0], np.int64),
                                 jobs)
            # MemoryError from the kernel when a chart cannot be allocated
            mu, Z, st = self._run(lg, ptr, ii, jj, ss, lw, lo, one, lens, jobs, max_bytes)
            return mu, Z, st == OVER_BUDGET

        # 1. coarse PCFG (v=1, h=0), exhaustive: the PCFG's dense CKY kernel is the fastest for
        #    full charts (measured about as fast as the scalar path of the tensor kernel and
        #    faster than an X-bar -> coarse cascade)
        threshold = 0.5
        if coarse_threshold:
            citems = posterior_prune(self.pcfg_.coarse_, sents, float(coarse_threshold), stags,
                                     jobs, tables.xbar,
                                     float(coarse_threshold) * float(self.xbar_ratio or 0.0))
            ptr = np.zeros(len(sents) + 1, dtype=np.int64)
            np.cumsum([len(x) for x in citems], out=ptr[1:])
            call = (np.concatenate(citems).astype(np.int32) if ptr[-1]
                    else np.zeros((0, 3), np.int32))
            ii, jj, ss = (np.ascontiguousarray(call[:, 0]), np.ascontiguousarray(call[:, 1]),
                          np.ascontiguousarray(call[:, 2]))
            mu = np.ones(ii.shape[0])
        else:
            c_off, c_pos, c_sym, c_prob, c_tok = level_lex(self.pcfg_.proj_)
            ptr, ii, jj, ss, _ = full_items(lens, c_off, c_pos, c_sym, tables.coarse_un,
                                            tables.coarse_bin)
            mu = np.ones(ii.shape[0])
        # 2. the plain PCFG over the coarse survivors
        ptr, ii, jj, ss, lx = project_items(lens, ptr, ii, jj, ss, mu, threshold, tables.c2f_ptr,
                                            tables.c2f_sym, tables.fine_is_pre, fl_off, fl_pos,
                                            fl_sym, n_threads=jobs)
        words_flat = np.array([self.word_index_.get(w, -1) for s in sents for w in s],
                              dtype=np.int64)
        if tables.same and coarse_threshold and self.skip_same_pcfg:
            # the PCFG is the coarse grammar (v=1, h=0): its pass would repeat the coarse pass
            # over the survivors; they go to the L-PCFG as they are, and the pass runs only on
            # demand (a sentence whose L-PCFG total is unusable: retry or fallback decision)
            def pcfg_pass(ptr=ptr, ii=ii, jj=jj, ss=ss, lx=lx):
                return run(tables.fine_lg, ptr, ii, jj, ss, lx, fl_prob, fl_tok)

            return _PrunedCharts(lens=lens, ptr=ptr, ii=ii, jj=jj, ss=ss, lx=lx,
                                 fl_prob=fl_prob, fl_sym=fl_sym, fl_tok=fl_tok, smax=smax,
                                 words_flat=words_flat, pcfg_ptr=ptr, pcfg_ii=ii, pcfg_jj=jj,
                                 pcfg_ss=ss, pcfg_mu=None, pcfg_z=None,
                                 over=np.zeros(len(sents), dtype=bool), pcfg_pass=pcfg_pass)
        mu, Zf, over = run(tables.fine_lg, ptr, ii, jj, ss, lx, fl_prob, fl_tok)
        # 3. L-PCFG items: the PCFG survivors
        S = fg.n_symbols
        ident_ptr = np.arange(S + 1, dtype=np.int32)
        ident = np.arange(S, dtype=np.int32)
        fptr, fii, fjj, fss, flx = project_items(lens, ptr, ii, jj, ss, mu,
                                                 float(self.prune_threshold or 0.0), ident_ptr,
                                                 ident, tables.fine_is_pre, fl_off, fl_pos,
                                                 fl_sym, n_threads=jobs)
        return _PrunedCharts(lens=lens, ptr=fptr, ii=fii, jj=fjj, ss=fss, lx=flx,
                             fl_prob=fl_prob, fl_sym=fl_sym, fl_tok=fl_tok, smax=smax,
                             words_flat=words_flat, pcfg_ptr=ptr, pcfg_ii=ii, pcfg_jj=jj,
                             pcfg_ss=ss, pcfg_mu=mu, pcfg_z=Zf, over=over)

    def _parse_chunk(self, sentences, tags, ids, jobs, stats, out, coarse_threshold, last,
                     tables, max_bytes=0, over=None):
        """Parse sentences ``ids`` into ``out`` (counting into ``stats``, the
        :class:`ParseStats` of this call); returns the ids whose pruned PCFG chart has no parse
        (left for a retry with less pruning) unless ``last``.  Sentences whose pruned charts
        pass ``max_bytes`` (per sentence; 0: no limit) are appended to ``over``, unparsed."""
        from .._ext.tensor_chart import decode_batch, leaf_arrays
        from ..grammar.chart import flat_tree, nodes_to_tree

        fg = self.pcfg_.grammar_
        sym_class = fg.sym_class.astype(np.int32)
        is_pre = fg.is_preterminal.astype(np.uint8)
        K = len(fg.classes)
        sents = [sentences[k] for k in ids]
        stags = None if tags is None else [tags[k] for k in ids]
        ch = self._coarse_to_fine(sents, stags, jobs, coarse_threshold, tables, max_bytes)
        lens, ptr, ii, jj, ss, lx = ch.lens, ch.ptr, ch.ii, ch.jj, ch.ss, ch.lx
        # leaf weights and table offsets per lexical entry (O(entries): this runs under the GIL
        # between the parallel kernels), spread over the items by a parallel kernel
        ent_word = ch.words_flat[ch.fl_tok]
        lw, lo = leaf_arrays(
            ptr, lx, self._lexical_probs(ch.fl_sym, ent_word, ch.fl_prob) / ch.smax[ch.fl_tok],
            np.ascontiguousarray(self._leaf_offsets(ch.fl_sym, ent_word), dtype=np.int64), jobs)
        mu, Z, st = self._run(self.lpcfg_, ptr, ii, jj, ss, lw, lo, self.lex_table_, lens, jobs,
                              max_bytes, self._tensors_f32())      # MemoryError: from the kernel
        # mu = alpha beta / Z is a ratio of two estimates; it is used whatever the sign of Z
        # (measured: better than falling back for Z < 0); only Z = 0 or a non-finite Z falls
        # back to the PCFG posteriors
        bad = ~(np.isfinite(Z) & (Z != 0))
        if np.any(bad):
            ch.ensure_pcfg()
        pcfg_ok = ch.pcfg_ok()
        over_mask = ch.over | (st == OVER_BUDGET)
        stats.negative_marginals += int(np.count_nonzero(mu < 0))
        mu = np.where(np.isfinite(mu), np.maximum(mu, 0.0), 0.0)
        nodes, nptr = decode_batch(lens, ptr, ii, jj, ss, mu, sym_class, is_pre, K, jobs)
        p_ptr = ch.pcfg_ptr
        nodes_p = nptr_p = None
        retry = []
        for r, k in enumerate(ids):
            if over_mask[r]:
                if over is not None:
                    over.append(k)
                continue
            if not pcfg_ok[r] and not last:
                retry.append(k)
                continue
            stats.items_pcfg += int(p_ptr[r + 1] - p_ptr[r])
            stats.items_lpcfg += int(ptr[r + 1] - ptr[r])
            stats.negative_z += int(Z[r] < 0)
            words = sentences[k]
            tri = None if bad[r] else nodes[nptr[r]:nptr[r + 1]]
            if tri is None or tri.shape[0] == 0 or np.any(tri[:, 2] < 0):
                # no usable L-PCFG marginals (Z = 0 or not finite, or a word whose tags all
                # got clipped): decode the plain PCFG's posteriors instead
                tri = None
                ch.ensure_pcfg()
                pcfg_ok = ch.pcfg_ok()
                if pcfg_ok[r] and not ch.over[r]:
                    if nodes_p is None:
                        nodes_p, nptr_p = decode_batch(lens, p_ptr, ch.pcfg_ii, ch.pcfg_jj,
                                                       ch.pcfg_ss, np.maximum(ch.pcfg_mu, 0.0),
                                                       sym_class, is_pre, K, jobs)
                    tri = nodes_p[nptr_p[r]:nptr_p[r + 1]]
                    if tri.shape[0] and not np.any(tri[:, 2] < 0):
                        stats.fallback_pcfg += 1
                    else:
                        tri = None
            if tri is None:
                stats.fallback_flat += 1
                out[k] = flat_tree(words, self.pcfg_.best_tags(
                    words, None if stags is None else stags[r]), self.pcfg_.root_label_)
                continue
            out[k] = nodes_to_tree(tri, words, fg.classes, fg.class_is_tag)
        return retry

    def parse(self, items, *, tags=None, jobs=None, progress=None, chunk_size=64) -> list:
        """Parse tokenised sentences; one :class:`~fastspectral.trees.Tree` per sentence
        (rooted at ``TOP``).

        Parameters
        ----------
        items : list of list of str
            The sentences (tokenised).
        tags : list, optional
            Given part-of-speech tags: one list (or None) per sentence.
        jobs : int, optional
            OpenMP threads (default: the model's ``jobs``, else every core available).
        progress : callable, optional
            ``progress(done, total)`` called as chunks of sentences finish.
        chunk_size : int, default 64
            Sentences per thread and chunk (memory bound of the charts).  The item arrays of
            a chunk are allocated afresh; at 256 the spectral model's PCFG pass (~27,000 items
            a sentence) made arrays of hundreds of MB whose page faults cost 10 % of its parse
            time (the kernel zeroing fresh pages), at 64 they are reused by the allocator.

        Returns
        -------
        list of Tree
            The parses, in order.  The counters of the call are in ``last_parse_stats_``
            (a :class:`ParseStats`).

        Sentences whose charts would exceed the memory budget ``max_memory`` (see
        :mod:`fastspectral._memory`) are not parsed: a warning names them, they get the flat
        tree over the best tags and are counted in ``last_parse_stats_.too_long``.
        """
        from threadpoolctl import threadpool_limits

        from .. import _memory
        from .._threads import map_groups, python_workers
        from ..grammar.chart import flat_tree
        from ..grammar.pcfg import _check_sentences

        if not isinstance(items, (list, tuple, str, bytes)):
            items = list(items)
        n_threads = self._check_parse_args(items, tags, jobs)
        sentences, tags = _check_sentences(items, tags)
        tables = self._parse_tables()
        self._tensors_f32()         # made here once, not by the worker threads at once
        out: list = [None] * len(sentences)
        todo = [k for k, s in enumerate(sentences) if s]
        for k, s in enumerate(sentences):
            if not s:
                out[k] = Tree("TOP", [])
        todo.sort(key=lambda k: -len(sentences[k]))
        stats = ParseStats(sentences=len(sentences), empty=len(sentences) - len(todo))
        if progress:
            progress(0, len(sentences))
        done = stats.empty
        chunk = max(1, chunk_size) * n_threads
        coarse = self.coarse_threshold
        # chart memory: the dense coarse chart is known before parsing; the pruned charts are
        # counted by the tensor kernel (a sentence over its share comes back in ``over``)
        budget = _memory.resolve_budget(self.max_memory)
        n_coarse = self.pcfg_.coarse_.n_symbols
        if tables.xbar is not None:     # its dense chart lives beside the coarse one
            n_coarse += len(tables.xbar.labels)
        need = {k: _memory.lpcfg_chart_bytes(len(sentences[k]), n_coarse) for k in todo}
        plan = _memory.plan(todo, need, budget, n_threads)
        refused = list(plan.refused)
        share = budget // n_threads if budget else 0
        batches = [(plan.parallel[c:c + chunk], n_threads, share)
                   for c in range(0, len(plan.parallel), chunk)]
        batches += [(plan.alone[c:c + max(1, chunk_size)], 1, budget or 0)
                    for c in range(0, len(plan.alone), max(1, chunk_size))]
        n_full = len(tables.coarse_un), len(tables.coarse_bin)

        levels = (coarse, *((coarse or 0) * f for f in self.retry_factors), None)

        def parse_levels(ids, threads, max_bytes, over, st, levels=levels):
            # coarse-to-fine can prune away every fine derivation (the coarse skeleton has
            # no v=2 refinement): such sentences are redone with a 1000x lower coarse
            # threshold, then with no coarse pruning at all; returns the ids still pending
            # after ``levels``
            pending = list(ids)
            for level in levels:
                if not pending:
                    break
                if not level and max_bytes:
                    # unpruned: every coarse item of the chart, about 40 bytes each
                    big = [k for k in pending if 40 * (len(sentences[k]) * n_full[0] + len(
                        sentences[k]) * (len(sentences[k]) - 1) // 2 * n_full[1]) > max_bytes]
                    over.extend(big)
                    big = set(big)
                    pending = [k for k in pending if k not in big]
                last = level is None or not coarse
                pending = self._parse_chunk(sentences, tags, pending, threads, st, out,
                                            level, last, tables, max_bytes, over)
                if not coarse:
                    break
            return pending

        # Groups of a chunk in flight at once (fastspectral._threads.map_groups): the NumPy
        # and tree-building steps between the kernels hold the GIL, and one group's Python work
        # overlaps the others' kernels.  Sentences are independent: the parses are the same.
        workers = python_workers(n_threads)
        pool = ThreadPoolExecutor(workers, thread_name_prefix="fastspectral-parse") \
            if workers > 1 else None

        def run_batch(ids, threads, max_bytes, batch_levels):
            # one batch at the given levels; returns the ids left for the later levels
            def run_group(group, group_threads):
                st, over = ParseStats(), []
                pend = parse_levels(group, group_threads, max_bytes, over, st, batch_levels)
                return st, over, pend

            over, pending = [], []
            for st, o, pend in map_groups(run_group, ids, threads, pool, workers):
                stats.add(st)
                over.extend(o)
                pending.extend(pend)
            if over and budget and max_bytes < budget:
                # over the share of one thread: parse them alone with the whole budget
                again: list = []
                parse_levels(over, 1, budget, again, stats)
                over = again
            refused.extend(over)
            return pending

        # Sentences with no parse in their pruned charts (25 of the 1,700 §22 sentences for the
        # spectral model) are retried at the later levels.  With one Python worker (fewer than 4
        # threads) the first level runs for every batch and the sentences it left run together
        # afterwards, longest first: retried batch by batch they made calls of one to five
        # sentences that left threads idle.  With several workers each group retries its own
        # while the other groups' first levels run, which hides the retries' cost.
        first = levels[:1] if workers < 2 else levels
        deferred: dict = {}
        try:
            with threadpool_limits(limits=1):
                for ids, threads, max_bytes in batches:
                    pending = run_batch(ids, threads, max_bytes, first)
                    deferred.setdefault((threads, max_bytes), []).extend(pending)
                    done += len(ids) - len(pending)
                    if progress:
                        progress(done, len(sentences))
                for (threads, max_bytes), ids in deferred.items():
                    ids.sort(key=lambda k: -len(sentences[k]))
                    step = chunk if threads > 1 else max(1, chunk_size)
                    for c in range(0, len(ids), step):
                        run_batch(ids[c:c + step], threads, max_bytes, levels[1:])
                        done += len(ids[c:c + step])
                        if progress:
                            progress(done, len(sentences))
        finally:
            if pool is not None:
                pool.shutdown()
        for k in refused:
            out[k] = flat_tree(sentences[k], self.pcfg_.best_tags(
                sentences[k], None if tags is None else tags[k]), self.pcfg_.root_label_)
        if refused:
            stats.too_long = len(refused)
            _memory.warn_refused(refused, sentences, {k: need[k] for k in plan.refused},
                                 budget, "the flat tree over the best tags")
            if progress:
                progress(len(sentences), len(sentences))
        self.last_parse_stats_ = stats
        return out

    # -- tree scoring ------------------------------------------------------------------------
    def tree_probability(self, tree) -> float:
        """The model's estimate of ``p(tree)`` for a treebank tree.

        The tree is prepared like the training trees.  Spectral estimates may be negative or
        zero; with an MLE lexicon an unseen (tag, word) pair gives 0.

        Parameters
        ----------
        tree : Tree
            A treebank tree (raw or cleaned).

        Returns
        -------
        float
        """
        from ..base import check_trees
        from ..trees.tree import TreeArrays

        self._check_fitted()
        tree = check_trees([tree], "tree")[0]          # an nltk.Tree converted
        fg = self.pcfg_.grammar_
        t = prepare(tree, self.v, self.h, self.tag_parent)
        top = t.children[0] if (t.label == "TOP" and len(t.children) == 1) else t
        try:
            ta = TreeArrays.from_tree(top, fg.sym_index)
        except KeyError:
            return 0.0
        N = len(ta.label)
        sym = ta.label.tolist()
        par = ta.parent.tolist()
        left = [-1] * N
        right = [-1] * N
        for q in range(1, N):
            p = par[q]
            if q == p + 1:
                left[p] = q
            else:
                right[p] = q
        words = ta.words
        pre = [q for q in range(N) if ta.n_children[q] == 0]
        psym = np.array([sym[q] for q in pre], dtype=np.int32)
        wid = np.array([self.word_index_.get(w, -1) for w in words], dtype=np.int64)
        if not self._uses_mle_lexicon():
            lexp = fg.lexicon.tag_word_scores(words)[np.arange(len(words)), psym]
        else:
            lexp = self._lexical_probs(psym, wid, None)
        offs = self._leaf_offsets(psym, wid)
        leaf = [None] * N
        g = self.lpcfg_
        for k, q in enumerate(pre):
            mq = int(g.m[sym[q]])
            leaf[q] = lexp[k] * self.lex_table_[offs[k]:offs[k] + mq]
        return g.tree_weight(sym, left, right, leaf)

    def _log_likelihood(self, trees) -> float:
        """Total log-probability of ``trees`` (``tree_probability``, floored at 1e-320)."""
        from ..base import check_trees
        trees = check_trees(trees)
        return float(sum(math.log(max(self.tree_probability(t), 1e-320)) for t in trees))

    # -- model files -------------------------------------------------------------------------
    def _file_params(self) -> dict:
        """Hyperparameters written to model files (JSON values)."""
        return self.get_params(deep=False)

    def _model_file(self) -> tuple[dict, dict]:
        pmeta, parr = self.pcfg_.state()
        arrays = {"pcfg_" + k: v for k, v in parr.items()}
        arrays.update(self.lpcfg_.arrays("lpcfg_"))
        arrays.update({"lex_keys": self.lex_keys_, "lex_off": self.lex_off_,
                       "lex_count": self.lex_count_, "lex_rare_off": self.lex_rare_off_,
                       "lex_table": self.lex_table_, "tag_count": self.tag_count_,
                       "sym_counts": np.asarray(self.sym_counts_, dtype=np.int64)})
        meta = {"params": self._file_params(), "pcfg": pmeta, "vocab": self.vocab_,
                "log_rule_per_word": self.log_rule_per_word_,
                "n_train_trees": self.n_train_trees_, "fit_time": self.fit_time_}
        return meta, arrays

    @classmethod
    def _from_model_file(cls, meta: dict, arrays: dict):
        """The model of a model file's ``(meta, arrays)``; every array is validated before use
        (:mod:`fastspectral.io.validate`), a bad one raises
        :class:`~fastspectral.errors.ModelFileError` naming it."""
        from ..errors import ModelFileError
        from ..grammar.pcfg import PCFG

        try:
            model = cls(**cls._params_from_file(meta["params"]))
            model._check_common_params()
            pcfg = PCFG.from_state(meta["pcfg"], arrays, "pcfg_")
            if pcfg.coarse_ is None:   # every L-PCFG parse prunes with the coarse grammar
                raise ModelFileError("meta 'pcfg': the coarse grammar ('coarse') is missing")
            lpcfg = LatentGrammar.from_arrays(arrays, "lpcfg_", pcfg.grammar_.n_symbols)
            lex = _validated_lexical(meta, arrays, lpcfg.m)
            model._install(pcfg, LatentArrays(lpcfg=lpcfg, **lex))
            model.n_train_trees_ = meta["n_train_trees"]
            # files written before the estimator reshaping call the fit time "fit_seconds"
            model.fit_time_ = meta.get("fit_time", meta.get("fit_seconds"))
        except ModelFileError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            what = f"missing entry {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ModelFileError(f"corrupt {cls.kind!r} model file ({what})") from None
        return model


class ProbabilisticLPCFGBase(LatentPCFGBase):
    """Base of the L-PCFG learners whose parameters are genuine probabilities
    (:class:`~fastspectral.lpcfg.pivot.PivotLPCFG`, :class:`~fastspectral.lpcfg.em.EMLPCFG`):
    what they add to :class:`LatentPCFGBase` is the training log-likelihood and the checks of
    the hyperparameters both have (``rare_threshold``, ``parent_smoothing``); not a learner
    itself."""

    def _check_probabilistic_params(self) -> None:
        """Validate the hyperparameters of :class:`LatentPCFGBase` and ``rare_threshold``
        (an integer >= 0) and ``parent_smoothing`` (in [0, 1))."""
        self._check_common_params()
        _check_int("rare_threshold", self.rare_threshold, 0)
        if not (isinstance(self.parent_smoothing, (int, float, np.integer, np.floating))
                and 0.0 <= self.parent_smoothing < 1.0):
            raise ValueError(f"parent_smoothing must be in [0, 1), got {self.parent_smoothing!r}")

    def log_likelihood(self, trees) -> float:
        """Total log-probability of treebank ``trees`` under the model (prepared and scored as
        :meth:`tree_probability`: the PCFG's smoothed ``P(w | p)`` times the latent ratios)."""
        self._check_fitted()
        return self._log_likelihood(trees)


def _validated_lexical(meta: dict, arrays: dict, m: np.ndarray) -> dict:
    """The lexical arrays of an L-PCFG model file, validated against the latent sizes ``m``:
    the keys ``symbol * (V + 1) + word`` sorted and in range, every vector offset (per key and
    the rare-word one per symbol, -1 for none) inside ``lex_table``, counts >= 0."""
    from ..io import validate as V

    S = m.shape[0]
    vocab = V.meta_list(meta, "vocab", str)
    V1 = len(vocab) + 1
    table = V.get(arrays, "lex_table", "float", dtype=np.float64)
    V.check_finite(table, "lex_table")
    keys = V.get(arrays, "lex_keys", "int", dtype=np.int64)
    V.check_index(keys, "lex_keys", 0, S * V1)
    V.check_sorted(keys, "lex_keys")
    if keys.size and np.any(keys % V1 == len(vocab)):
        V.fail("lex_keys", "a key names no word of the vocabulary")
    K = keys.shape[0]
    off = V.get(arrays, "lex_off", "int", shape=(K,), dtype=np.int64)
    V.check_spans(off, m[keys // V1], "lex_off", table.shape[0])
    count = V.check_nonneg(V.get(arrays, "lex_count", "float", shape=(K,)), "lex_count")
    rare = V.get(arrays, "lex_rare_off", "int", shape=(S,), dtype=np.int64)
    V.check_spans(rare, m, "lex_rare_off", table.shape[0], allow_missing=True)
    tag_count = V.check_nonneg(V.get(arrays, "tag_count", "float", shape=(S,)), "tag_count")
    sym_counts = V.check_nonneg(V.get(arrays, "sym_counts", "float", shape=(S,)), "sym_counts")
    lrw = V.meta_float(meta, "log_rule_per_word", -np.inf)
    return dict(vocab=list(vocab), lex_keys=keys, lex_off=off, lex_count=count,
                lex_rare_off=rare, lex_table=table, tag_count=tag_count,
                log_rule_per_word=lrw, sym_counts=sym_counts)
