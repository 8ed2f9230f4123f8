"""The pieces of EVALB scoring shared by the fast path (:mod:`fastspectral.eval.evalb`) and the
``DEBUG`` trace (:mod:`fastspectral.eval._evalb_trace`): the lookup structures compiled from the
parameters, EVALB's function-tag rule and one sentence's score line.
"""
from __future__ import annotations

from dataclasses import dataclass


class _Compiled:
    """Lookup structures derived from an ``EvalbParams`` (built once per evaluation)."""

    __slots__ = ("params", "delete", "delete_bracket", "delete_len", "eq_label", "eq_word",
                 "quote", "labeled", "debug")

    def __init__(self, params):         # an evalb.EvalbParams
        self.params = params
        self.labeled = bool(params.labeled)
        self.debug = params.debug
        self.delete = frozenset(params.delete_labels)                 # exact (terminal tags)
        self.delete_len = frozenset(params.delete_labels_for_length)
        self.eq_label = frozenset((a, b) for a, b in params.equal_labels) | \
            frozenset((b, a) for a, b in params.equal_labels)
        self.eq_word = frozenset((a, b) for a, b in params.equal_words) | \
            frozenset((b, a) for a, b in params.equal_words)
        # bracket deletion compares the function-tag-stripped label with label_comp (EQ aware)
        dele = set(self.delete)
        for a, b in self.eq_label:
            if b in self.delete:
                dele.add(a)
        self.delete_bracket = frozenset(dele)
        self.quote = frozenset(params.quote_labels)

    def label_eq(self, a: str, b: str) -> bool:
        return a == b or (a, b) in self.eq_label

    def word_eq(self, a: str, b: str) -> bool:
        return a == b or (a, b) in self.eq_word


def _strip_function_tags(label: str) -> str:
    """``NP-SBJ-1`` -> ``NP``, ``NP=2`` -> ``NP``; ``-NONE-``, ``-LRB-`` stay (see
    :mod:`fastspectral.eval.evalb`)."""
    if "-" not in label and "=" not in label:
        return label
    start = 1
    if label.startswith("-"):
        k = label.find("-", 1)
        if k > 1:
            start = k + 1
            if start >= len(label):
                return label
    for i in range(start, len(label)):
        if label[i] in "-=":
            return label[:i]
    return label


@dataclass(frozen=True)
class SentenceResult:
    """Score of one sentence, one line of EVALB's table.

    ``status``: 0 valid, 1 error (words differ), 2 skip (no predicted words).  ``length`` is the
    gold length used for the cutoff block.  ``message`` explains an error (``None`` otherwise).
    """

    id: int
    length: int
    status: int
    matched: int = 0
    gold_brackets: int = 0
    test_brackets: int = 0
    crossing: int = 0
    words: int = 0
    correct_tags: int = 0
    message: str | None = None

    @property
    def is_valid(self) -> bool:
        """True for a scored sentence (status 0)."""
        return self.status == 0

    @property
    def recall(self) -> float:
        """Bracket recall in percent (0 when the gold tree has no bracket)."""
        return 0.0 if self.gold_brackets == 0 else 100.0 * self.matched / self.gold_brackets

    @property
    def precision(self) -> float:
        """Bracket precision in percent (0 when the prediction has no bracket)."""
        return 0.0 if self.test_brackets == 0 else 100.0 * self.matched / self.test_brackets

    @property
    def tag_accuracy(self) -> float:
        """Tagging accuracy in percent (0 without words)."""
        return 0.0 if self.words == 0 else 100.0 * self.correct_tags / self.words

    @property
    def complete_match(self) -> bool:
        """Valid and every bracket matched both ways."""
        return (self.status == 0 and self.gold_brackets == self.test_brackets == self.matched)

    def line(self) -> str:
        """The sentence's line in EVALB's table (with its newline)."""
        return ("%4d  %3d    %d  %6.2f %6.2f   %3d    %3d  %3d    %3d   %4d  %4d   %6.2f\n" % (
            self.id, self.length, self.status, self.recall, self.precision, self.matched,
            self.gold_brackets, self.test_brackets, self.crossing, self.words, self.correct_tags,
            self.tag_accuracy))
