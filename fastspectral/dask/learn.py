"""Learn from partitioned data on a Dask cluster (the statistics protocol of
:mod:`fastspectral.base`).

A learner with the protocol (:class:`~fastspectral.base.PartitionedFit`: ``PCFG``,
``SpectralLPCFG``, ``PivotLPCFG``, ``EMLPCFG`` (random or pivot start), the SHAG parser, the
language models...) learns in passes; in each
pass every partition computes its :class:`~fastspectral.base.Statistics` on a worker, the
statistics are merged by a tree of ``merge`` tasks on the workers (adjacent groups of
``split_every``, so the partitions' order is kept), and only the merged statistics come back to
the client, which computes the estimate once (``model.fit_statistics``).  A pass that needs the
previous pass's estimate (the spectral L-PCFG's feature index and projections, EM's current
parameters) gets it as a *context* scattered once to every worker (``broadcast=True``).

The partitions are read, and prepared once (``model.prepare_partition``: e.g. binarised
trees), on the workers and stay in their memory across the passes; :class:`Partition` caches
what a pass derives from them (node arrays) for the next passes.

:func:`fit_partitioned` learns from partitions already in the cluster (futures, a
``dask.bag``, ``dask.delayed`` objects) or from local lists of items (scattered);
:func:`read_partitions` reads files on the workers; :func:`fit_files` does both.  The model
equals ``model.fit`` on the concatenated partitions (up to the order of floating-point sums).

Nothing here imports Dask until a function needs it.
"""
from __future__ import annotations

import logging
import time

from ..base import PartitionedFit, Statistics

__all__ = ["fit_partitioned", "read_partitions", "fit_files", "learnable"]

logger = logging.getLogger("fastspectral")


def learnable(model) -> bool:
    """True when ``model`` (an estimator) can learn from partitions."""
    return isinstance(model, PartitionedFit) and \
        type(model).sufficient_statistics is not PartitionedFit.sufficient_statistics


# ------------------------------------------------------------------------------------------------
# tasks (run on the workers)
# ------------------------------------------------------------------------------------------------
def _limit_threads(threads) -> None:
    from .parse import _task_threads

    _task_threads(threads)


def _prepare(model, items, threads):
    _limit_threads(threads)
    return model.prepare_partition(items)


def _statistics(model, part, context, threads):
    _limit_threads(threads)
    return model.sufficient_statistics(part, context)


def _merge(*stats):
    return Statistics.merge_all(stats)


def _read(path, input_kind, fmt, encoding, reader):
    """The items of one file (``reader``: a callable ``reader(path)``, or None for the
    training-data reader of the input kind,
    :func:`fastspectral.trees.corpus.read_training_items`)."""
    if reader is not None:
        return list(reader(path))
    from ..trees.corpus import read_training_items

    return read_training_items(path, input_kind, format=fmt, encoding=encoding)


def _split(items, k, n):
    lo = len(items) * k // n
    hi = len(items) * (k + 1) // n
    return items[lo:hi]


# ------------------------------------------------------------------------------------------------
# the client side
# ------------------------------------------------------------------------------------------------
def _get_client(client):
    if client is not None:
        return client
    try:
        from distributed import get_client
    except ImportError:
        raise ImportError("learning on a Dask cluster needs Dask: pip install "
                          "'fastspectral[dask]' (dask[distributed])") from None
    try:
        return get_client()
    except ValueError:
        raise ValueError("no Dask client: pass client=Client(...) (or create one first)") from None


def _as_futures(client, partitions) -> list:
    """Futures of the partitions: futures as given, a bag's or delayed objects' partitions
    computed on the cluster (kept there), local lists scattered."""
    from distributed import Future

    if hasattr(partitions, "to_delayed") and hasattr(partitions, "npartitions"):   # a bag
        partitions = partitions.to_delayed()
    partitions = list(partitions)
    if not partitions:
        raise ValueError("no partitions to learn from")
    out = []
    for p in partitions:
        if isinstance(p, Future):
            out.append(p)
        elif hasattr(p, "dask") and hasattr(p, "key"):                    # dask.delayed
            out.append(client.compute(p))
        else:
            out.append(client.scatter([list(p)], hash=False)[0])   # one future per list
    return out


def _tree_merge(client, futures: list, split_every: int):
    """The merge of the statistics futures (in order) by a tree of merge tasks."""
    level = list(futures)
    while len(level) > 1:
        level = [level[i] if i + 1 == min(i + split_every, len(level)) else
                 client.submit(_merge, *level[i:i + split_every], pure=False)
                 for i in range(0, len(level), split_every)]
    return level[0]


def fit_partitioned(model, partitions, client=None, *, split_every: int = 4, jobs=None,
                    **fit_params):
    """Fit ``model`` on partitions of its training items on a Dask cluster; returns the model.

    Parameters
    ----------
    model : estimator
        An unfitted learner with the statistics protocol (:func:`learnable`).
    partitions : list or dask.bag.Bag
        The partitions, in order: Dask futures or ``dask.delayed`` objects of lists of items,
        a ``dask.bag.Bag`` (one partition per bag partition), or local lists of items (sent to
        the workers).
    client : distributed.Client, optional
        The cluster (default: the current client).
    split_every : int, default 4
        Statistics merged by one task of the merge tree.
    jobs : int, optional
        Threads per task for the compiled kernels (default: the cores of a worker's host
        divided among the task threads there, :func:`fastspectral.dask.parse.thread_plan`).
    **fit_params
        Keywords of ``model.fit_statistics``, passed to every pass's estimate on the client
        (not sent to the workers): ``dev=`` sentences of
        :class:`~fastspectral.lm.LatentBigramLM`, whose EM runs once on the merged bigram
        matrix and keeps the best iteration by dev perplexity, as ``fit(..., dev=)`` does.

    Returns
    -------
    estimator
        ``model``, fitted: the same model as ``model.fit`` (with ``fit_params``) on the
        concatenation of the partitions (floating-point sums may differ in their last bits);
        ``fit_time_`` is the whole run's seconds and ``partitioned_fit_`` a dict of timings
        (``passes``: per pass the seconds of the statistics and of the estimate).
    """
    if not learnable(model):
        raise TypeError(f"{type(model).__name__} cannot learn from partitions (no "
                        "sufficient_statistics)")
    if split_every < 2:
        raise ValueError(f"split_every must be >= 2, got {split_every!r}")
    model._check_fit_params(fit_params)
    client = _get_client(client)
    from .parse import thread_plan

    t0 = time.perf_counter()
    threads = thread_plan(client, jobs)
    raw = _as_futures(client, partitions)
    mfut = client.scatter(model, broadcast=True, hash=False)
    parts = [client.submit(_prepare, mfut, p, threads, pure=False) for p in raw]
    n_parts = len(parts)
    del raw
    context = None
    passes = []
    try:
        while True:
            t1 = time.perf_counter()
            cfut = None if context is None else client.scatter(context, broadcast=True,
                                                                hash=False)
            stats = [client.submit(_statistics, mfut, p, cfut, threads, pure=False)
                     for p in parts]
            merged = _tree_merge(client, stats, split_every)
            del stats
            st = merged.result()
            del merged, cfut
            t2 = time.perf_counter()
            context = model.fit_statistics(st, context, **fit_params)
            del st
            t3 = time.perf_counter()
            passes.append((t2 - t1, t3 - t2))
            logger.info(f"pass {len(passes)}: statistics of {len(parts)} partition(s) "
                        f"{t2 - t1:.2f} s, estimate {t3 - t2:.2f} s")
            if context is None:
                break
    finally:
        del parts, mfut
    model.fit_time_ = time.perf_counter() - t0
    model.partitioned_fit_ = {"partitions": n_parts, "passes": passes}
    return model


def read_partitions(client, paths, *, input_kind: str = "sentences", format=None,
                    encoding: str = "utf-8", reader=None, split: int = 1) -> list:
    """Futures of the items of ``paths`` read on the workers, in order: one partition per
    file, or ``split`` per file (each file read once, then cut into ``split`` equal parts).

    ``input_kind``: what the command line reads for a model kind (``"sentences"``: bracketed
    trees, ``"dependency"``: CoNLL or trees converted with head rules, ``"sequences"``: one
    sentence a line); ``reader``: a callable ``reader(path) -> items`` instead."""
    import os

    client = _get_client(client)
    if split < 1:
        raise ValueError(f"split must be >= 1, got {split!r}")
    out = []
    for path in paths:
        path = os.path.abspath(os.fspath(path))
        f = client.submit(_read, path, input_kind, format, encoding, reader, pure=False)
        if split == 1:
            out.append(f)
        else:
            out.extend(client.submit(_split, f, k, split, pure=False) for k in range(split))
    return out


def fit_files(model, paths, client=None, *, input_kind=None, format=None,
              encoding: str = "utf-8", reader=None, split: int = 1, split_every: int = 4,
              jobs=None, **fit_params):
    """Read ``paths`` on the workers (:func:`read_partitions`; ``input_kind`` defaults to the
    model's) and fit ``model`` on them (:func:`fit_partitioned`, with ``fit_params`` such as
    ``dev=``); returns the model."""
    client = _get_client(client)
    kind = input_kind or getattr(model, "input_kind", "sentences")
    parts = read_partitions(client, paths, input_kind=kind, format=format, encoding=encoding,
                            reader=reader, split=split)
    return fit_partitioned(model, parts, client, split_every=split_every, jobs=jobs,
                           **fit_params)
