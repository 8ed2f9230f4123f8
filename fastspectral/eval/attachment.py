"""Unlabelled and labelled attachment scores (UAS / LAS), with and without punctuation.

Sentences are duck-typed: any object with ``words`` (list of str), ``heads`` (ints, 1-based, ``0``
for the root), ``rels`` (list of str, or ``None``; ``"_"`` means "no label") and ``tags`` (list
of str); an optional ``upos`` list is also consulted for punctuation (``DepSentence`` has all of
these).  Scores are percentages (0-100), like EVALB's.

Punctuation rule (CoNLL-X ``eval.pl`` convention, extended to tags)
--------------------------------------------------------------------
A token is punctuation when, in the **gold** sentence,

* its word is non-empty and every character is Unicode punctuation (general category ``P*``:
  ``, . : ; ! ? ' " ( ) [ ] - -- ... # % & * @ /``, quotes ...; note that ``$``, ``+``,
  ``<`` and ``=`` are *symbols*, category ``S*``, hence not punctuation), or
* its tag (``tags``) or its ``upos`` is one of the punctuation tags: by default the PTB set
  ``,`` ``.`` ``:`` and the two quote tags (two backquotes, two apostrophes) plus the Universal
  Dependencies tag ``PUNCT``.  ``-LRB-``, ``-RRB-``,
  ``#`` and ``$`` are *not* punctuation tags (the brackets are still punctuation by their words).

``punct_tags`` replaces the tag set (``()`` keeps only the word rule).  With ``punct="exclude"``
punctuation tokens are left out of the scores; with ``"include"`` every token counts.  Both
variants are always computed and :meth:`AttachmentResult.report` prints both.

LAS needs labels: a corpus whose gold ``rels`` are all missing (``None`` or ``"_"``) has
``las = None``.  Otherwise a token is labelled-correct when its head is correct and the predicted
relation equals the gold one exactly (a missing predicted label is wrong).
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import FormatError

__all__ = ["PTB_PUNCT_TAGS", "DEFAULT_PUNCT_TAGS", "is_punct_word", "is_punctuation",
           "AttachmentCounts", "AttachmentResult", "attachment_scores",
           "evaluate_dependency_files"]

#: PTB punctuation tags (the standard set; ``-LRB- -RRB- # $`` are deliberately absent).
PTB_PUNCT_TAGS = frozenset(["``", "''", ",", ".", ":"])
#: Default punctuation tags: the PTB set and the UD tag ``PUNCT``.
DEFAULT_PUNCT_TAGS = PTB_PUNCT_TAGS | {"PUNCT"}


@lru_cache(maxsize=65536)
def is_punct_word(word: str) -> bool:
    """True when ``word`` is non-empty and all its characters are Unicode punctuation (``P*``)."""
    if not word:
        return False
    for ch in word:
        if unicodedata.category(ch)[0] != "P":
            return False
    return True


def is_punctuation(word: str, tag: str | None = None, upos: str | None = None,
                   punct_tags=DEFAULT_PUNCT_TAGS) -> bool:
    """Apply the module's punctuation rule to one token (see the module docstring)."""
    return is_punct_word(word) or tag in punct_tags or upos in punct_tags


@dataclass(frozen=True)
class AttachmentCounts:
    """Counts and scores over one token selection (with or without punctuation).

    ``uas``, ``las``, ``label_accuracy`` are percentages over ``n_tokens``; ``las`` and
    ``label_accuracy`` are ``None`` when the gold has no labels.  ``ucm`` / ``lcm`` are the
    percentages of sentences whose selected tokens are all (labelled-)correct.
    """

    n_tokens: int
    n_sentences: int
    correct_heads: int
    correct_labeled: int
    correct_labels: int
    complete_unlabeled: int
    complete_labeled: int
    labeled: bool

    @staticmethod
    def _pct(k: int, n: int) -> float:
        return 100.0 * k / n if n else 0.0

    @property
    def uas(self) -> float:
        """Unlabelled attachment score, percent."""
        return self._pct(self.correct_heads, self.n_tokens)

    @property
    def las(self) -> float | None:
        """Labelled attachment score, percent (``None`` without gold labels)."""
        return self._pct(self.correct_labeled, self.n_tokens) if self.labeled else None

    @property
    def label_accuracy(self) -> float | None:
        """Percentage of tokens with the right relation label (``None`` without gold labels)."""
        return self._pct(self.correct_labels, self.n_tokens) if self.labeled else None

    @property
    def ucm(self) -> float:
        """Unlabelled complete match: percent of sentences with every head right."""
        return self._pct(self.complete_unlabeled, self.n_sentences)

    @property
    def lcm(self) -> float | None:
        """Labelled complete match, percent (``None`` without gold labels)."""
        return self._pct(self.complete_labeled, self.n_sentences) if self.labeled else None


@dataclass(frozen=True)
class AttachmentResult:
    """Result of :func:`attachment_scores`.

    ``uas``, ``las``, ``n_tokens``, ``correct_heads``, ``correct_labeled`` follow the ``punct``
    mode chosen (``"exclude"`` or ``"include"``); ``with_punct`` / ``without_punct`` hold both
    variants; ``n_punct`` is the number of punctuation tokens.
    """

    punct: str
    with_punct: AttachmentCounts
    without_punct: AttachmentCounts
    n_sentences: int
    n_punct: int

    @property
    def selected(self) -> AttachmentCounts:
        """The counts of the chosen ``punct`` mode."""
        return self.without_punct if self.punct == "exclude" else self.with_punct

    @property
    def uas(self) -> float:
        """UAS (percent) in the chosen mode."""
        return self.selected.uas

    @property
    def las(self) -> float | None:
        """LAS (percent) in the chosen mode, ``None`` without gold labels."""
        return self.selected.las

    @property
    def n_tokens(self) -> int:
        """Number of tokens scored in the chosen mode."""
        return self.selected.n_tokens

    @property
    def correct_heads(self) -> int:
        """Tokens with the correct head, in the chosen mode."""
        return self.selected.correct_heads

    @property
    def correct_labeled(self) -> int:
        """Tokens with the correct head and label, in the chosen mode."""
        return self.selected.correct_labeled

    def report(self) -> str:
        """A plain-text table of UAS / LAS with and without punctuation."""
        def fmt(x):
            return "   n/a" if x is None else "%6.2f" % x

        lines = [f"Sentences: {self.n_sentences}   Tokens: {self.with_punct.n_tokens}   "
                 f"Punctuation tokens: {self.n_punct}   (mode: punct={self.punct})",
                 "                        UAS     LAS  tokens  heads  labeled",
                 ]
        for name, c in (("with punctuation", self.with_punct),
                        ("without punctuation", self.without_punct)):
            lines.append(f"{name:<20}  {fmt(c.uas)}  {fmt(c.las)}  {c.n_tokens:6d} "
                         f"{c.correct_heads:6d}  {c.correct_labeled if c.labeled else 'n/a':>7}")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.report()


def _has_label(r) -> bool:
    return r is not None and r != "_" and r != ""


def attachment_scores(gold, pred, punct: str = "exclude", punct_tags=None, *, gold_path=None,
                      pred_path=None) -> AttachmentResult:
    """Score predicted dependency heads (and relations) against gold sentences.

    ``gold`` and ``pred`` are sequences of sentences (see the module docstring); they must have
    the same number of sentences and, sentence by sentence, the same words, else
    :class:`FormatError` names the (1-based) sentence index.  ``punct``: ``"exclude"`` (default,
    the CoNLL-X convention) or ``"include"``.  ``punct_tags``: tags counted as punctuation
    (default :data:`DEFAULT_PUNCT_TAGS`).  ``gold_path`` / ``pred_path`` only serve error
    messages.
    """
    if punct not in ("exclude", "include"):
        raise ValueError(f"punct must be 'exclude' or 'include', not {punct!r}")
    ptags = DEFAULT_PUNCT_TAGS if punct_tags is None else frozenset(punct_tags)
    gold = list(gold)
    pred = list(pred)
    if len(gold) != len(pred):
        m = min(len(gold), len(pred))
        more, path, extra = (("gold", gold_path, gold[m]) if len(gold) > len(pred)
                             else ("prediction", pred_path, pred[m]))
        raise FormatError(f"gold has {len(gold)} sentences but the prediction has {len(pred)} "
                          f"(extra sentences in the {more}, from sentence {m + 1})", path,
                          getattr(extra, "line", None))

    g_heads: list = []
    p_heads: list = []
    is_p: list = []
    label_ok: list = []
    sent_len: list = []
    labeled = False
    for k, (g, p) in enumerate(zip(gold, pred), 1):
        words = list(g.words)
        n = len(words)
        line = getattr(g, "line", None)
        pwords = list(p.words)
        if len(pwords) != n:
            raise FormatError(f"sentence {k}: gold has {n} words, the prediction {len(pwords)}",
                              pred_path, getattr(p, "line", None))
        if pwords != words:
            i = next(i for i in range(n) if pwords[i] != words[i])
            raise FormatError(f"sentence {k}, word {i + 1}: gold {words[i]!r}, prediction "
                              f"{pwords[i]!r}", pred_path, getattr(p, "line", None))
        gh = list(g.heads)
        ph = list(p.heads)
        for side, heads, path, ln in (("gold", gh, gold_path, line),
                                      ("prediction", ph, pred_path, getattr(p, "line", None))):
            if len(heads) != n:
                raise FormatError(f"sentence {k}: the {side} has {len(heads)} heads for {n} words",
                                  path, ln)
            for i, h in enumerate(heads):
                if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or not 0 <= h <= n:
                    raise FormatError(f"sentence {k}, word {i + 1}: {side} head {h!r} is not an "
                                      f"integer in 0..{n}", path, ln)
        tags = list(g.tags) if getattr(g, "tags", None) is not None else [None] * n
        upos = getattr(g, "upos", None)
        upos = list(upos) if upos is not None and len(upos) == n else [None] * n
        for w, t, u in zip(words, tags, upos):
            is_p.append(is_punct_word(w) or t in ptags or u in ptags)
        grels = g.rels if g.rels is not None else [None] * n
        prels = p.rels if p.rels is not None else [None] * n
        if len(grels) != n or len(prels) != n:
            raise FormatError(f"sentence {k}: relation column length differs from the {n} words",
                              gold_path if len(grels) != n else pred_path, line)
        for gr, pr in zip(grels, prels):
            if _has_label(gr):
                labeled = True
            label_ok.append(gr == pr and _has_label(pr))
        g_heads.extend(gh)
        p_heads.extend(ph)
        sent_len.append(n)

    n_sent = len(gold)
    head_ok = np.asarray(g_heads, dtype=np.int64) == np.asarray(p_heads, dtype=np.int64)
    lab_ok = np.asarray(label_ok, dtype=bool)
    both_ok = head_ok & lab_ok
    punct_mask = np.asarray(is_p, dtype=bool)
    sent_id = np.repeat(np.arange(n_sent), np.asarray(sent_len, dtype=np.int64))

    def counts(select: np.ndarray) -> AttachmentCounts:
        wrong_h = np.bincount(sent_id[select & ~head_ok], minlength=n_sent)
        wrong_l = np.bincount(sent_id[select & ~both_ok], minlength=n_sent)
        return AttachmentCounts(
            n_tokens=int(select.sum()), n_sentences=n_sent,
            correct_heads=int((head_ok & select).sum()),
            correct_labeled=int((both_ok & select).sum()),
            correct_labels=int((lab_ok & select).sum()),
            complete_unlabeled=int((wrong_h == 0).sum()),
            complete_labeled=int((wrong_l == 0).sum()),
            labeled=labeled)

    every = np.ones(head_ok.shape, dtype=bool)
    return AttachmentResult(punct=punct, with_punct=counts(every),
                            without_punct=counts(~punct_mask), n_sentences=n_sent,
                            n_punct=int(punct_mask.sum()))


def evaluate_dependency_files(gold_path, pred_path, punct: str = "exclude", punct_tags=None,
                              format: str | None = None) -> AttachmentResult:
    """Read two dependency files (CoNLL-U, CoNLL-X or Malt-TAB) and score them.

    The files are read with :func:`fastspectral.trees.readers.read_treebank` (imported here, at
    call time); ``format`` forces the format of both, otherwise each file's format is detected.
    Sentences must align one to one (same count, same words), else :class:`FormatError`.
    ``result.report()`` prints UAS / LAS with and without punctuation.
    """
    try:
        from ..trees.readers import read_treebank
    except ImportError as exc:  # pragma: no cover - depends on another module being present
        raise ImportError("evaluate_dependency_files needs fastspectral.trees.readers."
                          "read_treebank, which is not available") from exc
    sides = []
    for path in (gold_path, pred_path):
        sents = list(read_treebank(path, format=format))
        for s in sents:
            if not hasattr(s, "heads"):
                raise FormatError("not a dependency file (CoNLL-U, CoNLL-X or Malt-TAB "
                                  "expected)", path)
            break
        sides.append(sents)
    return attachment_scores(sides[0], sides[1], punct=punct, punct_tags=punct_tags,
                             gold_path=str(gold_path), pred_path=str(pred_path))
