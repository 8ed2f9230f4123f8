"""Spectral learning of latent-variable PCFGs (issue 3): :class:`SpectralLPCFG`.

Submodules: :mod:`.spectral` (the estimator and parser), :mod:`.features` (tree-fragment
features), :mod:`.estimate` (SVD, projections, smoothing), :mod:`.params` (flat parameter arrays
and the compiled tensor inside-outside), :mod:`.exact` (exact-moment estimation for a known
L-PCFG, used to check theorems 1-2), :mod:`.cli` (command-line hook).
"""
from .spectral import SpectralLPCFG

__all__ = ["SpectralLPCFG"]
