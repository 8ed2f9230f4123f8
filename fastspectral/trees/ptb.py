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
  (line where that tree started); a tree not closed when a line starting with ``(`` at column 0
  (a new tree) comes, and the file then fails, is reported as ``tree starting on line A is not
  closed before the tree starting on line B`` at line B - 1 (the missing ``)`` is in lines
  A .. B - 1, usually the last);
* a truncated or corrupt ``.gz`` file (the file and the line reached);
* an empty node ``()`` or a labelled node with no children ``(NP)``;
* an unlabelled node inside a tree (only a root may be unlabelled);
* a node mixing a word with subtrees, or holding two words;
* text outside brackets;
* bytes that are not valid in ``encoding``.
"""
from __future__ import annotations

from .. import _gc
from ..errors import FormatError
from .files import iter_lines, open_output, source_name
from .tree import BracketParser, Tree

__all__ = ["read_ptb", "write_brackets"]


def read_ptb(source, *, encoding: str = "utf-8"):
    """Iterate over the trees of a PTB bracket file, in constant memory.

    ``source`` is a path (gzip is recognised by its magic bytes), an open file (text or binary) or any iterable
    of lines (``str`` or ``bytes``).  Both raw multi-line treebank files (outer unlabelled bracket,
    root label ``""``) and one-tree-per-line files are read.  Malformed input raises
    :class:`~fastspectral.errors.FormatError` with the file name and line (see module docstring);
    an empty tree ``()`` is an error.
    """
    name = source_name(source)
    parser = BracketParser(name)
    feed = parser.feed
    # first line starting with '(' at column 0 while a tree is still open: in a well-formed
    # file that is a new tree, so an error of the open tree is reported against it
    suspect = None
    lineno = 0
    # the cyclic GC is off while this reader runs (trees are acyclic: see fastspectral._gc), on
    # while the caller handles the trees it yields
    gc_on = _gc.pause()
    try:
        for lineno, line in iter_lines(source, encoding):
            if parser.stack and suspect is None and line.startswith("("):
                suspect = lineno
            done = feed(line, lineno)
            if not parser.stack:
                suspect = None
            if done:
                trees = iter(done)      # allocated while paused: yielding allocates nothing
                _gc.resume(gc_on)
                gc_on = False
                for t in trees:
                    yield t
                gc_on = _gc.pause()
        lineno += 1                     # finish(): the end of the input
        parser.finish()
    except FormatError as exc:
        if suspect is None or exc.path != name or lineno < suspect:
            raise
        start = parser.start_line
        raise FormatError(f"tree starting on line {start} is not closed before the tree "
                          f"starting on line {suspect} (a ')' missing in lines {start}-"
                          f"{suspect - 1}?)", name, suspect - 1) from None
    finally:
        _gc.resume(gc_on)


def write_brackets(trees, dest, *, encoding: str = "utf-8") -> int:
    """Write ``trees`` one per line in PTB bracket form to a path (``.gz`` compresses), an open
    text file or an open binary file (see :func:`~fastspectral.trees.files.open_output`); return
    the number of trees written."""
    n = 0
    with open_output(dest, encoding) as f:
        write = f.write
        for t in trees:
            if not isinstance(t, Tree):
                raise TypeError(f"write_brackets expects Tree objects, got {type(t).__name__}")
            write(t.to_string() + "\n")
            n += 1
    return n
