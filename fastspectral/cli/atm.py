"""``fastspectral train atm TREEBANK_OR_TAGGED_TEXT -o MODEL``: options of the additive-tree-
metric parser (:class:`fastspectral.unsupervised.ATMParser`)."""
from __future__ import annotations

from .._argtypes import float_in, positive_int
from . import kit

DESCRIPTION = ("unsupervised constituency parser with spectral additive tree metrics (Parikh, "
               "Cohen & Xing 2014): learns from tagged sentences, no trees")

EPILOG = """\
input: PTB trees (only their words and tags are used) or tagged text, one sentence a line
of word/TAG tokens; several files are read as one corpus.  Penn Treebank tags are mapped to
the universal tagset (--tag-map as-is keeps them).  Punctuation is removed before parsing.

examples:
  fastspectral train eigenwords brown-tagged.txt wsj-sample.mrg -o en.eigenwords --dim 30
  fastspectral train atm wsj-sample.mrg wsj22.trees -o wsj.atm --embeddings en.eigenwords
  fastspectral parse wsj.atm tagged.txt -o parsed.trees
  fastspectral eval wsj22.trees parsed.trees --unlabelled --max-length 10 --by-length
"""


def add_arguments(parser, cls) -> None:
    # the learner's own tables (imported here: the class is loaded by now, the module at
    # start-up must stay light)
    from ..embeddings.brown_clusters import FEATURES
    from ..unsupervised.atm import KERNELS, TOP_BRACKETS

    add_unsupervised_input(parser)
    g = parser.add_argument_group("ATM options")
    kit.option(g, "--rank", cls, "rank", type=positive_int, metavar="M",
               help="m: singular values in the spectral distance (eq. 5)")
    kit.renamed_flag(g, "--dim", "--rank")
    kit.option(g, "--bandwidth", cls, "bandwidth",
               type=float_in(0.0, lo_open=True, what="a positive number"), metavar="GAMMA",
               help="gamma: bandwidth of the anchor kernel (--kernel relative: a fraction of "
                    "the pair distances, the paper's section 4.1; absolute: in words)")
    kit.option(g, "--kernel", cls, "kernel", choices=KERNELS,
               help="distance term of the anchor kernel: relative |d-d'|/(d+d') (the "
                    "paper's) or absolute |d-d'|")
    kit.reads(kit.option(g, "--embeddings", cls, "embeddings", metavar="FILE",
               help="eigenword file (fastspectral train eigenwords) or Brown-cluster file "
                    "(BrownClusters.save)",
               show_default="eigenwords learned on the training words"), regular=True)
    kit.option(g, "--embedding-dim", cls, "embedding_dim", type=positive_int, metavar="K",
               help="dimension of the vectors learned without --embeddings (Brown: bits)")
    kit.option(g, "--vectors", cls, "vectors", choices=("eigenwords", "brown"),
               help="observed vectors learned without --embeddings: eigenwords (CCA) or "
                    "Brown-cluster bit vectors")
    kit.option(g, "--brown-features", cls, "brown_features", choices=FEATURES,
               help="Brown vectors: path bits and the one-hot cluster (the paper's log C + C), "
                    "or the bits alone")
    kit.option(g, "--brown-clusters", cls, "brown_clusters", type=positive_int, metavar="C",
               help="clusters of the Brown vectors learned with --vectors brown")
    kit.renamed_flag(g, "--tagset", "--tag-map")
    kit.option(g, "--tag-map", cls, "tag_map", choices=("universal", "as-is"),
               help="map Penn tags to the universal tagset, or keep the tags")
    kit.option(g, "--top-bracket", cls, "top_bracket", choices=TOP_BRACKETS,
               help="rooting heuristic: the paper's three rules of section 4.1, the first "
                    "verb, the first punctuation before it, or none")
    kit.switch(g, "--center", "center",
               help="use covariances (means subtracted) instead of second moments")
    kit.add_seed(g, cls)


def add_unsupervised_input(parser) -> None:
    """Nothing to add: the train command's ``--format`` (ptb) and ``--encoding`` apply; a file
    that is not a treebank is read as tagged text."""


def build(args, cls, preset):
    if getattr(args, "embeddings", None) is not None:
        kit.require_file(args.embeddings, "embeddings file")
    return kit.build_estimator(args, cls, preset)


def read(args) -> list:
    """Trees (PTB) or ``(words, tags)`` pairs of tagged text
    (:func:`fastspectral.trees.corpus.read_tagged`)."""
    from ..trees.corpus import read_tagged

    return read_tagged(args.treebank, getattr(args, "encoding", None) or "utf-8",
                       getattr(args, "format", None))
