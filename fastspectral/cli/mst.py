"""``fastspectral train mst``: the discriminative dependency parser's options (first-order:
McDonald et al. 2005; second-order sibling, ``--order 2``: McDonald & Pereira 2006;
:class:`fastspectral.rerank.MSTParser`)."""
from __future__ import annotations

from .._argtypes import positive_int
from . import kit

DESCRIPTION = ("arc-factored (first-order) or sibling (second-order) discriminative dependency "
               "parser (McDonald et al. 2005; McDonald & Pereira 2006)")

EPILOG = """\
examples:
  fastspectral train mst wsj.dp -o wsj.mst --iterations 10
  fastspectral train mst wsj.dp -o wsj2.mst --iterations 10 --order 2
  fastspectral parse wsj.mst test.conllu -o parsed.conllu
"""


def add_common(g, cls) -> None:
    """Options shared with ``train rerank-dep`` (the base parser's)."""
    from ..dependency.data import TAGSETS

    kit.option(g, "--iterations", cls, "iterations", type=positive_int, metavar="N",
               help="averaged-perceptron iterations (epochs) of the base parser")
    kit.renamed_flag(g, "--epochs", "--iterations")
    kit.option(g, "--minibatch", cls, "minibatch", type=positive_int, metavar="B",
               help="sentences decoded in parallel with the same weights before each update "
                    "(1: online perceptron)")
    kit.option(g, "--bits", cls, "bits", type=positive_int, metavar="B",
               help="hash the features into 2**B weights (16..28)")
    kit.option(g, "--tag-column", cls, "tag_column", choices=TAGSETS,
               help="POS tag column: upos, xpos or auto (UPOS for Universal Dependencies)")
    kit.renamed_flag(g, "--tagset", "--tag-column")
    kit.add_seed(g, cls)
    kit.add_jobs(g, cls)


def add_arguments(parser, cls) -> None:
    g = parser.add_argument_group("MST parser (McDonald et al. 2005)")
    add_common(g, cls)
    kit.option(g, "--order", cls, "order", type=int, choices=(1, 2),
               help="1: arc-factored model; 2: arcs + sibling parts, second-order Eisner "
                    "(McDonald & Pereira 2006; k-best lists of its own: train rerank-dep "
                    "--kbest-order 2)")
