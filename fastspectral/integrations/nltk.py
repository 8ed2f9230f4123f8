"""NLTK interoperability: a fastspectral model behind NLTK's parser interface.

* :class:`Parser` implements ``nltk.parse.api.ParserI`` (``parse``, ``parse_sents``,
  ``parse_one``, ``parse_all``); sentences are parsed in batches by the model's ``parse``
  (compiled, the model's threads).  Constituency models give ``nltk.Tree`` objects, dependency
  models ``nltk.parse.DependencyGraph`` objects.
* Trees convert with :meth:`fastspectral.trees.Tree.to_nltk` / ``Tree.from_nltk``, dependency
  sentences with :meth:`fastspectral.trees.conll.DepSentence.to_nltk` / ``from_nltk``; every
  learner's ``fit`` takes ``nltk.Tree`` (constituency) or ``DependencyGraph`` (dependency)
  objects directly.

NLTK is imported when this module is.
"""
from __future__ import annotations

import os
from itertools import islice

from nltk.parse.api import ParserI

from ..trees.conll import DepSentence
from ..trees.tree import Tree

__all__ = ["Parser", "to_nltk", "from_nltk"]

_KINDS = ("sentences", "dependency")


def to_nltk(item):
    """A fastspectral :class:`Tree` or :class:`DepSentence` as its NLTK counterpart."""
    if isinstance(item, (Tree, DepSentence)):
        return item.to_nltk()
    raise TypeError(f"expected a Tree or a DepSentence, got {type(item).__name__}")


def from_nltk(item):
    """An ``nltk.Tree`` as a :class:`Tree`, a ``DependencyGraph`` as a :class:`DepSentence`."""
    from nltk import Tree as NLTKTree
    from nltk.parse import DependencyGraph

    if isinstance(item, NLTKTree):
        return Tree.from_nltk(item)
    if isinstance(item, DependencyGraph):
        return DepSentence.from_nltk(item)
    raise TypeError(f"expected an nltk.Tree or a DependencyGraph, got {type(item).__name__}")


class Parser(ParserI):
    """A fastspectral parser (a fitted model or a model file) as an NLTK parser.

    Parameters
    ----------
    model : Parser or str or path
        A fitted fastspectral parser of input kind ``"sentences"`` (PCFG, the L-PCFGs, ATM,
        CCM) or ``"dependency"`` (SHAG, MST, rerank-dep), or the path of its model file.
    batch_size : int, default 256
        Sentences per call of the model's ``parse`` in :meth:`parse_sents`.
    jobs : int, optional
        Parsing threads (None: the model's ``jobs``).

    A sentence is a list of words, or a list of ``(word, tag)`` pairs (the tags are given to
    the model; dependency models need them).  ``parse`` yields one tree (the model's best).
    """

    def __init__(self, model, *, batch_size: int = 256, jobs=None):
        if isinstance(model, (str, os.PathLike)):
            from .. import load

            model = load(model)
        kind = getattr(model, "input_kind", None)
        if kind not in _KINDS or not hasattr(model, "parse"):
            raise TypeError(f"{type(model).__name__} does not parse sentences (input kind "
                            f"{kind!r}); expected a constituency or dependency parser")
        if getattr(model, "kind", "") == "latent-dep":
            raise TypeError("LatentDependencyModel scores given trees and does not parse; "
                            "use it through log_prob")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        self.model = model
        self.batch_size = batch_size
        self.jobs = jobs

    def grammar(self):
        """Not available: a fastspectral model is not an NLTK grammar."""
        raise NotImplementedError(
            f"{type(self.model).__name__} has no NLTK grammar (its parameters are compiled "
            "arrays; see the model object itself)")

    @staticmethod
    def _split(sent):
        """``(words, tags or None)`` of one sentence: words, or ``(word, tag)`` pairs."""
        if isinstance(sent, (str, bytes)):
            raise TypeError("a sentence is a list of words, not a string")
        sent = list(sent)
        if sent and all(isinstance(x, tuple) and len(x) == 2 for x in sent):
            return [str(w) for w, _ in sent], [str(t) for _, t in sent]
        return sent, None

    def _parse_batch(self, batch):
        split = [self._split(s) for s in batch]
        if self.model.input_kind == "sentences":
            words = [w for w, _ in split]
            tags = [t for _, t in split]
            trees = self.model.parse(words, tags=tags if any(t is not None for t in tags)
                                     else None, jobs=self.jobs)
            return [t.to_nltk() for t in trees]
        items = []
        for words, tags in split:
            items.append(DepSentence(words=words, xpos=tags if tags is not None else [],
                                     heads=[-1] * len(words)))
        empty = {k for k, s in enumerate(items) if not s.words}
        todo = [s for s in items if s.words]
        parsed = iter(self.model.parse(todo, jobs=self.jobs) if todo else [])
        return [DepSentence().to_nltk() if k in empty else next(parsed).to_nltk()
                for k in range(len(items))]

    def parse_sents(self, sents, *args, **kwargs):
        """An iterator, per sentence, of an iterator over its parses (one: the best),
        parsed ``batch_size`` sentences per call of the model."""
        it = iter(sents)
        while True:
            batch = list(islice(it, self.batch_size))
            if not batch:
                return
            for result in self._parse_batch(batch):
                yield iter([result])

    def parse(self, sent, *args, **kwargs):
        """An iterator over the parses of one sentence (one: the model's best)."""
        return next(iter(self.parse_sents([sent])))
