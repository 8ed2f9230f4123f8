# cython: language_level=3
"""Chart pieces shared by the first- and second-order Eisner kernels (``eisner.pyx``,
``eisner2.pyx``): the cell index of a span, the one maximisation every item of both charts
is made of, the complete items (whose recurrences are the same in both; J. Eisner, COLING
1996; McDonald & Pereira, EACL 2006, figure 4) and the backtracking of both charts."""
from libc.math cimport INFINITY
from .alloc cimport malloc, free
from .status cimport ST_OK, ST_NO_MEMORY

# item kinds on the backtracking stacks (first order: I0 / I1 are its incomplete items)
cdef enum:
    K_C0 = 0   # complete, head t    C[s,t,<-]
    K_C1 = 1   # complete, head s    C[s,t,->]
    K_I0 = 2   # incomplete, arc t -> s
    K_I1 = 3   # incomplete, arc s -> t
    K_S = 4    # sibling span (second order only)


cdef inline Py_ssize_t ix(Py_ssize_t s, Py_ssize_t t, Py_ssize_t n1) noexcept nogil:
    """Cell of span ``s..t`` in an ``(n+1) x (n+1)`` row-major chart."""
    return s * n1 + t


cdef inline double pair_max(const double* X, const double* Y, int s, int lo, int hi, int t,
                            int n1, int* arg) noexcept nogil:
    """``max_{lo <= r < hi} X[s,r] + Y[r,t]``, its first best ``r`` in ``arg`` (left as it
    is when the range is empty or every sum is -inf).  ``Y`` shifted by one row
    (``Y = C + n1``) reads ``C[r+1,t]``: the split ``C[s,r,->] + C[r+1,t,<-]`` of the
    first-order incomplete items and of the second-order sibling spans."""
    cdef double best = -INFINITY, v
    cdef int r
    for r in range(lo, hi):
        v = X[ix(s, r, n1)] + Y[ix(r, t, n1)]
        if v > best:
            best = v
            arg[0] = r
    return best


cdef inline void complete_items(double* C0, double* C1, const double* I0, const double* I1,
                                int* bc0, int* bc1, int s, int t, int n1) noexcept nogil:
    """The complete items of span ``s < t`` from the shorter spans and its incomplete items:

    ``C[s,t,<-] = max_{s <= r < t}  C[s,r,<-] + I[r,t,<-]``   (head ``t``)
    ``C[s,t,->] = max_{s < r <= t}  I[s,r,->] + C[r,t,->]``   (head ``s``)

    with their split points in ``bc0`` / ``bc1`` (the first best one on ties)."""
    cdef int bk = s
    C0[ix(s, t, n1)] = pair_max(C0, I0, s, s, t, t, n1, &bk)
    bc0[ix(s, t, n1)] = bk
    bk = t
    C1[ix(s, t, n1)] = pair_max(I1, C1, s, s + 1, t + 1, t, n1, &bk)
    bc1[ix(s, t, n1)] = bk


cdef inline int push(int* stack, int top, int kind, int s, int t) noexcept nogil:
    """Push item ``(kind, s, t)`` on a backtracking stack of triples; the new top."""
    stack[3 * top] = kind
    stack[3 * top + 1] = s
    stack[3 * top + 2] = t
    return top + 1


cdef inline int backtrack(int n1, const int* bc0, const int* bc1, const int* bi0,
                          const int* bi1, const int* bs, int* heads) noexcept nogil:
    """Follow the back-pointers from C[0, n, ->], writing ``heads`` (explicit stack of
    ``(kind, s, t)``; a derivation has fewer than 6 (n+1) items).  Returns ``ST_OK``, or
    ``ST_NO_MEMORY`` when the stack cannot be allocated.

    ``bc0`` / ``bc1``: the complete items' split points; ``bs``: the split ``C[s,r,->] +
    C[r+1,t,<-]`` (second order: of the sibling spans; first order: of the incomplete items).
    Second order: ``bi1`` / ``bi0`` give an incomplete item's closer sibling (``r = s`` /
    ``r = t``: none).  First order: ``bi0 = bi1 = NULL``, and an incomplete item is its arc
    over the split ``bs`` (a sibling span's)."""
    cdef int cap = 6 * n1 + 8
    cdef int* stack = <int*> malloc(3 * cap * sizeof(int))
    cdef int top, kind, s, t, r
    if stack == NULL:
        return ST_NO_MEMORY
    top = push(stack, 0, K_C1, 0, n1 - 1)
    while top > 0:
        top -= 1
        kind = stack[3 * top]; s = stack[3 * top + 1]; t = stack[3 * top + 2]
        if s >= t:
            continue
        if top + 2 > cap:   # cannot happen for a valid chart; stop rather than overrun
            break
        if kind == K_C1:      # I[s,r,->] + C[r,t,->]
            r = bc1[ix(s, t, n1)]
            top = push(stack, top, K_I1, s, r)
            top = push(stack, top, K_C1, r, t)
        elif kind == K_C0:    # C[s,r,<-] + I[r,t,<-]
            r = bc0[ix(s, t, n1)]
            top = push(stack, top, K_C0, s, r)
            top = push(stack, top, K_I0, r, t)
        elif kind == K_I1:    # arc s -> t
            heads[t - 1] = s
            if bi1 == NULL:
                top = push(stack, top, K_S, s, t)
                continue
            r = bi1[ix(s, t, n1)]
            if r == s:
                top = push(stack, top, K_C0, s + 1, t)
            else:
                top = push(stack, top, K_I1, s, r)
                top = push(stack, top, K_S, r, t)
        elif kind == K_I0:    # arc t -> s
            heads[s - 1] = t
            if bi0 == NULL:
                top = push(stack, top, K_S, s, t)
                continue
            r = bi0[ix(s, t, n1)]
            if r == t:
                top = push(stack, top, K_C1, s, t - 1)
            else:
                top = push(stack, top, K_S, s, r)
                top = push(stack, top, K_I0, r, t)
        else:                 # K_S: C[s,r,->] + C[r+1,t,<-]
            r = bs[ix(s, t, n1)]
            top = push(stack, top, K_C1, s, r)
            top = push(stack, top, K_C0, r + 1, t)
    free(stack)
    return ST_OK
