"""Latent-variable dependency model with eigenwords (Dhillon, Rodu, Collins, Foster & Ungar 2012).

:class:`LatentDependencyModel` learns spectrally the probability of the words of a dependency
tree given its structure and scores trees (``log_prob``), e.g. as a re-ranking feature.
Imports are lazy: ``import fastspectral.latentdep`` loads nothing heavy.
"""
from __future__ import annotations

__all__ = ["LatentDependencyModel", "LatentDependencyGenerator"]


def __getattr__(name):
    if name == "LatentDependencyModel":
        from .model import LatentDependencyModel
        return LatentDependencyModel
    if name == "LatentDependencyGenerator":
        from .synthetic import LatentDependencyGenerator
        return LatentDependencyGenerator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
