"""The command line's progress bar (on stderr), drawn by ``tqdm``.

    >>> bar = Progress("parsing", force=True)       # doctest: +SKIP
    >>> for i in range(n):
    ...     ...
    ...     bar(i + 1, n)
    >>> bar.close()

The bar is a callable ``progress(done, total)`` so it can be handed to ``model.parse(...,
progress=bar)``; the library never draws anything itself.  It shows counts, percentage, rate and
ETA (``parsing [######------] 5/10  50.0% 2.5 sent/s ETA 0:02``), redraws at most ten times a
second (the final state is always drawn) and is silent when the stream is not a terminal (unless
``force=True``) or when ``enabled=False``.  ``tqdm`` handles the terminal (line rewriting, bars of
several threads, :func:`write` of log lines above the bar without breaking it).
"""
from __future__ import annotations

import sys
import time

from tqdm import tqdm

__all__ = ["Progress", "format_duration", "write"]


def format_duration(seconds: float) -> str:
    """``75.3`` -> ``"1:15"``; ``3725`` -> ``"1:02:05"``; unknown or negative -> ``"?"``."""
    if seconds is None or seconds != seconds or seconds < 0 or seconds == float("inf"):
        return "?"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def write(text: str, stream=None) -> None:
    """Write a line to ``stream`` (default ``sys.stderr``) above any progress bar being drawn
    (``tqdm.write``): what a logging handler should use while a bar may be on screen."""
    tqdm.write(text, file=sys.stderr if stream is None else stream)


class _Bar(tqdm):
    """``tqdm`` with the bar's own text: the rate is the average since the start, the ETA and
    elapsed time read ``m:ss`` (:func:`format_duration`), no bar without a total."""

    monitor_interval = 0          # no monitor thread: the bar is redrawn by progress calls only

    @property
    def format_dict(self):
        d = super().format_dict
        n, total, elapsed = d["n"], d["total"], max(d["elapsed"], 0.0)
        rate = n / elapsed if elapsed > 0 else 0.0
        d["rate_text"] = f"{rate:.1f} {self.unit}/s"
        if total:
            if n >= total:
                d["eta_text"] = "elapsed " + format_duration(elapsed)
            else:
                d["eta_text"] = "ETA " + format_duration((total - n) / rate if rate > 0
                                                         else float("inf"))
            d["bar_format"] = ("{desc}[{bar:" + str(self._width) + "}] {n}/{total} "
                               "{percentage:5.1f}% {rate_text} {eta_text}")
        else:
            d["eta_text"] = "elapsed " + format_duration(elapsed)
            d["bar_format"] = "{desc}{n} {rate_text} {eta_text}"
        return d


class Progress:
    """Progress bar callable as ``progress(done, total)``; ``close()`` ends its line.

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
    clock : callable, optional
        Seconds as a float (default ``time.monotonic``); for tests.
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
        self.done = 0
        self.total = None
        self._drawn = False
        self._bar = None
        if not self.enabled:
            return
        clock = time.monotonic if clock is None else clock
        # delay: nothing is drawn before the first progress call
        self._bar = _Bar(total=None, desc=f"{label} " if label else "", unit=unit,
                         file=self.stream, mininterval=float(min_interval), miniters=1,
                         smoothing=0, ascii="-#", dynamic_ncols=False, leave=True, delay=1e-9)
        self._bar._width = int(width)
        self._bar._time = clock
        self._bar.start_t = clock()
        self._bar.last_print_t = -float("inf")   # the first progress call draws
        self._bar.delay = 0

    def __call__(self, done: int, total: int | None = None) -> None:
        """Record progress; redraw when enabled and the last redraw is old enough."""
        self.done, self.total = done, total
        bar = self._bar
        if bar is None:
            return
        try:
            if total != bar.total:
                bar.total = total
            drawn = bar.update(done - bar.n)
            if total is not None and done >= total and not drawn:
                bar.refresh()            # the final state is always drawn
                drawn = True
        except (OSError, ValueError):    # the stream went away: stop drawing
            self._stop()
            return
        self._drawn = self._drawn or bool(drawn)

    def _stop(self) -> None:
        self.enabled = False
        if self._bar is not None:
            self._bar.disable = True
            self._bar = None

    def close(self) -> None:
        """End the line if anything was drawn (call once when the work is over)."""
        bar = self._bar
        if bar is None:
            return
        if not self._drawn:
            bar.disable = True           # nothing on screen: leave the line alone
        try:
            bar.close()
        except (OSError, ValueError):
            pass
        self._bar = None
        self._drawn = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
