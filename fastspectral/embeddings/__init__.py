"""Word embeddings learned spectrally: the eigenword dictionary (CCA between a word and its
context, Dhillon, Foster & Ungar 2011), reusable by any learner (``--embeddings FILE``)."""
from .eigenwords import Eigenwords

__all__ = ["Eigenwords"]
