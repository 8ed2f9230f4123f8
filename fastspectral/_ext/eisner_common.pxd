# cython: language_level=3
"""Chart pieces shared by the first- and second-order Eisner kernels (``eisner.pyx``,
``eisner2.pyx``): the cell index of a span and the complete items, whose recurrences are the
same in both (J. Eisner, COLING 1996; McDonald & Pereira, EACL 2006, figure 4)."""
from libc.math cimport INFINITY


cdef inline Py_ssize_t ix(Py_ssize_t s, Py_ssize_t t, Py_ssize_t n1) noexcept nogil:
    """Cell of span ``s..t`` in an ``(n+1) x (n+1)`` row-major chart."""
    return s * n1 + t


cdef inline void complete_items(double* C0, double* C1, const double* I0, const double* I1,
                                int* bc0, int* bc1, int s, int t, int n1) noexcept nogil:
    """The complete items of span ``s < t`` from the shorter spans and its incomplete items:

    ``C[s,t,<-] = max_{s <= r < t}  C[s,r,<-] + I[r,t,<-]``   (head ``t``)
    ``C[s,t,->] = max_{s < r <= t}  I[s,r,->] + C[r,t,->]``   (head ``s``)

    with their split points in ``bc0`` / ``bc1`` (the first best one on ties)."""
    cdef double best = -INFINITY, v
    cdef int bk = s, r
    for r in range(s, t):
        v = C0[ix(s, r, n1)] + I0[ix(r, t, n1)]
        if v > best:
            best = v
            bk = r
    C0[ix(s, t, n1)] = best
    bc0[ix(s, t, n1)] = bk
    best = -INFINITY
    bk = t
    for r in range(s + 1, t + 1):
        v = I1[ix(s, r, n1)] + C1[ix(r, t, n1)]
        if v > best:
            best = v
            bk = r
    C1[ix(s, t, n1)] = best
    bc1[ix(s, t, n1)] = bk
