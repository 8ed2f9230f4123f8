"""The Brown corpus tagset mapped onto the universal tagset of Petrov, Das & McDonald (2011), and
a reader of the Brown corpus's ``word/tag`` lines as tagged sentences for the unsupervised
parsers (more raw tagged text to learn from).

Brown tags are lower case in NLTK's copy (``nn``, ``vbd``, ``at``), with modifiers that do not
change the part of speech: the suffixes ``-tl`` (title), ``-hl`` (headline), ``-nc`` (cited)
and the prefix ``fw-`` (a foreign word: ``X``); contractions join two tags with ``+``
(``ppss+md``, "I'll"), mapped by their first part; a negated form ends in ``*``
(``dod*``, "didn't") and is mapped as its verb, a possessive in ``$`` (``cd$``) as its
base tag where the table has no entry of its own.  The table follows the Brown Corpus Manual
(Francis & Kucera 1979) category by category; it is this package's own reading, in the spirit
of Petrov et al.'s ``en-brown.map``.

Examples
--------
>>> brown_to_universal(["at", "nn-tl", "vbd", "ppss+md", "fw-nn", ",", "cd"])
['DET', 'NOUN', 'VERB', 'PRON', 'X', '.', 'NUM']
"""
from __future__ import annotations

__all__ = ["BROWN_TO_UNIVERSAL", "brown_to_universal", "read_brown_tagged"]

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


def _one(tag: str) -> str:
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
    return [_one(t) for t in tags]


def read_brown_tagged(path, encoding="utf-8") -> list:
    """``[(words, universal_tags), ...]`` of a Brown ``word/tag`` file, one sentence a line (the
    form of ``../shared/data/brown/brown-tagged.txt``); a line that does not parse raises
    :class:`~fastspectral.errors.FormatError` naming the file and line."""
    from ..errors import FormatError

    out = []
    with open(path, encoding=encoding) as fh:
        for lineno, line in enumerate(fh, 1):
            toks = line.split()
            if not toks:
                continue
            words, tags = [], []
            for tok in toks:
                w, sep, t = tok.rpartition("/")
                if not sep or not w or not t:
                    raise FormatError(f"token {tok!r} is not word/tag", path, lineno)
                words.append(w)
                tags.append(t)
            try:
                out.append((words, brown_to_universal(tags)))
            except ValueError as exc:
                raise FormatError(str(exc), path, lineno) from None
    return out
