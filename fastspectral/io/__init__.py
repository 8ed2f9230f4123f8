"""Model files: versioned, pickle-free containers (see :mod:`fastspectral.io.modelfile`)."""
from .modelfile import FORMAT_VERSION, load, load_model_file, save_model_file

__all__ = ["FORMAT_VERSION", "load", "load_model_file", "save_model_file"]
