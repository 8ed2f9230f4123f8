"""``fastspectral train shag TREEBANK -o MODEL`` plug-in (see ``fastspectral.cli``).

The treebank may be a dependency treebank (CoNLL-U, CoNLL-X, Malt-TAB) or a bracketed
constituency treebank, which is converted with Collins head rules.
"""
from __future__ import annotations

from .._argtypes import (nonneg_float as _nonneg_float, positive_int as _positive_int,
                         unit_interval as _unit_interval)
from .data import TAGSETS
from .model import LEXICAL, MODELS, RIDGE, SMOOTHING, STATES, SHAGParser

__all__ = ["cli_add_arguments", "cli_train", "to_dependency_sentences"]


def cli_add_arguments(parser) -> None:
    """Add the SHAG training options to ``parser`` (an ``argparse`` sub-parser)."""
    g = parser.add_argument_group("SHAG dependency parser (Luque et al. 2012)")
    g.add_argument("--model", choices=MODELS, default="spectral",
                   help="unlexicalised model: deterministic (det), deterministic with a first-"
                        "modifier state (det+f), spectral operator SHAG, or EM-trained SHAG "
                        "(default: spectral)")
    g.add_argument("--states", type=_positive_int, default=STATES, metavar="N",
                   help=f"number of hidden states of the spectral / EM automata (default: {STATES})")
    g.add_argument("--lexical", choices=LEXICAL, default="none",
                   help="lexicalised back-off model combined log-linearly with the model "
                        "(with --model det/det+f it is used alone; default: none)")
    g.add_argument("--iterations", type=_positive_int, default=25, metavar="K",
                   help="EM iterations for --model em (default: 25)")
    g.add_argument("--seed", type=int, default=0, help="EM initialisation seed (default: 0)")
    g.add_argument("--basis", type=int, choices=(1, 2), default=2,
                   help="spectral Hankel basis: 1 = single symbols (the paper), 2 = also frequent "
                        "length-2 prefixes / suffixes (default: 2)")
    g.add_argument("--smoothing", type=_unit_interval, default=SMOOTHING, metavar="W",
                   help="spectral / EM: interpolate the learned automata with the DET+F back-off "
                        f"automaton with weight W in [0, 1); 0 = the paper's unsmoothed model "
                        f"(default: {SMOOTHING})")
    g.add_argument("--ridge", type=_nonneg_float, default=RIDGE, metavar="C",
                   help="spectral: regularise the operators' pseudo-inverse with lambda = C / "
                        f"sqrt(#sequences); 0 = the paper's plain pseudo-inverse (default: {RIDGE})")
    g.add_argument("--tagset", choices=TAGSETS, default="auto",
                   help="POS tag column: upos, xpos (XPOS / CoNLL-X POSTAG / Malt-TAB tag) or auto "
                        "(UPOS for Universal Dependencies treebanks, else xpos; default: auto)")


def to_dependency_sentences(data) -> list:
    """Dependency sentences from reader output: ``DepSentence`` objects pass through,
    constituency ``Tree`` objects are cleaned and converted with Collins head rules."""
    out = []
    trees = []
    for item in data:
        if hasattr(item, "heads") and hasattr(item, "words"):
            out.append(item)
        elif hasattr(item, "children") and hasattr(item, "label"):
            trees.append(item)
        else:
            raise TypeError(f"cannot train a dependency parser on {type(item).__name__} items")
    if trees:
        from ..trees.transforms import clean
        from .data import trees_to_dep_sentences
        out.extend(trees_to_dep_sentences(clean(t) for t in trees))
    return out


def cli_train(args, sents) -> SHAGParser:
    """Train a ``SHAGParser`` from parsed command-line ``args`` on ``sents``."""
    sents = to_dependency_sentences(sents)
    model = SHAGParser(model=args.model, states=args.states, lexical=args.lexical,
                       iterations=args.iterations, seed=getattr(args, "seed", 0),
                       basis=getattr(args, "basis", 2),
                       smoothing=getattr(args, "smoothing", SMOOTHING),
                       tagset=getattr(args, "tagset", "auto"),
                       ridge=getattr(args, "ridge", RIDGE))
    return model.fit(sents)
