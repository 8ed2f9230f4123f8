"""The coarse-to-fine parse path of the latent-variable PCFG parsers.

:class:`CoarseToFineParser` is mixed into :class:`~fastspectral.lpcfg.latent.LatentPCFGBase`
(every L-PCFG learner parses the same way); it holds the class-level switches of the parse path
(``max_memory``, ``skip_same_pcfg``, ``retry_factors``: attributes, not hyperparameters, not
saved), the tables derived from the fitted PCFG and :meth:`CoarseToFineParser.parse`, all
compiled and parallel over sentences (OpenMP):

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
marginals are unchanged.

It reads the fitted state of the base (``pcfg_``, ``lpcfg_``, the lexical table,
``log_rule_per_word_``, ``word_index_``) and the hyperparameters ``prune_threshold``,
``coarse_threshold`` and ``jobs``.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields

import numpy as np

from .._ext._status import OVER_BUDGET
from ..trees.tree import Tree
from .params import LatentGrammar

__all__ = ["CoarseToFineParser", "ParseStats"]


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
    items_pruner : int
        Chart items of the pruning L-PCFG's pass (``pruner_``; 0 without one).
    pruner_retries : int
        Sentences whose L-PCFG chart after the pruning L-PCFG's pass had no usable parse,
        parsed again at the next level without it.
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
    items_pruner: int = 0
    pruner_retries: int = 0
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
    fl_prob: np.ndarray         # fine lexical entries: P(w | p), symbol, token, the
    fl_sym: np.ndarray          # sentences' offsets and the positions
    fl_tok: np.ndarray
    fl_off: np.ndarray
    fl_pos: np.ndarray
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


def _pcfg_grammar(g) -> LatentGrammar:
    """A plain PCFG :class:`~fastspectral.grammar.grammar.Grammar` as a one-state L-PCFG."""
    S = g.n_symbols
    roots = {int(a): [float(g.root_prob[a])] for a in np.flatnonzero(g.root_prob > 0)}
    return LatentGrammar(np.ones(S, np.int32), g.bin_parent, g.bin_left, g.bin_right,
                         np.asarray(g.bin_prob, np.float64), g.un_parent, g.un_child,
                         np.asarray(g.un_prob, np.float64), roots)


class CoarseToFineParser:
    """The parse path of the L-PCFG parsers (see the module docstring); a mixin of
    :class:`~fastspectral.lpcfg.latent.LatentPCFGBase`."""

    #: memory budget of the charts of :meth:`parse` (see :mod:`fastspectral._memory`): None
    #: for half the physical memory (or ``$FASTSPECTRAL_MAX_MEMORY``), bytes, a size such as
    #: ``"2G"``, 0 for no limit; an attribute, not a hyperparameter (it is not saved)
    max_memory = None
    #: skip the PCFG pass when the PCFG is the coarse grammar itself (``v=1, h=0``): the coarse
    #: survivors go to the L-PCFG pass without the second pruning at ``prune_threshold``, and
    #: the PCFG pass runs only for chunks with a sentence whose L-PCFG total is unusable (see
    #: docs/notes/throughput.md: parses changed and F1).  An attribute of the parse path, not saved.
    skip_same_pcfg = True
    #: coarse thresholds of the retries, as factors of ``coarse_threshold``, for the sentences
    #: whose pruned PCFG chart has no parse (the last retry is always unpruned).  An attribute
    #: of the parse path, not saved.
    retry_factors = (1e-3,)

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
        if T.dtype == np.float32:       # float32_tensors(): the model holds float32 only
            return T
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
        if tables is not None and tables.pcfg is self.pcfg_:
            return tables
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
                              same=bool(fg.same_as(cg)))
        self._tables = tables
        return tables

    def _coarse_chart_symbols(self) -> int:
        """Symbols of the dense chart of the coarse pass (its memory is known before parsing)."""
        return self.pcfg_.coarse_.n_symbols

    def _coarse_items(self, sents, stags, jobs, coarse_threshold, tables) -> list:
        """The coarse pass: the (i, j, symbol) items of the coarse grammar whose posterior is
        at least ``coarse_threshold``, per sentence (exhaustive inside-outside)."""
        from ..grammar.chart import posterior_prune

        return posterior_prune(self.pcfg_.coarse_, sents, coarse_threshold, stags, jobs)

    def _coarse_to_fine(self, sents, stags, jobs, coarse_threshold, tables,
                        max_bytes=0) -> _PrunedCharts:
        """The pruned L-PCFG charts of a batch (coarse PCFG -> PCFG cascade); the coarse pass
        prunes at ``coarse_threshold`` (None or 0: no coarse pruning); ``max_bytes``: chart
        budget of one sentence in the PCFG pass (0: none; ``over`` flags the sentences past it)."""
        from .._ext.tensor_chart import full_items, leaf_arrays, project_items
        from ..grammar.chart import pack_lexical

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
        #    faster than an X-bar -> coarse cascade, experiments/xbar_prepass.py)
        threshold = 0.5
        if coarse_threshold:
            citems = self._coarse_items(sents, stags, jobs, float(coarse_threshold), tables)
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
                                 fl_prob=fl_prob, fl_sym=fl_sym, fl_tok=fl_tok, fl_off=fl_off,
                                 fl_pos=fl_pos, smax=smax, words_flat=words_flat, pcfg_ptr=ptr,
                                 pcfg_ii=ii, pcfg_jj=jj, pcfg_ss=ss, pcfg_mu=None, pcfg_z=None,
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
                             fl_prob=fl_prob, fl_sym=fl_sym, fl_tok=fl_tok, fl_off=fl_off,
                             fl_pos=fl_pos, smax=smax, words_flat=words_flat, pcfg_ptr=ptr,
                             pcfg_ii=ii, pcfg_jj=jj, pcfg_ss=ss, pcfg_mu=mu, pcfg_z=Zf, over=over)

    def _latent_pass(self, ch, ptr, ii, jj, ss, lx, jobs, max_bytes):
        """This model's tensor inside-outside over the items ``(ptr, ii, jj, ss, lx)`` of the
        batch ``ch`` (a :class:`_PrunedCharts`): ``(mu, Z, status)``.  ``MemoryError``: from
        the kernel."""
        from .._ext.tensor_chart import leaf_arrays

        # leaf weights and table offsets per lexical entry (O(entries): this runs under the GIL
        # between the parallel kernels), spread over the items by a parallel kernel
        ent_word = ch.words_flat[ch.fl_tok]
        lw, lo = leaf_arrays(
            ptr, lx, self._lexical_probs(ch.fl_sym, ent_word, ch.fl_prob) / ch.smax[ch.fl_tok],
            np.ascontiguousarray(self._leaf_offsets(ch.fl_sym, ent_word), dtype=np.int64), jobs)
        return self._run(self.lpcfg_, ptr, ii, jj, ss, lw, lo, self.lex_table_, ch.lens, jobs,
                         max_bytes, self._tensors_f32())

    def _pruner_pass(self, ch, tables, jobs, max_bytes):
        """The pruning L-PCFG's pass (``pruner_``, fewer states over the same symbols) over the
        items of ``ch``: the items whose marginal under it is at least ``pruner_threshold``,
        ``(ptr, ii, jj, ss, lx, pruned)``; ``pruned[r]`` is False for a sentence whose total
        under the pruner is not positive and finite (its items are all kept)."""
        from .._ext.tensor_chart import project_items

        mu, Z, st = self.pruner_._latent_pass(ch, ch.ptr, ch.ii, ch.jj, ch.ss, ch.lx, jobs,
                                              max_bytes)
        pruned = np.isfinite(Z) & (Z > 0) & (st != OVER_BUDGET)
        keep = np.repeat(~pruned, np.diff(ch.ptr)) | ~np.isfinite(mu)
        mu = np.where(keep, np.inf, mu)
        S = self.pcfg_.grammar_.n_symbols
        ident_ptr = np.arange(S + 1, dtype=np.int32)
        ident = np.arange(S, dtype=np.int32)
        out = project_items(ch.lens, ch.ptr, ch.ii, ch.jj, ch.ss, mu,
                            float(self.pruner_threshold), ident_ptr, ident, tables.fine_is_pre,
                            ch.fl_off, ch.fl_pos, ch.fl_sym, n_threads=jobs)
        return (*out, pruned)

    def _parse_chunk(self, sentences, tags, ids, jobs, stats, out, coarse_threshold, last,
                     tables, max_bytes=0, over=None, use_pruner=False):
        """Parse sentences ``ids`` into ``out`` (counting into ``stats``, the
        :class:`ParseStats` of this call); returns the ids whose pruned PCFG chart has no parse
        (left for a retry with less pruning) unless ``last``.  Sentences whose pruned charts
        pass ``max_bytes`` (per sentence; 0: no limit) are appended to ``over``, unparsed.
        ``use_pruner``: run the pruning L-PCFG ``pruner_`` (when the model has one) between the
        PCFG pass and this model's; a sentence it leaves without a usable parse is returned for
        the next level too."""
        from .._ext.tensor_chart import decode_batch
        from ..grammar.chart import flat_tree, nodes_to_tree

        fg = self.pcfg_.grammar_
        sym_class = fg.sym_class.astype(np.int32)
        is_pre = fg.is_preterminal.astype(np.uint8)
        K = len(fg.classes)
        sents = [sentences[k] for k in ids]
        stags = None if tags is None else [tags[k] for k in ids]
        ch = self._coarse_to_fine(sents, stags, jobs, coarse_threshold, tables, max_bytes)
        lens, ptr, ii, jj, ss, lx = ch.lens, ch.ptr, ch.ii, ch.jj, ch.ss, ch.lx
        pruned = None
        if use_pruner and getattr(self, "pruner_", None) is not None:
            ptr, ii, jj, ss, lx, pruned = self._pruner_pass(ch, tables, jobs, max_bytes)
        mu, Z, st = self._latent_pass(ch, ptr, ii, jj, ss, lx, jobs, max_bytes)
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
            tri = None if bad[r] else nodes[nptr[r]:nptr[r + 1]]
            usable = tri is not None and tri.shape[0] > 0 and not np.any(tri[:, 2] < 0)
            if not usable and pruned is not None and pruned[r] and not last:
                # the pruning L-PCFG left no usable parse: the next level runs without it
                stats.pruner_retries += 1
                retry.append(k)
                continue
            stats.items_pcfg += int(p_ptr[r + 1] - p_ptr[r])
            stats.items_lpcfg += int(ptr[r + 1] - ptr[r])
            if pruned is not None:
                stats.items_pruner += int(ch.ptr[r + 1] - ch.ptr[r])
            stats.negative_z += int(Z[r] < 0)
            words = sentences[k]
            if not usable:
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
        n_coarse = self._coarse_chart_symbols()
        need = {k: _memory.lpcfg_chart_bytes(len(sentences[k]), n_coarse) for k in todo}
        plan = _memory.plan(todo, need, budget, n_threads)
        refused = list(plan.refused)
        share = budget // n_threads if budget else 0
        batches = [(plan.parallel[c:c + chunk], n_threads, share)
                   for c in range(0, len(plan.parallel), chunk)]
        batches += [(plan.alone[c:c + max(1, chunk_size)], 1, budget or 0)
                    for c in range(0, len(plan.alone), max(1, chunk_size))]
        n_full = len(tables.coarse_un), len(tables.coarse_bin)

        # (coarse threshold, whether the pruning L-PCFG runs): only the first level runs it
        levels = ((coarse, True), *(((coarse or 0) * f, False) for f in self.retry_factors),
                  (None, False))

        def parse_levels(ids, threads, max_bytes, over, st, levels=levels):
            # coarse-to-fine can prune away every fine derivation (the coarse skeleton has
            # no v=2 refinement): such sentences are redone with a 1000x lower coarse
            # threshold, then with no coarse pruning at all; returns the ids still pending
            # after ``levels``
            pending = list(ids)
            for level, use_pruner in levels:
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
                                            level, last, tables, max_bytes, over,
                                            use_pruner=use_pruner)
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
