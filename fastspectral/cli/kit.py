"""The command-line kit shared by every command and every model kind's options.

* option builders whose help shows the default read from the learner's ``__init__`` signature
  (:func:`option`; argparse's own default is ``None`` = "the class's default", so no default is
  ever copied into the command line);
* :func:`renamed_flag`: an old flag that fails with a message naming the new one;
* :func:`read_training_data`: read and check the training data of an input kind;
* :func:`build_estimator`: the learner from a preset and the options the user gave;
* the error contract (:class:`CommandError`, :func:`describe`) and the status lines (``logging``).

A model kind's CLI module (``fastspectral/cli/<kind>.py``, named by the registry) provides
``DESCRIPTION``, optional ``EPILOG``, ``add_arguments(parser, cls)`` and optionally
``build(args, cls, preset)`` (default :func:`build_estimator`), ``read(args)`` (default
:func:`read_training_data`) and ``after_fit(args, model)``.
"""
from __future__ import annotations

import argparse
import inspect
import logging
import os
import re
import sys

from .._argtypes import int_at_least, markov_order, positive_int
from ..errors import FastSpectralError, FormatError

__all__ = ["CommandError", "option", "switch", "renamed_flag", "class_default",
           "build_estimator", "read_training_data", "first_line", "describe", "logger",
           "setup_logging", "is_stdio", "require_file", "require_output_path", "add_states",
           "add_markov", "add_jobs", "add_seed", "add_iterations", "add_keep_case",
           "add_encoding", "memory_size", "add_max_memory", "apply_max_memory",
           "max_memory_env", "errors_in"]

logger = logging.getLogger("fastspectral")


class CommandError(FastSpectralError):
    """A command-line problem detected before any work starts (missing file, bad option value)."""


# ------------------------------------------------------------------------------------------------
# defaults read from the learner classes
# ------------------------------------------------------------------------------------------------
def class_default(cls, name: str):
    """The default of ``cls.__init__``'s parameter ``name``."""
    param = inspect.signature(cls.__init__).parameters[name]
    return param.default


def _show(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e6:
        return str(int(value))
    if isinstance(value, (tuple, list)):
        return " ".join(",".join(map(str, v)) if isinstance(v, (tuple, list)) else str(v)
                        for v in value)
    return str(value)


def option(group, flag: str, cls, param: str, *, help: str, show_default=True, **kwargs):
    """``group.add_argument(flag, dest=param, ...)`` with ``(default: X)`` taken from ``cls``'s
    signature appended to ``help`` (``show_default`` may be a string instead).  An option the
    user does not give leaves no attribute (``argparse.SUPPRESS``): the class's own default
    applies, and a given value may be None (``--h inf``)."""
    if show_default:
        shown = show_default if isinstance(show_default, str) else _show(class_default(cls, param))
        help = f"{help} (default: {shown})"
    kwargs.setdefault("default", argparse.SUPPRESS)
    return group.add_argument(flag, dest=param, help=help, **kwargs)


def switch(group, flag: str, param: str, *, help: str, value: bool = True):
    """A flag without a value that sets the learner's parameter ``param`` to ``value``.

    Parameters
    ----------
    group : argparse parser or argument group
        Where the flag is added.
    flag : str
        The flag, e.g. ``"--keep-case"``.
    param : str
        The ``dest``: the parameter of the learner's ``__init__`` it sets.
    help : str
        The help text, shown as it is (say the default in it).
    value : bool
        What the flag sets: True (``store_true``) or False (``store_false``).

    Returns
    -------
    argparse.Action
        The added action.  A flag the user does not give leaves no attribute
        (``argparse.SUPPRESS``), so the class's own default applies, as with :func:`option`.
    """
    return group.add_argument(flag, dest=param, action="store_true" if value else "store_false",
                              default=argparse.SUPPRESS, help=help)


class _Renamed(argparse.Action):
    def __init__(self, option_strings, dest, new=None, why="", **kwargs):
        self.new, self.why = new, why
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs="?",
                         help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} was renamed {self.new}{self.why}")


def renamed_flag(parser, old: str, new: str, why: str = "") -> None:
    """An old flag that stops with ``OLD was renamed NEW`` (exit 2) instead of working silently
    differently; hidden from ``--help``."""
    parser.add_argument(old, action=_Renamed, new=new, why=f" ({why})" if why else "")


# ---- options that several kinds share: one flag, one meaning -----------------------------------
def add_states(g, cls, help="latent states per frequent symbol"):
    option(g, "--states", cls, "n_states", type=positive_int, metavar="M", help=help)


def add_markov(g, cls):
    option(g, "--v", cls, "v", type=positive_int, metavar="V",
           help="vertical markovisation order: 1 = no parent annotation, 2 = parent (NP^S)")
    option(g, "--h", cls, "h", type=markov_order, metavar="H",
           help="horizontal markovisation order of the binarisation; 'inf' keeps every sibling")


def add_jobs(g, cls):
    option(g, "--jobs", cls, "jobs", type=positive_int, metavar="N",
           help="default number of parsing threads stored in the model",
           show_default="every available core at parse time")


def memory_size(text: str) -> int:
    """argparse type of a memory size (``2G``, ``512M``, ``0`` = no limit): bytes."""
    from .._memory import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_max_memory(g) -> None:
    """``--max-memory SIZE``: the chart memory budget of parsing (:mod:`fastspectral._memory`)."""
    g.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE",
                   help="memory the parse charts may take at once, e.g. 2G or 512M (0: no "
                        "limit; default: half the physical memory, or $FASTSPECTRAL_MAX_MEMORY); "
                        "a longer sentence is not parsed: a warning names it and it gets the "
                        "model's fallback (docs/limits.md)")


def apply_max_memory(args, model) -> None:
    """Hand ``--max-memory`` to a loaded model."""
    value = getattr(args, "max_memory", None)
    if value is not None and hasattr(model, "max_memory"):
        model.max_memory = value


class max_memory_env:
    """Context manager: ``--max-memory`` in ``$FASTSPECTRAL_MAX_MEMORY`` while worker processes
    are started and run (local Dask workers inherit the environment and load the model
    themselves), the previous value restored afterwards."""

    def __init__(self, args):
        self.value = getattr(args, "max_memory", None)
        self.old = None

    def __enter__(self):
        from .._memory import ENV_VAR

        self.old = os.environ.get(ENV_VAR)
        if self.value is not None:
            os.environ[ENV_VAR] = str(self.value)
        return self

    def __exit__(self, *exc):
        from .._memory import ENV_VAR

        if self.value is not None:
            if self.old is None:
                os.environ.pop(ENV_VAR, None)
            else:
                os.environ[ENV_VAR] = self.old
        return False


def add_seed(g, cls):
    option(g, "--seed", cls, "random_state", type=int, metavar="S", help="random seed")


def add_iterations(g, cls, help="EM iterations", show_default=True):
    option(g, "--iterations", cls, "iterations", type=int_at_least(0), metavar="K", help=help,
           show_default=show_default)


def add_encoding(p, help: str = "input encoding (default: utf-8)") -> None:
    """``--encoding`` (default utf-8) of the files a command reads; ``help``: its help text."""
    from .._argtypes import text_encoding

    p.add_argument("--encoding", default="utf-8", type=text_encoding, metavar="NAME", help=help)


def add_keep_case(g) -> None:
    """``--keep-case``: ``lowercase=False`` for a learner that lower-cases words by default."""
    switch(g, "--keep-case", "lowercase", value=False,
           help="do not lower-case words (default: lower-case)")


# ------------------------------------------------------------------------------------------------
# building and reading
# ------------------------------------------------------------------------------------------------
def build_estimator(args, cls, preset: dict):
    """``cls(**preset, **options)``: every option whose ``dest`` is a parameter of ``cls`` and
    that the user gave — the class keeps its own defaults for the rest."""
    names = cls._get_param_names() if hasattr(cls, "_get_param_names") else \
        [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    kwargs = dict(preset)
    for name in names:
        if hasattr(args, name) and name not in preset:
            kwargs[name] = getattr(args, name)
    return cls(**kwargs)


def read_training_data(args, input_kind: str) -> list:
    """The training items of ``args.treebank`` for a kind reading ``input_kind``
    (``--format``, ``--encoding``, the corpus ``--format`` of sequence models):
    :func:`fastspectral.trees.corpus.read_training_items`."""
    from ..trees.corpus import read_training_items

    return read_training_items(args.treebank, input_kind, format=getattr(args, "format", None),
                               corpus_format=getattr(args, "corpus_format", None) or "auto",
                               encoding=getattr(args, "encoding", None) or "utf-8")


def first_line(path, encoding: str = "utf-8"):
    """The first non-blank line of a file, what a reader looks at to tell trees from text.

    Parameters
    ----------
    path : str or path-like
        The file (``"-"``: standard input, whose lines up to that one are consumed).
    encoding : str
        Its encoding (a line that does not decode raises :class:`FormatError` naming the file
        and the line).

    Returns
    -------
    str or None
        That line with surrounding white space removed; None when every line is blank.
    """
    from ..trees.files import iter_lines

    for _, line in iter_lines(path, encoding):
        if line.strip():
            return line.strip()
    return None


# ------------------------------------------------------------------------------------------------
# files, errors, status lines
# ------------------------------------------------------------------------------------------------
def is_stdio(path) -> bool:
    return path is None or path == "-"


def require_file(path, what: str) -> None:
    """Raise :class:`CommandError` naming ``path`` unless it exists and is not a directory."""
    if is_stdio(path):
        return
    if not os.path.exists(path):
        raise CommandError(f"{what} not found: {path}")
    if os.path.isdir(path):
        raise CommandError(f"{what} is a directory, not a file: {path}")


def require_output_path(path, what: str, inputs=()) -> None:
    """Fail before long work when ``path`` cannot be written, is a directory, or is one of the
    ``inputs`` (writing it would destroy the input)."""
    if is_stdio(path):
        return
    if os.path.isdir(path):
        raise CommandError(f"{what} is a directory: {path}")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CommandError(f"cannot write {what} {path}: directory {parent} does not exist")
    for other in inputs:
        if is_stdio(other) or not os.path.exists(other) or not os.path.exists(path):
            continue
        if os.path.samefile(path, other):
            raise CommandError(f"{what} {path} is also an input file: refusing to overwrite it")


def describe(exc: BaseException) -> str:
    """The one-line message of an expected failure."""
    if isinstance(exc, UnicodeDecodeError):
        return (f"cannot decode the input as {exc.encoding} ({exc.reason} at byte {exc.start}); "
                "pass --encoding (e.g. --encoding latin-1)")
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.strerror}: {exc.filename}"
    if isinstance(exc, MemoryError):
        return "out of memory (try fewer --jobs or a smaller --max-memory)"
    text = str(exc).strip().splitlines()
    text = text[0] if text else type(exc).__name__
    # the library's advice names its keyword argument; the command line has an option
    text = re.sub(r"pass format=\.\.\.", "pass --format", text)
    return re.sub(r"pass encoding=\.\.\.(, e\.g\. encoding='([^']*)')?",
                  lambda m: "pass --encoding" + (f" (e.g. --encoding {m.group(2)})"
                                                 if m.group(2) else ""), text)


class _StderrHandler(logging.Handler):
    """Writes ``fastspectral: message`` lines to the current ``sys.stderr`` (looked up at each
    record, so redirections and captured streams are honoured)."""

    def emit(self, record):
        try:
            from tqdm import tqdm

            # above any progress bar being drawn (a plain line when there is none)
            tqdm.write(f"fastspectral: {record.getMessage()}", file=sys.stderr)
        except (OSError, ValueError):
            pass


_HANDLER: list = []


def setup_logging(quiet: bool = False) -> None:
    """Status lines of the library and the commands go to stderr as ``fastspectral: ...``
    (INFO level; warnings only with ``--quiet``)."""
    if not _HANDLER:
        _HANDLER.append(_StderrHandler())
        logger.addHandler(_HANDLER[0])
        logger.propagate = False
    logger.setLevel(logging.WARNING if quiet else logging.INFO)


def stdin_source(whole: bool = False):
    """Standard input as a binary source for the readers (decoded by them with ``--encoding``,
    errors naming ``<stdin>`` and the line); ``whole=True`` reads it into memory first (for
    format detection, which must look at the head and then read from the start)."""
    from ..trees.files import read_stdin

    if whole:
        return read_stdin()
    return getattr(sys.stdin, "buffer", sys.stdin)


def progress_wanted(args) -> bool:
    """Whether a progress bar will be drawn (a TTY on stderr, or ``--progress``)."""
    if getattr(args, "quiet", False):
        return False
    if getattr(args, "progress", False):
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def make_progress(args, label: str):
    """The progress bar of a command: ``bar(done, total)`` and ``bar.close()``."""
    from .._progress import Progress

    return Progress(label, enabled=False if getattr(args, "quiet", False) else None,
                    force=getattr(args, "progress", False))


class errors_in:
    """Name ``path`` in the FormatError of a model that checks the data it was given (a model
    sees items, not files: its errors carry the item's line only)."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if isinstance(exc, FormatError) and exc.path is None and self.path is not None:
            raise FormatError(exc.message, self.path, exc.line) from None
        return False
