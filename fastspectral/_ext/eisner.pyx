# cython: language_level=3
# (boundscheck, wraparound, cdivision and initializedcheck come from setup.py, so that
# FASTSPECTRAL_BOUNDSCHECK=1 can switch the checks on: a directive here would override it)
"""First-order projective (Eisner) Viterbi decoding of arc-factored scores.

Sentences are packed: sentence ``b`` has ``n_b`` words and its score matrix is the
``(n_b+1) x (n_b+1)`` row-major block ``scores[off[b] : off[b] + (n_b+1)**2]`` with
``S[h, m]`` the score of the arc head ``h`` -> modifier ``m`` (position 0 is the root).
The decoded heads (1-based, 0 = root) go to ``heads[hoff[b] : hoff[b] + n_b]``.
Sentences are decoded in parallel (OpenMP) with one private chart each.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel import prange
from libc.stdlib cimport malloc, free
from libc.math cimport INFINITY
from .packed_check cimport check_packed
from .eisner_common cimport complete_items, ix as _ix

cnp.import_array()


cdef void _backtrack(int s, int t, int d, int complete, const int* bpc0, const int* bpc1,
                     const int* bpi, int n1, int* heads) noexcept nogil:
    """Iterative backtracking with an explicit stack (depth <= 2n)."""
    cdef int* stack = <int*> malloc(4 * 4 * (2 * n1 + 4) * sizeof(int))
    cdef int top = 0
    cdef int k
    if stack == NULL:
        return
    stack[0] = s; stack[1] = t; stack[2] = d; stack[3] = complete
    top = 1
    while top > 0:
        top -= 1
        s = stack[4 * top]; t = stack[4 * top + 1]; d = stack[4 * top + 2]
        complete = stack[4 * top + 3]
        if s == t:
            continue
        if complete:
            if d == 0:   # head t, left complete: C[s,k,0] + I[k,t,0]
                k = bpc0[_ix(s, t, n1)]
                stack[4 * top] = s; stack[4 * top + 1] = k; stack[4 * top + 2] = 0
                stack[4 * top + 3] = 1; top += 1
                stack[4 * top] = k; stack[4 * top + 1] = t; stack[4 * top + 2] = 0
                stack[4 * top + 3] = 0; top += 1
            else:        # head s, right complete: I[s,k,1] + C[k,t,1]
                k = bpc1[_ix(s, t, n1)]
                stack[4 * top] = s; stack[4 * top + 1] = k; stack[4 * top + 2] = 1
                stack[4 * top + 3] = 0; top += 1
                stack[4 * top] = k; stack[4 * top + 1] = t; stack[4 * top + 2] = 1
                stack[4 * top + 3] = 1; top += 1
        else:
            if d == 0:
                heads[s - 1] = t
            else:
                heads[t - 1] = s
            k = bpi[_ix(s, t, n1)]
            stack[4 * top] = s; stack[4 * top + 1] = k; stack[4 * top + 2] = 1
            stack[4 * top + 3] = 1; top += 1
            stack[4 * top] = k + 1; stack[4 * top + 1] = t; stack[4 * top + 2] = 0
            stack[4 * top + 3] = 1; top += 1
    free(stack)


cdef double _eisner_one(const double* S, int n, int single_root, int* heads) noexcept nogil:
    """Decode one sentence; returns the best score (-inf when no tree exists)."""
    cdef int n1 = n + 1
    cdef Py_ssize_t sz = <Py_ssize_t> n1 * n1
    cdef double* C0 = <double*> malloc(sz * sizeof(double))
    cdef double* C1 = <double*> malloc(sz * sizeof(double))
    cdef double* I0 = <double*> malloc(sz * sizeof(double))
    cdef double* I1 = <double*> malloc(sz * sizeof(double))
    cdef int* bpc0 = <int*> malloc(sz * sizeof(int))
    cdef int* bpc1 = <int*> malloc(sz * sizeof(int))
    cdef int* bpi = <int*> malloc(sz * sizeof(int))
    cdef int w, s, t, k, kmax, bk
    cdef double best, v, inner, result
    if (C0 == NULL or C1 == NULL or I0 == NULL or I1 == NULL or bpc0 == NULL or bpc1 == NULL
            or bpi == NULL):
        free(C0); free(C1); free(I0); free(I1); free(bpc0); free(bpc1); free(bpi)
        return -INFINITY
    for s in range(n1):
        C0[_ix(s, s, n1)] = 0.0
        C1[_ix(s, s, n1)] = 0.0
    for w in range(1, n1):
        for s in range(0, n1 - w):
            t = s + w
            # incomplete items share the inner maximisation C[s,k,1] + C[k+1,t,0]; with a
            # single root, the root's first (and only) modifier leaves C[0,0,1] empty: k = 0
            kmax = t - 1
            if s == 0 and single_root:
                kmax = 0
            best = -INFINITY
            bk = s
            for k in range(s, kmax + 1):
                inner = C1[_ix(s, k, n1)] + C0[_ix(k + 1, t, n1)]
                if inner > best:
                    best = inner
                    bk = k
            I1[_ix(s, t, n1)] = best + S[s * n1 + t]
            bpi[_ix(s, t, n1)] = bk
            if s == 0:
                I0[_ix(s, t, n1)] = -INFINITY   # the root is never a modifier
            else:
                I0[_ix(s, t, n1)] = best + S[t * n1 + s]
            complete_items(C0, C1, I0, I1, bpc0, bpc1, s, t, n1)
    result = C1[_ix(0, n, n1)]
    for k in range(n):
        heads[k] = -1
    if n > 0 and result > -INFINITY:
        _backtrack(0, n, 1, 1, bpc0, bpc1, bpi, n1, heads)
    free(C0); free(C1); free(I0); free(I1)
    free(bpc0); free(bpc1); free(bpi)
    return result


def eisner_batch(const double[::1] scores, const cnp.int64_t[::1] off, const cnp.int32_t[::1] lengths,
                 const cnp.int64_t[::1] hoff, cnp.int32_t[::1] heads, double[::1] best,
                 int single_root=0, int nthreads=1):
    """Decode a packed batch of arc-score matrices (see the module docstring).

    ``best[b]`` receives the score of the best tree (``-inf`` if every tree has an
    infinite negative score).  ``single_root`` restricts the root to one modifier.
    """
    cdef Py_ssize_t B = lengths.shape[0]
    cdef Py_ssize_t b
    check_packed(scores, off, lengths, hoff, heads.shape[0], best.shape[0], 1, 32767)
    if nthreads < 1:
        nthreads = 1
    with nogil:
        for b in prange(B, num_threads=nthreads, schedule="dynamic"):
            best[b] = _eisner_one(&scores[off[b]], lengths[b], single_root,
                                     <int*> &heads[hoff[b]])
    return None
