"""Sequence corpora for the language and sequence models: one sentence a line.

``read_corpus(path, fmt, skip_tokens, max_tokens)`` reads a Brown-style ``word/tag`` file or plain
whitespace-tokenised text (``fmt="auto"`` decides from the first non-empty line) within a token
window: whole sentences are skipped until ``skip_tokens`` tokens were skipped, then taken until
``max_tokens`` were taken, so ``train --tokens N`` and ``eval --skip-tokens N`` use disjoint
sentences.  Gzip files are accepted.
"""
from __future__ import annotations

import os
from typing import Iterator

from ..trees.brown import read_brown
from ..trees.files import iter_lines

__all__ = ["read_corpus", "detect_format", "token_window"]


def detect_format(path, encoding: str = "utf-8") -> str:
    """``"brown"`` if every token of the first non-empty line is ``word/tag``, else ``"text"``."""
    for _, line in iter_lines(path, encoding):
        toks = line.split()
        if not toks:
            continue
        for tok in toks:
            word, slash, tag = tok.rpartition("/")
            if not (word and slash and tag):
                return "text"
        return "brown"
    return "text"


def _text_sentences(path, encoding: str = "utf-8") -> Iterator[list[str]]:
    for _, line in iter_lines(path, encoding):
        toks = line.split()
        if toks:
            yield toks


def read_corpus(path, fmt: str = "auto", skip_tokens: int = 0,
                max_tokens: int | None = None, encoding: str = "utf-8") -> list[list[str]]:
    """Sentences (lists of words) of a corpus file within a token window.

    ``fmt``: ``"auto"``, ``"brown"`` (``word/tag``; tags dropped) or ``"text"``.  Skips whole
    sentences until ``skip_tokens`` tokens were skipped, then takes whole sentences until
    ``max_tokens`` tokens were taken (``None``: to the end).  Raises :class:`FormatError`
    (file and line) for a malformed Brown line and ``FileNotFoundError`` for a missing file.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    if fmt == "auto":
        fmt = detect_format(path, encoding)
    if fmt == "brown":
        source = ([w for w, _ in s] for s in read_brown(path, encoding))
    elif fmt == "text":
        source = _text_sentences(path, encoding)
    else:
        raise ValueError(f"unknown corpus format {fmt!r} (auto, brown, text)")
    return token_window(source, skip_tokens, max_tokens)


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
