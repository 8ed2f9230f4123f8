"""The universal part-of-speech tagset of Petrov, Das & McDonald (2011) and the mapping of the
Penn Treebank tags onto it (their ``en-ptb.map``).

The twelve universal tags: ``NOUN VERB ADJ ADV PRON DET ADP NUM CONJ PRT . X``.

The Brown corpus tagset is mapped too (:func:`brown_to_universal`).  Brown tags are lower case
in NLTK's copy (``nn``, ``vbd``, ``at``), with modifiers that do not change the part of speech:
the suffixes ``-tl`` (title), ``-hl`` (headline), ``-nc`` (cited) and the prefix ``fw-`` (a
foreign word: ``X``); contractions join two tags with ``+`` (``ppss+md``, "I'll"), mapped by
their first part; a negated form ends in ``*`` (``dod*``, "didn't") and is mapped as its verb,
a possessive in ``$`` (``cd$``) as its base tag where the table has no entry of its own.  The
table follows the Brown Corpus Manual (Francis & Kucera 1979) category by category; it is this
package's own reading, in the spirit of Petrov et al.'s ``en-brown.map``.

References
----------
Slav Petrov, Dipanjan Das and Ryan McDonald (2012).  A Universal Part-of-Speech Tagset.
LREC 2012 (arXiv:1104.2086, 2011); mapping files github.com/slavpetrov/universal-pos-tags.

Examples
--------
>>> to_universal(["DT", "NN", "VBD", "PRP$", "``", "TO"])
['DET', 'NOUN', 'VERB', 'PRON', '.', 'PRT']
>>> brown_to_universal(["at", "nn-tl", "vbd", "ppss+md", "fw-nn", ",", "cd"])
['DET', 'NOUN', 'VERB', 'PRON', 'X', '.', 'NUM']
"""
from __future__ import annotations

__all__ = ["UNIVERSAL_TAGS", "PTB_TO_UNIVERSAL", "to_universal", "is_punctuation_tag",
           "PTB_PUNCTUATION", "BROWN_TO_UNIVERSAL", "brown_to_universal"]

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
                                 "(use tag_map='as-is' for other tagsets)")
            else:
                u = "X"
        out.append(u)
    return out


def is_punctuation_tag(tag: str) -> bool:
    """Whether ``tag`` (Penn or universal) marks punctuation removed by the evaluation."""
    return tag in PTB_PUNCTUATION or tag == "."


#: base Brown tags (modifiers stripped) -> universal tags
BROWN_TO_UNIVERSAL = {
    # punctuation
    ".": ".", ",": ".", ":": ".", ";": ".", "(": ".", ")": ".", "--": ".", "'": ".",
    "''": ".", "``": ".", "`": ".",
    # determiners, quantifiers, articles
    "abn": "DET", "abx": "DET", "at": "DET", "dt": "DET", "dti": "DET",
    "dts": "DET", "dtx": "DET", "ex": "DET", "wdt": "DET",
    # qualifiers and adverbs
    "abl": "ADV", "ql": "ADV", "qlp": "ADV", "rb": "ADV", "rbr": "ADV", "rbt": "ADV",
    "rn": "ADV", "wql": "ADV", "wrb": "ADV", "*": "ADV",
    # verbs (be, do, have, modals, lexical verbs)
    "be": "VERB", "bed": "VERB", "bedz": "VERB", "beg": "VERB", "bem": "VERB", "ben": "VERB",
    "ber": "VERB", "bez": "VERB", "do": "VERB", "dod": "VERB", "doz": "VERB", "hv": "VERB",
    "hvd": "VERB", "hvg": "VERB", "hvn": "VERB", "hvz": "VERB", "md": "VERB", "vb": "VERB",
    "vbd": "VERB", "vbg": "VERB", "vbn": "VERB", "vbz": "VERB",
    # conjunctions and prepositions
    "cc": "CONJ", "cs": "ADP", "in": "ADP",
    # numbers
    "cd": "NUM", "od": "ADJ",
    # adjectives
    "jj": "ADJ", "jjr": "ADJ", "jjs": "ADJ", "jjt": "ADJ", "ap": "ADJ",   # many, next
    # nouns
    "nn": "NOUN", "nn$": "NOUN", "nns": "NOUN", "nns$": "NOUN", "np": "NOUN", "np$": "NOUN",
    "nps": "NOUN", "nps$": "NOUN", "nr": "NOUN", "nr$": "NOUN", "nrs": "NOUN",
    # pronouns
    "pn": "PRON", "pn$": "PRON", "pp$": "PRON", "pp$$": "PRON", "ppl": "PRON", "ppls": "PRON",
    "ppo": "PRON", "pps": "PRON", "ppss": "PRON", "wp$": "PRON", "wpo": "PRON", "wps": "PRON",
    # particles
    "rp": "PRT", "to": "PRT",
    # the rest
    "fw": "X", "uh": "X", "nil": "X",
}


def _brown_one(tag: str) -> str:
    t = tag.lower()
    if t in BROWN_TO_UNIVERSAL:
        return BROWN_TO_UNIVERSAL[t]
    if t.startswith("fw-"):
        return "X"
    t = t.split("+", 1)[0] or t
    changed = True
    while changed:
        changed = False
        for suffix in ("-tl", "-hl", "-nc", "*", "$"):
            if t in BROWN_TO_UNIVERSAL:
                break
            if t.endswith(suffix) and len(t) > len(suffix):
                t = t[:-len(suffix)]
                changed = True
    u = BROWN_TO_UNIVERSAL.get(t)
    if u is None:
        raise ValueError(f"unknown Brown tag {tag!r}")
    return u


def brown_to_universal(tags) -> list:
    """The universal tags of a list of Brown tags (``ValueError`` on a tag not in the table)."""
    return [_brown_one(t) for t in tags]
