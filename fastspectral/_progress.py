"""A tiny dependency-free progress bar for the command line (written to stderr).

    >>> bar = Progress("parsing", force=True)       # doctest: +SKIP
    >>> for i in range(n):
    ...     ...
    ...     bar(i + 1, n)
    >>> bar.close()

The bar is a callable ``progress(done, total)`` so it can be handed to ``model.parse(...,
progress=bar)``.  It shows counts, percentage, rate and ETA, redraws at most ten times a second and
is silent when the stream is not a terminal (unless ``force=True``) or when ``enabled=False``.
"""
from __future__ import annotations

import sys
import time

__all__ = ["Progress", "format_duration"]


def format_duration(seconds: float) -> str:
    """``75.3`` -> ``"1:15"``; ``3725`` -> ``"1:02:05"``; unknown or negative -> ``"?"``."""
    if seconds is None or seconds != seconds or seconds < 0 or seconds == float("inf"):
        return "?"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Progress bar callable as ``progress(done, total)``.

    Parameters
    ----------
    label : str
        Text shown before the bar (e.g. ``"parsing"``).
    unit : str
        Unit of the rate (``"sent"`` gives ``"12.3 sent/s"``).
    stream : file, default ``sys.stderr``
    enabled : bool or None
        ``False`` disables the bar (``--quiet``); ``None`` enables it only when ``stream`` is a TTY.
    force : bool
        Draw even when ``stream`` is not a TTY (``--progress``).
    min_interval : float
        Minimum seconds between redraws (the final state is always drawn).
    width : int
        Width of the bar in characters.
    """

    def __init__(self, label: str = "", unit: str = "sent", stream=None, enabled=None,
                 force: bool = False, min_interval: float = 0.1, width: int = 24, clock=None):
        self.label = label
        self.unit = unit
        self.stream = sys.stderr if stream is None else stream
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            try:
                enabled = bool(isatty()) if isatty is not None else False
            except (ValueError, OSError):  # closed stream
                enabled = False
            enabled = enabled or force
        self.enabled = bool(enabled)
        self.min_interval = float(min_interval)
        self.width = int(width)
        self._clock = time.monotonic if clock is None else clock
        self._start = self._clock()
        self._last_draw = -float("inf")
        self._drawn = False
        self._last_len = 0
        self.done = 0
        self.total = None

    def render(self, done: int, total: int | None) -> str:
        """The text of the bar for ``done`` of ``total`` items (``total`` None or 0: no bar/ETA)."""
        elapsed = max(self._clock() - self._start, 0.0)
        rate = done / elapsed if elapsed > 0 else 0.0
        head = f"{self.label} " if self.label else ""
        if total:
            frac = min(max(done / total, 0.0), 1.0)
            filled = int(frac * self.width)
            bar = "#" * filled + "-" * (self.width - filled)
            eta = (total - done) / rate if rate > 0 else float("inf")
            tail = "elapsed" if done >= total else "ETA"
            t = elapsed if done >= total else eta
            return (f"{head}[{bar}] {done}/{total} {100 * frac:5.1f}% "
                    f"{rate:.1f} {self.unit}/s {tail} {format_duration(t)}")
        return f"{head}{done} {rate:.1f} {self.unit}/s elapsed {format_duration(elapsed)}"

    def __call__(self, done: int, total: int | None = None) -> None:
        """Record progress; redraw when enabled and the last redraw is old enough."""
        self.done, self.total = done, total
        if not self.enabled:
            return
        now = self._clock()
        final = total is not None and done >= total
        if not final and now - self._last_draw < self.min_interval:
            return
        self._last_draw = now
        text = self.render(done, total)
        pad = " " * max(self._last_len - len(text), 0)
        self._last_len = len(text)
        try:
            self.stream.write("\r" + text + pad)
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False
            return
        self._drawn = True

    def close(self) -> None:
        """End the line if anything was drawn (call once when the work is over)."""
        if self.enabled and self._drawn:
            try:
                self.stream.write("\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass
        self._drawn = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
