"""Bridges to other NLP libraries, each optional and imported only when used.

* :mod:`fastspectral.integrations.spacy`: the ``"fastspectral"`` spaCy pipeline component
  (``pip install "fastspectral[spacy]"``; registered through spaCy's entry points, so
  ``nlp.add_pipe("fastspectral", config={"model": "wsj.fsm"})`` needs no import).
* :mod:`fastspectral.integrations.nltk`: :class:`~fastspectral.integrations.nltk.Parser`, an
  ``nltk.parse.api.ParserI`` over any fastspectral parser (``pip install "fastspectral[nltk]"``).

Nothing here is imported by ``import fastspectral``; see ``docs/integrations.md``.
"""
