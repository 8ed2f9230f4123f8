"""Spectral dependency parsing with non-deterministic split head-automaton grammars.

Luque, Quattoni, Balle and Carreras, "Spectral Learning for Non-Deterministic Dependency
Parsing", EACL 2012.  Main entry point: :class:`SHAGParser` (``fit`` / ``parse`` / ``save`` /
``load``).  Building blocks: :func:`eisner` (first-order projective Viterbi decoding),
:func:`arc_marginals` (compiled inside-outside for operator SHAGs), :func:`learn_spectral`
(Algorithm 1), :func:`fit_em` (EM baseline) and :class:`BackoffSHAG` (DET / LEX models).
"""
import importlib

from .data import modifier_sequences, encode_sentences, trees_to_dep_sentences
from .eisner import eisner, eisner_batch      # (the function shadows its module's name)

# the submodule of each other name, imported on first use (PEP 562): a user of ``data`` alone
# (the re-ranker's MST parser) does not import the learners or SciPy's linear algebra
_WHERE = {"BackoffSHAG": "backoff", "arc_marginals": "inference", "mbr_decode": "inference",
          "SHAGParser": "model", "OperatorSHAG": "spectral", "learn_spectral": "spectral",
          "fit_em": "em"}


def __getattr__(name):
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{where}"), name)


def __dir__():
    return sorted(set(globals()) | set(_WHERE))


__all__ = ["SHAGParser", "BackoffSHAG", "OperatorSHAG", "learn_spectral", "fit_em", "eisner",
           "eisner_batch", "arc_marginals", "mbr_decode", "modifier_sequences",
           "encode_sentences", "trees_to_dep_sentences"]
