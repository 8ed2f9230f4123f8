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
Sentences are decoded in parallel (OpenMP), one private chart each.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel import prange
from libc.stdlib cimport malloc, free
from libc.math cimport INFINITY
from .eisner_common cimport complete_items, ix as _ix

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

# item kinds on the backtracking stack
cdef enum:
    K_C0 = 0
    K_C1 = 1
    K_I0 = 2
    K_I1 = 3
    K_S = 4




cdef void _backtrack(int n1, const int* bc0, const int* bc1, const int* bi0, const int* bi1,
                     const int* bs, int* heads) noexcept nogil:
    """Follow the back-pointers from C[0, n, ->] (explicit stack; a derivation has fewer
    than 6 (n+1) items)."""
    cdef int cap = 6 * n1 + 8
    cdef int* stack = <int*> malloc(3 * cap * sizeof(int))
    cdef int top = 0
    cdef int kind, s, t, r
    if stack == NULL:
        return
    stack[0] = K_C1; stack[1] = 0; stack[2] = n1 - 1
    top = 1
    while top > 0:
        top -= 1
        kind = stack[3 * top]; s = stack[3 * top + 1]; t = stack[3 * top + 2]
        if s >= t:
            continue
        if top + 2 > cap:   # cannot happen for a valid chart; stop rather than overrun
            break
        if kind == K_C1:
            r = bc1[_ix(s, t, n1)]
            stack[3 * top] = K_I1; stack[3 * top + 1] = s; stack[3 * top + 2] = r; top += 1
            stack[3 * top] = K_C1; stack[3 * top + 1] = r; stack[3 * top + 2] = t; top += 1
        elif kind == K_C0:
            r = bc0[_ix(s, t, n1)]
            stack[3 * top] = K_C0; stack[3 * top + 1] = s; stack[3 * top + 2] = r; top += 1
            stack[3 * top] = K_I0; stack[3 * top + 1] = r; stack[3 * top + 2] = t; top += 1
        elif kind == K_I1:
            heads[t - 1] = s
            r = bi1[_ix(s, t, n1)]
            if r == s:
                stack[3 * top] = K_C0; stack[3 * top + 1] = s + 1; stack[3 * top + 2] = t
                top += 1
            else:
                stack[3 * top] = K_I1; stack[3 * top + 1] = s; stack[3 * top + 2] = r; top += 1
                stack[3 * top] = K_S; stack[3 * top + 1] = r; stack[3 * top + 2] = t; top += 1
        elif kind == K_I0:
            heads[s - 1] = t
            r = bi0[_ix(s, t, n1)]
            if r == t:
                stack[3 * top] = K_C1; stack[3 * top + 1] = s; stack[3 * top + 2] = t - 1
                top += 1
            else:
                stack[3 * top] = K_S; stack[3 * top + 1] = s; stack[3 * top + 2] = r; top += 1
                stack[3 * top] = K_I0; stack[3 * top + 1] = r; stack[3 * top + 2] = t; top += 1
        else:   # K_S
            r = bs[_ix(s, t, n1)]
            stack[3 * top] = K_C1; stack[3 * top + 1] = s; stack[3 * top + 2] = r; top += 1
            stack[3 * top] = K_C0; stack[3 * top + 1] = r + 1; stack[3 * top + 2] = t; top += 1
    free(stack)


cdef double _eisner2_one(const double* A, const double* G, int n, int single_root,
                         int* heads) noexcept nogil:
    """Decode one sentence; returns the best score (-inf when no tree exists)."""
    cdef int n1 = n + 1
    cdef Py_ssize_t sz = <Py_ssize_t> n1 * n1
    cdef Py_ssize_t n1sq = sz
    cdef double* C0 = <double*> malloc(sz * sizeof(double))
    cdef double* C1 = <double*> malloc(sz * sizeof(double))
    cdef double* I0 = <double*> malloc(sz * sizeof(double))
    cdef double* I1 = <double*> malloc(sz * sizeof(double))
    cdef double* SB = <double*> malloc(sz * sizeof(double))
    cdef int* bc0 = <int*> malloc(sz * sizeof(int))
    cdef int* bc1 = <int*> malloc(sz * sizeof(int))
    cdef int* bi0 = <int*> malloc(sz * sizeof(int))
    cdef int* bi1 = <int*> malloc(sz * sizeof(int))
    cdef int* bs = <int*> malloc(sz * sizeof(int))
    cdef int w, s, t, r, bk
    cdef double best, v, result
    cdef const double* Gs
    cdef const double* Gt
    if (C0 == NULL or C1 == NULL or I0 == NULL or I1 == NULL or SB == NULL or bc0 == NULL
            or bc1 == NULL or bi0 == NULL or bi1 == NULL or bs == NULL):
        free(C0); free(C1); free(I0); free(I1); free(SB)
        free(bc0); free(bc1); free(bi0); free(bi1); free(bs)
        for s in range(n):
            heads[s] = -1
        return -INFINITY
    for s in range(n1):
        C0[_ix(s, s, n1)] = 0.0
        C1[_ix(s, s, n1)] = 0.0
    for w in range(1, n1):
        for s in range(0, n1 - w):
            t = s + w
            # sibling span S[s,t] (needs C of the strictly shorter spans only)
            best = -INFINITY
            bk = s
            for r in range(s, t):
                v = C1[_ix(s, r, n1)] + C0[_ix(r + 1, t, n1)]
                if v > best:
                    best = v
                    bk = r
            SB[_ix(s, t, n1)] = best
            bs[_ix(s, t, n1)] = bk
            # I[s,t,->]: head s, modifier t; previous (closer) right modifier r, or none
            Gs = G + (<Py_ssize_t> s * n1 + s) * n1   # G[s, s, :]
            best = C0[_ix(s + 1, t, n1)] + Gs[t]
            bk = s
            if not (s == 0 and single_root):
                for r in range(s + 1, t):
                    v = I1[_ix(s, r, n1)] + SB[_ix(r, t, n1)] \
                        + G[(<Py_ssize_t> s * n1 + r) * n1 + t]
                    if v > best:
                        best = v
                        bk = r
            I1[_ix(s, t, n1)] = best + A[s * n1 + t]
            bi1[_ix(s, t, n1)] = bk
            # I[s,t,<-]: head t, modifier s; previous (closer) left modifier r, or none
            if s == 0:
                I0[_ix(s, t, n1)] = -INFINITY   # the root is never a modifier
                bi0[_ix(s, t, n1)] = t
            else:
                Gt = G + (<Py_ssize_t> t * n1 + t) * n1   # G[t, t, :]
                best = C1[_ix(s, t - 1, n1)] + Gt[s]
                bk = t
                for r in range(s + 1, t):
                    v = SB[_ix(s, r, n1)] + I0[_ix(r, t, n1)] \
                        + G[(<Py_ssize_t> t * n1 + r) * n1 + s]
                    if v > best:
                        best = v
                        bk = r
                I0[_ix(s, t, n1)] = best + A[t * n1 + s]
                bi0[_ix(s, t, n1)] = bk
            complete_items(C0, C1, I0, I1, bc0, bc1, s, t, n1)
    result = C1[_ix(0, n, n1)]
    for s in range(n):
        heads[s] = -1
    if n > 0 and result > -INFINITY:
        _backtrack(n1, bc0, bc1, bi0, bi1, bs, heads)
    free(C0); free(C1); free(I0); free(I1); free(SB)
    free(bc0); free(bc1); free(bi0); free(bi1); free(bs)
    return result


def eisner2_batch(const double[::1] arcs, const cnp.int64_t[::1] aoff,
                  const double[::1] sibs, const cnp.int64_t[::1] soff,
                  const cnp.int32_t[::1] lengths, const cnp.int64_t[::1] hoff,
                  cnp.int32_t[::1] heads, double[::1] best, int single_root=0, int nthreads=1):
    """Decode a packed batch of arc + sibling scores (see the module docstring).

    ``best[b]`` receives the score of the best tree (``-inf`` if every tree has an infinite
    negative score).  ``single_root`` restricts the root to one modifier.
    """
    cdef Py_ssize_t B = lengths.shape[0]
    cdef Py_ssize_t b
    cdef cnp.int64_t n1
    if aoff.shape[0] < B or soff.shape[0] < B or hoff.shape[0] < B or best.shape[0] < B:
        raise ValueError("offset arrays shorter than the batch")
    for b in range(B):
        n1 = <cnp.int64_t> lengths[b] + 1
        if lengths[b] < 0 or lengths[b] > 4095 or aoff[b] < 0 or soff[b] < 0 or hoff[b] < 0:
            raise ValueError("sentence %d: length or offsets out of range" % b)
        if aoff[b] + n1 * n1 > arcs.shape[0]:
            raise ValueError("arc-score block of sentence %d runs past the arc array" % b)
        if soff[b] + n1 * n1 * n1 > sibs.shape[0]:
            raise ValueError("sibling-score block of sentence %d runs past the sibling array"
                             % b)
        if hoff[b] + lengths[b] > heads.shape[0]:
            raise ValueError("head block of sentence %d runs past the head array" % b)
    if nthreads < 1:
        nthreads = 1
    with nogil:
        for b in prange(B, num_threads=nthreads, schedule="dynamic"):
            best[b] = _eisner2_one(&arcs[aoff[b]], &sibs[soff[b]], lengths[b], single_root,
                                   <int*> &heads[hoff[b]])
    return None
