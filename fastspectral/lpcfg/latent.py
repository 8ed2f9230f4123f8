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
* coarse-to-fine parsing (:meth:`LatentPCFGBase.parse`, :mod:`fastspectral.lpcfg.coarse_to_fine`);
* :meth:`LatentPCFGBase.tree_probability` and the model files (``_model_file`` /
  ``_from_model_file``).

Hyperparameters the base reads (every learner has them): ``v``, ``h``, ``tag_parent``,
``prune_threshold``, ``coarse_threshold``, ``jobs``.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..base import Interval, Parser, Partition, PartitionedFit, check_jobs
from ..grammar.grammar import check_trees
from ..trees.transforms import binarize, clean, collapse_unary, drop_empty_trees, prepare
from .coarse_to_fine import CoarseToFineParser, ParseStats
from .features import extract_nodes
from .params import LatentGrammar

__all__ = ["LatentPCFGBase", "ProbabilisticLPCFGBase", "LatentArrays", "ParseStats",
           "PreparedTreebank", "log_rule_per_word", "log_rule_sum"]


# ================================================================================================
# small records
# ================================================================================================
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


# ================================================================================================
# grammars
# ================================================================================================
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
class LatentPCFGBase(CoarseToFineParser, PartitionedFit, Parser):
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
    pruner_ : LatentPCFGBase or None
        The pruning model of ``pruner_states`` (the same learner with fewer states, on the
        same PCFG), None without one.
    last_parse_stats_ : ParseStats
        Counters of the last :meth:`parse` call.
    """

    input_kind = "sentences"
    #: the hyperparameters every L-PCFG has
    _parameter_constraints = {
        "n_states": Interval(int, 1), "n_states_pre": Interval(int, 1, allow_none=True),
        "v": Interval(int, 1), "h": Interval(int, 0, allow_none=True),
        "min_count": Interval(int, 1),
        "prune_threshold": Interval(float, 0.0, 1.0, allow_none=True),
        "coarse_threshold": Interval(float, 0.0, 1.0, allow_none=True),
        "pruner_states": Interval(int, 1, allow_none=True),
        "pruner_threshold": Interval(float, 0.0, 1.0),
        "state_map": "dict or None",
    }

    # -- shared checks -----------------------------------------------------------------------
    def _check_params(self) -> None:
        """The checks of every L-PCFG beyond the table: threads, seed, the pruner's states."""
        if self.jobs is not None:
            check_jobs(self.jobs)
        if self.random_state is not None:
            resolve_random_state(self.random_state)
        for sym, k in (self.state_map or {}).items():
            if not isinstance(sym, str) or isinstance(k, bool) or not isinstance(
                    k, (int, np.integer)) or k < 1:
                raise ValueError(f"state_map must map symbol names to states >= 1, got "
                                 f"{sym!r}: {k!r}")
        if self.pruner_states is not None and self.pruner_states >= self.n_states:
            raise ValueError(f"pruner_states ({self.pruner_states}) must be below n_states "
                             f"({self.n_states}): the pruning model is the cheaper one")

    def _uses_mle_lexicon(self) -> bool:
        """True when ``P(word | p)`` is the relative frequency (unknown words 0) instead of the
        PCFG's smoothed lexicon (only :class:`SpectralLPCFG` with ``lexicon="mle"``)."""
        return False

    # -- learning ----------------------------------------------------------------------------
    def fit(self, X, **fit_params):
        """Estimate the model from treebank trees.

        Parameters
        ----------
        X : iterable of Tree
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

        self._validate_params()
        seed = resolve_random_state(self.random_state)
        t0 = time.perf_counter()
        # the learners' products and SVDs are small: BLAS threads only add contention (NumPy's
        # and SciPy's BLAS); the cyclic GC would re-traverse the (acyclic) prepared trees again
        # and again
        with blas_single_thread(), _gc.paused():
            prep = self._prepare_treebank(X, t0)
            # the pruning model first: a model saved by a callback of the learner's step (EM's
            # iterations) then holds it
            self.pruner_ = self._fit_pruner(prep, seed)
            arrays = self._learn_prepared(prep, seed, **fit_params)
        self._install(prep.pcfg, arrays)
        self.n_train_trees_ = prep.n_trees
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _fit_pruner(self, prep: PreparedTreebank, seed: int):
        """The pruning model of ``pruner_states`` (None without): the same learner with
        ``pruner_states`` states (and at most as many for pre-terminals), fitted on the same
        prepared treebank, so it has the same PCFG, symbols and vocabulary."""
        if self.pruner_states is None:
            return None
        from sklearn.base import clone

        m = self.pruner_states
        pre = None if self.n_states_pre is None else min(self.n_states_pre, m)
        # no symbol of the pruner has more states than pruner_states
        smap = None if self.state_map is None else {
            sym: min(int(k), m) for sym, k in self.state_map.items()}
        pruner = clone(self).set_params(n_states=m, n_states_pre=pre, pruner_states=None,
                                        state_map=smap)
        t0 = time.perf_counter()
        arrays = pruner._learn_prepared(prep, seed)
        pruner._install(prep.pcfg, arrays)
        pruner.n_train_trees_ = prep.n_trees
        pruner.fit_time_ = time.perf_counter() - t0
        return pruner

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
        self._validate_params()
        if self.pruner_states is not None:
            raise ValueError("pruner_states: learning from partitions trains no pruning model; "
                             "use fit, or pruner_states=None")
        raw = check_trees(items)
        return Partition(self._binarized(drop_empty_trees(raw)), len(raw))

    def _install(self, pcfg, arrays: LatentArrays) -> None:
        """Set the fitted attributes from ``pcfg`` and ``arrays`` (a pruning model ``pruner_``
        fitted on another PCFG than ``pcfg`` is dropped)."""
        pruner = getattr(self, "pruner_", None)
        if pruner is None or pruner.pcfg_ is not pcfg:
            self.pruner_ = None
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

    def float32_tensors(self):
        """Keep the binary rule tensors in float32 only (half the model file, a memory-mapped
        file parsed without a copy of its tensors); returns ``self``.

        The tensors become the parse path's float32 copy (:meth:`_tensors_f32`), so the
        tensor products of parsing read the same numbers as before; only the weights of rules
        whose three symbols have one state each, which parsing reads in float64 otherwise, and
        scores computed from the tensors (tree probabilities) change by float32 rounding
        (relative 6e-8).  The model file keeps the float32 tensors, and loading keeps them.
        The pruning model (``pruner_``), if any, is converted too."""
        self._check_fitted()
        self.lpcfg_.T = self._tensors_f32()
        self._t32 = None
        if getattr(self, "pruner_", None) is not None:
            self.pruner_.float32_tensors()
        return self

    def _latent_file(self) -> tuple[dict, dict]:
        """``(meta, arrays)`` of the fitted latent state alone: the latent grammar, the lexical
        tables and the settings (what a pruning model adds to its model's file)."""
        arrays = self.lpcfg_.arrays("lpcfg_")
        arrays.update({"lex_keys": self.lex_keys_, "lex_off": self.lex_off_,
                       "lex_count": self.lex_count_, "lex_rare_off": self.lex_rare_off_,
                       "lex_table": self.lex_table_, "tag_count": self.tag_count_,
                       "sym_counts": np.asarray(self.sym_counts_, dtype=np.int64)})
        meta = {"params": self._file_params(), "log_rule_per_word": self.log_rule_per_word_,
                "n_train_trees": self.n_train_trees_, "fit_time": self.fit_time_}
        return meta, arrays

    def _model_file(self) -> tuple[dict, dict]:
        pmeta, parr = self.pcfg_.state()
        meta, arrays = self._latent_file()
        arrays.update({"pcfg_" + k: v for k, v in parr.items()})
        meta.update({"pcfg": pmeta, "vocab": self.vocab_})
        if getattr(self, "pruner_", None) is not None:
            # the pruning model: its latent state (it shares this model's PCFG and vocabulary)
            meta["pruner"], parr_p = self.pruner_._latent_file()
            arrays.update({"pruner_" + k: v for k, v in parr_p.items()})
        return meta, arrays

    @classmethod
    def _latent_from_file(cls, meta: dict, arrays: dict, pcfg, vocab_meta: dict):
        """A model of this class on ``pcfg`` from the latent state of a file (``meta``: its
        ``params``, ``n_train_trees``, ...; ``arrays``: its ``lpcfg_*`` and lexical arrays;
        ``vocab_meta``: where its ``vocab`` is), every array validated."""
        model = cls(**cls._params_from_file(meta["params"]))
        model._validate_params()
        lpcfg = LatentGrammar.from_arrays(arrays, "lpcfg_", pcfg.grammar_.n_symbols)
        lex = _validated_lexical({**meta, "vocab": vocab_meta["vocab"]}, arrays, lpcfg.m)
        model._install(pcfg, LatentArrays(lpcfg=lpcfg, **lex))
        model.n_train_trees_ = meta["n_train_trees"]
        # files written before the estimator reshaping call the fit time "fit_seconds"
        model.fit_time_ = meta.get("fit_time", meta.get("fit_seconds"))
        return model

    @classmethod
    def _from_model_file(cls, meta: dict, arrays: dict):
        """The model of a model file's ``(meta, arrays)``; every array is validated before use
        (:mod:`fastspectral.io.validate`), a bad one raises
        :class:`~fastspectral.errors.ModelFileError` naming it."""
        from ..errors import ModelFileError
        from ..grammar.pcfg import PCFG

        try:
            cls(**cls._params_from_file(meta["params"]))._validate_params()
            pcfg = PCFG.from_state(meta["pcfg"], arrays, "pcfg_")
            if pcfg.coarse_ is None:   # every L-PCFG parse prunes with the coarse grammar
                raise ModelFileError("meta 'pcfg': the coarse grammar ('coarse') is missing")
            model = cls._latent_from_file(meta, arrays, pcfg, meta)
            model.pruner_ = cls._pruner_from_file(meta, arrays, pcfg)
            if (model.pruner_ is None) != (model.pruner_states is None):
                raise ModelFileError("params 'pruner_states' and the pruning model "
                                     "('pruner') disagree")
        except ModelFileError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            what = f"missing entry {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ModelFileError(f"corrupt {cls.kind!r} model file ({what})") from None
        return model

    @classmethod
    def _pruner_from_file(cls, meta: dict, arrays: dict, pcfg):
        """The pruning model of a model file (None when it has none), on ``pcfg``."""
        from ..errors import ModelFileError

        pmeta = meta.get("pruner")
        if pmeta is None:
            return None
        if not isinstance(pmeta, dict):
            raise ModelFileError("meta 'pruner' is not a mapping")
        sub = {k[len("pruner_"):]: v for k, v in arrays.items() if k.startswith("pruner_")}
        pruner = cls._latent_from_file(pmeta, sub, pcfg, meta)
        if pruner.pruner_states is not None:
            raise ModelFileError("meta 'pruner': a pruning model has no pruner of its own")
        return pruner


class ProbabilisticLPCFGBase(LatentPCFGBase):
    """Base of the L-PCFG learners whose parameters are genuine probabilities
    (:class:`~fastspectral.lpcfg.pivot.PivotLPCFG`, :class:`~fastspectral.lpcfg.em.EMLPCFG`):
    what they add to :class:`LatentPCFGBase` is the training log-likelihood and the checks of
    the hyperparameters both have (``rare_threshold``, ``parent_smoothing``); not a learner
    itself."""

    _parameter_constraints = {"rare_threshold": Interval(int, 0),
                              "parent_smoothing": Interval(float, 0.0, 1.0)}

    def log_likelihood(self, trees) -> tuple[float, int]:
        """``(total log-probability, number of words)`` of treebank ``trees`` under the model
        (prepared and scored as :meth:`tree_probability`: the PCFG's smoothed ``P(w | p)``
        times the latent ratios; the words of the cleaned trees), the pair every model's
        ``log_likelihood`` returns."""
        from ..base import check_trees

        self._check_fitted()
        trees = check_trees(trees)
        return self._log_likelihood(trees), sum(len(clean(t).leaves()) for t in trees)


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
