"""Sequence models: hidden Markov models learned by the spectral method of Hsu, Kakade & Zhang
(2009), by EM (Baum-Welch), or by EM started from the spectral estimate.

* :class:`HMM` — the estimator (``method="spectral" | "em" | "spectral-em"``);
* :func:`read_sequences` — one sequence per line (tokens or ``word/TAG``), PTB trees or CoNLL
  files, words or tags;
* :mod:`fastspectral.hmm.spectral`, :mod:`fastspectral.hmm.em` — the learners' kernels.
"""
from .data import Encoded, SymbolTable, read_sequences
from .model import HMM

__all__ = ["HMM", "read_sequences", "SymbolTable", "Encoded"]
