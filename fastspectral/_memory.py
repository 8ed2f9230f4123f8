"""Chart memory: the parsing budget ``max_memory`` and what each parser's chart needs.

Every parser (:class:`~fastspectral.grammar.pcfg.PCFG`, the L-PCFGs of
:mod:`fastspectral.lpcfg`, :class:`~fastspectral.dependency.model.SHAGParser`) has a
``max_memory`` attribute: the bytes its charts may take at once during :meth:`parse`.

* ``None`` (default): the environment variable ``FASTSPECTRAL_MAX_MEMORY`` when set (a size as
  below), else :data:`DEFAULT_FRACTION` of the machine's physical memory;
* an int: bytes; a string: a size such as ``"2G"``, ``"512M"``, ``"1.5GiB"`` (powers of 1024);
* ``0`` or ``"none"``: no limit.

The chart of a sentence is computed before anything is allocated, from its length alone (the
formulas are in ``docs/limits.md`` and in the ``*_chart_bytes`` functions below).  A sentence
whose chart does not fit the budget is refused: a warning on the ``fastspectral`` logger names
it, it gets the parser's documented fallback and is counted in ``last_parse_stats_.too_long``;
the other sentences go on.  Sentences whose chart fits the budget but not the budget divided
by the threads are parsed one at a time, so that the threads together stay within it: the
output never depends on ``jobs``.

Chart memory is kept by the C allocator between sentences (:func:`keep_chart_memory`, called by
every parser's ``parse``): with glibc's defaults each chart of more than a few MB is a fresh
``mmap`` that the kernel zero-fills page by page and unmaps after the sentence, and with two
threads the page faults serialise on the process's memory map (on the 2-core machine: 7-8 s
of system time in 23 s for 400 section-22 sentences parsed twice, PCFG at 2 threads 1.4-1.5x
its one-thread speed).  So the first ``parse`` of a process raises glibc's mmap threshold to
its largest value (32 MiB on 64-bit systems: larger charts are still mapped afresh), the trim
threshold to 1 GiB and the top pad to 64 MiB (``mallopt``): charts are carved from the heap and
reused.  The cost: the process keeps the memory of its largest charts instead of returning it
between sentences.  ``FASTSPECTRAL_MALLOC=system`` leaves the allocator as it is; nothing
changes on other C libraries (macOS, musl) or where ``mallopt`` is missing.
"""
from __future__ import annotations

import contextlib
import contextvars
import ctypes
import logging
import os
import re

import numpy as np

__all__ = ["DEFAULT_FRACTION", "ENV_VAR", "parse_size", "format_size", "physical_memory",
           "resolve_budget", "pcfg_chart_bytes", "lpcfg_chart_bytes", "shag_chart_bytes",
           "mst2_chart_bytes", "kbest_chart_bytes", "Plan", "plan", "over_limits",
           "warn_refused", "keep_chart_memory", "MALLOC_ENV_VAR"]

#: environment variable: ``system`` (or ``default``, ``off``, ``0``) keeps glibc's own
#: allocator settings (:func:`keep_chart_memory`)
MALLOC_ENV_VAR = "FASTSPECTRAL_MALLOC"
_MALLOC = {"done": False, "kept": False}
# glibc's mallopt parameters and the values set (M_MMAP_THRESHOLD's largest allowed value is
# HEAP_MAX_SIZE / 2 = 32 MiB on 64-bit systems; larger requests are refused by mallopt)
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
_MMAP_THRESHOLD = 32 << 20
_TRIM_THRESHOLD = 1 << 30
_TOP_PAD = 64 << 20


def keep_chart_memory() -> bool:
    """Let glibc keep freed chart memory for the next sentence (module docstring); once per
    process, on the first call.  Returns True when the settings are in force.

    The mmap threshold is set first: setting the trim threshold alone switches off glibc's
    dynamic mmap threshold and makes every large chart a fresh mapping (measured 5x more
    system time), so the trim threshold and top pad are set only when it succeeded."""
    if _MALLOC["done"]:
        return _MALLOC["kept"]
    _MALLOC["done"] = True
    if os.environ.get(MALLOC_ENV_VAR, "").strip().lower() in ("system", "default", "off", "0"):
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return False
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, ValueError, OSError):      # not glibc, no confstr name, no symbol
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    if mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) != 1:
        return False
    _MALLOC["kept"] = (mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD) == 1
                       and mallopt(_M_TOP_PAD, _TOP_PAD) == 1)
    return _MALLOC["kept"]


#: share of the physical memory the charts may take when ``max_memory`` is not set
DEFAULT_FRACTION = 0.5
#: environment variable giving the default budget (``fastspectral parse --max-memory`` sets it
#: for the Dask workers it starts)
ENV_VAR = "FASTSPECTRAL_MAX_MEMORY"

_UNITS = {"": 1, "k": 2 ** 10, "m": 2 ** 20, "g": 2 ** 30, "t": 2 ** 40}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)

logger = logging.getLogger("fastspectral")

#: where the sentences of the current ``parse`` call come from: a list of names (e.g.
#: ``FILE:LINE``), one per sentence, set by :func:`sentence_origins` (the command line does)
_ORIGINS: contextvars.ContextVar = contextvars.ContextVar("fastspectral_sentence_origins",
                                                          default=None)


@contextlib.contextmanager
def sentence_origins(names):
    """Within the block, warnings about sentence ``k`` of a ``parse`` call name ``names[k]``
    (e.g. ``"input.txt:1042"``) instead of "sentence k+1 of this batch"."""
    token = _ORIGINS.set(list(names))
    try:
        yield
    finally:
        _ORIGINS.reset(token)


def _sentence_name(k: int) -> str:
    names = _ORIGINS.get()
    if names is not None and 0 <= k < len(names):
        return str(names[k])
    return f"sentence {k + 1} of this batch"


def parse_size(text) -> int:
    """Bytes of a size: an int, or a string ``"2G"``, ``"512M"``, ``"1.5GiB"``, ``"300k"``,
    ``"1000000"`` (K, M, G, T are powers of 1024; a trailing ``B`` / ``iB`` is allowed);
    ``"none"`` and ``0`` mean no limit (0).  ``ValueError`` for anything else."""
    if isinstance(text, bool):
        raise ValueError(f"not a memory size: {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"a memory size cannot be negative: {text!r}")
        return text
    if isinstance(text, float):
        if not text >= 0 or text == float("inf"):
            raise ValueError(f"not a memory size: {text!r}")
        return int(text)
    if not isinstance(text, str):
        raise ValueError(f"not a memory size: {text!r}")
    if text.strip().lower() in ("none", "unlimited"):
        return 0
    m = _SIZE.match(text)
    if m is None:
        raise ValueError(f"not a memory size: {text!r} (examples: 2G, 512M, 1.5GiB, 0 for "
                         "no limit)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_size(n: float) -> str:
    """``n`` bytes as a short human size (``1.5 GiB``)."""
    for unit, scale in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def physical_memory() -> int:
    """Bytes of physical memory (8 GiB when the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 * 2 ** 30


def resolve_budget(max_memory) -> int | None:
    """The budget in bytes of a ``max_memory`` setting (see the module docstring); None when
    there is no limit."""
    if max_memory is None:
        env = os.environ.get(ENV_VAR, "").strip()
        if env:
            try:
                value = parse_size(env)
            except ValueError:
                raise ValueError(f"{ENV_VAR}={env!r} is not a memory size") from None
        else:
            value = int(DEFAULT_FRACTION * physical_memory())
    else:
        value = parse_size(max_memory)
    return value or None


# ---- what a chart needs (bytes allocated before it is filled) ---------------------------------
def pcfg_chart_bytes(n: int, n_symbols: int, n_coarse: int = 0, viterbi: bool = False) -> int:
    """Bytes of the CKY charts of an ``n``-word sentence (``cky.parse_one``).

    ``C = n (n + 1) / 2`` cells.  The coarse chart (the dense kernel's inside and outside by
    start and by end, ``n_coarse`` symbols; 0: no coarse pass) takes
    ``C (41 n_coarse + 5) + 16 n_coarse (n + 1)`` (:func:`dense_coarse_bytes`); the fine chart ``C (41 S + 17)`` with
    max-recall decoding (inside, outside, active lists, pruning mask), ``C (33 S + 9)`` with
    Viterbi (inside, back-pointers, mask); both are alive at once.  Max-recall decoding adds
    ``12 (n + 1)^2``.
    """
    cells = n * (n + 1) // 2
    fine = cells * (33 * n_symbols + 9) if viterbi else cells * (41 * n_symbols + 17)
    coarse = dense_coarse_bytes(n, n_coarse) if n_coarse else 0
    return fine + coarse + 12 * (n + 1) ** 2


def dense_coarse_bytes(n: int, n_coarse: int) -> int:
    """Bytes of the dense coarse chart (``cky.dense_alloc``) of an ``n``-word sentence:
    inside, and inside and outside stored by start and by end (5 doubles), the keep mask (1
    byte) per cell and symbol; exponent and liveness (5 bytes) per cell; the split-point
    scaled rows (2 doubles per symbol and position).  ``C = n (n + 1) / 2`` cells."""
    cells = n * (n + 1) // 2
    return cells * (41 * n_coarse + 5) + 16 * n_coarse * (n + 1)


def lpcfg_chart_bytes(n: int, n_coarse: int) -> int:
    """Bytes of the dense coarse chart of an L-PCFG parse (``cky._prune_one``,
    :func:`dense_coarse_bytes`), known before parsing.  The later passes run over the pruned
    items only: their buffers are counted by the tensor kernel as it allocates them, and a
    sentence that would pass the budget there is refused too."""
    return dense_coarse_bytes(n, n_coarse)


def shag_chart_bytes(n: int, n_states: int, det_states: int) -> int:
    """Bytes of the SHAG inside-outside charts of an ``n``-word sentence (``shag.pyx``) and its
    Eisner decoding: ``P = (n + 1)^2`` spans, joint state ``D = N K`` (``N`` operator states,
    ``K`` deterministic states): ``P (64 D + 32)`` for the eight state-vector charts and four
    scalar ones, ``P (8 K + 16)`` for the arc weights and marginals, ``44 P`` for Eisner."""
    P = (n + 1) ** 2
    return P * (64 * n_states * det_states + 32) + P * (8 * det_states + 16) + 44 * P


def mst2_chart_bytes(n: int) -> int:
    """Bytes of a second-order (sibling) parse of an ``n``-word sentence
    (:class:`~fastspectral.rerank.MSTParser` with ``order=2``): the sibling scores
    ``8 (n + 1)^3``, the arc scores ``8 (n + 1)^2`` and the decoder's five score and five
    back-pointer tables ``60 (n + 1)^2`` (``eisner2.pyx``)."""
    n1 = n + 1
    return 8 * n1 ** 3 + 68 * n1 ** 2


def kbest_chart_bytes(n: int, order: int = 1) -> int:
    """Bytes of the lazy k-best Eisner chart of an ``n``-word sentence (``kbest_eisner.pyx``)
    before any derivation beyond the best is found: ``4 (n + 1)^2`` chart items of 52 bytes
    (the item, its Viterbi score and edge) and the arc scores ``8 (n + 1)^2``; at
    ``order=2``, ``5 (n + 1)^2`` items and the sibling scores ``8 (n + 1)^3``.  The k best
    derivations then add 24 bytes each for the items they reach (at most ``k`` per item)."""
    n1 = n + 1
    if int(order) == 2:
        return 8 * n1 ** 3 + 268 * n1 ** 2
    return 216 * n1 ** 2


# ---- planning a parse call ------------------------------------------------------------------
class Plan:
    """Sentences of one parse call by how they fit the budget: ``parallel`` (chart within the
    budget divided by the threads), ``alone`` (within the budget: parsed one at a time),
    ``refused`` (over the budget)."""

    def __init__(self, parallel, alone, refused, budget):
        self.parallel = parallel
        self.alone = alone
        self.refused = refused
        self.budget = budget


def plan(ids, need, budget, n_threads) -> Plan:
    """Split the sentence ids ``ids`` by their chart bytes ``need[k]`` (see :class:`Plan`)."""
    if budget is None:
        return Plan(list(ids), [], [], None)
    share = budget // max(1, n_threads)
    parallel, alone, refused = [], [], []
    for k in ids:
        b = need[k]
        (parallel if b <= share else alone if b <= budget else refused).append(k)
    return Plan(parallel, alone, refused, budget)


def over_limits(lengths, need, budget, max_words: int, kernel: str, sentences,
                fallback: str) -> np.ndarray:
    """Ids of the sentences over the budget (``need[k]`` bytes) or longer than a kernel's
    ``max_words``, each warned once with ``fallback`` (what it gets instead)."""
    lengths = np.asarray(lengths)
    too_long = lengths > max_words
    big = ((np.asarray(need, dtype=np.float64) > budget) & ~too_long if budget is not None
           else np.zeros_like(too_long))
    if big.any():
        ids = [int(k) for k in np.flatnonzero(big)]
        warn_refused(ids, sentences, {k: int(need[k]) for k in ids}, budget, fallback,
                     outcome="given")
    for k in np.flatnonzero(too_long):
        logger.warning(f"{_sentence_name(int(k))} ({int(lengths[k])} words) is longer than "
                       f"the {kernel} kernel's limit of {max_words} words: given {fallback}")
    return np.flatnonzero(too_long | big)


def warn_refused(refused, sentences, need: dict, budget, fallback: str, shown: int = 10,
                 outcome: str = "not parsed, given") -> None:
    """One warning per refused sentence (the first ``shown``; then one line for the rest);
    ``need``: sentence id -> chart bytes (None or absent: found by a kernel while parsing)."""
    for k in refused[:shown]:
        words = sentences[k]
        head = " ".join(str(w) for w in list(words)[:6])
        more = " ..." if len(words) > 6 else ""
        size = f"{format_size(need[k])} of" if need.get(k) is not None else "more"
        logger.warning(f"{_sentence_name(k)} ({len(words)} words: {head}{more}) needs "
                       f"{size} chart memory, more than the budget of {format_size(budget)} "
                       f"(max_memory, --max-memory): {outcome} {fallback}")
    if len(refused) > shown:
        logger.warning(f"{len(refused) - shown} more sentences over the memory budget, given "
                       f"{fallback}")
