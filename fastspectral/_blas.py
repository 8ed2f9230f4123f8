"""Single-threaded BLAS sections with one cached ``threadpoolctl`` controller.

``threadpoolctl.threadpool_limits`` scans the process's loaded libraries every time it is
entered (about 4 ms); the pivot learner enters such a section a thousand times per fit, so the
library keeps one :class:`threadpoolctl.ThreadpoolController` and limits through it.  The
controller only knows the libraries loaded when it is built, so SciPy's BLAS (which Numba's
``np.dot`` calls) is loaded first.
"""
from __future__ import annotations

_CONTROLLER: list = []


def blas_single_thread():
    """Context manager: BLAS limited to one thread inside (restored on exit)."""
    if not _CONTROLLER:
        # SciPy's BLAS / LAPACK (what Numba's np.dot and np.linalg call) must be loaded first
        import scipy.linalg.cython_blas  # noqa: F401
        import scipy.linalg.cython_lapack  # noqa: F401
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")
