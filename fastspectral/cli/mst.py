"""``fastspectral train mst``: the first-order discriminative dependency parser's options
(McDonald et al. 2005; :class:`fastspectral.rerank.MSTParser`)."""
from __future__ import annotations

from .._argtypes import positive_int
from . import kit

DESCRIPTION = "first-order arc-factored discriminative dependency parser (McDonald et al. 2005)"

EPILOG = """\
examples:
  fastspectral train mst wsj.dp -o wsj.mst --epochs 10
  fastspectral parse wsj.mst test.conllu -o parsed.conllu
"""


def add_common(g, cls) -> None:
    """Options shared with ``train rerank-dep`` (the base parser's)."""
    from ..dependency.data import TAGSETS

    kit.option(g, "--epochs", cls, "epochs", type=positive_int, metavar="N",
               help="averaged-perceptron epochs of the base parser")
    kit.option(g, "--minibatch", cls, "minibatch", type=positive_int, metavar="B",
               help="sentences decoded in parallel with the same weights before each update "
                    "(1: online perceptron)")
    kit.option(g, "--bits", cls, "bits", type=positive_int, metavar="B",
               help="hash the features into 2**B weights (16..28)")
    kit.option(g, "--tagset", cls, "tagset", choices=TAGSETS,
               help="POS tag column: upos, xpos or auto (UPOS for Universal Dependencies)")
    kit.add_seed(g, cls)
    kit.add_jobs(g, cls)


def add_arguments(parser, cls) -> None:
    g = parser.add_argument_group("MST parser (McDonald et al. 2005)")
    add_common(g, cls)
