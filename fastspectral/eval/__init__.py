"""Evaluation: EVALB-exact constituency scoring and dependency attachment scores.

* :mod:`fastspectral.eval.evalb`: :func:`evaluate`, :func:`evaluate_files`, :func:`score_sentence`,
  :class:`EvalbParams` (``COLLINS.prm`` defaults, any ``.prm`` file); ``EvalbResult.report()`` is
  EVALB's text; :func:`run_evalb` is the ``eval`` command (report, stderr, exit status).
* :mod:`fastspectral.eval.attachment`: :func:`attachment_scores`,
  :func:`evaluate_dependency_files` (UAS / LAS with and without punctuation).
"""
from .evalb import (COLLINS_PARAMS, EvalbParams, EvalbResult, EvalbSummary, SentenceResult,
                    evaluate, evaluate_files, run_evalb, score_sentence)
from .attachment import (AttachmentCounts, AttachmentResult, attachment_scores,
                         evaluate_dependency_files, is_punctuation)

__all__ = ["COLLINS_PARAMS", "EvalbParams", "EvalbResult", "EvalbSummary", "SentenceResult",
           "evaluate", "evaluate_files", "run_evalb", "score_sentence", "AttachmentCounts", "AttachmentResult",
           "attachment_scores", "evaluate_dependency_files", "is_punctuation"]
