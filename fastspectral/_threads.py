"""The one place that decides thread counts (OpenMP kernels, Numba, BLAS).

* :func:`available_cores` — the cores this process may run on (its CPU affinity,
  ``os.sched_getaffinity``, which cpuset cgroups and ``taskset`` restrict; ``os.cpu_count()``
  only where affinity is unknown, e.g. macOS and Windows), capped by the ``FASTSPECTRAL_THREADS``
  environment variable when it is set.  CPU *quotas* (cgroup ``cpu.max``, ``docker --cpus``)
  are not affinity: set ``FASTSPECTRAL_THREADS`` there.
* :func:`resolve_jobs` — a user's ``jobs`` argument (``None`` = every available core; an
  explicit count is capped at the cores this process may run on, with a one-line note, and at
  the number of sentences when the caller knows it).
* :func:`python_workers` / :func:`map_groups` — how a parser splits ``jobs`` threads between
  Python threads (each parsing a group of a chunk of sentences) and the OpenMP threads of each
  group's kernel calls: W x (jobs / W) threads in all, never more than ``jobs``.  The Python
  steps between the kernels (NumPy, tree building) hold the GIL; with W groups in flight one
  group's Python work overlaps the others' kernels instead of idling every core.
* :class:`numba_threads` — the thread count of Numba's parallel kernels inside a block.

Every default thread count of the package (parsers, learners, the CLI's ``--jobs``) comes from
:func:`available_cores`; nothing else calls ``os.cpu_count`` or ``os.sched_getaffinity``.

Environment variables read here and by the libraries underneath:

``FASTSPECTRAL_THREADS``  cap on the default thread count of every parser and learner (an
                          integer >= 1; other values are ignored); an explicit ``jobs=``
                          argument is capped at the affinity cores only
``OMP_WAIT_POLICY``       set to ``PASSIVE`` by ``import fastspectral`` unless the user set it
                          (idle OpenMP threads sleep instead of spinning on the cores other
                          workers need)
``OPENBLAS_THREAD_TIMEOUT`` set to ``4`` by ``import fastspectral`` unless the user set it
                          (idle OpenBLAS threads sleep after 2**4 cycles instead of spinning for
                          2**28; read when OpenBLAS loads, so it acts when ``fastspectral`` is
                          imported before NumPy, as the command line does)
``FASTSPECTRAL_MALLOC``   ``system``: leave glibc's allocator settings alone (default: the first
                          ``parse`` lets glibc keep chart memory between sentences, so threads
                          do not serialise on page faults; :func:`fastspectral._memory.keep_chart_memory`)
``NUMBA_NUM_THREADS``     Numba's pool size (the learners' ``prange`` loops)
``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``
                          the BLAS pools; the learners run their BLAS single-threaded inside
                          parallel regions (:mod:`fastspectral._blas`), so nothing nests
"""
from __future__ import annotations

import os

__all__ = ["available_cores", "affinity_cores", "check_jobs", "resolve_jobs", "python_workers",
           "map_groups", "numba_threads"]


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


def affinity_cores() -> int:
    """Cores this process may run on (its CPU affinity; ``os.cpu_count()`` where unknown),
    without the ``FASTSPECTRAL_THREADS`` cap: the most threads any call starts."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows
        return max(1, os.cpu_count() or 1)


_NOTED: set = set()


def resolve_jobs(jobs=None, n_items: int | None = None) -> int:
    """The thread count of a ``jobs`` argument: :func:`available_cores` when it is None, else
    ``jobs`` (an integer >= 1; ``ValueError`` otherwise) capped at the cores this process may
    run on (:func:`affinity_cores`; more threads than cores only compete for them, and a
    thousand threads exhaust the OpenMP runtime) and at ``n_items`` (the sentences of a call,
    when known).  The first time an explicit value is capped at the cores a one-line note goes
    to the ``fastspectral`` logger (stderr on the command line)."""
    if jobs is None:
        n = available_cores()
    else:
        try:
            n = int(jobs)
        except (TypeError, ValueError):
            raise ValueError(f"jobs must be an integer >= 1 or None, got {jobs!r}") from None
        if n != jobs or n < 1:
            raise ValueError(f"jobs must be an integer >= 1 or None, got {jobs!r}")
        cores = affinity_cores()
        if n > cores:
            if (n, cores) not in _NOTED:
                _NOTED.add((n, cores))
                import logging

                logging.getLogger("fastspectral").warning(
                    f"{n} threads asked for, {cores} cores available: using {cores}")
            n = cores
    if n_items is not None:
        n = max(1, min(n, int(n_items)))
    return n


def check_jobs(jobs) -> int:
    """A thread count: every core available to this process when ``jobs`` is None, else
    ``jobs`` (an integer >= 1; ``ValueError`` otherwise, e.g. 0 or -1) capped at the cores
    (:func:`resolve_jobs`, the one place that decides thread counts)."""
    return resolve_jobs(jobs)


def python_workers(n_threads: int) -> int:
    """Python threads a parser runs for ``n_threads`` threads in all: 1 below 4, else one per
    2 to 4 kernel threads (at most 4)."""
    return 1 if n_threads < 4 else min(4, n_threads // 2)


def map_groups(fn, ids, threads: int, pool=None, workers: int = 1) -> list:
    """``fn(group, group_threads)`` for interleaved groups ``ids[g::G]`` (G = 1 to 3 per worker)
    on ``pool`` (a ``concurrent.futures`` executor with ``workers`` threads), each group with
    ``threads // workers`` kernel threads; one call ``fn(ids, threads)`` when there is no pool
    or too little to split.  Results in group order.

    ``ids`` sorted longest first gives every group the same mix of lengths.
    """
    if pool is None or workers < 2 or threads < workers or len(ids) < 2 * workers:
        return [fn(ids, threads)]
    # more groups than workers, taken from the pool's queue as workers free up: the groups'
    # Python steps and kernels fall out of step (all groups in lock-step would wait for the GIL
    # together, then leave it idle together); each runs threads // workers kernel threads, so
    # at most `threads` run at once
    n_groups = min(3 * workers, max(workers, len(ids) // 16))
    per = max(1, threads // workers)
    futures = [pool.submit(fn, ids[g::n_groups], per) for g in range(n_groups)]
    return [f.result() for f in futures]


class numba_threads:
    """Run Numba's parallel kernels with ``n`` threads inside the block (capped by Numba's
    pool), restoring the previous count after."""

    def __init__(self, n: int):
        self.n = int(n)

    def __enter__(self):
        import numba

        self.old = numba.get_num_threads()
        numba.set_num_threads(max(1, min(self.n, numba.config.NUMBA_NUM_THREADS)))
        return self

    def __exit__(self, *exc):
        import numba

        numba.set_num_threads(self.old)
        return False
