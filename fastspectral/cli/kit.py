"""The command-line kit shared by every command and every model kind's options.

Kept as one module (about 750 lines): the one namespace every command module and every kind's
CLI module imports (``from . import kit``; ``kit.option``, ``kit.reads``, ``kit.renamed_flag``
are the documented contract of a kind's options, docs/ARCHITECTURE.md); its parts (options,
training data, path declarations and checks, the error lines, Ctrl-C inside Numba, logging) are
each used by every command, and ``describe`` reads the option tables the builders fill.

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
import errno
import inspect
import logging
import os
import re
import signal
import stat
import sys

from .._argtypes import int_at_least, markov_order, positive_int
from ..errors import FastSpectralError, FormatError

__all__ = ["CommandError", "option", "switch", "renamed_flag", "class_default",
           "build_estimator", "read_training_data", "first_line", "describe", "logger",
           "setup_logging", "is_stdio", "require_file", "require_output_path", "add_states",
           "add_markov", "add_jobs", "add_seed", "add_iterations", "add_keep_case",
           "add_encoding", "memory_size", "add_max_memory", "apply_max_memory",
           "max_memory_env", "reads", "writes", "not_a_path", "check_paths",
           "chosen_parsers", "needs_path_role", "option_names", "is_interrupt",
           "interrupted", "check_interrupted", "errors_in"]

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
def add_states(g, cls, help="latent states per frequent symbol", show_default=True):
    option(g, "--states", cls, "n_states", type=positive_int, metavar="M", help=help,
           show_default=show_default)


# The command line's defaults that differ from the learners' own, per ``train`` command: the
# settings chosen on WSJ section 22 after training on sections 02-21 (39,832 trees), what users
# of the command line train on; the learners keep the choices made on the 3,914-tree WSJ sample
# (docs/benchmarks-constituency.md, "The command line's defaults").
FULL_SCALE_DEFAULTS = {"spectral": {"n_states": 16},
                       "pivot-em": {"n_states": 32, "iterations": 6, "pruner_states": 8,
                                    "pruner_threshold": 1e-2}}


def full_scale_defaults(args, command: str, partitions: bool = False):
    """``args`` of ``train COMMAND`` with the :data:`FULL_SCALE_DEFAULTS` of that command set
    where the user gave no value (an option not given leaves no attribute, see
    :func:`option`).  A default pruning model (``pruner_states``) is left out where it would
    not have fewer states than the model, and when learning from partitions (``partitions``:
    Dask), which trains none."""
    defaulted = []
    for param, value in FULL_SCALE_DEFAULTS.get(command, {}).items():
        if not hasattr(args, param):
            setattr(args, param, value)
            defaulted.append(param)
    if "pruner_states" in defaulted and (
            partitions or getattr(args, "n_states", args.pruner_states) <= args.pruner_states):
        args.pruner_states = None
    return args


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
        if is_stdio(other):
            continue
        if _same_regular_file(path, other):
            raise CommandError(f"{what} {path} is also an input file: refusing to overwrite it")


#: errno values of a failed write that name no file (the CLI names the output it was writing)
_WRITE_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EIO, getattr(errno, "EDQUOT", errno.ENOSPC),
                 errno.EPIPE)

#: ``name=value`` in a library message: a keyword argument, the command line has an option
_KEYWORD = re.compile(r"(?<![\w.-])([a-z][a-z0-9_]*)=('[^']*'|\"[^\"]*\"|\.\.\.|[^\s,;:()]+)")


def describe(exc: BaseException, options: dict | None = None, outputs=()) -> str:
    """The one-line message of an expected failure.

    ``options`` (:func:`option_names`): the command's options by library parameter name, so
    that advice written for the API (``pass format=...``, ``stop_adjacency=True``) names the
    command's options (``--format``, ``--stop-adjacency``); a memory hint names the options of
    the command that bound the memory.  ``outputs``: the files the command writes, named in a
    write error that carries no file name (``/dev/full``)."""
    options = options or {}
    if isinstance(exc, UnicodeDecodeError):
        return (f"cannot decode the input as {exc.encoding} ({exc.reason} at byte {exc.start}); "
                "pass --encoding (e.g. --encoding latin-1)")
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.strerror}: {exc.filename}"
    if isinstance(exc, OSError) and exc.errno in _WRITE_ERRNOS and len(outputs) == 1:
        return f"cannot write {outputs[0]}: {exc.strerror or exc}"
    if isinstance(exc, MemoryError):
        hints = [f for f in ("--states", "--jobs", "--max-memory") if f in options.values()]
        hints = [("a smaller " if f == "--max-memory" else "fewer ") + f for f in hints]
        return "out of memory" + (f" (try {' or '.join(hints)})" if hints else "")
    text = str(exc).strip().splitlines()
    text = text[0] if text else type(exc).__name__
    # the library's advice names its keyword argument; the command line has an option
    text = re.sub(r"pass format=\.\.\.", "pass --format", text)
    text = re.sub(r"pass encoding=\.\.\.(, e\.g\. encoding='([^']*)')?",
                  lambda m: "pass --encoding" + (f" (e.g. --encoding {m.group(2)})"
                                                 if m.group(2) else ""), text)
    return _KEYWORD.sub(lambda m: _as_option(m, options), text) if options else text


def _as_option(m, options: dict) -> str:
    flag = options.get(m.group(1))
    if flag is None:
        return m.group(0)
    value = m.group(2).strip("'\"")
    if value == "True":
        return flag
    return flag if value == "..." else f"{flag} {value}"


def option_names(parsers) -> dict:
    """``{library parameter name: option}`` of the options of ``parsers`` (the chain of a
    command, :func:`chosen_parsers`): each option's ``dest`` and the name of its flag with
    underscores (``--corpus-format`` answers ``corpus_format``), the longest flag."""
    by_flag: dict = {}
    by_dest: dict = {}
    for p in parsers:
        for a in p._actions:
            flags = [f for f in a.option_strings if f.startswith("--")]
            if not flags or isinstance(a, _Renamed) or a.dest == argparse.SUPPRESS:
                continue
            flag = max(flags, key=len)
            for f in flags:
                by_flag.setdefault(f[2:].replace("-", "_"), flag)
            by_dest.setdefault(a.dest, flag)
    return {**by_flag, **by_dest}


# ------------------------------------------------------------------------------------------------
# the files a command reads and writes
# ------------------------------------------------------------------------------------------------
INPUT, OUTPUT, NOT_A_PATH = "input", "output", "not a path"


def reads(action, *, regular: bool = False, address: bool = False):
    """Declare the option ``action`` (returned by ``add_argument``) a file the command reads.

    ``regular``: it must be a regular file (a model or an array file: a FIFO would block
    ``open()`` forever, a device read forever); streamed inputs may be FIFOs and ``-``.
    ``address``: the value may also be a network address (``tcp://HOST:PORT``, ``HOST:PORT``);
    anything else must be an existing file.  Returns ``action``."""
    action.path_role, action.regular_file, action.address_ok = INPUT, regular, address
    return action


def writes(action):
    """Declare the option ``action`` a file the command writes (never one of its inputs, nor
    another of its outputs).  Returns ``action``."""
    action.path_role = OUTPUT
    return action


def not_a_path(action):
    """Declare that the string option ``action`` is not a file name.  Returns ``action``."""
    action.path_role = NOT_A_PATH
    return action


def chosen_parsers(parser, args) -> list:
    """The parser and the sub-command parsers ``args`` went through, outermost first."""
    chain = [parser]
    while True:
        subs = [a for a in chain[-1]._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs else None
        if name is None or name not in subs[0].choices:
            return chain
        chain.append(subs[0].choices[name])


def needs_path_role(action) -> bool:
    """Whether ``action`` takes a free string (no ``type``, no ``choices``): such an option
    must be declared :func:`reads`, :func:`writes` or :func:`not_a_path`."""
    if isinstance(action, (argparse._SubParsersAction, argparse._HelpAction,
                           argparse._VersionAction, _Renamed)) or action.nargs == 0:
        return False
    return action.choices is None and action.type in (None, str)


def _label(action) -> str:
    flags = [f for f in action.option_strings if f.startswith("--")] or action.option_strings
    return max(flags, key=len) if flags else (action.metavar or action.dest.upper())


def _is_address(value: str) -> bool:
    return "://" in value or re.fullmatch(r"[\w.\-\[\]:]+:\d+", value) is not None


def command_paths(parsers, args) -> tuple[list, list]:
    """``(inputs, outputs)``: ``(option, path, action)`` of every file option given (``-``
    and unset options left out)."""
    ins, outs, seen = [], [], set()
    for p in parsers:
        for a in p._actions:
            role = getattr(a, "path_role", None)
            if role not in (INPUT, OUTPUT):
                continue
            values = getattr(args, a.dest, None)
            values = values if isinstance(values, (list, tuple)) else [values]
            for v in values:
                if not isinstance(v, (str, os.PathLike)) or is_stdio(v) or (a.dest, v) in seen:
                    continue
                seen.add((a.dest, v))
                (ins if role == INPUT else outs).append((_label(a), os.fspath(v), a))
    return ins, outs


def _same_regular_file(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one regular file (symbolic and hard links, ``./``, ``..``);
    devices (``/dev/stdout``, a terminal) are shared harmlessly."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return stat.S_ISREG(sa.st_mode) and (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def check_paths(parsers, args) -> None:
    """The checks of the files of a command before any work: an input declared regular is a
    regular file, an input that may be an address is one or an existing file, no output is an
    input or another output (:class:`CommandError`, one line)."""
    ins, outs = command_paths(parsers, args)
    for label, path, a in ins:
        if getattr(a, "address_ok", False) and not _is_address(path) and \
                not os.path.exists(path):
            raise CommandError(f"{label}: no such file and not an address (tcp://HOST:PORT): "
                               f"{path}")
        if getattr(a, "regular_file", False) and os.path.exists(path) and \
                not os.path.isfile(path):
            raise CommandError(f"{path}: not a regular file")
    for i, (label, path, _) in enumerate(outs):
        for in_label, other, _ in ins:
            if _same_regular_file(path, other):
                raise CommandError(f"{label} {path} is also an input file ({in_label} {other}):"
                                   " refusing to overwrite it")
        for label2, path2, _ in outs[i + 1:]:
            if _same_regular_file(path, path2) or \
                    os.path.realpath(path) == os.path.realpath(path2):
                raise CommandError(f"{label} {path} and {label2} {path2} are the same file: "
                                   "refusing to write it twice")


# ------------------------------------------------------------------------------------------------
# Ctrl-C
# ------------------------------------------------------------------------------------------------
_INTERRUPTED: list = []
#: Python functions that compiled code calls back (Numba's constants, llvmlite's object
#: cache): an exception raised in them is wrapped in ``SystemError`` ("returned a result with
#: an exception set"), printed and dropped, or crashes the compiled caller
_CALLBACKS = frozenset({"_numba_unpickle", "_raw_object_cache_notify",
                        "_raw_object_cache_getbuffer"})
#: seconds before a Ctrl-C that arrived in a callback during compilation is looked at again
_RETRY_S = 0.05


def _package_dir(name: str):
    mod = sys.modules.get(name)
    path = getattr(mod, "__file__", None) if mod is not None else None
    return os.path.dirname(path) + os.sep if path else None


def _in_callback(frame) -> bool:
    """Whether ``frame`` or a frame below it is a callback of compiled code."""
    llvmlite = _package_dir("llvmlite")
    while frame is not None:
        code = frame.f_code
        if code.co_name in _CALLBACKS or (llvmlite and code.co_filename.startswith(llvmlite)):
            return True
        frame = frame.f_back
    return False


def _compiling(frame) -> bool:
    """Whether Numba's dispatcher (compilation) is on the stack of ``frame``."""
    numba = _package_dir("numba")
    while numba and frame is not None:
        if frame.f_code.co_filename.startswith(numba + "core" + os.sep + "dispatcher"):
            return True
        frame = frame.f_back
    return False


def _raise_when_safe(frame, event, arg):
    """Trace function of a Ctrl-C that arrived in a callback of compiled code: the next event
    of a frame outside every callback raises ``KeyboardInterrupt`` there (as a debugger stops
    a program)."""
    if _in_callback(frame):
        return None
    sys.settrace(None)
    raise KeyboardInterrupt


def interrupt_handler(signum, frame):
    """SIGINT: remembered (:func:`interrupted`) and raised as ``KeyboardInterrupt`` at once,
    except in a callback of compiled code (:data:`_CALLBACKS`, llvmlite), where it is
    raised just after: while Numba compiles, at a SIGALRM 0.05 s later (looked at again until
    it lands outside a callback); while compiled code runs, at the next line of the Python
    frame that called it (a trace function on the frames of the stack; Numba compiles
    nothing meanwhile, so tracing costs nothing).  A second Ctrl-C while the first waits (a
    long compiled call) ends the process at once (exit 130)."""
    if signum == signal.SIGINT:
        if _INTERRUPTED:
            print("fastspectral: interrupted", file=sys.stderr, flush=True)
            os._exit(130)
        _INTERRUPTED.append(signum)
    elif not _INTERRUPTED:      # a SIGALRM of someone else
        return
    if not _in_callback(frame):
        raise KeyboardInterrupt
    if _compiling(frame) and _ALARM:
        signal.setitimer(signal.ITIMER_REAL, _RETRY_S)
        return
    f = frame.f_back
    while f is not None:
        f.f_trace = _raise_when_safe
        f = f.f_back
    sys.settrace(_raise_when_safe)


_ALARM: list = []


class interrupts:
    """Context manager of a command: SIGINT handled by :func:`interrupt_handler`, the previous
    handler restored after.  Left alone outside the main thread and where a handler other
    than Python's default is installed."""

    def __enter__(self):
        _INTERRUPTED.clear()
        self.old = {}
        try:
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                if hasattr(signal, "setitimer") and \
                        signal.getsignal(signal.SIGALRM) == signal.SIG_DFL:
                    self.old[signal.SIGALRM] = signal.signal(signal.SIGALRM,
                                                             interrupt_handler)
                    _ALARM.append(True)
                self.old[signal.SIGINT] = signal.signal(signal.SIGINT, interrupt_handler)
        except ValueError:  # not the main thread
            pass
        return self

    def __exit__(self, *exc):
        if sys.gettrace() is _raise_when_safe:
            sys.settrace(None)
        if _ALARM:
            signal.setitimer(signal.ITIMER_REAL, 0)
            _ALARM.clear()
        for sig, old in self.old.items():
            signal.signal(sig, old)
        return False


def interrupted() -> bool:
    """Whether SIGINT arrived during this command (even if the exception was lost)."""
    return bool(_INTERRUPTED)


def check_interrupted() -> None:
    """``KeyboardInterrupt`` when SIGINT arrived and was swallowed: e.g. before saving a model
    trained after the user asked to stop."""
    if _INTERRUPTED:
        raise KeyboardInterrupt


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is, or wraps (``__cause__`` / ``__context__``, as Numba's
    ``SystemError: ... returned a result with an exception set`` does), a
    ``KeyboardInterrupt``."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


#: model kinds that are inputs of other learners, not parsers: where they go instead
_VECTORS = {"eigenwords": ("word vectors", "train atm, latent-dep or rerank-dep"),
            "brown": ("word clusters", "train atm")}


def does_not_parse(path, kind: str, name: str | None = None) -> CommandError:
    """The error of ``parse`` given a model of ``kind`` (class ``name``) that does not parse,
    saying what to do with it instead."""
    what = f"a {name}" if name else f"a {kind} model"
    if kind in _VECTORS:
        vectors, where = _VECTORS[kind]
        return CommandError(f"{path} holds {what} ({vectors}), which does not parse: give it "
                            f"to a learner as --embeddings {path} ({where})")
    return CommandError(f"{path} holds {what}, which does not parse (sequence models are "
                        "scored with 'fastspectral lm eval')")


class _StderrHandler(logging.Handler):
    """Writes ``fastspectral: message`` lines to the current ``sys.stderr`` (looked up at each
    record, so redirections and captured streams are honoured)."""

    def emit(self, record):
        from tqdm import tqdm

        stream = sys.stderr
        # above any progress bar being drawn (a plain line when there is none); a bar whose
        # stream has gone away (closed) must not swallow the line
        try:
            above = tqdm.external_write_mode(file=stream)
            above.__enter__()
        except (OSError, ValueError):
            above = None
        try:
            stream.write(f"fastspectral: {record.getMessage()}\n")
            stream.flush()
        except (OSError, ValueError):
            pass
        if above is not None:
            try:
                above.__exit__(None, None, None)
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
