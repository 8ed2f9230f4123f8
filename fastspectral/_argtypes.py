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


def markov_order(text: str):
    """A horizontal markovisation order: a non-negative integer, or ``inf`` / ``none`` (None)."""
    if text.lower() in ("inf", "none", "infinite"):
        return None
    return int_at_least(0, "a non-negative integer or 'inf'")(text)


def nonneg_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number, got {text!r}")
    return value


def unit_interval(text: str) -> float:
    """A number in [0, 1) (an interpolation weight)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return value
