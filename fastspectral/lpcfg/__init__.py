"""Latent-variable PCFGs: spectral (:class:`SpectralLPCFG`), pivot / anchor
(:class:`PivotLPCFG`) and EM or pivot-initialised EM (:class:`EMLPCFG`).

Submodules: :mod:`.spectral` (the estimator and parser), :mod:`.features` (tree-fragment
features), :mod:`.estimate` (SVD, projections, smoothing), :mod:`.params` (flat parameter arrays
and the compiled tensor inside-outside), :mod:`.exact` (exact-moment estimation for a known
L-PCFG, used to check theorems 1-2), :mod:`.cli` (command-line hook).
"""
from .spectral import SpectralLPCFG
from .pivot import PivotLPCFG
from .em import EMLPCFG

__all__ = ["SpectralLPCFG", "PivotLPCFG", "EMLPCFG"]
