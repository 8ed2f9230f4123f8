"""``fastspectral train eigenwords CORPUS... -o FILE``: options of the eigenword dictionary
(:class:`fastspectral.embeddings.Eigenwords`)."""
from __future__ import annotations

from .._argtypes import positive_int
from . import kit

DESCRIPTION = ("eigenword dictionary: CCA word embeddings (Dhillon, Foster & Ungar 2011), "
               "reusable by other learners with --embeddings FILE")

EPILOG = """\
input: one sentence a line (plain tokens or word/TAG tokens: the tags are dropped), PTB
trees or dependency treebanks (CoNLL-U, CoNLL-X, Malt-TAB: their words); several files are
read as one corpus.

examples:
  fastspectral train eigenwords brown-tagged.txt wsj-sample.mrg wsj22.trees -o en.eigenwords --dim 30
  fastspectral train eigenwords brown-tagged.txt wsj-sample.dp -o en.eigenwords --dim 30
  fastspectral train atm wsj-sample.mrg -o wsj.atm --embeddings en.eigenwords
"""


def add_arguments(parser, cls) -> None:
    g = parser.add_argument_group("eigenword options")
    kit.option(g, "--dim", cls, "dim", type=positive_int, metavar="K",
               help="dimension of the word vectors")
    kit.option(g, "--window", cls, "window", type=positive_int, metavar="H",
               help="context words on each side")
    kit.option(g, "--vocabulary", cls, "vocabulary", type=positive_int, metavar="V",
               help="words with a vector of their own (the most frequent)")
    kit.option(g, "--context-vocabulary", cls, "context_vocabulary", type=positive_int,
               metavar="C", help="context words told apart (the most frequent)")
    kit.option(g, "--min-count", cls, "min_count", type=positive_int, metavar="N",
               help="words seen fewer times share <unk>'s vector")
    kit.add_keep_case(g)
    kit.add_seed(g, cls)


def read(args) -> list:
    """The sentences (word lists) of ``args.treebank``: PTB trees, dependency treebanks or one
    sentence a line (:func:`fastspectral.trees.corpus.read_words`)."""
    from ..trees.corpus import read_words

    return read_words(args.treebank, getattr(args, "encoding", None) or "utf-8")
