"""Command-line plug-in of the treebank PCFG: ``fastspectral train pcfg TREEBANK -o MODEL``.

The ``train`` command of :mod:`fastspectral.cli` looks model types up in its registry; each
registered module provides

* ``cli_add_arguments(parser)``: add the model's options to the ``train`` sub-parser;
* ``cli_read(args)`` (optional): read the training data named by ``args.treebank`` /
  ``args.format`` (the default reader is :func:`fastspectral.trees.readers.read_treebank`);
* ``cli_train(args, trees_or_sents)``: return the fitted model (saved with ``model.save``).

This module is imported when the command line is built, so it imports nothing heavy at the top.
"""
from __future__ import annotations

import argparse

from .._argtypes import markov_order as _order, positive_int as _positive

DESCRIPTION = "treebank PCFG with markovised binarisation (CKY parsing)"

EPILOG = """\
examples:
  fastspectral train pcfg wsj-train.mrg -o wsj.pcfg
  fastspectral train pcfg train.trees -o model.pcfg --v 1 --h 0 --decode viterbi
  fastspectral train pcfg train.trees -o model.pcfg --h inf --no-tag-parent --jobs 4
"""






def cli_add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the PCFG options (``--v``, ``--h``, ``--tag-parent``, ``--decode``, ``--jobs``)."""
    g = parser.add_argument_group("PCFG options")
    g.add_argument("--v", type=_positive, default=2, metavar="V",
                   help="vertical markovisation order: 1 = no parent annotation, 2 = parent "
                        "(NP^S), 3 = grandparent (default: 2)")
    g.add_argument("--h", type=_order, default=1, metavar="H",
                   help="horizontal markovisation order of the binarisation; 'inf' keeps every "
                        "sibling (default: 1)")
    g.add_argument("--tag-parent", dest="tag_parent", action="store_true", default=True,
                   help="parent-annotate part-of-speech tags too (NN^NP; the default)")
    g.add_argument("--no-tag-parent", dest="tag_parent", action="store_false",
                   help="leave part-of-speech tags unannotated")
    g.add_argument("--decode", choices=("max-recall", "viterbi"), default="max-recall",
                   help="decoding used by the saved model when parsing (default: max-recall)")
    g.add_argument("--jobs", type=_positive, default=None, metavar="N",
                   help="default number of parsing threads stored in the model (default: all "
                        "CPUs at parse time)")


def cli_read(args):
    """Read the training treebank ``args.treebank`` (format ``args.format`` or detected)."""
    from ..trees.readers import read_treebank

    return list(read_treebank(args.treebank, format=args.format))


def cli_train(args, trees):
    """Fit a :class:`~fastspectral.grammar.pcfg.PCFG` on ``trees`` with the command-line options."""
    from ..errors import FormatError
    from ..trees.tree import Tree
    from .pcfg import PCFG

    trees = list(trees)
    if trees and not isinstance(trees[0], Tree):
        raise FormatError("a PCFG is trained on bracketed trees (PTB format); this file holds "
                          f"{type(trees[0]).__name__} items", getattr(args, "treebank", None))
    if not trees:
        raise FormatError("the treebank has no trees", getattr(args, "treebank", None))
    model = PCFG(v=args.v, h=args.h, tag_parent=args.tag_parent, decode=args.decode,
                 jobs=args.jobs)
    fitted = model.fit(trees)
    return model if fitted is None else fitted
