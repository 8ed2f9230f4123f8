"""EM for latent-variable PCFGs (Matsuzaki et al. 2005; Petrov et al. 2006) on gold skeletal trees.

The model
---------
The treebank is cleaned, unary-collapsed and binarised exactly as for the spectral L-PCFG (the
symbol and rule sets are those of the plain PCFG with the same ``v``/``h``).  Every symbol ``a``
seen at least ``min_count`` times gets ``m_a = n_states`` latent states (pre-terminals
``n_states_pre``), the others one.  The parameters are genuine probabilities:

* ``t(a -> b c, h2, h3 | a, h1)`` (binary tensors) and ``t(a -> p, h2 | a, h1)`` (unary
  matrices), normalised over all rules of ``a`` and child states for every ``(a, h1)``;
* ``pi(a, h) = P(root = a, h)``;
* emissions ``q(w | p, h) = P(w | p) * q(k(w) | p, h) / P(k(w) | p)`` with ``k(w)`` the word's
  *lexical class*: the word itself when it occurs more than ``rare_threshold`` times in training,
  else the per-tag class "rare" (shared by all rare and unknown words of ``p``).  ``P(w | p)`` is
  the non-latent PCFG lexicon (relative frequencies while training; the smoothed PCFG lexicon with
  unknown-word signatures when parsing), so only the latent *ratio* ``q(k | p, h) / P(k | p)`` is
  learnt and stored (the lexical table of :class:`~fastspectral.lpcfg.latent.LatentPCFGBase`).

E-step (:func:`~fastspectral.lpcfg.latent_params.e_step`): inside-outside over the gold tree with
the latent annotations (compiled with Numba, parallel over trees; each inside/outside vector is
rescaled to max 1 with a log scale so long sentences do not underflow), then expected rule counts
per rule (parallel over rules, race free).
M-step (:func:`~fastspectral.lpcfg.latent_params.m_step`): relative frequencies of the expected
counts, optionally smoothed towards the average over the parent's states (Petrov et al. 2006:
``t' = (1 - alpha) t + alpha * mean_h1 t`` with ``alpha = parent_smoothing``; ``alpha = 0`` is
exact EM and the training log-likelihood never decreases).

Initialisation: ``init="random"`` spreads the PCFG's relative frequencies uniformly over the
latent states and multiplies every entry by ``1 + noise * U(-1, 1)`` (symmetry breaking);
``init="pivot"`` starts from the estimates of :class:`~fastspectral.lpcfg.pivot.PivotLPCFG`
("Pivot+EM", Cohen & Collins 2014, section 6.3) mixed with ``init_mix`` of the uniform spread so
no entry is exactly zero (EM cannot revive a zero).

Parsing is that of every L-PCFG: coarse-to-fine pruning with the plain PCFG, the compiled tensor
inside-outside over the surviving items, max-recall decoding (see
:class:`~fastspectral.lpcfg.latent.LatentPCFGBase`).  Marginals are never negative here.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..base import Interval
from .latent import ProbabilisticLPCFGBase, resolve_random_state
from typing import TYPE_CHECKING

# The learners' modules (Numba kernels, SciPy sparse) are imported where they are used, so that
# loading a model file to parse imports neither (docs/notes/throughput.md, "Loading").
if TYPE_CHECKING:  # pragma: no cover
    from .latent_params import LatentLayout, LatentParams
    from .pivot import PivotLPCFG

__all__ = ["EMLPCFG"]

#: the options of :class:`~fastspectral.lpcfg.pivot.PivotLPCFG` that ``pivot_options`` may set
#: (the others are EM's own: the pivot start runs on EM's treebank layout)
PIVOT_OPTIONS = ("feature_pairs", "anchor_min_count", "mixture_iterations", "mixture_tol",
                 "mdp_em_iterations", "parent_smoothing", "random_state", "jobs")


@dataclass
class _EMRun:
    """What the EM loop returns: the final parameters and ``(iteration, log-likelihood before
    the M-step, seconds)`` per iteration."""

    params: LatentParams
    history: list


class EMLPCFG(ProbabilisticLPCFGBase):
    """Latent-variable PCFG trained by EM on gold skeletal trees (see the module docstring).

    Every frequent symbol gets ``n_states`` latent states; EM (Matsuzaki et al. 2005) from a
    random start, or from the pivot estimates of Cohen & Collins (2014) ("Pivot+EM"), learns
    genuine probabilities.  Parsing is coarse-to-fine with max-expected-recall decoding.

    Parameters
    ----------
    n_states : int, default 16
        Latent states of every symbol seen at least ``min_count`` times.
    iterations : int or None, default None
        EM iterations; None: 50 from a random start, 4 from the pivot start (where the
        WSJ-sample dev F1 peaks: EM 40-60, Pivot+EM 1-4).
    init : {"random", "pivot"}, default "random"
        ``"random"``: the PCFG spread over the states with multiplicative noise;
        ``"pivot"``: start from :class:`~fastspectral.lpcfg.pivot.PivotLPCFG`'s estimates.
    noise : float, default 0.2
        Symmetry-breaking noise of the random start (entries times ``1 + noise * U(-1, 1)``).
    init_mix : float, default 0.01
        Weight in [0, 1] of the uniform spread mixed into a pivot start (no zero entries).
    parent_smoothing : float, default 0.1
        ``alpha`` in [0, 1) of the M-step smoothing toward the mean over the parent's states
        (Petrov et al. 2006; 0: exact EM).
    tol : float, default 0.0
        Stop when the relative log-likelihood gain of an iteration falls below ``tol`` (0:
        always run ``iterations``).
    pivot_options : dict or None, default None
        Options of the pivot start (``init="pivot"``): keyword arguments of
        :class:`~fastspectral.lpcfg.pivot.PivotLPCFG` among ``feature_pairs``,
        ``anchor_min_count``, ``mixture_iterations``, ``mixture_tol``, ``mdp_em_iterations``,
        ``parent_smoothing``, ``random_state`` and ``jobs`` (the last two default to EM's).
    n_states_pre : int or None, default None
        Latent states of pre-terminals (None: ``n_states``).
    v : int, default 1
        Vertical markovisation of the underlying PCFG.
    h : int or None, default 0
        Horizontal markovisation (None: infinite).
    tag_parent : bool, default False
        Parent-annotate pre-terminals.
    min_count : int, default 20
        Symbols with fewer training nodes keep one state.
    rare_threshold : int, default 1
        Words seen at most this often share their tag's "rare" lexical class.
    prune_threshold : float or None, default 1e-4
        Posterior threshold of the plain PCFG pass of parsing.
    coarse_threshold : float or None, default 1e-3
        Posterior threshold of the coarse (v=1, h=0) pass before it.
    pruner_states : int or None, default None
        Latent states of a pruning model fitted beside this one (the same learner and
        settings with fewer states, on the same prepared trees; ``pruner_``): parsing runs it
        over the items that survive the PCFG passes and gives this model's pass only those
        whose marginal under it is at least ``pruner_threshold`` (one more level of Petrov &
        Klein's coarse-to-fine hierarchy).  None: no pruning model.
    pruner_threshold : float, default 1e-4
        Marginal threshold of the pruning model's pass.
    random_state : int or None, default 0
        Seed of the random start (and default seed of the pivot start; None: fresh entropy).
    jobs : int or None, default None
        Threads of training and default number of parsing threads (None: every core).
    state_map : dict or None, default None
        ``{symbol: m}`` overriding the states of single symbols (for experiments).

    Attributes
    ----------
    pcfg_ : PCFG
        The plain PCFG of the training trees (pruning and fallback).
    lpcfg_ : LatentGrammar
        ``t(a -> b c, h2, h3 | a, h1)``, ``t(a -> p, h2 | a, h1)`` and ``pi(a, h)``.
    params_ : LatentParams
        The same parameters in the treebank layout (with the lexical-class ratios).
    history_ : list of tuple
        ``(iteration, training log-likelihood before the M-step, seconds)`` per iteration.
    n_iter_ : int
        EM iterations run.
    states_ : numpy.ndarray
        Latent states of every symbol.
    vocab_, lex_table_, sym_counts_, n_train_trees_, fit_time_, pruner_, last_parse_stats_
        As :class:`~fastspectral.lpcfg.latent.LatentPCFGBase`.

    References
    ----------
    Matsuzaki, Miyao, Tsujii (2005). Probabilistic CFG with latent annotations. ACL.  Section
    3.1 (the E-step on gold skeletal trees).

    Petrov, Barrett, Thibaux, Klein (2006). Learning accurate, compact, and interpretable tree
    annotation. COLING-ACL.  Section 2.3 (smoothing toward the parent's states).

    Cohen, Collins (2014). A provably correct learning algorithm for latent-variable PCFGs.
    ACL.  Section 6.3 (EM initialised with the pivot estimates, "Pivot+EM").

    Examples
    --------
    >>> from fastspectral.lpcfg import EMLPCFG
    >>> from fastspectral.synthetic import LatentPCFG
    >>> grammar = LatentPCFG.default(n_states=2, seed=0)
    >>> train = grammar.sample(200, seed=1)
    >>> model = EMLPCFG(n_states=2, iterations=5, min_count=5, jobs=1).fit(train)
    >>> model.n_iter_
    5
    >>> lls = [ll for _, ll, _ in model.history_]
    >>> all(b >= a for a, b in zip(lls, lls[1:])) or lls
    True
    >>> words = train[0].leaves()
    >>> model.parse([words])[0].leaves() == words
    True
    """

    kind = "em-lpcfg"
    _renamed_params = {"seed": "random_state", "smoothing": "parent_smoothing"}
    _parameter_constraints = {
        "iterations": Interval(int, 0, allow_none=True), "init": {"random", "pivot"},
        "init_mix": Interval(float, 0.0, 1.0, closed="both"), "noise": Interval(float, 0.0),
        "tol": Interval(float, 0.0)}

    def __init__(self, n_states=16, iterations=None, init="random", noise=0.2, init_mix=0.01,
                 parent_smoothing=0.1, tol=0.0, pivot_options=None, n_states_pre=None, v=1, h=0,
                 tag_parent=False, min_count=20, rare_threshold=1, prune_threshold=1e-4,
                 coarse_threshold=1e-3, pruner_states=None, pruner_threshold=1e-4, random_state=0,
                 jobs=None, state_map=None):
        self.n_states = n_states
        self.iterations = iterations
        self.init = init
        self.noise = noise
        self.init_mix = init_mix
        self.parent_smoothing = parent_smoothing
        self.tol = tol
        self.pivot_options = pivot_options
        self.n_states_pre = n_states_pre
        self.v = v
        self.h = h
        self.tag_parent = tag_parent
        self.min_count = min_count
        self.rare_threshold = rare_threshold
        self.prune_threshold = prune_threshold
        self.coarse_threshold = coarse_threshold
        self.pruner_states = pruner_states
        self.pruner_threshold = pruner_threshold
        self.random_state = random_state
        self.jobs = jobs
        self.state_map = state_map

    def _check_params(self):
        super()._check_params()
        if self.pivot_options is not None and not isinstance(self.pivot_options, dict):
            raise TypeError(f"pivot_options must be None or a dict, got {self.pivot_options!r}")
        unknown = sorted(set(self.pivot_options or {}) - set(PIVOT_OPTIONS))
        if unknown:
            raise ValueError(f"pivot_options: unknown option(s) {', '.join(unknown)} (valid: "
                             f"{', '.join(PIVOT_OPTIONS)})")
        if self.init == "pivot" and self.pivot_options:
            # the pivot learner's own checks (without options it has its defaults and EM's
            # seed and jobs, checked above: loading a model file then imports no pivot code)
            self._pivot_model(0)._validate_params()

    @property
    def n_iterations(self) -> int:
        """The number of EM iterations ``fit`` runs (``iterations`` or its default)."""
        if self.iterations is not None:
            return int(self.iterations)
        return 4 if self.init == "pivot" else 50

    # ------------------------------------------------------------------ learning
    def _pivot_model(self, seed: int) -> PivotLPCFG:
        """The :class:`PivotLPCFG` of the pivot start (``pivot_options``; ``random_state`` and
        ``jobs`` default to EM's)."""
        from .pivot import PivotLPCFG

        opts = dict(self.pivot_options or {})
        opts.setdefault("random_state", seed)
        opts.setdefault("jobs", self.jobs)
        return PivotLPCFG(**opts)

    def _initial_params(self, layout: LatentLayout, seed: int) -> LatentParams:
        """The starting point of EM (see ``init``)."""
        from .latent_params import m_step, uniform_counts

        if self.init == "random":
            return m_step(layout, uniform_counts(layout, self.noise, seed))
        spread = m_step(layout, uniform_counts(layout))
        piv = self._pivot_model(seed)
        est = piv._learn(layout, resolve_random_state(piv.random_state))
        return est.params.mix(spread, self.init_mix)

    def _em(self, layout: LatentLayout, params: LatentParams, t0: float, callback,
            pcfg) -> _EMRun:
        """EM iterations from ``params``; ``callback(iteration, self, loglik)`` after each, with
        this model installed (``pcfg`` and the current parameters) so that it can parse."""
        from .latent_params import e_step, latent_arrays, m_step

        history = []
        prev = None
        for it in range(1, self.n_iterations + 1):
            es = e_step(layout, params, self.jobs)
            ll = es.log_likelihood
            params = m_step(layout, es.counts, self.parent_smoothing)
            history.append((it, ll, time.perf_counter() - t0))
            if callback is not None:
                self._install(pcfg, latent_arrays(layout, params))
                self.params_ = params
                self.history_ = list(history)
                if callback(it, self, ll):
                    break
            if self.tol > 0 and prev is not None and np.isfinite(prev) and \
                    (ll - prev) <= self.tol * abs(prev):
                break
            prev = ll
        return _EMRun(params, history)

    def fit(self, X, callback=None):
        """Fit the model on treebank trees by EM.

        Parameters
        ----------
        X : iterable of Tree
            Training trees (raw or cleaned).
        callback : callable, optional
            ``callback(iteration, model, loglik)`` after every EM iteration, with the model
            ready to parse the current parameters; return True to stop early.

        Returns
        -------
        EMLPCFG
            self, fitted.
        """
        return super().fit(X, callback=callback)

    def _learn_prepared(self, prep, seed: int, callback=None):
        from .latent_params import latent_arrays, model_layout

        layout = model_layout(self, prep.nodes, prep.grammar)
        t_learn = time.perf_counter()
        run = self._em(layout, self._initial_params(layout, seed), t_learn, callback, prep.pcfg)
        self.params_ = run.params
        self.history_ = run.history
        self.n_iter_ = len(run.history)
        return latent_arrays(layout, run.params)

    # -- learning from partitions (the statistics protocol of fastspectral.base) -------------
    def sufficient_statistics(self, items, context=None):
        """The mergeable statistics of a partition: the treebank counts (first pass), the
        pivot counts (``init="pivot"``: :class:`~fastspectral.lpcfg.pivot.PivotCounts`), then
        one E-step per pass with the parameters of ``context`` (see
        :mod:`fastspectral.lpcfg.stats`)."""
        from .pivot import PivotContext, pivot_statistics
        from .stats import em_statistics

        part = self._as_partition(items)
        if isinstance(context, PivotContext):
            return pivot_statistics(self, part, context)
        return em_statistics(self, part, context)

    def fit_statistics(self, stats, context=None):
        """The initial parameters (the random start, or the pivot estimate of the merged pivot
        counts mixed as in ``fit``), then one M-step per pass on the merged expected counts:
        the next pass's context, or None once fitted (the model ``fit`` gives on the
        concatenated partitions; no ``callback``)."""
        from threadpoolctl import threadpool_limits

        from .latent_params import m_step, uniform_counts
        from .pivot import PivotContext, pivot_context, pivot_estimate_of
        from .stats import em_fit_statistics, em_layout, em_start

        t0 = time.perf_counter()
        if self.init == "pivot" and context is None:       # next: the pivot counts
            self._validate_params()
            base, G = em_layout(self, stats, t0)
            return pivot_context(base, G, self._pivot_model(base.seed))
        if isinstance(context, PivotContext):              # the pivot start (_initial_params)
            est = pivot_estimate_of(stats, context)
            G = context.layout
            with threadpool_limits(limits=1):
                params = est.params.mix(m_step(G, uniform_counts(G)), self.init_mix)
            return em_start(self, context.base, G, params, t0, context.t_start)
        return em_fit_statistics(self, stats, context, t0)

    # ------------------------------------------------------------------ model files
    @classmethod
    def _params_from_file(cls, params: dict) -> dict:
        out = super()._params_from_file(params)
        opts = out.get("pivot_options")
        if opts:
            # files written before the reshaping name the pivot options the old way
            from .pivot import PivotLPCFG, _pairs_from_json

            opts = {PivotLPCFG._renamed_params.get(k, k): v for k, v in opts.items()}
            if opts.get("feature_pairs") is not None:
                opts["feature_pairs"] = _pairs_from_json(opts["feature_pairs"])
            out["pivot_options"] = opts
        return out
