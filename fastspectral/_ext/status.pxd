# cython: language_level=3
"""Status codes of the compiled kernels: declaration-only, nothing imported at run time.

Every batch kernel reports one status per sentence; its ``def`` wrapper hands the array to
:func:`fastspectral._ext._status.raise_for_status`, which raises ``MemoryError`` naming the
first sentence with ``ST_NO_MEMORY`` (the Python side's ``NO_MEMORY``).  ``ST_OVER_BUDGET``
is not an error: the sentence's chart would pass the caller's memory budget, and the caller
decides (parse it alone, or the documented flat-tree fallback).  Other positive codes are a
kernel's own (``shag``: 1, the total weight is zero or not finite)."""

cdef enum:
    ST_OK = 0
    ST_NO_MEMORY = -1       # an allocation failed
    ST_OVER_BUDGET = -2     # the sentence's buffers would pass its memory budget
