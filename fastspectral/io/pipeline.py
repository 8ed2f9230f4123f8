"""The file pipeline of ``fastspectral parse``: files in, one output per input, resumable.

Kept as one module (about 750 lines): one pipeline as both front ends drive it (the ``parse``
command in-process, :mod:`fastspectral.dask.parse` on a cluster): a chunk task needs the model
cache, the located parse and :class:`PartitionError`, a file job the chunking, the durable
writes and the resume checks, and the executor protocol ties them; apart, each front end would
import the same pipeline from several modules.

:func:`parse_files` reads each input as a stream, cuts it into chunks of sentences, parses the
chunks (in this process, or through an *executor*: :mod:`fastspectral.dask.parse` gives the
one that runs the chunks as tasks on a Dask cluster) and writes them in input order to
``OUTPUT.part`` (:class:`fastspectral.io.output.SafeOutput`), renamed over ``OUTPUT`` when the
file is done.  An interrupted run continues with ``resume=True`` after the last complete
sentence, giving the bytes of an uninterrupted run; the ``.part`` file is checked against the
input and the model first (:func:`part_origin`, :func:`check_resume`).

Also here, for every parsing front end: the per-process model cache (:func:`worker_model`,
keyed by :class:`ModelRef`), :class:`PartitionError` (a sentence that failed, with its file
and line), :func:`chunked`, :func:`count_lines`, :func:`durable_write` and the checks of
input and output paths (:func:`outputs_in`, :func:`check_paths`).

Nothing here imports Dask.
"""
from __future__ import annotations

import collections
import hashlib
import io
import itertools
import json
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import NamedTuple

from ..errors import FastSpectralError, FormatError, ModelFileError

__all__ = ["ModelRef", "model_ref", "worker_model", "model_loads", "PartitionError",
           "ParseFilesResult", "parse_files", "LocalExecutor", "durable_write", "count_lines",
           "model_input_kind", "chunked", "outputs_in", "check_paths", "part_origin",
           "check_resume", "ResumeError", "skip_records"]

logger = logging.getLogger("fastspectral")

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
        from .modelfile import load

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




def _host() -> str:
    import socket

    return socket.gethostname()



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
# parsing a chunk (in this process or on a worker)
# ------------------------------------------------------------------------------------------------
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
    from .modelfile import load_model_file

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
        self.origin = None
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
        if not self.skip:
            return stream
        return skip_records(stream, self.skip, self.output, self.name)

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


class LocalExecutor:
    """Chunks parsed in this process, one at a time, with ``jobs`` threads (the executor of
    :func:`parse_files`; :class:`fastspectral.dask.parse.ClusterExecutor` is the Dask one).

    ``start(ref, jobs, progress, total, result)`` returns ``(submit, window)``:
    ``submit(items, path, base)`` gives a future-like object (``done``, ``result``,
    ``cancel``) of the chunk's output records, ``window`` the chunks kept in flight."""

    chunk_size = LOCAL_CHUNK

    def start(self, ref, jobs, progress, total, result):
        model_obj = worker_model(ref)

        def submit(items, path, base):
            def prog(k, _total=None):
                if progress is not None:
                    progress(base + k, total)
            return _Done(_located, model_obj, items, jobs, path=path, progress=prog)
        return submit, 1


def parse_files(inputs, model, outdir=None, *, outputs=None, jobs=None, chunk_size=None,
                resume=False, tagged=None, encoding="utf-8", format=None, progress=None,
                stop=None, executor=None) -> ParseFilesResult:
    """Parse files with a saved model, one output per input (in this process, or through
    ``executor``: :func:`fastspectral.dask.parse_files` parses on a Dask cluster).

    Each input is read as a stream and cut into chunks of ``chunk_size`` sentences (a chunk is
    one task on a cluster).  Finished chunks are written in input order to ``OUTPUT.part``, renamed to
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
        The model file, loaded once per process (:func:`worker_model`; the Dask executor
        ships the file to its workers).
    outdir : path, optional
        Folder of the outputs, each named like its input (created if missing).
    outputs : list of paths, optional
        Explicit output paths instead of ``outdir`` (``"-"``: standard output).
    jobs : int, optional
        Parsing threads per chunk (default: the executor's; every core in-process).
    chunk_size : int, optional
        Sentences per chunk (default: the executor's ``chunk_size``, 2000 in-process).
    resume : bool
        Continue from ``OUTPUT.part`` files; outputs already finished (``OUTPUT`` present, no
        ``OUTPUT.part``) are kept and not parsed again.  A ``.part`` file written from
        another input or model, or holding more sentences than its input, is refused
        (:class:`ResumeError`, before any work).
    progress : callable, optional
        ``progress(done, total)`` with sentences parsed by this run (``total`` None when
        unknown).
    stop : callable, optional
        Polled between chunks: when it returns True, no chunk is submitted any more, the
        chunks in flight are finished and written, and the run returns with
        ``interrupted=True`` (the unfinished output stays ``OUTPUT.part``).
    executor : object, optional
        Where the chunks are parsed (:class:`LocalExecutor` by default).
    """
    from .output import is_regular_target, part_path

    inputs = list(inputs)
    if not inputs:
        raise ValueError("no input files")
    if outputs is None:
        if outdir is None:
            raise ValueError("give outdir or outputs")
        outputs = outputs_in(inputs, outdir)
    outputs = [None if _is_stdio(o) else os.fspath(o) for o in outputs]
    if len(outputs) != len(inputs):
        raise ValueError(f"{len(outputs)} outputs for {len(inputs)} inputs")
    ref = model_ref(model)
    _, input_kind = model_input_kind(ref.path)
    if input_kind not in ("sentences", "dependency"):
        raise FastSpectralError(f"{ref.path} holds a sequence model, which does not parse "
                                "(sequence models are scored with 'fastspectral lm eval')")
    check_paths(inputs, outputs, ref.path)
    jobs_list = [_FileJob(i, o, input_kind, tagged, encoding, format)
                 for i, o in zip(inputs, outputs)]
    result = ParseFilesResult(outputs=outputs)
    digest = model_digest(ref.path)
    for job in jobs_list:
        if job.output is not None and is_regular_target(job.output):
            job.origin = part_origin(job.input, ref.path, digest)
        if resume and job.output is not None:
            if (is_regular_target(job.output) and os.path.exists(job.output)
                    and not os.path.exists(part_path(job.output))):
                job.complete = True
                result.complete.append(job.output)
                continue
            length = job.total() if os.path.exists(part_path(job.output)) else None
            job.skip = check_resume(job.output, job.origin, records=job.records, total=length)
            if job.skip:
                result.resumed[job.output] = job.skip
        job.check()
    todo = [j for j in jobs_list if not j.complete]
    total = None
    if progress is not None:
        counts = [j.total() for j in todo]
        if all(c is not None for c in counts):
            total = max(0, sum(counts) - sum(j.skip for j in todo))

    executor = LocalExecutor() if executor is None else executor
    chunk_size = chunk_size or executor.chunk_size
    submit, window = executor.start(ref, jobs, progress, total, result)
    t0 = time.perf_counter()
    _pipeline(todo, submit, window, chunk_size, progress, total, stop, result)
    result.seconds = time.perf_counter() - t0
    return result


def outputs_in(inputs, outdir) -> list:
    """The output paths of ``inputs`` in the folder ``outdir`` (created), each named like its
    input; ``ValueError`` for standard input, two inputs of one name, or a file ``outdir``."""
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


def check_paths(inputs, outputs, model_path) -> None:
    """Refuse missing or directory inputs, several standard inputs or outputs, and an output
    that is an input or the model file (before any work)."""
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
    from .output import SafeOutput

    pending: collections.deque = collections.deque()   # [job, future or None (end), n]
    state = {"job": None, "out": None, "done": 0}

    def open_for(job):
        if state["job"] is not job:
            state["out"] = SafeOutput(job.output, resume=job.skip > 0, origin=job.origin)
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


# ------------------------------------------------------------------------------------------------
# resuming: a .part file is continued only from the input and the model that wrote it
# ------------------------------------------------------------------------------------------------
#: bytes at the head of an input hashed into the record of its ``.part`` file
HEAD_BYTES = 1 << 20


class ResumeError(FastSpectralError, ValueError):
    """An ``OUTPUT.part`` that cannot be continued: written from another input or model, or
    longer than the input."""


def file_sha256(path) -> str:
    """The SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_digest(path) -> str:
    """The identity of a model file's content (hex SHA-256) recorded beside an ``OUTPUT.part``:
    of the name, size and CRC-32 of every member of the archive (its zip central directory),
    or of the whole file when it is not a zip archive.  Loading checks every member against
    its CRC-32 (:mod:`fastspectral.io.modelfile`), so a file that loads with other content
    has another digest; it reads no array data (a SHA-256 of the bytes took 0.57 CPU-s of a
    one-sentence parse of a 664 MB model)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as zf:
            members = [[i.filename, i.file_size, i.compress_size, i.compress_type, i.CRC]
                       for i in zf.infolist()]
    except zipfile.BadZipFile:
        return file_sha256(path)
    text = json.dumps({"zip": members}, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def part_origin(inp, model_path, digest=None) -> dict:
    """What an ``OUTPUT.part`` is written from, kept beside it (``OUTPUT.part.origin``,
    :class:`~fastspectral.io.output.SafeOutput`): the input's absolute path, size and the
    SHA-256 of its first :data:`HEAD_BYTES` bytes (``"<stdin>"`` alone for standard input),
    the model file's absolute path and :func:`model_digest` (``digest``: already computed)."""
    origin = {"model": os.path.abspath(os.fspath(model_path)),
              "model_digest": digest or model_digest(model_path)}
    if _is_stdio(inp):
        origin["input"] = "<stdin>"
        return origin
    path = os.path.abspath(os.fspath(inp))
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    origin.update(input=path, input_size=os.path.getsize(path),
                  input_head_sha256=hashlib.sha256(head).hexdigest())
    return origin


def check_resume(output, origin, *, records: str = "lines", total=None) -> int:
    """The records already in ``OUTPUT.part`` that a resumed run keeps (0 without one), once
    the file is known to come from ``origin`` (:func:`part_origin`): a ``.part`` recorded as
    written from another input (or a changed one) or with another model, or holding more
    than the ``total`` records of the input, raises :class:`ResumeError` naming both files,
    before the ``.part`` is touched.  A ``.part`` without a record (written by another
    program) is checked against the input's length only, with a warning."""
    from .output import SafeOutput, origin_path, part_path

    part = part_path(output)
    if not os.path.exists(part):
        return 0
    recorded = None
    if origin is not None:
        try:
            with open(origin_path(output), encoding="utf-8") as fh:
                recorded = json.load(fh)
            if not isinstance(recorded, dict):
                recorded = None
        except (OSError, ValueError):
            recorded = None
    advice = "remove it, or run without --resume"
    if recorded is not None:
        inp = origin.get("input")
        was = recorded.get("input")
        if was != inp or any(recorded.get(k) != origin.get(k)
                             for k in ("input_size", "input_head_sha256")):
            what = f"from {was}, not from {inp}" if was != inp else \
                f"from another version of {inp} (its size or first bytes differ)"
            raise ResumeError(f"{part} was written {what}: {advice}")
        if "model_digest" in recorded:
            same_model = recorded["model_digest"] == origin.get("model_digest")
        else:   # the record of an older version: the SHA-256 of the model file's bytes
            same_model = recorded.get("model_sha256") == file_sha256(origin["model"])
        if not same_model:
            was = recorded.get("model")
            what = f"with the model {was}, not {origin['model']}" if was != origin["model"] \
                else f"with another version of the model {was}"
            raise ResumeError(f"{part} was written {what}: {advice}")
    skip = SafeOutput.resume_point(output, records=records)
    if total is not None and skip > total:
        name = origin.get("input") if origin else "the input"
        raise ResumeError(f"{part} holds {skip} sentences, more than the {total} of {name}: "
                          f"it was not written from this input; {advice}")
    if origin is not None and recorded is None and skip:
        logger.warning(f"{part} has no record of its input and model: continuing it, checked "
                       "against the input's length only")
    return skip


def skip_records(stream, skip: int, output, name):
    """The items of ``stream`` after the first ``skip`` (those already in ``OUTPUT.part``);
    :class:`ResumeError` when the stream ends before them (a ``.part`` longer than its
    input, noticed before anything is written)."""
    from .output import part_path

    it = iter(stream)
    for seen in range(skip):
        try:
            next(it)
        except StopIteration:
            raise ResumeError(f"{part_path(output)} holds {skip} sentences, more than the "
                              f"{seen} of {name}: it was not written from this input; remove "
                              "it, or run without --resume") from None
    yield from it


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

