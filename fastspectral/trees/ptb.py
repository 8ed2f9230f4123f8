"""Penn Treebank bracket files: streaming reader and writer.

Notation
--------
A PTB file is a sequence of bracketed trees ``(LABEL child ...)`` whose children are subtrees or a
single word.  Both layouts in use are read by the same tokenizer, which works across line breaks:

* raw multi-line treebank files (``wsj_0001.mrg``): each tree is wrapped in an unlabelled outer
  bracket ``( (S ...) )`` and spread over many lines; the tree comes back with root label ``""``;
* one tree per line (``(TOP (S ...))``).

Trees are returned exactly as written (no cleaning; see :mod:`fastspectral.trees.transforms`).

Errors (all :class:`~fastspectral.errors.FormatError` naming file and 1-based line):

* unbalanced brackets: an extra ``)`` (line of the bracket) or a tree still open at end of file
  (line where that tree started);
* an empty node ``()`` or a labelled node with no children ``(NP)``;
* an unlabelled node inside a tree (only a root may be unlabelled);
* a node mixing a word with subtrees, or holding two words;
* text outside brackets;
* bytes that are not valid in ``encoding`` (``UnicodeDecodeError``).
"""
from __future__ import annotations

import gzip
import io
import os

from ..errors import FormatError
from .tree import BracketParser, Tree

__all__ = ["read_ptb", "write_brackets"]


def _open_lines(source):
    """Return ``(iterable of lines (str or bytes), display name, file to close or None)``."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if path.endswith(".gz"):
            f = gzip.open(path, "rb")
        else:
            f = open(path, "rb")
        return f, path, f
    name = getattr(source, "name", None)
    if not isinstance(name, (str, bytes, os.PathLike)):
        name = None
    elif isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    return source, name, None


def read_ptb(source, *, encoding: str = "utf-8"):
    """Iterate over the trees of a PTB bracket file, in constant memory.

    ``source`` is a path (``.gz`` is decompressed), an open file (text or binary) or any iterable
    of lines (``str`` or ``bytes``).  Both raw multi-line treebank files (outer unlabelled bracket,
    root label ``""``) and one-tree-per-line files are read.  Malformed input raises
    :class:`~fastspectral.errors.FormatError` with the file name and line (see module docstring);
    an empty tree ``()`` is an error.
    """
    lines, name, to_close = _open_lines(source)
    parser = BracketParser(name)
    feed = parser.feed
    lineno = 0
    try:
        it = iter(lines)
        while True:
            try:
                line = next(it)
            except StopIteration:
                break
            except UnicodeDecodeError as e:  # text-mode file that cannot be decoded
                raise FormatError(f"cannot decode text ({e.reason})", name, lineno + 1) from None
            lineno += 1
            if type(line) is not str:
                try:
                    line = line.decode(encoding)
                except UnicodeDecodeError as e:
                    raise FormatError(f"invalid {encoding} text at byte {e.start} of the line "
                                      f"({e.reason})", name, lineno) from None
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
            done = feed(line, lineno)
            if done:
                yield from done
        parser.finish()
    finally:
        if to_close is not None:
            to_close.close()


def write_brackets(trees, dest, *, encoding: str = "utf-8") -> int:
    """Write ``trees`` one per line in PTB bracket form to a path (``.gz`` compresses) or open
    text file; return the number of trees written."""
    n = 0
    if isinstance(dest, (str, os.PathLike)):
        path = os.fspath(dest)
        if path.endswith(".gz"):
            f = gzip.open(path, "wt", encoding=encoding)
        else:
            f = open(path, "w", encoding=encoding)
        close = True
    else:
        f = dest
        close = False
        if isinstance(f, (io.BufferedIOBase, io.RawIOBase)):
            f = io.TextIOWrapper(f, encoding=encoding)
            close = None  # detach, don't close the caller's file
    try:
        write = f.write
        for t in trees:
            if not isinstance(t, Tree):
                raise TypeError(f"write_brackets expects Tree objects, got {type(t).__name__}")
            write(t.to_string() + "\n")
            n += 1
    finally:
        if close:
            f.close()
        elif close is None:
            f.flush()
            f.detach()
    return n
