"""Spectral learning of latent-variable PCFGs (Cohen, Stratos, Collins, Foster, Ungar; ACL 2012,
NAACL 2013) with a compiled tensor inside-outside and coarse-to-fine parsing.

>>> from fastspectral.lpcfg import SpectralLPCFG
>>> from fastspectral.trees import read_ptb
>>> model = SpectralLPCFG(n_states=8).fit(read_ptb("wsj-sample.mrg"))         # doctest: +SKIP
>>> model.parse([["The", "dog", "barks", "."]])                                # doctest: +SKIP

Learning (:meth:`SpectralLPCFG.fit`): the treebank is cleaned, unary-collapsed and binarised with
the same ``v``/``h`` as the plain PCFG, which is fitted internally (it shares the symbol and rule
sets and is the coarse model).  Inside/outside tree-fragment features of every node
(:mod:`fastspectral.lpcfg.features`) give ``Omega^a``, a truncated SVD per symbol gives the
projections, and the parameters follow :mod:`fastspectral.lpcfg.estimate` (formulas, smoothing and
unknown words documented there).

Parsing (:meth:`SpectralLPCFG.parse`), all compiled and parallel over sentences (OpenMP):

1. the coarse PCFG (``v=1, h=0``) runs exhaustive inside-outside (the PCFG's dense CKY
   kernel); items with posterior below ``coarse_threshold`` (default 3e-3) are dropped (when
   the refined chart of a sentence then has no parse, it is redone with a 1000x lower threshold,
   then unpruned);
2. the plain PCFG (same ``v``/``h``) runs inside-outside over the survivors; items with posterior
   below ``prune_threshold`` (default 1e-5) are dropped;
3. the tensor inside-outside of the L-PCFG (figure 3 of the paper) runs over the remaining items
   and gives ``mu(a, i, j) = alpha^{a,i,j} beta^{a,i,j} / Z``;
4. spectral estimates are not probabilities, so marginals can come out negative: **negative
   marginals are clipped to zero** before decoding (they only ever count as "no evidence").
   The estimate ``mu = alpha beta / Z`` is the ratio of two estimates and is used whatever the
   sign of ``Z`` (on WSJ §22 this beats falling back to the PCFG when ``Z < 0``;
   ``last_parse_stats_["negative_z"]`` counts those sentences); a sentence whose ``Z`` is 0 or
   not finite is decoded from the plain PCFG's posteriors (``["fallback_pcfg"]``);
5. Goodman's max-expected-recall tree over base labels from the clipped marginals, then
   debinarisation.

To keep products of many small factors in range every lexical vector of word ``i`` is divided
by ``s_i = max_p P(w_i | p) * exp(r)``, with ``r`` the average log rule probability per word of
the training trees; every derivation of a sentence is scaled by the same ``prod_i s_i``, so
marginals are unchanged.
"""
from __future__ import annotations

import time

import numpy as np

from ..errors import NotFittedError
from ..io.modelfile import load_model_file, save_model_file
from ..trees.transforms import binarize, clean, collapse_unary, prepare
from ..trees.tree import Tree
from .estimate import choose_rank, smoothed_pair, smoothed_triple, truncated_svd
from .features import default_feature_keys, extract_nodes, feature_matrices
from .params import LatentGrammar, default_threads

__all__ = ["SpectralLPCFG"]


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


def _check_sentences(sentences, tags):
    from ..grammar.pcfg import _check_sentences as check
    return check(sentences, tags)


class SpectralLPCFG:
    """Spectral L-PCFG parser.

    Parameters
    ----------
    n_states : latent states ``m`` of in-terminals (phrasal and intermediate symbols).
    n_states_pre : latent states of pre-terminals (default: ``n_states``).
    v, h, tag_parent : markovisation of the underlying PCFG (as :class:`~fastspectral.PCFG`).
    kappa : feature scaling ``sqrt(M / (count + kappa))``.
    min_count : symbols with fewer training nodes keep one state.
    rank_tol : singular values below ``rank_tol * sigma_1`` are not used as states.
    smoothing : ``C`` of the interpolation ``lam = sqrt(n) / (C + sqrt(n))`` (0: none).
    word_smoothing : ``s_w`` of the outside-projection back-off of rare (p, word) pairs.
    lexicon : ``"pcfg"`` (smoothed PCFG lexicon, unknown-word signatures) or ``"mle"``
        (relative frequencies, unknown words get 0; for experiments on synthetic data).
    prune_threshold : posterior threshold of the plain PCFG pass (coarse-to-fine).
    coarse_threshold : posterior threshold of the coarse (v=1, h=0) pass before it.
    features : feature function ``NodeData -> (keys_in, keys_out)`` (default tree fragments).
    svd_oversample, svd_iter, seed : randomized SVD settings.
    jobs : default number of parsing threads (None: all CPUs).
    """

    input_kind = "sentences"
    model_kind = "spectral-lpcfg"

    def __init__(self, n_states=8, n_states_pre=None, v=2, h=1, tag_parent=False, kappa=5.0,
                 min_count=20, rank_tol=1e-7, smoothing=30.0, word_smoothing=1.0,
                 lexicon="pcfg", prune_threshold=1e-5, coarse_threshold=3e-3, features=None,
                 svd_oversample=10, svd_iter=3, seed=0, jobs=None):
        self.n_states = n_states
        self.n_states_pre = n_states_pre
        self.v = v
        self.h = h
        self.tag_parent = tag_parent
        self.kappa = kappa
        self.min_count = min_count
        self.rank_tol = rank_tol
        self.smoothing = smoothing
        self.word_smoothing = word_smoothing
        self.lexicon = lexicon
        self.prune_threshold = prune_threshold
        self.coarse_threshold = coarse_threshold
        self.features = features
        self.svd_oversample = svd_oversample
        self.svd_iter = svd_iter
        self.seed = seed
        self.jobs = jobs

    # ------------------------------------------------------------------ parameters
    def get_params(self) -> dict:
        """Constructor arguments (``features`` only when it is the default)."""
        return {"n_states": self.n_states, "n_states_pre": self.n_states_pre, "v": self.v,
                "h": self.h, "tag_parent": self.tag_parent, "kappa": self.kappa,
                "min_count": self.min_count, "rank_tol": self.rank_tol,
                "smoothing": self.smoothing, "word_smoothing": self.word_smoothing,
                "lexicon": self.lexicon, "prune_threshold": self.prune_threshold,
                "coarse_threshold": self.coarse_threshold, "svd_oversample": self.svd_oversample,
                "svd_iter": self.svd_iter, "seed": self.seed, "jobs": self.jobs}

    def _validate(self):
        for name in ("n_states",):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if self.n_states_pre is not None and (not isinstance(self.n_states_pre, (int, np.integer))
                                              or self.n_states_pre < 1):
            raise ValueError(f"n_states_pre must be None or an integer >= 1, got {self.n_states_pre!r}")
        if self.kappa < 0 or self.smoothing < 0 or self.word_smoothing < 0:
            raise ValueError("kappa, smoothing and word_smoothing must be >= 0")
        if self.lexicon not in ("pcfg", "mle"):
            raise ValueError(f"lexicon must be 'pcfg' or 'mle', got {self.lexicon!r}")
        for name in ("prune_threshold", "coarse_threshold"):
            t = getattr(self, name)
            if t is not None and not (0.0 <= t < 1.0):
                raise ValueError(f"{name} must be in [0, 1) or None, got {t!r}")
        if self.jobs is not None and int(self.jobs) < 1:
            raise ValueError(f"jobs must be >= 1 or None, got {self.jobs!r}")

    def _check_fitted(self):
        if not hasattr(self, "lpcfg_"):
            raise NotFittedError("this SpectralLPCFG is not fitted yet: call fit(trees) or load(path)")

    # ------------------------------------------------------------------ learning
    def fit(self, trees):
        """Estimate from an iterable of treebank trees (raw or cleaned). Returns self."""
        from threadpoolctl import threadpool_limits

        # the SVDs and products are small: BLAS threads only add contention
        with threadpool_limits(limits=1):
            return self._fit(trees)

    def _fit(self, trees):
        from ..grammar.grammar import Grammar
        from ..grammar.pcfg import PCFG

        self._validate()
        t0 = time.perf_counter()
        c0 = time.process_time()
        raw = list(trees)
        if not raw:
            raise ValueError("cannot fit an L-PCFG on an empty treebank")
        for k, t in enumerate(raw):
            if not isinstance(t, Tree):
                raise TypeError(f"tree {k} is a {type(t).__name__}, expected fastspectral.trees.Tree")
        # prepare = binarize(collapse_unary(clean(t))): clean and collapse once for both grammars
        cu = [collapse_unary(clean(t)) for t in raw]
        fine = [binarize(t, self.v, self.h, self.tag_parent) for t in cu]
        # the plain PCFG on the same prepared trees (its own fit() would prepare them again)
        pcfg = PCFG(v=self.v, h=self.h, tag_parent=self.tag_parent, jobs=self.jobs)
        g = Grammar.from_trees(fine, pcfg.lexicon_options())
        nodes = extract_nodes(fine, g)
        # the coarse grammar (v=1, h=0) has the same tree shapes with base labels: count it
        # from the node arrays instead of binarising the treebank again
        coarse = _coarse_grammar(nodes, g, pcfg.lexicon_options())
        self.pcfg_ = pcfg.fit_prepared(fine, grammar=g, coarse=coarse,
                                       fit_time=time.perf_counter() - t0)
        self._estimate(nodes, g, len(raw))
        self.n_train_trees_ = len(raw)
        self.fit_seconds_ = time.perf_counter() - t0
        self.fit_cpu_seconds_ = time.process_time() - c0
        return self

    def _estimate(self, nodes, g, n_trees):
        S = g.n_symbols
        feat = self.features or default_feature_keys
        kin, kout = feat(nodes)
        label = nodes.label
        Xin, row_ptr, cin, node_order, rowpos = feature_matrices(kin, label, S, self.kappa)
        Xout, _, cout, _, _ = feature_matrices(kout, label, S, self.kappa)
        counts = np.diff(row_ptr)
        m_in = int(self.n_states)
        m_pre = int(self.n_states_pre or self.n_states)
        m = np.ones(S, dtype=np.int32)
        Y = [None] * S
        Z = [None] * S
        svals = {}
        for a in np.flatnonzero(counts > 0):
            Na = int(counts[a])
            target = m_pre if g.is_preterminal[a] else m_in
            if target > 1 and Na >= self.min_count:
                Pa = Xin[row_ptr[a]:row_ptr[a + 1], cin[a]:cin[a + 1]]
                Qa = Xout[row_ptr[a]:row_ptr[a + 1], cout[a]:cout[a + 1]]
                Om = (Pa.T @ Qa).tocsr() / Na
                k = min(target, Om.shape[0], Om.shape[1])
                # a few more singular values than states, for the table that helps choosing m
                U, s, Vt = truncated_svd(Om, min(min(Om.shape), k + min(k, 16)),
                                         self.svd_oversample, self.svd_iter, self.seed + int(a))
                svals[int(a)] = s.copy()
                ma = choose_rank(s, k, self.rank_tol)
                if ma > 1:
                    m[a] = ma
                    Y[a] = np.asarray(Pa @ U[:, :ma])
                    Z[a] = np.asarray(Qa @ (Vt[:ma].T / s[:ma]))
                    continue
            Y[a] = np.ones((Na, 1))
            Z[a] = np.ones((Na, 1))
        self.singular_values_ = svals
        self.sym_counts_ = counts
        pos = rowpos - row_ptr[label]  # position of each node within its label's rows
        C = float(self.smoothing)

        # ---- binary rules, written straight into the flat tensor array
        R = g.n_binary
        pa, pb, pc = g.bin_parent, g.bin_left, g.bin_right
        m64 = m.astype(np.int64)
        toff = np.zeros(R + 1, dtype=np.int64)
        np.cumsum(m64[pa] * m64[pb] * m64[pc], out=toff[1:])
        tensors = np.zeros(int(toff[-1]))
        bn = np.flatnonzero(nodes.rule >= 0)
        rcount = np.bincount(nodes.rule[bn], minlength=R)
        order = bn[np.argsort(nodes.rule[bn], kind="stable")]
        rptr = np.zeros(R + 1, dtype=np.int64)
        np.cumsum(rcount, out=rptr[1:])
        scalar = (m[pa] == 1) & (m[pb] == 1) & (m[pc] == 1)
        tensors[toff[:-1][scalar]] = rcount[scalar] / counts[pa[scalar]]
        for r in np.flatnonzero(~scalar & (rcount > 0)):
            a, b, c = pa[r], pb[r], pc[r]
            idx = order[rptr[r]:rptr[r + 1]]
            za = Z[a][pos[idx]]
            yb = Y[b][pos[nodes.left[idx]]]
            yc = Y[c][pos[nodes.right[idx]]]
            t = smoothed_triple(za, yb, yc, C)
            t *= rcount[r] / counts[a]
            tensors[toff[r]:toff[r + 1]] = t.ravel()
        # ---- unary rules
        Un = int(g.un_parent.shape[0])
        unary = [None] * Un
        un = np.flatnonzero(nodes.urule >= 0)
        ucount = np.bincount(nodes.urule[un], minlength=Un)
        uorder = un[np.argsort(nodes.urule[un], kind="stable")]
        uptr = np.zeros(Un + 1, dtype=np.int64)
        np.cumsum(ucount, out=uptr[1:])
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
            ya = Y[a][pos[idx]]
            lam = 1.0 if C <= 0 else np.sqrt(len(idx)) / (C + np.sqrt(len(idx)))
            mean = lam * ya.mean(0) + (1 - lam) * Y[a].mean(0)
            roots[int(a)] = (len(idx) / n_trees) * mean
        self.lpcfg_ = LatentGrammar(m, pa, pb, pc, tensors, g.un_parent, g.un_child, unary, roots)
        # ---- lexical back-off table: rows (p, word) and (p, rare)
        self._estimate_lexical(nodes, g, Z, pos, m)
        # ---- per-word scale: average log rule probability per token
        lp = np.log(np.maximum(g.bin_prob[nodes.rule[bn]], 1e-300)).sum()
        lp += np.log(np.maximum(g.un_prob[nodes.urule[un]], 1e-300)).sum()
        lp += np.log(np.maximum(g.root_prob[label[rootn]], 1e-300)).sum()
        self.log_rule_per_word_ = float(lp / max(1, nodes.tags.shape[0]))
        self.states_ = m

    def _estimate_lexical(self, nodes, g, Z, pos, m):
        pre = np.flatnonzero(nodes.word >= 0)
        V = len(nodes.vocab)
        self.vocab_ = list(nodes.vocab)
        self.word_index_ = {w: i for i, w in enumerate(self.vocab_)}
        p_lab = nodes.label[pre].astype(np.int64)
        wid = nodes.word[pre].astype(np.int64)
        key = p_lab * (V + 1) + wid
        ukey, inv, pcount = np.unique(key, return_inverse=True, return_counts=True)
        syms = np.unique(p_lab)
        offs = np.zeros(len(ukey), dtype=np.int64)
        rare_off = np.full(g.n_symbols, -1, dtype=np.int64)
        table = []
        pos_t = 0
        sw = float(self.word_smoothing)
        rare_word = nodes.word_count[wid] <= 1
        for p in syms:
            sel = np.flatnonzero(p_lab == p)
            mp = int(m[p])
            zp = Z[p][pos[pre[sel]]]
            rsel = rare_word[sel]
            zr = zp[rsel].mean(0) if rsel.any() else zp.mean(0)
            pairs_inv = inv[sel]
            upairs, local = np.unique(pairs_inv, return_inverse=True)
            sums = np.zeros((len(upairs), mp))
            np.add.at(sums, local, zp)
            n_px = pcount[upairs].astype(np.float64)[:, None]
            zhat = (sums + sw * zr[None, :]) / (n_px + sw)
            block = np.vstack([zhat, zr[None, :]])
            offs[upairs] = pos_t + np.arange(len(upairs)) * mp
            rare_off[p] = pos_t + len(upairs) * mp
            table.append(block.ravel())
            pos_t += block.size
        self.lex_keys_ = ukey
        self.lex_off_ = offs
        self.lex_count_ = pcount.astype(np.int64)
        self.lex_rare_off_ = rare_off
        self.lex_table_ = np.concatenate(table) if table else np.zeros(0)
        self.tag_count_ = np.bincount(p_lab, minlength=g.n_symbols).astype(np.int64)

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

    # ------------------------------------------------------------------ lexical vectors
    def _lexical_probs(self, g, lex_sym, lex_word, lex_prob):
        """P(word | p) per lexical entry: the PCFG lexicon, or relative frequencies (mle)."""
        if self.lexicon == "pcfg":
            return lex_prob
        V1 = len(self.vocab_) + 1
        key = lex_sym.astype(np.int64) * V1 + np.where(lex_word >= 0, lex_word, -10 ** 9)
        k = np.searchsorted(self.lex_keys_, key)
        k = np.minimum(k, len(self.lex_keys_) - 1)
        hit = (self.lex_keys_[k] == key) & (lex_word >= 0)
        out = np.zeros(len(lex_sym))
        out[hit] = self.lex_count_[k[hit]] / np.maximum(self.tag_count_[lex_sym[hit]], 1)
        return out

    def _leaf_offsets(self, lex_sym, lex_word):
        V1 = len(self.vocab_) + 1
        key = lex_sym.astype(np.int64) * V1 + np.where(lex_word >= 0, lex_word, -10 ** 9)
        k = np.searchsorted(self.lex_keys_, key)
        k = np.minimum(k, len(self.lex_keys_) - 1)
        hit = (self.lex_keys_[k] == key) & (lex_word >= 0)
        off = self.lex_rare_off_[lex_sym].copy()
        off[hit] = self.lex_off_[k[hit]]
        return off

    # ------------------------------------------------------------------ parsing
    def _run(self, grammar, ptr, ii, jj, ss, lw, lo, table, lens, jobs):
        from .._ext.lpcfg_io import inside_outside_batch

        g = grammar
        return inside_outside_batch(
            g.S, g.m, g.bin_parent, g.bin_left, g.bin_right, g.toff, g.T, g.rl_ptr, g.rl_rule,
            g.un_parent, g.un_child, g.uoff, g.U, g.uc_ptr, g.uc_rule, g.c1, g.c1off,
            lens, ptr, ii, jj, ss, lw, lo, table, n_threads=jobs)

    def _coarse_to_fine(self, sents, stags, jobs, stats):
        """The pruned L-PCFG charts of a batch (coarse PCFG -> PCFG cascade)."""
        from .._ext.lpcfg_io import full_items, project_items
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

        def run(lg, ptr, ii, jj, ss, lx, lprob, ltok, what):
            safe = np.maximum(lx, 0)
            lw = np.where(lx >= 0, lprob[safe] / smax[ltok[safe]], 0.0)
            lo = np.where(lx >= 0, 0, -1).astype(np.int64)
            mu, Z, st = self._run(lg, ptr, ii, jj, ss, lw, lo, one, lens, jobs)
            if np.any(st != 0):
                raise MemoryError(f"chart allocation failed in the {what} pass")
            return mu, Z

        # 1. coarse PCFG (v=1, h=0), exhaustive: the PCFG's dense CKY kernel is the fastest for
        #    full charts (measured about as fast as the scalar path of the tensor kernel and
        #    faster than an X-bar -> coarse cascade)
        threshold = 0.5
        if self.coarse_threshold:
            citems = posterior_prune(self.pcfg_.coarse_, sents, float(self.coarse_threshold),
                                     stags, jobs)
            ptr = np.zeros(len(sents) + 1, dtype=np.int64)
            np.cumsum([len(x) for x in citems], out=ptr[1:])
            call = (np.concatenate(citems).astype(np.int32) if ptr[-1]
                    else np.zeros((0, 3), np.int32))
            ii, jj, ss = (np.ascontiguousarray(call[:, 0]), np.ascontiguousarray(call[:, 1]),
                          np.ascontiguousarray(call[:, 2]))
            mu = np.ones(ii.shape[0])
        else:
            c_off, c_pos, c_sym, c_prob, c_tok = level_lex(self.pcfg_.proj_)
            ptr, ii, jj, ss, _ = full_items(lens, c_off, c_pos, c_sym, self._coarse_un,
                                            self._coarse_bin)
            mu = np.ones(ii.shape[0])
        # 2. the plain PCFG over the coarse survivors
        ptr, ii, jj, ss, lx = project_items(lens, ptr, ii, jj, ss, mu, threshold, self._c2f_ptr,
                                            self._c2f_sym, self._fine_is_pre, fl_off, fl_pos, fl_sym)
        mu, Zf = run(self._fine_lg, ptr, ii, jj, ss, lx, fl_prob, fl_tok, "PCFG")
        # 3. L-PCFG items: the PCFG survivors
        S = fg.n_symbols
        ident_ptr = np.arange(S + 1, dtype=np.int32)
        ident = np.arange(S, dtype=np.int32)
        mu_pcfg = mu
        fptr, fii, fjj, fss, flx = project_items(lens, ptr, ii, jj, ss, mu,
                                                 float(self.prune_threshold or 0.0), ident_ptr,
                                                 ident, self._fine_is_pre, fl_off, fl_pos, fl_sym)
        words_flat = np.array([self.word_index_.get(w, -1) for s in sents for w in s],
                              dtype=np.int64)
        pcfg_chart = (ptr, ii, jj, ss, mu_pcfg, Zf)
        return (lens, fptr, fii, fjj, fss, flx, fl_prob, fl_sym, fl_tok, smax, words_flat,
                pcfg_chart)

    def _prepare_parsing(self):
        if getattr(self, "_coarse_lg", None) is not None:
            return
        pc = self.pcfg_
        cg, fg = pc.coarse_, pc.grammar_
        self._coarse_lg = _pcfg_grammar(cg)
        self._fine_lg = _pcfg_grammar(fg)
        self._coarse_un = np.unique(cg.un_parent).astype(np.int32)
        self._coarse_bin = np.unique(cg.bin_parent).astype(np.int32)
        proj = pc.proj_
        order = np.argsort(proj, kind="stable").astype(np.int32)
        ptr = np.zeros(cg.n_symbols + 1, dtype=np.int32)
        np.cumsum(np.bincount(proj, minlength=cg.n_symbols), out=ptr[1:])
        self._c2f_ptr, self._c2f_sym = ptr, order
        self._fine_is_pre = fg.is_preterminal.astype(np.uint8)

    def _parse_chunk(self, sentences, tags, ids, jobs, stats, out, coarse_threshold, last,
                     sym_class, is_pre, K):
        """Parse sentences ``ids`` into ``out``; returns the ids whose pruned PCFG chart has no
        parse (left for a retry with less pruning) unless ``last``."""
        from .._ext.lpcfg_io import decode_batch
        from ..grammar.chart import flat_tree, nodes_to_tree

        fg = self.pcfg_.grammar_
        sents = [sentences[k] for k in ids]
        stags = None if tags is None else [tags[k] for k in ids]
        saved = self.coarse_threshold
        try:
            self.coarse_threshold = coarse_threshold
            (lens, ptr, ii, jj, ss, lx, fl_prob, fl_sym, fl_tok, smax, words_flat,
             pcfg_chart) = self._coarse_to_fine(sents, stags, jobs, stats)
        finally:
            self.coarse_threshold = saved
        p_ptr, p_i, p_j, p_s, p_mu, p_Z = pcfg_chart
        pcfg_ok = np.isfinite(p_Z) & (p_Z > 0)
        safe = np.maximum(lx, 0)
        probs = self._lexical_probs(fg, fl_sym[safe], words_flat[fl_tok[safe]], fl_prob[safe])
        lw = np.where(lx >= 0, probs / smax[fl_tok[safe]], 0.0)
        lo = np.where(lx >= 0, self._leaf_offsets(fl_sym[safe], words_flat[fl_tok[safe]]),
                      -1).astype(np.int64)
        mu, Z, st = self._run(self.lpcfg_, ptr, ii, jj, ss, lw, lo, self.lex_table_, lens, jobs)
        if np.any(st != 0):
            raise MemoryError("chart allocation failed in the L-PCFG pass")
        # mu = alpha beta / Z is a ratio of two estimates; it is used whatever the sign of Z
        # (measured: better than falling back for Z < 0); only Z = 0 or a non-finite Z falls
        # back to the PCFG posteriors
        bad = ~(np.isfinite(Z) & (Z != 0))
        stats["negative_marginals"] += int(np.count_nonzero(mu < 0))
        mu = np.where(np.isfinite(mu), np.maximum(mu, 0.0), 0.0)
        nodes, nptr = decode_batch(lens, ptr, ii, jj, ss, mu, sym_class, is_pre, K, jobs)
        nodes_p = nptr_p = None
        retry = []
        for r, k in enumerate(ids):
            if not pcfg_ok[r] and not last:
                retry.append(k)
                continue
            stats["items_pcfg"] += int(p_ptr[r + 1] - p_ptr[r])
            stats["items_lpcfg"] += int(ptr[r + 1] - ptr[r])
            stats["negative_z"] += int(Z[r] < 0)
            words = sentences[k]
            tri = None if bad[r] else nodes[nptr[r]:nptr[r + 1]]
            if tri is None or tri.shape[0] == 0 or np.any(tri[:, 2] < 0):
                # no usable L-PCFG marginals (Z = 0 or not finite, or a word whose tags all
                # got clipped): decode the plain PCFG's posteriors instead
                tri = None
                if pcfg_ok[r]:
                    if nodes_p is None:
                        nodes_p, nptr_p = decode_batch(lens, p_ptr, p_i, p_j, p_s,
                                                       np.maximum(p_mu, 0.0), sym_class, is_pre,
                                                       K, jobs)
                    tri = nodes_p[nptr_p[r]:nptr_p[r + 1]]
                    if tri.shape[0] and not np.any(tri[:, 2] < 0):
                        stats["fallback_pcfg"] += 1
                    else:
                        tri = None
            if tri is None:
                stats["fallback_flat"] += 1
                out[k] = flat_tree(words, self.pcfg_.best_tags(
                    words, None if stags is None else stags[r]), self.pcfg_.root_label_)
                continue
            out[k] = nodes_to_tree(tri, words, fg.classes, fg.class_is_tag)
        return retry

    def parse(self, sentences, tags=None, jobs=None, progress=None, chunk_size=256):
        """Parse tokenised sentences; returns one :class:`Tree` per sentence (rooted at TOP).

        ``tags``: optional given POS tags (one list or None per sentence).  ``jobs``: OpenMP
        threads (default: the model's ``jobs``, else all CPUs).  ``progress``: optional callable
        ``progress(done, total)``.  Statistics of the last call are in ``last_parse_stats_``.
        """
        from threadpoolctl import threadpool_limits


        self._check_fitted()
        sentences, tags = _check_sentences(sentences, tags)
        jobs = default_threads(jobs or self.jobs)
        self._prepare_parsing()
        fg = self.pcfg_.grammar_
        out: list = [None] * len(sentences)
        todo = [k for k, s in enumerate(sentences) if s]
        for k, s in enumerate(sentences):
            if not s:
                out[k] = Tree("TOP", [])
        todo.sort(key=lambda k: -len(sentences[k]))
        stats = {"sentences": len(sentences), "empty": len(sentences) - len(todo),
                 "fallback_pcfg": 0, "fallback_flat": 0, "items_pcfg": 0, "items_lpcfg": 0,
                 "negative_marginals": 0, "negative_z": 0}
        sym_class = fg.sym_class.astype(np.int32)
        is_pre = fg.is_preterminal.astype(np.uint8)
        K = len(fg.classes)
        if progress:
            progress(0, len(sentences))
        done = stats["empty"]
        chunk = max(1, chunk_size) * jobs
        with threadpool_limits(limits=1):
            for c0 in range(0, len(todo), chunk):
                ids = todo[c0:c0 + chunk]
                # coarse-to-fine can prune away every fine derivation (the coarse skeleton has
                # no v=2 refinement): such sentences are redone with a 1000x lower coarse
                # threshold, then with no coarse pruning at all
                pending = list(ids)
                for level in (self.coarse_threshold, (self.coarse_threshold or 0) * 1e-3, None):
                    if not pending:
                        break
                    last = level is None or not self.coarse_threshold
                    pending = self._parse_chunk(sentences, tags, pending, jobs, stats, out,
                                                level, last, sym_class, is_pre, K)
                    if not self.coarse_threshold:
                        break
                done += len(ids)
                if progress:
                    progress(done, len(sentences))
        self.last_parse_stats_ = stats
        return out

    # ------------------------------------------------------------------ tree scoring
    def tree_probability(self, tree) -> float:
        """The model's estimate of ``p(tree)`` for a treebank tree (may be negative or zero).

        The tree is prepared like the training trees; with ``lexicon="mle"`` an unseen
        (tag, word) pair gives 0.
        """
        self._check_fitted()
        fg = self.pcfg_.grammar_
        t = prepare(tree, self.v, self.h, self.tag_parent)
        top = t.children[0] if (t.label == "TOP" and len(t.children) == 1) else t
        from ..trees.tree import TreeArrays

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
        if self.lexicon == "pcfg":
            lexp = fg.lexicon.tag_word_scores(words)[np.arange(len(words)), psym]
        else:
            lexp = self._lexical_probs(fg, psym, wid, None)
        offs = self._leaf_offsets(psym, wid)
        leaf = [None] * N
        g = self.lpcfg_
        for k, q in enumerate(pre):
            mq = int(g.m[sym[q]])
            leaf[q] = lexp[k] * self.lex_table_[offs[k]:offs[k] + mq]
        return g.tree_weight(sym, left, right, leaf)

    # ------------------------------------------------------------------ persistence
    def save(self, path):
        """Write the fitted model to ``path`` (versioned, pickle-free; see fastspectral.io)."""
        self._check_fitted()
        if self.features is not None:
            raise ValueError("a model with a custom feature function cannot be saved "
                             "(features are only needed for fitting: set features=None first)")
        pmeta, parr = self.pcfg_.state()
        arrays = {"pcfg_" + k: v for k, v in parr.items()}
        arrays.update(self.lpcfg_.arrays("lpcfg_"))
        arrays.update({"lex_keys": self.lex_keys_, "lex_off": self.lex_off_,
                       "lex_count": self.lex_count_, "lex_rare_off": self.lex_rare_off_,
                       "lex_table": self.lex_table_, "tag_count": self.tag_count_})
        sv_syms = np.array(sorted(self.singular_values_), dtype=np.int64)
        arrays["sv_syms"] = sv_syms
        arrays["sym_counts"] = np.asarray(self.sym_counts_, dtype=np.int64)
        arrays["sv_ptr"] = np.concatenate([[0], np.cumsum([len(self.singular_values_[a])
                                                           for a in sv_syms])]).astype(np.int64)
        arrays["sv_vals"] = (np.concatenate([self.singular_values_[a] for a in sv_syms])
                             if len(sv_syms) else np.zeros(0))
        meta = {"params": self.get_params(), "pcfg": pmeta, "vocab": self.vocab_,
                "log_rule_per_word": self.log_rule_per_word_,
                "n_train_trees": self.n_train_trees_, "fit_seconds": self.fit_seconds_}
        save_model_file(path, self.model_kind, meta, arrays)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`."""
        _, meta, arrays = load_model_file(path, expected_kind=cls.model_kind)
        return cls._from_model_file(meta, arrays)

    @classmethod
    def _from_model_file(cls, meta, arrays):
        from ..grammar.pcfg import PCFG

        model = cls(**meta["params"])
        parr = {k[len("pcfg_"):]: v for k, v in arrays.items() if k.startswith("pcfg_")}
        model.pcfg_ = PCFG.from_state(meta["pcfg"], parr)
        model.lpcfg_ = LatentGrammar.from_arrays(arrays, "lpcfg_")
        model.states_ = model.lpcfg_.m
        model.lex_keys_ = arrays["lex_keys"]
        model.lex_off_ = arrays["lex_off"]
        model.lex_count_ = arrays["lex_count"]
        model.lex_rare_off_ = arrays["lex_rare_off"]
        model.lex_table_ = arrays["lex_table"]
        model.tag_count_ = arrays["tag_count"]
        model.vocab_ = list(meta["vocab"])
        model.word_index_ = {w: i for i, w in enumerate(model.vocab_)}
        ptr = arrays["sv_ptr"]
        model.singular_values_ = {int(a): arrays["sv_vals"][ptr[k]:ptr[k + 1]]
                                  for k, a in enumerate(arrays["sv_syms"])}
        model.sym_counts_ = arrays["sym_counts"]
        model.log_rule_per_word_ = float(meta["log_rule_per_word"])
        model.n_train_trees_ = meta["n_train_trees"]
        model.fit_seconds_ = meta["fit_seconds"]
        return model

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"SpectralLPCFG({params})"
