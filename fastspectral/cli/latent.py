"""``fastspectral train pivot|em|pivot-em``: the probabilistic L-PCFG learners' options.

* ``pivot``: :class:`~fastspectral.lpcfg.pivot.PivotLPCFG` (Cohen & Collins 2014);
* ``em``: :class:`~fastspectral.lpcfg.em.EMLPCFG` from a random initialisation;
* ``pivot-em``: EM initialised from the pivot estimates (``EMLPCFG(init="pivot")``).
"""
from __future__ import annotations

import argparse

from .._argtypes import positive_int, unit_interval
from . import kit, lpcfg_options

DESCRIPTION = "latent-variable PCFG learnt by the pivot method, EM, or pivot-initialised EM"

DESCRIPTIONS = {
    "pivot": "latent-variable PCFG by the pivot (anchor) method (Cohen & Collins 2014)",
    "em": "latent-variable PCFG trained by EM from a random start",
    "pivot-em": "latent-variable PCFG trained by EM from the pivot estimates (Pivot+EM)",
}

EPILOG = """\
examples:
  fastspectral train pivot wsj-train.mrg -o wsj.pivot --states 16
  fastspectral train em wsj-train.mrg -o wsj.em --states 16 --iterations 50
  fastspectral train pivot-em wsj-train.mrg -o wsj.pem
  fastspectral parse wsj.pem sentences.txt -o parsed.trees
"""


def _pair(text: str):
    try:
        i, o = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected INSIDE,OUTSIDE template indices, got {text!r}")
    if not (0 <= i < 6 and 0 <= o < 6):
        raise argparse.ArgumentTypeError(f"template indices must be in 0..5, got {text!r}")
    return (i, o)


def _pivot_class():
    from ..lpcfg.pivot import PivotLPCFG
    return PivotLPCFG


def add_arguments(parser, cls) -> None:
    g = parser.add_argument_group("latent-variable PCFG options")
    pem = kit.FULL_SCALE_DEFAULTS["pivot-em"]
    full = "chosen on WSJ section 22 after training on sections 02-21"
    if "iterations" in cls._get_param_names():       # em and pivot-em
        kit.add_states(g, cls, show_default=f"{kit.class_default(cls, 'n_states')} for em; "
                                            f"{pem['n_states']} for pivot-em, {full} "
                                            "(EMLPCFG's own default, 16, was chosen on a "
                                            "3,914-tree sample)")
        kit.add_iterations(g, cls, show_default=f"50 for em; {pem['iterations']} for pivot-em, "
                                                f"{full} (EMLPCFG's own default from the pivot "
                                                "start, 4, was chosen on a 3,914-tree sample)")
    else:
        kit.add_states(g, cls)
    kit.add_markov(g, cls)
    kit.option(g, "--min-count", cls, "min_count", type=positive_int, metavar="N",
               help="symbols with fewer training nodes keep one state")
    kit.option(g, "--parent-smoothing", cls, "parent_smoothing", type=unit_interval,
               metavar="A", help="smoothing of each rule over the parent's states")
    kit.renamed_flag(g, "--smoothing", "--parent-smoothing",
                     "--smoothing meant three different things")
    pivot = _pivot_class()
    g.add_argument("--pivot-features", nargs="+", type=_pair, default=None, metavar="I,O",
                   help="pivot / pivot-em: (inside, outside) feature template pairs, 0-based "
                        "(section 6.2; e.g. --pivot-features 1,1 0,0; default: "
                        f"{kit._show(kit.class_default(pivot, 'feature_pairs'))})")
    kit.add_seed(g, cls)
    kit.add_jobs(g, cls)
    if "iterations" in cls._get_param_names():
        lpcfg_options.add_pruner(
            g, cls, show_states=f"none for em; {pem['pruner_states']} for pivot-em, {full}",
            show_threshold=f"{kit._show(kit.class_default(cls, 'pruner_threshold'))} for em; "
                           f"{pem['pruner_threshold']:g} for pivot-em, {full}")
    else:
        lpcfg_options.add_pruner(g, cls)
    lpcfg_options.add_state_map(g)
    lpcfg_options.add_float32_tensors(g)


after_fit = lpcfg_options.float32_after_fit


def build(args, cls, preset):
    """The learner; ``--pivot-features`` goes to the pivot model (``pivot``) or to the pivot
    initialisation of EM (``pivot-em``)."""
    preset = dict(preset)
    if args.pivot_features is not None:
        if "feature_pairs" in cls._get_param_names():
            preset["feature_pairs"] = tuple(args.pivot_features)
        else:
            preset["pivot_options"] = {"feature_pairs": tuple(args.pivot_features)}
    return lpcfg_options.build(args, cls, preset)
