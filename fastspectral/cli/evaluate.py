"""``fastspectral eval GOLD PRED``: EVALB for bracketed trees, UAS / LAS for dependency files."""
from __future__ import annotations

import sys

from . import kit

EPILOG = """\
Bracketed trees (one per line) are scored exactly like the C EVALB (COLLINS.prm unless -p
names another parameter file) and EVALB's report is printed; when MAX_ERROR sentences could
not be scored the report stops as EVALB's does, the errors go to stderr and the exit status
is 1.  CoNLL-U / CoNLL-X / Malt-TAB files get UAS and LAS with and without punctuation.

examples:
  fastspectral eval gold.trees parsed.trees
  fastspectral eval gold.trees parsed.trees -p new.prm
  fastspectral eval gold.trees parsed.trees -e 100
  fastspectral eval gold.conllu parsed.conllu --punct include
"""

_FORMATS = ("ptb", "conllu", "conllx", "malttab")


def add_eval_command(sub, common, fmt) -> None:
    from .._argtypes import nonneg_int

    p = sub.add_parser("eval", parents=[common], formatter_class=fmt, epilog=EPILOG,
                       help="score predictions against gold",
                       description="Score predicted trees or dependencies against the gold.")
    kit.reads(p.add_argument("gold", metavar="GOLD", help="gold file"))
    kit.reads(p.add_argument("pred", metavar="PRED",
                             help="predicted file (same sentences, same order)"))
    p.add_argument("--format", choices=_FORMATS, default=None,
                   help="format of both files (default: detected from GOLD)")
    kit.reads(p.add_argument("-p", "--params", metavar="PRM", default=None,
                             help="EVALB parameter file, or 'collins' / 'new' for the built-in "
                                  "COLLINS.prm / new.prm (default: collins)"))
    p.add_argument("-e", "--max-error", type=nonneg_int, default=None, metavar="N",
                   help="EVALB's -e: stop after N unscorable sentences (default: the "
                        "parameter file's MAX_ERROR)")
    kit.add_encoding(p, help="encoding of both files (default: utf-8)")
    p.add_argument("--punct", choices=("exclude", "include"), default="exclude",
                   help="dependency scores: headline mode for punctuation (both are printed)")
    u = p.add_argument_group("unsupervised parsing (Klein & Manning 2002; docs/notes/unsupervised.md)")
    u.add_argument("--unlabelled", action="store_true",
                   help="unlabelled bracketing F1: punctuation removed, single-word brackets "
                        "not counted, the whole-sentence bracket counted (as in Klein & "
                        "Manning's published WSJ10 numbers)")
    u.add_argument("--no-sentence-bracket", dest="sentence_bracket", action="store_false",
                   help="with --unlabelled: do not count the whole-sentence bracket either "
                        "(the convention of Klein & Manning's text and of some later papers)")
    u.add_argument("--max-length", type=nonneg_int, default=None, metavar="N",
                   help="with --unlabelled: only sentences of at most N words after "
                        "punctuation removal (default: all)")
    u.add_argument("--by-length", action="store_true",
                   help="with --unlabelled: also the table for lengths 10, 15, 20, 25, 30, 40, all")
    p.set_defaults(func=cmd_eval)


def cmd_eval(args) -> int:
    from ..trees.readers import detect_format

    kit.require_file(args.gold, "gold file")
    kit.require_file(args.pred, "prediction file")
    if getattr(args, "unlabelled", False):
        from ..eval.unlabelled import evaluate_unlabelled_files

        sys.stdout.write(evaluate_unlabelled_files(args.gold, args.pred, args.max_length,
                                                   args.by_length, encoding=args.encoding,
                                                   sentence_bracket=args.sentence_bracket))
        sys.stdout.flush()
        return 0
    if args.max_length is not None or args.by_length or not args.sentence_bracket:
        raise kit.CommandError("--max-length, --by-length and --no-sentence-bracket go with "
                               "--unlabelled")
    fmt = args.format or detect_format(args.gold, args.encoding)
    if fmt == "ptb":
        from ..eval.evalb import run_evalb

        params = args.params or "collins"
        if params not in ("collins", "new"):
            kit.require_file(params, "EVALB parameter file")
        return run_evalb(args.gold, args.pred, params=params, max_error=args.max_error,
                         stdout=sys.stdout, stderr=sys.stderr, encoding=args.encoding)
    if fmt in ("conllu", "conllx", "malttab"):
        from ..eval.attachment import evaluate_dependency_files

        report = evaluate_dependency_files(args.gold, args.pred, punct=args.punct,
                                           format=args.format).report()
        sys.stdout.write(report)
        sys.stdout.flush()
        return 0
    raise kit.CommandError(f"cannot evaluate {args.gold}: it is {fmt!r} data, not bracketed "
                           "trees or a dependency treebank")
