"""The ridge-regularised pseudo-inverse of the spectral learners (operator SHAG,
:mod:`fastspectral.dependency.spectral`; sequence HMM, :mod:`fastspectral.hmm.spectral`).

``(U^T P)^+ = V diag(1 / s)`` is regularised to ``V diag(s / (s^2 + lam^2))`` with
``lam = ridge / sqrt(n)``, ``n`` the number of sequences the Hankel block ``P`` averages: the
order of the block's sampling noise, so ``lam -> 0`` (the plain pseudo-inverse) with data.
Compiled (Numba), so that the SHAG learner's compiled fit calls it too.
"""
from __future__ import annotations

import numpy as np
from .._jit import njit

__all__ = ["ridge_inverse"]


@njit(cache=True)
def ridge_inverse(s, keep, ridge, n):  # pragma: no cover - numba
    """``inv[i] = s[i] / (s[i]^2 + ridge^2 / n)`` where ``keep[i]``, 0 elsewhere
    (``len(keep)`` entries; ``keep[i]`` implies ``i < len(s)``)."""
    lam2 = ridge * ridge / n
    inv = np.zeros(len(keep))
    for i in range(len(keep)):
        if keep[i]:
            inv[i] = s[i] / (s[i] * s[i] + lam2)
    return inv
