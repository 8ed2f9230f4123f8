# cython: language_level=3
"""Argument checks shared by the packed Eisner decoders (``eisner.pyx``, ``eisner2.pyx``,
``kbest_eisner.pyx``): declaration-only, everything ``inline``, nothing imported at run time.

Sentence ``b`` of a packed batch has ``lengths[b]`` words, its ``(n_b+1)**2`` arc scores at
``scores[off[b]:]`` and ``head_mult * n_b`` head slots at ``heads[hoff[b]:]`` (1 for the
1-best decoder, ``k`` for the k-best one).
"""
cimport numpy as cnp


cdef inline int check_packed(const double[::1] scores, const cnp.int64_t[::1] off,
                             const cnp.int32_t[::1] lengths, const cnp.int64_t[::1] hoff,
                             Py_ssize_t n_heads, Py_ssize_t n_other, cnp.int64_t head_mult,
                             int max_len) except -1:
    """Raise ``ValueError`` unless every sentence's length (``0..max_len``), score block and
    head block fit; ``n_other``: the length of the other per-sentence outputs."""
    cdef Py_ssize_t B = lengths.shape[0]
    cdef Py_ssize_t b
    if off.shape[0] < B or hoff.shape[0] < B or n_other < B:
        raise ValueError("offset arrays shorter than the batch")
    for b in range(B):
        if lengths[b] < 0 or lengths[b] > max_len or off[b] < 0 or hoff[b] < 0:
            raise ValueError("sentence %d: length or offsets out of range" % b)
        if off[b] + (<cnp.int64_t> lengths[b] + 1) * (lengths[b] + 1) > scores.shape[0]:
            raise ValueError("score block of sentence %d runs past the score array" % b)
        if hoff[b] + head_mult * lengths[b] > n_heads:
            raise ValueError("head block of sentence %d runs past the head array" % b)
    return 0


cdef inline int check_sibling_blocks(const double[::1] sibs, const cnp.int64_t[::1] soff,
                                     const cnp.int32_t[::1] lengths) except -1:
    """Raise ``ValueError`` unless every sentence's ``(n_b+1)**3`` sibling-score block fits
    (the second-order decoders, ``eisner2.pyx`` and ``kbest_eisner.pyx``)."""
    cdef Py_ssize_t B = lengths.shape[0]
    cdef Py_ssize_t b
    cdef cnp.int64_t n1
    if soff.shape[0] < B:
        raise ValueError("offset arrays shorter than the batch")
    for b in range(B):
        n1 = <cnp.int64_t> lengths[b] + 1
        if soff[b] < 0 or soff[b] + n1 * n1 * n1 > sibs.shape[0]:
            raise ValueError("sibling-score block of sentence %d runs past the sibling array"
                             % b)
    return 0
