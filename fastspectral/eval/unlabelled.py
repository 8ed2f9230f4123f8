"""Unlabelled bracketing F1 of unsupervised constituency parsing (Klein & Manning 2002; Parikh,
Cohen & Xing 2014, section 5).

The convention (the one behind Klein & Manning's published WSJ10 numbers, to which Parikh et al.
compare theirs):

* punctuation and empty elements are removed from both trees (the words whose GOLD tag is a
  punctuation tag of :data:`fastspectral.trees.universal_tags.PTB_PUNCTUATION`, or the
  universal ``.``; ``-NONE-`` leaves of either tree); the predicted tree must have the same
  words otherwise;
* the sentence length is the number of words left; ``max_length`` keeps sentences of at most
  that many words (WSJ10 is ``max_length=10``);
* brackets are unlabelled spans, counted once each (a unary chain is one bracket); brackets
  of a single word are NOT counted; the bracket of the whole sentence IS counted, for
  sentences of two words or more (``sentence_bracket=True``, the default: one bracket that
  every tree gets right, in the matched, gold and predicted counts alike);
  ``sentence_bracket=False`` leaves it out too (the convention Klein & Manning's text
  describes, and that later papers use);
* precision, recall and F1 are micro-averaged over the corpus (EVALB's habit).  The
  sentence-level (macro) average, common in later unsupervised-parsing papers, is
  :attr:`UnlabelledScore.macro_f1` (``--by-length`` prints it too); a sentence with no bracket
  to score in either tree (one word; two words without the sentence bracket) is left out of
  it.

Why the sentence bracket: Klein & Manning's text says that "constituents which could not be
gotten wrong (single words and entire sentences)" were discarded, but their WSJ10 upper bound
(UBOUND: precision 78.8, recall 100, F1 88.1) and right-branching baseline (55.1 / 70.0 / 61.7)
are reproduced only with the whole-sentence bracket counted (Luque's reimplementation gets 78.8
with its ``count_fullspan_bracket`` option, 74.7 without; on the WSJ sample here: 78.6 and
74.3).  docs/notes/unsupervised.md has the numbers.

Examples
--------
>>> from fastspectral.trees.tree import Tree
>>> gold = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat))) (. .))")
>>> pred = Tree.fromstring("(X (X (DT the) (X (NN dog) (X (VBD saw) (X (DT a) (NN cat))))) (. .))")
>>> score = evaluate_unlabelled([gold], [pred])
>>> (score.matched, score.gold, score.predicted)
(3, 4, 4)
>>> round(score.f1, 2)
75.0
>>> old = evaluate_unlabelled([gold], [pred], sentence_bracket=False)
>>> (old.matched, old.gold, old.predicted)
(2, 3, 3)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import FormatError
from ..trees.universal_tags import PTB_PUNCTUATION

__all__ = ["UnlabelledScore", "unlabelled_brackets", "evaluate_unlabelled", "evaluate_by_length",
           "evaluate_unlabelled_files", "convention", "LENGTHS"]

#: the maximum lengths of the paper's table 2 (None: every length)
LENGTHS = (10, 15, 20, 25, 30, 40, None)


@dataclass
class UnlabelledScore:
    """Corpus counts: ``matched``, ``gold`` and ``predicted`` brackets of ``sentences``."""

    matched: int = 0
    gold: int = 0
    predicted: int = 0
    sentences: int = 0
    max_length: int | None = None
    #: whether the whole-sentence bracket was counted (see the module docstring)
    sentence_bracket: bool = True
    per_sentence: list = field(default_factory=list, repr=False)
    #: sum of the per-sentence F1 and the sentences it is defined for (some bracket in the gold
    #: or the predicted tree): the sentence-level (macro) average of :attr:`macro_f1`
    f1_sum: float = 0.0
    f1_sentences: int = 0

    @property
    def precision(self) -> float:
        return 100.0 * self.matched / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return 100.0 * self.matched / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def macro_f1(self) -> float:
        """F1 averaged over sentences (each sentence's own F1; sentences without a bracket to
        score in either tree are left out: those of one word, and of two words when the
        sentence bracket is not counted)."""
        return 100.0 * self.f1_sum / self.f1_sentences if self.f1_sentences else 0.0

    def add(self, m: int, g: int, p: int) -> None:
        """Count one sentence with ``m`` matched of ``g`` gold and ``p`` predicted brackets."""
        self.matched += m
        self.gold += g
        self.predicted += p
        self.sentences += 1
        if g or p:
            self.f1_sum += 2.0 * m / (g + p)
            self.f1_sentences += 1


def _is_punct(tag: str) -> bool:
    return tag in PTB_PUNCTUATION or tag == "."


def _spans(tree, keep):
    """Set of (start, end) spans over the kept leaves (``keep[i]`` for leaf ``i``), every
    node whose kept yield is not empty."""
    out = set()
    pos = 0
    kept_before = [0]
    for k in keep:
        kept_before.append(kept_before[-1] + (1 if k else 0))

    def walk(node):
        nonlocal pos
        start = pos
        if isinstance(node, str):
            pos += 1
            return
        for c in node.children:
            walk(c)
        a, b = kept_before[start], kept_before[pos]
        if b > a:
            out.add((a, b))

    walk(tree)
    return out, kept_before[-1]


def unlabelled_brackets(tree, remove=None, sentence_bracket=True):
    """``(n_words, spans)`` of ``tree``: the number of words left after removing punctuation
    (``remove``: a list of booleans, one per leaf; default: from the tree's own tags) and the
    set of counted spans: those of two words or more, the whole sentence ``(0, n_words)``
    included unless ``sentence_bracket`` is false."""
    pos = tree.pos()
    if remove is None:
        remove = [_is_punct(t) for _, t in pos]
    if len(remove) != len(pos):
        raise ValueError(f"{len(remove)} removal flags for a tree of {len(pos)} words")
    spans, n = _spans(tree, [not r for r in remove])
    if sentence_bracket:
        return n, {(a, b) for a, b in spans if b - a >= 2}
    return n, {(a, b) for a, b in spans if b - a >= 2 and not (a == 0 and b == n)}


def _drop_empty(tree):
    pos = tree.pos()
    if any(t == "-NONE-" for _, t in pos):
        from ..trees.transforms import clean
        return clean(tree)
    return tree


def _pair_brackets(gold, pred, index=None, sentence_bracket=True):
    gold, pred = _drop_empty(gold), _drop_empty(pred)
    gpos, ppos = gold.pos(), pred.pos()
    if len(gpos) != len(ppos):
        raise ValueError(f"sentence {index}: the gold tree has {len(gpos)} words, the predicted "
                         f"tree {len(ppos)}")
    remove = [_is_punct(t) for _, t in gpos]
    n, g = unlabelled_brackets(gold, remove, sentence_bracket)
    _, p = unlabelled_brackets(pred, remove, sentence_bracket)
    return n, g, p


def evaluate_unlabelled(gold_trees, pred_trees, max_length=None, *, sentence_bracket=True,
                        keep_sentences=False) -> UnlabelledScore:
    """Unlabelled bracketing scores of ``pred_trees`` against ``gold_trees`` (same sentences, same
    order) over sentences of at most ``max_length`` words after punctuation removal; the
    whole-sentence bracket counted unless ``sentence_bracket`` is false."""
    gold_trees, pred_trees = list(gold_trees), list(pred_trees)
    if len(gold_trees) != len(pred_trees):
        raise ValueError(f"{len(gold_trees)} gold trees but {len(pred_trees)} predicted trees")
    score = UnlabelledScore(max_length=max_length, sentence_bracket=bool(sentence_bracket))
    for i, (g, p) in enumerate(zip(gold_trees, pred_trees), 1):
        n, gs, ps = _pair_brackets(g, p, i, sentence_bracket)
        if n == 0 or (max_length is not None and n > max_length):
            continue
        m = len(gs & ps)
        score.add(m, len(gs), len(ps))
        if keep_sentences:
            score.per_sentence.append((i, n, m, len(gs), len(ps)))
    return score


def evaluate_by_length(gold_trees, pred_trees, lengths=LENGTHS, *,
                       sentence_bracket=True) -> list:
    """One :class:`UnlabelledScore` per maximum length of ``lengths`` (the brackets of each
    sentence are computed once; ``sentence_bracket`` as in :func:`evaluate_unlabelled`)."""
    gold_trees, pred_trees = list(gold_trees), list(pred_trees)
    if len(gold_trees) != len(pred_trees):
        raise ValueError(f"{len(gold_trees)} gold trees but {len(pred_trees)} predicted trees")
    rows = [_pair_brackets(g, p, i, sentence_bracket)
            for i, (g, p) in enumerate(zip(gold_trees, pred_trees), 1)]
    out = []
    for L in lengths:
        s = UnlabelledScore(max_length=L, sentence_bracket=bool(sentence_bracket))
        for n, gs, ps in rows:
            if n == 0 or (L is not None and n > L):
                continue
            s.add(len(gs & ps), len(gs), len(ps))
        out.append(s)
    return out


def _read(path, encoding):
    from ..trees.readers import read_treebank
    return list(read_treebank(path, format="ptb", encoding=encoding))


def convention(sentence_bracket=True) -> str:
    """The convention in words, as the reports print it."""
    return ("punctuation removed; single-word brackets not counted; whole-sentence bracket "
            + ("counted" if sentence_bracket else "not counted"))


def evaluate_unlabelled_files(gold_path, pred_path, max_length=None, by_length=False,
                              encoding="utf-8", sentence_bracket=True) -> str:
    """The report of ``fastspectral eval GOLD PRED --unlabelled``: the table by maximum length
    (``by_length``) and the summary of ``max_length``, ending with the EVALB-style line
    ``Bracketing FMeasure = X``; ``sentence_bracket=False`` is ``--no-sentence-bracket``."""
    gold, pred = _read(gold_path, encoding), _read(pred_path, encoding)
    if len(gold) != len(pred):
        raise FormatError(f"{len(pred)} predicted trees for {len(gold)} gold trees", pred_path)
    try:
        scores = evaluate_by_length(gold, pred, tuple(LENGTHS if by_length else ()) +
                                    (max_length,), sentence_bracket=sentence_bracket)
    except ValueError as exc:
        raise FormatError(str(exc), pred_path) from None
    lines = []
    if by_length:
        lines.append(f"Unlabelled bracketing ({convention(sentence_bracket)})")
        lines.append(f"{'length':>8} {'sents':>6} {'P':>7} {'R':>7} {'F1':>7} {'sent-F1':>8}")
        for s in scores[:-1]:
            L = "all" if s.max_length is None else f"<= {s.max_length}"
            lines.append(f"{L:>8} {s.sentences:6d} {s.precision:7.2f} {s.recall:7.2f} "
                         f"{s.f1:7.2f} {s.macro_f1:8.2f}")
        lines.append("")
    s = scores[-1]
    L = "all" if max_length is None else str(max_length)
    lines += [f"=== Summary (unlabelled, length <= {L}; {convention(sentence_bracket)}) ===",
              f"Number of sentence        = {s.sentences:6d}",
              f"Number of matched brackets = {s.matched:6d}",
              f"Number of gold brackets   = {s.gold:6d}",
              f"Number of test brackets   = {s.predicted:6d}",
              f"Bracketing Recall         = {s.recall:6.2f}",
              f"Bracketing Precision      = {s.precision:6.2f}",
              f"Bracketing FMeasure = {s.f1:.2f}"]
    return "\n".join(lines) + "\n"
