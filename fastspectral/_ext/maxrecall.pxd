"""Goodman max-expected-recall tree search, shared by the PCFG (``cky``) and L-PCFG
(``tensor_chart``) decoders.

Declaration-only module: ``maxrecall_tree`` is ``cdef inline``, so every kernel that cimports it
gets its own copy and nothing is imported at run time.
"""
from .alloc cimport malloc, free
cimport numpy as cnp


# Best tree over per-cell scores, written in preorder as (start, end, class) triples.
#
# Cells are spans [i, j) of an n-word sentence (0 <= i < j <= n), indexed ``i * (n + 1) + j``:
#   own_score[cell] >= 0  the cell's own score (its best class's expected recall, or 0);
#   own_class[cell]       the class output for the cell, or -1 for none;
#   tag_class[i]          the tag class output under word i (one-word cells, after own_class).
# The tree maximises the sum of own_score over its spans:
#   span_best[i, j] = own_score[i, j] + max_k (span_best[i, k] + span_best[k, j])
# (the first best split point k wins ties).  Returns the node count, -1 when out of memory;
# ``out`` needs room for 3 * (2 * n - 1 + n) entries at most.
cdef inline int maxrecall_tree(int n, const double* own_score, const cnp.int32_t* own_class,
                               const cnp.int32_t* tag_class, cnp.int32_t* out) noexcept nogil:
    cdef int w = n + 1
    cdef int i, j, k, l, cid, best_k, sp, cnt = 0
    cdef double v, m
    cdef double* span_best
    cdef cnp.int32_t* span_split
    cdef cnp.int32_t* stack
    if n <= 0:
        return 0
    span_best = <double*> malloc(<size_t> w * w * sizeof(double))
    span_split = <cnp.int32_t*> malloc(<size_t> w * w * sizeof(cnp.int32_t))
    stack = <cnp.int32_t*> malloc(2 * (2 * n + 2) * sizeof(cnp.int32_t))
    if span_best == NULL or span_split == NULL or stack == NULL:
        free(span_best)
        free(span_split)
        free(stack)
        return -1
    for l in range(1, n + 1):
        for i in range(0, n - l + 1):
            j = i + l
            cid = i * w + j
            if l == 1:
                span_best[cid] = own_score[cid]
                span_split[cid] = -1
            else:
                best_k = i + 1
                m = -1.0
                for k in range(i + 1, j):
                    v = span_best[i * w + k] + span_best[k * w + j]
                    if v > m:
                        m = v
                        best_k = k
                span_split[cid] = best_k
                span_best[cid] = own_score[cid] + m
    # emit in preorder with an explicit stack of (i, j) spans
    stack[0] = 0
    stack[1] = n
    sp = 1
    while sp > 0:
        sp -= 1
        i = stack[2 * sp]
        j = stack[2 * sp + 1]
        cid = i * w + j
        if own_class[cid] >= 0:
            out[3 * cnt] = i
            out[3 * cnt + 1] = j
            out[3 * cnt + 2] = own_class[cid]
            cnt += 1
        if j - i == 1:
            out[3 * cnt] = i
            out[3 * cnt + 1] = j
            out[3 * cnt + 2] = tag_class[i]
            cnt += 1
        else:
            k = span_split[cid]
            stack[2 * sp] = k
            stack[2 * sp + 1] = j
            sp += 1
            stack[2 * sp] = i
            stack[2 * sp + 1] = k
            sp += 1
    free(span_best)
    free(span_split)
    free(stack)
    return cnt
