"""``fastspectral train shag``: the split head-automaton dependency parser's options (Luque et
al. 2012).  The treebank may be a dependency treebank (CoNLL-U, CoNLL-X, Malt-TAB) or a
bracketed constituency treebank, converted with Collins head rules."""
from __future__ import annotations

from .._argtypes import nonneg_float, positive_int, unit_interval
from . import kit

DESCRIPTION = "spectral split head-automaton dependency parser (Luque et al. 2012)"

EPILOG = """\
examples:
  fastspectral train shag wsj.dp -o wsj.shag
  fastspectral train shag esp.train -o esp.shag --method spectral --states 6 --lexical lex+fcp
  fastspectral train shag en_ewt-ud-train.conllu -o ewt.shag --method em --iterations 25
"""


def add_arguments(parser, cls) -> None:
    from ..dependency.data import TAGSETS
    from ..dependency.model import LEXICAL, MODELS

    g = parser.add_argument_group("SHAG dependency parser (Luque et al. 2012)")
    kit.option(g, "--method", cls, "method", choices=MODELS,
               help="unlexicalised model: deterministic (det), deterministic with a first-"
                    "modifier state (det+f), spectral operator SHAG, or EM-trained SHAG")
    kit.renamed_flag(g, "--model", "--method")
    kit.add_states(g, cls, help="hidden states of the spectral / EM automata")
    kit.option(g, "--lexical", cls, "lexical", choices=LEXICAL,
               help="lexicalised back-off model combined log-linearly with the model (with "
                    "--method det/det+f it is used alone)")
    kit.option(g, "--iterations", cls, "iterations", type=positive_int, metavar="K",
               help="EM iterations for --method em")
    kit.add_seed(g, cls)
    kit.option(g, "--basis", cls, "basis", type=int, choices=(1, 2),
               help="spectral Hankel basis: 1 = single symbols (the paper), 2 = also frequent "
                    "length-2 prefixes / suffixes")
    kit.option(g, "--backoff-weight", cls, "backoff_weight", type=unit_interval, metavar="W",
               help="spectral / EM: interpolate the learned automata with the DET+F back-off "
                    "automaton with weight W in [0, 1); 0 = the paper's unsmoothed model")
    kit.renamed_flag(g, "--smoothing", "--backoff-weight",
                     "--smoothing meant three different things")
    kit.option(g, "--ridge", cls, "ridge", type=nonneg_float, metavar="C",
               help="spectral: regularise the operators' pseudo-inverse with lambda = C / "
                    "sqrt(#sequences); 0 = the paper's plain pseudo-inverse")
    kit.renamed_flag(g, "--tagset", "--tag-column")
    kit.option(g, "--tag-column", cls, "tag_column", choices=TAGSETS,
               help="POS tag column: upos, xpos (XPOS / CoNLL-X POSTAG / Malt-TAB tag) or auto "
                    "(UPOS for Universal Dependencies treebanks, else xpos)")
