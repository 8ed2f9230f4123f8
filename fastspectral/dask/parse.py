"""Parse a ``dask.bag``, a Dask DataFrame column or a list of files with a saved model.

The model travels as its file, never as a pickled object: a task carries a small
:class:`~fastspectral.io.pipeline.ModelRef` (absolute path, modification time, size) and each
worker process loads the file once into a per-process cache keyed by that triple
(:func:`~fastspectral.io.pipeline.worker_model`).  On a cluster without a shared file system,
:func:`ship_model` registers a worker plugin that carries the file's bytes to every worker
(new ones too) and loads it there once; :func:`parse_files` and the command line
(``fastspectral parse ... --scheduler ADDRESS``) always do so.

Threads: a task parses with ``jobs`` threads (OpenMP kernels; Numba and BLAS pools are limited to
the same number in the worker).  :func:`thread_plan` gives each worker ``cores // slots`` where
``slots`` is the number of task threads of all the workers on its host, so that workers x threads
never exceeds the cores; :func:`parse_bag` and :func:`parse_column` default to one thread per
task (the Dask workers' own threads give the parallelism).

Files: :func:`parse_files` is the file pipeline of :mod:`fastspectral.io.pipeline` (chunks
written in order to ``OUTPUT.part``, resumable) with :class:`ClusterExecutor`: each chunk is a
task.

Errors: a failing sentence raises :class:`~fastspectral.io.pipeline.PartitionError` naming the
partition and the sentence (and the file and line for :func:`parse_files`); sentences finished
before it in a file are kept in ``OUTPUT.part`` and ``resume=True`` continues from them.

Nothing here imports Dask until a function needs it.
"""
from __future__ import annotations

import collections
import logging
import os
import sys
import weakref

from ..errors import FormatError, ModelFileError
from ..io import pipeline as _pipeline
from ..io.pipeline import (_LOCK, _MODELS, ModelRef, ParseFilesResult, PartitionError,
                           _located, _remember, model_loads, model_ref, worker_model)

__all__ = ["ModelRef", "model_ref", "worker_model", "model_loads", "ship_model", "thread_plan",
           "PartitionError", "parse_bag", "parse_column", "parse_files", "ParseFilesResult",
           "ClusterExecutor"]

logger = logging.getLogger("fastspectral")

#: sentences per task of :func:`parse_files` on a Dask cluster (a few seconds of work per task:
#: per-task overhead stays far below 1 %, and the last tasks leave few workers idle)
DASK_CHUNK = 500


# ------------------------------------------------------------------------------------------------
# the model file shipped to the workers
# ------------------------------------------------------------------------------------------------

def _install_model(ref: ModelRef, data: bytes, folder=None) -> None:
    """Load a model from the bytes of its file into this process's cache (worker plugin)."""
    import tempfile

    from ..io.modelfile import load

    with _LOCK:
        if ref.key in _MODELS:
            return
        fd, tmp = tempfile.mkstemp(suffix=".fsm", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            model_obj = load(tmp)
        except ModelFileError as exc:
            raise ModelFileError(str(exc).replace(tmp, ref.path)) from None
        finally:
            os.remove(tmp)
        _remember(ref, model_obj)




def _make_plugin_class():
    from distributed.diagnostics.plugin import WorkerPlugin

    class ModelPlugin(WorkerPlugin):
        """Carries a model file's bytes to every worker (present and future) and loads it
        there once, into the cache of :func:`worker_model`."""

        def __init__(self, ref: ModelRef, data: bytes):
            self.ref = ref
            self.data = data
            self.name = f"fastspectral-model-{abs(hash(ref.key)):x}"

        def setup(self, worker):
            _install_model(self.ref, self.data, getattr(worker, "local_directory", None))

    ModelPlugin.__module__ = __name__
    return ModelPlugin


def __getattr__(name):
    # the plugin class needs distributed, imported only when a plugin is made (or unpickled)
    if name == "ModelPlugin":
        cls = _make_plugin_class()
        globals()["ModelPlugin"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_SHIPPED = weakref.WeakKeyDictionary()     # client -> model keys shipped to it


def ship_model(client, model) -> ModelRef:
    """Send the model file to every worker of ``client`` (and to workers that join later) and
    load it there once; returns its :class:`ModelRef` for the tasks.  Shipping the same file
    again to the same client does nothing."""
    ref = model_ref(model)
    try:
        shipped = _SHIPPED.setdefault(client, set())
    except TypeError:       # not weak-referenceable: ship every time (setup skips a loaded key)
        shipped = set()
    if ref.key in shipped:
        return ref
    with open(ref.path, "rb") as fh:
        data = fh.read()
    plugin = __getattr__("ModelPlugin")(ref, data)
    register = getattr(client, "register_plugin", None)
    if register is not None:
        register(plugin, name=plugin.name)
    else:   # distributed < 2023.9
        client.register_worker_plugin(plugin, name=plugin.name)
    shipped.add(ref.key)
    return ref


def _auto_ship(model, ship):
    """``ship="auto"``: ship when a distributed client is the default scheduler."""
    ref = model_ref(model)
    if ship is False:
        return ref
    client = None
    if ship is True or ship == "auto":
        try:
            from distributed import default_client
            client = default_client()
        except (ImportError, ValueError):
            if ship is True:
                raise ValueError("ship=True needs a distributed Client") from None
    elif ship is not None:
        client = ship                        # a Client given explicitly
    if client is not None:
        ship_model(client, ref)
    return ref


# ------------------------------------------------------------------------------------------------
# threads
# ------------------------------------------------------------------------------------------------
def thread_plan(client, jobs=None) -> dict:
    """Parsing threads per task for each worker of ``client``: ``{address: threads}``.

    A host's cores (affinity-aware, ``FASTSPECTRAL_THREADS`` honoured: asked to the workers)
    are divided by the task threads of all the workers on that host, so that workers x task
    threads x parsing threads <= cores; ``jobs`` asks for more threads per task, capped so."""
    from .._threads import available_cores

    info = _scheduler_info(client)
    cores = client.run(available_cores)
    hosts: dict = collections.defaultdict(list)
    for addr, w in info.items():
        hosts[w.get("host") or addr.rsplit(":", 1)[0]].append(addr)
    plan = {}
    for addrs in hosts.values():
        slots = sum(int(info[a].get("nthreads") or 1) for a in addrs)
        host_cores = max(int(cores.get(a, 1)) for a in addrs)
        fair = max(1, host_cores // max(slots, 1))
        want = fair if jobs is None else int(jobs)
        if want > fair:
            logger.warning(f"--jobs {want} capped to {fair} thread(s) per task on "
                           f"{info[addrs[0]].get('host', addrs[0])}: {slots} task threads on "
                           f"{host_cores} cores")
        for a in addrs:
            plan[a] = min(want, fair)
    return plan


def _scheduler_info(client) -> dict:
    try:
        return client.scheduler_info(n_workers=-1)["workers"]
    except TypeError:   # distributed before the n_workers argument
        return client.scheduler_info()["workers"]


_LIMITED: list = []


def _task_threads(threads) -> int:
    """Threads of this task: an int, or a :func:`thread_plan` looked up by this worker."""
    if isinstance(threads, dict):
        try:
            from distributed import get_worker
            threads = threads.get(get_worker().address, 1)
        except (ImportError, ValueError):
            threads = 1
    n = max(1, int(threads))
    _limit_pools(n)
    return n


def _limit_pools(n: int) -> None:
    """Numba's threads (for this thread) and BLAS's (for this process) limited to ``n``."""
    numba = sys.modules.get("numba")
    if numba is not None:
        try:
            numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
        except Exception:   # numba without a threading layer
            pass
    if _LIMITED != [n]:
        try:
            from threadpoolctl import threadpool_limits
            threadpool_limits(limits=n, user_api="blas")
        except Exception:   # threadpoolctl missing or no BLAS found: nothing to limit
            pass
        _LIMITED[:] = [n]


# ------------------------------------------------------------------------------------------------
# what runs on a worker
# ------------------------------------------------------------------------------------------------
def _as_raw(items, tagged, partition):
    """Bag / column items -> RawSentence: a string is a line ('word/TAG' tokens per
    ``tagged``, as in ``fastspectral parse``), a list of strings the words, a pair
    ``(words, tags)`` or a RawSentence its words and tags."""
    from ..trees.readers import RawSentence, iter_sentences

    out = []
    for k, item in enumerate(items):
        if isinstance(item, str):
            try:
                (raw,) = list(iter_sentences([item.replace("\n", " ")], tagged=tagged))
            except FormatError as exc:
                raise PartitionError(exc.message, partition, k) from None
            out.append(RawSentence(raw.words, raw.tags, k + 1))
            continue
        words, tags = item, None
        if isinstance(item, RawSentence) or (isinstance(item, tuple) and len(item) == 2 and
                                             not isinstance(item[0], str)):
            words, tags = item[0], item[1]
        if not hasattr(words, "__iter__") or isinstance(words, bytes):
            raise PartitionError(f"expected a string or a list of words, got "
                                 f"{type(item).__name__}", partition, k)
        words = [w for w in words]
        for w in words:
            if not isinstance(w, str) or not w or any(ch.isspace() for ch in w):
                raise PartitionError(f"invalid token {w!r} (tokens are non-empty strings "
                                     "without whitespace)", partition, k)
        if tags is not None:
            tags = list(tags)
            if len(tags) != len(words):
                raise PartitionError(f"{len(tags)} tags for {len(words)} words", partition, k)
        out.append(RawSentence(words, tags, k + 1))
    return out


def _bag_partition(items, index, ref, tagged, threads):
    """One bag partition -> its results (runs on a worker)."""
    part = index[0] if isinstance(index, (list, tuple)) and index else index
    items = list(items)
    model = worker_model(ref)
    jobs = _task_threads(threads)
    if getattr(model, "input_kind", "sentences") == "sentences":
        items = _as_raw(items, tagged, part)
    return _located(model, items, jobs, partition=part)


def _file_chunk(ref, items, threads, path):
    """One chunk of a file -> its results (runs on a worker)."""
    model = worker_model(ref)
    return _located(model, items, _task_threads(threads), path=path)


# ------------------------------------------------------------------------------------------------
# bags and DataFrame columns
# ------------------------------------------------------------------------------------------------
def parse_bag(bag, model, *, tagged=None, jobs=1, ship="auto"):
    """Parse the sentences of a ``dask.bag.Bag`` with a saved model; returns a Bag of results
    in the same partitions and order.

    Parameters
    ----------
    bag : dask.bag.Bag
        Sentences: strings (a line: whitespace-separated tokens, ``word/TAG`` tokens read per
        ``tagged`` as by ``fastspectral parse``; ``db.read_text(paths)`` gives such lines),
        lists of words, or ``(words, tags)`` pairs; ``DepSentence`` objects for dependency
        models.
    model : str or os.PathLike
        A model file (``model.save(path)``); each worker process loads it once.
    tagged : bool or None
        ``word/TAG`` tokens in string items: None = per line when every token has a tag,
        True = required, False = never split.
    jobs : int or dict, default 1
        Parsing threads per task (or a :func:`thread_plan`).
    ship : "auto", bool or Client
        Send the model file to the workers (:func:`ship_model`): "auto" does when a
        distributed client is the default scheduler; False relies on a shared file system.

    Returns
    -------
    dask.bag.Bag
        Bracketed trees (``str``; ``""`` for an empty sentence), or parsed ``DepSentence``.
        A failure raises :class:`PartitionError` with the partition and the sentence.
    """
    import dask.bag as db

    ref = _auto_ship(model, ship)
    index = db.from_sequence(range(bag.npartitions), npartitions=bag.npartitions)
    return bag.map_partitions(_bag_partition, index, ref, tagged, jobs)


def _series_partition(part, ref, tagged, threads, name, partition_info=None):
    import pandas as pd

    number = None if partition_info is None else partition_info.get("number")
    out = _bag_partition(list(part), number, ref, tagged, threads)
    return pd.Series(out, index=part.index, name=name, dtype=object)


def parse_column(data, model, column=None, *, tagged=None, jobs=1, ship="auto"):
    """Parse a Dask DataFrame column (or Series) of tokenised sentences with a saved model;
    returns a Series of bracketed trees (``""`` for an empty sentence), aligned with ``data``'s
    index.  Items are strings (one sentence, ``word/TAG`` tokens per ``tagged``) or lists of
    words; see :func:`parse_bag` for the other parameters.  A failure raises
    :class:`PartitionError` with the partition and the sentence."""
    ref = _auto_ship(model, ship)
    series = data if column is None else data[column]
    if getattr(series, "ndim", 1) != 1:
        raise TypeError("parse_column() of a DataFrame needs column=NAME")
    return series.map_partitions(_series_partition, ref, tagged, jobs, "tree",
                                 meta=("tree", object))


# ------------------------------------------------------------------------------------------------
# files
# ------------------------------------------------------------------------------------------------
class ClusterExecutor:
    """The chunks of :func:`fastspectral.io.pipeline.parse_files` as tasks of a Dask cluster:
    the model file shipped to the workers, ``jobs`` threads per task per :func:`thread_plan`,
    twice the cluster's task threads in flight."""

    chunk_size = DASK_CHUNK

    def __init__(self, client):
        self.client = client

    def start(self, ref, jobs, progress, total, result):
        client = self.client
        ship_model(client, ref)
        threads = thread_plan(client, jobs)
        result.workers = len(threads)
        result.threads = dict(threads)
        window = max(2, 2 * sum(int(w.get("nthreads") or 1)
                                for w in _scheduler_info(client).values()))

        def submit(items, path, base):
            return client.submit(_file_chunk, ref, items, threads, path, pure=False)
        return submit, window


def parse_files(inputs, model, outdir=None, *, outputs=None, client=None, jobs=None,
                chunk_size=None, resume=False, tagged=None, encoding="utf-8", format=None,
                progress=None, stop=None) -> ParseFilesResult:
    """Parse files with a saved model, one output per input, on a Dask cluster (``client``)
    or, with ``client=None``, in this process: :func:`fastspectral.io.pipeline.parse_files`
    (see it for the parameters) with :class:`ClusterExecutor` (``chunk_size`` default 500
    sentences a task, ``jobs`` default :func:`thread_plan`)."""
    return _pipeline.parse_files(
        inputs, model, outdir, outputs=outputs, jobs=jobs, chunk_size=chunk_size,
        resume=resume, tagged=tagged, encoding=encoding, format=format, progress=progress,
        stop=stop, executor=None if client is None else ClusterExecutor(client))

