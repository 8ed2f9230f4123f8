"""Corpus readers of the learners: sequences, words, tagged sentences, training items.

Every reader here opens its file through :mod:`fastspectral.trees.files` (``.gz`` by magic,
strict decoding, ``-`` for standard input where noted, :class:`~fastspectral.errors.FormatError`
with file and line) and tells formats apart with one function, :func:`detect_corpus_format`
(``text``, ``tagged``, ``ptb`` or ``conll``, from :func:`fastspectral.trees.readers.detect_format`):

* :func:`read_sequences` — what a sequence model reads from each token (word, tag, UPOS, XPOS)
  of plain or ``word/TAG`` text, PTB trees or CoNLL files, within a token window
  (:func:`token_window`); :func:`read_corpus` is its ``field="word"`` (the language models);
* :func:`read_words` — the words of a corpus for the eigenword dictionary;
* :func:`read_tagged` — PTB trees or ``(words, tags)`` of ``word/TAG`` text (the ATM parser);
  :func:`read_brown_universal` — the Brown corpus's ``word/tag`` lines with universal tags;
* :func:`read_conllu_sentences` — the dependency sentences of a CoNLL-U file (lexical models);
  :func:`read_tagging_input` — CoNLL-U, Malt-TAB or plain text for ``lexical tag``;
* :func:`read_training_items` — the training items of a model's input kind (trees, dependency
  sentences, sequences), checked for the right kind.
"""
from __future__ import annotations

import os
from typing import Iterator

from ..errors import FormatError
from .files import is_path, iter_lines, read_stdin, source_name

__all__ = ["FIELDS", "FORMATS", "CORPUS_FORMATS", "detect_corpus_format", "token_window",
           "read_sequences", "read_corpus", "read_words", "read_tagged", "read_brown_universal",
           "read_conllu_sentences", "read_tagging_input", "read_training_items", "first_line"]

#: what a sequence model reads from each token
FIELDS = ("word", "tag", "upos", "xpos")
#: the input formats of :func:`read_sequences` (``"brown"`` is accepted for ``"tagged"``)
FORMATS = ("auto", "text", "tagged", "ptb", "conll")
#: the formats of :func:`read_corpus` (the language models' ``--format``)
CORPUS_FORMATS = ("auto", "brown", "text", "ptb", "conll")
_DEPENDENCY = ("conllu", "conllx", "malttab")


def _existing(path):
    """``path`` checked to exist, or standard input (``-``) read into a seekable file (an
    open file is returned as it is)."""
    if isinstance(path, str) and path == "-":
        return read_stdin()
    if not is_path(path):
        return path
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    return path


def _rewind(source):
    """``source`` ready to be read from its start again (a path, or a seekable file)."""
    if hasattr(source, "seek"):
        source.seek(0)
    return source


class _Head(list):
    """Lines read ahead from a file, named like it (for the errors of :func:`iter_lines`)."""

    name = None


def first_line(source, encoding: str = "utf-8"):
    """The first non-blank line of ``source`` with surrounding white space removed (None when
    every line is blank); a seekable file is read with ``readline`` and left where it was
    (neither closed nor consumed)."""
    if is_path(source) or not hasattr(source, "seek"):
        lines = iter_lines(source, encoding)
    else:
        pos = source.tell()
        head = _Head()
        head.name = source_name(source)
        while True:
            raw = source.readline()
            if not raw:
                break
            head.append(raw)
            if raw.strip():
                break
        source.seek(pos)
        lines = iter_lines(head, encoding)
    for _, line in lines:
        if line.strip():
            return line.strip()
    return None


def detect_corpus_format(source, encoding: str = "utf-8") -> str:
    """``"text"``, ``"tagged"`` (``word/TAG`` tokens), ``"ptb"`` or ``"conll"`` (CoNLL-U,
    CoNLL-X, Malt-TAB) from the content of ``source`` (a path or a seekable file): the
    treebank detection of :func:`~fastspectral.trees.readers.detect_format`, a file matching
    no treebank format being plain text."""
    from .readers import detect_format

    try:
        fmt = detect_format(source, encoding)
    except FormatError:
        return "text"               # no treebank format: plain tokens
    if fmt == "brown":
        return "tagged"
    if fmt in _DEPENDENCY:
        return "conll"
    return fmt


def token_window(source, skip_tokens: int = 0, max_tokens: int | None = None) -> list:
    """Whole sequences of the iterable ``source``: skipped until ``skip_tokens`` tokens were
    skipped, then taken until ``max_tokens`` tokens were taken (``None``: to the end); reads
    ``source`` no further than needed."""
    out: list = []
    skipped = taken = 0
    for sent in source:
        if skipped < skip_tokens:
            skipped += len(sent)
            continue
        if max_tokens is not None and taken >= max_tokens:
            break
        out.append(sent)
        taken += len(sent)
    return out


def _window(source, skip_tokens: int, max_tokens):
    """:func:`token_window` of the non-empty sequences of ``source``."""
    return token_window(filter(None, source), skip_tokens, max_tokens)


def _text_words(path, tagged: bool, encoding: str) -> Iterator[list[str]]:
    if tagged:
        from .brown import read_brown

        return ([w for w, _ in s] for s in read_brown(path, encoding))
    return (line.split() for _, line in iter_lines(path, encoding))


def read_sequences(path, field: str = "word", fmt: str = "auto", encoding: str = "utf-8",
                   skip_tokens: int = 0, max_tokens: int | None = None) -> list[list[str]]:
    """Sequences (lists of strings) of a corpus or treebank file within a token window.

    Parameters
    ----------
    path : str or path-like
        The file (gzip accepted; ``"-"``: standard input).
    field : {"word", "tag", "upos", "xpos"}, default "word"
        What each token contributes: its word, or its POS tag (``word/TAG`` tokens, the
        preterminals of PTB trees, the ``tags`` of CoNLL sentences: XPOS, or UPOS when a
        sentence has no XPOS); ``"upos"`` / ``"xpos"`` name a CoNLL column.
    fmt : {"auto", "text", "tagged", "ptb", "conll"}, default "auto"
        ``"text"``: one sequence a line, whitespace-separated tokens; ``"tagged"`` (or
        ``"brown"``): the same with ``word/TAG`` tokens (the tag follows the last ``/``);
        ``"ptb"``: bracketed trees (``-NONE-`` elements removed); ``"conll"``: CoNLL-U,
        CoNLL-X or Malt-TAB.  ``"auto"``: :func:`detect_corpus_format`.
    encoding : str, default "utf-8"
    skip_tokens, max_tokens : int
        Token window: whole sequences are skipped until ``skip_tokens`` tokens were skipped,
        then taken until ``max_tokens`` tokens were taken (``None``: to the end); empty lines
        are dropped.

    Returns
    -------
    list of list of str

    Raises ``FileNotFoundError`` for a missing file, :class:`~fastspectral.errors.FormatError`
    (file and line) for malformed input or a file without the requested field, and
    ``ValueError`` for an unknown ``field`` or ``fmt``.
    """
    if field not in FIELDS:
        raise ValueError(f"field must be one of {', '.join(FIELDS)}, not {field!r}")
    if fmt not in FORMATS and fmt != "brown":
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, not {fmt!r}")
    skip_tokens = int(skip_tokens)
    if skip_tokens < 0 or (max_tokens is not None and int(max_tokens) < 0):
        raise ValueError("skip_tokens and max_tokens must be >= 0")
    path = _existing(path)
    if fmt == "auto":
        fmt = detect_corpus_format(path, encoding)
    if fmt == "brown":
        fmt = "tagged"
    if fmt in ("text", "tagged"):
        if field in ("upos", "xpos"):
            raise ValueError(f"field {field!r} names a CoNLL column; a {fmt} file has "
                             "field='word' or field='tag'")
        if field == "word":
            return _window(_text_words(path, fmt == "tagged", encoding), skip_tokens,
                           max_tokens)
        from .readers import iter_sentences

        def tags():
            for raw in iter_sentences(path, tagged=True, encoding=encoding, skip_empty=True):
                yield raw.tags
        # every line must be word/TAG (a FormatError naming the line otherwise)
        return _window(tags(), skip_tokens, max_tokens)
    from .readers import read_treebank

    if fmt == "ptb":
        if field in ("upos", "xpos"):
            raise ValueError(f"field {field!r} names a CoNLL column; PTB trees have "
                             "field='word' or field='tag'")
        from .transforms import clean

        def from_trees():
            for t in read_treebank(path, format="ptb", encoding=encoding):
                try:
                    pairs = clean(t).pos()
                except ValueError:      # a tree of empty elements only
                    continue
                yield [w for w, _ in pairs] if field == "word" else [g for _, g in pairs]
        return _window(from_trees(), skip_tokens, max_tokens)
    fmt_name = _conll_format(path, encoding)
    _rewind(path)

    def from_conll():
        for s in read_treebank(path, format=fmt_name, encoding=encoding, heads_optional=True):
            if field == "word":
                yield list(s.words)
                continue
            col = s.tags if field == "tag" else getattr(s, field)
            if not col or all(t == "_" for t in col):
                raise FormatError(f"the sentence has no {field.upper()} column "
                                  f"(choose another field)", source_name(path),
                                  getattr(s, "line", None))
            yield list(col)
    return _window(from_conll(), skip_tokens, max_tokens)


def _conll_format(path, encoding: str) -> str:
    from .readers import detect_format

    fmt = detect_format(path, encoding)
    if fmt not in _DEPENDENCY:
        raise FormatError(f"not a CoNLL file (detected {fmt})", source_name(path), None)
    return fmt


def read_corpus(path, fmt: str = "auto", skip_tokens: int = 0,
                max_tokens: int | None = None, encoding: str = "utf-8") -> list[list[str]]:
    """Sentences (lists of words) of a corpus file within a token window (the language
    models' reader): :func:`read_sequences` with ``field="word"``.

    ``fmt``: ``"auto"`` (:func:`detect_corpus_format`: PTB trees and CoNLL files give their
    words, not their lines), ``"brown"`` (``word/tag``; tags dropped), ``"text"``, ``"ptb"``
    or ``"conll"``.  Raises :class:`FormatError` (file and line) for a malformed line and
    ``FileNotFoundError`` for a missing file."""
    if fmt not in CORPUS_FORMATS:
        raise ValueError(f"unknown corpus format {fmt!r} ({', '.join(CORPUS_FORMATS)})")
    return read_sequences(path, "word", fmt, encoding, skip_tokens, max_tokens)


def read_words(path, encoding: str = "utf-8") -> list:
    """The sentences (word lists) of a corpus for the eigenword dictionary: the leaves of PTB
    trees, the words of CoNLL-U / CoNLL-X / Malt-TAB sentences, else one sentence a line
    (``word/TAG`` tokens give their words)."""
    from .readers import read_treebank

    path = _existing(path)
    first = first_line(path, encoding)
    _rewind(path)
    if first is None:
        raise FormatError("the corpus is empty (no words)", source_name(path))
    if first.startswith("("):
        return [t.leaves() for t in read_treebank(path, format="ptb", encoding=encoding)]
    from .readers import detect_format

    try:
        fmt = detect_format(path, encoding)
    except (FormatError, TypeError):      # plain text
        fmt = None
    if fmt in _DEPENDENCY:                # dependency treebanks: their words
        return [s.words for s in read_treebank(path, format=fmt, encoding=encoding)]
    return read_corpus(_rewind(path), "auto", encoding=encoding)


def read_tagged(path, encoding: str = "utf-8", fmt=None) -> list:
    """PTB trees (``fmt="ptb"``, or a first line opening with ``(``) or ``(words, tags)``
    pairs of ``word/TAG`` lines (every token tagged: a FormatError naming the line
    otherwise); the input of the ATM parser."""
    path = _existing(path)
    first = first_line(path, encoding)
    _rewind(path)
    if first is None:
        raise FormatError("the training file is empty", source_name(path))
    if fmt == "ptb" or (fmt is None and first.startswith("(")):
        from .readers import read_treebank
        return list(read_treebank(path, format="ptb", encoding=encoding))
    if fmt not in (None, "brown"):
        raise FormatError(f"this model learns from PTB trees or word/TAG lines, not {fmt}",
                          source_name(path))
    from .readers import iter_sentences
    return [(s.words, s.tags) for s in iter_sentences(path, tagged=True, encoding=encoding,
                                                      skip_empty=True)]


def read_brown_universal(source, encoding: str = "utf-8") -> list:
    """``[(words, universal_tags), ...]`` of a Brown ``word/tag`` file, one sentence a line
    (the form of ``../shared/data/brown/brown-tagged.txt``; tags mapped by
    :func:`~fastspectral.trees.universal_tags.brown_to_universal`); a token or a tag that
    does not read raises :class:`FormatError` naming the file and line."""
    from .brown import read_brown_numbered
    from .universal_tags import brown_to_universal

    out = []
    name = source_name(source)
    for line, pairs in read_brown_numbered(source, encoding):
        words = [w for w, _ in pairs]
        try:
            out.append((words, brown_to_universal([t for _, t in pairs])))
        except ValueError as exc:
            raise FormatError(str(exc), name, line) from None
    return out


def read_conllu_sentences(path, encoding: str = "utf-8") -> list:
    """The dependency sentences of a CoNLL-U file (heads may be ``_``); FormatError naming
    the file for an empty one."""
    from .conll import read_conllu

    path = _existing(path)
    sents = list(read_conllu(path, encoding=encoding, heads_optional=True))
    if not sents:
        raise FormatError("no sentences in the CoNLL-U file", source_name(path))
    return sents


def _looks_like_conllu(first: str) -> bool:
    return first.startswith("#") or len(first.split("\t")) == 10


def read_tagging_input(path, encoding: str = "utf-8") -> tuple[list, bool]:
    """Input of ``lexical tag``: a CoNLL-U file (LEMMA/XPOS/FEATS may be ``_``), a Malt-TAB
    file (``word<TAB>tag[<TAB>head...]`` lines) or plain text, one sentence of
    whitespace-separated tokens a line (``-``: standard input).  Returns ``(sentences,
    is_dependency_file)``; plain-text sentences become :class:`DepSentence` objects with HEAD
    ``-1`` (unknown).  A PTB treebank is refused (FormatError naming the file)."""
    from .conll import DepSentence, read_conllu, read_malttab
    from .readers import detect_format

    source = _existing(path)
    name = source_name(source)
    first = first_line(source, encoding)
    if first is None:
        raise FormatError("the input is empty", name)
    _rewind(source)
    try:
        fmt = detect_format(source, encoding)
    except FormatError:
        fmt = None
    if fmt == "malttab":
        sents = list(read_malttab(source, encoding, heads_optional=True))
        return sents, True
    if fmt == "ptb":
        raise FormatError("a PTB treebank, but lexical models tag CoNLL-U, Malt-TAB or plain "
                          "text (one sentence of tokens a line)", name)
    if fmt in ("conllu", "conllx") or _looks_like_conllu(first):
        sents = list(read_conllu(source, encoding=encoding, heads_optional=True))
        if not sents:
            raise FormatError("no sentences in the CoNLL-U input", name)
        return sents, True
    sents = []
    for lineno, line in iter_lines(source, encoding):
        words = line.split()
        if words:
            sents.append(DepSentence(words=words, heads=[-1] * len(words), line=lineno))
    return sents, False


def _what_items(item) -> str:
    """What a reader's item is, in words, for the wrong-kind error."""
    from .conll import DepSentence

    if isinstance(item, DepSentence):
        return "dependency sentences"
    if isinstance(item, list):
        return "tagged sentences (word/TAG tokens) without trees"
    return f"{type(item).__name__} items"


def read_training_items(path, input_kind: str, *, format=None, corpus_format: str = "auto",
                        encoding: str = "utf-8") -> list:
    """The training items of ``path`` for a model kind reading ``input_kind``.

    ``"sentences"``: trees of a bracketed treebank; ``"dependency"``: dependency sentences
    (CoNLL-U, CoNLL-X, Malt-TAB, or bracketed trees converted with Collins head rules);
    ``"sequences"``: sentences (lists of words, :func:`read_corpus` with ``corpus_format``).
    ``format``: the treebank format (default: detected).  Refuses empty data and data of the
    wrong kind (FormatError naming the file); ``ValueError`` for an unknown input kind."""
    encoding = encoding or "utf-8"
    if input_kind == "sequences":
        data = read_corpus(path, corpus_format or "auto", encoding=encoding)
        if not any(len(s) for s in data):
            raise FormatError("the corpus is empty (no words)", source_name(path))
        return data
    if input_kind not in ("sentences", "dependency"):
        raise ValueError(f"unknown input kind {input_kind!r}")
    from .readers import read_treebank
    from .tree import Tree

    path = _existing(path)
    data = list(read_treebank(path, format=format, encoding=encoding))
    name = source_name(path)
    if not data:
        raise FormatError("the treebank is empty", name)
    if input_kind == "sentences":
        if not isinstance(data[0], Tree):
            raise FormatError("this model is trained on bracketed trees (PTB format); the file "
                              f"holds {_what_items(data[0])}", name)
        return data
    from .conll import DepSentence

    if isinstance(data[0], Tree):
        from ..dependency.data import trees_to_dep_sentences
        from .transforms import clean
        return list(trees_to_dep_sentences(clean(t) for t in data))
    if not isinstance(data[0], DepSentence):
        raise FormatError("this model is trained on a dependency treebank (CoNLL-U, "
                          "CoNLL-X, Malt-TAB) or bracketed trees; the file holds "
                          f"{_what_items(data[0])}", name)
    return data
