# cython: language_level=3
# (boundscheck, wraparound, cdivision and initializedcheck come from setup.py, so that
# FASTSPECTRAL_BOUNDSCHECK=1 can switch the checks on: a directive here would override it)
"""Second-order projective decoding with sibling parts (McDonald & Pereira, EACL 2006).

R. McDonald and F. Pereira, "Online learning of approximate dependency parsing algorithms",
EACL 2006, section 3 (the second-order projective Eisner algorithm, O(n^3)).

A tree scores ``sum_arcs A[h, m] + sum_sibling_parts G[h, s, m]``: ``s`` and ``m`` are
consecutive modifiers of ``h`` on the same side, ``s`` the one closer to ``h``; for the
innermost modifier of each side ``s = h`` (the "none" marker).

Packed layout: sentence ``b`` has ``n_b`` words (position 0 is the root); its arc scores are
the row-major ``(n_b+1)^2`` block ``arcs[aoff[b]:]`` (``A[h, m]`` at ``h * (n+1) + m``) and its
sibling scores the ``(n_b+1)^3`` block ``sibs[soff[b]:]`` (``G[h, s, m]`` at
``(h * (n+1) + s) * (n+1) + m``; only entries with ``s = h`` or ``s`` strictly between ``h``
and ``m`` are read).  Heads (1-based, 0 = root) go to ``heads[hoff[b]:hoff[b] + n_b]``.
Sentences are decoded in parallel (OpenMP), one private chart each; a sentence whose chart cannot
be allocated is a ``MemoryError`` naming it (``status.pxd``).
"""
import numpy as np
cimport numpy as cnp
from cython.parallel import prange
from libc.math cimport INFINITY
from .alloc cimport malloc, free, fail_after
from .packed_check cimport check_packed, check_sibling_blocks
from .status cimport ST_OK, ST_NO_MEMORY
from ._status import raise_for_status
from .eisner_common cimport backtrack, complete_items, ix as _ix, pair_max

cnp.import_array()

# Chart items (s < t), McDonald & Pereira (2006), figure 4:
#   C[s,t,->]  complete, head s, every word in s..t attached inside      (C1 below)
#   C[s,t,<-]  complete, head t                                          (C0)
#   I[s,t,->]  incomplete, arc s -> t, t's inner side filled             (I1)
#   I[s,t,<-]  incomplete, arc t -> s                                    (I0)
#   S[s,t]     sibling span: s and t are consecutive modifiers of one head outside s..t
#
# Recurrences (A = arc score, G = sibling score, G[h, h, m]: m is h's innermost modifier):
#   S[s,t]      = max_{s <= q < t}  C[s,q,->] + C[q+1,t,<-]
#   I[s,t,->]   = max( C[s+1,t,<-]                      + A[s,t] + G[s,s,t],
#                      max_{s < r < t} I[s,r,->] + S[r,t] + A[s,t] + G[s,r,t] )
#   I[s,t,<-]   = max( C[s,t-1,->]                      + A[t,s] + G[t,t,s],
#                      max_{s < r < t} S[s,r] + I[r,t,<-] + A[t,s] + G[t,r,s] )
#   C[s,t,->]   = max_{s < r <= t} I[s,r,->] + C[r,t,->]
#   C[s,t,<-]   = max_{s <= r < t} C[s,r,<-] + I[r,t,<-]
#   C[s,s,.] = 0; the best tree scores C[0,n,->].  The root (0) is never a modifier
#   (I[0,t,<-] = -inf); with a single root, the root takes only an innermost modifier
#   (the r-branch of I[0,t,->] is skipped), as the first-order kernel's k = 0.


cdef inline double _sibling_max(const double* X, const double* Y, const double* Gh, int m,
                                int s, int t, int n1, double best, int* arg) noexcept nogil:
    """``max(best, max_{s < r < t} X[s,r] + Y[r,t] + Gh[r, m])`` with the first best ``r``
    in ``arg``: the sibling branch of both incomplete items (``Gh = G[h, :, :]``)."""
    cdef double v
    cdef int r
    for r in range(s + 1, t):
        v = X[_ix(s, r, n1)] + Y[_ix(r, t, n1)] + Gh[<Py_ssize_t> r * n1 + m]
        if v > best:
            best = v
            arg[0] = r
    return best


cdef int _eisner2_one(const double* A, const double* G, int n, int single_root,
                      int* heads, double* best_out) noexcept nogil:
    """Decode one sentence: the best score to ``best_out`` (-inf when no tree exists), the heads
    to ``heads``; returns ``ST_OK`` or ``ST_NO_MEMORY`` (heads -1, score -inf)."""
    cdef int n1 = n + 1
    cdef Py_ssize_t sz = <Py_ssize_t> n1 * n1
    cdef double* D = <double*> malloc(5 * sz * sizeof(double))
    cdef int* P = <int*> malloc(5 * sz * sizeof(int))
    cdef double* C0
    cdef double* C1
    cdef double* I0
    cdef double* I1
    cdef double* SB
    cdef int* bc0
    cdef int* bc1
    cdef int* bi0
    cdef int* bi1
    cdef int* bs
    cdef int w, s, t, bk
    cdef double best, result
    cdef int status = ST_OK
    for s in range(n):
        heads[s] = -1
    best_out[0] = -INFINITY
    if D == NULL or P == NULL:
        free(D); free(P)
        return ST_NO_MEMORY
    C0 = D; C1 = D + sz; I0 = D + 2 * sz; I1 = D + 3 * sz; SB = D + 4 * sz
    bc0 = P; bc1 = P + sz; bi0 = P + 2 * sz; bi1 = P + 3 * sz; bs = P + 4 * sz
    for s in range(n1):
        C0[_ix(s, s, n1)] = 0.0
        C1[_ix(s, s, n1)] = 0.0
    for w in range(1, n1):
        for s in range(0, n1 - w):
            t = s + w
            # sibling span S[s,t] (needs C of the strictly shorter spans only)
            bk = s
            SB[_ix(s, t, n1)] = pair_max(C1, C0 + n1, s, s, t, t, n1, &bk)
            bs[_ix(s, t, n1)] = bk
            # I[s,t,->]: head s, modifier t; previous (closer) right modifier r, or none
            best = C0[_ix(s + 1, t, n1)] + G[(<Py_ssize_t> s * n1 + s) * n1 + t]
            bk = s
            if not (s == 0 and single_root):
                best = _sibling_max(I1, SB, G + <Py_ssize_t> s * sz, t, s, t, n1, best, &bk)
            I1[_ix(s, t, n1)] = best + A[s * n1 + t]
            bi1[_ix(s, t, n1)] = bk
            # I[s,t,<-]: head t, modifier s; previous (closer) left modifier r, or none
            if s == 0:
                I0[_ix(s, t, n1)] = -INFINITY   # the root is never a modifier
                bi0[_ix(s, t, n1)] = t
            else:
                best = C1[_ix(s, t - 1, n1)] + G[(<Py_ssize_t> t * n1 + t) * n1 + s]
                bk = t
                best = _sibling_max(SB, I0, G + <Py_ssize_t> t * sz, s, s, t, n1, best, &bk)
                I0[_ix(s, t, n1)] = best + A[t * n1 + s]
                bi0[_ix(s, t, n1)] = bk
            complete_items(C0, C1, I0, I1, bc0, bc1, s, t, n1)
    result = C1[_ix(0, n, n1)]
    if n > 0 and result > -INFINITY:
        status = backtrack(n1, bc0, bc1, bi0, bi1, bs, heads)
    free(D); free(P)
    if status == ST_OK:
        best_out[0] = result
    return status


def eisner2_batch(const double[::1] arcs, const cnp.int64_t[::1] aoff,
                  const double[::1] sibs, const cnp.int64_t[::1] soff,
                  const cnp.int32_t[::1] lengths, const cnp.int64_t[::1] hoff,
                  cnp.int32_t[::1] heads, double[::1] best, int single_root=0,
                  int n_threads=1):
    """Decode a packed batch of arc + sibling scores (see the module docstring).

    ``best[b]`` receives the score of the best tree (``-inf`` if every tree has an infinite
    negative score).  ``single_root`` restricts the root to one modifier.  ``MemoryError``
    (naming the sentence) when a chart cannot be allocated.
    """
    cdef Py_ssize_t B = lengths.shape[0]
    cdef Py_ssize_t b
    check_packed(arcs, aoff, lengths, hoff, heads.shape[0], best.shape[0], 1, 4095)
    check_sibling_blocks(sibs, soff, lengths)
    if n_threads < 1:
        n_threads = 1
    status_arr = np.zeros(B, dtype=np.int32)
    cdef int[::1] status = status_arr
    with nogil:
        for b in prange(B, num_threads=n_threads, schedule="dynamic"):
            status[b] = _eisner2_one(&arcs[aoff[b]], &sibs[soff[b]], lengths[b], single_root,
                                     <int*> &heads[hoff[b]], &best[b])
    raise_for_status(status_arr, "eisner2", lengths)
    return None


def _fail_allocations_after(long k):
    """Tests: the ``k``-th allocation of this module from now on and every later one fail
    (``k < 0``: allocations succeed again); see ``alloc.h``."""
    fail_after(k)
