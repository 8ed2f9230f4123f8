"""The kernels' per-sentence status codes on the Python side (``status.pxd`` on the C side).

Every batch kernel fills one status per sentence and its ``def`` wrapper calls
:func:`raise_for_status` before it returns, so a sentence whose chart could not be allocated is
always a ``MemoryError`` naming it, never a missing tree or an empty result.
"""
from __future__ import annotations

import numpy as np

__all__ = ["OK", "NO_MEMORY", "OVER_BUDGET", "raise_for_status"]

#: the sentence was processed (the values of ``status.pxd``)
OK = 0
#: an allocation failed
NO_MEMORY = -1
#: the sentence's buffers would pass its memory budget (not an error: the caller decides)
OVER_BUDGET = -2


def raise_for_status(status, kernel: str, lengths=None) -> None:
    """Raise ``MemoryError`` naming the first sentence whose status is :data:`NO_MEMORY`
    (1-based, with its length when ``lengths`` is given); other codes are left to the caller."""
    bad = np.flatnonzero(np.asarray(status) == NO_MEMORY)
    if bad.shape[0] == 0:
        return
    b = int(bad[0])
    words = "" if lengths is None else f" ({int(np.asarray(lengths)[b])} words)"
    more = f"; {bad.shape[0] - 1} more sentence(s) of the batch too" if bad.shape[0] > 1 else ""
    raise MemoryError(f"{kernel}: out of memory for sentence {b + 1} of the batch{words}{more}")
