"""Latent-variable PCFGs: spectral (:class:`SpectralLPCFG`), pivot / anchor
(:class:`PivotLPCFG`) and EM or pivot-initialised EM (:class:`EMLPCFG`), three siblings of
:class:`~fastspectral.lpcfg.latent.LatentPCFGBase`.

Submodules: :mod:`.latent` (the shared base: treebank preparation, coarse-to-fine parsing, tree
scoring, model files), :mod:`.spectral`, :mod:`.pivot` and :mod:`.em` (the learners),
:mod:`.latent_params` (flat latent parameters on a treebank and the compiled E/M steps shared by
EM and the pivot method), :mod:`.features` (tree-fragment features), :mod:`.estimate` (SVD,
projections, smoothing), :mod:`.params` (parameter arrays of the compiled tensor
inside-outside), :mod:`.exact` (exact-moment estimation for a known L-PCFG, used to check
theorems 1-2).
"""
import importlib

_HOMES = {"SpectralLPCFG": "spectral", "PivotLPCFG": "pivot", "EMLPCFG": "em"}


def __getattr__(name):  # lazy: loading a spectral model does not import the EM / pivot learners
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'fastspectral.lpcfg' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = ["SpectralLPCFG", "PivotLPCFG", "EMLPCFG"]
