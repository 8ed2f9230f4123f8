"""Brown-corpus style POS-tagged text: one sentence a line, ``word/tag`` tokens.

The tag is what follows the LAST ``/`` of a token, so words may themselves contain ``/``
(``1/2/cd`` is the word ``1/2`` tagged ``cd``).  Tokens are separated by whitespace; empty
(or whitespace-only) lines are skipped.
"""
from __future__ import annotations

from typing import Iterable, Iterator

from ..errors import FormatError
from .files import iter_lines, open_output, source_name

__all__ = ["read_brown", "read_brown_numbered", "write_brown"]


def read_brown(source, encoding: str = "utf-8") -> Iterator[list[tuple[str, str]]]:
    """Stream the sentences of a ``word/tag`` file as lists of ``(word, tag)`` pairs.

    ``source`` is a path (gzip recognised), an open file or an iterable of lines.  Empty lines
    are skipped.  A token without ``/``, with an empty tag (``word/``) or an empty word
    (``/tag``) raises :class:`fastspectral.errors.FormatError` naming the file and line.
    Constant memory: one line is held at a time.
    """
    for _, pairs in read_brown_numbered(source, encoding):
        yield pairs


def read_brown_numbered(source, encoding: str = "utf-8") -> Iterator[tuple[int, list]]:
    """:func:`read_brown` with each sentence's line number: ``(line, [(word, tag), ...])``."""
    name = source_name(source)
    for lineno, line in iter_lines(source, encoding):
        tokens = line.split()
        if not tokens:
            continue
        parts = [tok.rpartition("/") for tok in tokens]
        for word, slash, tag in parts:
            if not (word and tag):
                tok = word + slash + tag
                if not slash:
                    why = "has no '/tag'"
                elif not tag:
                    why = "has an empty tag after the last '/'"
                else:
                    why = "has an empty word before the '/'"
                raise FormatError(f"token {tok!r} {why} (expected word/TAG)", name, lineno)
        yield lineno, [(word, tag) for word, _, tag in parts]


def write_brown(sents: Iterable[Iterable[tuple[str, str]]], dest, encoding: str = "utf-8") -> int:
    """Write ``(word, tag)`` sentences one a line as ``word/tag`` tokens; return the count.

    ``dest`` is a path (gzip-compressed when it ends in ``.gz``) or an open text file.  A word
    or tag containing whitespace, or an empty word or tag, or a tag containing ``/``, raises
    ``ValueError`` (it would not read back the same).
    """
    count = 0
    with open_output(dest, encoding) as fh:
        for sent in sents:
            toks = []
            for word, tag in sent:
                if not word or not tag or "/" in tag or any(c.isspace() for c in word + tag):
                    raise ValueError(f"cannot write token {word!r}/{tag!r} in word/tag format")
                toks.append(f"{word}/{tag}")
            if not toks:
                raise ValueError("cannot write an empty sentence in word/tag format")
            fh.write(" ".join(toks) + "\n")
            count += 1
    return count
