"""Evaluation: EVALB-exact constituency scoring and dependency attachment scores.

* :mod:`fastspectral.eval.evalb`: :func:`evaluate`, :func:`evaluate_files`, :func:`score_sentence`,
  :class:`EvalbParams` (``COLLINS.prm`` defaults); ``EvalbResult.report()`` is EVALB's text.
* :mod:`fastspectral.eval.attachment`: :func:`attachment_scores`,
  :func:`evaluate_dependency_files` (UAS / LAS with and without punctuation).
"""
from .evalb import (COLLINS_PARAMS, EvalbParams, EvalbResult, EvalbSummary, SentenceResult,
                    evaluate, evaluate_files, score_sentence)
from .attachment import (AttachmentCounts, AttachmentResult, attachment_scores,
                         evaluate_dependency_files, is_punctuation)

__all__ = ["COLLINS_PARAMS", "EvalbParams", "EvalbResult", "EvalbSummary", "SentenceResult",
           "evaluate", "evaluate_files", "score_sentence", "AttachmentCounts", "AttachmentResult",
           "attachment_scores", "evaluate_dependency_files", "is_punctuation"]
