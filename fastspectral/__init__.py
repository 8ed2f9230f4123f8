"""fastspectral: spectral learning of latent-variable parsers, with compiled chart kernels.

Every learner of the registry (:mod:`fastspectral.models`) is importable from here
(``fastspectral.PCFG``, ``fastspectral.SpectralLPCFG``, ``fastspectral.SHAGParser`` ...);
``fastspectral.load(path)`` reads any model file.  Imports are lazy, so ``import fastspectral``
stays cheap.
"""
__version__ = "0.1.0"

import os as _os

# The compiled kernels use OpenMP for coarse-grained parallelism (one task per sentence).  Idle
# OpenMP threads should sleep rather than spin: spinning threads steal the cores of a 2-core
# machine from the other workers.  A user's own setting wins (see fastspectral._threads).
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# OpenBLAS's threads likewise busy-wait (about 2**28 cycles) after they start and after each
# call before they sleep: on a 16-core machine `fastspectral parse` of one sentence spent
# 2.5-4.3 CPU-s for 0.5-1.0 s of wall time (docs/notes/throughput.md).  2**4 cycles: they sleep at once.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from .errors import FastSpectralError, FormatError, ModelFileError, NotFittedError  # noqa: E402

_SUBMODULES = ("models", "base", "io", "trees", "grammar", "lpcfg", "dependency", "lm", "hmm",
               "lexical", "embeddings", "unsupervised", "rerank", "latentdep", "linalg", "eval",
               "cli", "synthetic", "dask")
_OTHER = {"Tree": "fastspectral.trees.tree:Tree", "load": "fastspectral.io.modelfile:load",
          "clone": "fastspectral.base:clone"}


def __getattr__(name):  # lazy top-level API
    import importlib

    if name.startswith("__"):
        raise AttributeError(name)
    models = importlib.import_module("fastspectral.models")   # not `from . import`: recursion
    entry = models.kind_of_class(name)
    if entry is not None:
        return entry.load_class()
    if name in _SUBMODULES:
        return importlib.import_module(f"fastspectral.{name}")
    if name in _OTHER:
        module, attr = _OTHER[name].split(":")
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'fastspectral' has no attribute {name!r}")


def __dir__():
    import importlib

    models = importlib.import_module("fastspectral.models")

    return sorted(set(globals()) | set(_OTHER) |
                  {e.target.split(":")[1] for e in models.REGISTRY.values()})


__all__ = ["FastSpectralError", "FormatError", "ModelFileError", "NotFittedError", "Tree",
           "load", "clone", "__version__", "PCFG", "SpectralLPCFG", "PivotLPCFG", "EMLPCFG",
           "SHAGParser", "LatentBigramLM", "KneserNeyBigramLM", "HMM", "LexicalDisambiguator",
           "Eigenwords", "BrownClusters", "ATMParser", "CCMParser", "MSTParser",
           "RerankDepParser", "LatentDependencyModel"]
