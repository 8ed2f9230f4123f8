"""Treebank format detection and dispatch, and raw sentence input for parsers.

* :func:`detect_format` sniffs a file and returns one of :data:`FORMATS`:
  ``"ptb"`` (bracketed trees), ``"conllu"``, ``"conllx"`` (10 tab-separated columns),
  ``"malttab"`` (``word tag head [rel]``) or ``"brown"`` (``word/tag`` tokens, one sentence a
  line).
* :func:`read_treebank` detects (or is told) the format and streams the file with the matching
  reader: :func:`~fastspectral.trees.ptb.read_ptb` (``Tree`` objects),
  :func:`~fastspectral.trees.conll.read_conllu` / ``read_conllx`` / ``read_malttab``
  (``DepSentence`` objects) or :func:`~fastspectral.trees.brown.read_brown` (lists of
  ``(word, tag)``).
* :func:`iter_sentences` / :func:`read_sentences` read parser input: one tokenised sentence a
  line, optionally ``word/TAG`` tokens.

Detection looks at the first non-empty lines (at most ``max_lines``), skipping ``#`` comment
lines: a line opening with ``(`` means PTB; 10 tab-separated columns with an integer ID (or a
CoNLL-U range ``1-2`` / empty node ``1.1``) mean CoNLL; 3 or 4 tab-separated columns with an
integer third column mean Malt-TAB; whitespace-separated tokens that all read ``word/tag`` mean
Brown.  The content decides the family; the file extension (``.conllu``, ``.conll``/``.conllx``,
``.dp``/``.malt``, ``.mrg``/``.trees``/``.ptb``, ``.pos``, after removing ``.gz``) breaks ties
between CoNLL-U and CoNLL-X and is used alone when the content gives nothing (empty file).
Without an extension, a CoNLL file is CoNLL-U when it has comment lines, ``a-b``/``a.b`` IDs or
only Universal POS tags in column 4, and CoNLL-X otherwise.
"""
from __future__ import annotations

import os
from typing import Iterator, NamedTuple

from ..errors import FormatError
from .conll import read_conllu, read_conllx, read_malttab
from .files import is_path, iter_lines, raw_lines, source_name
from .brown import read_brown

__all__ = ["FORMATS", "detect_format", "read_treebank", "RawSentence", "iter_sentences",
           "read_sentences"]

#: The format names :func:`detect_format` returns and :func:`read_treebank` accepts.
FORMATS = ("ptb", "conllu", "conllx", "malttab", "brown")

_EXTENSIONS = {
    ".conllu": "conllu",
    ".conll": "conllx",
    ".conllx": "conllx",
    ".dp": "malttab",
    ".malt": "malttab",
    ".mrg": "ptb",
    ".trees": "ptb",
    ".tree": "ptb",
    ".ptb": "ptb",
    ".pos": "brown",
}

_UD_UPOS = frozenset("ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM "
                     "VERB X".split())


def _extension_format(name: str | None) -> str | None:
    if not name:
        return None
    base = name[:-3] if name.lower().endswith(".gz") else name
    return _EXTENSIONS.get(os.path.splitext(base)[1].lower())


def _is_uint(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _conll_id(wid: str) -> str | None:
    """``"word"``, ``"multi"`` (``a-b`` or ``a.b``) or ``None``."""
    if _is_uint(wid):
        return "word"
    for sep in "-.":
        a, s, b = wid.partition(sep)
        if s and _is_uint(a) and _is_uint(b):
            return "multi"
    return None


def _is_comment(line: str) -> bool:
    # Malt-TAB has the word "#" ("#\t#\t34") and Brown "#/#": those are data, not comments.
    return line.startswith("#") and not line.startswith("#\t") and "/" not in line.split()[0]


def _brown_line(line: str) -> bool:
    if "\t" in line:
        return False
    for tok in line.split():
        word, slash, tag = tok.rpartition("/")
        if not (word and tag):
            return False
    return True


def _classify(line: str) -> str | None:
    """Format family of one data line: ``ptb``, ``conll``, ``malttab``, ``brown`` or None."""
    if line.lstrip().startswith("("):
        return "ptb"
    cols = line.rstrip().split("\t")
    if len(cols) == 10 and _conll_id(cols[0]):
        return "conll"
    if len(cols) in (3, 4) and (cols[2].lstrip("-").isdigit() or cols[2] == "_"):
        return "malttab"
    if _brown_line(line):
        return "brown"
    return None


def _sniff(lines, name, max_lines: int = 100) -> str:
    """Decide the format from ``(line_number, text)`` pairs (the head of a file)."""
    ext = _extension_format(name)
    comments = False
    family = None
    first_line = None
    upos_ok = True
    multi = False
    seen = 0
    for lineno, line in lines:
        if not line.strip():
            continue
        if _is_comment(line):
            comments = True
            continue
        seen += 1
        if family is None:
            family = _classify(line)
            first_line = (lineno, line)
            if family is None:
                break
            if family != "conll":
                break
        cols = line.rstrip().split("\t")
        if len(cols) != 10:
            continue
        kind = _conll_id(cols[0])
        if kind == "multi":
            multi = True
        elif kind == "word" and cols[3] not in _UD_UPOS:
            upos_ok = False
        if seen >= max_lines:
            break
    if family is None:
        if ext is not None:
            return ext
        if first_line is None:
            raise FormatError("cannot detect the format of an empty file (no data lines)",
                              name, None)
        snippet = first_line[1] if len(first_line[1]) <= 60 else first_line[1][:57] + "..."
        raise FormatError(f"cannot detect the treebank format from the line {snippet!r} "
                          f"(expected PTB brackets, CoNLL-U/CoNLL-X, Malt-TAB or word/tag "
                          f"text); pass format=...", name, first_line[0])
    if family != "conll":
        return family
    if comments or multi:
        return "conllu"
    if ext in ("conllu", "conllx"):
        return ext
    return "conllu" if upos_ok else "conllx"


def _decode_head(head, encoding: str):
    out = []
    for i, raw in enumerate(head, 1):
        if not isinstance(raw, str):
            raw = bytes(raw).decode(encoding, errors="replace")
        if i == 1 and raw.startswith("\ufeff"):
            raw = raw[1:]
        out.append((i, raw.rstrip("\r\n")))
    return out


def _take_head(raw_iter, max_lines: int) -> list:
    head = []
    nonempty = 0
    limit = 20 * max_lines
    for raw in raw_iter:
        head.append(raw)
        if raw.strip():
            nonempty += 1
            if nonempty >= max_lines:
                break
        if len(head) >= limit:
            break
    return head


def detect_format(source, encoding: str = "utf-8", max_lines: int = 100) -> str:
    """Return the treebank format of ``source``: one of :data:`FORMATS`.

    ``source`` is a path (gzip recognised) or a seekable open file (read with ``readline`` and
    rewound to where it was).  At most ``max_lines`` non-empty lines are read; decoding errors
    are ignored while sniffing (the reader reports them).  Raises :class:`FormatError` (with
    the line) when the content matches no format and the extension gives no hint, or when the
    file is empty and has no known extension.  See the module docstring for the rules.
    """
    name = source_name(source)
    if is_path(source):
        gen = raw_lines(source)
        try:
            head = _take_head(gen, max_lines)
        finally:
            gen.close()
    elif hasattr(source, "readline") and hasattr(source, "seek"):
        pos = source.tell()
        head = []
        nonempty = 0
        while nonempty < max_lines and len(head) < 20 * max_lines:
            raw = source.readline()
            if not raw:
                break
            head.append(raw)
            if raw.strip():
                nonempty += 1
        source.seek(pos)
    else:
        raise TypeError("detect_format needs a path or a seekable file; use "
                        "read_treebank(source) to detect and read any iterable of lines")
    return _sniff(_decode_head(head, encoding), name, max_lines)


class _Chained:
    """Lines already read for sniffing followed by the rest of the source, keeping its name."""

    def __init__(self, head, rest, name):
        self._head = head
        self._rest = rest
        self.name = name

    def __iter__(self):
        yield from self._head
        self._head = []
        yield from self._rest


def read_treebank(source, format: str | None = None, encoding: str = "utf-8",
                  max_lines: int = 100, heads_optional: bool = False) -> Iterator:
    """Stream a treebank in any supported format, detecting it unless ``format`` is given.

    ``source`` is a path, an open file or an iterable of lines (non-path sources are sniffed
    from their first lines, which are then replayed, so nothing is lost).  Yields
    ``Tree`` objects for ``"ptb"``, :class:`~fastspectral.trees.conll.DepSentence` for
    ``"conllu"``, ``"conllx"`` and ``"malttab"``, and lists of ``(word, tag)`` for
    ``"brown"``.  ``encoding`` is passed to the reader.  Raises ``ValueError`` for an unknown
    ``format`` name and :class:`FormatError` for undetectable or malformed input.
    ``heads_optional=True`` lets the dependency readers accept unparsed sentences (HEAD
    ``_``, read as ``-1``; Malt-TAB ``word<TAB>tag`` lines), the input of a parser.
    """
    if format is not None and format not in FORMATS:
        raise ValueError(f"unknown treebank format {format!r}; expected one of {FORMATS}")
    if format is None:
        if is_path(source):
            format = detect_format(source, encoding, max_lines)
        else:
            name = source_name(source)
            rest = iter(raw_lines(source))
            head = _take_head(rest, max_lines)
            format = _sniff(_decode_head(head, encoding), name, max_lines)
            source = _Chained(head, rest, name)
    if format == "ptb":
        from .ptb import read_ptb  # written separately; imported lazily
        return read_ptb(source, encoding=encoding)
    if format == "conllu":
        return read_conllu(source, encoding, heads_optional)
    if format == "conllx":
        return read_conllx(source, encoding, heads_optional)
    if format == "malttab":
        return read_malttab(source, encoding, heads_optional)
    return read_brown(source, encoding)


class RawSentence(NamedTuple):
    """One line of parser input: ``words``, ``tags`` (``None`` when the line is not tagged)
    and the 1-based ``line`` it came from.  An empty line gives ``words == []``."""

    words: list[str]
    tags: list[str] | None
    line: int


def iter_sentences(source, tagged: bool | None = None, encoding: str = "utf-8",
                   sep: str = "/", skip_empty: bool = False) -> Iterator[RawSentence]:
    """Stream raw parser input: one tokenised sentence a line, tokens separated by whitespace.

    ``tagged=None`` (default) decides line by line: a line is tagged when EVERY token has a
    ``sep`` (``/``) with a non-empty word before its last ``sep`` and a non-empty tag after it
    (``The/DT dog/NN``); the tag is what follows the last ``sep``, so words may contain it.
    Otherwise the whole line is words and ``tags`` is ``None`` (``and/or`` alone on a line is
    therefore read as the word ``and`` tagged ``or``: pass ``tagged=False`` for plain text).
    ``tagged=True`` requires every line to be tagged (:class:`FormatError` with file and line
    otherwise); ``tagged=False`` never splits tokens.

    Empty (or whitespace-only) lines are NOT errors: each yields ``RawSentence([], None, line)``,
    an empty-sentence marker, so that output stays aligned line for line with the input; a
    parser should report it (e.g. write an empty parse) rather than fail.  Pass
    ``skip_empty=True`` to drop them instead.  A final line break does not make an extra line.
    """
    name = source_name(source)
    for lineno, line in iter_lines(source, encoding):
        tokens = line.split()
        if not tokens:
            if not skip_empty:
                yield RawSentence([], None, lineno)
            continue
        if tagged is False:
            yield RawSentence(tokens, None, lineno)
            continue
        parts = [tok.rpartition(sep) for tok in tokens]
        bad = None
        for (word, _, tag), tok in zip(parts, tokens):
            if not (word and tag):
                bad = tok
                break
        if bad is None:
            yield RawSentence([p[0] for p in parts], [p[2] for p in parts], lineno)
        elif tagged:
            raise FormatError(f"token {bad!r} is not word{sep}TAG (tagged input required)",
                              name, lineno)
        else:
            yield RawSentence(tokens, None, lineno)


def read_sentences(source, tagged: bool | None = None, encoding: str = "utf-8",
                   sep: str = "/", skip_empty: bool = False) -> list[RawSentence]:
    """:func:`iter_sentences` as a list of ``RawSentence(words, tags_or_None, line)``."""
    return list(iter_sentences(source, tagged, encoding, sep, skip_empty))
