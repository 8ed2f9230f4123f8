# cython: language_level=3
"""Declarations shared by the two chart engines.

* ``cky.pyx`` — the PCFG chart: dense per-cell symbol vectors, Viterbi / inside / outside /
  max-recall decoding / posterior pruning (Goodman 1996; Petrov & Klein 2007 for the
  coarse-to-fine masks);
* ``tensor_chart.pyx`` — the L-PCFG chart: latent-state vectors of the items of a pruned chart,
  inside-outside with tensor rules (Cohen et al. 2012, figure 3).

Both cimport from here: the integer types, the C layout of their two grammars (:c:type:`CGrammar`
and :c:type:`TensorGrammar`, filled from NumPy arrays the Python side keeps alive) and the index
of chart items by cell.  The max-recall tree search they share is ``maxrecall.pxd``.

Declaration-only module: everything is a struct, a typedef or ``inline``, so nothing is imported at
run time.

Why C arrays and not ``std::vector``: both kernels were rebuilt as C++ with ``libcpp.vector``
buffers (OOM-safe resize helpers, no free chains) and timed on 300 WSJ section-22 sentences,
jobs=1, best of 3, in alternated runs against the C build: the C++ builds were slower (PCFG chart
3-7%, tensor chart about 4%) although callgrind counted the same instructions in the hot loops
(a C++ compile of the unchanged PCFG chart was just as slow), so the C build is kept.
"""
cimport numpy as cnp

ctypedef cnp.int32_t i32
ctypedef cnp.int64_t i64
ctypedef cnp.uint8_t u8


# ------------------------------------------------------------------------------------------------
# grammars


# One class of the dense kernel's rules with a pre-terminal child, grouped by that child: the
# pre-terminal sym[t] (t < n) has the entries ptr[t] : ptr[t + 1], each a parent a[r], the other
# child o[r] and a probability p[r].
cdef struct TagRules:
    int n
    const i32* sym
    const i32* ptr
    const i32* a
    const i32* o
    const double* p


# A PCFG as ``cky.pyx`` reads it (built by ``cky.ChartGrammar`` from rule lists).
cdef struct CGrammar:
    int S
    # binary rules indexed by left child (inside) and by parent (outside); within a left
    # child's block the rules whose right child is a pre-terminal come last, from bl_split[B]
    # (pre-terminals are only ever active in length-1 cells, so wider right cells skip them)
    const i32* bl_ptr
    const i32* bl_split
    const i32* bl_parent
    const i32* bl_right
    const double* bl_prob
    const i32* bp_ptr
    const i32* bp_left
    const i32* bp_right
    const double* bp_prob
    # unary closure (minus identity): post[parent] += prob * pre[child]
    int n_un
    const i32* un_parent
    const i32* un_child
    const double* un_prob
    const double* root
    # decoding classes (base labels)
    int n_class
    const i32* sym_class
    const u8* is_tag
    const u8* class_is_tag
    # the dense exhaustive kernel (cky.pyx, ``_dense_*``): binary rules by (left, right) child
    # pair.  Pair q = (pp_b[q], pp_c[q]) has the parents pr_a / probabilities pr_p
    # [pp_ptr[q] : pp_ptr[q + 1]]; its inside sum runs over every split point.  With
    # pre-terminals only in one-word cells (``tags_lex``), the rules with a pre-terminal child
    # touch one split point only and are kept apart, by that child (:c:type:`TagRules`): a
    # pre-terminal left child (tl: the other child is the right one), a pre-terminal right
    # child (tr: the other child is the left one), both (tt: by the left child).
    bint tags_lex
    int n_pp
    const i32* pp_b
    const i32* pp_c
    const i32* pp_ptr
    const i32* pr_a
    const double* pr_p
    const i32* pr_q          # the pair of each parent entry
    int n_pa                 # the same entries by parent (inside): parent pa_a[t] sums
    const i32* pa_a          # pa_p * pair[pa_q] over pa_ptr[t] : pa_ptr[t + 1]
    const i32* pa_ptr
    const i32* pa_q
    const double* pa_p
    int n_ppl                # symbols that are a pair's left child / right child
    const i32* ppl
    int n_ppr
    const i32* ppr
    TagRules tl
    TagRules tr
    TagRules tt


# An L-PCFG as ``tensor_chart.pyx`` reads it; symbol ``a`` has ``m[a]`` latent states.
# Binary rule ``r = a -> b c``: tensor ``T[toff[r] : toff[r] + m_a*m_b*m_c]`` laid out
# ``[h, h2, h3]``; unary rule ``r = a -> p``: matrix ``U[uoff[r] : ... + m_a*m_p]``; root vector
# ``c1[c1off[a] : c1off[a] + m_a]`` (``c1off[a] = -1`` when ``a`` never roots a tree).
cdef struct TensorGrammar:
    int S
    const i32* m
    const i32* bin_parent
    const i32* bin_left
    const i32* bin_right
    const i64* toff
    const double* T
    const float* Tf        # optional float32 copy of T (NULL: none); the products then read it
    const i32* rl_ptr      # binary rules grouped by left child: rules rl_rule[rl_ptr[b]:rl_ptr[b+1]]
    const i32* rl_rule
    # one-state grammars (the PCFG pass): the same rules packed, entry q of rl_rule:
    # right child, parent and weight T[toff[rl_rule[q]]] (NULL for latent grammars)
    const i32* sl_right
    const i32* sl_par
    const double* sl_w
    int R
    const i32* un_parent
    const i32* un_child
    const i64* uoff
    const double* U
    const i32* uc_ptr      # unary rules grouped by child
    const i32* uc_rule
    const double* c1
    const i64* c1off


# ------------------------------------------------------------------------------------------------
# items of a pruned chart, by cell


cdef inline void index_cells(int n, i64 k, const i32* item_i, const i32* item_j,
                             i64* cell_lo, i64* cell_hi) noexcept nogil:
    """The items ``0 .. k-1`` of an ``n``-word sentence are sorted so that the items of a cell
    (span ``[i, j)``) are contiguous: write their range to ``cell_lo/cell_hi[i * (n + 1) + j]``
    (arrays of ``(n + 1)**2`` zeros on entry, so that empty cells stay ``[0, 0)``)."""
    cdef i64 it = 0, jt
    cdef int cid
    while it < k:
        cid = item_i[it] * (n + 1) + item_j[it]
        jt = it
        while jt < k and item_i[jt] * (n + 1) + item_j[jt] == cid:
            jt += 1
        cell_lo[cid] = it
        cell_hi[cid] = jt
        it = jt
