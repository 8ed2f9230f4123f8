"""Context statistics of lexical disambiguation (Shah et al. 2010, table 3).

Every *template* maps a token in its sentence to one feature string; a feature space gives each
string of a template an integer id (``-1``: not seen in training).

===========  =====================================================================================
``Freq``      the token itself: its stage-1 estimates are the relative frequencies of the token's
              labels (the paper's *Freq*)
``PrevWord``  the previous token (``<s>`` at the start of a sentence)
``NextWord``  the next token (``</s>`` at the end)
``PrevFirst`` ``PrevLast`` ``NextFirst`` ``NextLast``  the first / last letter of a neighbour
``Doc``       document-level term frequencies: the words of the token's document (not a
              template of one string; see :mod:`fastspectral.lexical.engine`)
``Prefix2`` ``Suffix2`` ``Suffix3``  the first two / last two / last three letters of the
              token (an extension beyond table 3: they carry the unknown words)
===========  =====================================================================================

``features="table3"`` selects the eight templates of the paper, ``"all"`` adds the affix
templates; any comma-separated list of names is accepted.
"""
from __future__ import annotations

import numpy as np

__all__ = ["TEMPLATES", "TABLE3", "AFFIXES", "parse_features", "FeatureSpace"]

TABLE3 = ("Freq", "PrevWord", "NextWord", "PrevFirst", "PrevLast", "NextFirst", "NextLast",
          "Doc")
AFFIXES = ("Prefix2", "Suffix2", "Suffix3")
TEMPLATES = TABLE3 + AFFIXES
#: the templates of one string per token (every template but Doc), in column order
STRING_TEMPLATES = tuple(t for t in TEMPLATES if t != "Doc")


def parse_features(spec) -> tuple[str, ...]:
    """The template names of a ``features`` parameter (``"all"``, ``"table3"`` or a
    comma-separated list); ValueError naming an unknown template."""
    if not isinstance(spec, str):
        raise TypeError(f"features must be a string ('all', 'table3' or a comma-separated list "
                        f"of {', '.join(TEMPLATES)}), got {type(spec).__name__}")
    if spec == "all":
        return TEMPLATES
    if spec == "table3":
        return TABLE3
    names = tuple(n.strip() for n in spec.split(",") if n.strip())
    bad = [n for n in names if n not in TEMPLATES]
    if bad or not names:
        raise ValueError(f"unknown feature template {bad[0] if bad else spec!r}; expected 'all', "
                         f"'table3' or a comma-separated list of {', '.join(TEMPLATES)}")
    if len(set(names)) != len(names):
        raise ValueError(f"features lists a template twice: {spec!r}")
    return tuple(n for n in TEMPLATES if n in names)


def _template_strings(name: str, tokens: list, starts: list) -> list:
    n = len(tokens)
    if name == "Freq":
        return tokens
    if name == "Prefix2":
        return [t[:2] for t in tokens]
    if name == "Suffix2":
        return [t[-2:] for t in tokens]
    if name == "Suffix3":
        return [t[-3:] for t in tokens]
    first = np.zeros(n, dtype=bool)
    last = np.zeros(n, dtype=bool)
    s = np.asarray(starts[:-1], dtype=np.int64)
    e = np.asarray(starts[1:], dtype=np.int64)
    ok = e > s
    first[s[ok]] = True
    last[e[ok] - 1] = True
    if name.startswith("Prev"):
        nb = ["<s>" if first[i] else tokens[i - 1] for i in range(n)]
    else:
        nb = ["</s>" if last[i] else tokens[i + 1] for i in range(n)]
    kind = name[4:]
    if kind == "Word":
        return nb
    if kind == "First":
        return [w if w in ("<s>", "</s>") else w[:1] for w in nb]
    return [w if w in ("<s>", "</s>") else w[-1:] for w in nb]


class FeatureSpace:
    """Integer ids of the strings of some templates (``names``, column order); column 0 is
    always ``Freq``: it is the word id of the lexicon and of the documents."""

    def __init__(self, names, vocabs: list | None = None):
        names = tuple(names)
        if not names or names[0] != "Freq":
            names = ("Freq",) + tuple(n for n in names if n != "Freq")
        self.names = names
        self.vocabs = vocabs  # one list of strings per template
        self._index = None

    @classmethod
    def for_features(cls, features: tuple) -> "FeatureSpace":
        """The space of the string templates among ``features`` (plus ``Freq``)."""
        return cls(("Freq",) + tuple(n for n in features if n in STRING_TEMPLATES
                                     and n != "Freq"))

    @property
    def sizes(self) -> np.ndarray:
        return np.array([len(v) for v in self.vocabs], dtype=np.int64)

    def index(self) -> list[dict]:
        if self._index is None:
            self._index = [{s: k for k, s in enumerate(v)} for v in self.vocabs]
        return self._index

    def fit(self, tokens: list, starts: list) -> "FeatureSpace":
        vocabs = []
        for name in self.names:
            seen: dict = {}
            for s in _template_strings(name, tokens, starts):
                if s not in seen:
                    seen[s] = len(seen)
            vocabs.append(list(seen))
        self.vocabs = vocabs
        self._index = None
        return self

    def transform(self, tokens: list, starts: list) -> np.ndarray:
        """``(n_tokens, n_templates)`` int32 ids, ``-1`` for strings not seen in training."""
        out = np.empty((len(tokens), len(self.names)), dtype=np.int32)
        for col, (name, idx) in enumerate(zip(self.names, self.index())):
            get = idx.get
            out[:, col] = np.fromiter((get(s, -1) for s in
                                       _template_strings(name, tokens, starts)),
                                      dtype=np.int32, count=len(tokens))
        return out
