"""Parse a ``dask.bag``, a Dask DataFrame column or a list of files with a saved model.

The model travels as its file, never as a pickled object: a task carries a small
:class:`ModelRef` (absolute path, modification time, size) and each worker process loads the
file once into a per-process cache keyed by that triple (:func:`worker_model`).  On a cluster
without a shared file system, :func:`ship_model` registers a worker plugin that carries the file's
bytes to every worker (new ones too) and loads it there once; :func:`parse_files` and the
command line (``fastspectral parse ... --scheduler ADDRESS``) always do so.

Threads: a task parses with ``jobs`` threads (OpenMP kernels; Numba and BLAS pools are limited to
the same number in the worker).  :func:`thread_plan` gives each worker ``cores // slots`` where
``slots`` is the number of task threads of all the workers on its host, so that workers x threads
never exceeds the cores; :func:`parse_bag` and :func:`parse_column` default to one thread per
task (the Dask workers' own threads give the parallelism).

Errors: a failing sentence raises :class:`PartitionError` naming the partition and the sentence
(and the file and line for :func:`parse_files`); sentences finished before it in a file are kept
in ``OUTPUT.part`` and ``resume=True`` continues from them.

Nothing here imports Dask until a function needs it.
"""
from __future__ import annotations

import collections
import io
import itertools
import logging
import os
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import NamedTuple

from ..errors import FastSpectralError, FormatError, ModelFileError

__all__ = ["ModelRef", "model_ref", "worker_model", "model_loads", "ship_model", "thread_plan",
           "PartitionError", "parse_bag", "parse_column", "parse_files", "ParseFilesResult"]

logger = logging.getLogger("fastspectral")

#: sentences per task of :func:`parse_files` on a Dask cluster (a few seconds of work per task:
#: per-task overhead stays far below 1 %, and the last tasks leave few workers idle)
DASK_CHUNK = 500
#: sentences per step of :func:`parse_files` in-process (as ``fastspectral parse``)
LOCAL_CHUNK = 2000


# ------------------------------------------------------------------------------------------------
# the model: a reference travels, each process loads the file once
# ------------------------------------------------------------------------------------------------
class ModelRef(NamedTuple):
    """A saved model as tasks carry it: the file's absolute path, ``st_mtime_ns`` and size."""

    path: str
    mtime_ns: int
    size: int

    @property
    def key(self) -> str:
        return f"{self.path}|{self.mtime_ns}|{self.size}"


def model_ref(model) -> ModelRef:
    """The :class:`ModelRef` of a model file path (a :class:`ModelRef` is returned as is).

    Models are passed by file: a fitted object would be pickled into every task."""
    if isinstance(model, ModelRef):
        return model
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(f"model must be the path of a saved model file, got "
                        f"{type(model).__name__} (save it with model.save(path): workers load "
                        "the file once each instead of unpickling the model in every task)")
    path = os.path.abspath(os.fspath(model))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such model file") from None
    if not os.path.isfile(path):
        raise ModelFileError(f"{path}: not a model file")
    return ModelRef(path, st.st_mtime_ns, st.st_size)


_MODELS: dict = {}                          # ModelRef.key -> loaded model
_LOCK = threading.Lock()
#: models loaded by this process, per key (the tests check: once per worker)
LOADS: collections.Counter = collections.Counter()


def _remember(ref: ModelRef, model) -> None:
    for key in [k for k in _MODELS if k.split("|", 1)[0] == ref.path and k != ref.key]:
        del _MODELS[key]                    # an older version of the same file
    _MODELS[ref.key] = model
    LOADS[ref.key] += 1


def worker_model(model):
    """The model of ``model`` (a path or :class:`ModelRef`) loaded once in this process.

    The cache is keyed by path, modification time and size: a rewritten file is loaded again.
    A worker that cannot see the file (no shared file system) needs :func:`ship_model`."""
    ref = model_ref(model) if not isinstance(model, ModelRef) else model
    with _LOCK:
        cached = _MODELS.get(ref.key)
        if cached is not None:
            return cached
        from ..io.modelfile import load

        try:
            st = os.stat(ref.path)
        except FileNotFoundError:
            raise ModelFileError(f"{ref.path}: model file not found on this worker "
                                 f"({_host()}); send it with fastspectral.dask.ship_model("
                                 "client, path) or put it on a shared file system") from None
        if (st.st_mtime_ns, st.st_size) != (ref.mtime_ns, ref.size):
            raise ModelFileError(f"{ref.path}: the file on this worker ({_host()}) is not the "
                                 "client's (changed since the job started, or another copy); "
                                 "send it with fastspectral.dask.ship_model(client, path)")
        model_obj = load(ref.path)
        _remember(ref, model_obj)
        return model_obj


def model_loads() -> dict:
    """``{ModelRef.key: times loaded}`` in this process (``client.run(model_loads)`` shows
    each worker's: one load per model file and worker)."""
    return dict(LOADS)


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


def _host() -> str:
    import socket

    return socket.gethostname()


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
# errors
# ------------------------------------------------------------------------------------------------
class PartitionError(FastSpectralError, ValueError):
    """A sentence that could not be parsed on a worker: names the partition and the sentence
    (index in the partition), and the file and line when the sentences came from a file."""

    def __init__(self, detail, partition=None, sentence=None, path=None, line=None):
        self.detail = detail
        self.partition = partition
        self.sentence = sentence
        self.path = path
        self.line = line
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        else:
            parts = []
            if partition is not None:
                parts.append(f"partition {partition}")
            if sentence is not None:
                parts.append(f"sentence {sentence}")
            where = ", ".join(parts) + ": " if parts else ""
        super().__init__(where + detail)

    def __reduce__(self):
        return (type(self), (self.detail, self.partition, self.sentence, self.path, self.line))


def _describe(exc) -> str:
    if isinstance(exc, FormatError):
        return exc.message
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


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


def _parse_sentences(model, raw, jobs, progress=None) -> list:
    """RawSentences -> output lines (bracketed trees; '' for an empty sentence or no parse),
    exactly as ``fastspectral parse`` writes them."""
    todo = [i for i, s in enumerate(raw) if s.words]
    words = [raw[i].words for i in todo]
    tags = None
    if any(raw[i].tags is not None for i in todo):
        tags = [raw[i].tags for i in todo]
    trees = model.parse(words, tags=tags, jobs=jobs, progress=progress) if words else []
    if len(trees) != len(words):
        raise RuntimeError(f"the model returned {len(trees)} parses for {len(words)} sentences")
    out = [""] * len(raw)
    for i, t in zip(todo, trees):
        out[i] = "" if t is None else str(t)
    return out


def _parse_any(model, items, jobs, progress=None) -> list:
    if getattr(model, "input_kind", "sentences") == "sentences":
        return _parse_sentences(model, items, jobs, progress)
    return model.parse(list(items), jobs=jobs, progress=progress)


def _located(model, items, jobs, partition=None, path=None, progress=None) -> list:
    """Parse ``items``; a failure is raised as a PartitionError naming the first sentence
    that fails alone (and its file line when ``path`` is given)."""
    try:
        return _parse_any(model, items, jobs, progress)
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as batch_exc:
        for k, item in enumerate(items):
            try:
                _parse_any(model, [item], 1)
            except Exception as exc:
                line = getattr(item, "line", None) if path is not None else None
                if isinstance(exc, FormatError) and exc.line is not None and path is not None:
                    line = exc.line
                raise PartitionError(_describe(exc), partition, k, path, line) from None
        raise PartitionError(_describe(batch_exc), partition, None, path, None) from None


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
@dataclass
class ParseFilesResult:
    """What :func:`parse_files` did."""

    outputs: list                  #: output paths, in input order (None: standard output)
    sentences: int = 0             #: sentences parsed by this run
    seconds: float = 0.0           #: wall time of the parse (after the cluster was ready)
    tasks: int = 0                 #: chunks parsed
    complete: list = field(default_factory=list)   #: outputs found finished (resume), kept
    resumed: dict = field(default_factory=dict)    #: output -> sentences already in its .part
    interrupted: bool = False      #: stopped by ``stop()`` (finished sentences kept in .part)
    workers: int = 0               #: Dask workers (0: in-process)
    threads: dict = field(default_factory=dict)    #: thread plan used (Dask)


def durable_write(out, text: str) -> None:
    """``out.write(text)`` (a SafeOutput: flushed) and fsync'd, so that a chunk written
    survives a lost machine, not only a killed process (one fsync a chunk: negligible)."""
    out.write(text)
    raw = getattr(out, "_raw", None)
    if raw is not None and not raw.closed:
        try:
            os.fsync(raw.fileno())
        except OSError:         # a pipe or a device: nothing to make durable
            pass


def count_lines(path) -> int:
    """Lines of a text file (``.gz`` decompressed), counted on the raw bytes."""
    from ..trees.files import open_binary

    n = 0
    last = b"\n"
    with open_binary(path) as fh:
        while True:
            block = fh.read(1 << 20)
            if not block:
                break
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def model_input_kind(path) -> tuple[str, str]:
    """``(kind, input_kind)`` of a model file, reading its header only."""
    import json

    import numpy as np

    from .. import models
    from ..io.modelfile import load_model_file

    try:
        with np.load(path, allow_pickle=False) as z:
            header = json.loads(bytes(z["__meta__"]).decode("utf-8"))
        kind = header["kind"]
        entry = models.get(kind)
        if header.get("format") != "fastspectral-model" or header.get("version") != 1:
            raise ValueError
    except Exception:
        kind, _, _ = load_model_file(path)      # the loader's own error message
        try:
            entry = models.get(kind)
        except (KeyError, TypeError):
            raise ModelFileError(f"{path}: unknown model kind {kind!r}") from None
    return kind, entry.input_kind


def _is_stdio(path) -> bool:
    return path is None or path == "-"


class _FileJob:
    """One input file -> one output: its reader, its writer and its place in the run."""

    def __init__(self, inp, out, input_kind, tagged, encoding, fmt):
        self.input = inp
        self.output = out
        self.name = "<stdin>" if _is_stdio(inp) else os.fspath(inp)
        self.input_kind = input_kind
        self.tagged = tagged
        self.encoding = encoding
        self.records = "lines" if input_kind == "sentences" else "blocks"
        self.skip = 0
        self.complete = False
        self.sink = None
        self._source = None
        self._writer = None
        self._fmt = fmt

    def source(self):
        if self._source is None:
            from ..trees.files import read_stdin

            if _is_stdio(self.input):
                self._source = (read_stdin() if self.input_kind == "dependency"
                                else getattr(sys.stdin, "buffer", sys.stdin))
            else:
                self._source = os.fspath(self.input)
        return self._source

    def check(self):
        """Refuse the wrong kind of file before any work (and pick the dependency writer)."""
        from ..trees import conll
        from ..trees.readers import detect_format

        writers = {"conllu": conll.write_conllu, "conllx": conll.write_conllx,
                   "malttab": conll.write_malttab}
        if self.input_kind == "sentences":
            if _is_stdio(self.input):
                return
            try:
                fmt = detect_format(self.input, self.encoding)
            except FormatError:
                return
            if fmt in writers:
                raise FormatError(f"a {fmt} dependency file, but this model parses plain text "
                                  "(one tokenised sentence a line)", self.name)
            return
        fmt = self._fmt or detect_format(self.source(), self.encoding)
        if fmt not in writers:
            raise FormatError(f"this model parses dependency files (CoNLL-U, CoNLL-X or "
                              f"Malt-TAB), not {fmt!r}", self.name)
        self._fmt = fmt
        self._writer = writers[fmt]

    def total(self):
        if self.input_kind != "sentences" or _is_stdio(self.input):
            return None
        return count_lines(self.input)

    def items(self):
        from ..trees.readers import iter_sentences, read_treebank

        if self.input_kind == "sentences":
            stream = iter_sentences(self.source(), tagged=self.tagged, encoding=self.encoding)
        else:
            stream = read_treebank(self.source(), format=self._fmt, encoding=self.encoding,
                                   heads_optional=True)
        return itertools.islice(stream, self.skip, None)

    def text(self, results) -> str:
        if self.input_kind == "sentences":
            return "".join(line + "\n" for line in results)
        buf = io.StringIO()
        self._writer(results, buf)
        return buf.getvalue()


class _Done:
    """An in-process result with the interface of a Dask future."""

    def __init__(self, fn, *args, **kwargs):
        try:
            self._value, self._exc = fn(*args, **kwargs), None
        except BaseException as exc:   # re-raised by result()
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._value, self._exc = None, exc

    def done(self):
        return True

    def result(self):
        if self._exc is not None:
            raise self._exc
        return self._value

    def cancel(self):
        pass


def parse_files(inputs, model, outdir=None, *, outputs=None, client=None, jobs=None,
                chunk_size=None, resume=False, tagged=None, encoding="utf-8", format=None,
                progress=None, stop=None) -> ParseFilesResult:
    """Parse files with a saved model, one output per input, on a Dask cluster or in-process.

    Each input is read as a stream and cut into chunks of ``chunk_size`` sentences; a chunk is
    one task.  Finished chunks are written in input order to ``OUTPUT.part``, renamed to
    ``OUTPUT`` when the file is done (:class:`fastspectral.io.output.SafeOutput`), so the
    client holds a bounded number of chunks whatever the corpus size, and an interrupted run
    (``stop()``, a failure, a killed client) continues with ``resume=True`` after the last
    complete sentence, giving the same bytes as an uninterrupted run.

    Parameters
    ----------
    inputs : list of paths
        Sentence files (one tokenised sentence a line, ``word/TAG`` tokens per ``tagged``) for
        sentence models, CoNLL-U / CoNLL-X / Malt-TAB files for dependency models; ``.gz``
        accepted; ``"-"`` is standard input.
    model : path
        The model file; each worker process loads it once (the file is shipped to the
        workers: :func:`ship_model`).
    outdir : path, optional
        Folder of the outputs, each named like its input (created if missing).
    outputs : list of paths, optional
        Explicit output paths instead of ``outdir`` (``"-"``: standard output).
    client : distributed.Client, optional
        The cluster; ``None`` parses in this process with ``jobs`` threads.
    jobs : int, optional
        Parsing threads per task (default: :func:`thread_plan` with a client, every core
        in-process).
    chunk_size : int, optional
        Sentences per task (default 500 on a cluster, 2000 in-process).
    resume : bool
        Continue from ``OUTPUT.part`` files; outputs already finished (``OUTPUT`` present, no
        ``OUTPUT.part``) are kept and not parsed again.
    progress : callable, optional
        ``progress(done, total)`` with sentences parsed by this run (``total`` None when
        unknown).
    stop : callable, optional
        Polled between chunks: when it returns True, no chunk is submitted any more, the
        chunks in flight are finished and written, and the run returns with
        ``interrupted=True`` (the unfinished output stays ``OUTPUT.part``).
    """
    from ..io.output import SafeOutput

    inputs = list(inputs)
    if not inputs:
        raise ValueError("no input files")
    if outputs is None:
        if outdir is None:
            raise ValueError("give outdir or outputs")
        outputs = _outputs_in(inputs, outdir)
    outputs = [None if _is_stdio(o) else os.fspath(o) for o in outputs]
    if len(outputs) != len(inputs):
        raise ValueError(f"{len(outputs)} outputs for {len(inputs)} inputs")
    ref = model_ref(model)
    _, input_kind = model_input_kind(ref.path)
    if input_kind not in ("sentences", "dependency"):
        raise FastSpectralError(f"{ref.path} holds a sequence model, which does not parse "
                                "(sequence models are scored with 'fastspectral lm eval')")
    _check_paths(inputs, outputs, ref.path)
    jobs_list = [_FileJob(i, o, input_kind, tagged, encoding, format)
                 for i, o in zip(inputs, outputs)]
    result = ParseFilesResult(outputs=outputs)
    for job in jobs_list:
        if resume and job.output is not None:
            from ..io.output import is_regular_target, part_path

            if (is_regular_target(job.output) and os.path.exists(job.output)
                    and not os.path.exists(part_path(job.output))):
                job.complete = True
                result.complete.append(job.output)
                continue
            job.skip = SafeOutput.resume_point(job.output, records=job.records)
            if job.skip:
                result.resumed[job.output] = job.skip
        job.check()
    todo = [j for j in jobs_list if not j.complete]
    total = None
    if progress is not None:
        counts = [j.total() for j in todo]
        if all(c is not None for c in counts):
            total = max(0, sum(counts) - sum(j.skip for j in todo))

    if client is None:
        chunk_size = chunk_size or LOCAL_CHUNK
        model_obj = worker_model(ref)

        def submit(items, path, base):
            def prog(k, _total=None):
                if progress is not None:
                    progress(base + k, total)
            return _Done(_located, model_obj, items, jobs, path=path, progress=prog)
        window = 1
    else:
        chunk_size = chunk_size or DASK_CHUNK
        ship_model(client, ref)
        threads = thread_plan(client, jobs)
        result.workers = len(threads)
        result.threads = dict(threads)
        window = max(2, 2 * sum(int(w.get("nthreads") or 1)
                                for w in _scheduler_info(client).values()))

        def submit(items, path, base):
            return client.submit(_file_chunk, ref, items, threads, path, pure=False)

    t0 = time.perf_counter()
    _pipeline(todo, submit, window, chunk_size, progress, total, stop, result)
    result.seconds = time.perf_counter() - t0
    return result


def _outputs_in(inputs, outdir) -> list:
    outdir = os.fspath(outdir)
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise ValueError(f"output folder {outdir} is a file")
    outs, seen = [], {}
    for inp in inputs:
        if _is_stdio(inp):
            raise ValueError("standard input ('-') has no name to give its output in a folder: "
                             "parse it alone with -o FILE")
        name = os.path.basename(os.fspath(inp).rstrip(os.sep))
        if name in seen:
            raise ValueError(f"{seen[name]} and {inp} would both be written to "
                             f"{os.path.join(outdir, name)}: inputs in one run need distinct "
                             "file names")
        seen[name] = inp
        outs.append(os.path.join(outdir, name))
    os.makedirs(outdir, exist_ok=True)
    return outs


def _check_paths(inputs, outputs, model_path) -> None:
    for inp in inputs:
        if _is_stdio(inp):
            continue
        if not os.path.exists(inp):
            raise FileNotFoundError(2, "input file not found", os.fspath(inp))
        if os.path.isdir(inp):
            raise IsADirectoryError(21, "input file is a directory", os.fspath(inp))
    if sum(1 for i in inputs if _is_stdio(i)) > 1:
        raise ValueError("standard input ('-') can be given once")
    if sum(1 for o in outputs if o is None) > 1:
        raise ValueError("standard output can take one output only")
    for out in outputs:
        if out is None or not os.path.exists(out):
            continue
        if os.path.isdir(out):
            raise IsADirectoryError(21, "output is a directory", out)
        for other in [model_path] + [i for i in inputs if not _is_stdio(i)]:
            if os.path.samefile(out, other):
                raise ValueError(f"output {out} is also an input file: refusing to overwrite it")


def _pipeline(todo, submit, window, chunk_size, progress, total, stop, result) -> None:
    """Submit chunks (at most ``window`` in flight), write the results in input order."""
    from ..io.output import SafeOutput

    pending: collections.deque = collections.deque()   # [job, future or None (end), n]
    state = {"job": None, "out": None, "done": 0}

    def open_for(job):
        if state["job"] is not job:
            state["out"] = SafeOutput(job.output, resume=job.skip > 0)
            state["job"] = job

    def consume():
        job, fut, n = pending.popleft()
        open_for(job)
        if fut is None:                      # end of this file
            state["out"].commit()
            state["job"] = state["out"] = None
            return
        durable_write(state["out"], job.text(fut.result()))
        state["done"] += n
        result.sentences += n
        result.tasks += 1
        if progress is not None:
            progress(state["done"], total)

    def work():
        for job in todo:
            for chunk in chunked(job.items(), chunk_size):
                yield job, chunk
            yield job, None

    chunks = work()
    try:
        while True:
            if stop is not None and stop():
                while pending:      # the chunks in flight are finished and kept
                    consume()
                result.interrupted = True
                break
            try:
                job, chunk = next(chunks)
            except StopIteration:
                if not pending:
                    break
                consume()
                continue
            except BaseException:
                # a reader's error (a bad line): keep every chunk before it, then report it
                try:
                    while pending:
                        consume()
                except Exception:
                    pass
                raise
            while len(pending) >= window:
                consume()
            if chunk is None:
                pending.append((job, None, 0))
            else:
                pending.append((job, submit(chunk, job.name, state["done"]), len(chunk)))
    finally:
        for _, fut, _ in pending:
            if fut is not None:
                fut.cancel()
        if state["out"] is not None:
            state["out"].close()


def chunked(iterable, size: int):
    """The items of ``iterable`` in consecutive lists, read lazily (one chunk in memory).

    Parameters
    ----------
    iterable : iterable
        The items (sentences), possibly a stream.
    size : int
        Items per chunk (>= 1).

    Yields
    ------
    list
        The next ``size`` items (the last chunk may be shorter; none for no items).
    """
    it = iter(iterable)
    while True:
        chunk = list(itertools.islice(it, size))
        if not chunk:
            return
        yield chunk
