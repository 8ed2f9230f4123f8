"""Output files that are never lost: written under a temporary name, renamed into place on success.

:class:`SafeOutput` writes a regular file ``PATH`` as ``PATH.part`` in the same folder and renames
it over ``PATH`` only when the work finished (``commit``), so an existing ``PATH`` is untouched by a
run that fails or is interrupted, and a finished file is always distinguishable from an unfinished
one (the ``.part`` file holds every line written so far, complete lines only after each
``write_lines``; ``fastspectral parse --resume`` continues from it).  Paths that are not regular
files (``/dev/null``, ``/dev/stdout``, a FIFO, a character device such as ``/dev/full``) are
written directly: renaming over them would replace the device node.

Given an ``origin`` (what the output is written from:
:func:`fastspectral.io.pipeline.part_origin`), a new ``PATH.part`` gets a record of it,
``PATH.part.origin``, removed with the ``.part``, so that a resumed run checks that it
continues the same work (:func:`fastspectral.io.pipeline.check_resume`).
"""
from __future__ import annotations

import gzip
import io
import json
import os
import stat
import sys

__all__ = ["SafeOutput", "is_regular_target", "part_path", "origin_path"]


def part_path(path) -> str:
    """The temporary name of ``path`` while it is being written."""
    return os.fspath(path) + ".part"


def origin_path(path) -> str:
    """The record of what ``PATH.part`` is written from: ``PATH.part.origin`` (JSON)."""
    return part_path(path) + ".origin"


def is_regular_target(path) -> bool:
    """True when ``path`` is a regular file or does not exist yet (written via a temporary
    file and a rename); False for devices, FIFOs, sockets and stdout (``-``)."""
    if path is None or path == "-":
        return False
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return True
    return stat.S_ISREG(st.st_mode)


class SafeOutput:
    """A text output written safely (see the module docstring).

    Parameters
    ----------
    path : str or None
        Output path; ``None`` or ``"-"`` is standard output.  A name ending in ``.gz`` is
        gzip-compressed.
    resume : bool, default False
        Append to an existing ``PATH.part`` instead of starting it anew (see
        :meth:`resume_point`).
    encoding : str, default "utf-8"
    origin : dict, optional
        What the output is written from (JSON-serialisable; e.g.
        :func:`fastspectral.io.pipeline.part_origin`): kept as ``PATH.part.origin`` when this
        object starts ``PATH.part`` anew, removed with the ``.part`` file (a continued
        ``.part`` keeps the record it has), so that a later resume can check it.
    """

    def __init__(self, path, resume: bool = False, encoding: str = "utf-8", origin=None):
        self.path = None if path in (None, "-") else os.fspath(path)
        self.encoding = encoding
        self.regular = self.path is not None and is_regular_target(self.path)
        self.tmp = part_path(self.path) if self.regular else None
        self._gz = self.path is not None and self.path.endswith(".gz")
        self._raw = None
        self.fh = None
        self.committed = False
        self._open(resume, origin)

    # -- opening -------------------------------------------------------------------------------
    def _open(self, resume: bool, origin=None) -> None:
        if self.path is None:
            self.fh = sys.stdout
            return
        target = self.tmp if self.regular else self.path
        mode = "ab" if (resume and self.regular) else "wb"
        fresh = mode == "wb" or not os.path.exists(target) or os.path.getsize(target) == 0
        self._raw = open(target, mode)
        if self.regular and fresh:
            self._record(origin)
        raw = gzip.GzipFile(fileobj=self._raw, mode=mode) if self._gz else self._raw
        self.fh = io.TextIOWrapper(raw, encoding=self.encoding, newline="\n",
                                   write_through=True)

    def _record(self, origin) -> None:
        """Write (or, without ``origin``, remove a stale) ``PATH.part.origin``."""
        record = origin_path(self.path)
        if origin is None:
            if os.path.exists(record):
                os.remove(record)
            return
        tmp = record + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(origin, fh, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, record)

    def _forget(self) -> None:
        try:
            os.remove(origin_path(self.path))
        except FileNotFoundError:
            pass

    @staticmethod
    def resume_point(path, encoding: str = "utf-8", records: str = "lines") -> int:
        """Complete records already in ``PATH.part`` (0 when there is none), after cutting a
        half-written last record off the file: ``records="lines"`` counts lines, ``"blocks"``
        blank-line-terminated blocks (CoNLL sentences).  Gzip files cannot be cut and are
        counted whole (a truncated gzip member is dropped with the records after its last
        complete one)."""
        tmp = part_path(path)
        if not os.path.exists(tmp):
            return 0
        if os.fspath(path).endswith(".gz"):
            data = _read_gzip_prefix(tmp)
            keep = _complete_prefix(data, records)
            with open(tmp, "wb") as fh:        # rewrite the complete prefix as one member
                with gzip.GzipFile(fileobj=fh, mode="wb") as gz:
                    gz.write(data[:keep])
            return _count(data[:keep], records)
        with open(tmp, "rb") as fh:
            data = fh.read()
        keep = _complete_prefix(data, records)
        if keep != len(data):
            with open(tmp, "r+b") as fh:
                fh.truncate(keep)
        return _count(data[:keep], records)

    # -- writing -------------------------------------------------------------------------------
    def write(self, text: str) -> None:
        """Write ``text`` and flush it to the file (complete lines survive an interruption)."""
        self.fh.write(text)
        self.fh.flush()

    def commit(self) -> None:
        """Finish: flush, close and rename ``PATH.part`` over ``PATH`` (regular files)."""
        if self.path is None:
            self.fh.flush()
            self.committed = True
            return
        self._close()
        if self.regular:
            os.replace(self.tmp, self.path)
            self._forget()
        self.committed = True

    def close(self) -> None:
        """Close without committing: ``PATH`` is left as it was, ``PATH.part`` keeps the lines
        written so far (removed when it holds nothing)."""
        if self.committed or self.path is None:
            return
        self._close()
        if self.regular and os.path.exists(self.tmp) and os.path.getsize(self.tmp) == 0:
            os.remove(self.tmp)
            self._forget()

    def _close(self) -> None:
        if self.fh is not None:
            try:
                self.fh.flush()
                self.fh.close()     # closes the gzip stream and the file under it
            finally:
                self.fh = None
                if self._raw is not None and not self._raw.closed:
                    self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if typ is None:
            self.commit()
        else:
            self.close()
        return False


def _read_gzip_prefix(path) -> bytes:
    out = bytearray()
    with open(path, "rb") as raw:
        gz = gzip.GzipFile(fileobj=raw, mode="rb")
        try:
            while True:
                chunk = gz.read(1 << 16)
                if not chunk:
                    break
                out += chunk
        except (EOFError, OSError, gzip.BadGzipFile):
            pass
    return bytes(out)


def _complete_prefix(data: bytes, records: str) -> int:
    if records == "blocks":
        end = data.rfind(b"\n\n")
        return 0 if end < 0 else end + 2
    end = data.rfind(b"\n")
    return 0 if end < 0 else end + 1


def _count(data: bytes, records: str) -> int:
    if records == "blocks":
        return data.count(b"\n\n")
    return data.count(b"\n")
