"""argparse value types shared by the command line and its plug-ins (clear messages, no traceback)."""
from __future__ import annotations

import argparse


def int_at_least(lo: int, what: str | None = None):
    """A type accepting integers >= ``lo``."""
    what = what or ("a positive integer" if lo == 1 else
                    "a non-negative integer" if lo == 0 else f"an integer >= {lo}")

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


positive_int = int_at_least(1)
nonneg_int = int_at_least(0)


def positive_int_or_none(text: str):
    """A positive integer, or ``none`` (None)."""
    if text.lower() == "none":
        return None
    return int_at_least(1, "a positive integer or 'none'")(text)


def markov_order(text: str):
    """A horizontal markovisation order: a non-negative integer, or ``inf`` / ``none`` (None)."""
    if text.lower() in ("inf", "none", "infinite"):
        return None
    return int_at_least(0, "a non-negative integer or 'inf'")(text)


def float_in(lo: float, hi: float = float("inf"), *, lo_open: bool = False,
             hi_open: bool = True, what: str, auto: bool = False):
    """A type accepting numbers in the interval from ``lo`` to ``hi`` (open ends as flagged);
    with ``auto``, ``auto`` / ``none`` give None.  ``what`` names the accepted values in the
    message."""
    what = f"{what} or 'auto'" if auto else what

    def parse(text: str):
        if auto and text.lower() in ("auto", "none"):
            return None
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not ((value > lo if lo_open else value >= lo)
                and (value < hi if hi_open else value <= hi)):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


nonneg_float = float_in(0.0, what="a non-negative number")
"""A number >= 0."""
unit_interval = float_in(0.0, 1.0, what="a number in [0, 1)")
"""A number in [0, 1) (an interpolation weight)."""


def text_encoding(text: str) -> str:
    """A text encoding known to :mod:`codecs` (``utf-8``, ``latin-1``, ...), returned as
    given.  Unknown names, the empty name and codecs that are not text encodings (``rot13``,
    a str-to-str transform; ``base64``, bytes to bytes) are refused."""
    import codecs

    try:
        info = codecs.lookup(text)
    except (LookupError, TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"unknown encoding {text!r} (e.g. utf-8, "
                                         "latin-1)") from None
    if not getattr(info, "_is_text_encoding", True):
        raise argparse.ArgumentTypeError(f"{text!r} is a codec but not a text encoding "
                                         "(e.g. utf-8, latin-1)")
    return text
