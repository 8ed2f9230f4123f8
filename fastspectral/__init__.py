"""fastspectral: spectral learning of latent-variable parsers, with compiled chart kernels."""
__version__ = "0.1.0"

import os as _os

# The compiled kernels use OpenMP for coarse-grained parallelism (one task per sentence).  Idle
# OpenMP threads should sleep rather than spin: spinning threads steal the cores of a 2-core
# machine from the other workers.  A user's own setting wins.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from .errors import FastSpectralError, FormatError, ModelFileError, NotFittedError  # noqa: E402


def __getattr__(name):  # lazy top-level API, so `import fastspectral` stays cheap
    if name == "PCFG":
        from .grammar.pcfg import PCFG
        return PCFG
    if name == "Tree":
        from .trees.tree import Tree
        return Tree
    if name == "load":
        from .io.modelfile import load
        return load
    if name == "SpectralLPCFG":
        from .lpcfg.spectral import SpectralLPCFG
        return SpectralLPCFG
    raise AttributeError(f"module 'fastspectral' has no attribute {name!r}")


__all__ = ["FastSpectralError", "FormatError", "ModelFileError", "NotFittedError", "PCFG", "Tree",
           "SpectralLPCFG", "load", "__version__"]
