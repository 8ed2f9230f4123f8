"""``fastspectral train ccm TREEBANK_OR_TAGGED_TEXT -o MODEL``: options of the constituent-
context model (:class:`fastspectral.unsupervised.CCMParser`)."""
from __future__ import annotations

from .._argtypes import positive_int
from . import atm, kit

DESCRIPTION = "constituent-context model (Klein & Manning 2002): EM over bracketings of tags"

EPILOG = """\
input: PTB trees (only their words and tags are used) or tagged text, one sentence a line
of word/TAG tokens.  Punctuation is removed.

examples:
  fastspectral train ccm wsj-sample.mrg wsj22.trees -o wsj.ccm
  fastspectral train ccm wsj-sample.mrg -o wsj-r3.ccm --init random --seed 3
  fastspectral parse wsj.ccm tagged.txt -o parsed.trees
"""

#: trees or word/TAG lines, like train atm
read = atm.read


def add_arguments(parser, cls) -> None:
    g = parser.add_argument_group("CCM options")
    kit.add_iterations(g, cls)
    kit.option(g, "--init", cls, "init", choices=("split-uniform", "random"),
               help="initialiser: Klein & Manning's, or random (restarts)")
    kit.option(g, "--pseudo-count", cls, "pseudo_count", type=float, metavar="L",
               help="pseudo-count of every constituent yield and context")
    kit.option(g, "--distituent-pseudo-count", cls, "distituent_pseudo_count", type=float,
               metavar="L", help="pseudo-count of every distituent yield and context")
    kit.switch(g, "--no-empty-spans", "empty_spans", value=False,
               help="do not count the empty spans as distituents")
    kit.renamed_flag(g, "--tagset", "--tag-map")
    kit.option(g, "--tag-map", cls, "tag_map", choices=("universal", "as-is"),
               help="map Penn tags to the universal tagset, or keep the tags")
    kit.option(g, "--max-length", cls, "max_length", type=positive_int, metavar="N",
               help="learn from sentences of at most N words (punctuation removed)",
               show_default="every length")
    kit.add_seed(g, cls)
