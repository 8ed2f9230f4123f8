"""Command-line plug-in of the probabilistic L-PCFG learners.

``fastspectral train pivot|em|pivot-em TREEBANK -o MODEL --states M [--iterations K]`` (the type
chosen is ``args.model_type``):

* ``pivot``: :class:`~fastspectral.lpcfg.pivot.PivotLPCFG` (Cohen & Collins 2014);
* ``em``: :class:`~fastspectral.lpcfg.em.EMLPCFG` from a random initialisation;
* ``pivot-em``: EM initialised from the pivot estimates (``EMLPCFG(init="pivot")``).

``fastspectral parse MODEL`` then works as for the other models.  This module imports nothing
heavy at the top (it is loaded when the command line is built).
"""
from __future__ import annotations

import argparse

from .._argtypes import int_at_least as _int_at_least, markov_order as _order

DESCRIPTION = "latent-variable PCFG learnt by the pivot method, EM, or pivot-initialised EM"

EPILOG = """\
examples:
  fastspectral train pivot wsj-train.mrg -o wsj.pivot --states 16
  fastspectral train em wsj-train.mrg -o wsj.em --states 16 --iterations 50
  fastspectral train pivot-em wsj-train.mrg -o wsj.pem --states 16 --iterations 4
  fastspectral parse wsj.pem sentences.txt -o parsed.trees
"""

_DEFAULT_ITERATIONS = {"pivot": 0, "em": 50, "pivot-em": 4}     # EMLPCFG's defaults
# defaults shown in --help: those of EMLPCFG / PivotLPCFG (a test in tests/test_pivot.py checks
# that they agree; importing the classes here would load Numba when the CLI is built)
_D = {"v": 1, "h": 0, "min_count": 20, "smoothing": 0.1,
      "pivot_features": "1,1 0,0 3,3"}






def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return value


def _pair(text: str):
    try:
        i, o = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected INSIDE,OUTSIDE template indices, got {text!r}")
    if not (0 <= i < 6 and 0 <= o < 6):
        raise argparse.ArgumentTypeError(f"template indices must be in 0..5, got {text!r}")
    return (i, o)


def cli_add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the L-PCFG options (``--states``, ``--iterations``, ``--v``, ``--h``, ``--seed``,
    ``--jobs``, ...) to the ``train`` sub-parser."""
    g = parser.add_argument_group("latent-variable PCFG options")
    g.add_argument("--states", type=_int_at_least(1), default=16, metavar="M",
                   help="latent states per frequent non-terminal (default: 16)")
    g.add_argument("--iterations", type=_int_at_least(0), default=None, metavar="K",
                   help="EM iterations (default: 50 for em, 4 for pivot-em; pivot: ignored)")
    g.add_argument("--v", type=_int_at_least(1), default=None, metavar="V",
                   help=f"vertical markovisation order (default: {_D['v']})")
    g.add_argument("--h", type=_order, default=None, metavar="H",
                   help="horizontal markovisation order; 'inf' keeps every sibling "
                        f"(default: {_D['h']})")
    g.add_argument("--min-count", type=_int_at_least(1), default=None, metavar="N",
                   help=f"symbols with fewer training nodes keep one state (default: {_D['min_count']})")
    g.add_argument("--smoothing", type=_fraction, default=None, metavar="A",
                   help=f"EM smoothing of each rule over the parent's states (default: {_D['smoothing']})")
    g.add_argument("--pivot-features", nargs="+", type=_pair, default=None, metavar="I,O",
                   help="pivot / pivot-em: (inside, outside) feature template pairs, 0-based "
                        f"(section 6.2; e.g. --pivot-features 1,1 0,0; default: {_D['pivot_features']})")
    g.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    g.add_argument("--jobs", type=_int_at_least(1), default=None, metavar="N",
                   help="threads for training and the default for parsing (default: all CPUs)")


def cli_train(args, trees):
    """Fit the model named by ``args.model_type`` on ``trees`` and return it."""
    from ..errors import FormatError
    from ..trees.tree import Tree

    trees = list(trees)
    if not trees:
        raise FormatError("the treebank has no trees", getattr(args, "treebank", None))
    if not isinstance(trees[0], Tree):
        raise FormatError("an L-PCFG is trained on bracketed trees (PTB format); this file holds "
                          f"{type(trees[0]).__name__} items", getattr(args, "treebank", None))
    kind = getattr(args, "model_type", "pivot-em")
    common = dict(n_states=args.states, seed=args.seed, jobs=args.jobs)
    for key in ("v", "h", "min_count"):               # unset: the model's default
        if getattr(args, key) is not None:
            common[key] = getattr(args, key)
    piv = {} if args.pivot_features is None else {"feature_pairs": tuple(args.pivot_features)}
    iterations = args.iterations if args.iterations is not None else _DEFAULT_ITERATIONS.get(kind, 2)
    if kind == "pivot":
        from .pivot import PivotLPCFG

        model = PivotLPCFG(**piv, **common)
    elif kind in ("em", "pivot-em"):
        from .em import EMLPCFG

        if args.smoothing is not None:
            common["smoothing"] = args.smoothing
        model = EMLPCFG(iterations=iterations, init="pivot" if kind == "pivot-em" else "random",
                        pivot_options=piv, **common)
    else:
        raise ValueError(f"unknown L-PCFG model type {kind!r} (pivot, em, pivot-em)")
    return model.fit(trees)
