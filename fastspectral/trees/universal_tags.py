"""The universal part-of-speech tagset of Petrov, Das & McDonald (2011) and the mapping of the
Penn Treebank tags onto it (their ``en-ptb.map``).

The twelve universal tags: ``NOUN VERB ADJ ADV PRON DET ADP NUM CONJ PRT . X``.

References
----------
Slav Petrov, Dipanjan Das and Ryan McDonald (2012).  A Universal Part-of-Speech Tagset.
LREC 2012 (arXiv:1104.2086, 2011); mapping files github.com/slavpetrov/universal-pos-tags.

Examples
--------
>>> to_universal(["DT", "NN", "VBD", "PRP$", "``", "TO"])
['DET', 'NOUN', 'VERB', 'PRON', '.', 'PRT']
"""
from __future__ import annotations

__all__ = ["UNIVERSAL_TAGS", "PTB_TO_UNIVERSAL", "to_universal", "is_punctuation_tag",
           "PTB_PUNCTUATION"]

UNIVERSAL_TAGS = ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT",
                  ".", "X")

#: Petrov et al.'s en-ptb.map (45 Penn tags plus the few ambiguous tags found in the WSJ)
PTB_TO_UNIVERSAL = {
    "!": ".", "#": ".", "$": ".", "''": ".", "(": ".", ")": ".", ",": ".", "-LRB-": ".",
    "-RRB-": ".", ".": ".", ":": ".", "?": ".", "``": ".",
    "CC": "CONJ", "CD": "NUM", "CD|RB": "X", "DT": "DET", "EX": "DET", "FW": "X", "IN": "ADP",
    "IN|RP": "ADP", "JJ": "ADJ", "JJR": "ADJ", "JJRJR": "ADJ", "JJS": "ADJ", "JJ|RB": "ADJ",
    "JJ|VBG": "ADJ", "LS": "X", "MD": "VERB", "NN": "NOUN", "NNP": "NOUN", "NNPS": "NOUN",
    "NNS": "NOUN", "NN|NNS": "NOUN", "NN|SYM": "NOUN", "NN|VBG": "NOUN", "NP": "NOUN",
    "PDT": "DET", "POS": "PRT", "PRP": "PRON", "PRP$": "PRON", "PRP|VBP": "PRON", "PRT": "PRT",
    "RB": "ADV", "RBR": "ADV", "RBS": "ADV", "RB|RP": "ADV", "RB|VBG": "ADV", "RN": "X",
    "RP": "PRT", "SYM": "X", "TO": "PRT", "UH": "X", "VB": "VERB", "VBD": "VERB",
    "VBD|VBN": "VERB", "VBG": "VERB", "VBG|NN": "VERB", "VBN": "VERB", "VBP": "VERB",
    "VBP|TO": "VERB", "VBZ": "VERB", "VP": "VERB", "WDT": "DET", "WH": "X", "WP": "PRON",
    "WP$": "PRON", "WRB": "ADV",
}

#: Penn tags removed as punctuation by the unsupervised-parsing evaluation (Klein & Manning
#: 2002): the punctuation marks proper; ``$`` and ``#`` are kept as words.
PTB_PUNCTUATION = frozenset({",", ".", ":", "``", "''", "-LRB-", "-RRB-", "(", ")", "!", "?",
                             "-NONE-"})


def to_universal(tags, strict: bool = True) -> list:
    """The universal tags of a list of Penn Treebank tags.  Tags already universal are kept.
    An unknown tag raises ``ValueError`` (``strict=False``: it becomes ``X``)."""
    out = []
    for t in tags:
        u = PTB_TO_UNIVERSAL.get(t)
        if u is None:
            if t in UNIVERSAL_TAGS:
                u = t
            elif strict:
                raise ValueError(f"tag {t!r} is neither a Penn Treebank nor a universal tag "
                                 "(use tagset='as-is' for other tagsets)")
            else:
                u = "X"
        out.append(u)
    return out


def is_punctuation_tag(tag: str) -> bool:
    """Whether ``tag`` (Penn or universal) marks punctuation removed by the evaluation."""
    return tag in PTB_PUNCTUATION or tag == "."
