"""Lexical disambiguation with factored labels and two-stage shrinkage (Shah et al. 2010).

:class:`LexicalDisambiguator` (the estimator, kind ``"lexical"``), the data layer
(:mod:`.data`: tokens, labels, label elements, Arabic undiacritisation), the context statistics
(:mod:`.features`), the two stages (:mod:`.engine`), the analyser interface and the suffix
guesser (:mod:`.analyser`), the metrics A1/A2/E1/E2 (:mod:`.metrics`) and the cross-validation
of tables 4 and 5 (:mod:`.cv`).  Imports are lazy: ``import fastspectral.lexical`` is cheap.
"""
from __future__ import annotations

__all__ = ["LexicalDisambiguator", "undiacritize", "LabelScheme", "evaluate",
           "cross_validate"]

_WHERE = {"LexicalDisambiguator": ".model", "undiacritize": ".data", "LabelScheme": ".data",
          "evaluate": ".metrics", "cross_validate": ".cv"}


def __getattr__(name):
    import importlib

    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module 'fastspectral.lexical' has no attribute {name!r}")
