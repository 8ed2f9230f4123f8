"""Sequence data of the HMMs: reading sequences, the symbol vocabulary, flat encodings.

* the sequences themselves are read by :func:`fastspectral.trees.corpus.read_sequences`
  (also ``fastspectral.hmm.read_sequences``): words or tags of text, trees or CoNLL files.
* :class:`SymbolTable` is the vocabulary of a model: symbol ``0`` is the unknown symbol
  ``<unk>``, then the kept symbols by decreasing frequency (ties in string order), with a
  ``min_count`` threshold and a ``max_vocab`` cap.
* :func:`encode` turns sequences into the flat arrays the compiled kernels read.
* :class:`Encoded` is that flat form; bound to its symbols (:meth:`Encoded.from_sequences`,
  :meth:`Encoded.from_ids` for integer ids with their vocabulary, as hmmlearn's
  ``fit(X, lengths)`` takes them) it is an input of ``HMM.fit`` and of the scoring methods:
  the model it gives is the one the strings give (:func:`canonical`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import chain, repeat
from operator import itemgetter

import numpy as np

from ..base import check_sequences  # noqa: F401  (re-exported: the sequence models' check)
from ..trees.corpus import FIELDS

__all__ = ["FIELDS", "UNK", "SymbolTable", "Encoded", "encode", "check_sequences",
           "build_and_encode", "read_training", "canonical"]

#: the unknown symbol (id 0)
UNK = "<unk>"
#: strings that name sequence boundaries in the language models; read as unknown symbols
_RESERVED = frozenset({UNK, "<s>", "</s>"})




class SymbolTable:
    """The symbols of a sequence model: id 0 is ``<unk>``, then the kept symbols.

    Parameters
    ----------
    symbols : list of str
        All symbols, ``symbols[0] == "<unk>"``.
    lowercase : bool
        Whether tokens are lower-cased before the look-up.
    """

    def __init__(self, symbols, lowercase: bool = False):
        self.symbols = list(symbols)
        if not self.symbols or self.symbols[0] != UNK:
            raise ValueError("a symbol table starts with <unk>")
        self.lowercase = bool(lowercase)
        self.index = {s: i for i, s in enumerate(self.symbols)}

    @classmethod
    def build(cls, sequences, min_count: int = 1, max_vocab: int | None = None,
              lowercase: bool = False) -> "SymbolTable":
        """The symbols seen at least ``min_count`` times, the ``max_vocab`` most frequent of
        them (``None``: all), most frequent first (ties in string order), after ``<unk>``.
        The strings ``<unk>``, ``<s>`` and ``</s>`` are read as the unknown symbol."""
        flat = chain.from_iterable(sequences)          # counted at C speed
        counts: Counter = Counter(map(str.lower, flat) if lowercase else flat)
        for r in _RESERVED:
            counts.pop(r, None)
        kept = sorted((w for w, c in counts.items() if c >= min_count),
                      key=lambda w: (-counts[w], w))
        if max_vocab is not None:
            kept = kept[:int(max_vocab)]
        return cls([UNK] + kept, lowercase)

    def __len__(self) -> int:
        return len(self.symbols)

    def ids(self, seq) -> np.ndarray:
        """Ids of the tokens of one sequence (unknown tokens: 0), int64."""
        get = self.index.get
        if self.lowercase:
            return np.fromiter((get(t.lower(), 0) for t in seq), dtype=np.int64, count=len(seq))
        return np.fromiter((get(t, 0) for t in seq), dtype=np.int64, count=len(seq))

    def key(self, token: str) -> str:
        """The string a token is looked up as (lower-cased when the table folds case)."""
        return token.lower() if self.lowercase else token


@dataclass
class Encoded:
    """Sequences as flat arrays: sequence ``i`` is ``ids[offsets[i]:offsets[i+1]]``.

    ``symbols``: the :class:`SymbolTable` the ids index, when the encoding is an input of
    :class:`~fastspectral.hmm.HMM` (made by :meth:`from_sequences`, :meth:`from_ids` or
    ``HMM.encode``; the learners' internal encodings leave it None).  ``HMM.fit`` on such an
    encoding learns the model ``fit`` learns on the strings (the same symbol table, ids and
    arrays), without hashing the tokens again; the scoring methods read it too.
    """
    offsets: np.ndarray
    ids: np.ndarray
    symbols: "SymbolTable | None" = None

    @classmethod
    def from_sequences(cls, sequences, lowercase: bool = False) -> "Encoded":
        """The sequences (lists of strings) encoded once: every distinct token a symbol (most
        frequent first, ties in string order; ``<unk>``, ``<s>`` and ``</s>`` read as
        ``<unk>``, id 0), lower-cased first with ``lowercase``.  A model's ``min_count``
        and vocabulary cap are applied by its ``fit``."""
        _, table, enc, _ = read_training(sequences, 1, bool(lowercase))
        return cls(enc.offsets, enc.ids, table)

    @classmethod
    def from_ids(cls, ids, lengths, symbols, lowercase: bool = False) -> "Encoded":
        """Integer-encoded sequences (hmmlearn's ``fit(X, lengths)`` input) with their
        vocabulary: ``ids`` (1-D, or ``[n, 1]``) index ``symbols`` (distinct strings, any
        order; ids never used are dropped, ``<unk>`` / ``<s>`` / ``</s>`` read as the unknown
        symbol), ``lengths`` the sequence lengths in order (summing to ``len(ids)``).
        Returns the encoding :meth:`from_sequences` gives on the strings
        ``[[symbols[i] for i in seq] ...]`` (the ids renumbered into that table's order).
        Raises ``TypeError`` / ``ValueError`` with a one-line message for ids out of range,
        non-integer arrays, negative lengths, lengths that do not add up, non-string or
        repeated symbols."""
        if isinstance(symbols, (str, bytes)) or not hasattr(symbols, "__len__"):
            raise TypeError("symbols must be a list of strings (the name of every id)")
        syms = list(symbols)
        try:
            "".join(syms)
        except TypeError:
            bad = next(i for i, t in enumerate(syms) if not isinstance(t, str))
            raise TypeError(f"symbols[{bad}] is a {type(syms[bad]).__name__}, not a "
                            "string") from None
        if len(set(syms)) != len(syms):
            seen = {}
            for i, t in enumerate(syms):
                if t in seen:
                    raise ValueError(f"symbols[{i}] repeats symbols[{seen[t]}] ({t!r})")
                seen[t] = i
        ids = _int_array(ids, "ids")
        if ids.ndim == 2 and ids.shape[1] == 1:
            ids = ids[:, 0]
        if ids.ndim != 1:
            raise ValueError(f"ids must be 1-D (or [n, 1]), got shape {ids.shape}")
        lengths = _int_array(lengths, "lengths")
        if lengths.ndim != 1:
            raise ValueError(f"lengths must be 1-D, got shape {lengths.shape}")
        if len(lengths) and lengths.min() < 0:
            i = int(np.flatnonzero(lengths < 0)[0])
            raise ValueError(f"lengths[{i}] = {int(lengths[i])} is negative")
        off = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=off[1:])
        if off[-1] != len(ids):
            raise ValueError(f"lengths sum to {int(off[-1])}, but there are {len(ids)} ids")
        _check_ids(ids, len(syms), "ids")
        table, enc, _ = canonical(syms, off, np.ascontiguousarray(ids, dtype=np.int64), 1,
                                  bool(lowercase), False)
        return cls(enc.offsets, enc.ids, table)

    def check(self, what: str = "sequences") -> None:
        """The cheap consistency checks of an input encoding (a one-line ``ValueError`` /
        ``TypeError`` otherwise): ``symbols`` set, ``offsets`` 1-D integers from 0 to
        ``len(ids)`` never decreasing, ``ids`` 1-D integers indexing ``symbols``."""
        if not isinstance(self.symbols, SymbolTable):
            raise TypeError(f"{what}: an Encoded without its symbols (make it with "
                            "Encoded.from_sequences, Encoded.from_ids or HMM.encode)")
        off = _int_array(self.offsets, f"{what}.offsets")
        ids = _int_array(self.ids, f"{what}.ids")
        if off.ndim != 1 or ids.ndim != 1 or len(off) == 0:
            raise ValueError(f"{what}: offsets and ids must be non-empty 1-D arrays "
                             f"(got shapes {off.shape}, {ids.shape})")
        if off[0] != 0 or off[-1] != len(ids):
            raise ValueError(f"{what}: offsets must run from 0 to len(ids) = {len(ids)} "
                             f"(got {int(off[0])} .. {int(off[-1])})")
        if len(off) > 1 and np.any(off[1:] < off[:-1]):
            i = int(np.flatnonzero(off[1:] < off[:-1])[0])
            raise ValueError(f"{what}: offsets decrease at sequence {i}")
        _check_ids(ids, len(self.symbols), f"{what}.ids")

    @property
    def n_sequences(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def n_events(self) -> int:
        """Predicted events: every token plus the end of every sequence."""
        return int(len(self.ids) + self.n_sequences)

    def subset(self, idx) -> "Encoded":
        """The sequences ``idx`` (in that order)."""
        idx = np.asarray(idx, dtype=np.int64)
        lens = self.offsets[idx + 1] - self.offsets[idx]
        off = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(lens, out=off[1:])
        pos = np.repeat(self.offsets[idx] - off[:-1], lens) + np.arange(int(off[-1]))
        return Encoded(off, self.ids[pos], self.symbols)


def _int_array(a, what: str) -> np.ndarray:
    """``a`` as an integer array (a one-line ``TypeError`` for any other kind)."""
    a = np.asarray(a)
    if a.dtype.kind not in "iu" and not (a.size == 0 and a.dtype.kind == "f"):
        raise TypeError(f"{what} must be an integer array, got dtype {a.dtype}")
    return a.astype(np.int64, copy=False)


def _check_ids(ids: np.ndarray, n: int, what: str) -> None:
    """Every id in ``0 .. n - 1`` (a one-line ``ValueError`` naming the first one that is
    not)."""
    if len(ids) and (ids.min() < 0 or ids.max() >= n):
        i = int(np.flatnonzero((ids < 0) | (ids >= n))[0])
        raise ValueError(f"{what}[{i}] = {int(ids[i])} is not a symbol id (0 .. {n - 1})")


def canonical(symbols, offsets, ids, min_count: int = 1, lowercase: bool = False,
              folded: bool = False, table: "SymbolTable | None" = None):
    """``(SymbolTable, Encoded, tokens per symbol id)`` of integer-encoded sequences
    (``ids`` index the strings ``symbols``; ``folded``: they were lower-cased already):
    what :func:`build_and_encode` gives on the strings themselves, computed per distinct
    symbol (the ids are gathered once, not at all when the table keeps every id in place).
    Symbols are lower-cased with ``lowercase`` (case variants merged), the reserved strings
    are ``<unk>``, the others kept when seen at least ``min_count`` times, most frequent
    first, ties in string order.  ``table``: the :class:`SymbolTable` of ``symbols``, if
    any; when it is already in that order (an encoding of :meth:`Encoded.from_sequences`),
    the kept symbols are a prefix of it and nothing is renumbered."""
    V0 = len(symbols)
    c0 = np.bincount(ids, minlength=V0) if len(ids) else np.zeros(V0, dtype=np.int64)
    if table is not None and V0 > 1 and (folded or not lowercase) and \
            table.lowercase == bool(lowercase) and _in_table_order(symbols, c0):
        K = int(np.count_nonzero(c0[1:] >= max(int(min_count), 1)))   # kept: a prefix
        out = ids if K == V0 - 1 else np.where(ids <= K, ids, 0)
        counts = c0[:K + 1].copy()
        counts[0] = len(ids) - int(counts[1:].sum())
        kept = table if K == V0 - 1 else SymbolTable(symbols[:K + 1], bool(lowercase))
        return kept, Encoded(offsets, out), counts
    keys = [t.lower() for t in symbols] if lowercase and not folded else list(symbols)
    gid = np.zeros(V0, dtype=np.int64)              # 0: <unk>
    group: dict = {}
    gkeys = [UNK]
    for i, k in enumerate(keys):
        if k in _RESERVED:
            continue
        j = group.get(k)
        if j is None:
            j = group[k] = len(gkeys)
            gkeys.append(k)
        gid[i] = j
    gc = np.zeros(len(gkeys), dtype=np.int64)
    np.add.at(gc, gid, c0)
    cand = [j for j in range(1, len(gkeys)) if gc[j] >= min_count and gc[j] > 0]
    cand.sort(key=lambda j: (-gc[j], gkeys[j]))
    table = SymbolTable([UNK] + [gkeys[j] for j in cand], bool(lowercase))
    rank = np.zeros(len(gkeys), dtype=np.int64)
    cand_ids = np.asarray(cand, dtype=np.int64)
    rank[cand_ids] = np.arange(1, len(cand) + 1)
    remap = rank[gid]
    if len(remap) == len(table) and np.array_equal(remap, np.arange(len(remap))):
        out = ids                                   # already in the table's order
    else:
        out = remap[ids]
    counts = np.zeros(len(table), dtype=np.int64)
    counts[1:] = gc[cand_ids]
    counts[0] = len(ids) - int(counts[1:].sum())
    return table, Encoded(offsets, out), counts


def _in_table_order(symbols, counts) -> bool:
    """Whether ``symbols`` (``<unk>`` first) are the order :func:`canonical` gives for the
    token ``counts``: every other symbol seen, distinct from the reserved strings, most
    frequent first, ties in string order."""
    c = counts[1:]
    if symbols[0] != UNK or (len(c) and c[-1] <= 0) or np.any(c[:-1] < c[1:]) or \
            not _RESERVED.isdisjoint(symbols[1:]):
        return False
    tie = np.flatnonzero(c[:-1] == c[1:]) + 1
    return all(symbols[i] < symbols[i + 1] for i in tie.tolist())


def read_training(sequences, min_count: int, lowercase: bool):
    """``(sequences as a list, SymbolTable, Encoded, tokens per symbol id)``: the checks of
    :func:`check_sequences` and the table and encoding of ``SymbolTable.build`` + ``encode``
    in one pass over the tokens when every sequence is a list of strings (else the checks
    raise their one-line errors)."""
    if isinstance(sequences, (str, bytes)):
        check_sequences(sequences, "sequences")
    seqs = sequences if type(sequences) is list else None
    if seqs is not None and set(map(type, seqs)) <= {list}:
        try:
            return (seqs,) + build_and_encode(seqs, min_count, lowercase, return_counts=True)
        except (TypeError, AttributeError):
            pass                                    # a non-string token: named below
    seqs = check_sequences(sequences, "sequences")
    table = SymbolTable.build(seqs, min_count, None, lowercase)
    full = encode(seqs, table)
    return seqs, table, full, np.bincount(full.ids, minlength=len(table))


def reencode(enc: Encoded, table: SymbolTable, what: str = "sequences") -> Encoded:
    """An input encoding (:meth:`Encoded.check` passed) re-indexed by ``table``: every symbol
    of ``enc`` looked up as :func:`encode` looks up a token (unknown: 0); one gather."""
    src = enc.symbols
    if src.lowercase and not table.lowercase:
        raise ValueError(f"{what} were encoded lower-cased; the model is case-sensitive "
                         "(encode them with lowercase=False)")
    if src.symbols == table.symbols and src.lowercase == table.lowercase:
        return Encoded(enc.offsets, np.ascontiguousarray(enc.ids, dtype=np.int64))
    get = table.index.get
    keys = map(str.lower, src.symbols) if table.lowercase and not src.lowercase else \
        src.symbols
    remap = np.fromiter((get(k, 0) for k in keys), dtype=np.int64, count=len(src.symbols))
    return Encoded(np.asarray(enc.offsets, dtype=np.int64), remap[enc.ids])


def frame_ids(enc: Encoded, ids: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The sequences of ``enc`` with token values ``ids`` (aligned with ``enc.ids``), each
    framed as ``start x_1 .. x_T stop``, concatenated."""
    n = enc.n_sequences
    total = len(ids) + 2 * n
    F = np.empty(total, dtype=np.int64)
    fs = enc.offsets[:-1] + 2 * np.arange(n)
    F[fs] = start
    F[fs + enc.lengths + 1] = stop
    body = np.ones(total, dtype=bool)
    body[fs] = False
    body[fs + enc.lengths + 1] = False
    F[body] = ids
    return F


def build_and_encode(sequences, min_count: int = 1, lowercase: bool = False,
                     return_counts: bool = False):
    """``(SymbolTable.build(sequences, min_count, None, lowercase), encode(sequences, table))``
    (and, with ``return_counts``, the number of tokens of every symbol id) with the tokens
    hashed in C loops only: a ``set`` collects the distinct strings (their order does not
    matter: the final ids are sorted), ``operator.itemgetter(*tokens)`` looks every token up
    (no Python call per token) and ``bytes`` (at most 256 distinct strings) or
    ``np.fromiter`` packs the ids; the counts
    are a ``bincount`` of those ids and the final ids (most frequent first, ties in string
    order, rarer than ``min_count`` and reserved strings -> ``<unk>``) one gather."""
    lens = np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))
    off = np.zeros(len(sequences) + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    flat = list(chain.from_iterable(sequences))
    if lowercase:
        flat = list(map(str.lower, flat))
    keys = list(set(flat))                          # the distinct strings (any order)
    if not all(type(k) is str for k in keys):       # one check per distinct token
        raise TypeError("a token is not a string")
    index = dict(zip(keys, range(len(keys))))
    if len(flat) >= 2:
        looked = itemgetter(*flat)(index)
        if len(keys) <= 256:
            ids0 = np.frombuffer(bytes(looked), dtype=np.uint8)     # gathered below
        else:
            ids0 = np.fromiter(looked, dtype=np.int64, count=len(flat))
    else:
        ids0 = np.zeros(len(flat), dtype=np.int64)
    counts = np.bincount(ids0, minlength=len(keys))
    cand = [i for i in range(len(keys)) if counts[i] >= min_count and keys[i] not in _RESERVED]
    cand.sort(key=lambda i: (-counts[i], keys[i]))
    table = SymbolTable([UNK] + [keys[i] for i in cand], bool(lowercase))
    remap = np.zeros(len(keys), dtype=np.int64)
    cand_ids = np.asarray(cand, dtype=np.int64)
    remap[cand_ids] = np.arange(1, len(cand) + 1)
    enc = Encoded(off, remap[ids0])
    if not return_counts:
        return table, enc
    sym_counts = np.zeros(len(table), dtype=np.int64)
    sym_counts[1:] = counts[cand_ids]
    sym_counts[0] = len(flat) - int(sym_counts[1:].sum())
    return table, enc, sym_counts


def encode(sequences, table: SymbolTable) -> Encoded:
    """Flat ``(offsets, ids)`` of ``sequences`` (lists of strings) under ``table``."""
    lens = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
    off = np.zeros(len(sequences) + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    if len(sequences) == 0 or off[-1] == 0:
        return Encoded(off, np.zeros(0, dtype=np.int64))
    flat = chain.from_iterable(sequences)
    if table.lowercase:
        flat = map(str.lower, flat)
    # dict.get mapped over the flat tokens: no Python-level loop body per token
    ids = np.fromiter(map(table.index.get, flat, repeat(0)), dtype=np.int64,
                      count=int(off[-1]))
    return Encoded(off, ids)
