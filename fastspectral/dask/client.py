"""Dask clients: a local cluster of worker processes, or the cluster of a scheduler.

:func:`connect` is what ``fastspectral parse`` and ``fastspectral train`` use for
``--dask-workers N`` and ``--scheduler ADDRESS``; scripts can use it too.  Dask is imported
when it is called (``ImportError`` when ``distributed`` is not installed).
"""
from __future__ import annotations

import logging
import os
import signal
import time

__all__ = ["connect"]


def connect(scheduler=None, n_workers=None, *, timeout: str = "20s"):
    """``(client, cluster or None, seconds it took)``.

    Parameters
    ----------
    scheduler : str, optional
        The scheduler's address (``tcp://HOST:8786``) or the JSON file written by
        ``dask-scheduler --scheduler-file``.
    n_workers : int, optional
        Start a local cluster of this many worker processes, one thread each, instead
        (its workers ignore the terminal's Ctrl-C, which reaches the whole process group: the
        caller stops after the tasks in flight, which the workers must finish).
    timeout : str
        How long to wait for the scheduler.

    Raises ``ImportError`` without ``distributed``, ``ValueError`` when neither or both of
    ``scheduler`` and ``n_workers`` are given, and the client's ``OSError`` / ``ValueError``
    when the scheduler cannot be reached.
    """
    if (scheduler is None) == (n_workers is None):
        raise ValueError("give a scheduler address or a number of local workers")
    t0 = time.perf_counter()
    from distributed import Client, LocalCluster

    if n_workers is not None:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=logging.ERROR)
        finally:
            signal.signal(signal.SIGINT, old)
        return Client(cluster), cluster, time.perf_counter() - t0
    if os.path.isfile(scheduler):
        client = Client(scheduler_file=scheduler, timeout=timeout)
    else:
        client = Client(scheduler, timeout=timeout)
    return client, None, time.perf_counter() - t0
