"""``fastspectral train brown CORPUS... -o FILE``: options of the Brown clusters
(:class:`fastspectral.embeddings.BrownClusters`)."""
from __future__ import annotations

from .._argtypes import positive_int
from . import eigenwords, kit

DESCRIPTION = ("Brown cluster model: class-based bigram clustering (Brown et al. 1992) and "
               "its bit-string word vectors, reusable by other learners (train atm --vectors "
               "brown)")

EPILOG = """\
input: one sentence a line (plain tokens or word/TAG tokens: the tags are dropped), PTB
trees or dependency treebanks (CoNLL-U, CoNLL-X, Malt-TAB: their words); several files are
read as one corpus.

examples:
  fastspectral train brown brown-tagged.txt -o en.brown --n-clusters 100
  fastspectral train brown brown-tagged.txt wsj-sample.mrg -o en.brown --features bits+clusters
"""

#: the same corpora as the eigenword dictionary
read = eigenwords.read


def add_arguments(parser, cls) -> None:
    from ..embeddings.brown_clusters import FEATURES

    g = parser.add_argument_group("Brown cluster options")
    kit.option(g, "--n-clusters", cls, "n_clusters", type=positive_int, metavar="C",
               help="active clusters, the leaves of the hierarchy")
    kit.option(g, "--min-count", cls, "min_count", type=positive_int, metavar="N",
               help="words seen fewer times are not clustered (<unk>)")
    kit.option(g, "--vocabulary", cls, "vocabulary", type=positive_int, metavar="V",
               help="at most this many words are clustered (the most frequent)",
               show_default="all")
    kit.option(g, "--dim", cls, "dim", type=positive_int, metavar="K",
               help="bits in the word vectors", show_default="the depth of the hierarchy")
    kit.option(g, "--features", cls, "features", choices=FEATURES,
               help="word vectors: the +-1 bits of the path, or log2(C) bits and the "
                    "one-hot cluster (Parikh, Cohen & Xing 2014)")
    kit.add_keep_case(g)
