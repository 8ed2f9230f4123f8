"""File helpers shared by every reader and writer: sources, gzip, encodings, numbered lines, stdin.

A *source* (what the readers of :mod:`fastspectral.trees` and :mod:`fastspectral.lm` accept) is

* a path (``str`` or ``os.PathLike``); gzip-compressed files are recognised by their magic bytes,
  whatever their name, so ``.gz`` files work;
* an open file, in binary or text mode (``sys.stdin`` included);
* any iterable of lines (``str`` or ``bytes``), e.g. ``text.splitlines()``.

A plain ``str`` is always a *path*, never the text itself.  A *destination* (what the writers
accept) is a path (gzip-compressed when it ends in ``.gz``), an open text file or an open binary
file (wrapped, flushed and detached, never closed).

* :func:`iter_lines` — ``(line_number, text)`` pairs, decoded line by line so that a decoding
  error is a :class:`~fastspectral.errors.FormatError` naming the file and the exact line;
* :func:`iter_line_blocks` — the same lines as lists of many lines at a time (a plain file is
  read and decoded in large blocks, split into lines by ``str`` methods in C);
* :func:`raw_lines` — the undecoded lines of a source; :func:`open_binary` — a path opened for
  reading bytes, decompressed when it is gzip;
* :func:`open_output` — a context manager giving a text file for a destination;
* :func:`source_name` — the name used in error messages;
* :func:`is_stdio` / :func:`read_stdin` — ``-`` (or ``None``) meaning standard input, read into a
  seekable, named in-memory file (format detection needs to look ahead and rewind).
"""
from __future__ import annotations

import codecs
import contextlib
import gzip
import io
import os
import sys
import zlib
from typing import Iterator

from ..errors import FormatError

__all__ = ["source_name", "is_path", "open_binary", "raw_lines", "iter_lines", "iter_line_blocks",
           "open_output", "is_stdio", "read_stdin", "STDIN_NAME"]

#: The name standard input has in error messages.
STDIN_NAME = "<stdin>"

_GZIP_MAGIC = b"\x1f\x8b"


def is_path(source) -> bool:
    """Whether ``source`` is a path (``str`` or ``os.PathLike``) rather than a file or lines."""
    return isinstance(source, (str, os.PathLike))


def source_name(source) -> str | None:
    """Return the name used for ``source`` in error messages (its path, or a file's ``name``)."""
    if is_path(source):
        return os.fspath(source)
    name = getattr(source, "name", None)
    if isinstance(name, (str, os.PathLike)):
        return os.fspath(name)
    if isinstance(name, bytes):
        return name.decode("utf-8", "replace")
    return None


def open_binary(path):
    """Open ``path`` for reading bytes, through gzip when the file starts with gzip's magic."""
    path = os.fspath(path)
    with open(path, "rb") as fh:
        magic = fh.read(2)
    return gzip.open(path, "rb") if magic == _GZIP_MAGIC else open(path, "rb")


def raw_lines(source) -> Iterator:
    """Yield the raw lines (``bytes`` or ``str``, terminators kept) of a source.

    A gzip file that is truncated or corrupt raises :class:`FormatError` naming the file and
    the line being read when the compressed data broke off."""
    if is_path(source):
        with open_binary(source) as fh:
            if not isinstance(fh, gzip.GzipFile):
                yield from fh
                return
            n = 0
            try:
                for line in fh:
                    n += 1
                    yield line
            except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
                what = "truncated" if isinstance(exc, EOFError) else "corrupt"
                raise FormatError(f"{what} gzip file: {exc} (reading line {n + 1}; lines 1-{n} "
                                  "were read)" if n else f"{what} gzip file: {exc}",
                                  os.fspath(source), n + 1) from None
    elif isinstance(source, (bytes, bytearray)):
        raise TypeError("a bytes object is not a valid source: pass a path, an open file or "
                        "an iterable of lines")
    else:
        yield from source


def iter_lines(source, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for every line of ``source``, numbered from 1.

    ``text`` has its line terminator (``\\n``, ``\\r\\n``) removed and, on the first line, a
    byte-order mark removed.  Bytes are decoded with ``encoding`` line by line, so that a
    decoding error raises :class:`FormatError` with the exact line (for a file opened in text
    mode by the caller, Python decodes ahead in blocks and the line reported can only be the
    first line not yet read).
    """
    name = source_name(source)
    lineno = 0
    try:
        for raw in raw_lines(source):
            lineno += 1
            if not isinstance(raw, str):
                try:
                    raw = bytes(raw).decode(encoding)
                except UnicodeDecodeError as exc:
                    bad = bytes(raw)[exc.start:exc.start + 1]
                    raise FormatError(
                        f"invalid {encoding} byte {bad!r} at column {exc.start + 1} (wrong "
                        f"encoding? pass encoding=..., e.g. encoding='latin-1')",
                        name, lineno) from None
            if lineno == 1 and raw.startswith("\ufeff"):
                raw = raw[1:]
            if raw.endswith("\n"):
                raw = raw[:-1]
            if raw.endswith("\r"):
                raw = raw[:-1]
            yield lineno, raw
    except UnicodeDecodeError as exc:  # raised by a text-mode file object while reading ahead
        raise FormatError(f"cannot decode the file as {exc.encoding} ({exc.reason}; wrong "
                          f"encoding? reopen it with the right encoding)",
                          name, lineno + 1) from None


#: encodings in which the byte ``\n`` is always the character ``\n`` and never part of another
#: character, so that a block of bytes cut after a ``\n`` decodes to whole lines
_BLOCK_ENCODINGS = frozenset({"utf-8", "ascii", "latin-1", "iso8859-1", "cp1252"})

#: bytes read at a time by :func:`iter_line_blocks`
BLOCK_BYTES = 1 << 23


def _block_encoding(encoding: str) -> bool:
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return False
    return name in _BLOCK_ENCODINGS


def _decode_block(data: bytes, encoding: str, name, first: int) -> tuple[list, Exception | None]:
    """The lines of ``data`` (whole lines, the last one with or without its ``\\n``), decoded,
    and None; or, at a byte that does not decode, the lines before it and the error
    :func:`iter_lines` raises there (naming the exact line)."""
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        raws = data.split(b"\n")
        if raws and not raws[-1]:
            raws.pop()
        lines = []
        for k, raw in enumerate(raws):
            try:
                lines.append(raw.decode(encoding))
            except UnicodeDecodeError as exc:
                bad = raw[exc.start:exc.start + 1]
                return _strip_cr(lines), FormatError(
                    f"invalid {encoding} byte {bad!r} at column {exc.start + 1} (wrong "
                    f"encoding? pass encoding=..., e.g. encoding='latin-1')", name, first + k)
        raise
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()
    return (_strip_cr(lines) if "\r" in text else lines), None


def _strip_cr(lines: list) -> list:
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def iter_line_blocks(source, encoding: str = "utf-8") -> Iterator[tuple[int, list]]:
    """Yield ``(first_line_number, lines)``: the lines of :func:`iter_lines` (the same text,
    the same errors), many at a time.

    A plain (not gzip-compressed) file given by its path, in an encoding where ``\n`` is one
    byte of its own (UTF-8, ASCII, Latin-1, cp1252), is read in blocks of about
    :data:`BLOCK_BYTES` bytes cut after a line end, each decoded at once and split into lines
    by ``str`` methods; any other source is :func:`iter_lines` gathered into lists."""
    if is_path(source) and _block_encoding(encoding):
        path = os.fspath(source)
        with open(path, "rb") as fh:
            if fh.read(2) != _GZIP_MAGIC:
                fh.seek(0)
                yield from _read_blocks(fh, encoding, path)
                return
    block: list = []
    first = 1
    for lineno, line in iter_lines(source, encoding):
        if not block:
            first = lineno
        block.append(line)
        if len(block) >= 1 << 16:
            yield first, block
            block = []
    if block:
        yield first, block


def _read_blocks(fh, encoding: str, name) -> Iterator[tuple[int, list]]:
    lineno = 1
    rest = b""
    while True:
        data = fh.read(BLOCK_BYTES)
        if data:
            data = rest + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            data, rest = data[:cut], data[cut:]
        else:
            data, rest = rest, b""
            if not data:
                return
        lines, error = _decode_block(data, encoding, name, lineno)
        if lineno == 1 and lines and lines[0].startswith("\ufeff"):
            lines[0] = lines[0][1:]
        if lines:
            yield lineno, lines
        if error is not None:
            raise error
        lineno += len(lines)


@contextlib.contextmanager
def open_output(dest, encoding: str = "utf-8"):
    """Context manager: a text file writing to ``dest`` with ``\\n`` line ends.

    A path is opened (gzip-compressed when it ends in ``.gz``) and closed at the end; an open
    binary file is wrapped, then flushed and detached (not closed); an open text file is used
    as it is and flushed.
    """
    if is_path(dest):
        path = os.fspath(dest)
        if path.endswith(".gz"):
            fh = gzip.open(path, "wt", encoding=encoding, newline="\n")
        else:
            fh = open(path, "w", encoding=encoding, newline="\n")
        with fh:
            yield fh
        return
    if isinstance(dest, (io.RawIOBase, io.BufferedIOBase)):
        fh = io.TextIOWrapper(dest, encoding=encoding, newline="\n")
        try:
            yield fh
        finally:
            fh.flush()
            fh.detach()
        return
    if not hasattr(dest, "write"):
        raise TypeError(f"cannot write to a {type(dest).__name__}: pass a path or an open file")
    try:
        yield dest
    finally:
        dest.flush()


def is_stdio(path) -> bool:
    """Whether a command-line file argument means standard input / output (``None`` or ``-``)."""
    return path is None or (isinstance(path, str) and path == "-")


def read_stdin(stream=None) -> io.BytesIO:
    """Standard input (or ``stream``) read whole into a seekable binary file named
    :data:`STDIN_NAME`, so that it can be sniffed by format detection and then read by any
    reader with the reader's ``encoding`` (decoding errors name ``<stdin>`` and the line)."""
    stream = sys.stdin if stream is None else stream
    data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read()
    if isinstance(data, str):
        data = data.encode("utf-8")
    buf = io.BytesIO(data)
    buf.name = STDIN_NAME
    return buf
