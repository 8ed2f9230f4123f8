"""fastspectral: spectral learning of latent-variable parsers, with compiled chart kernels."""
__version__ = "0.1.0"

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
