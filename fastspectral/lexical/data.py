"""Tokens, labels and label elements of lexical disambiguation (Shah et al. 2010, section 2).

A CoNLL-U corpus becomes a sequence of *tokens* ``t`` (what a reader sees: for Arabic the
undiacritised surface form) with *labels* ``l`` (what a disambiguator chooses):

* a label is the tuple ``(lemma, upos, xpos, feats, vocalised)`` of :data:`LABEL_FIELDS`;
  ``vocalised`` is the vocalised FORM when the corpus is vocalised (Arabic: the FORM written
  with its short-vowel diacritics), ``""`` otherwise (the token itself is the form);
* *label elements* (LEs) factor every label into ``Lemma``, ``UPOS``, the XPOS (one LE per
  position of a positional tagset such as PADT's ``N------S1I``, else the whole tag), one LE per
  FEATS key (``""`` where the key is absent) and, for vocalised corpora, ``Vocalization`` (the
  diacritics of the vocalised form with every base letter replaced by ``·``: together with the
  token it gives the vocalised form back).  :class:`LabelScheme` decides them from training
  labels;
* the documents (for the document-level features) come from ``# newdoc`` comments, PADT's
  ``# orig_file_sentence FILE#N`` comments, or else blocks of :data:`DOC_BLOCK` sentences.

Undiacritisation (:func:`undiacritize`) removes the Arabic short vowels, tanwin, shadda and
sukun (U+064B–U+0652), the superscript alef (U+0670) and the tatweel (U+0640).
"""
from __future__ import annotations

import gc
import re
from contextlib import contextmanager
from functools import lru_cache
from dataclasses import dataclass, field

__all__ = ["LABEL_FIELDS", "DIACRITICS", "undiacritize", "has_diacritics", "vocal_pattern",
           "revocalize", "LabelScheme", "Corpus", "corpus_from_sentences", "sentence_documents", "DOC_BLOCK", "label_of",
           "format_label", "parse_label_text", "encode_alt", "decode_alt", "apply_labels",
           "ALT_KEY", "INPUT_FORM_KEY"]

#: the fields of a label, in order
LABEL_FIELDS = ("lemma", "upos", "xpos", "feats", "vocalised")

#: the characters :func:`undiacritize` removes (a regular-expression class)
DIACRITICS = "\u064B-\u0652\u0670\u0640"
_DIACRITICS_RE = re.compile(f"[{DIACRITICS}]")
_NOT_DIACRITIC_RE = re.compile(f"[^{DIACRITICS}]")
#: sentences per document when the corpus names no documents
DOC_BLOCK = 20
_PLACEHOLDER = "\u00b7"


def undiacritize(text: str) -> str:
    """``text`` without Arabic diacritics (U+064B–U+0652, U+0670) and tatweel (U+0640).

    >>> undiacritize("مَجمُوعَةٌ") == "مجموعة"
    True
    """
    return _DIACRITICS_RE.sub("", text)


def has_diacritics(text: str) -> bool:
    """Whether ``text`` holds a character that :func:`undiacritize` removes."""
    return _DIACRITICS_RE.search(text) is not None


def vocal_pattern(vocalised: str) -> str:
    """The vocalisation of a vocalised form: its diacritics, every other character replaced by
    ``·`` (``"كَتَبَ"`` -> ``"·َ·َ·َ"``).  With the undiacritised token it gives the form back
    (:func:`revocalize`)."""
    return _NOT_DIACRITIC_RE.sub(_PLACEHOLDER, vocalised)


def revocalize(token: str, pattern: str) -> str:
    """Put the diacritics of ``pattern`` (:func:`vocal_pattern`) onto the letters of ``token``;
    ``token`` itself when the pattern has another number of letters."""
    parts = _pattern_parts(pattern)
    if len(parts) != len(token) + 1:
        return token
    return parts[0] + "".join(map(str.__add__, token, parts[1:]))


@lru_cache(maxsize=1 << 16)
def _pattern_parts(pattern: str) -> tuple:
    """The diacritics before the first letter and after each letter of a pattern."""
    return tuple(pattern.split(_PLACEHOLDER))


def _feats(raw: str) -> dict:
    if raw in ("_", ""):
        return {}
    out = {}
    for item in raw.split("|"):
        key, _, value = item.partition("=")
        out[key] = value
    return out


@dataclass
class LabelScheme:
    """How labels factor into label elements (LEs).

    Attributes
    ----------
    vocalised : bool
        Tokens are undiacritised FORMs and labels carry the vocalised FORM.
    xpos_positions : list of int or None
        Positions of a positional XPOS tagset that vary (one LE each); ``None``: the whole XPOS
        is one LE.
    feat_keys : list of str
        FEATS keys, one LE each.
    """

    vocalised: bool = False
    xpos_positions: list | None = None
    feat_keys: list = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """The LE names: ``Lemma``, ``UPOS``, ``XPOS`` or ``XPOS[p]``, the FEATS keys,
        ``Vocalization``."""
        out = ["Lemma", "UPOS"]
        if self.xpos_positions is None:
            out.append("XPOS")
        else:
            out.extend(f"XPOS[{p}]" for p in self.xpos_positions)
        out.extend(self.feat_keys)
        if self.vocalised:
            out.append("Vocalization")
        return out

    def elements(self, label: tuple) -> tuple:
        """The LE values of ``label`` (strings, in the order of :attr:`names`)."""
        lemma, upos, xpos, feats, vocalised = label
        cache = self.__dict__.setdefault("_cache", {})
        key = (upos, xpos, feats)
        mid = cache.get(key)
        if mid is None:
            out = [upos]
            if self.xpos_positions is None:
                out.append(xpos)
            else:
                out.extend(xpos[p] if p < len(xpos) else "" for p in self.xpos_positions)
            fd = _feats(feats)
            out.extend(fd.get(k, "") for k in self.feat_keys)
            mid = cache[key] = tuple(out)
        if self.vocalised:
            return (lemma,) + mid + (vocal_pattern(vocalised),)
        return (lemma,) + mid

    @staticmethod
    def morph(label: tuple) -> tuple:
        """The morphological analysis of ``label``: everything but the lemma (the unit of
        M_ind's morphology model)."""
        return tuple(label[1:])

    @classmethod
    def from_labels(cls, labels, vocalised: bool) -> "LabelScheme":
        """The scheme of a training corpus: positional XPOS when every tag has the same length
        (>= 4) and no tag is ``_``; the positions whose character varies become LEs."""
        xposes = {lab[2] for lab in labels}
        positions = None
        lengths = {len(x) for x in xposes}
        if len(lengths) == 1 and min(lengths) >= 4 and "_" not in xposes:
            n = lengths.pop()
            positions = [p for p in range(n) if len({x[p] for x in xposes}) > 1]
        keys = set()
        for feats in {lab[3] for lab in labels}:
            keys.update(_feats(feats))
        return cls(vocalised=vocalised, xpos_positions=positions, feat_keys=sorted(keys))

    def to_meta(self) -> dict:
        return {"vocalised": self.vocalised, "xpos_positions": self.xpos_positions,
                "feat_keys": list(self.feat_keys)}

    @classmethod
    def from_meta(cls, meta: dict) -> "LabelScheme":
        pos = meta["xpos_positions"]
        return cls(bool(meta["vocalised"]), None if pos is None else [int(p) for p in pos],
                   [str(k) for k in meta["feat_keys"]])


def label_of(sent, i: int, vocalised: bool) -> tuple:
    """The label of word ``i`` of a :class:`~fastspectral.trees.conll.DepSentence`."""
    return (sent.lemmas[i], sent.upos[i], sent.xpos[i], sent.feats[i],
            sent.words[i] if vocalised else "")


def format_label(label: tuple) -> str:
    """A label as one line of text (fields joined by tabs, for reports and errors)."""
    return "\t".join(label)


def parse_label_text(text: str) -> tuple:
    """The inverse of :func:`format_label`."""
    parts = text.split("\t")
    parts += [""] * (len(LABEL_FIELDS) - len(parts))
    return tuple(parts[:len(LABEL_FIELDS)])


def sentence_documents(sentences) -> list[int]:
    """The document index of each sentence: a ``# newdoc`` comment starts a document; else
    PADT's ``# orig_file_sentence FILE#N`` names it; else blocks of :data:`DOC_BLOCK`
    sentences."""
    out = []
    doc = -1
    last_file = None
    have_newdoc = any(c.startswith("# newdoc") for s in sentences for c in s.comments)
    for k, s in enumerate(sentences):
        if have_newdoc:
            if any(c.startswith("# newdoc") for c in s.comments) or doc < 0:
                doc += 1
            out.append(doc)
            continue
        name = None
        for c in s.comments:
            if c.startswith("# orig_file_sentence"):
                name = c[len("# orig_file_sentence"):].strip().lstrip("=").strip()
                name = name.rsplit("#", 1)[0]
                break
        if name is None:
            name = ("<block>", k // DOC_BLOCK)
        if name != last_file:
            doc += 1
            last_file = name
        out.append(doc)
    return out


@dataclass
class Corpus:
    """A corpus as flat token lists.

    Attributes
    ----------
    tokens : list of str
        The token of every word (undiacritised for vocalised corpora).
    labels : list of tuple or None
        The gold label of every word (``None`` for unlabelled input).
    sent_starts : list of int
        Index of the first token of each sentence, plus the total at the end.
    docs : list of int
        The document index of every token.
    """

    tokens: list
    labels: list | None
    sent_starts: list
    docs: list

    @property
    def n_sentences(self) -> int:
        return len(self.sent_starts) - 1

    def __len__(self) -> int:
        return len(self.tokens)

    def subset(self, sentence_ids) -> "Corpus":
        """The corpus of the given sentences (in the given order)."""
        tokens, labels, starts, docs = [], [] if self.labels is not None else None, [0], []
        for s in sentence_ids:
            a, b = self.sent_starts[s], self.sent_starts[s + 1]
            tokens.extend(self.tokens[a:b])
            if labels is not None:
                labels.extend(self.labels[a:b])
            docs.extend(self.docs[a:b])
            starts.append(len(tokens))
        return Corpus(tokens, labels, starts, docs)


def corpus_vocalised(sentences) -> bool:
    """Whether the FORMs of a corpus carry Arabic diacritics (a vocalised corpus)."""
    for s in sentences:
        for w in s.words:
            if has_diacritics(w):
                return True
    return False


def corpus_from_sentences(sentences, vocalised: bool, labelled: bool = True) -> Corpus:
    """A :class:`Corpus` from dependency sentences.  ``vocalised``: tokens are the
    undiacritised FORMs and labels carry the FORM; ``labelled``: read the labels."""
    tokens, labels, starts, docs = [], [] if labelled else None, [0], []
    sent_docs = sentence_documents(sentences)
    for s, d in zip(sentences, sent_docs):
        n = len(s.words)
        if vocalised:
            tokens.extend(undiacritize(w) for w in s.words)
        else:
            tokens.extend(s.words)
        if labelled:
            for i in range(n):
                labels.append(label_of(s, i, vocalised))
        docs.extend([d] * n)
        starts.append(len(tokens))
    return Corpus(tokens, labels, starts, docs)


__all__.append("corpus_vocalised")


# --------------------------------------------------------------------------------------------
# writing labels back into sentences
# --------------------------------------------------------------------------------------------
#: MISC key of the second choice (for A2 / E2)
ALT_KEY = "LexAlt"
#: MISC key of the input FORM when a vocalised model replaced it
INPUT_FORM_KEY = "InputForm"
_ESC = (("%", "%25"), ("|", "%7C"), ("=", "%3D"), (" ", "%20"))
_ESC_TABLE = str.maketrans(dict(_ESC))


def _escape(text: str) -> str:
    return text.translate(_ESC_TABLE)


def _unescape(text: str) -> str:
    for a, b in reversed(_ESC):
        text = text.replace(b, a)
    return text


@lru_cache(maxsize=1 << 16)
def encode_alt(label: tuple) -> str:
    """A label as a MISC value: its five fields with ``%``, ``|``, ``=`` and spaces
    percent-escaped, joined by ``%09`` (an escaped tab)."""
    return "%09".join(_escape(f) for f in label)


def decode_alt(value: str) -> tuple:
    """The inverse of :func:`encode_alt`."""
    parts = [_unescape(p) for p in value.split("%09")]
    parts += [""] * (len(LABEL_FIELDS) - len(parts))
    return tuple(parts[:len(LABEL_FIELDS)])


def _misc_without(raw: str, keys) -> list:
    if raw in ("_", ""):
        return []
    return [item for item in raw.split("|") if item.partition("=")[0] not in keys]


@contextmanager
def gc_paused():
    """Python's cyclic garbage collector paused while the lexical code makes its many small
    objects (label tuples, lists, sentences; none of them in a reference cycle), restored
    after: the collections it would otherwise run cost 10-20 % of a tagging process; the few
    cycles made meanwhile (Numba's dispatch, imports) are collected once it is back on."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@lru_cache(maxsize=1 << 16)
def _alt_item(label: tuple) -> str:
    """The MISC item ``LexAlt=...`` of a second choice (labels recur: built once each)."""
    return ALT_KEY + "=" + encode_alt(label)


def apply_labels(sent, first, second, vocalised: bool):
    """A copy of ``sent`` with LEMMA, UPOS, XPOS and FEATS of the labels ``first`` (one per
    word); for ``vocalised`` models FORM becomes the label's vocalised form (the input FORM
    kept in MISC ``InputForm=`` when it differs); MISC ``LexAlt=`` holds the second choice
    (:func:`encode_alt`).  Unknown heads (-1) become 0."""
    from ..trees.conll import DepSentence

    n = len(sent)
    words = []
    misc = []
    keys = (ALT_KEY, INPUT_FORM_KEY)
    alts = [None] * n if second is None else \
        [None if alt is None else _alt_item(alt) for alt in second]
    for w, raw, lab, alt in zip(sent.words, sent.misc, first, alts):
        # MISC: the input's items without LexAlt/InputForm, then InputForm=, then LexAlt=
        if raw == "_" or raw == "":
            text = ""
        elif ALT_KEY in raw or INPUT_FORM_KEY in raw:
            text = "|".join(_misc_without(raw, keys))
        else:                   # no item has one of the keys: the items are ``raw`` itself
            text = raw
        if vocalised and lab[4] and lab[4] != w:
            item = INPUT_FORM_KEY + "=" + _escape(w)
            text = text + "|" + item if text else item
            w = lab[4]
        words.append(w)
        if alt is not None:
            text = text + "|" + alt if text else alt
        misc.append(text or "_")
    lemmas, upos, xpos, feats = (
        [v or "_" for v in col] for col in list(zip(*first))[:4]) if n else ([], [], [], [])
    return DepSentence(
        ids=list(sent.ids), words=words, lemmas=lemmas, upos=upos, xpos=xpos, feats=feats,
        heads=[h if h >= 0 else 0 for h in sent.heads], rels=list(sent.rels),
        deps=list(sent.deps), misc=misc, comments=list(sent.comments),
        extra_lines=list(sent.extra_lines), line=sent.line)


def predicted_labels(sent, vocalised: bool) -> tuple[list, list]:
    """``(first, second)`` labels of a tagged sentence (the output of :func:`apply_labels`;
    ``second`` entries are None without ``LexAlt``)."""
    first, second = [], []
    for i in range(len(sent)):
        first.append(label_of(sent, i, vocalised))
        alt = None
        for item in _misc_without(sent.misc[i], ()):
            key, _, value = item.partition("=")
            if key == ALT_KEY:
                alt = decode_alt(value)
                if not vocalised:
                    alt = alt[:4] + ("",)
        second.append(alt)
    return first, second


__all__.append("predicted_labels")
