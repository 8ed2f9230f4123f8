"""Dependency treebanks: CoNLL-U, CoNLL-X and Malt-TAB readers and writers.

Kept as one module (about 780 lines): :class:`DepSentence` and the readers and writers of its
three formats, which round-trip it (the CoNLL-U writer gives back the reader's input, its
comments, multiword-token and empty-node lines kept in ``extra_lines``); the file handling
they share is in :mod:`fastspectral.trees.files` already.

Every reader is a generator (constant memory: one sentence is held at a time) yielding
:class:`DepSentence` objects.  A *source* is any of

* a path (``str`` or ``os.PathLike``); gzip-compressed files are recognised by their magic
  bytes, whatever their name, so ``.gz`` files work;
* an open file, in binary or text mode;
* any iterable of lines (``str`` or ``bytes``), e.g. ``text.splitlines()``.

A plain ``str`` is always a *path*, never the text itself: wrap text in ``io.StringIO`` or
split it into lines.

Tolerance: trailing whitespace on a line, Windows line endings (``\\r\\n``), a UTF-8 byte-order
mark, several blank lines between sentences, and files with or without a final blank line are
all accepted.  Anything else that is malformed raises :class:`fastspectral.errors.FormatError`
naming the file and the 1-based line:

* a wrong number of tab-separated columns;
* an ID that is not an integer (or, in CoNLL-U, a multiword range ``a-b`` / empty node ``a.b``);
* IDs that are not consecutive ``1, 2, 3, ...``;
* a HEAD that is not an integer, is negative or is larger than the sentence length;
* a sentence without any word line (e.g. comment lines followed by a blank line);
* bytes that are not valid in the requested ``encoding`` (default UTF-8; pass
  ``encoding="latin-1"`` for ISO-8859-1 treebanks such as the CoNLL 2007 Basque data).

A cycle in the heads is **not** a reading error (treebanks and parser outputs sometimes contain
them, and a reader should give back what is in the file); call :meth:`DepSentence.validate_tree`
or :meth:`DepSentence.is_tree` to check that every word reaches the root.

The writers reproduce the reader's input: for CoNLL-U the written text equals the input text
(modulo trailing whitespace on a line), comments, multiword-token lines (``1-2``) and empty-node
lines (``8.1``) included.
"""
from __future__ import annotations

import numbers
import operator
import sys
from dataclasses import dataclass, field
from itertools import repeat
from typing import Iterable, Iterator

import numpy as np

from .. import _gc
from ..errors import FormatError
from .files import iter_line_blocks, iter_lines, open_output, source_name

__all__ = [
    "DepSentence",
    "read_conllu",
    "read_conllx",
    "read_malttab",
    "write_conllu",
    "write_conllx",
    "write_malttab",
    "heads_cycle",
    "toy_treebank",
    "as_dep_sentences",
]

# ``iter_lines`` and ``source_name`` moved to :mod:`fastspectral.trees.files`; they stay importable
# from here for one version.

_COLUMNS = ("ids", "words", "lemmas", "upos", "xpos", "feats", "heads", "rels", "deps", "misc")
_STRING_COLUMNS = ("lemmas", "upos", "xpos", "feats", "rels", "deps", "misc")


def heads_cycle(heads):
    """The first cycle (its 1-based words, in head order) met following the 1-based ``heads``
    (0 = root; each in ``0..n``) from every word, or ``None`` when every word reaches the root."""
    n = len(heads)
    # state: 0 unvisited, 1 on the current path, 2 known to reach the root
    state = [0] * (n + 1)
    state[0] = 2
    for start in range(1, n + 1):
        path = []
        node = start
        while state[node] == 0:
            state[node] = 1
            path.append(node)
            node = heads[node - 1]
        if state[node] == 1:
            return path[path.index(node):]
        for p in path:
            state[p] = 2
    return None



# --------------------------------------------------------------------------------------------
# DepSentence
# --------------------------------------------------------------------------------------------

@dataclass
class DepSentence:
    """One dependency-annotated sentence, column by column (CoNLL-U names).

    All token columns are lists of the same length ``n`` (the number of words), index ``i``
    being the ``i+1``-th word.  String columns hold the file's text verbatim, ``"_"`` meaning
    "unspecified"; ``heads`` are ints (1-based, ``0`` = the root; ``-1`` = unknown, in
    unparsed input read with ``heads_optional=True``).

    * ``ids``: the ID column as written (``"1"`` ... ``"n"``).
    * ``feats``, ``misc``: raw strings (``"Number=Sing|Person=3"``); see :meth:`feats_dict`
      and :meth:`misc_dict`.  For CoNLL-X input, ``deps`` and ``misc`` hold columns 9 and 10
      (PHEAD and PDEPREL) verbatim, so that reading and writing use the same column layout.
    * ``comments``: the comment lines before the sentence, ``#`` included (``"# text = ..."``).
    * ``extra_lines``: ``(position, raw_line)`` for CoNLL-U multiword-token lines (``1-2``) and
      empty-node lines (``8.1``); ``position`` is the number of words written before that line,
      so writers put the line back exactly where it was.
    * ``line``: the 1-based line where the sentence started in its file (not compared by ``==``).

    Columns left empty when constructing by hand are filled (``ids`` with ``"1".."n"``, the
    string columns with ``"_"``); ``heads`` must be given for every word.  Columns given as
    tuples or arrays are turned into lists, and integer heads (NumPy too) into Python ints.
    """

    ids: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    lemmas: list[str] = field(default_factory=list)
    upos: list[str] = field(default_factory=list)
    xpos: list[str] = field(default_factory=list)
    feats: list[str] = field(default_factory=list)
    heads: list[int] = field(default_factory=list)
    rels: list[str] = field(default_factory=list)
    deps: list[str] = field(default_factory=list)
    misc: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    extra_lines: list[tuple[int, str]] = field(default_factory=list)
    line: int | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        for name in _COLUMNS:
            if not isinstance(getattr(self, name), list):  # tuples, NumPy arrays, ...
                setattr(self, name, list(getattr(self, name)))
        if self.heads and not all(type(h) is int for h in self.heads):
            self.heads = [operator.index(h) for h in self.heads]  # e.g. NumPy integers
        n = len(self.words)
        if n:
            if not self.ids:
                self.ids = [str(i) for i in range(1, n + 1)]
            for name in _STRING_COLUMNS:
                if not getattr(self, name):
                    setattr(self, name, ["_"] * n)
        for name in _COLUMNS:
            if len(getattr(self, name)) != n:
                raise ValueError(f"DepSentence column {name!r} has {len(getattr(self, name))} "
                                 f"values for {n} words")

    def __len__(self) -> int:
        """Number of words (multiword-token and empty-node lines are not words)."""
        return len(self.words)

    @property
    def tags(self) -> list[str]:
        """The POS tags used by parsers: ``xpos`` if any is not ``"_"``, else ``upos``."""
        for t in self.xpos:
            if t != "_":
                return self.xpos
        return self.upos

    @classmethod
    def from_nltk(cls, graph) -> "DepSentence":
        """A sentence from an ``nltk.parse.DependencyGraph``: ``word``, ``lemma``, ``ctag``
        (into ``upos``), ``tag`` (``xpos``), ``feats``, ``head`` and ``rel`` of nodes 1..n
        (empty or missing values become ``"_"``, a missing head ``-1``).  ``ValueError`` when
        the node addresses are not 1..n."""
        nodes = graph.nodes
        n = len([a for a in nodes if a != 0])
        if sorted(a for a in nodes if a != 0) != list(range(1, n + 1)):
            raise ValueError("DependencyGraph node addresses must be 0..n without gaps")

        def col(key):
            out = []
            for a in range(1, n + 1):
                v = nodes[a].get(key)
                out.append("_" if v is None or v == "" else str(v))
            return out

        heads = [-1 if nodes[a].get("head") is None else int(nodes[a]["head"])
                 for a in range(1, n + 1)]
        return cls(words=col("word"), lemmas=col("lemma"), upos=col("ctag"), xpos=col("tag"),
                   feats=col("feats"), heads=heads, rels=col("rel"))

    def to_nltk(self):
        """This sentence as an ``nltk.parse.DependencyGraph`` (NLTK imported here): node ``i``
        holds word ``i`` (``ctag`` = ``upos``, ``tag`` = ``xpos``, ``head``, ``rel``; the
        root's dependents are listed under ``rel``); ``DepSentence.from_nltk(s.to_nltk()) == s``
        for the columns it carries."""
        from nltk.parse import DependencyGraph

        g = DependencyGraph()
        for i in range(len(self.words)):
            h = self.heads[i]
            g.nodes[i + 1].update({"address": i + 1, "word": self.words[i],
                                   "lemma": self.lemmas[i], "ctag": self.upos[i],
                                   "tag": self.xpos[i], "feats": self.feats[i],
                                   "head": None if h < 0 else h, "rel": self.rels[i]})
        for i, h in enumerate(self.heads):
            if h >= 0:
                g.nodes[h]["deps"][self.rels[i]].append(i + 1)
                if h == 0:
                    g.root = g.nodes[i + 1]
        return g

    @classmethod
    def from_tagged(cls, text: str, heads=None) -> "DepSentence":
        """A sentence from space-separated ``word/TAG`` tokens (the tag after the last ``/``,
        into ``xpos``) and its ``heads`` (None: unknown, ``-1`` for every word), for examples
        and quick experiments.

        >>> DepSentence.from_tagged("dogs/NNS bark/VBP", [2, 0]).xpos
        ['NNS', 'VBP']
        >>> DepSentence.from_tagged("1/2/CD").words
        ['1/2']
        """
        tokens = [t.rpartition("/") for t in text.split()]
        bad = [w + s + t for w, s, t in tokens if not (w and s and t)]
        if bad:
            raise ValueError(f"token {bad[0]!r} is not word/TAG")
        words = [w for w, _, _ in tokens]
        return cls(words=words, xpos=[t for _, _, t in tokens],
                   heads=[-1] * len(words) if heads is None else heads)

    # ---------------------------------------------------------------- key=value columns
    @staticmethod
    def _kv(raw: str) -> dict[str, str]:
        if raw == "_" or not raw:
            return {}
        out = {}
        for item in raw.split("|"):
            key, eq, value = item.partition("=")
            out[key] = value if eq else ""
        return out

    def feats_dict(self, i: int) -> dict[str, str]:
        """FEATS of word ``i`` (0-based) as a dict: ``"Number=Sing|Person=3"`` ->
        ``{"Number": "Sing", "Person": "3"}``; ``"_"`` -> ``{}``.  A feature without ``=``
        (CoNLL-X style ``"PART|BURU"``) maps to ``""``."""
        return self._kv(self.feats[i])

    def misc_dict(self, i: int) -> dict[str, str]:
        """MISC of word ``i`` (0-based) as a dict, like :meth:`feats_dict`."""
        return self._kv(self.misc[i])

    def metadata(self) -> dict[str, str]:
        """The ``# key = value`` comments as a dict (e.g. ``sent_id``, ``text``); comments
        without ``=`` are skipped."""
        out = {}
        for c in self.comments:
            body = c[1:].strip()
            key, eq, value = body.partition("=")
            if eq:
                out[key.strip()] = value.strip()
        return out

    # ---------------------------------------------------------------- tree checks
    def tree_error(self, single_root: bool = True) -> str | None:
        """Return why ``heads`` is not a tree rooted at 0, or ``None`` when it is one.

        Checks, in this order, that every head is in ``0..n``, that following heads from every
        word reaches the root 0 (no cycle) and, when ``single_root``, that exactly one word has
        head 0.
        """
        heads = self.heads
        n = len(heads)
        if n == 0:
            return "empty sentence"
        for i, h in enumerate(heads):
            if not isinstance(h, numbers.Integral) or h < 0 or h > n:
                return f"word {i + 1} ({self.words[i]!r}) has head {h!r} outside 0..{n}"
        cycle = heads_cycle(heads)
        if cycle is not None:
            return f"cycle in heads through words {cycle} (the root is not reachable)"
        if single_root:
            roots = [i + 1 for i, h in enumerate(heads) if h == 0]
            if len(roots) != 1:
                return f"{len(roots)} words attached to the root (expected 1): {roots}"
        return None

    def is_tree(self, single_root: bool = True) -> bool:
        """True when :meth:`tree_error` finds nothing wrong."""
        return self.tree_error(single_root) is None

    def validate_tree(self, single_root: bool = True) -> None:
        """Raise :class:`FormatError` (with the sentence's start line) unless every word
        reaches the root 0 through its heads (see :meth:`tree_error`)."""
        err = self.tree_error(single_root)
        if err is not None:
            sid = self.metadata().get("sent_id")
            raise FormatError(err if sid is None else f"sentence {sid}: {err}", None, self.line)

    # ---------------------------------------------------------------- formatting
    def to_conllu(self) -> str:
        """The sentence as a CoNLL-U block (comments, word and extra lines, final blank line)."""
        return _format_conllu(self)

    def to_conllx(self, comments: bool = True, columns_9_10: bool = True) -> str:
        """The sentence as a CoNLL-X block (see :func:`write_conllx`)."""
        return _format_conllx(self, comments, columns_9_10)

    def to_malttab(self) -> str:
        """The sentence as a Malt-TAB block (see :func:`write_malttab`)."""
        return _format_malttab(self)


_TOY = (("the/DT dog/NN barks/VBZ", (2, 3, 0)),
        ("a/DT cat/NN sleeps/VBZ", (2, 3, 0)),
        ("dogs/NNS bark/VBP", (2, 0)),
        ("the/DT big/JJ dog/NN sleeps/VBZ", (3, 3, 4, 0)))


def toy_treebank(copies: int = 5) -> list[DepSentence]:
    """A four-sentence English dependency treebank repeated ``copies`` times (new objects
    each time): the training data of the dependency learners' examples.

    >>> [len(s) for s in toy_treebank(1)], toy_treebank(1)[3].heads
    ([3, 3, 2, 4], [3, 3, 4, 0])
    """
    return [DepSentence.from_tagged(text, list(heads)) for _ in range(copies)
            for text, heads in _TOY]


# --------------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------------

def _parse_head(text: str, name, lineno: int, optional: bool = False) -> int:
    if text.isascii() and text.isdigit():
        return int(text)
    if optional and text == "_":
        return -1
    if text[:1] == "-" and text[1:].isascii() and text[1:].isdigit():
        raise FormatError(f"HEAD {text} is negative (out of range)", name, lineno)
    raise FormatError(f"HEAD {text!r} is not an integer", name, lineno)


def _is_uint(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _column_error(cols: list[str], line: str, expected: str, name, lineno: int):
    hint = ""
    if len(cols) == 1 and len(line.split()) > 1:
        hint = " (columns must be separated by tabs, not spaces)"
    return FormatError(f"expected {expected} tab-separated columns, found {len(cols)}{hint}",
                       name, lineno)


def _read_conll10(source, encoding: str, conllu: bool,
                  heads_optional: bool = False) -> Iterator[DepSentence]:
    name = source_name(source)
    fmt = "CoNLL-U" if conllu else "CoNLL-X"
    comments: list[str] = []
    extras: list[tuple[int, str]] = []
    extra_info: list[tuple[int, int]] = []  # (last word covered by a multiword range, line)
    rows: list[list[str]] = []
    heads: list[int] = []
    head_lines: list[int] = []
    start = 0

    def finish() -> DepSentence:
        n = len(rows)
        if n == 0:
            raise FormatError(f"{fmt} sentence has no word lines (only comments or "
                              f"multiword/empty-node lines)", name, start)
        for h, ln in zip(heads, head_lines):
            if h > n:
                raise FormatError(f"HEAD {h} is out of range: the sentence has {n} words",
                                  name, ln)
        for last, ln in extra_info:
            if last > n:
                raise FormatError(f"multiword token ends at word {last} but the sentence has "
                                  f"{n} words", name, ln)
        cols = list(zip(*rows))
        return DepSentence(ids=list(cols[0]), words=list(cols[1]), lemmas=list(cols[2]),
                           upos=list(cols[3]), xpos=list(cols[4]), feats=list(cols[5]),
                           heads=heads, rels=list(cols[7]), deps=list(cols[8]),
                           misc=list(cols[9]), comments=comments, extra_lines=extras,
                           line=start)

    for lineno, line in iter_lines(source, encoding):
        line = line.rstrip()
        if not line or line.isspace():
            if start:
                yield finish()
                comments, extras, extra_info = [], [], []
                rows, heads, head_lines = [], [], []
                start = 0
            continue
        if not start:
            start = lineno
        if line[0] == "#":
            if rows or extras:
                raise FormatError("comment line inside a sentence (comments must come before "
                                  "the first word line; is a blank line missing?)", name, lineno)
            comments.append(line)
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise _column_error(cols, line, "10", name, lineno)
        wid = cols[0]
        n = len(rows)
        if _is_uint(wid):
            if int(wid) != n + 1:
                raise FormatError(f"IDs not consecutive: expected word ID {n + 1}, found {wid}",
                                  name, lineno)
            h = _parse_head(cols[6], name, lineno, heads_optional)
            heads.append(h)
            head_lines.append(lineno)
            rows.append(cols)
            continue
        if conllu:
            a, dash, b = wid.partition("-")
            if dash and _is_uint(a) and _is_uint(b):
                if int(a) != n + 1 or int(b) < int(a):
                    raise FormatError(f"multiword token range {wid} does not start at the next "
                                      f"word ID {n + 1}", name, lineno)
                extras.append((n, line))
                extra_info.append((int(b), lineno))
                continue
            a, dot, b = wid.partition(".")
            if dot and _is_uint(a) and _is_uint(b):
                if int(a) != n or int(b) < 1:
                    raise FormatError(f"empty node {wid} must follow word {a}, but it follows "
                                      f"word {n}", name, lineno)
                extras.append((n, line))
                continue
            raise FormatError(f"invalid ID {wid!r} (expected an integer, a range 'a-b' or an "
                              f"empty node 'a.b')", name, lineno)
        raise FormatError(f"invalid ID {wid!r} (expected a positive integer)", name, lineno)
    if start:
        yield finish()


def read_conllu(source, encoding: str = "utf-8",
                heads_optional: bool = False) -> Iterator[DepSentence]:
    """Stream the sentences of a CoNLL-U file as :class:`DepSentence` objects.

    10 tab-separated columns ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC; comment lines
    (``#``) before a sentence go to ``comments``; multiword-token (``1-2``) and empty-node
    (``8.1``) lines go to ``extra_lines``.  See the module docstring for sources, tolerance and
    the errors raised (:class:`FormatError` with file and line).  ``heads_optional=True``
    accepts unparsed input (input to a parser): a HEAD of ``_`` is read as ``-1``.
    """
    return _read_conll10(source, encoding, conllu=True, heads_optional=heads_optional)


def read_conllx(source, encoding: str = "utf-8",
                heads_optional: bool = False) -> Iterator[DepSentence]:
    """Stream the sentences of a CoNLL-X (CoNLL 2006/2007) file as :class:`DepSentence`.

    Columns ID FORM LEMMA CPOSTAG POSTAG FEATS HEAD DEPREL PHEAD PDEPREL map to ``ids words
    lemmas upos xpos feats heads rels deps misc`` (PHEAD and PDEPREL kept verbatim in ``deps``
    and ``misc``).  IDs must be integers; comment lines before a sentence are tolerated and
    kept.  The CoNLL 2007 Basque data is Latin-1: pass ``encoding="latin-1"``.
    ``heads_optional=True``: a HEAD of ``_`` is read as ``-1`` (unparsed input).
    """
    return _read_conll10(source, encoding, conllu=False, heads_optional=heads_optional)


def read_malttab(source, encoding: str = "utf-8",
                 heads_optional: bool = False) -> Iterator[DepSentence]:
    """Stream the sentences of a Malt-TAB file: ``word<TAB>tag<TAB>head[<TAB>rel]`` lines,
    a blank line between sentences.

    The tag goes to ``xpos`` (``upos`` is ``"_"``, so ``tags`` gives the tag); a missing
    relation is ``"_"``.  There are no comments in this format: a line starting with ``#``
    is the word ``#``.  ``heads_optional=True`` accepts unparsed input (input to a parser):
    ``word<TAB>tag`` lines and a head of ``_``, read as ``-1``.
    """
    name = source_name(source)
    carry: list[str] = []           # the lines of a sentence not finished in the last block
    carry_first = 1
    for first, lines in iter_line_blocks(source, encoding):
        lines = list(map(str.rstrip, lines))
        if carry:
            lines = carry + lines
            first = carry_first
        try:
            last_blank = len(lines) - 1 - lines[::-1].index("")
        except ValueError:                  # no blank line: the sentence goes on
            carry, carry_first = lines, first
            continue
        carry, carry_first = lines[last_blank + 1:], first + last_blank + 1
        yield from _malttab_block(lines[:last_blank], first, name, heads_optional)
    if carry:
        yield from _malttab_block(carry, carry_first, name, heads_optional)


def _malttab_block(lines: list, first: int, name, heads_optional: bool) -> Iterator[DepSentence]:
    """The sentences of whole Malt-TAB ``lines`` (trailing whitespace removed; line ``first``
    first), column by column with ``str`` and NumPy operations; a block that is not the common
    case (columns of varying number, heads to check one by one, an error) is read line by line
    by :func:`_malttab_lines`, which raises the errors."""
    words = list(filter(None, lines))
    if not words:
        return
    n_tabs = words[0].count("\t")
    k = n_tabs + 1
    fast = (k in (3, 4) or (k == 2 and heads_optional)) \
        and list(map(str.count, words, repeat("\t"))).count(n_tabs) == len(words)
    if fast:
        fields = "\t".join(words).split("\t")
        n_tok = len(words)
        if k >= 3:
            head_text = fields[2::k]
            joined = "".join(head_text)
            fast = joined.isascii() and joined.isdigit()
            if fast:
                try:                        # "" (ValueError), too large for int64 (Overflow)
                    heads = np.fromiter(map(int, head_text), dtype=np.int64, count=n_tok)
                except (ValueError, OverflowError):
                    fast = False
    if not fast:
        yield from _malttab_lines(zip(range(first, first + len(lines)), lines), name,
                                  heads_optional)
        return
    blank = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines)) == 0
    pos = np.flatnonzero(~blank)                       # the lines of the tokens
    starts = np.ones(n_tok, dtype=bool)
    starts[1:] = np.diff(pos) > 1
    bounds = np.append(np.flatnonzero(starts), n_tok)
    lengths = np.diff(bounds)
    if k >= 3:
        if (heads > np.repeat(lengths, lengths)).any():
            yield from _malttab_lines(zip(range(first, first + len(lines)), lines), name,
                                      heads_optional)
            return
        heads = heads.tolist()
    else:
        heads = [-1] * n_tok
    words, tags = fields[0::k], fields[1::k]
    rels = fields[3::k] if k == 4 else None
    starts_line = (pos[bounds[:-1]] + first).tolist()
    bounds = bounds.tolist()
    # the block's sentences are made with the cyclic GC off (they are acyclic: see
    # fastspectral._gc), and yielded with it back on
    with _gc.paused():
        sents = [_new_sentence(words[a:b], tags[a:b], heads[a:b],
                               rels[a:b] if rels is not None else ["_"] * (b - a), line)
                 for a, b, line in zip(bounds, bounds[1:], starts_line)]
    yield from sents


_IDS: list[str] = []


def _new_sentence(words: list, xpos: list, heads: list, rels: list, line: int) -> DepSentence:
    """``DepSentence(words=words, xpos=xpos, heads=heads, rels=rels, line=line)`` for columns
    known to be right (lists of ``n`` strings, int heads), without the checks."""
    n = len(words)
    if n > len(_IDS):
        _IDS.extend(str(i) for i in range(len(_IDS) + 1, 2 * n + 1))
    sent = object.__new__(DepSentence)
    sent.__dict__.update(ids=_IDS[:n], words=words, lemmas=["_"] * n, upos=["_"] * n,
                         xpos=xpos, feats=["_"] * n, heads=heads, rels=rels, deps=["_"] * n,
                         misc=["_"] * n, comments=[], extra_lines=[], line=line)
    return sent


def _malttab_lines(numbered, name, heads_optional: bool) -> Iterator[DepSentence]:
    """The sentences of ``(line_number, line)`` pairs of a Malt-TAB file, line by line."""
    words: list[str] = []
    tags: list[str] = []
    heads: list[int] = []
    rels: list[str] = []
    head_lines: list[int] = []
    start = 0

    def finish() -> DepSentence:
        n = len(words)
        for h, ln in zip(heads, head_lines):
            if h > n:
                raise FormatError(f"head {h} is out of range: the sentence has {n} words",
                                  name, ln)
        return DepSentence(words=words, xpos=tags, heads=heads, rels=rels, line=start)

    for lineno, line in numbered:
        line = line.rstrip()
        if not line or line.isspace():
            if start:
                yield finish()
                words, tags, heads, rels, head_lines = [], [], [], [], []
                start = 0
            continue
        if not start:
            start = lineno
        cols = line.split("\t")
        if len(cols) == 3 or (len(cols) == 2 and heads_optional):
            rels.append("_")
        elif len(cols) == 4:
            rels.append(cols[3])
        else:
            raise _column_error(cols, line, "2 to 4" if heads_optional else "3 or 4", name,
                                lineno)
        words.append(cols[0])
        tags.append(cols[1])
        heads.append(_parse_head(cols[2], name, lineno, True) if len(cols) > 2 else -1)
        if heads[-1] < 0 and not heads_optional:
            raise FormatError(f"HEAD {cols[2]!r} is not an integer", name, lineno)
        head_lines.append(lineno)
    if start:
        yield finish()


# --------------------------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------------------------

def _cell(value) -> str:
    text = str(value)
    if not text:
        return "_"
    if "\t" in text or "\n" in text or "\r" in text:
        raise ValueError(f"cannot write a value containing a tab or a line break: {text!r}")
    return text


def _check_heads(sent: DepSentence) -> None:
    n = len(sent.words)
    if n == 0:
        raise ValueError("cannot write an empty sentence (no words): it would not read back")
    heads = sent.heads
    if len(heads) == n and all(type(h) is int for h in heads) and 0 <= min(heads) \
            and max(heads) <= n:
        return                  # the common case, checked without a loop in Python
    for i, h in enumerate(sent.heads):
        if not isinstance(h, numbers.Integral) or h < 0 or h > n:
            raise ValueError(f"word {i + 1} has head {h!r} outside 0..{n}")


def _word_lines(cols) -> list:
    """``"\t".join(map(_cell, row))`` of every row of the columns ``cols``, a column at a time
    (the same text; a value with a tab or a line break raises the same error)."""
    n = len(cols[0])
    text = []
    for col in cols:
        col = list(map(str, col))
        if "" in col:
            col = [v or "_" for v in col]
        text.append(col)
    lines = list(map("\t".join, zip(*text)))
    block = "\n".join(lines)
    if block.count("\t") != (len(cols) - 1) * n or block.count("\n") != max(n - 1, 0) \
            or "\r" in block:
        lines = ["\t".join(map(_cell, row)) for row in zip(*cols)]    # raises
    return lines


def _format_conllu(sent: DepSentence) -> str:
    _check_heads(sent)
    out = [_comment(c) for c in sent.comments]
    extras = sorted(sent.extra_lines, key=lambda e: e[0])  # stable: keeps file order
    k = 0
    cols = (sent.ids, sent.words, sent.lemmas, sent.upos, sent.xpos, sent.feats, sent.heads,
            sent.rels, sent.deps, sent.misc)
    lines = _word_lines(cols)
    if not extras:
        out.extend(lines)
    for i, line in enumerate(lines if extras else ()):
        while k < len(extras) and extras[k][0] <= i:
            out.append(extras[k][1])
            k += 1
        out.append(line)
    out.extend(e[1] for e in extras[k:])
    out.append("")
    return "\n".join(out) + "\n"


def _comment(c: str) -> str:
    if "\n" in c or "\r" in c:
        raise ValueError(f"comment contains a line break: {c!r}")
    return c if c.startswith("#") else "# " + c


def _format_conllx(sent: DepSentence, comments: bool = True, columns_9_10: bool = True) -> str:
    _check_heads(sent)
    out = [_comment(c) for c in sent.comments] if comments else []
    n = len(sent.words)
    c9 = sent.deps if columns_9_10 else ["_"] * n
    c10 = sent.misc if columns_9_10 else ["_"] * n
    for row in zip(sent.ids, sent.words, sent.lemmas, sent.upos, sent.xpos, sent.feats, sent.heads,
                   sent.rels, c9, c10):
        out.append("\t".join(map(_cell, row)))
    out.append("")
    return "\n".join(out) + "\n"


def _format_malttab(sent: DepSentence) -> str:
    _check_heads(sent)
    with_rel = any(r != "_" for r in sent.rels)
    out = []
    if with_rel:
        for row in zip(sent.words, sent.tags, sent.heads, sent.rels):
            out.append("\t".join(map(_cell, row)))
    else:
        for row in zip(sent.words, sent.tags, sent.heads):
            out.append("\t".join(map(_cell, row)))
    out.append("")
    return "\n".join(out) + "\n"


def _write(sents: Iterable[DepSentence], dest, encoding: str, fmt) -> int:
    count = 0
    with open_output(dest, encoding) as fh:
        for sent in sents:
            fh.write(fmt(sent))
            count += 1
    return count


def write_conllu(sents: Iterable[DepSentence], dest, encoding: str = "utf-8") -> int:
    """Write sentences as CoNLL-U to a path (gzip-compressed when it ends in ``.gz``) or an
    open file; return the number of sentences written.

    Comments and ``extra_lines`` are written back in place, so ``read_conllu`` -> ``write_conllu``
    reproduces the input text (modulo trailing whitespace).  Each sentence ends with a blank
    line; a comment not starting with ``#`` is written as ``# comment``.  Empty string values
    are written as ``"_"``; a value containing a tab or a line break, an empty sentence or a
    head outside ``0..n`` raises ``ValueError``.
    """
    return _write(sents, dest, encoding, _format_conllu)


def write_conllx(sents: Iterable[DepSentence], dest, encoding: str = "utf-8",
                 comments: bool = True, columns_9_10: bool = True) -> int:
    """Write sentences as CoNLL-X (10 columns) to a path or an open file; return the count.

    Multiword-token and empty-node lines (CoNLL-U only) are not
    written.  ``comments=False`` leaves out comment lines (strict CoNLL-X tools reject them);
    ``columns_9_10=False`` writes ``_`` for PHEAD/PDEPREL instead of ``deps``/``misc`` (use it
    when converting CoNLL-U, whose DEPS/MISC mean something else).
    """
    return _write(sents, dest, encoding,
                  lambda s: _format_conllx(s, comments, columns_9_10))


def write_malttab(sents: Iterable[DepSentence], dest, encoding: str = "utf-8") -> int:
    """Write sentences as Malt-TAB (``word tag head [rel]``) to a path or an open file; return
    the count.  ``tags`` gives the tag column; the relation column is written for a sentence
    when any of its relations is not ``"_"``.  Comments and extra lines are not written: a
    sentence carrying a model's scores in comments (``# latent_dep_log_prob = ...``, from
    :meth:`~fastspectral.latentdep.model.LatentDependencyModel.parse`) logs one warning on the
    ``fastspectral`` logger that the scores are lost (write CoNLL-U or CoNLL-X to keep them)."""
    warned = []

    def fmt(sent):
        if not warned and any(c.startswith(_SCORE_COMMENT) for c in sent.comments):
            warned.append(True)
            import logging
            logging.getLogger("fastspectral").warning(
                "Malt-TAB has no comment lines: the scores of the sentences (# "
                f"{_SCORE_COMMENT[2:]}...) are not written; write CoNLL-U or CoNLL-X to keep "
                "them")
        return _format_malttab(sent)

    return _write(sents, dest, encoding, fmt)


#: the comment prefix of the scores a model writes before a sentence (latent-dep ``parse``)
_SCORE_COMMENT = "# latent_dep_"


def as_dep_sentences(items) -> list:
    """The list of ``items`` with every ``nltk.parse.DependencyGraph`` converted
    (:meth:`DepSentence.from_nltk`); other items are kept as they are (the learners check
    them).  NLTK is never imported here."""
    items = list(items)
    dg = sys.modules.get("nltk.parse.dependencygraph")
    if dg is not None:
        cls = dg.DependencyGraph
        for k, s in enumerate(items):
            if isinstance(s, cls):
                items[k] = DepSentence.from_nltk(s)
    return items
