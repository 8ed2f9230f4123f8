# cython: language_level=3
# (boundscheck, wraparound, cdivision and initializedcheck come from setup.py, so that
# FASTSPECTRAL_BOUNDSCHECK=1 can switch the checks on: a directive here would override it)
"""The tensor chart: inside-outside for latent-variable PCFGs (Cohen et al. 2012, figure 3) over a
pruned chart, max-recall decoding of its marginals, and the item lists of coarse-to-fine pruning.

Kept as one module (about 1,340 lines): every kernel here reads one layout, the pruned item
lists of a batch (``item_ptr``, ``item_i`` / ``item_j`` / ``item_sym``) with the
``TensorGrammar`` and the leaf arrays; ``inside_outside_batch`` chooses per sentence, inside
one ``prange`` body, between the tensor pass (``_sentence``) and the one-state pass
(``_sentence_scalar``), which share the cell placement helpers, and the decoder and the item
projection of coarse-to-fine work on the marginals of those lists.  Apart, the ``cdef``
helpers would be called through Cython's function-pointer tables across modules.

This is the second of the package's two chart engines; the first, ``cky.pyx``, holds dense
per-cell symbol scores for plain PCFGs.  The L-PCFG parser runs both: ``cky`` prunes with the
coarse PCFG, then this module runs the PCFG pass (one state per symbol: ``_sentence_scalar``, the
third PCFG inside-outside: see "Three PCFG inside-outside implementations" in ``cky.pyx``) and
the L-PCFG pass over the survivors.  ``_sentence_scalar`` must be here rather than in ``cky``:
it runs over the coarse pass's surviving items in the layout the L-PCFG pass reads (its marginals
prune that pass, its leaf weights are the tensor kernel's), with memory proportional to those
items rather than to cells times symbols.  Shared declarations (integer types, the grammar
layouts, the item index by cell) are in ``chart_common.pxd``.

Every symbol ``a`` has ``m[a]`` latent dimensions.  Parameters (all float64, row-major, flat with
offsets):

* binary rule ``r = a -> b c``: tensor ``T[toff[r] : toff[r] + m_a*m_b*m_c]`` laid out ``[h, h2, h3]``;
* unary rule ``r = a -> p``: matrix ``U[uoff[r] : ... + m_a*m_p]`` laid out ``[h, h2]``;
* root vector ``c1[c1off[a] : c1off[a] + m_a]`` (``c1off[a] = -1`` when ``a`` never roots a tree);
* a preterminal item at a one-word span gets its inside vector from the caller:
  ``leaf_w[item] * leaf_table[leaf_off[item] : leaf_off[item] + m_p]``.

Inside vectors are built bottom up, ``alpha^a = sum_{k, a->b c} T^{a->bc}(alpha^b, alpha^c)`` (the
contraction is over the child indices), outside vectors top down; the result per item is the
marginal ``mu(a, i, j) = alpha . beta / Z`` where ``Z`` is the (scaled) total weight of the
sentence.  For each (parent item, rule) pair the kernel first sums the outer products
``alpha^b (x) alpha^c`` over all split points and then contracts the tensor once (``m^3`` per pair
instead of per split), and reuses that grouping top down (``W = beta^a . T``, then ``m^2`` per split).

Sentences run in parallel (OpenMP ``prange``, thin ``def`` wrappers over ``cdef ... nogil``
functions); every sentence allocates its own buffers (a :c:type:`Work` freed in one place) whose
size is proportional to its pruned chart (items and hyperedges), never to ``n^2 * |symbols|``.
The buffers are C arrays, not ``std::vector``: a C++ build with vector buffers was measured about
4% slower on the WSJ section-22 benchmark (same instruction count, see chart_common.pxd).
Their growth is ``alloc.grow`` (counted against the sentence's budget), and every kernel reports
a status per sentence (``status.pxd``): a chart that cannot be allocated is a ``MemoryError``
naming the sentence, one over the budget is status ``ST_OVER_BUDGET`` for the caller.

S. B. Cohen, K. Stratos, M. Collins, D. P. Foster and L. Ungar, "Spectral learning of
latent-variable PCFGs", ACL 2012, figure 3 (the tensor inside-outside); J. Goodman, "Parsing
algorithms and metrics", ACL 1996 (max-recall decoding); S. Petrov and D. Klein, "Improved
inference for unlexicalized parsing", NAACL 2007 (coarse-to-fine item projection).
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.string cimport memset

from .alloc cimport malloc, calloc, free, grow, fail_after
from .chart_common cimport TensorGrammar, i32, i64, index_cells
from .maxrecall cimport maxrecall_tree
from .status cimport ST_OK, ST_NO_MEMORY, ST_OVER_BUDGET
from ._status import raise_for_status

cdef extern from "small_dense.h" nogil:
    # written-out small products (see small_dense.h: no BLAS, whose buffer lock serialised the
    # threads)
    void fs_gemv_rows(int m, int n, const double* A, const double* x, double* y)
    void fs_gemv_cols(int m, int n, const double* A, const double* w, double* z)
    void fs_gemv_rows_f(int m, int n, const float* A, const double* x, double* y)
    void fs_gemv_cols_f(int m, int n, const float* A, const double* w, double* z)
    void fs_outer_add(int nb, int nc, const double* x, const double* y, double* M)
    void fs_bilinear_back(int nb, int nc, const double* W, const double* x, const double* y,
                          double* bx, double* by)


cdef inline char _nonzero(const double* v, i64 n) noexcept nogil:
    cdef i64 h
    for h in range(n):
        if v[h] != 0.0:
            return 1
    return 0


cdef struct Work:
    # the sentence: words, first and end item of the batch's arrays
    int n
    i64 p0
    i64 p1
    i64* voff
    i64* cell_lo
    i64* cell_hi
    i64* lvl          # groups of the cells of span length L: grp[lvl[L] : lvl[L + 1]]
    i32* pos_par
    i32* pos_right
    i32* slot
    double* alpha
    double* beta
    double* M
    i32* tmp          # edges of the current cell: rule, left item, right item
    i64 tmp_cap
    i64* grp          # groups: rule, parent item, first edge, end edge (edge ids pass 2**31)
    i64 grp_cap
    i32* edges        # left item, right item
    i64 edge_cap
    i32* cell_rules
    i64 cr_cap
    i32* cnt
    i64 cnt_cap
    i32* uedge        # unary edges: rule, parent item, child item
    char* live        # item has a nonzero inside vector
    i64 ue_cap
    i64 ngrp
    i64 nedge
    i64 nue
    double Z
    i64 bytes         # bytes allocated for this sentence
    i64 limit         # its memory budget (0: none); a sentence that would pass it gets
                      # ST_OVER_BUDGET


cdef inline int _grow(i32** buf, i64* cap, i64 need, Work* wk) noexcept nogil:
    """Room for ``need`` entries in the ``i32`` buffer ``buf`` (:func:`alloc.grow`: doubling,
    counted in ``wk.bytes`` against ``wk.limit``); ``ST_OK``, ``ST_NO_MEMORY`` or
    ``ST_OVER_BUDGET``."""
    return grow(<void**> buf, cap, need, 0, sizeof(i32), &wk.bytes, wk.limit)


cdef inline int _grow64(i64** buf, i64* cap, i64 need, Work* wk) noexcept nogil:
    """:func:`_grow` for an ``i64`` buffer."""
    return grow(<void**> buf, cap, need, 0, sizeof(i64), &wk.bytes, wk.limit)


cdef inline void _place(i32* pos, const i32* sym, i64 lo, i64 hi) noexcept nogil:
    """``pos[sym[it]] = it`` for the items ``lo .. hi - 1`` of a cell (``sym``: the sentence's
    item symbols), so that a rule finds the cell's item of a symbol (-1: none)."""
    cdef i64 it
    for it in range(lo, hi):
        pos[sym[it]] = <i32> it


cdef inline void _place_live(i32* pos, const i32* sym, i64 lo, i64 hi,
                             const char* live) noexcept nogil:
    """:func:`_place` for the live items only (a nonzero inside score)."""
    cdef i64 it
    for it in range(lo, hi):
        if live[it]:
            pos[sym[it]] = <i32> it


cdef inline void _unplace(i32* pos, const i32* sym, i64 lo, i64 hi) noexcept nogil:
    """Undo :func:`_place` (``pos`` back to all -1)."""
    cdef i64 it
    for it in range(lo, hi):
        pos[sym[it]] = -1


cdef void _free_work(Work* wk) noexcept nogil:
    free(wk.voff)
    free(wk.cell_lo)
    free(wk.cell_hi)
    free(wk.lvl)
    free(wk.pos_par)
    free(wk.pos_right)
    free(wk.slot)
    free(wk.alpha)
    free(wk.beta)
    free(wk.M)
    free(wk.tmp)
    free(wk.grp)
    free(wk.edges)
    free(wk.cell_rules)
    free(wk.cnt)
    free(wk.uedge)
    free(wk.live)
    memset(wk, 0, sizeof(Work))


cdef int _sentence(const TensorGrammar* g, int n, i64 p0, i64 p1,
                   const i32* item_i, const i32* item_j, const i32* item_sym,
                   const double* leaf_w, const i64* leaf_off, const double* leaf_table,
                   double* mu_out, double* z_out, i64 limit) noexcept nogil:
    """Inside-outside for one sentence; returns ``ST_OK``, ``ST_NO_MEMORY`` when memory ran out,
    ``ST_OVER_BUDGET`` when its chart would pass ``limit`` bytes (0: no limit)."""
    cdef Work wk
    cdef int status, length
    cdef i64 gi
    memset(&wk, 0, sizeof(Work))
    wk.limit = limit
    status = _setup(g, &wk, n, p0, p1, item_i, item_j, item_sym, leaf_w, leaf_off, leaf_table)
    if status == 0:
        for length in range(2, n + 1):
            status = _build_level(g, &wk, item_sym, length)
            if status != 0:
                break
            for gi in range(wk.lvl[length], wk.lvl[length + 1]):
                _contract_in(g, &wk, gi)
            _finish_level(&wk, length)
    if status == 0:
        _root(g, &wk, item_sym, z_out)
        gi = wk.ngrp - 1
        while gi >= 0:
            _contract_out(g, &wk, gi)
            gi -= 1
        _finish(g, &wk, mu_out)
    _free_work(&wk)
    return status


cdef int _setup(const TensorGrammar* g, Work* wk, int n, i64 p0, i64 p1,
                const i32* item_i, const i32* item_j, const i32* item_sym,
                const double* leaf_w, const i64* leaf_off, const double* leaf_table) noexcept nogil:
    """Allocate the sentence's buffers, index its items by cell and compute the inside vectors
    of the one-word spans (lexical items and unary rules above them).  0, -1 or -2."""
    cdef i64 k = p1 - p0
    cdef i64 it, jt, q
    cdef int i, s, a, r, h, h2, ma, mb, cid, status
    cdef int ncell = (n + 1) * (n + 1)
    cdef double acc, w
    cdef i64 sum_m = 0
    cdef i64 maxm2 = 1
    wk.n = n
    wk.p0 = p0
    wk.p1 = p1
    for it in range(k):
        sum_m += g.m[item_sym[p0 + it]]
    for s in range(g.S):
        if <i64> g.m[s] * g.m[s] > maxm2:
            maxm2 = <i64> g.m[s] * g.m[s]
    # the fixed buffers, counted before any is allocated
    wk.bytes = ((k + 1) * 9 + <i64> ncell * 16 + <i64> g.S * 8 + (g.R + 1) * 4
                + (sum_m + 1) * 16 + (maxm2 + 1) * 8 + (n + 3) * 8)
    if wk.limit > 0 and wk.bytes > wk.limit:
        return ST_OVER_BUDGET
    wk.voff = <i64*> malloc((k + 1) * sizeof(i64))
    wk.cell_lo = <i64*> calloc(ncell, sizeof(i64))
    wk.cell_hi = <i64*> calloc(ncell, sizeof(i64))
    wk.lvl = <i64*> calloc(n + 3, sizeof(i64))
    wk.pos_par = <i32*> malloc(g.S * sizeof(i32))
    wk.pos_right = <i32*> malloc(g.S * sizeof(i32))
    wk.slot = <i32*> malloc((g.R + 1) * sizeof(i32))
    wk.live = <char*> calloc(k + 1, sizeof(char))
    if (wk.voff == NULL or wk.cell_lo == NULL or wk.cell_hi == NULL or wk.lvl == NULL
            or wk.pos_par == NULL or wk.pos_right == NULL or wk.slot == NULL or wk.live == NULL):
        return ST_NO_MEMORY
    cdef char* live = wk.live
    cdef i64* voff = wk.voff
    cdef i64* cell_lo = wk.cell_lo
    cdef i64* cell_hi = wk.cell_hi
    cdef i32* pos_par = wk.pos_par
    for s in range(g.S):
        wk.pos_par[s] = -1
        wk.pos_right[s] = -1
    for r in range(g.R + 1):
        wk.slot[r] = -1
    voff[0] = 0
    for it in range(k):
        voff[it + 1] = voff[it] + g.m[item_sym[p0 + it]]
    wk.alpha = <double*> calloc(voff[k] + 1, sizeof(double))
    wk.beta = <double*> calloc(voff[k] + 1, sizeof(double))
    wk.M = <double*> malloc((maxm2 + 1) * sizeof(double))
    if wk.alpha == NULL or wk.beta == NULL or wk.M == NULL:
        return ST_NO_MEMORY
    cdef double* alpha = wk.alpha
    # items arrive sorted by (length, i, sym): one contiguous range per cell
    index_cells(n, k, item_i + p0, item_j + p0, cell_lo, cell_hi)
    for i in range(n):
        cid = i * (n + 1) + i + 1
        for it in range(cell_lo[cid], cell_hi[cid]):
            if leaf_off[p0 + it] >= 0:
                s = item_sym[p0 + it]
                w = leaf_w[p0 + it]
                for h in range(g.m[s]):
                    alpha[voff[it] + h] = w * leaf_table[leaf_off[p0 + it] + h]
        _place(pos_par, item_sym + p0, cell_lo[cid], cell_hi[cid])
        for it in range(cell_lo[cid], cell_hi[cid]):
            s = item_sym[p0 + it]
            if leaf_off[p0 + it] < 0:
                continue
            for q in range(g.uc_ptr[s], g.uc_ptr[s + 1]):
                r = g.uc_rule[q]
                a = g.un_parent[r]
                if pos_par[a] < 0 or a == s:
                    continue
                jt = pos_par[a]
                status = _grow(&wk.uedge, &wk.ue_cap, 3 * (wk.nue + 1), wk)
                if status != 0:
                    return status
                wk.uedge[3 * wk.nue] = r
                wk.uedge[3 * wk.nue + 1] = <i32> jt
                wk.uedge[3 * wk.nue + 2] = <i32> it
                wk.nue += 1
                ma = g.m[a]
                mb = g.m[s]
                for h in range(ma):
                    acc = 0.0
                    for h2 in range(mb):
                        acc = acc + g.U[g.uoff[r] + h * mb + h2] * alpha[voff[it] + h2]
                    alpha[voff[jt] + h] += acc
        for it in range(cell_lo[cid], cell_hi[cid]):
            pos_par[item_sym[p0 + it]] = -1
            live[it] = _nonzero(&alpha[voff[it]], voff[it + 1] - voff[it])
    return 0


cdef int _build_level(const TensorGrammar* g, Work* wk, const i32* item_sym,
                      int length) noexcept nogil:
    """The hyperedges of every cell of span ``length``, grouped by (parent item, rule):
    groups ``grp[lvl[length] : lvl[length + 1]]``.  Their contraction is left to the caller
    (:func:`_contract_in`), then :func:`_finish_level`.  0, -1 or -2."""
    cdef int n = wk.n
    cdef i64 p0 = wk.p0
    cdef i64 it, jt, e, q
    cdef int i, j, b, c, a, r, cid, lc, rc_, split, ncr, status
    cdef i64 ntmp
    cdef i64* cell_lo = wk.cell_lo
    cdef i64* cell_hi = wk.cell_hi
    cdef i32* pos_par = wk.pos_par
    cdef i32* pos_right = wk.pos_right
    cdef i32* slot = wk.slot
    cdef char* live = wk.live
    wk.lvl[length] = wk.ngrp
    for i in range(0, n - length + 1):
        j = i + length
        cid = i * (n + 1) + j
        if cell_hi[cid] <= cell_lo[cid]:
            continue
        _place(pos_par, item_sym + p0, cell_lo[cid], cell_hi[cid])
        ntmp = 0
        ncr = 0
        for split in range(i + 1, j):
            lc = i * (n + 1) + split
            rc_ = split * (n + 1) + j
            if cell_hi[lc] <= cell_lo[lc] or cell_hi[rc_] <= cell_lo[rc_]:
                continue
            # items with a zero inside vector take part in no derivation: skip them
            _place_live(pos_right, item_sym + p0, cell_lo[rc_], cell_hi[rc_], live)
            for it in range(cell_lo[lc], cell_hi[lc]):
                if not live[it]:
                    continue
                b = item_sym[p0 + it]
                for q in range(g.rl_ptr[b], g.rl_ptr[b + 1]):
                    r = g.rl_rule[q]
                    c = g.bin_right[r]
                    if pos_right[c] < 0:
                        continue
                    a = g.bin_parent[r]
                    if pos_par[a] < 0:
                        continue
                    status = _grow(&wk.tmp, &wk.tmp_cap, 3 * (ntmp + 1), wk)
                    if status != 0:
                        return status
                    wk.tmp[3 * ntmp] = r
                    wk.tmp[3 * ntmp + 1] = <i32> it
                    wk.tmp[3 * ntmp + 2] = pos_right[c]
                    ntmp += 1
                    if slot[r] < 0:
                        status = _grow(&wk.cell_rules, &wk.cr_cap, ncr + 1, wk)
                        if status != 0:
                            return status
                        slot[r] = ncr
                        wk.cell_rules[ncr] = r
                        ncr += 1
            _unplace(pos_right, item_sym + p0, cell_lo[rc_], cell_hi[rc_])
        if ntmp > 0:
            # counting sort of this cell's edges by rule slot -> groups
            status = _grow(&wk.cnt, &wk.cnt_cap, ncr + 1, wk)
            if status != 0:
                return status
            for q in range(ncr + 1):
                wk.cnt[q] = 0
            for e in range(ntmp):
                wk.cnt[slot[wk.tmp[3 * e]] + 1] += 1
            for q in range(ncr):
                wk.cnt[q + 1] += wk.cnt[q]
            status = _grow(&wk.edges, &wk.edge_cap, 2 * (wk.nedge + ntmp), wk)
            if status == 0:
                status = _grow64(&wk.grp, &wk.grp_cap, 4 * (wk.ngrp + ncr), wk)
            if status != 0:
                return status
            for q in range(ncr):
                r = wk.cell_rules[q]
                wk.grp[4 * (wk.ngrp + q)] = r
                wk.grp[4 * (wk.ngrp + q) + 1] = pos_par[g.bin_parent[r]]
                wk.grp[4 * (wk.ngrp + q) + 2] = wk.nedge + wk.cnt[q]
                wk.grp[4 * (wk.ngrp + q) + 3] = wk.nedge + wk.cnt[q + 1]
            for e in range(ntmp):
                q = slot[wk.tmp[3 * e]]
                wk.edges[2 * (wk.nedge + wk.cnt[q])] = wk.tmp[3 * e + 1]
                wk.edges[2 * (wk.nedge + wk.cnt[q]) + 1] = wk.tmp[3 * e + 2]
                wk.cnt[q] += 1
            wk.ngrp += ncr
            wk.nedge += ntmp
        for q in range(ncr):
            slot[wk.cell_rules[q]] = -1
        _unplace(pos_par, item_sym + p0, cell_lo[cid], cell_hi[cid])
    wk.lvl[length + 1] = wk.ngrp
    return 0


cdef inline double _scalar(const TensorGrammar* g, int r) noexcept nogil:
    """The weight of the 1x1x1 rule ``r`` (from the float32 tensors when there is no float64
    ``T``)."""
    if g.T != NULL:
        return g.T[g.toff[r]]
    return <double> g.Tf[g.toff[r]]


cdef inline void _contract_in(const TensorGrammar* g, Work* wk, i64 gi) noexcept nogil:
    """Inside step of group ``gi``: ``alpha^a += T (sum over its edges of alpha^b (x) alpha^c)``
    (the outer products summed first: one tensor product per group, not per split point)."""
    cdef int r = <int> wk.grp[4 * gi]
    cdef i64 jt = wk.grp[4 * gi + 1]
    cdef i64 e
    cdef int ma = g.m[g.bin_parent[r]]
    cdef int mb = g.m[g.bin_left[r]]
    cdef int mc = g.m[g.bin_right[r]]
    cdef double acc
    cdef double* alpha = wk.alpha
    cdef i64* voff = wk.voff
    cdef i32* edges = wk.edges
    if ma == 1 and mb == 1 and mc == 1:
        acc = 0.0
        for e in range(wk.grp[4 * gi + 2], wk.grp[4 * gi + 3]):
            acc = acc + alpha[voff[edges[2 * e]]] * alpha[voff[edges[2 * e + 1]]]
        alpha[voff[jt]] += _scalar(g, r) * acc
        return
    memset(wk.M, 0, mb * mc * sizeof(double))
    for e in range(wk.grp[4 * gi + 2], wk.grp[4 * gi + 3]):
        fs_outer_add(mb, mc, &alpha[voff[edges[2 * e]]], &alpha[voff[edges[2 * e + 1]]], wk.M)
    # T row-major (ma, mb*mc): alpha^a += T M
    if g.Tf != NULL:
        fs_gemv_rows_f(ma, mb * mc, &g.Tf[g.toff[r]], wk.M, &alpha[voff[jt]])
    else:
        fs_gemv_rows(ma, mb * mc, &g.T[g.toff[r]], wk.M, &alpha[voff[jt]])


cdef void _finish_level(Work* wk, int length) noexcept nogil:
    """Mark the items of span ``length`` whose inside vector is nonzero (``live``)."""
    cdef int n = wk.n, i, cid
    cdef i64 it
    for i in range(0, n - length + 1):
        cid = i * (n + 1) + i + length
        for it in range(wk.cell_lo[cid], wk.cell_hi[cid]):
            wk.live[it] = _nonzero(&wk.alpha[wk.voff[it]], wk.voff[it + 1] - wk.voff[it])


cdef void _root(const TensorGrammar* g, Work* wk, const i32* item_sym,
                double* z_out) noexcept nogil:
    """Root vectors as the outside vectors of the whole-sentence items; ``Z``."""
    cdef int s, h
    cdef i64 it
    cdef int cid = wk.n
    cdef double Z = 0.0
    for it in range(wk.cell_lo[cid], wk.cell_hi[cid]):
        s = item_sym[wk.p0 + it]
        if g.c1off[s] >= 0:
            for h in range(g.m[s]):
                wk.beta[wk.voff[it] + h] = g.c1[g.c1off[s] + h]
                Z += g.c1[g.c1off[s] + h] * wk.alpha[wk.voff[it] + h]
    wk.Z = Z
    z_out[0] = Z


cdef inline void _contract_out(const TensorGrammar* g, Work* wk, i64 gi) noexcept nogil:
    """Outside step of group ``gi``: ``W = T^T beta^a`` once, then every edge's two children."""
    cdef int r = <int> wk.grp[4 * gi]
    cdef i64 jt = wk.grp[4 * gi + 1]
    cdef i64 e, it, q
    cdef int ma = g.m[g.bin_parent[r]]
    cdef int mb = g.m[g.bin_left[r]]
    cdef int mc = g.m[g.bin_right[r]]
    cdef double w
    cdef double* alpha = wk.alpha
    cdef double* beta = wk.beta
    cdef i64* voff = wk.voff
    cdef i32* edges = wk.edges
    if ma == 1 and mb == 1 and mc == 1:
        w = _scalar(g, r) * beta[voff[jt]]
        if w != 0.0:
            for e in range(wk.grp[4 * gi + 2], wk.grp[4 * gi + 3]):
                it = edges[2 * e]
                q = edges[2 * e + 1]
                beta[voff[it]] += w * alpha[voff[q]]
                beta[voff[q]] += w * alpha[voff[it]]
        return
    memset(wk.M, 0, mb * mc * sizeof(double))
    # W = T^T beta^a  (mb*mc vector, i.e. an mb x mc matrix)
    if g.Tf != NULL:
        fs_gemv_cols_f(ma, mb * mc, &g.Tf[g.toff[r]], &beta[voff[jt]], wk.M)
    else:
        fs_gemv_cols(ma, mb * mc, &g.T[g.toff[r]], &beta[voff[jt]], wk.M)
    for e in range(wk.grp[4 * gi + 2], wk.grp[4 * gi + 3]):
        it = edges[2 * e]
        q = edges[2 * e + 1]
        fs_bilinear_back(mb, mc, wk.M, &alpha[voff[it]], &alpha[voff[q]], &beta[voff[it]],
                         &beta[voff[q]])


cdef void _finish(const TensorGrammar* g, Work* wk, double* mu_out) noexcept nogil:
    """Outside vectors through the unary rules of the one-word spans, then the marginals
    ``mu = alpha . beta / Z`` of every item."""
    cdef i64 e, it, jt, h
    cdef int r, ma, mb, hh, h2
    cdef double w, acc
    cdef double Z = wk.Z
    cdef double* alpha = wk.alpha
    cdef double* beta = wk.beta
    cdef i64* voff = wk.voff
    for e in range(wk.nue):
        r = wk.uedge[3 * e]
        jt = wk.uedge[3 * e + 1]
        it = wk.uedge[3 * e + 2]
        ma = g.m[g.un_parent[r]]
        mb = g.m[g.un_child[r]]
        for hh in range(ma):
            w = beta[voff[jt] + hh]
            if w != 0.0:
                for h2 in range(mb):
                    beta[voff[it] + h2] += w * g.U[g.uoff[r] + hh * mb + h2]
    for it in range(wk.p1 - wk.p0):
        acc = 0.0
        for h in range(voff[it], voff[it + 1]):
            acc = acc + alpha[h] * beta[h]
        if Z != 0.0:
            mu_out[wk.p0 + it] = acc / Z
        else:
            mu_out[wk.p0 + it] = 0.0


cdef struct ScalarEdges:
    # the rule applications of the one-state kernel, recorded bottom up for the outside pass:
    # 4 entries each (parent item, left item, right item, packed rule q); the cells of two
    # words and more are numbered in the order of the inside pass (by length, then start:
    # cell [i, i + L) is ``at[L] + i``) and the edges of cell c are ``lo[c] .. lo[c + 1] - 1``
    i32* e
    i64 n
    i64 cap
    i64* lo
    i64* at
    i64 bytes           # bytes of the sentence's buffers
    i64 limit           # its memory budget (0: none)


cdef inline int _scalar_cell(const TensorGrammar* g, int n, i64 p0, int i, int j,
                             const i32* item_sym, const i64* cell_lo, const i64* cell_hi,
                             i32* pos_par, i32* pos_right, char* live, double* alpha,
                             ScalarEdges* ed) noexcept nogil:
    """Inside step of cell ``[i, j)`` of the one-state kernel: every rule application
    ``a -> b c`` with ``a`` in the cell and live children at a split point adds
    ``T alpha[b] alpha[c]`` to ``alpha[a]`` and is recorded (``ed``) for the outside pass;
    then the cell's items are marked live or not.  Returns ``ST_OK``, ``ST_NO_MEMORY`` or
    ``ST_OVER_BUDGET`` (over the sentence's memory budget)."""
    cdef int cid = i * (n + 1) + j
    cdef int split, lc, rc_, b
    cdef i64 it, jt, q
    cdef i32 pa, rt
    cdef int status
    cdef i64 c = ed.at[j - i] + i
    ed.lo[c] = ed.n
    ed.lo[c + 1] = ed.n
    if cell_hi[cid] <= cell_lo[cid]:
        return 0
    _place(pos_par, item_sym + p0, cell_lo[cid], cell_hi[cid])
    for split in range(i + 1, j):
        lc = i * (n + 1) + split
        rc_ = split * (n + 1) + j
        if cell_hi[lc] <= cell_lo[lc] or cell_hi[rc_] <= cell_lo[rc_]:
            continue
        _place_live(pos_right, item_sym + p0, cell_lo[rc_], cell_hi[rc_], live)
        for it in range(cell_lo[lc], cell_hi[lc]):
            if not live[it]:
                continue
            b = item_sym[p0 + it]
            for q in range(g.rl_ptr[b], g.rl_ptr[b + 1]):
                rt = pos_right[g.sl_right[q]]
                if rt < 0:
                    continue
                pa = pos_par[g.sl_par[q]]
                if pa < 0:
                    continue
                alpha[pa] += g.sl_w[q] * alpha[it] * alpha[rt]
                if ed.n == ed.cap:
                    status = grow(<void**> &ed.e, &ed.cap, ed.n + 1, 4096, 4 * sizeof(i32),
                                  &ed.bytes, ed.limit)
                    if status != ST_OK:
                        return status
                ed.e[4 * ed.n] = pa
                ed.e[4 * ed.n + 1] = <i32> it
                ed.e[4 * ed.n + 2] = rt
                ed.e[4 * ed.n + 3] = <i32> q
                ed.n += 1
        _unplace(pos_right, item_sym + p0, cell_lo[rc_], cell_hi[rc_])
    ed.lo[c + 1] = ed.n
    for it in range(cell_lo[cid], cell_hi[cid]):
        pos_par[item_sym[p0 + it]] = -1
        live[it] = alpha[it] != 0.0
    return 0


cdef inline void _scalar_cell_out(const TensorGrammar* g, int n, int i, int j, const char* live,
                                  const double* alpha, double* beta,
                                  const ScalarEdges* ed) noexcept nogil:
    """Outside step of cell ``[i, j)``: the cell's recorded rule applications in the order of
    the inside step, ``beta[b] += T beta[a] alpha[c]`` and ``beta[c] += T beta[a] alpha[b]``
    for parents with a nonzero outside score (live)."""
    cdef i64 c = ed.at[j - i] + i
    cdef i64 e, it, jt
    cdef i32 pa
    cdef double w
    for e in range(ed.lo[c], ed.lo[c + 1]):
        pa = ed.e[4 * e]
        if beta[pa] == 0.0 or not live[pa]:
            continue
        it = ed.e[4 * e + 1]
        jt = ed.e[4 * e + 2]
        w = g.sl_w[ed.e[4 * e + 3]] * beta[pa]
        beta[it] += w * alpha[jt]
        beta[jt] += w * alpha[it]


cdef inline void _scalar_unaries(const TensorGrammar* g, i64 lo, i64 hi, const i32* sym,
                                 const i64* leaf_off, const i32* pos_par, const char* live,
                                 double* x, bint outside) noexcept nogil:
    """The unary rules ``a -> s`` of a one-word cell (items ``lo .. hi - 1``, placed in
    ``pos_par``) in the one-state kernel, from each lexical item ``s``: inside (``x`` = alpha,
    items with a nonzero score) ``alpha[a] += U alpha[s]``; outside (``x`` = beta, live items)
    ``beta[s] += U beta[a]``."""
    cdef i64 it, q
    cdef int s, r, a
    for it in range(lo, hi):
        if leaf_off[it] < 0:
            continue
        if outside:
            if not live[it]:
                continue
        elif x[it] == 0.0:
            continue
        s = sym[it]
        for q in range(g.uc_ptr[s], g.uc_ptr[s + 1]):
            r = g.uc_rule[q]
            a = g.un_parent[r]
            if pos_par[a] >= 0 and a != s:
                if outside:
                    x[it] += g.U[g.uoff[r]] * x[pos_par[a]]
                else:
                    x[pos_par[a]] += g.U[g.uoff[r]] * x[it]


cdef int _sentence_scalar(const TensorGrammar* g, int n, i64 p0, i64 p1,
                          const i32* item_i, const i32* item_j, const i32* item_sym,
                          const double* leaf_w, const i64* leaf_off, const double* leaf_table,
                          double* mu_out, double* z_out, i64 limit) noexcept nogil:
    """Inside-outside of a one-state grammar (a plain PCFG): the inside pass records its rule
    applications (16 bytes each), the outside pass replays them top down in the same order.
    The third PCFG inside-outside of the package, next to ``cky.inside_pass`` (sparse, masks,
    Viterbi) and ``cky._dense_inside`` (dense, exhaustive): this one runs over a pruned item
    list in the layout of the L-PCFG pass, with memory proportional to its items (why each
    exists: the ``cky.pyx`` module docstring).
    Returns ST_OK, ST_NO_MEMORY or ST_OVER_BUDGET (the chart would pass ``limit`` bytes; 0: no limit)."""
    cdef i64 k = p1 - p0
    cdef int ncell = (n + 1) * (n + 1)
    cdef ScalarEdges ed
    memset(&ed, 0, sizeof(ScalarEdges))
    ed.limit = limit
    ed.bytes = (k + 1) * 17 + <i64> ncell * 16 + <i64> g.S * 8 + (<i64> n * (n + 1) // 2 + n + 4) * 8
    if limit > 0 and ed.bytes > limit:
        return ST_OVER_BUDGET
    cdef double* alpha = <double*> calloc(k + 1, sizeof(double))
    cdef double* beta = <double*> calloc(k + 1, sizeof(double))
    cdef i64* cell_lo = <i64*> calloc(ncell, sizeof(i64))
    cdef i64* cell_hi = <i64*> calloc(ncell, sizeof(i64))
    cdef i32* pos_par = <i32*> malloc(g.S * sizeof(i32))
    cdef i32* pos_right = <i32*> malloc(g.S * sizeof(i32))
    cdef char* live = <char*> calloc(k + 1, sizeof(char))
    ed.lo = <i64*> calloc(<i64> n * (n + 1) // 2 + 1, sizeof(i64))
    ed.at = <i64*> calloc(n + 2, sizeof(i64))
    cdef i64 it
    cdef int i, length, cid, s, status = 0
    cdef double Z = 0.0
    if (alpha == NULL or beta == NULL or cell_lo == NULL or cell_hi == NULL or pos_par == NULL
            or pos_right == NULL or live == NULL or ed.lo == NULL or ed.at == NULL):
        status = ST_NO_MEMORY
    else:
        for length in range(3, n + 1):
            ed.at[length] = ed.at[length - 1] + (n - length + 2)
        for s in range(g.S):
            pos_par[s] = -1
            pos_right[s] = -1
        index_cells(n, k, item_i + p0, item_j + p0, cell_lo, cell_hi)
        # inside, one-word spans
        for i in range(n):
            cid = i * (n + 1) + i + 1
            for it in range(cell_lo[cid], cell_hi[cid]):
                pos_par[item_sym[p0 + it]] = <i32> it
                if leaf_off[p0 + it] >= 0:
                    alpha[it] = leaf_w[p0 + it] * leaf_table[leaf_off[p0 + it]]
            _scalar_unaries(g, cell_lo[cid], cell_hi[cid], item_sym + p0, leaf_off + p0,
                            pos_par, NULL, alpha, False)
            for it in range(cell_lo[cid], cell_hi[cid]):
                pos_par[item_sym[p0 + it]] = -1
                live[it] = alpha[it] != 0.0
        # inside, longer spans
        for length in range(2, n + 1):
            for i in range(0, n - length + 1):
                status = _scalar_cell(g, n, p0, i, i + length, item_sym, cell_lo, cell_hi,
                                      pos_par, pos_right, live, alpha, &ed)
                if status != 0:
                    break
            if status != 0:
                break
    if status == 0:
        # root
        cid = n
        for it in range(cell_lo[cid], cell_hi[cid]):
            s = item_sym[p0 + it]
            if g.c1off[s] >= 0:
                beta[it] = g.c1[g.c1off[s]]
                Z += beta[it] * alpha[it]
        z_out[0] = Z
        # outside, longer spans top down
        length = n
        while length >= 2:
            for i in range(0, n - length + 1):
                _scalar_cell_out(g, n, i, i + length, live, alpha, beta, &ed)
            length -= 1
        # outside, unary rules in one-word spans
        for i in range(n):
            cid = i * (n + 1) + i + 1
            _place(pos_par, item_sym + p0, cell_lo[cid], cell_hi[cid])
            _scalar_unaries(g, cell_lo[cid], cell_hi[cid], item_sym + p0, leaf_off + p0,
                            pos_par, live, beta, True)
            _unplace(pos_par, item_sym + p0, cell_lo[cid], cell_hi[cid])
        for it in range(k):
            mu_out[p0 + it] = alpha[it] * beta[it] / Z if Z != 0.0 else 0.0
    free(alpha)
    free(beta)
    free(cell_lo)
    free(cell_hi)
    free(pos_par)
    free(pos_right)
    free(live)
    free(ed.e)
    free(ed.lo)
    free(ed.at)
    return status


# ------------------------------------------------------------------------------------------------
# input checks at the Python boundary (vectorised, O(grammar) + O(items) per call)

#: longest sentence the kernels accept (cell ids ``i * (n + 1) + j`` stay within a C int)
MAX_LENGTH = 32767


def _offsets_ok(ptr, int n_rows, Py_ssize_t n_entries):
    """``ptr`` (``n_rows + 1`` entries) starts at 0, never decreases, ends within the entries."""
    ptr = np.asarray(ptr)
    return ptr.shape[0] == n_rows + 1 and ptr[0] == 0 and ptr[n_rows] <= n_entries and \
        not np.any(np.diff(ptr) < 0)


def _in_range(a, lo, hi):
    a = np.asarray(a)
    return a.shape[0] == 0 or (a.min() >= lo and a.max() < hi)


def check_tensor_grammar(int S, m, bin_parent, bin_left, bin_right, toff, T, rl_ptr, rl_rule,
                         un_parent, un_child, uoff, U, uc_ptr, uc_rule, c1, c1off):
    """Raise ``ValueError`` unless every index of the tensor grammar is in range: symbols,
    latent sizes, the offsets of every tensor / matrix / root vector inside its parameter
    array, and the rule indexes by left child and by child (each block lists only rules of
    its symbol).  O(size of the grammar)."""
    m = np.asarray(m, dtype=np.int64)
    if S < 1 or m.shape[0] != S or m.min() < 1 or m.max() > 32767:
        raise ValueError("latent sizes must be 1 .. 32767, one per symbol")
    bp, bl, br = (np.asarray(x, dtype=np.int64) for x in (bin_parent, bin_left, bin_right))
    R = bp.shape[0]
    if bl.shape[0] != R or br.shape[0] != R or np.asarray(toff).shape[0] < R:
        raise ValueError("binary rule arrays differ in length")
    if not (_in_range(bp, 0, S) and _in_range(bl, 0, S) and _in_range(br, 0, S)):
        raise ValueError("binary rule symbol out of range")
    if R:
        toff = np.asarray(toff, dtype=np.int64)[:R]
        if toff.min() < 0 or np.any(toff + m[bp] * m[bl] * m[br] > np.asarray(T).shape[0]):
            raise ValueError("binary rule tensor offset out of range")
    if not _offsets_ok(rl_ptr, S, np.asarray(rl_rule).shape[0]):
        raise ValueError("rule index by left child (rl_ptr) is not a partition")
    used = int(np.asarray(rl_ptr)[S])
    rl = np.asarray(rl_rule, dtype=np.int64)[:used]
    if not _in_range(rl, 0, R) or np.any(
            bl[rl] != np.repeat(np.arange(S), np.diff(np.asarray(rl_ptr)))):
        raise ValueError("rule index by left child (rl_rule) lists a rule of another symbol")
    up, uc = np.asarray(un_parent, dtype=np.int64), np.asarray(un_child, dtype=np.int64)
    nu = up.shape[0]
    if uc.shape[0] != nu or np.asarray(uoff).shape[0] < nu:
        raise ValueError("unary rule arrays differ in length")
    if not (_in_range(up, 0, S) and _in_range(uc, 0, S)):
        raise ValueError("unary rule symbol out of range")
    if nu:
        uoff = np.asarray(uoff, dtype=np.int64)[:nu]
        if uoff.min() < 0 or np.any(uoff + m[up] * m[uc] > np.asarray(U).shape[0]):
            raise ValueError("unary rule matrix offset out of range")
    if not _offsets_ok(uc_ptr, S, np.asarray(uc_rule).shape[0]):
        raise ValueError("rule index by child (uc_ptr) is not a partition")
    used = int(np.asarray(uc_ptr)[S])
    ur = np.asarray(uc_rule, dtype=np.int64)[:used]
    if not _in_range(ur, 0, nu) or np.any(
            uc[ur] != np.repeat(np.arange(S), np.diff(np.asarray(uc_ptr)))):
        raise ValueError("rule index by child (uc_rule) lists a rule of another symbol")
    c1off = np.asarray(c1off, dtype=np.int64)
    if c1off.shape[0] != S or c1off.min() < -1:
        raise ValueError("root vector offsets must be -1 or an offset, one per symbol")
    rooted = c1off >= 0
    if np.any(c1off[rooted] + m[rooted] > np.asarray(c1).shape[0]):
        raise ValueError("root vector offset out of range")


def _check_items(sent_len, item_ptr, item_i, item_j, item_sym, int S):
    """Items of a batch: offsets partition the items, every item lies inside its sentence
    (``0 <= i < j <= n``), symbols in range, at most 2**31 - 1 items per sentence."""
    lens = np.asarray(sent_len, dtype=np.int64)
    nsent = lens.shape[0]
    nitems = np.asarray(item_i).shape[0]
    if nsent and (lens.min() < 0 or lens.max() > MAX_LENGTH):
        raise ValueError(f"sentence lengths must be 0 .. {MAX_LENGTH}")
    if not _offsets_ok(item_ptr, nsent, nitems):
        raise ValueError("item offsets (item_ptr) are not a partition of the items")
    counts = np.diff(np.asarray(item_ptr))
    if nsent and counts.max() >= 2 ** 31 - 1:
        raise ValueError("more than 2**31 - 2 items in one sentence")
    used = int(np.asarray(item_ptr)[nsent])
    if used and (np.asarray(item_j).shape[0] < used or np.asarray(item_sym).shape[0] < used):
        raise ValueError("item arrays differ in length")
    if used:
        # one compiled pass, no temporaries (the PCFG pass has millions of items a batch)
        bad = _items_bad(lens, np.ascontiguousarray(item_ptr, dtype=np.int64),
                         np.ascontiguousarray(item_i, dtype=np.int32),
                         np.ascontiguousarray(item_j, dtype=np.int32),
                         np.ascontiguousarray(item_sym, dtype=np.int32), S)
        if bad == 1:
            raise ValueError("an item's span lies outside its sentence")
        if bad == 2:
            raise ValueError("item symbol out of range")


cdef int _items_bad(const i64[::1] lens, const i64[::1] ptr, const i32[::1] ii,
                    const i32[::1] jj, const i32[::1] ss, int S) noexcept:
    """1 when an item's span is not inside its sentence (``0 <= i < j <= n``), 2 when its
    symbol is not in ``0 .. S - 1``, else 0 (offsets already checked)."""
    cdef Py_ssize_t s
    cdef i64 it, n
    with nogil:
        for s in range(lens.shape[0]):
            n = lens[s]
            for it in range(ptr[s], ptr[s + 1]):
                if ii[it] < 0 or jj[it] <= ii[it] or jj[it] > n:
                    return 1
                if ss[it] < 0 or ss[it] >= S:
                    return 2
    return 0


def inside_outside_batch(int S, const i32[::1] m,
                         const i32[::1] bin_parent, const i32[::1] bin_left, const i32[::1] bin_right,
                         const i64[::1] toff, T,
                         const i32[::1] rl_ptr, const i32[::1] rl_rule,
                         const i32[::1] un_parent, const i32[::1] un_child,
                         const i64[::1] uoff, const double[::1] U,
                         const i32[::1] uc_ptr, const i32[::1] uc_rule,
                         const double[::1] c1, const i64[::1] c1off,
                         const i32[::1] sent_len, const i64[::1] item_ptr,
                         const i32[::1] item_i, const i32[::1] item_j, const i32[::1] item_sym,
                         const double[::1] leaf_w, const i64[::1] leaf_off, const double[::1] leaf_table,
                         int n_threads=1, cnp.int64_t max_bytes=0, T32=None):
    """Tensor inside-outside for a batch of sentences over pruned charts.

    Items of sentence ``s`` are ``item_ptr[s]:item_ptr[s+1]`` and must be grouped by cell with
    at most one item per (i, j, sym) (the passes produce them sorted by ``(j - i, i, sym)``).
    Returns ``(mu, Z, status)``: the raw (unclipped) marginal of every item, the scaled sentence
    weight per sentence and a per-sentence status (``status.pxd``: 0 ok, -2 the sentence's
    chart would pass ``max_bytes``; 0: no limit); a sentence whose chart cannot be allocated is
    a ``MemoryError`` naming it.  ``T32``: an optional float32 copy of ``T``
    (same layout) that the tensor products then read instead (half the memory traffic; the
    inside / outside vectors and every sum stay float64).  ``T`` itself may be float32 (a model
    file with float32 tensors): every product and the scalar rules then read it, and no
    float64 copy is made.  Every index of the grammar and the
    items is checked here, once, before the kernel runs (``ValueError`` otherwise).
    """
    cdef Py_ssize_t nsent = sent_len.shape[0]
    cdef Py_ssize_t nitems = item_i.shape[0]
    cdef cnp.ndarray[double, ndim=1] mu = np.zeros(nitems, dtype=np.float64)
    cdef cnp.ndarray[double, ndim=1] Z = np.zeros(nsent, dtype=np.float64)
    cdef cnp.ndarray[i32, ndim=1] status = np.zeros(nsent, dtype=np.int32)
    cdef double[::1] mu_v = mu
    cdef double[::1] z_v = Z
    cdef i32[::1] st_v = status
    cdef TensorGrammar g
    cdef Py_ssize_t s
    cdef double dummy_d = 0.0
    cdef i32 dummy_i = 0
    cdef i64 dummy_l = 0
    if item_ptr.shape[0] != nsent + 1 or item_j.shape[0] != nitems or item_sym.shape[0] != nitems \
            or leaf_w.shape[0] != nitems or leaf_off.shape[0] != nitems:
        raise ValueError("inconsistent item array lengths")
    if m.shape[0] != S or rl_ptr.shape[0] != S + 1 or uc_ptr.shape[0] != S + 1 or c1off.shape[0] != S:
        raise ValueError("inconsistent grammar array lengths")
    cdef const double[::1] t_v
    cdef const float[::1] tf_v
    cdef bint only32 = isinstance(T, np.ndarray) and T.dtype == np.float32
    if only32:
        if T32 is not None and T32 is not T:
            raise ValueError("T is float32: pass no separate float32 copy")
        T32 = T
    else:
        t_v = T
    check_tensor_grammar(S, m, bin_parent, bin_left, bin_right, toff, T, rl_ptr, rl_rule,
                         un_parent, un_child, uoff, U, uc_ptr, uc_rule, c1, c1off)
    _check_items(sent_len, item_ptr, item_i, item_j, item_sym, S)
    lo_np = np.asarray(leaf_off)
    leaf = lo_np >= 0
    if np.any(leaf):
        if np.any(lo_np[leaf] + np.asarray(m)[np.asarray(item_sym)[leaf]] > leaf_table.shape[0]):
            raise ValueError("leaf vector offset out of range")
    g.S = S
    g.m = &m[0]
    g.R = bin_parent.shape[0]
    g.bin_parent = &bin_parent[0] if g.R > 0 else &dummy_i
    g.bin_left = &bin_left[0] if g.R > 0 else &dummy_i
    g.bin_right = &bin_right[0] if g.R > 0 else &dummy_i
    g.toff = &toff[0] if toff.shape[0] > 0 else &dummy_l
    g.T = NULL if only32 else (&t_v[0] if t_v.shape[0] > 0 else &dummy_d)
    g.Tf = NULL
    if T32 is not None:
        tf_v = T32
        if tf_v.shape[0] != (<object> T).shape[0]:
            raise ValueError("the float32 tensor copy differs in length from T")
        if tf_v.shape[0] > 0:
            g.Tf = &tf_v[0]
    g.rl_ptr = &rl_ptr[0]
    g.rl_rule = &rl_rule[0] if rl_rule.shape[0] > 0 else &dummy_i
    g.un_parent = &un_parent[0] if un_parent.shape[0] > 0 else &dummy_i
    g.un_child = &un_child[0] if un_child.shape[0] > 0 else &dummy_i
    g.uoff = &uoff[0] if uoff.shape[0] > 0 else &dummy_l
    g.U = &U[0] if U.shape[0] > 0 else &dummy_d
    g.uc_ptr = &uc_ptr[0]
    g.uc_rule = &uc_rule[0] if uc_rule.shape[0] > 0 else &dummy_i
    g.c1 = &c1[0] if c1.shape[0] > 0 else &dummy_d
    g.c1off = &c1off[0]
    if nitems == 0:
        return mu, Z, status
    cdef const i32* ii = &item_i[0]
    cdef const i32* jj = &item_j[0]
    cdef const i32* ss = &item_sym[0]
    cdef const double* lw = &leaf_w[0]
    cdef const i64* lo = &leaf_off[0]
    cdef const double* lt = &leaf_table[0] if leaf_table.shape[0] > 0 else &dummy_d
    cdef bint scalar = np.all(np.asarray(m) == 1)
    cdef const i32[::1] sl_right_v
    cdef const i32[::1] sl_par_v
    cdef const double[::1] sl_w_v
    if scalar:
        # the rules by left child, packed (right child, parent, weight) for the one-state kernel
        rl_used = np.asarray(rl_rule)[:int(np.asarray(rl_ptr)[S])].astype(np.int64)
        sl_right_np = np.append(np.asarray(bin_right)[rl_used], 0).astype(np.int32)
        sl_par_np = np.append(np.asarray(bin_parent)[rl_used], 0).astype(np.int32)
        sl_w_np = np.append(np.asarray(T)[np.asarray(toff)[rl_used]], 0.0)
        sl_right_v = sl_right_np
        sl_par_v = sl_par_np
        sl_w_v = sl_w_np
        g.sl_right = &sl_right_v[0]
        g.sl_par = &sl_par_v[0]
        g.sl_w = &sl_w_v[0]
    else:
        g.sl_right = NULL
        g.sl_par = NULL
        g.sl_w = NULL
    for s in prange(nsent, nogil=True, schedule="dynamic", num_threads=max(1, n_threads)):
        if item_ptr[s + 1] > item_ptr[s] and sent_len[s] > 0:
            if scalar:
                st_v[s] = _sentence_scalar(&g, sent_len[s], item_ptr[s], item_ptr[s + 1], ii, jj,
                                           ss, lw, lo, lt, &mu_v[0], &z_v[s], max_bytes)
            else:
                st_v[s] = _sentence(&g, sent_len[s], item_ptr[s], item_ptr[s + 1], ii, jj, ss,
                                    lw, lo, lt, &mu_v[0], &z_v[s], max_bytes)
    raise_for_status(status, "tensor chart inside-outside", sent_len)
    return mu, Z, status


cdef int _decode_one(int n, i64 p0, i64 p1, const i32* item_i, const i32* item_j,
                     const i32* item_sym, const double* mu, const i32* sym_class,
                     const unsigned char* is_pre, int K, i32* out) noexcept nogil:
    """Goodman max-expected-recall tree from clipped item marginals; returns the node count.

    Span score = the largest base-class marginal (sum over the symbols of a class) of the cell;
    a one-word cell also outputs its best preterminal class, plus a unary parent class when that
    beats "no unary" (the summed preterminal marginal minus the summed unary-parent marginal).
    Spans whose best score is 0 are not output (their children attach to the enclosing node).
    Nodes are (start, end, class) triples in preorder; the tree search itself is
    :func:`maxrecall.maxrecall_tree` (shared with the PCFG decoder).  Returns -1 when out of
    memory.
    """
    cdef int ncell = (n + 1) * (n + 1)
    cdef double* cscore = <double*> calloc(K + 1, sizeof(double))
    cdef double* own_score = <double*> calloc(ncell, sizeof(double))
    cdef i32* own_class = <i32*> malloc(ncell * sizeof(i32))
    cdef i32* tag_class = <i32*> malloc((n + 1) * sizeof(i32))
    cdef double* tag_best = <double*> malloc((n + 1) * sizeof(double))
    cdef i64* cell_lo = <i64*> calloc(ncell, sizeof(i64))
    cdef i64* cell_hi = <i64*> calloc(ncell, sizeof(i64))
    cdef i64 it, jt
    cdef int i, j, l, cid, cl, best_cl, cnt = 0, s
    cdef double best, v
    if (cscore == NULL or own_score == NULL or own_class == NULL or tag_class == NULL
            or tag_best == NULL or cell_lo == NULL or cell_hi == NULL):
        cnt = ST_NO_MEMORY
    else:
        index_cells(n, p1 - p0, item_i + p0, item_j + p0, cell_lo, cell_hi)
        for i in range(n):
            tag_class[i] = -1
            tag_best[i] = -1.0
        for l in range(1, n + 1):
            for i in range(0, n - l + 1):
                j = i + l
                cid = i * (n + 1) + j
                for it in range(p0 + cell_lo[cid], p0 + cell_hi[cid]):
                    s = item_sym[it]
                    v = mu[it]
                    if v <= 0.0:
                        continue
                    if is_pre[s]:
                        cscore[K] += v
                        if v > tag_best[i]:
                            tag_best[i] = v
                            tag_class[i] = sym_class[s]
                    else:
                        cscore[sym_class[s]] += v
                if l == 1:
                    # mu(tag) also counts derivations with a unary parent above the tag:
                    # "no unary" = sum over tags - sum over unary parents
                    v = 0.0
                    for cl in range(K):
                        v = v + cscore[cl]
                    cscore[K] = cscore[K] - v
                best = 0.0
                best_cl = -1
                for cl in range(K + 1):
                    if cscore[cl] > best:
                        best = cscore[cl]
                        best_cl = cl
                    cscore[cl] = 0.0
                own_score[cid] = best
                own_class[cid] = best_cl if best_cl < K else -1
        cnt = maxrecall_tree(n, own_score, own_class, tag_class, out)
    free(cscore)
    free(own_score)
    free(own_class)
    free(tag_class)
    free(tag_best)
    free(cell_lo)
    free(cell_hi)
    return cnt


def decode_batch(const i32[::1] sent_len, const i64[::1] item_ptr, const i32[::1] item_i,
                 const i32[::1] item_j, const i32[::1] item_sym, const double[::1] mu,
                 const i32[::1] sym_class, const unsigned char[::1] is_pre, int n_class,
                 int n_threads=1):
    """Max-recall trees of a batch from clipped marginals (items sorted as for the inside-outside).

    Returns ``(nodes, node_ptr)``: int32 ``(total, 3)`` rows (start, end, class) in preorder and
    per-sentence offsets into them; a sentence whose position has no preterminal with positive
    marginal gets class -1 for that tag (the caller falls back).  ``MemoryError`` (naming the
    sentence) when a sentence's decoding tables cannot be allocated.
    """
    cdef Py_ssize_t nsent = sent_len.shape[0]
    cdef Py_ssize_t s
    if sym_class.shape[0] != is_pre.shape[0] or n_class < 1 or \
            not _in_range(sym_class, 0, n_class):
        raise ValueError("symbol classes out of range")
    _check_items(sent_len, item_ptr, item_i, item_j, item_sym, sym_class.shape[0])
    if mu.shape[0] < item_i.shape[0]:
        raise ValueError("one marginal per item needed")
    cdef cnp.ndarray[i64, ndim=1] cap = np.zeros(nsent + 1, dtype=np.int64)
    cdef i64[::1] cap_v = cap
    for s in range(nsent):
        cap_v[s + 1] = cap_v[s] + 3 * (3 * sent_len[s] + 1)
    cdef cnp.ndarray[i32, ndim=1] out = np.zeros(max(1, cap_v[nsent]), dtype=np.int32)
    cdef cnp.ndarray[i32, ndim=1] counts = np.zeros(nsent, dtype=np.int32)
    cdef i32[::1] out_v = out
    cdef i32[::1] cnt_v = counts
    if item_i.shape[0] == 0 or nsent == 0:
        return np.zeros((0, 3), dtype=np.int32), np.zeros(nsent + 1, dtype=np.int64)
    for s in prange(nsent, nogil=True, schedule="dynamic", num_threads=max(1, n_threads)):
        if sent_len[s] > 0:
            cnt_v[s] = _decode_one(sent_len[s], item_ptr[s], item_ptr[s + 1], &item_i[0],
                                   &item_j[0], &item_sym[0], &mu[0], &sym_class[0], &is_pre[0],
                                   n_class, &out_v[cap_v[s]])
    # a count is >= 0 nodes, or ST_NO_MEMORY: the counts are the status array
    raise_for_status(counts, "tensor chart max-recall decoding", sent_len)
    ptr = np.zeros(nsent + 1, dtype=np.int64)
    np.cumsum(np.maximum(counts, 0), out=ptr[1:])
    # the written prefix of every sentence's slot, gathered without a loop over sentences
    starts = np.asarray(cap)[:nsent] - 3 * ptr[:nsent]
    take = np.arange(3 * ptr[nsent], dtype=np.int64) + np.repeat(starts, 3 * np.diff(ptr))
    return out[take].reshape(-1, 3), ptr


def full_items(const i32[::1] sent_len, const i64[::1] lex_off, const i32[::1] lex_pos,
               const i32[::1] lex_sym, const i32[::1] unary_parents, const i32[::1] binary_parents):
    """Exhaustive chart items of a batch, grouped by cell (lengths ascending).

    One-word cells hold the lexical entries ``lex_*`` of the sentence (offsets ``lex_off``) and
    every unary parent; longer cells every binary parent.  Returns
    ``(item_ptr, item_i, item_j, item_sym, lex_index)`` where ``lex_index`` is the entry index of
    a lexical item and -1 otherwise.
    """
    cdef Py_ssize_t nsent = sent_len.shape[0], s
    cdef i64 total = 0, pos = 0, e
    cdef int n, i, j, l, q
    cdef int nu = unary_parents.shape[0], nb = binary_parents.shape[0]
    if nsent and (np.asarray(sent_len).min() < 0 or np.asarray(sent_len).max() > MAX_LENGTH):
        raise ValueError(f"sentence lengths must be 0 .. {MAX_LENGTH}")
    if not _offsets_ok(lex_off, nsent, lex_pos.shape[0]) or lex_sym.shape[0] != lex_pos.shape[0]:
        raise ValueError("lexical offsets are not a partition of the entries")
    for s in range(nsent):
        n = sent_len[s]
        total += (lex_off[s + 1] - lex_off[s]) + <i64> n * nu + <i64> (n * (n - 1) // 2) * nb
    ptr = np.zeros(nsent + 1, dtype=np.int64)
    oi = np.empty(total, dtype=np.int32)
    oj = np.empty(total, dtype=np.int32)
    osym = np.empty(total, dtype=np.int32)
    olex = np.empty(total, dtype=np.int64)
    cdef i64[::1] p_v = ptr
    cdef i32[::1] i_v = oi, j_v = oj, s_v = osym
    cdef i64[::1] l_v = olex
    with nogil:
        for s in range(nsent):
            n = sent_len[s]
            for i in range(n):
                for e in range(lex_off[s], lex_off[s + 1]):
                    if lex_pos[e] == i:
                        i_v[pos] = i
                        j_v[pos] = i + 1
                        s_v[pos] = lex_sym[e]
                        l_v[pos] = e
                        pos += 1
                for q in range(nu):
                    i_v[pos] = i
                    j_v[pos] = i + 1
                    s_v[pos] = unary_parents[q]
                    l_v[pos] = -1
                    pos += 1
            for l in range(2, n + 1):
                for i in range(0, n - l + 1):
                    for q in range(nb):
                        i_v[pos] = i
                        j_v[pos] = i + l
                        s_v[pos] = binary_parents[q]
                        l_v[pos] = -1
                        pos += 1
            p_v[s + 1] = pos
    return ptr, oi[:pos], oj[:pos], osym[:pos], olex[:pos]


cdef i64 _project_sentence(i64 s, const i64* item_ptr, const i32* item_i, const i32* item_j,
                           const i32* item_sym, const double* mu, double threshold,
                           const i32* proj_ptr, const i32* proj_sym,
                           const unsigned char* fine_is_pre, const i64* lex_off,
                           const i32* lex_pos, const i32* lex_sym, int n, i64 out,
                           i32* i_v, i32* j_v, i32* s_v, i64* l_v) noexcept nogil:
    """The projected items of sentence ``s``: written from ``out`` on when ``i_v`` is not NULL,
    else only counted.  Returns the count, or ST_NO_MEMORY when out of memory."""
    cdef i64 it, e, found, e0, e1, cnt = 0
    cdef int c, q, f, p
    cdef bint sorted_pos = 1
    cdef i64* at = NULL
    e0 = lex_off[s]
    e1 = lex_off[s + 1]
    # the entries of each position (they come grouped by position from pack_lexical; any order
    # still works, by a scan of the sentence's entries)
    for e in range(e0 + 1, e1):
        if lex_pos[e] < lex_pos[e - 1]:
            sorted_pos = 0
            break
    if sorted_pos and n > 0:
        at = <i64*> malloc((n + 1) * sizeof(i64))
        if at == NULL:
            return ST_NO_MEMORY
        p = 0
        at[0] = e0
        for e in range(e0, e1):
            while p < lex_pos[e] and p < n:
                p += 1
                at[p] = e
        while p < n:
            p += 1
            at[p] = e1
    for it in range(item_ptr[s], item_ptr[s + 1]):
        if not (mu[it] >= threshold):
            continue
        c = item_sym[it]
        for q in range(proj_ptr[c], proj_ptr[c + 1]):
            f = proj_sym[q]
            found = -1
            if item_j[it] - item_i[it] == 1 and fine_is_pre[f]:
                if at != NULL and 0 <= item_i[it] < n:
                    for e in range(at[item_i[it]], at[item_i[it] + 1]):
                        if lex_sym[e] == f:
                            found = e
                            break
                else:
                    for e in range(e0, e1):
                        if lex_pos[e] == item_i[it] and lex_sym[e] == f:
                            found = e
                            break
                if found < 0:
                    continue
            if i_v != NULL:
                i_v[out + cnt] = item_i[it]
                j_v[out + cnt] = item_j[it]
                s_v[out + cnt] = f
                l_v[out + cnt] = found
            cnt += 1
    free(at)
    return cnt


def project_items(const i32[::1] sent_len, const i64[::1] item_ptr, const i32[::1] item_i,
                  const i32[::1] item_j, const i32[::1] item_sym, const double[::1] mu,
                  double threshold, const i32[::1] proj_ptr, const i32[::1] proj_sym,
                  const unsigned char[::1] fine_is_pre, const i64[::1] lex_off,
                  const i32[::1] lex_pos, const i32[::1] lex_sym, int n_threads=1):
    """Items of the next (finer) grammar from the surviving items of the current one.

    An item survives when ``mu >= threshold``; it expands to the fine symbols
    ``proj_sym[proj_ptr[c]:proj_ptr[c+1]]`` of its symbol ``c``.  A fine preterminal is kept only
    with a lexical entry at its position (``lex_*`` of the fine grammar; its index is returned).
    Items stay grouped by cell.  Returns ``(item_ptr, item_i, item_j, item_sym, lex_index)``.
    Sentences run in parallel (``n_threads``): one pass counts, the second writes.
    ``MemoryError`` (naming the sentence) when a sentence's position index cannot be allocated.
    """
    cdef Py_ssize_t nsent = sent_len.shape[0], s
    cdef i64 total = 0
    cdef int n_coarse = proj_ptr.shape[0] - 1
    cdef int nt = max(1, n_threads)
    _check_items(sent_len, item_ptr, item_i, item_j, item_sym, max(n_coarse, 0))
    if mu.shape[0] < item_i.shape[0]:
        raise ValueError("one marginal per item needed")
    if n_coarse < 0 or not _offsets_ok(proj_ptr, n_coarse, proj_sym.shape[0]) or \
            not _in_range(np.asarray(proj_sym)[:np.asarray(proj_ptr)[n_coarse]], 0,
                          fine_is_pre.shape[0]):
        raise ValueError("the projection (proj_ptr / proj_sym) is out of range")
    if not _offsets_ok(lex_off, nsent, lex_pos.shape[0]) or lex_sym.shape[0] != lex_pos.shape[0]:
        raise ValueError("lexical offsets are not a partition of the entries")
    ptr = np.zeros(nsent + 1, dtype=np.int64)
    cdef i64[::1] p_v = ptr
    cdef i64 cnt
    status = np.zeros(nsent, dtype=np.int32)
    cdef i32[::1] st_v = status
    cdef i32[::1] empty32 = np.zeros(1, dtype=np.int32)
    cdef const i64* ip = &item_ptr[0]
    cdef const i32* ii_ = &item_i[0] if item_i.shape[0] else &empty32[0]
    cdef const i32* ij_ = &item_j[0] if item_j.shape[0] else &empty32[0]
    cdef const i32* is_ = &item_sym[0] if item_sym.shape[0] else &empty32[0]
    cdef const double* mu_ = &mu[0] if mu.shape[0] else NULL
    cdef const i32* pp = &proj_ptr[0]
    cdef const i32* ps = &proj_sym[0] if proj_sym.shape[0] else &empty32[0]
    cdef const unsigned char* fp = &fine_is_pre[0] if fine_is_pre.shape[0] else NULL
    cdef const i64* lo = &lex_off[0]
    cdef const i32* lp = &lex_pos[0] if lex_pos.shape[0] else &empty32[0]
    cdef const i32* ls = &lex_sym[0] if lex_sym.shape[0] else &empty32[0]
    for s in prange(nsent, nogil=True, schedule="dynamic", num_threads=nt):
        cnt = _project_sentence(s, ip, ii_, ij_, is_, mu_, threshold, pp, ps, fp, lo, lp, ls,
                                sent_len[s], 0, NULL, NULL, NULL, NULL)
        if cnt < 0:
            st_v[s] = <i32> cnt
        else:
            p_v[s + 1] = cnt
    raise_for_status(status, "item projection", sent_len)
    np.cumsum(ptr, out=ptr)
    total = ptr[nsent]
    oi = np.empty(total, dtype=np.int32)
    oj = np.empty(total, dtype=np.int32)
    osym = np.empty(total, dtype=np.int32)
    olex = np.empty(total, dtype=np.int64)
    if total == 0:
        return ptr, oi, oj, osym, olex
    cdef i32[::1] i_v = oi, j_v = oj, s_v = osym
    cdef i64[::1] l_v = olex
    cdef i32* io = &i_v[0]
    cdef i32* jo = &j_v[0]
    cdef i32* so = &s_v[0]
    cdef i64* lxo = &l_v[0]
    for s in prange(nsent, nogil=True, schedule="dynamic", num_threads=nt):
        if p_v[s + 1] > p_v[s]:
            cnt = _project_sentence(s, ip, ii_, ij_, is_, mu_, threshold, pp, ps, fp, lo, lp, ls,
                                    sent_len[s], p_v[s], io, jo, so, lxo)
            if cnt < 0:
                st_v[s] = <i32> cnt
    raise_for_status(status, "item projection", sent_len)
    return ptr, oi, oj, osym, olex


def leaf_arrays(const i64[::1] item_ptr, const i64[::1] lex_index, const double[::1] entry_w,
                const i64[::1] entry_off, int n_threads=1):
    """Per-item leaf weights and leaf-table offsets for :func:`inside_outside_batch`, from
    per-lexical-entry ones: item ``it`` with ``lex_index[it] = e >= 0`` gets ``entry_w[e]`` and
    ``entry_off[e]``, every other item 0 and -1.  Returns ``(leaf_w, leaf_off)``.

    The item arrays of a batch run to millions of entries (the PCFG pass keeps tens of
    thousands of items a sentence); built here, sentence by sentence in parallel, their pages
    are first touched by the threads that fill them instead of by NumPy under the GIL between
    two parallel kernels (a serial step that bounded the speed-up at two threads)."""
    cdef Py_ssize_t nsent = item_ptr.shape[0] - 1, s
    cdef i64 n_items = lex_index.shape[0], n_ent = entry_w.shape[0], it, e
    cdef int nt = max(1, n_threads)
    cdef int bad = 0
    if nsent < 0 or entry_off.shape[0] != n_ent:
        raise ValueError("entry_w and entry_off differ in length")
    if not _offsets_ok(item_ptr, nsent, n_items):
        raise ValueError("item offsets (item_ptr) are not a partition of the items")
    lw = np.empty(n_items, dtype=np.float64)
    lo = np.empty(n_items, dtype=np.int64)
    if n_items == 0:
        return lw, lo
    cdef double[::1] w_v = lw
    cdef i64[::1] o_v = lo
    for s in prange(nsent, nogil=True, schedule="dynamic", num_threads=nt):
        for it in range(item_ptr[s], item_ptr[s + 1]):
            e = lex_index[it]
            if e < 0:
                w_v[it] = 0.0
                o_v[it] = -1
            elif e < n_ent:
                w_v[it] = entry_w[e]
                o_v[it] = entry_off[e]
            else:
                bad += 1        # an in-place operator: a reduction over the threads
    if bad:
        raise ValueError("lexical entry index out of range")
    # items past the last sentence (none from the passes) get the defaults too
    lw[item_ptr[nsent]:] = 0.0
    lo[item_ptr[nsent]:] = -1
    return lw, lo


def _fail_allocations_after(long k):
    """Tests: the ``k``-th allocation of this module from now on and every later one fail
    (``k < 0``: allocations succeed again); see ``alloc.h``."""
    fail_after(k)
