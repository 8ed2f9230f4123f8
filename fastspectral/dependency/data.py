"""Data layer of the SHAG parsers: symbols, head-modifier sequences, token classes.

A dependency tree over words ``1..n`` (position 0 is the root) is read as a *split head
automaton* derivation: every position ``h`` has a left and a right modifier sequence, each
ordered **head-outwards** (the modifier nearest to ``h`` first), implicitly framed by START and
STOP.  The root (position 0) has only a right sequence: the words whose head is 0, nearest
first (a single word in single-rooted treebanks), exactly as in Luque et al. (2012), where the
root is a special head symbol with its own automaton.

Everything here is vectorised NumPy over a whole treebank.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, repeat

import numpy as np

from ..errors import FormatError

__all__ = ["ROOT", "UNK", "LEFT", "RIGHT", "SymbolVocab", "Encoded", "encode_sentences",
           "SequenceData", "modifier_sequences", "token_class", "token_classes", "N_CLASSES",
           "check_sentences",
           "CLASS_OTHER", "CLASS_COORD", "CLASS_PUNCT", "is_projective",
           "trees_to_dep_sentences", "check_sentence", "TAGSETS", "UD_UPOS", "choose_tagset",
           "with_tagset"]

ROOT = "<ROOT>"
UNK = "<UNK>"
LEFT, RIGHT = 0, 1

#: token classes used by the deterministic automata with C/P states (LEX+FCP)
CLASS_OTHER, CLASS_COORD, CLASS_PUNCT = 0, 1, 2
N_CLASSES = 3
_COORD_TAGS = frozenset({"CC", "CCONJ", "cc", "c", "CONJ"})
_PUNCT_TAGS = frozenset({",", ".", ":", "``", "''", "PUNCT", "-LRB-", "-RRB-"})


#: the 17 Universal POS tags of Universal Dependencies
UD_UPOS = frozenset({"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART",
                     "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X"})
#: which tag column a dependency parser reads (see :func:`choose_tagset`)
TAGSETS = ("auto", "upos", "xpos")


def choose_tagset(sents) -> str:
    """``"upos"`` when every sentence has UPOS tags and all are Universal POS tags (a Universal
    Dependencies treebank), else ``"xpos"`` (the fine tags: XPOS, CoNLL-X POSTAG, Malt-TAB).

    UD trees attach function words (auxiliaries, adpositions, ...) to content words, and UPOS
    is designed for that: it separates ``AUX`` from ``VERB``, which PTB-style XPOS does not
    (``has`` / ``been`` / ``attacked`` are VBZ / VBN / VBN).  Treebanks in other annotation
    styles keep their fine tags (e.g. CoNLL-X Spanish, whose coarse tags lose the
    auxiliary / main-verb distinction).
    """
    for s in sents:
        upos = getattr(s, "upos", None)
        if not upos or len(upos) != len(s.words) or not UD_UPOS.issuperset(upos):
            return "xpos"
    return "upos"


@dataclass
class _TagView:
    """A sentence seen through another tag column (the attributes the parsers read)."""
    words: list
    tags: list
    heads: list
    line: int | None


def with_tagset(sents, tagset: str) -> list:
    """``sents`` with ``.tags`` taken from ``tagset``: ``"xpos"`` leaves them as they are (their
    ``tags``: XPOS, or UPOS when a sentence has no XPOS); ``"upos"`` reads their ``upos``
    (``FormatError`` naming the sentence when it has none)."""
    if tagset == "xpos":
        return sents
    if tagset != "upos":
        raise ValueError(f"tagset must be one of {', '.join(TAGSETS[1:])}, not {tagset!r}")
    out = []
    for i, s in enumerate(sents):
        upos = getattr(s, "upos", None)
        if not upos or all(t == "_" for t in upos):
            raise FormatError(f"sentence {i + 1}: no UPOS tags (this model reads the UPOS column; "
                              "train with tag_column='xpos' to use the other tags)", None,
                              getattr(s, "line", None))
        out.append(_TagView(s.words, upos, getattr(s, "heads", None), getattr(s, "line", None)))
    return out


class SymbolVocab:
    """A frozen string -> id map; unknown strings map to ``unk_id``."""

    def __init__(self, symbols, unk_id: int):
        self.symbols = list(symbols)
        self.index = {s: i for i, s in enumerate(self.symbols)}
        self.unk_id = int(unk_id)

    def __len__(self) -> int:
        return len(self.symbols)

    def ids(self, items) -> np.ndarray:
        """Ids of ``items`` (int32), unknown items mapped to ``unk_id``."""
        return np.fromiter(map(self.index.get, items, repeat(self.unk_id)), dtype=np.int32,
                           count=len(items))


def tag_view(sents, tagset: str, tags=None, need_heads: bool = False) -> list:
    """``sents`` seen through the tag column ``tagset`` (:func:`with_tagset`), or with the given
    ``tags`` (one list per sentence; a None entry keeps that sentence's own column), each
    checked (:func:`check_sentence`).  Shared by the dependency parsers' ``parse``."""
    if tags is None:
        view = with_tagset(sents, tagset)
    else:
        view = []
        for i, (s, t) in enumerate(zip(sents, tags)):
            if t is None:
                view.extend(with_tagset([s], tagset))
                continue
            t = list(t)
            if len(t) != len(s.words):
                raise ValueError(f"sentence {i + 1}: {len(t)} tags for {len(s.words)} words")
            view.append(_TagView(s.words, t, getattr(s, "heads", None), getattr(s, "line", None)))
    for i, s in enumerate(view):
        check_sentence(s, i, need_heads=need_heads)
    return view


#: the ASCII characters of the Unicode punctuation categories (P*)
_ASCII_PUNCT = "".join(c for c in map(chr, range(128)) if unicodedata.category(c)[0] == "P")


def _is_punct_word(word: str) -> bool:
    if word.isascii():
        return bool(word) and not word.strip(_ASCII_PUNCT)
    return bool(word) and all(unicodedata.category(ch).startswith("P") for ch in word)


@lru_cache(maxsize=1 << 16)
def token_class(word: str, tag: str) -> int:
    """2 for punctuation (all-punctuation word, a punctuation tag, or an EAGLES ``F..`` tag),
    1 for a coordinating conjunction (``CC``, ``CCONJ``, ``cc``, ``c``), 0 otherwise."""
    if tag in _PUNCT_TAGS or _is_punct_word(word) or (tag[:1] == "F" and tag[1:].islower()):
        return CLASS_PUNCT
    if tag in _COORD_TAGS:
        return CLASS_COORD
    return CLASS_OTHER


def token_classes(words, tags) -> np.ndarray:
    """Class of each token (see :func:`token_class`) as an int32 array: the word tests made
    once per distinct word, the tag tests once per distinct tag."""
    n = len(words)
    if len(tags) != n:
        raise ValueError(f"{len(tags)} tags for {n} words")
    word_at, word_of = _codes(words)
    tag_at, tag_of = _codes(tags)
    punct_word = np.fromiter(map(_is_punct_word, word_at), dtype=bool, count=len(word_at))
    punct_tag = np.fromiter((t in _PUNCT_TAGS or (t[:1] == "F" and t[1:].islower())
                             for t in tag_at), dtype=bool, count=len(tag_at))
    coord_tag = np.fromiter((t in _COORD_TAGS for t in tag_at), dtype=bool, count=len(tag_at))
    out = np.where(coord_tag[tag_of], CLASS_COORD, CLASS_OTHER).astype(np.int32)
    out[punct_tag[tag_of] | punct_word[word_of]] = CLASS_PUNCT
    return out


def _codes(items) -> tuple[list, np.ndarray]:
    """The distinct ``items`` (in order of first occurrence) and each item's index among them."""
    distinct = list(dict.fromkeys(items))
    index = {x: i for i, x in enumerate(distinct)}
    return distinct, np.fromiter(map(index.__getitem__, items), dtype=np.int64,
                                 count=len(items))


def check_sentence(sent, index: int | None = None, need_heads: bool = True) -> None:
    """Raise ``FormatError`` (naming the sentence) when ``sent`` lacks words/tags or has bad heads."""
    where = f"sentence {index + 1}" if index is not None else "sentence"
    line = getattr(sent, "line", None)
    words, tags = sent.words, sent.tags
    if len(words) == 0:
        raise FormatError(f"{where}: empty sentence", None, line)
    if len(tags) != len(words):
        raise FormatError(f"{where}: {len(tags)} tags for {len(words)} words", None, line)
    if need_heads:
        heads = sent.heads
        n = len(words)
        if len(heads) != n:
            raise FormatError(f"{where}: {len(heads)} heads for {n} words", None, line)
        h = np.asarray(heads, dtype=np.int64)
        if (h < 0).any() or (h > n).any() or (h == np.arange(1, n + 1)).any():
            raise FormatError(f"{where}: head out of range or self-loop", None, line)
        from ..trees.conll import heads_cycle

        if heads_cycle(h.tolist()) is not None:      # every word must reach the root
            raise FormatError(f"{where}: the heads contain a cycle", None, line)


def check_sentences(sents, need_heads: bool = True) -> None:
    """:func:`check_sentence` of every sentence (index ``i`` for ``sents[i]``), the common case
    (every sentence fine) checked at once with NumPy; the first sentence that is not raises
    the error :func:`check_sentence` raises for it."""
    if not _sentences_fine(sents, need_heads):
        for i, s in enumerate(sents):
            check_sentence(s, i, need_heads=need_heads)


def _sentences_fine(sents, need_heads: bool) -> bool:
    """Whether :func:`check_sentence` would pass every sentence (False when unsure)."""
    if not sents:
        return True
    try:
        lens = np.fromiter(map(len, _column(sents, "words")), dtype=np.int64, count=len(sents))
        if (lens == 0).any() or not np.array_equal(
                np.fromiter(map(len, _column(sents, "tags")), dtype=np.int64,
                            count=len(sents)), lens):
            return False
        if not need_heads:
            return True
        heads_cols = _column(sents, "heads")
        if not np.array_equal(np.fromiter(map(len, heads_cols), dtype=np.int64,
                                          count=len(sents)), lens):
            return False
        total = int(lens.sum())
        heads = np.fromiter(chain.from_iterable(heads_cols), dtype=np.int64, count=total)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return False
    off = np.zeros(len(sents) + 1, dtype=np.int64)
    np.cumsum(lens + 1, out=off[1:])                # position 0 of every sentence: its root
    sent_len = np.repeat(lens, lens)
    pos = np.arange(1, total + 1) - np.repeat(off[:-1] - np.arange(len(sents)), lens)
    if (heads < 0).any() or (heads > sent_len).any() or (heads == pos).any():
        return False
    # every word reaches its root: follow the heads by pointer doubling
    parent = np.arange(int(off[-1]))
    words = np.repeat(off[:-1], lens) + pos
    parent[words] = np.repeat(off[:-1], lens) + heads
    for _ in range(int(lens.max()).bit_length()):
        parent = parent[parent]
    return bool((parent[words] == np.repeat(off[:-1], lens)).all())


def _column(sents, name: str) -> list:
    return [getattr(s, name) for s in sents]


def is_projective(heads) -> bool:
    """True when the tree given by 1-based ``heads`` (0 = root) has no crossing arcs."""
    arcs = [(min(h, m), max(h, m)) for m, h in enumerate(heads, start=1)]
    for a, b in arcs:
        for c, d in arcs:
            if a < c < b < d:
                return False
    return True


@dataclass
class Encoded:
    """A batch of sentences as flat arrays (positions include the root, position 0).

    ``tok_off[b] .. tok_off[b+1]`` are sentence ``b``'s positions; ``hsym`` is the head symbol
    (0 = root, tag id + 1 otherwise), ``msym`` the modifier symbol (tag id; 0 for the root
    position, never used), ``cls`` the token class, ``wid`` the word id (-1 for the root)
    and ``heads`` the gold heads (-1 for the root position or when unknown).
    """
    tok_off: np.ndarray
    hsym: np.ndarray
    msym: np.ndarray
    cls: np.ndarray
    wid: np.ndarray
    heads: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        """Number of words of each sentence."""
        return np.diff(self.tok_off) - 1

    def subset(self, idx) -> "Encoded":
        """The sentences ``idx`` (in that order) as a new batch."""
        idx = np.asarray(idx, dtype=np.int64)
        lens1 = self.tok_off[idx + 1] - self.tok_off[idx]
        tok_off = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(lens1, out=tok_off[1:])
        pos = (np.repeat(self.tok_off[idx], lens1) + np.arange(int(tok_off[-1]))
               - np.repeat(tok_off[:-1], lens1))
        return Encoded(tok_off, self.hsym[pos], self.msym[pos], self.cls[pos], self.wid[pos],
                       self.heads[pos])


def encode_sentences(sents, tags: SymbolVocab, words: SymbolVocab | None = None,
                     with_heads: bool = True) -> Encoded:
    """Encode sentences (objects with ``.words``, ``.tags`` and, if ``with_heads``, ``.heads``)."""
    word_cols = _column(sents, "words")
    tag_cols = _column(sents, "tags")
    lens = np.fromiter(map(len, word_cols), dtype=np.int64, count=len(sents))
    tok_off = np.zeros(len(sents) + 1, dtype=np.int64)
    np.cumsum(lens + 1, out=tok_off[1:])
    total = int(tok_off[-1])
    n_words = total - len(sents)
    all_words = list(chain.from_iterable(word_cols))
    all_tags = list(chain.from_iterable(tag_cols))
    if len(all_tags) != n_words:
        for s in sents:
            if len(s.tags) != len(s.words):
                raise ValueError(f"a sentence has {len(s.tags)} tags for {len(s.words)} words")
    is_root = np.zeros(total, dtype=bool)
    is_root[tok_off[:-1]] = True
    at = np.flatnonzero(~is_root)                   # the positions of the words
    heads = np.full(total, -1, dtype=np.int64)
    if with_heads:
        heads[at] = np.fromiter(chain.from_iterable(_column(sents, "heads")), dtype=np.int64,
                                count=n_words)
    cls = np.zeros(total, dtype=np.int32)
    cls[at] = token_classes(all_words, all_tags)
    tid = tags.ids(all_tags)
    msym = np.zeros(total, dtype=np.int32)
    msym[at] = tid
    hsym = np.zeros(total, dtype=np.int32)
    hsym[at] = tid + 1
    wid = np.full(total, -1, dtype=np.int32)
    if words is not None:
        wid[at] = words.ids(all_words)
    return Encoded(tok_off, hsym, msym, cls, wid, heads)


@dataclass
class SequenceData:
    """All head-modifier sequences of a treebank.

    Sequence ``q`` belongs to head position ``seq_pos[q]`` (global, into the ``Encoded``
    arrays) and direction ``seq_dir[q]``; its modifiers (global positions, head-outwards) are
    ``mods[seq_start[q] : seq_start[q] + seq_len[q]]``.  The root's left sequence is omitted.
    """
    seq_pos: np.ndarray
    seq_dir: np.ndarray
    seq_start: np.ndarray
    seq_len: np.ndarray
    mods: np.ndarray

    def states(self, cls: np.ndarray, next_state: np.ndarray) -> np.ndarray:
        """Deterministic automaton state *before* each modifier in ``mods`` (state 0 first)."""
        st = np.zeros(len(self.mods), dtype=np.int32)
        if len(self.mods) == 0:
            return st
        # iterate over modifier rank j (sequences are short): state_j = next(state_{j-1}, cls)
        first = np.repeat(self.seq_start, self.seq_len)
        rank = np.arange(len(self.mods)) - first
        maxlen = int(self.seq_len.max()) if len(self.seq_len) else 0
        for j in range(1, maxlen):
            sel = np.nonzero(rank == j)[0]
            st[sel] = next_state[st[sel - 1], cls[self.mods[sel - 1]]]
        return st


def modifier_sequences(enc: Encoded) -> SequenceData:
    """Head-outwards modifier sequences (left and right) of every position of ``enc``."""
    total = len(enc.hsym)
    sent_of = np.repeat(np.arange(len(enc.tok_off) - 1), np.diff(enc.tok_off))
    pos = np.arange(total) - enc.tok_off[sent_of]
    is_word = pos > 0
    m = np.nonzero(is_word)[0]
    hpos = enc.heads[m]
    if (hpos < 0).any():
        raise ValueError("modifier_sequences needs gold heads")
    hglob = enc.tok_off[sent_of[m]] + hpos
    d = (pos[m] > hpos).astype(np.int64)            # 1 = right of its head
    dist = np.abs(pos[m] - hpos)
    seq_id = hglob * 2 + d
    order = np.lexsort((dist, seq_id))
    mods = m[order]
    sid = seq_id[order]
    counts = np.bincount(sid, minlength=2 * total)
    # keep every (position, direction) except the root's left sequence
    all_ids = np.arange(2 * total)
    keep = ~((all_ids % 2 == LEFT) & (~is_word[all_ids // 2]))
    starts = np.zeros(2 * total, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    ids = all_ids[keep]
    return SequenceData(seq_pos=(ids // 2).astype(np.int64), seq_dir=(ids % 2).astype(np.int32),
                        seq_start=starts[ids], seq_len=counts[ids].astype(np.int64),
                        mods=mods.astype(np.int64))


def trees_to_dep_sentences(trees):
    """Convert constituency trees to ``DepSentence`` objects with Collins head rules.

    Uses ``fastspectral.trees.heads.tree_to_dependencies``; the trees should be cleaned
    (``fastspectral.trees.transforms.clean``) so that traces and empty nodes are gone.
    """
    from ..trees.conll import DepSentence
    from ..trees.heads import tree_to_dependencies

    out = []
    for t in trees:
        words, tags, heads = tree_to_dependencies(t)
        out.append(DepSentence(words=list(words), xpos=list(tags), heads=list(heads)))
    return out
