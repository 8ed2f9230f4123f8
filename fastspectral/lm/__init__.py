"""Bigram language models (Cohen & Collins 2014, section 8).

* :class:`LatentBigramLM` — the Saul–Pereira latent-class bigram model ``p(w2 | w1) = sum_h
  r(h | w1) s(w2 | h)`` learned by the pivot (anchor) method, pivot + EM, or EM.
* :class:`KneserNeyBigramLM` — interpolated (modified) Kneser–Ney bigram baseline.
* :func:`~fastspectral.trees.corpus.read_corpus` reads their corpora: Brown ``word/tag`` files,
  plain whitespace-tokenised text, or the words of PTB trees and CoNLL files
  (``fastspectral lm train|eval`` is :mod:`fastspectral.cli.lm`).

Both are estimators (:class:`fastspectral.base.Estimator`, ``input_kind = "sequences"``):
``fit(sentences)``, ``log_likelihood(sentences) -> (total log-probability, predicted tokens)``,
``perplexity(sentences)``, ``save`` / ``load``.
"""
from .kneser_ney import BOS, EOS, UNK, KneserNeyBigramLM, Vocabulary
from .saul_pereira import LatentBigramLM

__all__ = ["LatentBigramLM", "KneserNeyBigramLM", "Vocabulary", "BOS", "EOS", "UNK"]
