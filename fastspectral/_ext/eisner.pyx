# cython: language_level=3
# (boundscheck, wraparound, cdivision and initializedcheck come from setup.py, so that
# FASTSPECTRAL_BOUNDSCHECK=1 can switch the checks on: a directive here would override it)
"""First-order projective (Eisner) Viterbi decoding of arc-factored scores.

Sentences are packed: sentence ``b`` has ``n_b`` words and its score matrix is the
``(n_b+1) x (n_b+1)`` row-major block ``scores[off[b] : off[b] + (n_b+1)**2]`` with
``S[h, m]`` the score of the arc head ``h`` -> modifier ``m`` (position 0 is the root).
The decoded heads (1-based, 0 = root) go to ``heads[hoff[b] : hoff[b] + n_b]``.
Sentences are decoded in parallel (OpenMP) with one private chart each; a sentence whose chart
cannot be allocated is a ``MemoryError`` naming it (``status.pxd``).

J. Eisner, "Three new probabilistic models for dependency parsing: an exploration", COLING 1996
(the O(n^3) span-based projective algorithm); the complete / incomplete items as in
R. McDonald and F. Pereira, EACL 2006 (``eisner2.pyx``, ``eisner_common.pxd``).
"""
import numpy as np
cimport numpy as cnp
from cython.parallel import prange
from libc.math cimport INFINITY
from .alloc cimport malloc, free, fail_after
from .packed_check cimport check_packed
from .status cimport ST_OK, ST_NO_MEMORY
from ._status import raise_for_status
from .eisner_common cimport backtrack, complete_items, ix as _ix, pair_max

cnp.import_array()


cdef int _eisner_one(const double* S, int n, int single_root, int* heads,
                     double* best_out) noexcept nogil:
    """Decode one sentence: the best score to ``best_out`` (-inf when no tree exists), the heads
    to ``heads``; returns ``ST_OK`` or ``ST_NO_MEMORY`` (heads -1, score -inf).

    Recurrences (J. Eisner, COLING 1996; S = arc score, C/I as in ``eisner_common``):
      I[s,t,->] = max_{s <= k < t} C[s,k,->] + C[k+1,t,<-]  + S[s,t]
      I[s,t,<-] = (the same maximisation)                   + S[t,s]   (-inf for s = 0)
      C[s,t,<-], C[s,t,->]: ``complete_items``;  C[s,s,.] = 0; the best tree: C[0,n,->].
    With a single root, the root's only modifier leaves C[0,0,->] empty: k = 0 for s = 0.
    """
    cdef int n1 = n + 1
    cdef Py_ssize_t sz = <Py_ssize_t> n1 * n1
    cdef double* D = <double*> malloc(4 * sz * sizeof(double))
    cdef int* P = <int*> malloc(3 * sz * sizeof(int))
    cdef double* C0
    cdef double* C1
    cdef double* I0
    cdef double* I1
    cdef int* bpc0
    cdef int* bpc1
    cdef int* bpi
    cdef int w, s, t, k, kmax, bk
    cdef double best, result
    cdef int status = ST_OK
    for k in range(n):
        heads[k] = -1
    best_out[0] = -INFINITY
    if D == NULL or P == NULL:
        free(D); free(P)
        return ST_NO_MEMORY
    C0 = D; C1 = D + sz; I0 = D + 2 * sz; I1 = D + 3 * sz
    bpc0 = P; bpc1 = P + sz; bpi = P + 2 * sz
    for s in range(n1):
        C0[_ix(s, s, n1)] = 0.0
        C1[_ix(s, s, n1)] = 0.0
    for w in range(1, n1):
        for s in range(0, n1 - w):
            t = s + w
            kmax = t - 1
            if s == 0 and single_root:
                kmax = 0
            bk = s
            best = pair_max(C1, C0 + n1, s, s, kmax + 1, t, n1, &bk)
            I1[_ix(s, t, n1)] = best + S[s * n1 + t]
            bpi[_ix(s, t, n1)] = bk
            if s == 0:
                I0[_ix(s, t, n1)] = -INFINITY   # the root is never a modifier
            else:
                I0[_ix(s, t, n1)] = best + S[t * n1 + s]
            complete_items(C0, C1, I0, I1, bpc0, bpc1, s, t, n1)
    result = C1[_ix(0, n, n1)]
    if n > 0 and result > -INFINITY:
        status = backtrack(n1, bpc0, bpc1, NULL, NULL, bpi, heads)
    free(D); free(P)
    if status == ST_OK:
        best_out[0] = result
    return status


def eisner_batch(const double[::1] scores, const cnp.int64_t[::1] off, const cnp.int32_t[::1] lengths,
                 const cnp.int64_t[::1] hoff, cnp.int32_t[::1] heads, double[::1] best,
                 int single_root=0, int n_threads=1):
    """Decode a packed batch of arc-score matrices (see the module docstring).

    ``best[b]`` receives the score of the best tree (``-inf`` if every tree has an
    infinite negative score).  ``single_root`` restricts the root to one modifier.
    ``MemoryError`` (naming the sentence) when a chart cannot be allocated.
    """
    cdef Py_ssize_t B = lengths.shape[0]
    cdef Py_ssize_t b
    check_packed(scores, off, lengths, hoff, heads.shape[0], best.shape[0], 1, 32767)
    if n_threads < 1:
        n_threads = 1
    status_arr = np.zeros(B, dtype=np.int32)
    cdef int[::1] status = status_arr
    with nogil:
        for b in prange(B, num_threads=n_threads, schedule="dynamic"):
            status[b] = _eisner_one(&scores[off[b]], lengths[b], single_root,
                                    <int*> &heads[hoff[b]], &best[b])
    raise_for_status(status_arr, "eisner", lengths)
    return None


def _fail_allocations_after(long k):
    """Tests: the ``k``-th allocation of this module from now on and every later one fail
    (``k < 0``: allocations succeed again); see ``alloc.h``."""
    fail_after(k)
