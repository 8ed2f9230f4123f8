"""Command-line plug-in of the spectral L-PCFG: ``fastspectral train spectral TREEBANK -o MODEL``.

Provides ``cli_add_arguments(parser)``, ``cli_read(args)`` and ``cli_train(args, trees)`` for the
``train`` command of :mod:`fastspectral.cli` (see :mod:`fastspectral.grammar.cli` for the
protocol).  Imports nothing heavy at the top.
"""
from __future__ import annotations

import argparse

from .._argtypes import markov_order as _order, nonneg_float as _nonneg_float, positive_int as _positive

DESCRIPTION = "spectral latent-variable PCFG (Cohen et al. 2012/2013), tensor inside-outside"

EPILOG = """\
examples:
  fastspectral train spectral wsj-train.mrg -o wsj.lpcfg --states 16
  fastspectral train spectral train.trees -o model.lpcfg --states 24 --states-pre 8 --jobs 2
  fastspectral train spectral train.trees -o model.lpcfg --states 16 --singular-values sv.txt
"""








def _threshold(text: str) -> float:
    value = _nonneg_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"expected a threshold in [0, 1), got {text!r}")
    return value


def cli_add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the L-PCFG options (``--states M``, ``--states-pre``, smoothing, pruning, ...)."""
    g = parser.add_argument_group("spectral L-PCFG options")
    g.add_argument("--states", type=_positive, default=8, metavar="M",
                   help="latent states m of phrasal/intermediate symbols (capped by the rank "
                        "of each symbol's moment matrix; default: 8)")
    g.add_argument("--states-pre", type=_positive, default=None, metavar="M",
                   help="latent states of part-of-speech symbols (default: --states)")
    g.add_argument("--v", type=_positive, default=2, metavar="V",
                   help="vertical markovisation of the underlying PCFG (default: 2)")
    g.add_argument("--h", type=_order, default=1, metavar="H",
                   help="horizontal markovisation of the underlying PCFG (default: 1)")
    g.add_argument("--kappa", type=_nonneg_float, default=5.0,
                   help="feature scaling sqrt(M / (count + kappa)) (default: 5)")
    g.add_argument("--min-count", type=_positive, default=20, metavar="N",
                   help="symbols with fewer training nodes keep one state (default: 20)")
    g.add_argument("--smoothing", type=_nonneg_float, default=30.0, metavar="C",
                   help="interpolation constant C of the parameter smoothing, 0 = none "
                        "(default: 30)")
    g.add_argument("--prune-threshold", type=_threshold, default=1e-5, metavar="T",
                   help="PCFG posterior threshold of coarse-to-fine parsing (default: 1e-5)")
    g.add_argument("--coarse-threshold", type=_threshold, default=3e-3, metavar="T",
                   help="posterior threshold of the coarse v=1 h=0 pass (default: 3e-3)")
    g.add_argument("--jobs", type=_positive, default=None, metavar="N",
                   help="default number of parsing threads stored in the model (default: all "
                        "CPUs at parse time)")
    g.add_argument("--singular-values", metavar="FILE", default=None,
                   help="also write the table of singular values per symbol to FILE "
                        "(a .png/.pdf/.svg name writes a plot instead; needs matplotlib)")


def cli_read(args):
    """Read the training treebank ``args.treebank`` (format ``args.format`` or detected)."""
    from ..trees.readers import read_treebank

    return list(read_treebank(args.treebank, format=getattr(args, "format", None)))


def cli_train(args, trees):
    """Fit a :class:`~fastspectral.lpcfg.SpectralLPCFG` on ``trees`` with the command-line options."""
    from ..errors import FormatError
    from ..trees.tree import Tree
    from .spectral import SpectralLPCFG

    trees = list(trees)
    where = getattr(args, "treebank", None)
    if not trees:
        raise FormatError("the treebank has no trees", where)
    if not isinstance(trees[0], Tree):
        raise FormatError("a spectral L-PCFG is trained on bracketed trees (PTB format); this "
                          f"file holds {type(trees[0]).__name__} items", where)
    model = SpectralLPCFG(n_states=args.states, n_states_pre=args.states_pre, v=args.v, h=args.h,
                          kappa=args.kappa, min_count=args.min_count, smoothing=args.smoothing,
                          prune_threshold=args.prune_threshold,
                          coarse_threshold=args.coarse_threshold, jobs=args.jobs)
    model.fit(trees)
    out = getattr(args, "singular_values", None)
    if out:
        if out.lower().endswith((".png", ".pdf", ".svg")):
            model.plot_singular_values(out)
        else:
            with open(out, "w", encoding="utf-8") as fh:
                fh.write(model.singular_value_table() + "\n")
    return model
