"""Learning the L-PCFGs from partitioned treebanks (the statistics protocol of
:mod:`fastspectral.base`).

Kept as one module (about 950 lines): the statistics protocol of the three L-PCFG learners.
Pass 0 (:class:`LatentCounts`, :class:`LatentContext`, ``globalize_nodes``) fixes the ids
that every later pass indexes by, the spectral passes and the EM ones (:class:`GlobalLayout`,
which the pivot learner's passes also use) alike, and they share the helpers that give the
merged counts their ids (``_unique_pairs``, ``_lookup_pairs``).

Every estimate of the L-PCFG learners is a function of sums over training nodes, but the node
arrays and features are indexed by ids (symbols, rules, words, word classes) that only the whole
treebank fixes.  The learners therefore run in passes, each a sum over the partitions followed
by one estimate on the merged sums, whose result (the *context*) is broadcast to the next pass:

pass 0 (every L-PCFG)
    :class:`LatentCounts`: the rule, root and lexical counts of the binarised trees, keyed by
    strings (:class:`~fastspectral.grammar.stats.GrammarCounts`).  The merged counts give the
    symbol table, the vocabulary, the grammars and the plain PCFG, exactly as ``fit`` builds
    them: the :class:`LatentContext`.  With it each partition flattens its trees into node
    arrays over the *global* ids (:meth:`LatentContext.nodes`, the rows of the whole
    treebank's ``NodeData`` for its trees).

:class:`~fastspectral.lpcfg.spectral.SpectralLPCFG` (Cohen et al. 2012, figure 4)
    pass 1, :class:`FeatureCounts`: the count of every (symbol, inside feature) and (symbol,
    outside feature) key: the feature ids (sorted keys) and the scaling
    ``sqrt(M_a / (count + kappa))``;
    pass 2, :class:`OmegaCounts`: the co-occurrence counts of inside and outside features (one
    sparse block per symbol); merged, they give ``Omega^a``, its SVD and the projections;
    pass 3, :class:`SpectralMoments`: per rule the sums of ``z (x) y_b (x) y_c``, of the pair
    products and of the single projections (the terms of the smoothed moments), per symbol,
    per root, per (tag, word) and per rare word the sums of projections, and the log rule
    probability per word; merged, they give the tensors exactly as ``fit``'s averages over all
    nodes.

:class:`~fastspectral.lpcfg.pivot.PivotLPCFG` (Cohen & Collins 2014, figure 1)
    pass 1, :class:`~fastspectral.lpcfg.pivot.PivotCounts`: integer counts of node types
    ``(symbol, inside and outside feature keys of every feature pair)`` (the co-occurrence
    matrices ``Q^a`` of step 1 and the alignment of the pairs are sums over them) and of the
    evidence items of step 2 (per rule, lexical row and root: the feature keys of the node and
    its children).  The merged counts are exactly the treebank's, so the estimate (MDP 1, the
    convex EM, the normalisation: :func:`~fastspectral.lpcfg.pivot.pivot_estimate`, which
    ``fit`` runs on the same counts) is ``fit``'s, bit for bit.

:class:`~fastspectral.lpcfg.em.EMLPCFG`
    (``init="pivot"``: the pivot pass first, its estimate mixed with the uniform spread is the
    start) pass 1, 2, ...: one EM iteration each: the E-step (expected counts and
    log-likelihood) of each partition with the current parameters (the context), summed; the
    M-step on the sums.  The lexical rows (tag, word class) of a partition are a subset of the
    treebank's: its parameters are gathered from, and its counts scattered into, the global
    rows.
"""
from __future__ import annotations

import time
import uuid

import numpy as np
import scipy.sparse as sp
from .._jit import njit

from ..base import Partition, Statistics
from ..grammar.stats import GrammarCounts, check_statistics
from ..trees.transforms import base_label
from .features import extract_nodes, nodes_by_rule, word_class
from .latent_params import RuleLayout, symbol_states
from .params import block_offsets

__all__ = ["LatentCounts", "LatentContext", "FeatureCounts", "OmegaCounts", "SpectralMoments",
           "EMCounts", "GlobalLayout", "prepare_latent_partition", "latent_counts",
           "latent_context", "em_layout", "em_start"]


# ================================================================================================
# pass 0: the treebank's counts, symbol tables and plain PCFG
# ================================================================================================
def _settings(model) -> tuple:
    """What the statistics of every pass depend on (statistics of other settings do not merge)."""
    return (model.kind, model.v, model.h, bool(model.tag_parent))


def prepare_latent_partition(model, items) -> Partition:
    """A partition of treebank trees for ``model`` (an L-PCFG learner): its
    :meth:`~fastspectral.lpcfg.latent.LatentPCFGBase.prepare_partition`, the trees cleaned,
    unary-collapsed and binarised with the model's ``v`` / ``h`` / ``tag_parent``."""
    return model.prepare_partition(items)


class LatentCounts(Statistics):
    """Pass 0: the counts of the binarised trees and the number of trees read."""

    _same = ("settings",)

    def __init__(self, settings, counts: GrammarCounts, n_read: int):
        self.settings = settings
        self.counts = counts
        self.n_read = n_read


def latent_counts(model, part: Partition) -> LatentCounts:
    return LatentCounts(_settings(model), GrammarCounts.of_trees(part.data), part.n_items)


class LatentContext:
    """What pass 0 fixes for the next passes: the plain PCFG (``pcfg``, with the fine grammar
    ``grammar``), the vocabulary with its counts and word classes, the node count of every
    symbol, the number of trees and the seed.  :meth:`nodes` gives a partition's node arrays
    over these ids."""

    def __init__(self, settings, pcfg, vocab, word_count, sym_counts, rule_counts, n_trees,
                 seed):
        self.settings = settings
        self.token = uuid.uuid4().hex          # names this context in the partitions' caches
        self.pcfg = pcfg
        self.grammar = pcfg.grammar_
        self.vocab = list(vocab)
        self.word_count = np.asarray(word_count, dtype=np.int64)
        classes: dict = {}
        self.vclass = np.array([classes.setdefault(word_class(w), len(classes))
                                for w in self.vocab], dtype=np.int64)
        self.sym_counts = np.asarray(sym_counts, dtype=np.int64)
        self.rule_counts = np.asarray(rule_counts, dtype=np.int64)
        self.n_trees = int(n_trees)
        self.seed = int(seed)

    def nodes(self, part: Partition):
        """The :class:`~fastspectral.lpcfg.features.NodeData` of a partition over the global
        symbol, rule and word ids (cached in the partition)."""
        key = ("nodes", self.token)
        got = part.cache.get(key)
        if got is None:
            got = globalize_nodes(extract_nodes(part.data, self.grammar), self)
            part.cache.clear()                 # an older fit's arrays are not needed again
            part.cache[key] = got
        return got


def globalize_nodes(nodes, ctx: LatentContext):
    """``nodes`` (extracted with the global grammar but a partition's own vocabulary) with the
    global word ids, word classes, rule codes, vocabulary and word counts."""
    if nodes.n_nodes == 0:
        nodes.vocab = ctx.vocab
        nodes.word_count = ctx.word_count
        return nodes
    g = ctx.grammar
    # a dict of Python strings: a fixed-width unicode array costs the longest word times the
    # vocabulary size
    get = {w: i for i, w in enumerate(ctx.vocab)}.get
    gid = np.fromiter((get(w, -1) for w in nodes.vocab), dtype=np.int64, count=len(nodes.vocab))
    if np.any(gid < 0):
        raise ValueError("a partition has a word that is not in the merged vocabulary (were the "
                         "statistics computed on other partitions?)")
    pre = np.flatnonzero(nodes.word >= 0)
    word = nodes.word.copy()
    word[pre] = gid[nodes.word[pre]]
    lexclass = nodes.lexclass.copy()
    lexclass[pre] = ctx.vclass[word[pre]]
    code = nodes.code.copy()
    code[pre] = g.n_binary + int(g.un_parent.shape[0]) + word[pre].astype(np.int64)
    nodes.word = word
    nodes.lexclass = lexclass
    nodes.code = code
    nodes.vocab = ctx.vocab
    nodes.word_count = ctx.word_count
    return nodes


def latent_context(model, stats: LatentCounts, t0: float) -> LatentContext:
    """The :class:`LatentContext` of the merged pass-0 counts: the grammars and the plain PCFG
    as ``LatentPCFGBase._prepare_treebank`` builds them."""
    from ..grammar.pcfg import PCFG
    from .latent import resolve_random_state

    check_statistics(stats, LatentCounts, _settings(model))
    if stats.n_read == 0:
        raise ValueError("cannot fit an L-PCFG on an empty treebank")
    c = stats.counts
    if c.n_trees == 0:
        raise ValueError("cannot fit an L-PCFG: no tree has a word (only -NONE- elements)")
    seed = resolve_random_state(model.random_state)
    pcfg = PCFG(v=model.v, h=model.h, tag_parent=model.tag_parent, jobs=model.jobs)
    opts = pcfg.lexicon_options()
    g = c.grammar(opts)
    coarse = c.mapped(base_label).grammar(opts)
    pcfg.grammar_ = g
    pcfg.coarse_ = coarse
    pcfg.proj_ = pcfg._projection(g, coarse)
    pcfg.root_label_ = c.most_frequent_root()
    pcfg.n_train_trees_ = c.n_trees
    pcfg.fit_time_ = time.perf_counter() - t0
    wc = c.word_counts()
    vocab = sorted(wc)
    tag_tokens: dict = {}
    for (t, _, _), n in c.lexical.items():
        tag_tokens[t] = tag_tokens.get(t, 0) + n
    sym_counts = np.array([c.lhs.get(s, 0) + tag_tokens.get(s, 0) for s in g.symbols],
                          dtype=np.int64)
    rule_counts = np.array([n for _, n in sorted(c.binary.items())], dtype=np.int64)
    ctx = LatentContext(stats.settings, pcfg, vocab, [wc[w] for w in vocab], sym_counts,
                        rule_counts, c.n_trees, seed)
    # the (tag, word) pairs with their counts, unary rule and root counts (EM's layout)
    V = len(vocab)
    widx = {w: i for i, w in enumerate(vocab)}
    pk: dict = {}
    for (t, w, _), n in c.lexical.items():
        k = g.sym_index[t] * (V + 1) + widx[w]
        pk[k] = pk.get(k, 0) + n
    keys = np.array(sorted(pk), dtype=np.int64)
    ctx.pair_key = keys
    ctx.pair_count = np.array([pk[int(k)] for k in keys], dtype=np.int64)
    ctx.urule_counts = np.array([n for _, n in sorted(c.unary.items())], dtype=np.int64)
    ctx.root_counts = np.zeros(g.n_symbols, dtype=np.int64)
    for lab, n in c.root.items():
        ctx.root_counts[g.sym_index[lab]] += n
    return ctx


# ================================================================================================
# (label, key) count tables
# ================================================================================================
def _unique_pairs(lab, key, cnt=None):
    """``(lab, key, cnt)`` summed over equal (lab, key), sorted by (lab, key) (``cnt`` None:
    one each).  The keys are ranked by one sort, then the pairs are the int64 codes
    ``lab * U + rank(key)``: two one-key sorts instead of a two-key ``lexsort``."""
    lab = np.asarray(lab, dtype=np.int64)
    key = np.asarray(key, dtype=np.int64)
    n = lab.shape[0]
    if n == 0:
        return lab, key, np.zeros(0, dtype=np.int64)
    order = np.argsort(key)
    ks = key[order]
    new = np.ones(n, dtype=bool)
    new[1:] = ks[1:] != ks[:-1]
    ukeys = ks[new]
    kid = np.empty(n, dtype=np.int64)
    kid[order] = np.cumsum(new) - 1
    U = ukeys.shape[0]
    codes = lab * U + kid
    if cnt is None:
        codes = np.sort(codes)
    else:
        o2 = np.argsort(codes)
        codes = codes[o2]
        cnt = np.asarray(cnt, dtype=np.int64)[o2]
    new = np.ones(n, dtype=bool)
    new[1:] = codes[1:] != codes[:-1]
    idx = np.flatnonzero(new)
    out = np.diff(np.append(idx, n)) if cnt is None else np.add.reduceat(cnt, idx)
    c = codes[idx]
    return c // U, ukeys[c % U], out.astype(np.int64)


class KeyCounts(Statistics):
    """Counts of ``(label, key)`` pairs (sorted arrays ``lab``, ``key``, ``cnt``)."""

    def __init__(self, lab, key, cnt=None):
        self.lab, self.key, self.cnt = _unique_pairs(lab, key, cnt)

    def update(self, other):
        if type(other) is not KeyCounts:
            raise TypeError(f"cannot merge {type(other).__name__} into KeyCounts")
        self.lab, self.key, self.cnt = _unique_pairs(np.concatenate([self.lab, other.lab]),
                                                     np.concatenate([self.key, other.key]),
                                                     np.concatenate([self.cnt, other.cnt]))
        return self

    @classmethod
    def of_keys(cls, keys, label, keep_label):
        """The counts of the non-zero ``keys`` (n_nodes x K) of the nodes whose label is kept."""
        keys = np.asarray(keys, dtype=np.int64)
        K = keys.shape[1] if keys.ndim == 2 else 0
        flat = keys.ravel()
        lab = np.repeat(label.astype(np.int64), K)
        sel = (flat != 0) & keep_label[lab] if lab.size else np.zeros(0, dtype=bool)
        return cls(lab[sel], flat[sel])


def _lookup_pairs(lab_sorted, key_sorted, lab, key) -> np.ndarray:
    """Positions of the ``(lab, key)`` queries in the (lab, key)-sorted table (all present)."""
    if lab.size == 0:
        return np.zeros(0, dtype=np.int64)
    ukeys = np.unique(key_sorted)
    U = max(1, ukeys.shape[0])
    table = lab_sorted * U + np.searchsorted(ukeys, key_sorted)     # sorted, distinct
    kid = np.minimum(np.searchsorted(ukeys, key), U - 1)
    out = np.minimum(np.searchsorted(table, lab * U + kid), table.shape[0] - 1)
    if np.any(lab_sorted[out] != lab) or np.any(key_sorted[out] != key):
        raise ValueError("a partition has a feature that is not in the merged feature index")
    return out


def _state_map_key(model) -> tuple:
    """``state_map`` as part of the settings that statistics must agree on."""
    return tuple(sorted((str(k), int(v)) for k, v in (model.state_map or {}).items()))


# ================================================================================================
# the spectral L-PCFG
# ================================================================================================
def _spectral_settings(model) -> tuple:
    return _settings(model) + (float(model.kappa), int(model.n_states),
                               int(model.n_states_pre or model.n_states), int(model.min_count),
                               _state_map_key(model))


class FeatureCounts(Statistics):
    """Spectral pass 1: counts of (symbol, inside key) and (symbol, outside key)."""

    _same = ("settings",)

    def __init__(self, settings, fin: KeyCounts, fout: KeyCounts):
        self.settings = settings
        self.fin = fin
        self.fout = fout


class _FeatureIndex:
    """Global feature ids of one side: the (label, key)-sorted keys, per-label column ranges and
    the scaling ``sqrt(M_a / (count + kappa))`` of every feature (as ``feature_matrices``)."""

    def __init__(self, kc: KeyCounts, sym_counts, kappa, S):
        self.lab = kc.lab
        self.key = kc.key
        self.col_ptr = np.searchsorted(kc.lab, np.arange(S + 1)).astype(np.int64)
        self.scale = np.sqrt(sym_counts[kc.lab] / (kc.cnt.astype(np.float64) + kappa))

    @property
    def n(self) -> int:
        return int(self.lab.shape[0])

    def matrix(self, keys, label, rowpos):
        """Raw one-hot CSR (value 1 per key, duplicates kept) of the nodes' keys over the
        global ids, rows in the label-sorted order ``rowpos``; keys of labels outside the index
        are dropped."""
        keys = np.asarray(keys, dtype=np.int64)
        N = label.shape[0]
        K = keys.shape[1] if keys.ndim == 2 else 0
        flat = keys.ravel()
        lab = np.repeat(label.astype(np.int64), K)
        row = np.repeat(rowpos, K)
        has = np.zeros(self.col_ptr.shape[0] - 1, dtype=bool)
        has[np.unique(self.lab)] = True
        keep = (flat != 0) & has[lab] if lab.size else np.zeros(0, dtype=bool)
        fid = _lookup_pairs(self.lab, self.key, lab[keep], flat[keep])
        rows = row[keep]
        o2 = np.argsort(rows * max(1, self.n) + fid)     # by (row, feature)
        indptr = np.zeros(N + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=N), out=indptr[1:])
        return sp.csr_matrix((np.ones(o2.shape[0]), fid[o2], indptr), shape=(N, self.n))


class OmegaCounts(Statistics):
    """Spectral pass 2: co-occurrence counts of inside (rows) and outside (columns) feature
    ids: block diagonal, one block per symbol."""

    _same = ("settings",)

    def __init__(self, settings, counts):
        self.settings = settings
        self.counts = counts


class SpectralMoments(Statistics):
    """Spectral pass 3: the sums over nodes of the projected features that the estimates
    average (see the module docstring); fields are arrays added element-wise, except the
    (tag, word) sums, keyed by ``p * (V + 1) + word``."""

    _same = ("settings",)

    def __init__(self, settings, **fields):
        self.settings = settings
        for k, v in fields.items():
            setattr(self, k, v)

    def _merge_field(self, name, a, b):
        if name == "pairs":
            keys = np.concatenate([a[0], b[0]])
            uk, inv = np.unique(keys, return_inverse=True)
            cnt = np.zeros(uk.shape[0], dtype=np.int64)
            np.add.at(cnt, inv, np.concatenate([a[1], b[1]]))
            zs = np.zeros((uk.shape[0], a[2].shape[1]))
            np.add.at(zs, inv, np.concatenate([a[2], b[2]]))
            return (uk, cnt, zs)
        return a + b


class SpectralContext:
    """Context of spectral passes 2 and 3: pass 0's :class:`LatentContext` plus the feature
    indexes, and (pass 3) the states and projections of every symbol."""

    def __init__(self, base: LatentContext, fin: _FeatureIndex, fout: _FeatureIndex):
        self.base = base
        self.token = uuid.uuid4().hex
        self.fin = fin
        self.fout = fout
        self.m = None
        self.proj_in = None
        self.proj_out = None
        self.singular_values = None


def _svd_symbols(model, ctx: LatentContext) -> np.ndarray:
    """Symbols whose moment matrix is decomposed (more than one target state, enough nodes)."""
    return (ctx.sym_counts > 0) & (model._target_states(ctx.grammar, ctx.sym_counts) > 1)


def _label_order(label, S):
    """Row of every node in the label-sorted (stable) order and the label row pointers."""
    counts = np.bincount(label, minlength=S).astype(np.int64)
    row_ptr = np.zeros(S + 1, dtype=np.int64)
    np.cumsum(counts, out=row_ptr[1:])
    node_order = np.argsort(label, kind="stable")
    rowpos = np.empty(label.shape[0], dtype=np.int64)
    rowpos[node_order] = np.arange(label.shape[0])
    return rowpos, row_ptr


def _cached_keys(model, part, ctx: LatentContext, nodes):
    """The nodes' inside and outside feature keys (cached in the partition for the next
    pass)."""
    key = ("keys", ctx.token)
    got = part.cache.get(key)
    if got is None:
        got = part.cache[key] = _feature_keys(model, nodes)
    return got


def _feature_keys(model, nodes):
    from .features import default_feature_keys

    feat = model.features or default_feature_keys
    return feat(nodes)


def spectral_statistics(model, part: Partition, context):
    """The statistics of one partition for the pass of ``context`` (see the module doc)."""
    from threadpoolctl import threadpool_limits

    settings = _spectral_settings(model)
    if context is None:
        model._validate_params()
        return latent_counts(model, part)
    with threadpool_limits(limits=1):
        if isinstance(context, LatentContext):
            nodes = context.nodes(part)
            keep = _svd_symbols(model, context)
            kin, kout = _cached_keys(model, part, context, nodes)
            return FeatureCounts(settings, KeyCounts.of_keys(kin, nodes.label, keep),
                                 KeyCounts.of_keys(kout, nodes.label, keep))
        base = context.base
        nodes = base.nodes(part)
        key = ("features", context.token)
        got = part.cache.get(key)
        if got is None:
            kin, kout = _cached_keys(model, part, base, nodes)
            rowpos, _ = _label_order(nodes.label, base.grammar.n_symbols)
            got = (context.fin.matrix(kin, nodes.label, rowpos),
                   context.fout.matrix(kout, nodes.label, rowpos), rowpos)
            part.cache.pop(("keys", base.token), None)     # not needed any more
            part.cache[key] = got
        Xin, Xout, rowpos = got
        if context.m is None:
            return OmegaCounts(settings, (Xin.T @ Xout).tocsr())
        return _spectral_moments(model, nodes, context, Xin, Xout, rowpos, settings)


def _projections(nodes, context, Xin, Xout, rowpos):
    """``Y[a]``, ``Z[a]`` (rows: the partition's nodes of ``a`` in node order) and ``pos``."""
    g = context.base.grammar
    S = g.n_symbols
    label = nodes.label
    _, row_ptr = _label_order(label, S)
    counts = np.diff(row_ptr)
    m = context.m
    Y = [None] * S
    Z = [None] * S
    for a in np.flatnonzero(counts > 0):
        Na = int(counts[a])
        if m[a] > 1:
            r0, r1 = row_ptr[a], row_ptr[a + 1]
            c0, c1 = context.fin.col_ptr[a], context.fin.col_ptr[a + 1]
            d0, d1 = context.fout.col_ptr[a], context.fout.col_ptr[a + 1]
            Y[a] = np.asarray(Xin[r0:r1, c0:c1] @ context.proj_in[int(a)])
            Z[a] = np.asarray(Xout[r0:r1, d0:d1] @ context.proj_out[int(a)])
        else:
            Y[a] = np.ones((Na, 1))
            Z[a] = np.ones((Na, 1))
    pos = rowpos - row_ptr[label]
    return Y, Z, pos, counts


def _moment_layout(g, m):
    """Offsets of the per-rule sums in the flat arrays of :class:`SpectralMoments`."""
    m64 = m.astype(np.int64)
    pa, pb, pc = g.bin_parent, g.bin_left, g.bin_right
    up, uc = g.un_parent, g.un_child
    sizes = {"t3": m64[pa] * m64[pb] * m64[pc], "t12": m64[pa] * m64[pb],
             "t13": m64[pa] * m64[pc], "t23": m64[pb] * m64[pc], "t1": m64[pa], "t2": m64[pb],
             "t3v": m64[pc],
             "u2": m64[up] * m64[uc], "u1": m64[up], "uv": m64[uc], "sym": m64}
    return {k: block_offsets(v) for k, v in sizes.items()}


def _spectral_moments(model, nodes, context, Xin, Xout, rowpos, settings) -> SpectralMoments:
    from .latent import log_rule_sum

    base = context.base
    g = base.grammar
    m = context.m
    lay = _moment_layout(g, m)
    Y, Z, pos, counts = _projections(nodes, context, Xin, Xout, rowpos)
    f = {name: np.zeros(int(lay[k][-1])) for name, k in
         (("b3", "t3"), ("b12", "t12"), ("b13", "t13"), ("b23", "t23"), ("b1", "t1"),
          ("b2", "t2"),
          ("b3v", "t3v"), ("u2", "u2"), ("u1", "u1"), ("uv", "uv"), ("root_y", "sym"),
          ("all_y", "sym"), ("rare_z", "sym"), ("all_z", "sym"))}
    S = g.n_symbols
    label = nodes.label
    # binary rules
    R = g.n_binary
    pa, pb, pc = g.bin_parent, g.bin_left, g.bin_right
    rcount, order, rptr = nodes_by_rule(nodes.rule, R)
    scalar = (m[pa] == 1) & (m[pb] == 1) & (m[pc] == 1)
    for r in np.flatnonzero(~scalar & (rcount > 0)):
        a, b, c = pa[r], pb[r], pc[r]
        idx = order[rptr[r]:rptr[r + 1]]
        za = Z[a][pos[idx]]
        yb = Y[b][pos[nodes.left[idx]]]
        yc = Y[c][pos[nodes.right[idx]]]
        n = za.shape[0]
        kr = (yb[:, :, None] * yc[:, None, :]).reshape(n, yb.shape[1] * yc.shape[1])
        f["b3"][lay["t3"][r]:lay["t3"][r + 1]] = (za.T @ kr).ravel()
        f["b12"][lay["t12"][r]:lay["t12"][r + 1]] = (za.T @ yb).ravel()
        f["b13"][lay["t13"][r]:lay["t13"][r + 1]] = (za.T @ yc).ravel()
        f["b23"][lay["t23"][r]:lay["t23"][r + 1]] = (yb.T @ yc).ravel()
        f["b1"][lay["t1"][r]:lay["t1"][r + 1]] = za.sum(0)
        f["b2"][lay["t2"][r]:lay["t2"][r + 1]] = yb.sum(0)
        f["b3v"][lay["t3v"][r]:lay["t3v"][r + 1]] = yc.sum(0)
    # unary rules
    Un = int(g.un_parent.shape[0])
    ucount, uorder, uptr = nodes_by_rule(nodes.urule, Un)
    for u in np.flatnonzero(ucount > 0):
        a, p = g.un_parent[u], g.un_child[u]
        idx = uorder[uptr[u]:uptr[u + 1]]
        za = Z[a][pos[idx]]
        yp = Y[p][pos[nodes.left[idx]]]
        f["u2"][lay["u2"][u]:lay["u2"][u + 1]] = (za.T @ yp).ravel()
        f["u1"][lay["u1"][u]:lay["u1"][u + 1]] = za.sum(0)
        f["uv"][lay["uv"][u]:lay["uv"][u + 1]] = yp.sum(0)
    # roots and per-symbol sums
    so = lay["sym"]
    rootn = np.flatnonzero(nodes.parent < 0)
    root_count = np.bincount(label[rootn], minlength=S).astype(np.int64)
    for a in np.unique(label[rootn]):
        idx = rootn[label[rootn] == a]
        f["root_y"][so[a]:so[a + 1]] = Y[a][pos[idx]].sum(0)
    for a in np.flatnonzero(counts > 0):
        f["all_y"][so[a]:so[a + 1]] = Y[a].sum(0)
        f["all_z"][so[a]:so[a + 1]] = Z[a].sum(0)
    # lexical: (tag, word) pairs and the rare words of every tag
    pre = np.flatnonzero(nodes.word >= 0)
    V = len(base.vocab)
    p_lab = label[pre].astype(np.int64)
    wid = nodes.word[pre].astype(np.int64)
    key = p_lab * (V + 1) + wid
    ukey, inv, pcount = np.unique(key, return_inverse=True, return_counts=True)
    mmax = int(m.max()) if m.size else 1
    zsum = np.zeros((ukey.shape[0], mmax))
    rare_word = base.word_count[wid] <= 1
    rare_n = np.zeros(S, dtype=np.int64)
    for p in np.unique(p_lab):
        sel = np.flatnonzero(p_lab == p)
        mp = int(m[p])
        zp = Z[p][pos[pre[sel]]]
        rsel = rare_word[sel]
        rare_n[p] = int(rsel.sum())
        f["rare_z"][so[p]:so[p + 1]] = zp[rsel].sum(0)
        np.add.at(zsum[:, :mp], inv[sel], zp)
    # log rule probability per word (numerator and tokens)
    lrw = log_rule_sum(nodes, g)
    return SpectralMoments(settings, rule_n=rcount.astype(np.int64),
                           urule_n=ucount.astype(np.int64), root_n=root_count,
                           sym_n=counts.astype(np.int64), rare_n=rare_n,
                           pairs=(ukey, pcount.astype(np.int64), zsum),
                           log_rule=float(lrw), n_tokens=int(nodes.tags.shape[0]), **f)


def spectral_fit_statistics(model, stats, context, t0: float):
    """One estimate step of the spectral L-PCFG (see the module docstring): returns the next
    context, or None once the model is installed."""
    from threadpoolctl import threadpool_limits

    settings = _spectral_settings(model)
    if context is None:
        model._validate_params()
        return latent_context(model, stats, t0)
    with threadpool_limits(limits=1):
        if isinstance(context, LatentContext):
            check_statistics(stats, FeatureCounts, settings)
            S = context.grammar.n_symbols
            kappa = float(model.kappa)
            return SpectralContext(context,
                                   _FeatureIndex(stats.fin, context.sym_counts, kappa, S),
                                   _FeatureIndex(stats.fout, context.sym_counts, kappa, S))
        if context.m is None:
            check_statistics(stats, OmegaCounts, settings)
            return _decompose(model, stats, context)
        check_statistics(stats, SpectralMoments, settings)
        _install_spectral(model, stats, context, t0)
        return None


@njit(cache=True)
def _repeated_sums(indptr, indices, counts, s_in, s_out, out):  # pragma: no cover - numba
    for i in range(indptr.shape[0] - 1):
        for e in range(indptr[i], indptr[i + 1]):
            p = s_in[i] * s_out[indices[e]]
            acc = 0.0
            for _ in range(int(counts[e])):
                acc += p
            out[e] = acc


def _scaled_cooccurrences(C, s_in, s_out):
    """``diag(s_in) C diag(s_out)`` for co-occurrence counts ``C``, every entry summed as the
    sparse product ``Pa^T Qa`` of ``fit`` sums it (the product ``s_f s_g`` added ``count``
    times, in sequence), so that ``Omega^a`` and its SVD come out bit for bit the same."""
    C = C.tocsr()
    C.sort_indices()
    out = np.empty(C.data.shape[0])
    _repeated_sums(C.indptr.astype(np.int64), C.indices.astype(np.int64), C.data, s_in, s_out,
                   out)
    return sp.csr_matrix((out, C.indices, C.indptr), shape=C.shape)


def _decompose(model, stats: OmegaCounts, context: SpectralContext) -> SpectralContext:
    """The SVD of every ``Omega^a`` and the projections (``SpectralLPCFG._estimate``)."""
    from .estimate import choose_rank, truncated_svd

    base = context.base
    g = base.grammar
    S = g.n_symbols
    counts = base.sym_counts
    fin, fout = context.fin, context.fout
    M = _scaled_cooccurrences(stats.counts.tocsr(), fin.scale, fout.scale)
    targets = model._target_states(g, counts)
    m = np.ones(S, dtype=np.int32)
    proj_in, proj_out, svals = {}, {}, {}
    seed = base.seed
    for a in np.flatnonzero((counts > 0) & (targets > 1)):    # _svd_symbols
        Na = int(counts[a])
        target = int(targets[a])
        c0, c1 = fin.col_ptr[a], fin.col_ptr[a + 1]
        d0, d1 = fout.col_ptr[a], fout.col_ptr[a + 1]
        Om = M[c0:c1, d0:d1] / Na
        k = min(target, Om.shape[0], Om.shape[1])
        if k < 1:
            continue
        U, s, Vt = truncated_svd(Om, min(min(Om.shape), k + min(k, 16)),
                                 model.svd_oversamples, model.svd_iterations, seed + int(a))
        svals[int(a)] = s.copy()
        ma = choose_rank(s, k, model.rank_tol)
        if ma > 1:
            m[a] = ma
            proj_in[int(a)] = fin.scale[c0:c1, None] * U[:, :ma]
            proj_out[int(a)] = fout.scale[d0:d1, None] * (Vt[:ma].T / s[:ma])
    context.m = m
    context.proj_in = proj_in
    context.proj_out = proj_out
    context.singular_values = svals
    return context


def _install_spectral(model, st: SpectralMoments, context: SpectralContext, t0: float):
    """The estimates of ``SpectralLPCFG._estimate`` from the merged sums, installed."""
    from .estimate import (_lam, binary_tensor_start, lexical_table, root_vector,
                           smooth_triple_moments)
    from .latent import LatentArrays
    from .params import LatentGrammar

    base = context.base
    g = base.grammar
    m = context.m
    lay = _moment_layout(g, m)
    counts = st.sym_n
    C = float(model.moment_smoothing)
    pa, pb, pc = g.bin_parent, g.bin_left, g.bin_right
    rcount = st.rule_n
    toff, tensors, scalar = binary_tensor_start(g, m, rcount, counts)
    so = lay["sym"]
    for r in np.flatnonzero(~scalar & (rcount > 0)):
        a, b, c = pa[r], pb[r], pc[r]
        ma, mb, mc = int(m[a]), int(m[b]), int(m[c])
        n = int(rcount[r])
        E3 = st.b3[lay["t3"][r]:lay["t3"][r + 1]].reshape(ma, mb, mc) / n
        lam = float(_lam(n, C))
        if lam < 1.0:
            e1 = st.b1[lay["t1"][r]:lay["t1"][r + 1]] / n
            e2 = st.b2[lay["t2"][r]:lay["t2"][r + 1]] / n
            e3 = st.b3v[lay["t3v"][r]:lay["t3v"][r + 1]] / n
            E12 = st.b12[lay["t12"][r]:lay["t12"][r + 1]].reshape(ma, mb) / n
            E13 = st.b13[lay["t13"][r]:lay["t13"][r + 1]].reshape(ma, mc) / n
            E23 = sym = None
            if model.moment_backoff == "symbol":
                E23 = st.b23[lay["t23"][r]:lay["t23"][r + 1]].reshape(mb, mc) / n
                sym = (st.all_z[so[a]:so[a + 1]] / counts[a],
                       st.all_y[so[b]:so[b + 1]] / counts[b],
                       st.all_y[so[c]:so[c + 1]] / counts[c])
            smooth_triple_moments(E3, e1, e2, e3, E12, E13, lam, E23, sym)
        E3 *= rcount[r] / counts[a]
        tensors[toff[r]:toff[r + 1]] = E3.ravel()
    Un = int(g.un_parent.shape[0])
    unary = [None] * Un
    for u in range(Un):
        a, p = g.un_parent[u], g.un_child[u]
        nu = int(st.urule_n[u])
        if nu == 0:
            unary[u] = np.zeros((m[a], m[p]))
            continue
        E2 = st.u2[lay["u2"][u]:lay["u2"][u + 1]].reshape(int(m[a]), int(m[p])) / nu
        lam = float(_lam(nu, C))
        if lam < 1.0:
            E2 = lam * E2 + (1 - lam) * np.outer(st.u1[lay["u1"][u]:lay["u1"][u + 1]] / nu,
                                                 st.uv[lay["uv"][u]:lay["uv"][u + 1]] / nu)
        unary[u] = (nu / counts[a]) * E2
    roots = {}
    for a in np.flatnonzero(st.root_n > 0):
        nr = int(st.root_n[a])
        roots[int(a)] = root_vector(nr, base.n_trees, st.root_y[so[a]:so[a + 1]] / nr,
                                    st.all_y[so[a]:so[a + 1]] / counts[a], C)
    lg = LatentGrammar(m, pa, pb, pc, tensors, g.un_parent, g.un_child, unary, roots)
    # lexical table (SpectralLPCFG._estimate_lexical)
    V = len(base.vocab)
    ukey, pcount, zsum = st.pairs
    psym = ukey // (V + 1)
    tag_count = np.zeros(g.n_symbols, dtype=np.int64)
    np.add.at(tag_count, psym, pcount)

    def tag_blocks():
        for p in np.unique(psym):
            sel = np.flatnonzero(psym == p)
            if st.rare_n[p] > 0:
                zr = st.rare_z[so[p]:so[p + 1]] / st.rare_n[p]
            else:
                zr = st.all_z[so[p]:so[p + 1]] / tag_count[p]
            yield p, sel, zsum[sel, :int(m[p])], pcount[sel], zr

    offs, rare_off, table = lexical_table(tag_blocks(), len(ukey), g.n_symbols,
                                          model.word_smoothing)
    arrays = LatentArrays(lpcfg=lg, vocab=list(base.vocab), lex_keys=ukey, lex_off=offs,
                          lex_count=pcount.astype(np.int64), lex_rare_off=rare_off,
                          lex_table=table, tag_count=tag_count,
                          log_rule_per_word=st.log_rule / max(1, st.n_tokens),
                          sym_counts=counts.astype(np.int64))
    model._install(base.pcfg, arrays)
    model.singular_values_ = context.singular_values
    model.n_train_trees_ = base.n_trees
    model.fit_time_ = time.perf_counter() - t0


# ================================================================================================
# EM (EMLPCFG, random start): one pass per iteration
# ================================================================================================
class GlobalLayout(RuleLayout):
    """The parameter layout of the whole treebank (the attributes of
    :class:`~fastspectral.lpcfg.latent_params.LatentLayout` that ``m_step``,
    ``uniform_counts`` and ``latent_arrays`` read), built from the merged counts alone."""

    def __init__(self, model, ctx: LatentContext):
        g = ctx.grammar
        super().__init__(g, symbol_states(ctx.sym_counts, g, model.n_states, model.n_states_pre,
                                          model.min_count, model.state_map))
        self.n_trees = ctx.n_trees
        pk, pc = ctx.pair_key, ctx.pair_count
        self._set_lexical_classes(pk, pc, len(ctx.vocab), ctx.word_count <= model.rare_threshold)
        self.pair_key = pk
        self.pair_count = pc
        self.sym_count = ctx.sym_counts.astype(np.float64)
        self.bin_count = ctx.rule_counts.astype(np.float64)
        self.un_count = ctx.urule_counts.astype(np.float64)
        self.root_count = ctx.root_counts.astype(np.float64)
        self.vocab = ctx.vocab
        # the average log rule probability per token, from the counts
        lp = float(np.dot(self.bin_count, np.log(np.maximum(g.bin_prob, 1e-300))))
        lp += float(np.dot(self.un_count, np.log(np.maximum(g.un_prob, 1e-300))))
        lp += float(np.dot(self.root_count, np.log(np.maximum(g.root_prob, 1e-300))))
        self.log_rule_per_word = lp / max(1, int(pc.sum()))
        # latent_arrays reads the vocabulary from ``nodes`` and computes the log rule
        # probability from its (here empty) arrays: replaced by the value above
        e = np.zeros(0, dtype=np.int64)
        self.nodes = _NoNodes(ctx.vocab, e)

    def arrays(self, params):
        """The parsing arrays of ``params`` (``latent_arrays`` on the whole treebank)."""
        import dataclasses

        from .latent_params import latent_arrays

        return dataclasses.replace(latent_arrays(self, params),
                                   log_rule_per_word=self.log_rule_per_word)


class _NoNodes:
    def __init__(self, vocab, e):
        self.vocab = vocab
        self.rule = self.urule = self.parent = self.label = self.tags = e


class EMContext:
    """Context of an EM pass: pass 0's context, the global layout, the current parameters and
    the history so far."""

    def __init__(self, base: LatentContext, layout: GlobalLayout, params, iteration: int,
                 history: list, prev, t_learn: float):
        self.base = base
        self.layout = layout
        self.params = params
        self.iteration = iteration
        self.history = history
        self.prev = prev
        self.t_learn = t_learn

    def __getstate__(self):
        # workers need the parameters and the ids, not the history
        state = dict(vars(self))
        state["history"] = []
        return state


class EMCounts(Statistics):
    """An E-step's expected counts (in the global layout) and log-likelihood, summed over
    partitions."""

    _same = ("settings", "iteration")

    def __init__(self, settings, iteration, T, U, L, c1, log_likelihood):
        self.settings = settings
        self.iteration = iteration
        self.T, self.U, self.L, self.c1 = T, U, L, c1
        self.log_likelihood = log_likelihood


def _em_settings(model) -> tuple:
    return _settings(model) + (int(model.n_states), int(model.n_states_pre or model.n_states),
                               int(model.min_count), int(model.rare_threshold),
                               _state_map_key(model))


def _partition_layout(model, part: Partition, ctx: EMContext):
    """The partition's :class:`LatentLayout` (global ids, the treebank's leaf probabilities)
    and the positions of its lexical entries in the global ``L`` (cached in the partition)."""
    from .latent_params import LatentLayout

    base = ctx.base
    key = ("em-layout", base.token)
    got = part.cache.get(key)
    if got is not None:
        return got
    nodes = base.nodes(part)
    G = ctx.layout
    lay = LatentLayout(nodes, base.grammar, G.m, model.rare_threshold)
    V = G.V
    # log P_mle(w | p) of the leaves with the whole treebank's counts
    pre = np.flatnonzero(nodes.word >= 0)
    pkey = nodes.label[pre].astype(np.int64) * (V + 1) + nodes.word[pre].astype(np.int64)
    k = np.searchsorted(G.pair_key, pkey)
    lay.leaflogp[pre] = np.log(G.pair_count[k] / G.tag_count[nodes.label[pre]])
    # local lexical rows -> global rows -> positions in the global L
    rows = np.searchsorted(G.lex_key, lay.lex_key)
    if lay.lex_key.size and not np.array_equal(G.lex_key[rows], lay.lex_key):
        raise ValueError("a partition has a (tag, word class) that is not in the merged counts")
    sizes = G.m[lay.lex_sym]
    lidx = (np.repeat(G.loff[rows], sizes) +
            (np.arange(int(sizes.sum())) - np.repeat(block_offsets(sizes)[:-1], sizes)))
    got = (lay, lidx.astype(np.int64))
    part.cache[key] = got
    return got


def em_statistics(model, part: Partition, context):
    """One partition's statistics: pass 0's counts, then its E-step (the pivot start's pass
    is :func:`fastspectral.lpcfg.pivot.pivot_statistics`)."""
    import numba
    from threadpoolctl import threadpool_limits

    from .latent_params import LatentParams, e_step

    if context is None:
        model._validate_params()
        return latent_counts(model, part)
    with threadpool_limits(limits=1):
        lay, lidx = _partition_layout(model, part, context)
        G = context.layout
        p = context.params
        local = LatentParams(p.T, p.U, p.L[lidx], p.c1)
        es = e_step(lay, local, numba.get_num_threads())
        L = np.zeros(int(G.loff[-1]))
        L[lidx] = es.counts.L
        return EMCounts(_em_settings(model), context.iteration, es.counts.T, es.counts.U, L,
                        es.counts.c1, float(es.log_likelihood))


def em_layout(model, stats, t0: float):
    """Pass 0's :class:`LatentContext` and the :class:`GlobalLayout` of an L-PCFG with latent
    states (EM, the pivot method) from the merged counts."""
    from threadpoolctl import threadpool_limits

    base = latent_context(model, stats, t0)
    with threadpool_limits(limits=1):
        return base, GlobalLayout(model, base)


def em_fit_statistics(model, stats, context, t0: float):
    """The random start (after pass 0) or one M-step; installs the model after the last
    iteration and returns None then, else the next pass's context.  (The pivot start:
    ``EMLPCFG.fit_statistics`` with :mod:`fastspectral.lpcfg.pivot`, then :func:`em_start`.)"""
    from threadpoolctl import threadpool_limits

    from .latent_params import LatentParams, m_step, uniform_counts

    if context is None:
        model._validate_params()
        base, G = em_layout(model, stats, t0)
        with threadpool_limits(limits=1):
            params = m_step(G, uniform_counts(G, model.noise, base.seed))
        return em_start(model, base, G, params, t0)
    check_statistics(stats, EMCounts)
    if stats.settings != _em_settings(model) or stats.iteration != context.iteration:
        raise ValueError("these statistics were computed for another model or iteration")
    G = context.layout
    with threadpool_limits(limits=1):
        params = m_step(G, LatentParams(stats.T, stats.U, stats.L, stats.c1),
                        model.parent_smoothing)
    ll = stats.log_likelihood
    it = context.iteration
    history = context.history + [(it, ll, time.perf_counter() - context.t_learn)]
    prev = context.prev
    stop = it >= model.n_iterations or (model.tol > 0 and prev is not None and
                                        np.isfinite(prev) and (ll - prev) <= model.tol * abs(prev))
    ctx = EMContext(context.base, G, params, it + 1, history, ll, context.t_learn)
    if stop:
        _install_em(model, ctx, t0)
        return None
    return ctx


def em_start(model, base: LatentContext, G: GlobalLayout, params, t0: float,
              t_learn: float | None = None):
    """The context of EM's first iteration from the initial ``params`` (None, with the model
    installed, when no iteration is asked for); ``t_learn``: when the learning began (the
    origin of the history's seconds; None: now)."""
    ctx = EMContext(base, G, params, 1, [], None,
                    time.perf_counter() if t_learn is None else t_learn)
    if model.n_iterations == 0:
        _install_em(model, ctx, t0)
        return None
    return ctx


def _install_em(model, ctx: EMContext, t0: float) -> None:
    model._install(ctx.base.pcfg, ctx.layout.arrays(ctx.params))
    model.params_ = ctx.params
    model.history_ = list(ctx.history)
    model.n_iter_ = len(ctx.history)
    model.n_train_trees_ = ctx.base.n_trees
    model.fit_time_ = time.perf_counter() - t0
