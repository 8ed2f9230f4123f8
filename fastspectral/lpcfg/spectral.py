"""Spectral learning of latent-variable PCFGs (Cohen, Stratos, Collins, Foster, Ungar; ACL 2012,
NAACL 2013) with a compiled tensor inside-outside and coarse-to-fine parsing.

Learning (:meth:`SpectralLPCFG.fit`): the treebank is cleaned, unary-collapsed and binarised with
the same ``v``/``h`` as the plain PCFG, which is fitted internally (it shares the symbol and rule
sets and is the coarse model).  Inside/outside tree-fragment features of every node
(:mod:`fastspectral.lpcfg.features`) give ``Omega^a``, a truncated SVD per symbol gives the
projections, and the parameters follow :mod:`fastspectral.lpcfg.estimate` (formulas, smoothing and
unknown words documented there).

Parsing is the coarse-to-fine cascade shared by every L-PCFG learner
(:class:`~fastspectral.lpcfg.latent.LatentPCFGBase`): coarse PCFG, plain PCFG, then the tensor
inside-outside of the L-PCFG over the surviving items (negative marginals of the spectral
estimates are clipped to zero) and max-expected-recall decoding.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..base import Interval
from .features import default_feature_keys, feature_matrices, nodes_by_rule
from .latent import LatentArrays, LatentPCFGBase, log_rule_per_word
from .params import LatentGrammar

__all__ = ["SpectralLPCFG"]


@dataclass
class _Decomposition:
    """What :meth:`SpectralLPCFG._decompose` returns: the training nodes of every symbol id
    (``counts``), each node's row within its symbol's (``pos``), and per decomposed symbol id
    its inside and outside feature matrices and the truncated SVD of ``Omega^a``
    (``svds[a] = (P_a, Q_a, U, s, Vt)``)."""

    counts: np.ndarray
    pos: np.ndarray
    svds: dict


@dataclass
class _SpectralEstimate:
    """What :meth:`SpectralLPCFG._estimate` returns: the parsing arrays and, per symbol id with
    an SVD, the leading singular values of ``Omega^a``."""

    arrays: LatentArrays
    singular_values: dict


class SpectralLPCFG(LatentPCFGBase):
    """Latent-variable PCFG parser estimated by the spectral method of Cohen et al. (2012, 2013).

    The moments of inside and outside tree-fragment features of every symbol are projected on
    their ``m_a`` leading singular vectors; the L-PCFG parameters (an observable representation,
    not probabilities) are averages of the projected features over the nodes of each rule.
    Parsing is coarse-to-fine (coarse PCFG, plain PCFG, then the L-PCFG's tensor
    inside-outside) with max-expected-recall decoding.

    Parameters
    ----------
    n_states : int, default 8
        Latent states ``m`` of in-terminals (phrasal and intermediate symbols), capped by the
        numerical rank of each symbol's moment matrix.
    n_states_pre : int or None, default None
        Latent states of pre-terminals (None: ``n_states``).
    v : int, default 2
        Vertical markovisation of the underlying PCFG (as :class:`~fastspectral.PCFG`).
    h : int or None, default 1
        Horizontal markovisation (None: infinite).
    tag_parent : bool, default False
        Parent-annotate pre-terminals.
    kappa : float, default 5.0
        Feature scaling ``sqrt(M / (count + kappa))`` (Cohen et al. 2013, section 3.1).
    min_count : int, default 20
        Symbols with fewer training nodes keep one state.
    rank_tol : float, default 1e-7
        Singular values below ``rank_tol * sigma_1`` are not used as states.
    moment_smoothing : float, default 30.0
        ``C`` of the interpolation ``lam = sqrt(n) / (C + sqrt(n))`` of the rule moments with
        lower-order terms (Cohen et al. 2013, section 3.2; 0: none).
    moment_backoff : {"symbol", "rule"}, default "symbol"
        The lower-order terms of a binary rule's moments: ``"symbol"``, the paper's three
        levels, ending in the product of the three symbols' mean projections; ``"rule"``, two
        levels from the rule's own nodes (the estimate of versions before this option).
        Formulas: :mod:`fastspectral.lpcfg.estimate`.  ``"symbol"`` scores higher on WSJ
        section 22 (m=8 from the 3,914-tree sample: 82.60 against 81.80 F1; m=32 from
        sections 02-21: 87.93 against 87.54).
    word_smoothing : float, default 1.0
        ``s_w`` of the outside-projection back-off of rare (tag, word) pairs.
    lexicon : {"pcfg", "mle"}, default "pcfg"
        ``"pcfg"``: the smoothed PCFG lexicon with unknown-word signatures; ``"mle"``: relative
        frequencies, unknown words get 0 (for experiments on synthetic data).
    prune_threshold : float or None, default 1e-5
        Posterior threshold of the plain PCFG pass (coarse-to-fine).
    coarse_threshold : float or None, default 3e-3
        Posterior threshold of the coarse (v=1, h=0) pass before it (None or 0: no pruning).
    pruner_states : int or None, default None
        Latent states of a pruning model fitted beside this one (the same learner and
        settings with fewer states, on the same prepared trees; ``pruner_``): parsing runs it
        over the items that survive the PCFG passes and gives this model's pass only those
        whose marginal under it is at least ``pruner_threshold`` (one more level of Petrov &
        Klein's coarse-to-fine hierarchy).  None: no pruning model.
    pruner_threshold : float, default 1e-4
        Marginal threshold of the pruning model's pass.
    features : callable or None, default None
        Feature function ``NodeData -> (keys_in, keys_out)`` (None: the tree fragments of
        :func:`~fastspectral.lpcfg.features.default_feature_keys`).  Only ``fit`` uses it, and
        it is not written to model files (a loaded model has ``features=None``).
    svd_oversamples : int, default 10
        Oversampling of the randomized SVD.
    svd_iterations : int, default 3
        Power iterations of the randomized SVD.
    random_state : int or None, default 0
        Seed of the randomized SVDs (None: fresh entropy).
    jobs : int or None, default None
        Default number of parsing threads (None: every core available).
    state_map : dict or None, default None
        ``{symbol: m}``: the target states of single symbols of the binarised grammar (such as
        ``"NP^S"`` or ``"@VP^S|VBD"``), in place of ``n_states`` / ``n_states_pre`` and
        ``min_count``; still capped by the rank of the symbol's moment matrix.  Symbols not in
        the grammar are ignored with a warning.  The same parameter as
        :class:`~fastspectral.lpcfg.em.EMLPCFG`'s.

    Attributes
    ----------
    pcfg_ : PCFG
        The plain PCFG of the training trees (pruning and fallback).
    lpcfg_ : LatentGrammar
        The estimated tensors ``C^{a->b c}``, matrices ``C^{a->p}`` and root vectors ``c1_a``.
    states_ : numpy.ndarray
        Latent states of every symbol.
    singular_values_ : dict
        Leading singular values of ``Omega^a`` per symbol id (see
        :meth:`singular_value_table`).
    lex_table_ : numpy.ndarray
        Outside projections of the (tag, word) pairs (``c_inf``; with ``lex_keys_``,
        ``lex_off_``, ``lex_count_``, ``lex_rare_off_``, ``tag_count_``).
    log_rule_per_word_ : float
        Average log rule probability per training token (the lexical scale).
    vocab_, sym_counts_, n_train_trees_, fit_time_, pruner_, last_parse_stats_
        As :class:`~fastspectral.lpcfg.latent.LatentPCFGBase`.

    References
    ----------
    Cohen, Stratos, Collins, Foster, Ungar (2012). Spectral learning of latent-variable PCFGs.
    ACL.  Figure 4 (estimation: ``Omega^a``, SVD, projections ``y = U^T phi``,
    ``z = S^-1 V^T psi``), theorems 1-2, figure 3 (tensor inside-outside).

    Cohen, Stratos, Collins, Foster, Ungar (2013). Experiments with spectral learning of
    latent-variable PCFGs. NAACL.  Feature scaling (``kappa``) and the smoothing of the
    moments (``moment_smoothing``).

    Examples
    --------
    >>> from fastspectral.lpcfg import SpectralLPCFG
    >>> from fastspectral.synthetic import LatentPCFG
    >>> grammar = LatentPCFG.default(n_states=2, seed=0)
    >>> train = grammar.sample(200, seed=1)
    >>> model = SpectralLPCFG(n_states=2, jobs=1).fit(train)
    >>> words = train[0].leaves()
    >>> tree = model.parse([words])[0]
    >>> tree.label, tree.leaves() == words
    ('TOP', True)
    >>> int(model.states_.max())
    2
    """

    kind = "spectral-lpcfg"
    _renamed_params = {"smoothing": "moment_smoothing", "seed": "random_state",
                       "svd_iter": "svd_iterations", "svd_oversample": "svd_oversamples"}
    _parameter_constraints = {
        "kappa": Interval(float, 0.0), "moment_smoothing": Interval(float, 0.0),
        "word_smoothing": Interval(float, 0.0), "lexicon": {"pcfg", "mle"},
        "moment_backoff": {"symbol", "rule"},
        "features": "callable or None", "svd_oversamples": Interval(int, 0),
        "svd_iterations": Interval(int, 0)}

    def __init__(self, n_states=8, n_states_pre=None, v=2, h=1, tag_parent=False, kappa=5.0,
                 min_count=20, rank_tol=1e-7, moment_smoothing=30.0, moment_backoff="symbol",
                 word_smoothing=1.0,
                 lexicon="pcfg", prune_threshold=1e-5, coarse_threshold=3e-3, pruner_states=None,
                 pruner_threshold=1e-4, features=None, svd_oversamples=10, svd_iterations=3,
                 random_state=0, jobs=None, state_map=None):
        self.n_states = n_states
        self.n_states_pre = n_states_pre
        self.v = v
        self.h = h
        self.tag_parent = tag_parent
        self.kappa = kappa
        self.min_count = min_count
        self.rank_tol = rank_tol
        self.moment_smoothing = moment_smoothing
        self.moment_backoff = moment_backoff
        self.word_smoothing = word_smoothing
        self.lexicon = lexicon
        self.prune_threshold = prune_threshold
        self.coarse_threshold = coarse_threshold
        self.pruner_states = pruner_states
        self.pruner_threshold = pruner_threshold
        self.features = features
        self.svd_oversamples = svd_oversamples
        self.svd_iterations = svd_iterations
        self.random_state = random_state
        self.jobs = jobs
        self.state_map = state_map

    def _uses_mle_lexicon(self) -> bool:
        return self.lexicon == "mle"

    # ------------------------------------------------------------------ learning
    def _learn_prepared(self, prep, seed: int) -> LatentArrays:
        est = self._estimate(prep.nodes, prep.grammar, prep.n_trees, seed)
        self.singular_values_ = est.singular_values
        return est.arrays

    # -- learning from partitions (the statistics protocol of fastspectral.base) -------------
    def sufficient_statistics(self, items, context=None):
        """The mergeable statistics of a partition for the pass of ``context`` (four passes:
        counts, feature counts, ``Omega`` co-occurrences, projected moments; see
        :mod:`fastspectral.lpcfg.stats`)."""
        from .stats import spectral_statistics

        return spectral_statistics(self, self._as_partition(items), context)

    def fit_statistics(self, stats, context=None):
        """One estimate from merged statistics: the next pass's context, or None once fitted
        (the model ``fit`` gives on the concatenated partitions)."""
        from .stats import spectral_fit_statistics

        return spectral_fit_statistics(self, stats, context, time.perf_counter())

    def _estimate(self, nodes, g, n_trees, seed) -> _SpectralEstimate:
        """The spectral estimates of figure 4 of Cohen et al. (2012) on the training ``nodes``
        (see :mod:`fastspectral.lpcfg.estimate`); ``seed``: the randomized SVDs' seed."""
        targets = self._target_states(g, np.bincount(nodes.label, minlength=g.n_symbols))
        return self._estimate_from(self._decompose(nodes, g, seed, targets), nodes, g,
                                   n_trees, targets)

    def _decompose(self, nodes, g, seed, targets=None) -> _Decomposition:
        """The feature matrices of every symbol and the truncated SVDs of their ``Omega^a``
        for the target states ``targets`` (per symbol id; default: this model's
        :meth:`_target_states`).  The leading singular vectors of a decomposition for more
        states serve fewer (:meth:`_estimate_from` with smaller ``targets``)."""
        # imported here: loading a model to parse needs none of the learner's SVD kit (Numba)
        from .estimate import truncated_svd

        S = g.n_symbols
        feat = self.features or default_feature_keys
        kin, kout = feat(nodes)
        label = nodes.label
        Xin, row_ptr, cin, _, rowpos = feature_matrices(kin, label, S, self.kappa)
        Xout, _, cout, _, _ = feature_matrices(kout, label, S, self.kappa)
        counts = np.diff(row_ptr)
        if targets is None:
            targets = self._target_states(g, counts)
        svds = {}
        for a in np.flatnonzero((counts > 0) & (targets > 1)):
            Na = int(counts[a])
            Pa = Xin[row_ptr[a]:row_ptr[a + 1], cin[a]:cin[a + 1]]
            Qa = Xout[row_ptr[a]:row_ptr[a + 1], cout[a]:cout[a + 1]]
            Om = (Pa.T @ Qa).tocsr() / Na
            k = min(int(targets[a]), Om.shape[0], Om.shape[1])
            # a few more singular values than states, for the table that helps choosing m
            U, s, Vt = truncated_svd(Om, min(min(Om.shape), k + min(k, 16)),
                                     self.svd_oversamples, self.svd_iterations, seed + int(a))
            svds[int(a)] = (Pa, Qa, U, s, Vt)
        return _Decomposition(counts=counts, pos=rowpos - row_ptr[label], svds=svds)

    def _target_states(self, g, counts) -> np.ndarray:
        """The target states of every symbol id: ``n_states`` / ``n_states_pre`` for symbols
        of at least ``min_count`` nodes, 1 below, ``state_map`` over both."""
        from .latent_params import symbol_states

        return symbol_states(counts, g, self.n_states, self.n_states_pre, self.min_count,
                             self.state_map)

    def _estimate_from(self, dec: _Decomposition, nodes, g, n_trees,
                       targets=None) -> _SpectralEstimate:
        """The estimates of :meth:`_estimate` from the decomposition ``dec`` of
        :meth:`_decompose`, with at most ``targets`` states per symbol id (default: this
        model's :meth:`_target_states`)."""
        from .estimate import binary_tensor_start, choose_rank, root_vector, smoothed_pair
        from .fast_moments import Projections, binary_rule_tensors

        S = g.n_symbols
        counts, pos = dec.counts, dec.pos
        label = nodes.label
        if targets is None:
            targets = self._target_states(g, counts)
        m = np.ones(S, dtype=np.int32)
        decomposed = {}
        svals = {}
        for a, (Pa, Qa, U, s, Vt) in dec.svds.items():
            if targets[a] <= 1:
                continue
            k = min(int(targets[a]), Pa.shape[1], Qa.shape[1])
            svals[a] = s[:k + min(k, 16)].copy()
            ma = choose_rank(s, k, self.rank_tol)
            if ma > 1:
                m[a] = ma
                decomposed[a] = (Pa, Qa, U[:, :ma], Vt[:ma].T / s[:ma])
        # the projections of every symbol in two flat arrays (y = z = 1 for one state)
        proj = Projections(counts, m)
        Y, Z = proj.Y, proj.Z
        for a in np.flatnonzero(counts > 0):
            if a in decomposed:
                Pa, Qa, Ua, Va = decomposed.pop(a)
                proj.set(a, Pa @ Ua, Qa @ Va)
            else:
                proj.set(a, 1.0, 1.0)
        C = float(self.moment_smoothing)

        # ---- binary rules, written straight into the flat tensor array
        R = g.n_binary
        pa, pb, pc = g.bin_parent, g.bin_left, g.bin_right
        rcount, order, rptr = nodes_by_rule(nodes.rule, R)
        toff, tensors, scalar = binary_tensor_start(g, m, rcount, counts)
        # smoothed_triple(Z[a], Y[b], Y[c]) * n_r / M_a of every other rule, compiled
        means = None
        if self.moment_backoff == "symbol":
            # per symbol its mean projections F_a = E_a[y], H_a = E_a[z] (1 for one state)
            means = tuple(np.concatenate([P[a].mean(0) if counts[a] > 0 else np.ones(m[a])
                                          for a in range(S)]) for P in (Y, Z))
        binary_rule_tensors(np.flatnonzero(~scalar & (rcount > 0)), order, rptr, nodes, g, proj,
                            pos, rcount / np.maximum(counts[pa], 1), C, toff, tensors, means)
        # ---- unary rules
        Un = int(g.un_parent.shape[0])
        unary = [None] * Un
        ucount, uorder, uptr = nodes_by_rule(nodes.urule, Un)
        for u in range(Un):
            a, p = g.un_parent[u], g.un_child[u]
            nu = int(ucount[u])
            if nu == 0:
                unary[u] = np.zeros((m[a], m[p]))
                continue
            idx = uorder[uptr[u]:uptr[u + 1]]
            unary[u] = (nu / counts[a]) * smoothed_pair(Z[a][pos[idx]], Y[p][pos[nodes.left[idx]]], C)
        # ---- roots
        roots = {}
        rootn = np.flatnonzero(nodes.parent < 0)
        for a in np.unique(label[rootn]):
            idx = rootn[label[rootn] == a]
            roots[int(a)] = root_vector(len(idx), n_trees, Y[a][pos[idx]].mean(0), Y[a].mean(0),
                                        C)
        lg = LatentGrammar(m, pa, pb, pc, tensors, g.un_parent, g.un_child, unary, roots)
        # ---- lexical back-off table: rows (p, word) and (p, rare)
        lexical = self._estimate_lexical(nodes, g, Z, pos, m)
        # ---- per-word scale: average log rule probability per token
        arrays = LatentArrays(lpcfg=lg, log_rule_per_word=log_rule_per_word(nodes, g),
                              sym_counts=counts, **lexical)
        return _SpectralEstimate(arrays, svals)

    def _estimate_lexical(self, nodes, g, Z, pos, m) -> dict:
        """The lexical table (the ``c_inf`` back-off of :mod:`~fastspectral.lpcfg.estimate`):
        the lexical fields of :class:`~fastspectral.lpcfg.latent.LatentArrays` as a dict."""
        from .estimate import lexical_table

        pre = np.flatnonzero(nodes.word >= 0)
        V = len(nodes.vocab)
        p_lab = nodes.label[pre].astype(np.int64)
        wid = nodes.word[pre].astype(np.int64)
        key = p_lab * (V + 1) + wid
        ukey, inv, pcount = np.unique(key, return_inverse=True, return_counts=True)
        rare_word = nodes.word_count[wid] <= 1

        def tag_blocks():
            for p in np.unique(p_lab):
                sel = np.flatnonzero(p_lab == p)
                zp = Z[p][pos[pre[sel]]]
                rsel = rare_word[sel]
                zr = zp[rsel].mean(0) if rsel.any() else zp.mean(0)
                upairs, local = np.unique(inv[sel], return_inverse=True)
                sums = np.zeros((len(upairs), int(m[p])))
                np.add.at(sums, local, zp)
                yield p, upairs, sums, pcount[upairs], zr

        offs, rare_off, table = lexical_table(tag_blocks(), len(ukey), g.n_symbols,
                                              self.word_smoothing)
        return {"vocab": list(nodes.vocab), "lex_keys": ukey, "lex_off": offs,
                "lex_count": pcount.astype(np.int64), "lex_rare_off": rare_off,
                "lex_table": table,
                "tag_count": np.bincount(p_lab, minlength=g.n_symbols).astype(np.int64)}

    # ------------------------------------------------------------------ inspection
    def singular_value_table(self, top: int = 8, symbols=None) -> str:
        """Text table of the leading singular values of ``Omega^a`` per symbol (to choose ``m``).

        Rows are sorted by training count; ``symbols`` restricts to those labels.
        """
        self._check_fitted()
        g = self.pcfg_.grammar_
        counts = self.sym_counts_
        rows = []
        for a, s in sorted(self.singular_values_.items(),
                           key=lambda kv: -counts[kv[0]]):
            name = g.symbols[a]
            if symbols is not None and name not in symbols:
                continue
            vals = " ".join(f"{x:9.3g}" for x in s[:top])
            rows.append(f"{name:<24} {int(self.states_[a]):>3}  {vals}")
        head = f"{'symbol':<24} {'m':>3}  leading singular values of Omega (sigma_1 ... sigma_{top})"
        return "\n".join([head, "-" * len(head)] + rows)

    def plot_singular_values(self, path, symbols=None, top: int = 40):
        """Plot normalised singular values per symbol to ``path`` (needs matplotlib)."""
        self._check_fitted()
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as exc:  # pragma: no cover
            raise ImportError("plot_singular_values needs matplotlib (pip install matplotlib)") from exc
        g = self.pcfg_.grammar_
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for a, s in self.singular_values_.items():
            name = g.symbols[a]
            if symbols is not None and name not in symbols:
                continue
            ax.semilogy(np.arange(1, len(s[:top]) + 1), s[:top] / s[0], label=name)
        ax.set_xlabel("index")
        ax.set_ylabel("sigma_i / sigma_1")
        if symbols is not None:
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)


    # ------------------------------------------------------------------ model files
    def _file_params(self) -> dict:
        # the feature function is only needed for fitting and is not JSON: not written
        params = self.get_params(deep=False)
        params.pop("features")
        return params

    def _model_file(self) -> tuple[dict, dict]:
        meta, arrays = super()._model_file()
        sv_syms = np.array(sorted(self.singular_values_), dtype=np.int64)
        arrays["sv_syms"] = sv_syms
        arrays["sv_ptr"] = np.concatenate([[0], np.cumsum([len(self.singular_values_[a])
                                                           for a in sv_syms])]).astype(np.int64)
        arrays["sv_vals"] = (np.concatenate([self.singular_values_[a] for a in sv_syms])
                             if len(sv_syms) else np.zeros(0))
        return meta, arrays

    @classmethod
    def _from_model_file(cls, meta: dict, arrays: dict):
        from ..io import validate as V

        model = super()._from_model_file(meta, arrays)
        syms = V.get(arrays, "sv_syms", "int", dtype=np.int64)
        V.check_index(syms, "sv_syms", 0, model.pcfg_.grammar_.n_symbols)
        vals = V.check_finite(V.get(arrays, "sv_vals", "float"), "sv_vals")
        ptr = V.get(arrays, "sv_ptr", "int", shape=(syms.shape[0] + 1,), dtype=np.int64)
        V.check_offsets(ptr, "sv_ptr", vals.shape[0])
        model.singular_values_ = {int(a): vals[ptr[k]:ptr[k + 1]] for k, a in enumerate(syms)}
        return model
