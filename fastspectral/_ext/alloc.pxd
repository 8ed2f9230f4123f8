# cython: language_level=3
"""Allocation for the compiled kernels: declaration-only, nothing imported at run time.

``malloc`` / ``calloc`` / ``realloc`` are those of ``alloc.h``: the C library's, except while a
test has switched failures on (``fail_after(k)``: the k-th allocation from then on and every
later one return NULL; a negative k switches that off).  Kernels cimport them under the C
library's names (``from .alloc cimport malloc, calloc, realloc, free``).

:func:`grow` is the one growable-buffer helper of the kernels (item lists, hyperedges,
derivation heaps): capacity doubling from a first size, optional byte accounting against a
memory budget, a status code (``status.pxd``) on failure, the old buffer left intact."""
cimport numpy as cnp
from .status cimport ST_OK, ST_NO_MEMORY, ST_OVER_BUDGET

cdef extern from "alloc.h" nogil:
    void* malloc "fs_malloc" (size_t n)
    void* calloc "fs_calloc" (size_t n, size_t size)
    void* realloc "fs_realloc" (void* p, size_t n)
    void free(void* p)
    void fail_after "fs_alloc_fail_after" (long k)


cdef inline int grow(void** buf, cnp.int64_t* cap, cnp.int64_t need, cnp.int64_t first, size_t size,
                     cnp.int64_t* used, cnp.int64_t limit) noexcept nogil:
    """Room for ``need`` entries of ``size`` bytes in ``buf[0]`` (capacity ``cap[0]``).

    A full buffer grows to ``max(2 * cap, need)``, an empty one (``cap[0] == 0``) to
    ``max(first, need)``.  ``used`` (may be NULL) counts the bytes of the caller's buffers; with
    ``limit > 0`` a growth that would take it past ``limit`` is refused.  Returns ``ST_OK``,
    ``ST_NO_MEMORY`` (``realloc`` failed, or the size overflows) or ``ST_OVER_BUDGET``; on
    failure ``buf[0]`` and ``cap[0]`` are unchanged (the caller frees the buffer)."""
    cdef cnp.int64_t newcap
    cdef void* nb
    if need <= cap[0]:
        return ST_OK
    newcap = 2 * cap[0] if cap[0] > 0 else first
    if newcap < need:
        newcap = need
    if <unsigned long long> newcap > (<size_t> -1) // size:
        return ST_NO_MEMORY
    if used != NULL and limit > 0 and used[0] + (newcap - cap[0]) * <cnp.int64_t> size > limit:
        return ST_OVER_BUDGET
    nb = realloc(buf[0], <size_t> newcap * size)
    if nb == NULL:
        return ST_NO_MEMORY
    if used != NULL:
        used[0] += (newcap - cap[0]) * <cnp.int64_t> size
    buf[0] = nb
    cap[0] = newcap
    return ST_OK
