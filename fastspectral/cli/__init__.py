"""The ``fastspectral`` command line: ``train``, ``parse``, ``eval``, ``lm``, ``demo``, ``bench``.

One module per command (:mod:`.train`, :mod:`.parse`, :mod:`.evaluate`, :mod:`.lm`, :mod:`.demo`),
one small module per model kind's options (:mod:`.pcfg`, :mod:`.spectral`, :mod:`.latent`,
:mod:`.shag`, :mod:`.lm`, ...; the registry :mod:`fastspectral.models` names them) and the shared
:mod:`.kit`.  Run ``fastspectral COMMAND --help`` for the options of each command.

Error contract, for every command: exit 0 on success; 2 with a one-line
``fastspectral: error: ...`` on stderr (file and line where there is one) for usage errors and
every expected failure (bad input, a missing or wrong model file, an unreadable encoding, out of
memory); ``--debug`` shows the traceback instead; 130 when interrupted; ``eval`` exits 1 where
the C EVALB does (MAX_ERROR reached).
"""
from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ..errors import FastSpectralError
from . import kit
from ._parser import CommandParser
from .kit import CommandError

__all__ = ["main", "build_parser", "CommandError"]

_MAIN_EPILOG = """\
commands:
  train   learn a model from a treebank and save it
  parse   parse sentences (one a line) or dependency files with a saved model
  eval    score predictions: EVALB for trees, UAS/LAS for dependencies
  sentences  a treebank's sentences as text (or word/TAG), one a line: input for parse
  lm      sequence models: train a language model, perplexity of any sequence model
  lexical lexical disambiguation (Shah et al. 2010): train / tag / eval / cv
  demo    train and evaluate on the built-in synthetic latent-variable treebank
  bench   time training and parsing for several --jobs values

examples:
  fastspectral demo
  fastspectral train pcfg wsj-train.mrg -o wsj.pcfg
  fastspectral parse wsj.pcfg sentences.txt -o parsed.trees --jobs 4
  fastspectral eval gold.trees parsed.trees

Run 'fastspectral COMMAND --help' for the options of a command.
"""


def _common_parent() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("general options")
    g.add_argument("--debug", action="store_true", help="show the full traceback on errors")
    g.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar and no status messages on stderr")
    g.add_argument("--progress", action="store_true",
                   help="draw the progress bar even when stderr is not a terminal")
    return p


def _words(argv) -> list[str]:
    return [a for a in argv if not a.startswith("-")]


def build_parser(train_type: str | None = None, command: str | None = None
                 ) -> argparse.ArgumentParser:
    """The argument parser; ``train_type``: the ``train`` sub-command whose options are built,
    ``command``: the command being run (the learner classes of the others are not imported, so
    that a command starts fast)."""
    from .demo import add_demo_commands
    from .evaluate import add_eval_command
    from .lexical import add_lexical_command
    from .lm import add_lm_command
    from .parse import add_parse_command
    from .sentences import add_sentences_command
    from .train import add_train_command

    common = _common_parent()
    fmt = argparse.RawDescriptionHelpFormatter
    parser = CommandParser(
        prog="fastspectral", formatter_class=fmt, epilog=_MAIN_EPILOG,
        description="Spectral learning of latent-variable parsers, with compiled chart kernels.")
    parser.add_argument("--version", action="version", version=f"fastspectral {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_train_command(sub, common, fmt, only=train_type)
    add_parse_command(sub, common, fmt)
    add_eval_command(sub, common, fmt)
    add_sentences_command(sub, common, fmt)
    add_lm_command(sub, common, fmt, full=train_type == "lm")
    add_lexical_command(sub, common, fmt, full=command == "lexical")
    add_demo_commands(sub, common, fmt)
    return parser


def _train_type(argv) -> str | None:
    words = _words(argv)
    if len(words) >= 2 and words[0] == "train":
        return words[1]
    if len(words) >= 2 and words[0] == "lm":
        return "lm"
    return None


def main(argv=None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    debug = "--debug" in argv
    kit.setup_logging(quiet="-q" in argv or "--quiet" in argv)
    try:
        words = _words(argv)
        parser = build_parser(_train_type(argv), words[0] if words else None)
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors (2), --help / --version (0)
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    except (FastSpectralError, OSError, ValueError) as exc:
        if debug:
            raise
        print(f"fastspectral: error: {kit.describe(exc)}", file=sys.stderr, flush=True)
        return 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    chain = kit.chosen_parsers(parser, args)
    outputs = [path for _, path, _ in kit.command_paths(chain, args)[1]]
    with kit.interrupts():
        try:
            kit.check_paths(chain, args)
            status = int(args.func(args) or 0)
            kit.check_interrupted()       # a Ctrl-C that compiled code printed and dropped
            return status
        except BrokenPipeError:
            # the reader of stdout went away (e.g. `| head`): stop quietly
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            except (OSError, ValueError):
                pass
            return 0
        except KeyboardInterrupt:
            if args.debug:
                raise
            print("fastspectral: interrupted", file=sys.stderr)
            return 130
        except (FastSpectralError, OSError, ValueError, TypeError, MemoryError, EOFError,
                SystemError) as exc:
            if kit.is_interrupt(exc) or kit.interrupted():
                # Numba wraps a KeyboardInterrupt raised in a callback of compiled code:
                # "SystemError: CPUDispatcher(...) returned a result with an exception set"
                if args.debug:
                    raise
                print("fastspectral: interrupted", file=sys.stderr)
                return 130
            if args.debug or isinstance(exc, SystemError):
                raise
            print(f"fastspectral: error: "
                  f"{kit.describe(exc, kit.option_names(chain), outputs)}",
                  file=sys.stderr, flush=True)
            return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
