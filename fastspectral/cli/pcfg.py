"""``fastspectral train pcfg``: the treebank PCFG's options (see :mod:`fastspectral.cli.kit`)."""
from __future__ import annotations

import argparse

from . import kit

DESCRIPTION = "treebank PCFG with markovised binarisation (CKY parsing)"

EPILOG = """\
examples:
  fastspectral train pcfg wsj-train.mrg -o wsj.pcfg
  fastspectral train pcfg train.trees -o model.pcfg --v 1 --h 0 --decode viterbi
  fastspectral train pcfg train.trees -o model.pcfg --h inf --no-tag-parent --jobs 4
"""


def add_arguments(parser, cls) -> None:
    """``--v``, ``--h``, ``--tag-parent`` / ``--no-tag-parent``, ``--decode``, ``--jobs``."""
    g = parser.add_argument_group("PCFG options")
    kit.add_markov(g, cls)
    g.add_argument("--tag-parent", dest="tag_parent", action="store_true", default=argparse.SUPPRESS,
                   help="parent-annotate part-of-speech tags too (NN^NP) (default: "
                        f"{'yes' if kit.class_default(cls, 'tag_parent') else 'no'})")
    g.add_argument("--no-tag-parent", dest="tag_parent", action="store_false",
                   default=argparse.SUPPRESS, help="leave part-of-speech tags unannotated")
    kit.option(g, "--decode", cls, "decode", choices=("max-recall", "viterbi"),
               help="decoding used by the saved model when parsing")
    kit.add_jobs(g, cls)
