"""Sequence models: hidden Markov models learned by the spectral method of Hsu, Kakade & Zhang
(2009), by EM (Baum-Welch), or by EM started from the spectral estimate.

* :class:`HMM` — the estimator (``method="spectral" | "em" | "spectral-em"``);
* :func:`read_sequences` — one sequence per line (tokens or ``word/TAG``), PTB trees or CoNLL
  files, words or tags (:func:`fastspectral.trees.corpus.read_sequences`);
* :mod:`fastspectral.hmm.spectral`, :mod:`fastspectral.hmm.em` — the learners' kernels.
"""
from ..trees.corpus import read_sequences
from .data import Encoded, SymbolTable
from .model import HMM

__all__ = ["HMM", "read_sequences", "SymbolTable", "Encoded"]
