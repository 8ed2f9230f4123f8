# cython: language_level=3
# (boundscheck, wraparound, cdivision and initializedcheck come from setup.py, so that
# FASTSPECTRAL_BOUNDSCHECK=1 can switch the checks on: a directive here would override it)
"""Compiled chart kernels for PCFGs over a sparse rule index.

Kept as one module (about 1,750 lines): one sentence's coarse-to-fine parse (``parse_one``)
runs the coarse pass (sparse or dense), builds the fine pass's mask from it, runs the fine
pass and decodes it inside one ``nogil`` loop body; these ``cdef`` functions share the
``Chart`` / ``Dense`` workspaces and the cell scaling and call each other directly, which
across extension modules would go through Cython's function-pointer tables (no inlining)
or move into ``.pxd`` headers (what both charts share already is there).  Why three PCFG
inside-outside implementations exist, two of them here: the last section below.

This chart engine serves every PCFG-shaped model of fastspectral (the second engine,
``tensor_chart.pyx``, runs the latent-state pass of the L-PCFGs; shared declarations are in
``chart_common.pxd`` and ``maxrecall.pxd``):

* Viterbi CKY (max-product) with back-pointers,
* inside and outside (sum-product) passes (Baker 1979; Lari & Young 1990, eqs. for
  ``alpha``/``beta`` of a binarised grammar with a unary layer),
* posterior marginals of (span, symbol) items, ``mu(A, i, j) = alpha * beta / Z``, before and
  after the unary layer,
* max-expected-recall decoding from those marginals (Goodman 1996, "labelled recall" algorithm),
* posterior pruning (items whose marginal exceeds a threshold) and coarse-to-fine masks
  (Petrov & Klein 2007, section 3 / Charniak et al. 2006).

References: J. K. Baker, "Trainable grammars for speech recognition", Speech Communication Papers
of the 97th ASA meeting, 1979; K. Lari and S. J. Young, "The estimation of stochastic context-free
grammars using the inside-outside algorithm", Computer Speech and Language 4, 1990; J. Goodman,
"Parsing algorithms and metrics", ACL 1996; E. Charniak et al., "Multilevel coarse-to-fine PCFG
parsing", NAACL 2006; S. Petrov and D. Klein, "Improved inference for unlexicalized parsing",
NAACL 2007.

Chart layout
------------
A sentence of n words has n(n+1)/2 cells, one per span [i, j) (0 <= i < j <= n), stored by
length: ``cell = off[j - i] + i``.  Each cell holds two layers of S symbol scores: ``pre`` (the
node produced by a binary rule, or a preterminal over a word) and ``post`` (after one application
of the unary closure ``post[A] = pre[A] + sum_B U*(A, B) pre[B]``, where U* - I is handed in as a
list of (A, B, weight) rules; the caller computes the closure).

Numerical safety
----------------
Scores are stored with a per-cell power-of-two exponent (``true = stored * 2**scale[cell]``): every
cell is renormalised so that its largest entry lies in [0.5, 1), and the contributions of
different split points (whose exponents differ) are aligned to the largest exponent before they
are summed.  Nothing underflows for 100+ word sentences, in sum or max mode.

Everything below the Python wrappers runs without the GIL; ``parse_batch`` spreads sentences over
OpenMP threads (``prange``) with one private workspace per sentence.  A sentence whose chart
cannot be allocated is a ``MemoryError`` naming it (``status.pxd``).

Three PCFG inside-outside implementations
-----------------------------------------
The package computes PCFG inside / outside scores in three places, each for a chart the others
handle worse (the timings below were measured on WSJ section 22, one thread, when each was
introduced; where each runs in an L-PCFG parse: ``docs/notes/throughput.md``, the four stages):

1. ``inside_pass`` / ``outside_pass`` here (sparse: per-cell lists of active symbols, the
   rules by left child): the only one with Viterbi back-pointers (max mode) and coarse-to-fine
   masks (a cell visits only its allowed symbols), so it runs every parse of ``parse_batch``
   and every masked pruning pass of ``prune_batch``.
2. ``_dense_inside`` / ``_dense_outside`` here (dense: sum mode, no mask, the split points of
   a rule as one contiguous dot product): exhaustive charts only; it made ``prune_batch`` of
   the L-PCFGs' coarse pass 2.5x faster than (1) (12.9 -> 5.1 CPU-s, identical items), and
   with a mask it would still visit every cell and symbol (the masked sparse pass of an X-bar
   pre-pass measured 1.45 CPU-s against 0.87 for this exhaustive one).  ``dense=False`` /
   ``chart_marginals(dense=...)`` keep (1) and (2) comparable (``tests/test_cky_dense.py``).
3. ``tensor_chart._sentence_scalar`` (one state per symbol, over a pruned *item list*): the
   PCFG pass of the L-PCFG parsers over the coarse survivors, in the item layout the L-PCFG
   pass reads (a marginal per item, the leaf weights of the tensor kernel); its memory grows
   with the items (~27,000 a sentence for the spectral model), not with cells x symbols (1,490
   symbols there), and it replays its recorded rule applications top down (0.81 -> 0.40 CPU-s
   per 300 sentences against enumerating them again).
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.string cimport memcpy, memset
from libc.math cimport ldexp, frexp, log, INFINITY

from .alloc cimport malloc, calloc, free, grow, fail_after
from .chart_common cimport CGrammar, TagRules, i32, i64, u8
from .status cimport ST_OK, ST_NO_MEMORY
from .maxrecall cimport maxrecall_tree

from ._status import raise_for_status

cnp.import_array()

cdef extern from *:
    """
    #define FS_LOG2 0.69314718055994530942
    #define FS_NO_SCALE (-1073741824)
    """
    double FS_LOG2
    int NO_SCALE "FS_NO_SCALE"

#: longest sentence any kernel accepts: cell ids ``i * (n + 1) + j`` stay within a C int
MAX_LENGTH = 32767


# ----------------------------------------------------------------------------------------------
# input checks at the Python boundary (once per call, vectorised: O(input), never per cell)


def _check_weights(w, what):
    """Rule weights must be finite and >= 0: the chart lists a symbol of a cell the first time
    its score turns non-zero, which relies on scores only ever growing from 0."""
    if w.shape[0] and not (np.all(np.isfinite(w)) and w.min() >= 0.0):
        raise ValueError(f"{what} negative or not finite")


def _check_lexical(lengths, offsets, pos, sym, prob, int n_symbols, what="lexical"):
    """The packed lexical entries of a batch: offsets (``len(lengths) + 1``, non-decreasing,
    within the entry arrays), entry positions inside their sentence, symbols in range."""
    lengths = np.asarray(lengths)
    offsets = np.asarray(offsets)
    pos = np.asarray(pos)
    sym = np.asarray(sym)
    ns = lengths.shape[0]
    if offsets.shape[0] != ns + 1:
        raise ValueError(f"{what} offsets must have len(lengths) + 1 entries")
    if ns and (lengths.min() < 1 or lengths.max() > MAX_LENGTH):
        bad = int(np.flatnonzero((lengths < 1) | (lengths > MAX_LENGTH))[0])
        if lengths[bad] < 1:
            raise ValueError(f"sentence {bad} is empty")
        raise ValueError(f"sentence {bad} has {int(lengths[bad])} words: more than the "
                         f"{MAX_LENGTH} any chart accepts")
    m = pos.shape[0]
    if sym.shape[0] != m or np.asarray(prob).shape[0] != m:
        raise ValueError(f"{what} entry arrays differ in length")
    if offsets[0] != 0 or offsets[ns] > m or np.any(np.diff(offsets) < 0):
        raise ValueError(f"{what} offsets are not a partition of the entries")
    used = int(offsets[ns])
    if used:
        if sym[:used].min() < 0 or sym[:used].max() >= n_symbols:
            raise ValueError(f"{what} entry symbol out of range")
        limit = np.repeat(lengths, np.diff(offsets))
        if pos[:used].min() < 0 or np.any(pos[:used] >= limit):
            raise ValueError(f"{what} entry position outside its sentence")


# ----------------------------------------------------------------------------------------------
# grammar (its C layout, CGrammar, is declared in chart_common.pxd)


cdef inline const i32* _ptr32(arr):
    return <const i32*> cnp.PyArray_DATA(arr)


def _dense_tables(int S, parent, left, right, prob, is_tag, bint tags_lex):
    """The binary rules in the layout of the dense kernel (see ``CGrammar`` in chart_common.pxd):
    rules between two symbols that can span several words grouped by (left, right) child pair,
    the rules with a pre-terminal child (when pre-terminals only span one word) by that child.
    Every array is non-empty (a dummy entry when there is nothing), so that its pointer is valid."""
    n = parent.shape[0]
    if tags_lex and n:
        ltag = is_tag[left] != 0
        rtag = is_tag[right] != 0
    else:
        ltag = rtag = np.zeros(n, dtype=bool)
    out = {}
    full = np.flatnonzero(~ltag & ~rtag)
    key = left[full].astype(np.int64) * S + right[full]
    order = np.lexsort((parent[full], key))
    full, key = full[order], key[order]
    uk, start = np.unique(key, return_index=True)
    out["pp_b"] = (uk // S).astype(np.int32)
    out["pp_c"] = (uk % S).astype(np.int32)
    out["pp_ptr"] = np.append(start, full.shape[0]).astype(np.int32)
    out["pr_a"] = parent[full].astype(np.int32)
    out["pr_p"] = prob[full].astype(np.float64)
    out["pr_q"] = np.repeat(np.arange(uk.shape[0], dtype=np.int32), np.diff(out["pp_ptr"]))
    order = np.lexsort((out["pr_q"], out["pr_a"]))
    pa, start = np.unique(out["pr_a"][order], return_index=True)
    out["pa_a"] = pa.astype(np.int32)
    out["pa_ptr"] = np.append(start, order.shape[0]).astype(np.int32)
    out["pa_q"] = out["pr_q"][order].astype(np.int32)
    out["pa_p"] = out["pr_p"][order].astype(np.float64)
    out["ppl"] = np.unique(out["pp_b"]).astype(np.int32)
    out["ppr"] = np.unique(out["pp_c"]).astype(np.int32)
    for name, sel, by, other in (("tl", ltag & ~rtag, left, right), ("tr", ~ltag & rtag, right, left),
                                 ("tt", ltag & rtag, left, right)):
        idx = np.flatnonzero(sel)
        idx = idx[np.lexsort((other[idx], parent[idx], by[idx]))]
        syms, start = np.unique(by[idx], return_index=True)
        out[name + "_sym"] = syms.astype(np.int32)
        out[name + "_ptr"] = np.append(start, idx.shape[0]).astype(np.int32)
        out[name + "_a"] = parent[idx].astype(np.int32)
        out[name + "_o"] = other[idx].astype(np.int32)
        out[name + "_p"] = prob[idx].astype(np.float64)
    sizes = {k: v.shape[0] for k, v in out.items()}
    for k, v in out.items():        # valid pointers for empty tables (their sizes stay 0)
        if v.shape[0] == 0:
            out[k] = np.zeros(1, dtype=v.dtype)
    return out, sizes


cdef void _tag_rules(TagRules* t, dict dense, dict sizes, str name):
    """Point ``t`` at the tables ``name``_* of :func:`_dense_tables` (kept alive by the caller)."""
    t.n = sizes[name + "_sym"]
    t.sym = _ptr32(dense[name + "_sym"])
    t.ptr = _ptr32(dense[name + "_ptr"])
    t.a = _ptr32(dense[name + "_a"])
    t.o = _ptr32(dense[name + "_o"])
    t.p = <const double*> cnp.PyArray_DATA(dense[name + "_p"])


cdef class ChartGrammar:
    """Rule arrays of a PCFG in the layout the kernels read (built by fastspectral.grammar).

    Parameters are the rule lists; the constructor sorts and indexes them.  ``unary_*`` must
    already be the closure (U* - I) in sum mode or its max-product analogue in max mode.
    """
    cdef CGrammar g
    cdef object _keep
    cdef readonly int n_symbols
    cdef readonly int n_classes

    def __init__(self, int n_symbols, parent, left, right, prob, un_parent, un_child, un_prob,
                 root, sym_class, is_tag, int n_classes):
        parent = np.ascontiguousarray(parent, dtype=np.int32)
        left = np.ascontiguousarray(left, dtype=np.int32)
        right = np.ascontiguousarray(right, dtype=np.int32)
        prob = np.ascontiguousarray(prob, dtype=np.float64)
        if n_symbols < 1 or n_classes < 1:
            raise ValueError("a chart grammar needs at least one symbol and one class")
        n = parent.shape[0]
        if not (left.shape[0] == n and right.shape[0] == n and prob.shape[0] == n):
            raise ValueError("binary rule arrays differ in length")
        for arr in (parent, left, right):
            if n and (arr.min() < 0 or arr.max() >= n_symbols):
                raise ValueError("binary rule symbol out of range")
        _check_weights(prob, "binary rule probability")
        is_tag = np.ascontiguousarray(is_tag, dtype=np.uint8)
        if is_tag.shape[0] != n_symbols:
            raise ValueError("per-symbol arrays must have n_symbols entries")
        un_parent_arr = np.asarray(un_parent, dtype=np.int64)
        # pre-terminals can be active in wider cells only if a rule can build one
        tags_only_lexical = not (np.any(is_tag[parent] != 0) if n else False) and \
            not (np.any(is_tag[un_parent_arr] != 0) if un_parent_arr.shape[0] else False)
        right_tag = (is_tag[right] != 0) if tags_only_lexical else np.zeros(n, dtype=bool)
        order = np.lexsort((right, right_tag, left))
        bl_ptr = np.zeros(n_symbols + 1, dtype=np.int32)
        np.add.at(bl_ptr, left + 1, 1)
        bl_ptr = np.cumsum(bl_ptr).astype(np.int32)
        bl_split = (bl_ptr[:-1] + np.bincount(left[~right_tag], minlength=n_symbols)).astype(np.int32)
        bl_parent = np.ascontiguousarray(parent[order])
        bl_right = np.ascontiguousarray(right[order])
        bl_prob = np.ascontiguousarray(prob[order])
        order = np.lexsort((right, left, parent))
        bp_ptr = np.zeros(n_symbols + 1, dtype=np.int32)
        np.add.at(bp_ptr, parent + 1, 1)
        bp_ptr = np.cumsum(bp_ptr).astype(np.int32)
        bp_left = np.ascontiguousarray(left[order])
        bp_right = np.ascontiguousarray(right[order])
        bp_prob = np.ascontiguousarray(prob[order])
        un_parent = np.ascontiguousarray(un_parent, dtype=np.int32)
        un_child = np.ascontiguousarray(un_child, dtype=np.int32)
        un_prob = np.ascontiguousarray(un_prob, dtype=np.float64)
        if un_child.shape[0] != un_parent.shape[0] or un_prob.shape[0] != un_parent.shape[0]:
            raise ValueError("unary rule arrays differ in length")
        if un_parent.shape[0] and (min(un_parent.min(), un_child.min()) < 0 or
                                   max(un_parent.max(), un_child.max()) >= n_symbols):
            raise ValueError("unary rule symbol out of range")
        _check_weights(un_prob, "unary rule probability")
        root = np.ascontiguousarray(root, dtype=np.float64)
        sym_class = np.ascontiguousarray(sym_class, dtype=np.int32)
        if root.shape[0] != n_symbols or sym_class.shape[0] != n_symbols:
            raise ValueError("per-symbol arrays must have n_symbols entries")
        _check_weights(root, "root probability")
        if sym_class.min() < 0 or sym_class.max() >= n_classes:
            raise ValueError("symbol class out of range")
        class_is_tag = np.zeros(max(n_classes, 1), dtype=np.uint8)
        class_is_tag[sym_class[is_tag.astype(bool)]] = 1
        dense, sizes = _dense_tables(n_symbols, parent, left, right, prob, is_tag,
                                     tags_only_lexical)
        self._keep = (bl_ptr, bl_parent, bl_right, bl_prob, bp_ptr, bp_left, bp_right, bp_prob,
                      un_parent, un_child, un_prob, root, sym_class, is_tag, class_is_tag,
                      bl_split, dense)
        self.n_symbols = n_symbols
        self.n_classes = n_classes
        self.g.S = n_symbols
        self.g.bl_ptr = <const i32*> cnp.PyArray_DATA(bl_ptr)
        self.g.bl_split = <const i32*> cnp.PyArray_DATA(bl_split)
        self.g.bl_parent = <const i32*> cnp.PyArray_DATA(bl_parent)
        self.g.bl_right = <const i32*> cnp.PyArray_DATA(bl_right)
        self.g.bl_prob = <const double*> cnp.PyArray_DATA(bl_prob)
        self.g.bp_ptr = <const i32*> cnp.PyArray_DATA(bp_ptr)
        self.g.bp_left = <const i32*> cnp.PyArray_DATA(bp_left)
        self.g.bp_right = <const i32*> cnp.PyArray_DATA(bp_right)
        self.g.bp_prob = <const double*> cnp.PyArray_DATA(bp_prob)
        self.g.n_un = un_parent.shape[0]
        self.g.un_parent = <const i32*> cnp.PyArray_DATA(un_parent)
        self.g.un_child = <const i32*> cnp.PyArray_DATA(un_child)
        self.g.un_prob = <const double*> cnp.PyArray_DATA(un_prob)
        self.g.root = <const double*> cnp.PyArray_DATA(root)
        self.g.n_class = n_classes
        self.g.sym_class = <const i32*> cnp.PyArray_DATA(sym_class)
        self.g.is_tag = <const u8*> cnp.PyArray_DATA(is_tag)
        self.g.class_is_tag = <const u8*> cnp.PyArray_DATA(class_is_tag)
        self.g.tags_lex = tags_only_lexical
        self.g.n_pp = sizes["pp_b"]
        self.g.pp_b = _ptr32(dense["pp_b"])
        self.g.pp_c = _ptr32(dense["pp_c"])
        self.g.pp_ptr = _ptr32(dense["pp_ptr"])
        self.g.pr_a = _ptr32(dense["pr_a"])
        self.g.pr_p = <const double*> cnp.PyArray_DATA(dense["pr_p"])
        self.g.pr_q = _ptr32(dense["pr_q"])
        self.g.n_pa = sizes["pa_a"]
        self.g.pa_a = _ptr32(dense["pa_a"])
        self.g.pa_ptr = _ptr32(dense["pa_ptr"])
        self.g.pa_q = _ptr32(dense["pa_q"])
        self.g.pa_p = <const double*> cnp.PyArray_DATA(dense["pa_p"])
        self.g.n_ppl = sizes["ppl"]
        self.g.ppl = _ptr32(dense["ppl"])
        self.g.n_ppr = sizes["ppr"]
        self.g.ppr = _ptr32(dense["ppr"])
        _tag_rules(&self.g.tl, dense, sizes, "tl")
        _tag_rules(&self.g.tr, dense, sizes, "tr")
        _tag_rules(&self.g.tt, dense, sizes, "tt")

    @property
    def binary_by_left(self):
        """(ptr, parent, right, prob) arrays of the left-child rule index (for other kernels)."""
        return self._keep[0], self._keep[1], self._keep[2], self._keep[3]


# ----------------------------------------------------------------------------------------------
# workspace
#
# C arrays owned by chart_alloc / chart_free.  Not std::vector: calloc hands out lazily zeroed
# pages (cells and symbols a pruned parse never touches cost nothing, a vector writes every
# element when sized), and a C++ build of this file was measured 3-7% slower with the same
# instruction count (see chart_common.pxd).


cdef struct Chart:
    int n
    int S
    int ncell
    i32* off            # n + 2 offsets by span length
    double* in_pre
    double* in_post
    double* out_pre
    double* out_post
    int* sc_in          # per-cell exponents
    int* sc_out
    i32* act            # active post symbols per cell (inside > 0)
    i32* nact
    i32* act_out        # active parents per cell (inside pre > 0 and outside pre > 0)
    i32* nact_out
    i32* bp_k           # viterbi back-pointers (pre layer): split and rule index
    i32* bp_r
    i32* bp_u           # viterbi unary: child symbol or -1
    u8* mask            # optional allowed (cell, symbol)
    u8* mask_any        # per cell: is any symbol allowed
    double* acc
    double* acc2
    i32* touched        # symbols written in the cell being built
    int ntouch


cdef inline int cell_of(const Chart* c, int i, int j) noexcept nogil:
    return c.off[j - i] + i


cdef int chart_alloc(Chart* c, int n, int S, bint outside, bint viterbi, bint use_mask) noexcept nogil:
    cdef int l
    cdef size_t big
    memset(c, 0, sizeof(Chart))
    c.n = n
    c.S = S
    c.ncell = n * (n + 1) // 2
    c.off = <i32*> malloc((n + 2) * sizeof(i32))
    if c.off == NULL:
        return ST_NO_MEMORY
    c.off[0] = 0
    c.off[1] = 0
    for l in range(2, n + 2):
        c.off[l] = c.off[l - 1] + (n - (l - 1) + 1)
    big = <size_t> c.ncell * <size_t> S
    c.in_pre = <double*> calloc(big, sizeof(double))
    c.in_post = <double*> calloc(big, sizeof(double))
    c.sc_in = <int*> calloc(c.ncell, sizeof(int))
    c.act = <i32*> malloc(big * sizeof(i32))
    c.nact = <i32*> calloc(c.ncell, sizeof(i32))
    c.acc = <double*> malloc(S * sizeof(double))
    c.acc2 = <double*> malloc(S * sizeof(double))
    c.touched = <i32*> malloc(S * sizeof(i32))
    c.ntouch = 0
    if (c.in_pre == NULL or c.in_post == NULL or c.sc_in == NULL or c.act == NULL
            or c.nact == NULL or c.acc == NULL or c.acc2 == NULL or c.touched == NULL):
        return ST_NO_MEMORY
    if outside:
        c.out_pre = <double*> calloc(big, sizeof(double))
        c.out_post = <double*> calloc(big, sizeof(double))
        c.sc_out = <int*> calloc(c.ncell, sizeof(int))
        c.act_out = <i32*> malloc(big * sizeof(i32))
        c.nact_out = <i32*> calloc(c.ncell, sizeof(i32))
        if (c.out_pre == NULL or c.out_post == NULL or c.sc_out == NULL or c.act_out == NULL
                or c.nact_out == NULL):
            return ST_NO_MEMORY
    if viterbi:
        c.bp_k = <i32*> malloc(big * sizeof(i32))
        c.bp_r = <i32*> malloc(big * sizeof(i32))
        c.bp_u = <i32*> malloc(big * sizeof(i32))
        if c.bp_k == NULL or c.bp_r == NULL or c.bp_u == NULL:
            return ST_NO_MEMORY
    if use_mask:
        c.mask = <u8*> malloc(big * sizeof(u8))
        c.mask_any = <u8*> calloc(c.ncell, sizeof(u8))
        if c.mask == NULL or c.mask_any == NULL:
            return ST_NO_MEMORY
    return 0


cdef void chart_free(Chart* c) noexcept nogil:
    free(c.off); free(c.in_pre); free(c.in_post); free(c.out_pre); free(c.out_post)
    free(c.sc_in); free(c.sc_out); free(c.act); free(c.nact); free(c.bp_k); free(c.bp_r)
    free(c.bp_u); free(c.mask); free(c.acc); free(c.acc2); free(c.act_out); free(c.nact_out); free(c.mask_any); free(c.touched)
    memset(c, 0, sizeof(Chart))


# ----------------------------------------------------------------------------------------------
# inside / viterbi


cdef void finish_inside_cell(const CGrammar* g, Chart* c, int cell, int E, bint vit,
                             bint apply_mask) noexcept nogil:
    """The pre layer of the cell is accumulated in place (exponent E) and ``c.touched`` lists the
    symbols written: apply the mask (lexical cells), the unary closure, normalise to a
    power-of-two exponent and list the symbols left non-zero (``act``).  Only touched symbols
    are visited, so pruned charts cost in proportion to what survives."""
    cdef int S = g.S
    cdef int A, B, u, e, t, nt = c.ntouch
    cdef double* pre = c.in_pre + <size_t> cell * S
    cdef double* post = c.in_post + <size_t> cell * S
    cdef double m = 0.0, v
    cdef const u8* mk = c.mask + <size_t> cell * S if c.mask != NULL else NULL
    cdef i32* bpu = c.bp_u + <size_t> cell * S if vit else NULL
    cdef i32* tl = c.touched
    if apply_mask and mk != NULL:
        for t in range(nt):
            if mk[tl[t]] == 0:
                pre[tl[t]] = 0.0
    for t in range(nt):
        A = tl[t]
        post[A] = pre[A]
        if vit:
            bpu[A] = -1
    for u in range(g.n_un):
        B = g.un_child[u]
        if pre[B] != 0.0:
            A = g.un_parent[u]
            if mk != NULL and mk[A] == 0:
                continue
            v = g.un_prob[u] * pre[B]
            if v == 0.0:
                continue        # underflow: nothing to add (and A must not be listed twice)
            if post[A] == 0.0 and pre[A] == 0.0 and nt < S:
                tl[nt] = A
                nt += 1
                if vit:
                    bpu[A] = -1
            if vit:
                if v > post[A]:
                    post[A] = v
                    bpu[A] = B
            else:
                post[A] += v
    for t in range(nt):
        if post[tl[t]] > m:
            m = post[tl[t]]
    cdef i32* act = c.act + <size_t> cell * S
    cdef int na = 0
    if m > 0.0:
        frexp(m, &e)
        for t in range(nt):
            A = tl[t]
            post[A] = ldexp(post[A], -e)
            pre[A] = ldexp(pre[A], -e)
            if post[A] < 1e-270:
                post[A] = 0.0
            if pre[A] < 1e-270:
                pre[A] = 0.0
            if post[A] != 0.0 or pre[A] != 0.0:
                act[na] = A
                na += 1
        c.sc_in[cell] = E + e
    else:
        for t in range(nt):
            pre[tl[t]] = 0.0
            post[tl[t]] = 0.0
        c.sc_in[cell] = 0
    c.nact[cell] = na
    c.ntouch = 0


cdef void inside_pass(const CGrammar* g, Chart* c, const i32* lpos, const i32* lsym,
                      const double* lprob, int nlex, bint vit) noexcept nogil:
    """Inside (sum) or Viterbi (max) scores of every cell, bottom up.  Scores accumulate in place
    in the (zero-initialised) pre layer; cells that receive nothing are left empty untouched.
    Implementation (1) of the module docstring (the dense one: :func:`_dense_inside`; over item
    lists: ``tensor_chart._sentence_scalar``)."""
    cdef int n = c.n, S = g.S
    cdef int i, j, k, l, cell, lc, rc, a, B, C, A, r, E, e, t, nw, rend
    cdef double lv, rv, val, f
    cdef double* acc
    cdef double* rin
    cdef i32* bpk
    cdef i32* bpr
    cdef const u8* mk = NULL
    # length-1 cells: lexical scores
    for i in range(n):
        cell = cell_of(c, i, i + 1)
        acc = c.in_pre + <size_t> cell * S
        c.ntouch = 0
        for t in range(nlex):
            if lpos[t] == i and lprob[t] > 0.0:
                if acc[lsym[t]] == 0.0 and c.ntouch < S:
                    c.touched[c.ntouch] = lsym[t]
                    c.ntouch += 1
                acc[lsym[t]] += lprob[t]
        finish_inside_cell(g, c, cell, 0, vit, True)
    for l in range(2, n + 1):
        for i in range(0, n - l + 1):
            j = i + l
            cell = cell_of(c, i, j)
            if c.mask != NULL and c.mask_any[cell] == 0:
                continue
            mk = c.mask + <size_t> cell * S if c.mask != NULL else NULL
            acc = c.in_pre + <size_t> cell * S
            if vit:
                bpk = c.bp_k + <size_t> cell * S
                bpr = c.bp_r + <size_t> cell * S
            # common exponent of all split points
            E = -2147483647
            for k in range(i + 1, j):
                lc = cell_of(c, i, k)
                rc = cell_of(c, k, j)
                if c.nact[lc] > 0 and c.nact[rc] > 0:
                    e = c.sc_in[lc] + c.sc_in[rc]
                    if e > E:
                        E = e
            if E == -2147483647:
                continue
            nw = 0
            c.ntouch = 0
            for k in range(i + 1, j):
                lc = cell_of(c, i, k)
                rc = cell_of(c, k, j)
                if c.nact[lc] == 0 or c.nact[rc] == 0:
                    continue
                f = ldexp(1.0, c.sc_in[lc] + c.sc_in[rc] - E)
                if f == 0.0:
                    continue
                rin = c.in_post + <size_t> rc * S
                for a in range(c.nact[lc]):
                    B = c.act[<size_t> lc * S + a]
                    lv = c.in_post[<size_t> lc * S + B] * f
                    if lv == 0.0:
                        continue
                    rend = g.bl_split[B] if j - k >= 2 else g.bl_ptr[B + 1]
                    if vit:
                        for r in range(g.bl_ptr[B], rend):
                            rv = rin[g.bl_right[r]]
                            if rv != 0.0:
                                val = g.bl_prob[r] * lv * rv
                                A = g.bl_parent[r]
                                if mk != NULL and mk[A] == 0:
                                    continue
                                if val > acc[A]:
                                    if acc[A] == 0.0 and c.ntouch < S:
                                        c.touched[c.ntouch] = A
                                        c.ntouch += 1
                                    acc[A] = val
                                    bpk[A] = k
                                    bpr[A] = r
                                    nw += 1
                    else:
                        for r in range(g.bl_ptr[B], rend):
                            rv = rin[g.bl_right[r]]
                            if rv != 0.0:
                                A = g.bl_parent[r]
                                if mk == NULL or mk[A] != 0:
                                    if acc[A] != 0.0:
                                        acc[A] += g.bl_prob[r] * lv * rv
                                        nw += 1
                                        continue
                                    # first contribution to A in this cell: list A, unless the
                                    # product underflows to 0 (then A would be listed again by
                                    # the next one, overrunning touched / act)
                                    val = g.bl_prob[r] * lv * rv
                                    if val != 0.0 and c.ntouch < S:
                                        c.touched[c.ntouch] = A
                                        c.ntouch += 1
                                        acc[A] = val
                                        nw += 1
            if nw > 0:
                finish_inside_cell(g, c, cell, E, vit, False)
            c.ntouch = 0


# ----------------------------------------------------------------------------------------------
# outside (push formulation with a-priori exponents)
#
# The outside exponent of a cell is fixed before the pass: sc_out[c] = sc_in[root] - sc_in[c], so
# that stored marginals are simply in * out / Z_stored.  A parent's contribution to a child is then
# scaled by 2**(sc_in[child] + sc_in[sibling] - sc_in[parent]), the same alignment the inside pass
# used, which keeps every stored value in range.  Items whose stored inside is below 1e-270 of
# their cell's best are treated as zero (see finish_inside_cell).


cdef inline void _unary_out(const CGrammar* g, const double* opost, const double* ipre,
                           double* opre) noexcept nogil:
    """The outside scores of a cell's post layer reach its pre layer through the unary rules
    (``opre`` holds ``opost`` on entry; children with a zero inside score are skipped)."""
    cdef int u, A, B
    for u in range(g.n_un):
        A = g.un_parent[u]
        if opost[A] != 0.0:
            B = g.un_child[u]
            if ipre[B] != 0.0:
                opre[B] += g.un_prob[u] * opost[A]


cdef void finish_outside_cell(const CGrammar* g, Chart* c, int cell) noexcept nogil:
    """out_post of the cell is complete: apply the unary layer and list the active parents.
    Only the cell's non-zero inside symbols (``act``) can have a useful outside score."""
    cdef int S = g.S
    cdef int A, t, na = 0
    cdef double* opost = c.out_post + <size_t> cell * S
    cdef double* opre = c.out_pre + <size_t> cell * S
    cdef double* ipre = c.in_pre + <size_t> cell * S
    cdef i32* act = c.act + <size_t> cell * S
    cdef i32* aout = c.act_out + <size_t> cell * S
    for t in range(c.nact[cell]):
        A = act[t]
        opre[A] = opost[A]
    _unary_out(g, opost, ipre, opre)
    for t in range(c.nact[cell]):
        A = act[t]
        if opre[A] != 0.0 and ipre[A] != 0.0:
            aout[na] = A
            na += 1
    c.nact_out[cell] = na


cdef void outside_pass(const CGrammar* g, Chart* c) noexcept nogil:
    """Outside scores of every cell with a nonzero inside score, top down (Lari & Young 1990;
    implementation (1) of the module docstring, whose dense twin is :func:`_dense_outside`)."""
    cdef int n = c.n, S = g.S
    cdef int i, j, k, l, cell, lc, rc, a, A, B, C, r, rend
    cdef int root_cell = cell_of(c, 0, n)
    cdef double o, f, lv, rv, po
    cdef double* lin
    cdef double* rin
    cdef double* lout
    cdef double* rout
    cdef double* par_out
    cdef i32* pact
    for cell in range(c.ncell):
        c.sc_out[cell] = c.sc_in[root_cell] - c.sc_in[cell]
    for A in range(S):
        if c.in_post[<size_t> root_cell * S + A] != 0.0:
            c.out_post[<size_t> root_cell * S + A] = g.root[A]
    for l in range(n, 1, -1):
        for i in range(0, n - l + 1):
            j = i + l
            cell = cell_of(c, i, j)
            if c.nact[cell] == 0:
                continue
            finish_outside_cell(g, c, cell)
            if c.nact_out[cell] == 0:
                continue
            par_out = c.out_pre + <size_t> cell * S
            # iterate rules by left child, as the inside pass does: only active left children
            # are visited, and the parent's outside score filters the rest
            for k in range(i + 1, j):
                lc = cell_of(c, i, k)
                rc = cell_of(c, k, j)
                if c.nact[lc] == 0 or c.nact[rc] == 0:
                    continue
                f = ldexp(1.0, c.sc_in[lc] + c.sc_in[rc] - c.sc_in[cell])
                if f == 0.0:
                    continue
                lin = c.in_post + <size_t> lc * S
                rin = c.in_post + <size_t> rc * S
                lout = c.out_post + <size_t> lc * S
                rout = c.out_post + <size_t> rc * S
                for a in range(c.nact[lc]):
                    B = c.act[<size_t> lc * S + a]
                    lv = lin[B] * f
                    o = 0.0
                    rend = g.bl_split[B] if j - k >= 2 else g.bl_ptr[B + 1]
                    for r in range(g.bl_ptr[B], rend):
                        C = g.bl_right[r]
                        rv = rin[C]
                        if rv != 0.0:
                            po = par_out[g.bl_parent[r]]
                            if po != 0.0:
                                po = po * g.bl_prob[r] * f
                                o += po * rv
                                rout[C] += po * lin[B]
                    lout[B] += o
    for i in range(n):
        if c.nact[cell_of(c, i, i + 1)] > 0:
            finish_outside_cell(g, c, cell_of(c, i, i + 1))


cdef double log_partition(const CGrammar* g, Chart* c, bint vit) noexcept nogil:
    """log of the sentence probability (sum mode) or of the best derivation (max mode)."""
    cdef int cell = cell_of(c, 0, c.n)
    cdef int A
    cdef double z = 0.0, v
    for A in range(g.S):
        v = g.root[A] * c.in_post[<size_t> cell * g.S + A]
        if vit:
            if v > z:
                z = v
        else:
            z += v
    if z <= 0.0:
        return -INFINITY
    return log(z) + c.sc_in[cell] * FS_LOG2


cdef inline double marg_factor(const Chart* c, int cell, double logz) noexcept nogil:
    """log of the factor turning stored in * out products of a cell into posteriors."""
    return (c.sc_in[cell] + c.sc_out[cell]) * FS_LOG2 - logz


# ----------------------------------------------------------------------------------------------
# the dense exhaustive kernel (the coarse pass of the L-PCFG parsers: no mask, sum mode)
#
# The same inside / outside scores as inside_pass / outside_pass (the same per-cell power-of-two
# exponents, the same 1e-270 floor; only the order of the sums differs), laid out so that a
# rule's sum over the split points of a cell is one contiguous dot product: a cell's top (post)
# scores are stored twice, by (start, symbol, end) in ``LS`` and by (end, symbol, start) in
# ``RE``.  For cell [i, j) the left children's rows are ``LS[i][B][i+1 .. j-1]`` and the right
# children's ``RE[j][C][i+1 .. j-1]``; the per-split exponent factors ``f`` are folded into
# the left rows first (``Lf``), then every (left, right) pair of the grammar costs one dot
# product (small_dense.h ``fs_pair_dots``) shared by the pair's parents.  Rules with a
# pre-terminal child touch one split point only and are summed apart.  The outside pass
# pushes each pair's weight (the sum over its parents of rule probability x outside score)
# into two accumulators in the same layouts: ``OS`` (as a left child, by start) and ``OE``
# (as a right child, by end); a cell's outside score is their sum once every wider cell is done.


cdef extern from "small_dense.h" nogil:
    void fs_pair_dots(int npair, const i32* pb, const i32* pc, const double* L, long ldl,
                      const double* R, long ldr, int K, double* s)
    void fs_pair_push(int npair, const i32* pb, const i32* pc, const double* w, const double* Lf,
                      const double* Rf, long ldf, double* OL, long ldo, double* OR, long ldr,
                      int K)
    void fs_scale_rows(int nsym, const i32* sym, const double* X, long ldx, const double* f,
                       int K, double* O, long ldo)


cdef struct Dense:
    int n
    int S
    int ncell
    i32* off            # cell ids by span length (as in Chart)
    i64* soff           # rows by start: symbol B of start i at soff[i] + B * (n - i), end k at + k - i - 1
    i64* eoff           # rows by end: symbol C of end j at eoff[j] + C * j, start k at + k
    double* in_pre      # per cell, S (the pre layer: lexical cells differ from post)
    double* LS          # inside (post) by start
    double* RE          # inside (post) by end
    double* OS          # outside as a left child, by start
    double* OE          # outside as a right child, by end
    int* sc             # per-cell exponents
    u8* live            # the cell has a nonzero inside score
    u8* keep            # per cell, S: the item's marginal reaches the threshold
    double* out_pre     # optional (chart_marginals): the outside scores per cell, S
    double* out_post
    double* f           # per split point of the current cell
    double* Lf          # S x n: factor-scaled left rows of the current cell
    double* Rf          # S x n: factor-scaled right rows (outside)
    double* acc
    double* post
    double* opost
    double* opre
    double* par
    double* pair        # one per (left, right) pair


cdef int dense_alloc(Dense* d, int n, int S, int n_pair, bint export) noexcept nogil:
    cdef int l, i
    cdef size_t big
    memset(d, 0, sizeof(Dense))
    d.n = n
    d.S = S
    d.ncell = n * (n + 1) // 2
    big = <size_t> d.ncell * <size_t> S
    d.off = <i32*> malloc((n + 2) * sizeof(i32))
    d.soff = <i64*> malloc((n + 1) * sizeof(i64))
    d.eoff = <i64*> malloc((n + 2) * sizeof(i64))
    d.in_pre = <double*> calloc(big, sizeof(double))
    d.LS = <double*> calloc(big, sizeof(double))
    d.RE = <double*> calloc(big, sizeof(double))
    d.OS = <double*> calloc(big, sizeof(double))
    d.OE = <double*> calloc(big, sizeof(double))
    d.sc = <int*> calloc(d.ncell, sizeof(int))
    d.live = <u8*> calloc(d.ncell, sizeof(u8))
    d.keep = <u8*> malloc(big * sizeof(u8))
    d.f = <double*> malloc((n + 1) * sizeof(double))
    d.Lf = <double*> malloc(<size_t> S * (n + 1) * sizeof(double))
    d.Rf = <double*> malloc(<size_t> S * (n + 1) * sizeof(double))
    d.acc = <double*> malloc(S * sizeof(double))
    d.post = <double*> malloc(S * sizeof(double))
    d.opost = <double*> malloc(S * sizeof(double))
    d.opre = <double*> malloc(S * sizeof(double))
    d.par = <double*> malloc(S * sizeof(double))
    d.pair = <double*> malloc((n_pair + 1) * sizeof(double))
    if (d.off == NULL or d.soff == NULL or d.eoff == NULL or d.in_pre == NULL or d.LS == NULL
            or d.RE == NULL or d.OS == NULL or d.OE == NULL or d.sc == NULL or d.live == NULL
            or d.keep == NULL or d.f == NULL or d.Lf == NULL or d.Rf == NULL or d.acc == NULL
            or d.post == NULL or d.opost == NULL or d.opre == NULL or d.par == NULL
            or d.pair == NULL):
        return ST_NO_MEMORY
    if export:
        d.out_pre = <double*> calloc(big, sizeof(double))
        d.out_post = <double*> calloc(big, sizeof(double))
        if d.out_pre == NULL or d.out_post == NULL:
            return ST_NO_MEMORY
    d.off[0] = 0
    d.off[1] = 0
    for l in range(2, n + 2):
        d.off[l] = d.off[l - 1] + (n - (l - 1) + 1)
    d.soff[0] = 0
    for i in range(1, n + 1):
        d.soff[i] = d.soff[i - 1] + <i64> S * (n - i + 1)
    d.eoff[0] = 0
    d.eoff[1] = 0
    for i in range(2, n + 2):
        d.eoff[i] = d.eoff[i - 1] + <i64> S * (i - 1)
    return 0


cdef void dense_free(Dense* d) noexcept nogil:
    free(d.off); free(d.soff); free(d.eoff); free(d.in_pre); free(d.LS); free(d.RE)
    free(d.OS); free(d.OE); free(d.sc); free(d.live); free(d.keep); free(d.out_pre)
    free(d.out_post); free(d.f); free(d.Lf); free(d.Rf); free(d.acc); free(d.post)
    free(d.opost); free(d.opre); free(d.par); free(d.pair)
    memset(d, 0, sizeof(Dense))


cdef void _dense_finish_in(const CGrammar* g, Dense* d, int i, int j, int E) noexcept nogil:
    """The pre layer of cell [i, j) is in ``d.acc`` (exponent E): the unary closure, the
    power-of-two normalisation and the 1e-270 floor of :func:`finish_inside_cell`, then the
    scores are stored (pre per cell, post by start and by end)."""
    cdef int S = g.S, n = d.n, A, B, u, e
    cdef int cell = d.off[j - i] + i
    cdef double* pre = d.acc
    cdef double* post = d.post
    cdef double m = 0.0, scale, vp, vq
    cdef double* ipre = d.in_pre + <size_t> cell * S
    cdef double* ls = d.LS + d.soff[i] + (j - i - 1)
    cdef double* re = d.RE + d.eoff[j] + i
    cdef i64 lds = n - i, lde = j
    cdef u8 any_ = 0
    for A in range(S):
        post[A] = pre[A]
    for u in range(g.n_un):
        B = g.un_child[u]
        if pre[B] != 0.0:
            post[g.un_parent[u]] += g.un_prob[u] * pre[B]
    for A in range(S):
        if post[A] > m:
            m = post[A]
    if m <= 0.0:
        d.sc[cell] = 0
        d.live[cell] = 0
        return
    frexp(m, &e)
    # a power-of-two factor is exact (ldexp's result) while it is a normal number
    scale = ldexp(1.0, -e) if -1000 < e < 1000 else 0.0
    for A in range(S):
        if scale != 0.0:
            vq = post[A] * scale
            vp = pre[A] * scale
        else:
            vq = ldexp(post[A], -e)
            vp = ldexp(pre[A], -e)
        if vq < 1e-270:
            vq = 0.0
        if vp < 1e-270:
            vp = 0.0
        ipre[A] = vp
        ls[A * lds] = vq
        re[A * lde] = vq
        if vq != 0.0 or vp != 0.0:
            any_ = 1
    d.sc[cell] = E + e
    d.live[cell] = any_


cdef inline void _split_factors(Dense* d, int i, int j, int E) noexcept nogil:
    """``d.f[dd]`` = 2**(exponent of the left part + the right part - E) at split point
    ``i + 1 + dd`` of cell [i, j), 0 where a part is dead."""
    cdef int dd, k, lc, rc
    for dd in range(j - i - 1):
        k = i + 1 + dd
        lc = d.off[k - i] + i
        rc = d.off[j - k] + k
        if d.live[lc] and d.live[rc]:
            d.f[dd] = ldexp(1.0, d.sc[lc] + d.sc[rc] - E)
        else:
            d.f[dd] = 0.0


cdef inline void _tag_in(const TagRules* tr, const double* X, i64 ldx, const double* Y, i64 ldy,
                         double f, bint scale_y, double* acc) noexcept nogil:
    """Inside sums of one class of rules with a pre-terminal child (at its one split point):
    ``acc[a] += p * x * y`` over the entries of each pre-terminal B = tr.sym[t] with a nonzero
    score x = X[B * ldx], y = Y[o * ldy] the other child's score, the split's factor ``f``
    multiplied into x first (``scale_y`` False: tl, tt) or into y (True: tr)."""
    cdef int t, r
    cdef double xv
    for t in range(tr.n):
        xv = X[<i64> tr.sym[t] * ldx]
        if xv == 0.0:
            continue
        if scale_y:
            for r in range(tr.ptr[t], tr.ptr[t + 1]):
                acc[tr.a[r]] += tr.p[r] * (Y[<i64> tr.o[r] * ldy] * f) * xv
        else:
            xv = xv * f
            for r in range(tr.ptr[t], tr.ptr[t + 1]):
                acc[tr.a[r]] += tr.p[r] * xv * Y[<i64> tr.o[r] * ldy]


cdef inline void _tag_out(const TagRules* tr, const double* par, double f, const double* X,
                          double* OX, i64 ldx, const double* Y, double* OY, i64 ldy) noexcept nogil:
    """Outside step of one class of rules with a pre-terminal child (at its one split point):
    for each pre-terminal B = tr.sym[t] with a nonzero inside score X[B * ldx] and each entry
    whose parent weight ``par[a]`` is nonzero, w = par[a] * p * f reaches the other child C
    (``OY[C * ldy] += w * X[B * ldx]``) and B (``OX[B * ldx]``, summed over the entries first,
    of ``w * Y[C * ldy]``)."""
    cdef int t, r, B, C
    cdef double xv, po, o
    for t in range(tr.n):
        B = tr.sym[t]
        xv = X[<i64> B * ldx]
        if xv == 0.0:
            continue
        o = 0.0
        for r in range(tr.ptr[t], tr.ptr[t + 1]):
            po = par[tr.a[r]]
            if po != 0.0:
                po = po * tr.p[r] * f
                C = tr.o[r]
                o += po * Y[<i64> C * ldy]
                OY[<i64> C * ldy] += po * xv
        OX[<i64> B * ldx] += o


cdef void _dense_inside(const CGrammar* g, Dense* d, const i32* lpos, const i32* lsym,
                        const double* lprob, int nlex) noexcept nogil:
    """Inside scores of every cell, bottom up (see the section comment): implementation (2) of
    the module docstring, the exhaustive twin of :func:`inside_pass`."""
    cdef int n = d.n, S = g.S
    cdef int i, j, l, K, dd, k, lc, rc, E, e, t, r
    cdef double f0, fK, s
    cdef double* acc = d.acc
    cdef double* f = d.f
    cdef double* pair = d.pair
    cdef double* Lrow
    cdef double* Rrow
    cdef i64 ldl, ldr
    for i in range(n):
        memset(acc, 0, S * sizeof(double))
        for t in range(nlex):
            if lpos[t] == i and lprob[t] > 0.0:
                acc[lsym[t]] += lprob[t]
        _dense_finish_in(g, d, i, i + 1, 0)
    for l in range(2, n + 1):
        K = l - 1
        for i in range(0, n - l + 1):
            j = i + l
            # common exponent of the split points, and each one's factor
            E = -2147483647
            for dd in range(K):
                k = i + 1 + dd
                lc = d.off[k - i] + i
                rc = d.off[j - k] + k
                if d.live[lc] and d.live[rc]:
                    e = d.sc[lc] + d.sc[rc]
                    if e > E:
                        E = e
            if E == -2147483647:
                continue
            _split_factors(d, i, j, E)
            memset(acc, 0, S * sizeof(double))
            Lrow = d.LS + d.soff[i]
            ldl = n - i
            Rrow = d.RE + d.eoff[j] + i + 1
            ldr = j
            if g.n_pp > 0:
                fs_scale_rows(g.n_ppl, g.ppl, Lrow, ldl, f, K, d.Lf, n)
                fs_pair_dots(g.n_pp, g.pp_b, g.pp_c, d.Lf, n, Rrow, ldr, K, pair)
                for t in range(g.n_pa):
                    s = 0.0
                    for r in range(g.pa_ptr[t], g.pa_ptr[t + 1]):
                        s += g.pa_p[r] * pair[g.pa_q[r]]
                    acc[g.pa_a[t]] = s
            f0 = f[0]
            if f0 != 0.0:
                # pre-terminal left child: the split point after the first word
                _tag_in(&g.tl, Lrow, ldl, Rrow, ldr, f0, False, acc)
                if K == 1:
                    _tag_in(&g.tt, Lrow, ldl, Rrow, ldr, f0, False, acc)
            fK = f[K - 1]
            if fK != 0.0:
                # pre-terminal right child: the split point before the last word
                _tag_in(&g.tr, Rrow + K - 1, ldr, Lrow + K - 1, ldl, fK, True, acc)
            _dense_finish_in(g, d, i, j, E)


cdef double _dense_logz(const CGrammar* g, Dense* d) noexcept nogil:
    """log of the sentence probability (as :func:`log_partition`, sum mode)."""
    cdef int A, n = d.n
    cdef double z = 0.0
    cdef double* top = d.LS + d.soff[0] + (n - 1)
    for A in range(g.S):
        z += g.root[A] * top[<i64> A * n]
    if z <= 0.0:
        return -INFINITY
    return log(z) + d.sc[d.off[n]] * FS_LOG2


cdef bint _dense_out_cell(const CGrammar* g, Dense* d, int i, int j, double lf,
                          double threshold, double threshold2) noexcept nogil:
    """The outside scores of cell [i, j), complete once every wider cell is done: the parts
    accumulated as a left and as a right child (the root cell: its root probabilities), for the
    symbols with a nonzero inside score (as outside_pass); the pre layer through the unary
    rules (finish_outside_cell); the pruning decisions of the cell (``keep``: 2 when the pre or
    post marginal is >= threshold, else 1 when it is >= threshold2, else 0) and the parents' weights of its binary step (``par``: the pre-layer
    outside score where the inside pre score is nonzero).  Returns whether any is nonzero."""
    cdef int S = g.S, n = d.n, A
    cdef int cell = d.off[j - i] + i
    cdef double* ipre = d.in_pre + <size_t> cell * S
    cdef double* ls = d.LS + d.soff[i] + (j - i - 1)
    cdef double* os = d.OS + d.soff[i] + (j - i - 1)
    cdef double* oe = d.OE + d.eoff[j] + i
    cdef i64 lds = n - i, lde = j
    cdef double* opost = d.opost
    cdef double* opre = d.opre
    cdef double* par = d.par
    cdef u8* keep = d.keep + <size_t> cell * S
    cdef double ip, v1, v2
    cdef bint root = i == 0 and j == n
    cdef bint anyp = False
    for A in range(S):
        ip = ls[A * lds]
        if ip == 0.0:
            opost[A] = 0.0
        elif root:
            opost[A] = g.root[A]
        else:
            opost[A] = os[A * lds] + oe[A * lde]
        opre[A] = opost[A]
    _unary_out(g, opost, ipre, opre)
    for A in range(S):
        v1 = ipre[A] * opre[A] * lf
        v2 = ls[A * lds] * opost[A] * lf
        if v1 >= threshold or v2 >= threshold:
            keep[A] = 2
        elif v1 >= threshold2 or v2 >= threshold2:
            keep[A] = 1
        else:
            keep[A] = 0
        if opre[A] != 0.0 and ipre[A] != 0.0:
            par[A] = opre[A]
            anyp = True
        else:
            par[A] = 0.0
    if d.out_pre != NULL:
        memcpy(d.out_pre + <size_t> cell * S, opre, S * sizeof(double))
        memcpy(d.out_post + <size_t> cell * S, opost, S * sizeof(double))
    return anyp


cdef void _dense_outside(const CGrammar* g, Dense* d, double logz, double threshold,
                         double threshold2) noexcept nogil:
    """Outside scores top down and the pruning decisions of every (cell, symbol) at two
    thresholds (``threshold2 <= threshold``; see :func:`_dense_out_cell`)."""
    cdef int n = d.n, S = g.S
    cdef int i, j, l, K, cell, r, q
    cdef double f0, fK, o
    cdef double lf = _exp(d.sc[d.off[n]] * FS_LOG2 - logz)
    cdef double* f = d.f
    cdef double* pair = d.pair
    cdef double* par = d.par
    cdef double* Lrow
    cdef double* Rrow
    cdef double* OL
    cdef double* OR
    cdef i64 ldl, ldr
    for l in range(n, 1, -1):
        K = l - 1
        for i in range(0, n - l + 1):
            j = i + l
            cell = d.off[l] + i
            if not _dense_out_cell(g, d, i, j, lf, threshold, threshold2) or not d.live[cell]:
                continue
            _split_factors(d, i, j, d.sc[cell])
            Lrow = d.LS + d.soff[i]
            ldl = n - i
            Rrow = d.RE + d.eoff[j] + i + 1
            ldr = j
            OL = d.OS + d.soff[i]
            OR = d.OE + d.eoff[j] + i + 1
            if g.n_pp > 0:
                for q in range(g.n_pp):
                    o = 0.0
                    for r in range(g.pp_ptr[q], g.pp_ptr[q + 1]):
                        o += g.pr_p[r] * par[g.pr_a[r]]
                    pair[q] = o
                fs_scale_rows(g.n_ppl, g.ppl, Lrow, ldl, f, K, d.Lf, n)
                fs_scale_rows(g.n_ppr, g.ppr, Rrow, ldr, f, K, d.Rf, n)
                fs_pair_push(g.n_pp, g.pp_b, g.pp_c, pair, d.Lf, d.Rf, n, OL, ldl, OR, ldr, K)
            f0 = f[0]
            if f0 != 0.0:
                _tag_out(&g.tl, par, f0, Lrow, OL, ldl, Rrow, OR, ldr)
                if K == 1:
                    _tag_out(&g.tt, par, f0, Lrow, OL, ldl, Rrow, OR, ldr)
            fK = f[K - 1]
            if fK != 0.0:
                _tag_out(&g.tr, par, fK, Rrow + K - 1, OR + K - 1, ldr, Lrow + K - 1, OL + K - 1,
                         ldl)
    for i in range(n):
        _dense_out_cell(g, d, i, i + 1, lf, threshold, threshold2)


# ----------------------------------------------------------------------------------------------
# decoding


cdef int decode_max_recall(const CGrammar* g, Chart* c, double logz, i32* out_nodes) noexcept nogil:
    """Goodman max-expected-recall tree over base-label classes; returns the node count.

    Nodes are written in preorder as (start, end, class) triples.  Span score = the largest
    class marginal of the cell's top (post) layer; length-1 cells also output the tag with the
    largest pre-layer marginal, plus a unary parent class when that beats "no unary".  The tree
    search itself is :func:`maxrecall.maxrecall_tree` (shared with the L-PCFG decoder).
    """
    cdef int n = c.n, S = g.S, K = g.n_class, w = c.n + 1
    cdef int i, j, l, cell, cid, A, cl, best_cl, cnt, bt, t
    cdef double lf, best, v, bt_v
    cdef double* cscore = <double*> malloc((K + 1) * sizeof(double))
    cdef double* own_score = <double*> malloc(<size_t> w * w * sizeof(double))
    cdef i32* own_class = <i32*> malloc(<size_t> w * w * sizeof(i32))
    cdef i32* tag_class = <i32*> malloc(w * sizeof(i32))
    if cscore == NULL or own_score == NULL or own_class == NULL or tag_class == NULL:
        free(cscore); free(own_score); free(own_class); free(tag_class)
        return ST_NO_MEMORY
    for l in range(1, n + 1):
        for i in range(0, n - l + 1):
            j = i + l
            cid = i * w + j
            cell = cell_of(c, i, j)
            if c.nact[cell] == 0 and l > 1:
                own_score[cid] = 0.0
                own_class[cid] = -1
                continue
            lf = _exp(marg_factor(c, cell, logz))
            for cl in range(K + 1):
                cscore[cl] = 0.0
            for t in range(c.nact[cell]):
                A = c.act[<size_t> cell * S + t]
                v = c.in_post[<size_t> cell * S + A] * c.out_post[<size_t> cell * S + A]
                if v != 0.0:
                    v = v * lf
                    if g.is_tag[A]:
                        cscore[K] += v          # "no unary above the tag"
                    else:
                        cscore[g.sym_class[A]] += v
            best = -1.0
            best_cl = -1
            for cl in range(K + 1):
                if cscore[cl] > best:
                    best = cscore[cl]
                    best_cl = cl
            own_score[cid] = best if best > 0.0 else 0.0
            own_class[cid] = best_cl if (best_cl < K and best > 0.0) else -1
            if l == 1:
                bt = -1
                bt_v = -1.0
                for t in range(c.nact[cell]):
                    A = c.act[<size_t> cell * S + t]
                    if g.is_tag[A]:
                        v = c.in_pre[<size_t> cell * S + A] * c.out_pre[<size_t> cell * S + A]
                        if v > bt_v:
                            bt_v = v
                            bt = A
                tag_class[i] = g.sym_class[bt] if bt >= 0 else 0
    cnt = maxrecall_tree(n, own_score, own_class, tag_class, out_nodes)
    free(cscore); free(own_score); free(own_class); free(tag_class)
    return cnt


cdef extern from "math.h" nogil:
    double _exp "exp"(double)


cdef int decode_viterbi(const CGrammar* g, Chart* c, i32* out_nodes) noexcept nogil:
    """Follow back-pointers of the best derivation; nodes in preorder as (start, end, class)."""
    cdef int n = c.n, S = g.S
    cdef int cell = cell_of(c, 0, n)
    cdef int A, best_A = -1, i, j, k, r, B, sp, cnt = 0, layer
    cdef double v, best = 0.0
    for A in range(S):
        v = g.root[A] * c.in_post[<size_t> cell * S + A]
        if v > best:
            best = v
            best_A = A
    if best_A < 0:
        return 0
    # stack entries: (i, j, symbol, layer) with layer 1 = post, 0 = pre
    cdef i32* stack = <i32*> malloc(4 * (4 * n + 4) * sizeof(i32))
    if stack == NULL:
        return ST_NO_MEMORY
    stack[0] = 0; stack[1] = n; stack[2] = best_A; stack[3] = 1
    sp = 1
    while sp > 0:
        sp -= 1
        i = stack[4 * sp]; j = stack[4 * sp + 1]; A = stack[4 * sp + 2]; layer = stack[4 * sp + 3]
        cell = cell_of(c, i, j)
        if layer == 1:
            B = c.bp_u[<size_t> cell * S + A]
            out_nodes[3 * cnt] = i; out_nodes[3 * cnt + 1] = j; out_nodes[3 * cnt + 2] = g.sym_class[A]
            cnt += 1
            if B >= 0:
                stack[4 * sp] = i; stack[4 * sp + 1] = j; stack[4 * sp + 2] = B; stack[4 * sp + 3] = 2
                sp += 1
            else:
                stack[4 * sp] = i; stack[4 * sp + 1] = j; stack[4 * sp + 2] = A; stack[4 * sp + 3] = 0
                sp += 1
            continue
        if layer == 2:      # child of a unary: emit it, then expand its pre layer
            out_nodes[3 * cnt] = i; out_nodes[3 * cnt + 1] = j; out_nodes[3 * cnt + 2] = g.sym_class[A]
            cnt += 1
        if j - i == 1:
            continue
        k = c.bp_k[<size_t> cell * S + A]
        r = c.bp_r[<size_t> cell * S + A]
        if k < 0:
            continue
        stack[4 * sp] = k; stack[4 * sp + 1] = j; stack[4 * sp + 2] = g.bl_right[r]; stack[4 * sp + 3] = 1
        sp += 1
        stack[4 * sp] = i; stack[4 * sp + 1] = k; stack[4 * sp + 2] = _left_of(g, r); stack[4 * sp + 3] = 1
        sp += 1
    free(stack)
    return cnt


cdef inline int _left_of(const CGrammar* g, int r) noexcept nogil:
    """Left child of rule r in the left-child index (binary search over bl_ptr)."""
    cdef int lo = 0, hi = g.S, mid
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if g.bl_ptr[mid] <= r:
            lo = mid
        else:
            hi = mid
    return lo


# ----------------------------------------------------------------------------------------------
# coarse-to-fine mask


cdef int build_mask(const CGrammar* coarse, Chart* cc, double logz, Chart* fine,
                    const i32* proj, int S_fine, double threshold) noexcept nogil:
    """allowed(cell, A) = max(pre, post) coarse marginal of proj[A] at that cell >= threshold.
    Returns 0, or ST_NO_MEMORY when out of memory."""
    cdef int cell, A, Sc = coarse.S
    cdef u8 any_ok
    cdef double lf, v1, v2
    cdef u8* cm = <u8*> malloc(Sc * sizeof(u8))
    if cm == NULL:
        return ST_NO_MEMORY
    for cell in range(cc.ncell):
        lf = _exp(marg_factor(cc, cell, logz))
        for A in range(Sc):
            v1 = cc.in_pre[<size_t> cell * Sc + A] * cc.out_pre[<size_t> cell * Sc + A] * lf
            v2 = cc.in_post[<size_t> cell * Sc + A] * cc.out_post[<size_t> cell * Sc + A] * lf
            cm[A] = 1 if (v1 >= threshold or v2 >= threshold) else 0
        any_ok = 0
        for A in range(S_fine):
            fine.mask[<size_t> cell * S_fine + A] = cm[proj[A]]
            any_ok |= cm[proj[A]]
        fine.mask_any[cell] = any_ok
    free(cm)
    return 0


# ----------------------------------------------------------------------------------------------
# one sentence, all modes


cdef void build_mask_dense(Dense* dc, int Sc, Chart* fine, const i32* proj, int S_fine,
                           u8 level) noexcept nogil:
    """:func:`build_mask` from the dense kernel's decisions: allowed(cell, A) when the coarse
    decision of proj[A] at that cell is >= ``level`` (2: the first threshold, 1: the second)."""
    cdef int cell, A
    cdef u8 any_ok, ok
    cdef const u8* cm
    for cell in range(dc.ncell):
        cm = dc.keep + <size_t> cell * Sc
        any_ok = 0
        for A in range(S_fine):
            ok = 1 if cm[proj[A]] >= level else 0
            fine.mask[<size_t> cell * S_fine + A] = ok
            any_ok |= ok
        fine.mask_any[cell] = any_ok


cdef struct CoarseIn:
    # the coarse grammar of a coarse-to-fine pass and its inputs (all NULL without one): the
    # projection of the fine symbols, the lexical entries of sentence s at off[s] : off[s + 1]
    const CGrammar* g
    const i32* proj
    const i32* pos
    const i32* sym
    const double* prob
    const i64* off


cdef int parse_one(const CGrammar* g, const CoarseIn* ci, i64 s, double threshold,
                   int n, const i32* lpos, const i32* lsym, const double* lprob, int nlex,
                   int mode, i32* out_nodes,
                   double* out_logz) noexcept nogil:
    """mode 0: Viterbi; mode 1: max-recall.  Sentence ``s`` of the batch (its coarse lexical
    entries in ``ci``).  Returns the number of nodes written, 0 when the sentence has no parse,
    ST_NO_MEMORY when out of memory.  The exhaustive coarse pass runs the dense kernel, which decides
    the masks at the threshold and at 1000x lower in one pass."""
    cdef Dense dc
    cdef Chart ch
    cdef double logz_c, logz
    cdef int cnt
    cdef const CGrammar* coarse = ci.g
    cdef const i32* proj = ci.proj
    cdef bint use_mask = coarse != NULL
    cdef i64 c0
    if use_mask:
        if dense_alloc(&dc, n, coarse.S, coarse.n_pp, False) != 0:
            dense_free(&dc)
            return ST_NO_MEMORY
        c0 = ci.off[s]
        _dense_inside(coarse, &dc, ci.pos + c0, ci.sym + c0, ci.prob + c0,
                      <int> (ci.off[s + 1] - c0))
        logz_c = _dense_logz(coarse, &dc)
        if logz_c == -INFINITY:
            dense_free(&dc)
            use_mask = False          # coarse grammar has no parse: fall back to exhaustive
        else:
            _dense_outside(coarse, &dc, logz_c, threshold, threshold * 1e-3)
    cdef int attempt
    if use_mask:
        # pruned passes: the threshold, then 1000x lower; exhaustive if both lose every parse
        for attempt in range(2):
            if chart_alloc(&ch, n, g.S, mode == 1, mode == 0, True) != 0:
                chart_free(&ch)
                dense_free(&dc)
                return ST_NO_MEMORY
            build_mask_dense(&dc, coarse.S, &ch, proj, g.S, 2 if attempt == 0 else 1)
            inside_pass(g, &ch, lpos, lsym, lprob, nlex, mode == 0)
            logz = log_partition(g, &ch, mode == 0)
            if logz != -INFINITY:
                break
            chart_free(&ch)
        dense_free(&dc)
    if not use_mask or logz == -INFINITY:
        if chart_alloc(&ch, n, g.S, mode == 1, mode == 0, False) != 0:
            chart_free(&ch)
            return ST_NO_MEMORY
        inside_pass(g, &ch, lpos, lsym, lprob, nlex, mode == 0)
        logz = log_partition(g, &ch, mode == 0)
    out_logz[0] = logz
    if logz == -INFINITY:
        chart_free(&ch)
        return 0
    if mode == 0:
        cnt = decode_viterbi(g, &ch, out_nodes)
    else:
        outside_pass(g, &ch)
        cnt = decode_max_recall(g, &ch, logz, out_nodes)
    chart_free(&ch)
    return cnt


# ----------------------------------------------------------------------------------------------
# Python entry points


cdef int _coarse_inputs(CoarseIn* ci, ChartGrammar grammar, lengths, ChartGrammar coarse,
                        i32[::1] proj, i64[::1] lex_offsets, i32[::1] lex_pos, i32[::1] lex_sym,
                        double[::1] lex_prob) except -1:
    """Check the coarse grammar's arguments of :func:`parse_batch` / :func:`prune_batch`
    (``proj`` maps every symbol of ``grammar`` to one of ``coarse``; its lexical entries) and
    point ``ci`` at them; all NULL when ``coarse`` is None."""
    memset(ci, 0, sizeof(CoarseIn))
    if coarse is None:
        return 0
    if proj is None or proj.shape[0] != grammar.n_symbols:
        raise ValueError("proj must map every fine symbol to a coarse symbol")
    if np.asarray(proj).min() < 0 or np.asarray(proj).max() >= coarse.n_symbols:
        raise ValueError("proj maps a fine symbol outside the coarse grammar")
    if lex_offsets is None or lex_pos is None or lex_sym is None or lex_prob is None:
        raise ValueError("a coarse grammar needs its own lexical entries")
    _check_lexical(lengths, lex_offsets, lex_pos, lex_sym, lex_prob, coarse.n_symbols,
                   "coarse lexical")
    ci.g = &coarse.g
    ci.proj = &proj[0]
    ci.off = &lex_offsets[0]
    if lex_sym.shape[0]:
        ci.pos = &lex_pos[0]
        ci.sym = &lex_sym[0]
        ci.prob = &lex_prob[0]
    return 0


def parse_batch(ChartGrammar grammar, i64[::1] lengths, i64[::1] lex_offsets, i32[::1] lex_pos,
                i32[::1] lex_sym, double[::1] lex_prob, int mode=1, ChartGrammar coarse=None,
                i32[::1] proj=None, i64[::1] coarse_lex_offsets=None, i32[::1] coarse_lex_pos=None,
                i32[::1] coarse_lex_sym=None, double[::1] coarse_lex_prob=None,
                double threshold=1e-4, int n_threads=1):
    """Parse many sentences in parallel.

    Sentence s has ``lengths[s]`` words and lexical entries ``lex_*[lex_offsets[s]:lex_offsets[s+1]]``
    (position, preterminal symbol, P(word | tag)).  With ``coarse`` (plus ``proj`` mapping fine to
    coarse symbols and the coarse grammar's own lexical entries ``coarse_lex_*``) fine items whose
    coarse posterior is below ``threshold`` are pruned (coarse-to-fine).  Returns ``(nodes, node_offsets, counts,
    logz)``: nodes[node_offsets[s]:...][:counts[s]] are (start, end, class) triples in preorder;
    counts[s] == 0 means no parse.  ``MemoryError`` (naming the sentence) when a chart cannot be
    allocated.
    """
    cdef Py_ssize_t ns = lengths.shape[0], s
    if mode not in (0, 1):
        raise ValueError(f"mode must be 0 (Viterbi) or 1 (max-recall), not {mode}")
    _check_lexical(lengths, lex_offsets, lex_pos, lex_sym, lex_prob, grammar.n_symbols)
    cdef cnp.ndarray[i64, ndim=1] node_off = np.zeros(ns + 1, dtype=np.int64)
    for s in range(ns):
        node_off[s + 1] = node_off[s] + 3 * (4 * lengths[s] + 2)
    cdef CoarseIn ci
    _coarse_inputs(&ci, grammar, lengths, coarse, proj, coarse_lex_offsets, coarse_lex_pos,
                   coarse_lex_sym, coarse_lex_prob)
    nodes_arr = np.zeros(max(node_off[ns], 1), dtype=np.int32)
    counts_arr = np.zeros(ns, dtype=np.int32)
    logz_arr = np.full(ns, -np.inf, dtype=np.float64)
    cdef i32[::1] nodes = nodes_arr
    cdef i32[::1] counts = counts_arr
    cdef double[::1] logz = logz_arr
    cdef const CGrammar* gp = &grammar.g
    cdef int nt = max(1, n_threads)
    cdef i32* lpos_p = &lex_pos[0] if lex_pos.shape[0] else NULL
    cdef i32* lsym_p = &lex_sym[0] if lex_sym.shape[0] else NULL
    cdef double* lprob_p = &lex_prob[0] if lex_prob.shape[0] else NULL
    cdef i64* loff = &lex_offsets[0]
    cdef i64* noff = <i64*> cnp.PyArray_DATA(node_off)
    cdef i64* lens = &lengths[0]
    with nogil:
        for s in prange(ns, schedule="dynamic", chunksize=1, num_threads=nt):
            counts[s] = parse_one(gp, &ci, s, threshold, <int> lens[s],
                                  lpos_p + loff[s], lsym_p + loff[s], lprob_p + loff[s],
                                  <int> (loff[s + 1] - loff[s]), mode, &nodes[noff[s]], &logz[s])
    # a count is >= 0 nodes, or ST_NO_MEMORY: the counts are the status array
    raise_for_status(counts_arr, "PCFG chart", lengths)
    return nodes_arr, node_off, counts_arr, logz_arr


cdef object _log_layer(Chart* ch, double* layer, const int* sc):
    """One score layer of a chart (per cell, S scores times 2**sc[cell]) as logs in an array
    (n, n + 1, S) indexed [i, j, A] (-inf: zero or no cell)."""
    cdef int n = ch.n, S = ch.S, i, j, cell
    out = np.full((n, n + 1, S), -np.inf)
    for i in range(n):
        for j in range(i + 1, n + 1):
            cell = cell_of(ch, i, j)
            a = np.asarray(<double[:S]> (layer + <size_t> cell * S))
            with np.errstate(divide="ignore"):
                out[i, j] = np.log(a) + sc[cell] * np.log(2.0)
    return out


def chart_marginals(ChartGrammar grammar, int n, i32[::1] lex_pos, i32[::1] lex_sym,
                    double[::1] lex_prob, bint viterbi=False, bint dense=False):
    """Single sentence: inside, outside and marginals as dense arrays (tests, pruning, analysis).

    Returns a dict with ``logz`` (log sentence probability, or log best-derivation probability
    when ``viterbi``), and arrays of shape (n, n + 1, S) indexed [i, j, A] (j exclusive):
    ``inside_pre``, ``inside_post``, ``outside_pre``, ``outside_post`` (log scale, -inf for zero),
    ``marg_pre``, ``marg_post`` (posterior probabilities; omitted in viterbi mode).  ``dense``
    (sum mode only): the scores of the dense kernel of :func:`prune_batch` instead.
    """
    cdef Chart ch
    cdef int S = grammar.n_symbols
    cdef double logz
    if n < 1:
        raise ValueError("empty sentence")
    _check_lexical(np.array([n], dtype=np.int64), np.array([0, lex_pos.shape[0]], dtype=np.int64),
                   lex_pos, lex_sym, lex_prob, S)
    cdef int nlex = lex_pos.shape[0]
    cdef i32* lp = &lex_pos[0] if nlex else NULL
    cdef i32* ls = &lex_sym[0] if nlex else NULL
    cdef double* lpr = &lex_prob[0] if nlex else NULL
    if dense and not viterbi:
        return _dense_marginals(grammar, n, lp, ls, lpr, nlex)
    if chart_alloc(&ch, n, S, True, viterbi, False) != 0:
        chart_free(&ch)
        raise_for_status(np.array([ST_NO_MEMORY]), "PCFG chart", [n])
    try:
        with nogil:
            inside_pass(&grammar.g, &ch, lp, ls, lpr, nlex, viterbi)
            logz = log_partition(&grammar.g, &ch, viterbi)
            if not viterbi and logz != -INFINITY:
                outside_pass(&grammar.g, &ch)
        res = {"logz": logz}
        ipre = _log_layer(&ch, ch.in_pre, ch.sc_in)
        ipost = _log_layer(&ch, ch.in_post, ch.sc_in)
        res["inside_pre"] = ipre
        res["inside_post"] = ipost
        if not viterbi and logz != -INFINITY:
            opre = _log_layer(&ch, ch.out_pre, ch.sc_out)
            opost = _log_layer(&ch, ch.out_post, ch.sc_out)
            res["outside_pre"] = opre
            res["outside_post"] = opost
            with np.errstate(invalid="ignore"):
                res["marg_pre"] = np.nan_to_num(np.exp(ipre + opre - logz), nan=0.0)
                res["marg_post"] = np.nan_to_num(np.exp(ipost + opost - logz), nan=0.0)
        return res
    finally:
        chart_free(&ch)


def prune_batch(ChartGrammar grammar, i64[::1] lengths, i64[::1] lex_offsets, i32[::1] lex_pos,
                i32[::1] lex_sym, double[::1] lex_prob, double threshold=1e-5, int n_threads=1,
                ChartGrammar coarse=None, i32[::1] proj=None, i64[::1] coarse_lex_offsets=None,
                i32[::1] coarse_lex_pos=None, i32[::1] coarse_lex_sym=None,
                double[::1] coarse_lex_prob=None, double coarse_threshold=1e-5, bint dense=True):
    """Posterior pruning: for each sentence the items (i, j, A) whose pre- or post-layer marginal
    is >= threshold, as an int32 array (k, 3) (j exclusive); an empty array when the sentence has
    no parse.  Sentences run in parallel; each keeps its items in a private growing buffer.

    Without ``coarse`` the chart is exhaustive and (``dense``, the default) runs the dense kernel
    (``_dense_inside`` / ``_dense_outside``: the same scores, sums over split points as dot
    products); ``dense=False`` runs the sparse kernel of the parsers (``inside_pass`` /
    ``outside_pass``).  The two differ by rounding only.

    With ``coarse`` (a coarser grammar, ``proj`` mapping every symbol of ``grammar`` to one of
    its symbols, and its own lexical entries ``coarse_lex_*``), the chart of ``grammar`` is itself
    pruned first (Petrov & Klein 2007): the coarse grammar runs exhaustive inside-outside and
    only the (cell, symbol) pairs whose projection has a coarse marginal >= ``coarse_threshold``
    are built; a sentence that so loses every parse is redone with a 1000x lower coarse
    threshold, then unpruned."""
    cdef Py_ssize_t ns = lengths.shape[0], s
    _check_lexical(lengths, lex_offsets, lex_pos, lex_sym, lex_prob, grammar.n_symbols)
    cdef CoarseIn ci
    _coarse_inputs(&ci, grammar, lengths, coarse, proj, coarse_lex_offsets, coarse_lex_pos,
                   coarse_lex_sym, coarse_lex_prob)
    cdef i32** bufs = <i32**> calloc(max(ns, 1), sizeof(i32*))
    if bufs == NULL:
        raise MemoryError("PCFG pruning chart: cannot allocate the batch's item buffers")
    counts_arr = np.zeros(ns, dtype=np.int64)
    cdef i64[::1] counts = counts_arr
    cdef i64* loff = &lex_offsets[0]
    cdef i32* lpos_p = &lex_pos[0] if lex_pos.shape[0] else NULL
    cdef i32* lsym_p = &lex_sym[0] if lex_sym.shape[0] else NULL
    cdef double* lprob_p = &lex_prob[0] if lex_prob.shape[0] else NULL
    cdef const CGrammar* gp = &grammar.g
    out = []
    try:
        with nogil:
            for s in prange(ns, schedule="dynamic", chunksize=1, num_threads=max(1, n_threads)):
                counts[s] = _prune_one(gp, <int> lengths[s], lpos_p + loff[s], lsym_p + loff[s],
                                       lprob_p + loff[s], <int> (loff[s + 1] - loff[s]), threshold,
                                       &bufs[s], &ci, s, coarse_threshold, dense)
        # a count is >= 0 items, or ST_NO_MEMORY: the counts are the status array
        raise_for_status(counts_arr, "PCFG pruning chart", lengths)
        for s in range(ns):
            arr = np.empty((counts[s], 3), dtype=np.int32)
            if counts[s] > 0:
                memcpy(cnp.PyArray_DATA(arr), bufs[s], 3 * counts[s] * sizeof(i32))
            out.append(arr)
    finally:
        for s in range(ns):
            free(bufs[s])
        free(bufs)
    return out


cdef inline int _push_item(i32** outp, i64* cnt, i64* cap, int i, int j, int A) noexcept nogil:
    """Append the item (i, j, A) to the growing buffer ``outp[0]`` of ``cap[0]`` items (1024
    first, doubled when full: :func:`alloc.grow`); ``ST_OK``, or ``ST_NO_MEMORY`` (the buffer
    stays the caller's to free)."""
    cdef i32* out
    if grow(<void**> outp, cap, cnt[0] + 1, 1024, 3 * sizeof(i32), NULL, 0) != ST_OK:
        return ST_NO_MEMORY
    out = outp[0]
    out[3 * cnt[0]] = i
    out[3 * cnt[0] + 1] = j
    out[3 * cnt[0] + 2] = A
    cnt[0] += 1
    return 0


cdef i64 _prune_one(const CGrammar* g, int n, const i32* lpos, const i32* lsym, const double* lprob,
                    int nlex, double threshold, i32** outp, const CoarseIn* ci, i64 s,
                    double coarse_threshold, bint dense=False) noexcept nogil:
    """The items of sentence ``s`` of :func:`prune_batch` (its coarse lexical entries in
    ``ci``) into ``outp[0]``; their count, or ST_NO_MEMORY when out of memory."""
    cdef const CGrammar* coarse = ci.g
    cdef const i32* proj = ci.proj
    cdef i64 c0
    if coarse == NULL and dense:
        return _prune_dense(g, n, lpos, lsym, lprob, nlex, threshold, outp)
    cdef Chart ch
    cdef Chart cc
    cdef int i, j, cell, A, S = g.S, attempt
    cdef i64 cnt = 0, cap = 0
    cdef double logz = -INFINITY, logz_c = -INFINITY, lf, v1, v2
    cdef double thr = coarse_threshold
    cdef bint use_mask = coarse != NULL
    if grow(<void**> outp, &cap, 1, 1024, 3 * sizeof(i32), NULL, 0) != ST_OK:
        return ST_NO_MEMORY
    if use_mask:
        # the coarser grammar first: exhaustive, it masks this grammar's chart
        if chart_alloc(&cc, n, coarse.S, True, False, False) != 0:
            chart_free(&cc)
            return ST_NO_MEMORY
        c0 = ci.off[s]
        inside_pass(coarse, &cc, ci.pos + c0, ci.sym + c0, ci.prob + c0,
                    <int> (ci.off[s + 1] - c0), False)
        logz_c = log_partition(coarse, &cc, False)
        if logz_c == -INFINITY:
            chart_free(&cc)
            use_mask = False
        else:
            outside_pass(coarse, &cc)
    # masked at the coarse threshold, then 1000x lower; unmasked if both lose every parse
    for attempt in range(3 if use_mask else 1):
        if chart_alloc(&ch, n, S, True, False, use_mask and attempt < 2) != 0:
            chart_free(&ch)
            if use_mask:
                chart_free(&cc)
            return ST_NO_MEMORY
        if use_mask and attempt < 2:
            if build_mask(coarse, &cc, logz_c, &ch, proj, S, thr) != 0:
                chart_free(&ch)
                chart_free(&cc)
                return ST_NO_MEMORY
        inside_pass(g, &ch, lpos, lsym, lprob, nlex, False)
        logz = log_partition(g, &ch, False)
        if logz != -INFINITY:
            break
        chart_free(&ch)
        thr = thr * 1e-3
    if use_mask:
        chart_free(&cc)
    if logz != -INFINITY:
        outside_pass(g, &ch)
        for i in range(n):
            for j in range(i + 1, n + 1):
                cell = cell_of(&ch, i, j)
                lf = _exp(marg_factor(&ch, cell, logz))
                for A in range(S):
                    v1 = ch.in_pre[<size_t> cell * S + A] * ch.out_pre[<size_t> cell * S + A] * lf
                    v2 = ch.in_post[<size_t> cell * S + A] * ch.out_post[<size_t> cell * S + A] * lf
                    if v1 >= threshold or v2 >= threshold:
                        if _push_item(outp, &cnt, &cap, i, j, A) != 0:
                            chart_free(&ch)
                            return ST_NO_MEMORY
    chart_free(&ch)
    return cnt


cdef object _dense_marginals(ChartGrammar grammar, int n, const i32* lp, const i32* ls,
                             const double* lpr, int nlex):
    """:func:`chart_marginals` by the dense kernel."""
    cdef Dense d
    cdef int S = grammar.n_symbols, i, j, cell
    cdef double logz
    if dense_alloc(&d, n, S, grammar.g.n_pp, True) != 0:
        dense_free(&d)
        raise_for_status(np.array([ST_NO_MEMORY]), "dense PCFG chart", [n])
    try:
        with nogil:
            _dense_inside(&grammar.g, &d, lp, ls, lpr, nlex)
            logz = _dense_logz(&grammar.g, &d)
            if logz != -INFINITY:
                _dense_outside(&grammar.g, &d, logz, 1.0, 1.0)
        res = {"logz": logz}
        arrs = {k: np.full((n, n + 1, S), -np.inf) for k in
                ("inside_pre", "inside_post", "outside_pre", "outside_post")}
        l2 = np.log(2.0)
        root_sc = d.sc[d.off[n]]
        with np.errstate(divide="ignore"):
            for i in range(n):
                for j in range(i + 1, n + 1):
                    cell = d.off[j - i] + i
                    a = np.asarray(<double[:S]> (d.in_pre + <size_t> cell * S))
                    arrs["inside_pre"][i, j] = np.log(a) + d.sc[cell] * l2
                    b = np.asarray(<double[:S * (n - i)]> (d.LS + d.soff[i]))[j - i - 1::n - i]
                    arrs["inside_post"][i, j] = np.log(b) + d.sc[cell] * l2
                    if logz != -INFINITY:
                        a = np.asarray(<double[:S]> (d.out_pre + <size_t> cell * S))
                        b = np.asarray(<double[:S]> (d.out_post + <size_t> cell * S))
                        arrs["outside_pre"][i, j] = np.log(a) + (root_sc - d.sc[cell]) * l2
                        arrs["outside_post"][i, j] = np.log(b) + (root_sc - d.sc[cell]) * l2
        res["inside_pre"] = arrs["inside_pre"]
        res["inside_post"] = arrs["inside_post"]
        if logz != -INFINITY:
            res["outside_pre"] = arrs["outside_pre"]
            res["outside_post"] = arrs["outside_post"]
            with np.errstate(invalid="ignore"):
                res["marg_pre"] = np.nan_to_num(np.exp(res["inside_pre"] + res["outside_pre"]
                                                       - logz), nan=0.0)
                res["marg_post"] = np.nan_to_num(np.exp(res["inside_post"] + res["outside_post"]
                                                        - logz), nan=0.0)
        return res
    finally:
        dense_free(&d)


cdef i64 _prune_dense(const CGrammar* g, int n, const i32* lpos, const i32* lsym,
                      const double* lprob, int nlex, double threshold, i32** outp) noexcept nogil:
    """:func:`_prune_one` without a coarse grammar, by the dense kernel: the items in the same
    order (by start, end, symbol)."""
    cdef Dense d
    cdef int i, j, A, S = g.S
    cdef i64 cnt = 0, cap = 0
    cdef double logz
    cdef u8* keep
    if grow(<void**> outp, &cap, 1, 1024, 3 * sizeof(i32), NULL, 0) != ST_OK:
        return ST_NO_MEMORY
    if dense_alloc(&d, n, S, g.n_pp, False) != 0:
        dense_free(&d)
        return ST_NO_MEMORY
    _dense_inside(g, &d, lpos, lsym, lprob, nlex)
    logz = _dense_logz(g, &d)
    if logz != -INFINITY:
        _dense_outside(g, &d, logz, threshold, threshold)
        for i in range(n):
            for j in range(i + 1, n + 1):
                keep = d.keep + <size_t> (d.off[j - i] + i) * S
                for A in range(S):
                    if keep[A]:
                        if _push_item(outp, &cnt, &cap, i, j, A) != 0:
                            dense_free(&d)
                            return ST_NO_MEMORY
    dense_free(&d)
    return cnt


def _fail_allocations_after(long k):
    """Tests: the ``k``-th allocation of this module from now on and every later one fail
    (``k < 0``: allocations succeed again); see ``alloc.h``."""
    fail_after(k)
