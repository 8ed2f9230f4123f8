"""Spectral dependency parsing with non-deterministic split head-automaton grammars.

Luque, Quattoni, Balle and Carreras, "Spectral Learning for Non-Deterministic Dependency
Parsing", EACL 2012.  Main entry point: :class:`SHAGParser` (``fit`` / ``parse`` / ``save`` /
``load``).  Building blocks: :func:`eisner` (first-order projective Viterbi decoding),
:func:`arc_marginals` (compiled inside-outside for operator SHAGs), :func:`learn_spectral`
(Algorithm 1), :func:`fit_em` (EM baseline) and :class:`BackoffSHAG` (DET / LEX models).
"""
from .backoff import BackoffSHAG
from .data import modifier_sequences, encode_sentences, trees_to_dep_sentences
from .eisner import eisner, eisner_batch
from .inference import arc_marginals, mbr_decode
from .model import SHAGParser
from .spectral import OperatorSHAG, learn_spectral


def __getattr__(name):
    if name == "fit_em":  # imports numba: only on demand
        from .em import fit_em
        return fit_em
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["SHAGParser", "BackoffSHAG", "OperatorSHAG", "learn_spectral", "fit_em", "eisner",
           "eisner_batch", "arc_marginals", "mbr_decode", "modifier_sequences",
           "encode_sentences", "trees_to_dep_sentences"]
