"""The ``ArgumentParser`` class of the command line and of every sub-command.

argparse's own ``error()`` prints the whole usage before the message; here a usage error is
the one line of the error contract, ``fastspectral: error: MESSAGE`` (exit 2), and the usage
is shown only by ``--help``.  An unknown option names the nearest option of the command it was
given to (``unknown option --stats; did you mean --states?``).
"""
from __future__ import annotations

import argparse
import difflib
import sys

__all__ = ["CommandParser"]


class CommandParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with one-line errors and suggestions for mistyped options.

    Sub-parsers made with ``add_subparsers().add_parser`` are of this class too (argparse's
    ``parser_class`` defaults to the class of the parent)."""

    def error(self, message: str):
        """Print ``fastspectral: error: MESSAGE`` (one line) on stderr and exit with status 2."""
        message = " ".join(str(message).split())
        sys.stderr.write(f"fastspectral: error: {message}\n")
        sys.stderr.flush()
        self.exit(2)

    def parse_args(self, args=None, namespace=None):
        """``parse_known_args``; arguments no (sub-)command knows are an error of the innermost
        command they were given to, naming the nearest option when one is close."""
        argv = sys.argv[1:] if args is None else list(args)
        ns, extras = self.parse_known_args(argv, namespace)
        if extras:
            parser = self._innermost(argv)
            parser.error(parser._unknown_message(extras))
        return ns

    # -------------------------------------------------------------------------------------------
    def _commands(self):
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return action.choices
        return None

    def _innermost(self, argv) -> "CommandParser":
        """The sub-parser selected by the command words of ``argv``."""
        parser = self
        for word in argv:
            if word == "--":
                break
            choices = parser._commands() if isinstance(parser, CommandParser) else None
            if choices and word in choices:
                parser = choices[word]
        return parser

    def _unknown_message(self, extras) -> str:
        options = [a for a in extras if a.startswith("-") and len(a) > 1
                   and not _is_number(a)]
        if not options:
            return f"unrecognized arguments: {' '.join(extras)} (see '{self.prog} --help')"
        bad = options[0].split("=", 1)[0]
        known = [s for s in self._option_string_actions if s.startswith("--")] \
            if bad.startswith("--") else list(self._option_string_actions)
        close = difflib.get_close_matches(bad, known, n=1, cutoff=0.6)
        if close:
            return f"unknown option {bad}; did you mean {close[0]}?"
        return f"unknown option {bad} (see '{self.prog} --help')"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
