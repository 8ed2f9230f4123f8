"""Context statistics of lexical disambiguation (Shah et al. 2010, table 3).

Every *template* maps a token in its sentence to one feature string; a feature space gives each
string of a template an integer id (``-1``: not seen in training).

* ``Freq``: the token itself: its stage-1 estimates are the relative frequencies of the
  token's labels (the paper's *Freq*);
* ``PrevWord``: the previous token (``<s>`` at the start of a sentence);
* ``NextWord``: the next token (``</s>`` at the end);
* ``PrevFirst``, ``PrevLast``, ``NextFirst``, ``NextLast``: the first / last letter of a
  neighbour;
* ``Doc``: document-level term frequencies: the words of the token's document (not a template
  of one string; see :mod:`fastspectral.lexical.engine`);
* ``Prefix2``, ``Suffix2``, ``Suffix3``: the first two / last two / last three letters of the
  token (an extension beyond table 3: they carry the unknown words).

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


def _type_ids(tokens: list) -> tuple[np.ndarray, list]:
    """``(ids, types)``: the id of every token's type (first-seen order) and the types."""
    index: dict = {}
    ids = np.fromiter((index.setdefault(t, len(index)) for t in tokens), dtype=np.int64,
                      count=len(tokens))
    return ids, list(index)


def _boundaries(n: int, starts) -> tuple[np.ndarray, np.ndarray]:
    first = np.zeros(n, dtype=bool)
    last = np.zeros(n, dtype=bool)
    s = np.asarray(starts[:-1], dtype=np.int64)
    e = np.asarray(starts[1:], dtype=np.int64)
    ok = e > s
    first[s[ok]] = True
    last[e[ok] - 1] = True
    return first, last


def _type_string(name: str, t: str) -> str:
    """The string of template ``name`` for a token of type ``t`` (its neighbour's type for the
    Prev/Next templates)."""
    if name in ("Freq", "PrevWord", "NextWord"):
        return t
    if name == "Prefix2":
        return t[:2]
    if name == "Suffix2":
        return t[-2:]
    if name == "Suffix3":
        return t[-3:]
    return t[:1] if name.endswith("First") else t[-1:]


def _template_values(name: str, per_type: np.ndarray, ids: np.ndarray, first, last, start,
                     end) -> np.ndarray:
    """The values (``per_type[type]``, or a neighbour's, ``start``/``end`` at the sentence
    boundaries) of template ``name`` for every token: vectorised over tokens."""
    own = per_type[ids]
    if not name.startswith(("Prev", "Next")):
        return own
    out = np.empty_like(own)
    if name.startswith("Prev"):
        out[1:] = own[:-1]
        out[first] = start
    else:
        out[:-1] = own[1:]
        out[last] = end
    return out


def _template_strings(name: str, tokens: list, starts: list) -> list:
    """The strings of template ``name`` for every token (reference implementation)."""
    ids, types = _type_ids(tokens)
    first, last = _boundaries(len(tokens), starts)
    per_type = np.array([_type_string(name, t) for t in types] or [""], dtype=object)
    return _template_values(name, per_type, ids, first, last, "<s>", "</s>").tolist()


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
        ids, types = _type_ids(tokens)
        first, last = _boundaries(len(tokens), starts)
        vocabs = []
        for name in self.names:
            per_type = np.array([_type_string(name, t) for t in types] or [""], dtype=object)
            strings = _template_values(name, per_type, ids, first, last, "<s>", "</s>")
            vocabs.append(list(dict.fromkeys(strings.tolist())))
        self.vocabs = vocabs
        self._index = None
        return self

    def transform(self, tokens: list, starts: list) -> np.ndarray:
        """``(n_tokens, n_templates)`` int32 ids, ``-1`` for strings not seen in training
        (one pass over the tokens; the templates are looked up once per word type)."""
        ids, types = _type_ids(tokens)
        first, last = _boundaries(len(tokens), starts)
        out = np.empty((len(tokens), len(self.names)), dtype=np.int32)
        for col, (name, idx) in enumerate(zip(self.names, self.index())):
            get = idx.get
            per_type = np.fromiter((get(_type_string(name, t), -1) for t in types),
                                   dtype=np.int32, count=len(types))
            if len(tokens):
                out[:, col] = _template_values(name, per_type, ids, first, last,
                                               get("<s>", -1), get("</s>", -1))
        return out
