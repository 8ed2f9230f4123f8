"""``fastspectral train spectral``: the spectral L-PCFG's options (Cohen et al. 2012/2013)."""
from __future__ import annotations

from .._argtypes import nonneg_float, positive_int, unit_interval
from . import kit, lpcfg_options

DESCRIPTION = "spectral latent-variable PCFG (Cohen et al. 2012/2013)"

EPILOG = """\
examples:
  fastspectral train spectral wsj-train.mrg -o wsj.spectral
  fastspectral train spectral wsj-train.mrg -o wsj.spectral --states 16 --singular-values sv.txt
  fastspectral parse wsj.spectral sentences.txt -o parsed.trees
"""


def add_arguments(parser, cls) -> None:
    g = parser.add_argument_group("spectral L-PCFG options")
    m = kit.FULL_SCALE_DEFAULTS["spectral"]["n_states"]
    kit.add_states(g, cls, help="latent states m of phrasal/intermediate symbols (capped by the "
                                "rank of each symbol's moment matrix)",
                   show_default=f"{m}, chosen on WSJ section 22 after training on sections "
                                f"02-21; SpectralLPCFG's own default, "
                                f"{kit._show(kit.class_default(cls, 'n_states'))}, was chosen "
                                "on a 3,914-tree sample")
    kit.option(g, "--states-pre", cls, "n_states_pre", type=positive_int, metavar="M",
               help="latent states of part-of-speech symbols", show_default="--states")
    kit.add_markov(g, cls)
    kit.option(g, "--kappa", cls, "kappa", type=nonneg_float, metavar="K",
               help="feature scaling sqrt(M / (count + kappa))")
    kit.option(g, "--min-count", cls, "min_count", type=positive_int, metavar="N",
               help="symbols with fewer training nodes keep one state")
    kit.option(g, "--moment-smoothing", cls, "moment_smoothing", type=nonneg_float, metavar="C",
               help="C of the moment interpolation lambda = sqrt(n) / (C + sqrt(n)); 0 = none")
    kit.renamed_flag(g, "--smoothing", "--moment-smoothing",
                     "--smoothing meant three different things")
    kit.option(g, "--moment-backoff", cls, "moment_backoff", choices=("symbol", "rule"),
               help="last level of the moment smoothing: the product of the symbols' mean "
                    "projections (Cohen et al. 2013) or of the rule's own ('rule': the "
                    "estimate of versions before this option)")
    kit.option(g, "--prune-threshold", cls, "prune_threshold", type=unit_interval, metavar="T",
               help="PCFG posterior threshold of coarse-to-fine parsing")
    kit.option(g, "--coarse-threshold", cls, "coarse_threshold", type=unit_interval,
               metavar="T", help="posterior threshold of the coarse v=1 h=0 pass")
    kit.add_seed(g, cls)
    kit.add_jobs(g, cls)
    lpcfg_options.add_pruner(g, cls)
    lpcfg_options.add_state_map(g)
    lpcfg_options.add_float32_tensors(g)
    kit.writes(g.add_argument("--singular-values", metavar="FILE", default=None,
                              help="also write the table of singular values per symbol to FILE (a "
                                   ".png/.pdf/.svg name writes a plot instead; needs matplotlib)"))


build = lpcfg_options.build


def after_fit(args, model) -> None:
    """``--singular-values FILE``: the singular values behind the chosen numbers of states;
    ``--float32-tensors``."""
    lpcfg_options.float32_after_fit(args, model)
    out = args.singular_values
    if not out:
        return
    if out.lower().endswith((".png", ".pdf", ".svg")):
        model.plot_singular_values(out)
    else:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(model.singular_value_table() + "\n")
