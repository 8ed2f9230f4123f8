"""The one place that decides thread counts (OpenMP kernels, Numba, BLAS).

* :func:`available_cores` — the cores this process may run on (its CPU affinity,
  ``os.sched_getaffinity``, which cpuset cgroups and ``taskset`` restrict; ``os.cpu_count()``
  only where affinity is unknown, e.g. macOS and Windows), capped by the ``FASTSPECTRAL_THREADS``
  environment variable when it is set.  CPU *quotas* (cgroup ``cpu.max``, ``docker --cpus``)
  are not affinity: set ``FASTSPECTRAL_THREADS`` there.
* :func:`resolve_jobs` — a user's ``jobs`` argument (``None`` = every available core).

Every default thread count of the package (parsers, learners, the CLI's ``--jobs``) comes from
:func:`available_cores`; nothing else calls ``os.cpu_count`` or ``os.sched_getaffinity``.

Environment variables read here and by the libraries underneath:

``FASTSPECTRAL_THREADS``  cap on the default thread count of every parser and learner (an
                          integer >= 1; other values are ignored); an explicit ``jobs=``
                          argument is not capped
``OMP_WAIT_POLICY``       set to ``PASSIVE`` by ``import fastspectral`` unless the user set it
                          (idle OpenMP threads sleep instead of spinning on the cores other
                          workers need)
``NUMBA_NUM_THREADS``     Numba's pool size (the learners' ``prange`` loops)
``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``
                          the BLAS pools; the learners run their BLAS single-threaded inside
                          parallel regions (:mod:`fastspectral._blas`), so nothing nests
"""
from __future__ import annotations

import os

__all__ = ["available_cores", "resolve_jobs"]


def available_cores() -> int:
    """Cores this process may use (affinity-aware), capped by ``FASTSPECTRAL_THREADS``."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        n = os.cpu_count() or 1
    cap = os.environ.get("FASTSPECTRAL_THREADS", "").strip()
    if cap:
        try:
            n = min(n, int(cap)) if int(cap) >= 1 else n
        except ValueError:
            pass
    return max(1, n)


def resolve_jobs(jobs=None) -> int:
    """``jobs`` when it is a positive integer, :func:`available_cores` when it is None."""
    from .base import check_jobs

    return check_jobs(jobs)
