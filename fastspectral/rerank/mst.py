"""``MSTParser``: arc-factored (first-order) or sibling (second-order) discriminative dependency
parser (McDonald et al. 2005; McDonald & Pereira 2006).

Arc scores are ``w . f(h -> m)`` over the hashed MSTParser features of
:mod:`fastspectral.rerank.features`; trees are decoded with the compiled first-order Eisner
algorithm (:func:`fastspectral.dependency.eisner.eisner_packed`) and, for re-ranking, with the
compiled lazy k-best Eisner (:func:`fastspectral.rerank.kbest.kbest_packed`).  Training is the
averaged perceptron (Collins 2002) in mini-batches: each batch is scored and decoded in
parallel with the weights of the batch's start, then updated (the mini-batch perceptron of
Zhao & Huang 2013; ``minibatch=1`` is Collins's online perceptron).  With ``order=2`` the
model adds sibling parts (McDonald & Pereira 2006), scored by
:func:`~fastspectral.rerank.features.sibling_scores` and decoded with the compiled
second-order Eisner (:func:`fastspectral.dependency.eisner.eisner2_packed`).
"""
from __future__ import annotations

import copy
import dataclasses
import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from ..base import Interval, Parser
from ..dependency.data import TAGSETS
from ..errors import ModelFileError
from .._threads import numba_threads
from .features import (FIRST_ID, ROOT_ID, UNK_ID, arc_scores, perceptron_update,
                       sibling_scores, sibling_update)

__all__ = ["MSTParser", "MSTFitInfo", "MSTParseStats", "Encoded", "copy_with_heads", "numba_threads"]


@dataclass
class Encoded:
    """Token ids of a batch of sentences, each with the root at its position 0.

    ``W, P, F`` (int64): word, tag and 5-prefix ids; sentence ``b`` (``lengths[b]`` words)
    occupies ``tok_off[b] .. tok_off[b] + lengths[b]`` (its root first).  ``pair_off[b]``:
    offset of its ``(n+1)^2`` arc-score block.
    """

    W: np.ndarray
    P: np.ndarray
    F: np.ndarray
    tok_off: np.ndarray
    lengths: np.ndarray
    pair_off: np.ndarray

    def subset(self, idx) -> "Encoded":
        """The sentences ``idx`` (in that order), re-packed."""
        idx = np.asarray(idx, dtype=np.int64)
        lengths = self.lengths[idx]
        starts = self.tok_off[idx]
        sel = _ranges(starts, lengths.astype(np.int64) + 1)
        return _packed(self.W[sel], self.P[sel], self.F[sel], lengths)


@dataclass
class MSTParseStats:
    """What the last :meth:`MSTParser.parse` did (``last_parse_stats_``): ``sentences``
    parsed, ``too_long`` of them over the memory budget of second-order decoding (decoded
    first-order instead)."""

    sentences: int = 0
    too_long: int = 0


@dataclass
class MSTFitInfo:
    """Training details of :meth:`MSTParser.fit` (``fit_info_``): training sentences and the
    wrong heads of each epoch (before that batch's update)."""

    n_sentences: int = 0
    errors: list = field(default_factory=list)


def _ranges(starts, sizes) -> np.ndarray:
    """Concatenated ``arange(starts[i], starts[i] + sizes[i])`` (vectorised)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    off = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=off[1:])
    return np.repeat(np.asarray(starts, dtype=np.int64) - off, sizes) + np.arange(total)


def _packed(W, P, F, lengths) -> Encoded:
    lengths = np.ascontiguousarray(lengths, dtype=np.int32)
    n1 = lengths.astype(np.int64) + 1
    tok_off = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(n1, out=tok_off[1:])
    pair_off = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(n1 * n1, out=pair_off[1:])
    return Encoded(np.ascontiguousarray(W, np.int64), np.ascontiguousarray(P, np.int64),
                   np.ascontiguousarray(F, np.int64), tok_off, lengths, pair_off)


def _lookup(index: dict, items: list) -> np.ndarray:
    """Ids of ``items`` under ``index`` (string -> ``FIRST_ID + position`` in the sorted
    vocabulary; unknown: ``UNK_ID``).  Strings stay Python objects: a fixed-width unicode
    array would cost the longest token times the number of tokens."""
    get = index.get
    return np.fromiter((get(x, UNK_ID) for x in items), dtype=np.int64, count=len(items))


def _vocabulary(items) -> np.ndarray:
    """The sorted distinct strings of ``items`` (an object array: memory independent of the
    longest string)."""
    return _object_array(sorted(set(items)))


def _object_array(items: list) -> np.ndarray:
    """``items`` (strings) as a 1-d object array."""
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _prefixes(words: list) -> list:
    """The 5-character prefixes of ``words``."""
    return [w[:5] for w in words]


def copy_with_heads(s, heads):
    """A copy of sentence ``s`` with ``heads`` (relations set to ``"_"`` where it has them)."""
    hl = [int(x) for x in heads]
    if dataclasses.is_dataclass(s):
        names = {f.name for f in dataclasses.fields(s)}
        kw = {"heads": hl}
        if "rels" in names:
            kw["rels"] = ["_"] * len(hl)
        return dataclasses.replace(s, **kw)
    c = copy.copy(s)
    c.heads = hl
    return c



class HeadsParser(Parser):
    """A dependency :class:`~fastspectral.base.Parser` whose ``parse`` copies each sentence
    with the heads of ``predict_heads`` (shared by ``MSTParser`` and ``RerankDepParser``)."""

    def parse(self, items, *, tags=None, jobs=None, progress=None) -> list:
        """Parse dependency sentences; returns copies with ``heads`` filled (``rels`` "_").

        Parameters
        ----------
        items : list of DepSentence
            Sentences with words and POS tags (their heads are ignored).
        tags : list of lists of str, optional
            POS tags to parse with instead of the sentences' own (one list per sentence).
        jobs : int, optional
            Threads (None: the model's ``jobs``, else every core available).
        progress : callable, optional
            ``progress(done, total)`` as sentences finish.
        """
        items = list(items)
        heads = self.predict_heads(items, tags=tags, jobs=jobs, progress=progress)
        return [copy_with_heads(s, h) for s, h in zip(items, heads)]


class MSTParser(HeadsParser):
    """Arc-factored (first-order) or sibling (second-order) dependency parser trained with
    the averaged perceptron.

    Parameters
    ----------
    iterations : int, default 10
        Passes of the perceptron over the training data.
    minibatch : int, default 8
        Sentences decoded in parallel with the same weights before each update (1: the online
        perceptron).
    bits : int, default 22
        The features are hashed into ``2**bits`` weights (16..28).
    tag_column : {"auto", "upos", "xpos"}, default "auto"
        The POS column (as :class:`~fastspectral.dependency.SHAGParser`): UPOS for Universal
        Dependencies treebanks, else the fine tags.
    single_root : bool or None, default None
        Trees with exactly one root child; None: learnt from the training data.
    random_state : int or None, default 0
        Seed of the order in which each epoch visits the training sentences.
    jobs : int or None, default None
        Threads of parsing and of the training batches (None: every core available).
    order : {1, 2}, default 1
        1: first-order arc-factored model (McDonald et al. 2005); 2: arcs plus sibling parts
        ``(h, s, m)`` (consecutive modifiers of ``h`` on one side; McDonald & Pereira 2006),
        decoded with the second-order projective Eisner algorithm (``O(n^3)`` time, an
        ``(n+1)^3`` sibling-score block per sentence: 8.2 MB for 100 words); :meth:`kbest`
        then gives the second-order model's own k best.

    Attributes
    ----------
    weights_ : ndarray of float64
        The averaged feature weights (``2**bits``).
    words_, tags_, prefixes_ : ndarray of object (str)
        The sorted vocabularies of the training words, tags and 5-character prefixes.
    tag_column_ : str
        The tag column used.
    single_root_ : bool
        Whether parses have exactly one root child.
    fit_time_ : float
        Seconds of the last :meth:`fit`.
    fit_info_ : MSTFitInfo
        Training sentences and wrong heads per epoch.

    References
    ----------
    R. McDonald, K. Crammer and F. Pereira, "Online large-margin training of dependency
    parsers", ACL 2005 (the first-order model and its features, table 1).  R. McDonald and
    F. Pereira, "Online learning of approximate dependency parsing algorithms", EACL 2006
    (the second-order sibling model, ``order=2``).  M. Collins,
    "Discriminative training methods for hidden Markov models", EMNLP 2002 (the averaged
    perceptron).  J. Eisner, COLING 1996 (decoding).  L. Huang and D. Chiang, "Better k-best
    parsing", IWPT 2005 (:meth:`kbest`).

    Examples
    --------
    >>> from fastspectral.rerank import MSTParser
    >>> from fastspectral.trees.conll import DepSentence, toy_treebank
    >>> train = toy_treebank()
    >>> parser = MSTParser(iterations=5, bits=16).fit(train)
    >>> parser.parse([DepSentence.from_tagged("a/DT big/JJ cat/NN barks/VBZ")])[0].heads
    [3, 3, 4, 0]
    """

    kind = "mst"
    input_kind = "dependency"
    #: names of model files written by older versions
    _renamed_params = {"epochs": "iterations", "tagset": "tag_column"}
    _parameter_constraints = {
        "iterations": Interval(int, 1), "minibatch": Interval(int, 1),
        "bits": Interval(int, 16, 28, closed="both"), "tag_column": set(TAGSETS),
        "single_root": {None, True, False}, "random_state": Interval(int, 0, allow_none=True),
        "jobs": Interval(int, 1, allow_none=True), "order": {1, 2}}

    def __init__(self, iterations: int = 10, minibatch: int = 8, bits: int = 22,
                 tag_column: str = "auto", single_root: bool | None = None,
                 random_state: int | None = 0, jobs: int | None = None, order: int = 1):
        self.iterations = iterations
        self.minibatch = minibatch
        self.bits = bits
        self.tag_column = tag_column
        self.single_root = single_root
        self.random_state = random_state
        self.jobs = jobs
        self.order = order

    # ------------------------------------------------------------------ helpers
    def _view(self, sents, tags=None, need_heads=False) -> list:
        """``sents`` seen through the model's tag column (or the given ``tags``), checked."""
        from ..dependency.data import tag_view

        return tag_view(sents, self.tag_column_, tags, need_heads=need_heads)

    def _encode_view(self, view) -> Encoded:
        """Token ids of sentences already seen through the tag column (vectorised)."""
        lengths = np.fromiter((len(s.words) for s in view), dtype=np.int32, count=len(view))
        words = list(itertools.chain.from_iterable(s.words for s in view))
        tags = list(itertools.chain.from_iterable(s.tags for s in view))
        n_tok = int(lengths.sum()) + len(lengths)
        is_root = np.zeros(n_tok, dtype=bool)
        if len(lengths):
            starts = np.zeros(len(lengths), dtype=np.int64)
            np.cumsum(lengths[:-1].astype(np.int64) + 1, out=starts[1:])
            is_root[starts] = True
        out = []
        for name, items in (("words_", words), ("tags_", tags), ("prefixes_", _prefixes(words))):
            a = np.full(n_tok, ROOT_ID, dtype=np.int64)
            a[~is_root] = _lookup(self._index(name), items)
            out.append(a)
        return _packed(out[0], out[1], out[2], lengths)

    def _index(self, name: str) -> dict:
        """string -> id of the vocabulary ``name`` (built once per vocabulary array)."""
        vocab = getattr(self, name)
        cache = self.__dict__.setdefault("_vocab_index", {})
        got = cache.get(name)
        if got is None or got[0] is not vocab:
            got = (vocab, {w: i + FIRST_ID for i, w in enumerate(vocab.tolist())})
            cache[name] = got
        return got[1]

    def encode(self, sents, tags=None) -> Encoded:
        """The fitted parser's token ids of ``sents`` (heads not needed)."""
        self._check_fitted()
        return self._encode_view(self._view(list(sents), tags))

    def arc_scores(self, enc: Encoded, jobs=None) -> np.ndarray:
        """The packed ``(n+1)^2`` arc-score blocks of ``enc`` (layout of ``enc.pair_off``)."""
        out = np.empty(int(enc.pair_off[-1]), dtype=np.float64)
        with numba_threads(self._threads(jobs)):
            arc_scores(self.weights_, enc.W, enc.P, enc.F, enc.tok_off, enc.lengths,
                       enc.pair_off, out)
        return out

    def sibling_scores(self, enc: Encoded, jobs=None):
        """The packed ``(n+1)^3`` sibling-score blocks of ``enc`` and their offsets
        (``order=2``; layout of :func:`~fastspectral.dependency.eisner.eisner2_packed`)."""
        n1 = enc.lengths.astype(np.int64) + 1
        trip_off = np.zeros(len(n1) + 1, dtype=np.int64)
        np.cumsum(n1 ** 3, out=trip_off[1:])
        out = np.empty(int(trip_off[-1]), dtype=np.float64)
        with numba_threads(self._threads(jobs)):
            sibling_scores(self.weights_, enc.W, enc.P, enc.F, enc.tok_off, enc.lengths,
                           trip_off, out)
        return out, trip_off

    def _decode(self, enc: Encoded, threads: int, order: int | None = None, over=None):
        """Best trees of a batch under the model (first- or second-order decoder; ``order=1``
        decodes a second-order model's arc scores alone; ``over``: a mask of the sentences
        of a second-order batch decoded first-order)."""
        from ..dependency.eisner import PackedHeads, eisner2_packed, eisner_packed

        if over is not None and over.any():
            parts = [(np.flatnonzero(~over), None), (np.flatnonzero(over), 1)]
            res = [(ids, self._decode(enc.subset(ids), threads, o)) for ids, o in parts
                   if len(ids)]
            heads = [None] * len(over)
            best = np.empty(len(over))
            for ids, r in res:
                best[ids] = r.best
                for k, h in zip(ids, np.split(r.heads, r.head_off[1:-1])):
                    heads[k] = h
            head_off = np.zeros(len(over) + 1, dtype=np.int64)
            np.cumsum(enc.lengths, out=head_off[1:])
            return PackedHeads(np.concatenate(heads).astype(np.int32), head_off, best)
        arcs = self.arc_scores(enc, threads)
        if int(self.order if order is None else order) == 1:
            return eisner_packed(arcs, enc.pair_off, enc.lengths, self.single_root_, threads)
        sibs, trip_off = self.sibling_scores(enc, threads)
        return eisner2_packed(arcs, enc.pair_off, sibs, trip_off, enc.lengths,
                              self.single_root_, threads)

    def _threads(self, jobs) -> int:
        from ..base import check_jobs
        return check_jobs(jobs if jobs is not None else self.jobs)

    # ------------------------------------------------------------------ training
    def fit(self, X) -> "MSTParser":
        """Learn the weights from dependency sentences (``words``, tags, ``heads``); returns
        self."""
        from ..base import check_dep_sentences
        from ..dependency.data import choose_tagset

        self._validate_params()
        X = check_dep_sentences(X, "sentences")
        if not X:
            raise ValueError("cannot fit an MSTParser on an empty treebank")
        t0 = time.perf_counter()
        self.tag_column_ = choose_tagset(X) if self.tag_column == "auto" else self.tag_column
        view = self._view(X, need_heads=True)
        words = list(itertools.chain.from_iterable(s.words for s in view))
        self.words_ = _vocabulary(words)
        self.tags_ = _vocabulary(itertools.chain.from_iterable(s.tags for s in view))
        self.prefixes_ = _vocabulary(_prefixes(words))
        if self.single_root is None:
            self.single_root_ = all(sum(1 for h in s.heads if h == 0) == 1 for s in view)
        else:
            self.single_root_ = bool(self.single_root)
        enc = self._encode_view(view)
        gold = np.array(list(itertools.chain.from_iterable(s.heads for s in view)),
                        dtype=np.int32)
        head_off = np.zeros(len(view) + 1, dtype=np.int64)
        np.cumsum(enc.lengths, out=head_off[1:])
        size = 1 << int(self.bits)
        w = np.zeros(size)
        u = np.zeros(size)
        rng = np.random.default_rng(self.random_state)
        threads = self._threads(None)
        B = int(self.minibatch)
        second = int(self.order) == 2
        first_only = self._first_order_ids(enc, [s.words for s in view], "in training")
        c = 1.0
        info = MSTFitInfo(n_sentences=len(view))
        self.weights_ = w
        for _ in range(int(self.iterations)):
            order = rng.permutation(len(view))
            wrong = 0
            for a in range(0, len(order), B):
                idx = order[a:a + B]
                sub = enc.subset(idx)
                pred = self._decode(sub, threads, over=np.isin(idx, first_only))
                g = gold[_ranges(head_off[idx], enc.lengths[idx])]
                wrong += perceptron_update(w, u, c, sub.W, sub.P, sub.F, sub.tok_off,
                                           sub.lengths, g, pred.heads, pred.head_off, 1.0)
                if second:
                    sibling_update(w, u, c, sub.W, sub.P, sub.F, sub.tok_off, sub.lengths,
                                   g, pred.heads, pred.head_off, 1.0)
                c += 1.0
            info.errors.append(int(wrong))
        self.weights_ = w - u / c
        self.fit_time_ = time.perf_counter() - t0
        self.fit_info_ = info
        return self

    # ------------------------------------------------------------------ parsing
    def _batches(self, enc: Encoded, max_pairs: int = 1 << 22, power: int = 2):
        """Index arrays of consecutive sentences with at most ``max_pairs`` scores of
        ``(n+1)**power`` per sentence (a longer sentence goes alone)."""
        sizes = (enc.lengths.astype(np.int64) + 1) ** int(power)
        a = 0
        n = len(sizes)
        cum = np.concatenate([[0], np.cumsum(sizes)])
        while a < n:
            b = int(np.searchsorted(cum, cum[a] + max_pairs, side="right")) - 1
            b = max(b, a + 1)
            yield np.arange(a, min(b, n))
            a = b

    def _order_batches(self, enc: Encoded, over):
        """``(ids, sub-batch, order)`` of the batches a parse of ``enc`` decodes: at the
        model's order, and the sentences ``over`` (a second-order model's sentences decoded
        first-order, :meth:`_first_order_ids`) at order 1; a second-order batch holds at
        most 2**23 sibling scores (64 MB)."""
        n = len(enc.lengths)
        runs = [(np.arange(n), int(self.order))]
        if len(over):
            runs = [(np.setdiff1d(np.arange(n), over), 2), (np.asarray(over), 1)]
        for ids, order in runs:
            if len(ids) == 0:
                continue
            part = enc.subset(ids)
            batches = (self._batches(part) if order == 1
                       else self._batches(part, 1 << 23, 3))
            for idx in batches:
                yield ids[idx], part.subset(idx), order

    #: memory budget of a second-order parse (see :mod:`fastspectral._memory`): None for half
    #: the physical memory (or ``$FASTSPECTRAL_MAX_MEMORY``), bytes, a size such as ``"2G"``,
    #: 0 for no limit; an attribute, not a hyperparameter (it is not saved)
    max_memory = None

    def predict_heads(self, items, *, tags=None, jobs=None, progress=None) -> list:
        """Predicted heads (int32 arrays, 1-based, 0 = root) of each sentence.

        With ``order=2`` a sentence whose sibling scores and chart
        (:func:`fastspectral._memory.mst2_chart_bytes`: ``8 (n+1)^3`` bytes and more) would
        exceed the memory budget ``max_memory`` is decoded with the first-order Eisner
        algorithm over its arc scores; a warning names it and ``last_parse_stats_.too_long``
        counts it.
        """
        items = list(items)
        threads = self._check_parse_args(items, tags, jobs)
        enc = self._encode_view(self._view(items, tags))
        out: list = [None] * len(items)
        stats = MSTParseStats(sentences=len(items))
        over = self._first_order_ids(enc, [s.words for s in items])
        stats.too_long = len(over)
        done = 0
        for ids, sub, order in self._order_batches(enc, over):
            res = self._decode(sub, threads, order)
            for k, h in zip(ids, np.split(res.heads, res.head_off[1:-1])):
                out[int(k)] = h
            done += len(ids)
            if progress is not None:
                progress(done, len(items))
        self.last_parse_stats_ = stats
        return out

    def _first_order_ids(self, enc: Encoded, words, when: str = "",
                         kbest: bool = False) -> np.ndarray:
        """Ids of the sentences a second-order model decodes first-order: over the memory
        budget ``max_memory`` (:func:`fastspectral._memory.mst2_chart_bytes`; with
        ``kbest``, :func:`fastspectral._memory.kbest_chart_bytes` at order 2) or the
        second-order kernel's length limit; each warned once.  None for ``order=1``."""
        from .. import _memory
        from ..dependency.eisner import EISNER2_MAX_WORDS

        if int(self.order) != 2:
            return np.zeros(0, dtype=np.int64)
        budget = _memory.resolve_budget(self.max_memory)
        size = ((lambda n: _memory.kbest_chart_bytes(n, 2)) if kbest
                else _memory.mst2_chart_bytes)
        need = np.array([size(int(n)) for n in enc.lengths], dtype=np.float64)
        fallback = ("the first-order k best" if kbest else "the first-order decoding") + \
            " of its arc scores" + (f" {when}" if when else "")
        return _memory.over_limits(enc.lengths, need, budget, EISNER2_MAX_WORDS,
                                   "second-order", words, fallback)

    def kbest(self, items, k: int = 50, *, tags=None, jobs=None):
        """The ``k`` best trees of each sentence under the model
        (:class:`~fastspectral.rerank.kbest.KBest`, scores = the model's tree scores).

        With ``order=2`` they are the second-order model's own k best (arc + sibling parts,
        :func:`~fastspectral.rerank.kbest.kbest_packed` with sibling scores); a sentence
        over the memory budget ``max_memory`` (:func:`fastspectral._memory.
        kbest_chart_bytes` with ``order=2``) or the second-order length limit gets the k
        best of its arc scores alone, with a warning naming it."""
        items = list(items)
        threads = self._check_parse_args(items, tags, jobs)
        return self.kbest_encoded(self._encode_view(self._view(items, tags)), k, threads,
                                  words=[s.words for s in items])

    def kbest_encoded(self, enc: Encoded, k: int, jobs=None, words=None):
        """:meth:`kbest` of sentences already encoded (:meth:`encode`); ``words``: the
        sentences' words, for the warnings of a second-order model (None: named by their
        lengths)."""
        from .kbest import KBest, kbest_packed

        threads = self._threads(jobs)
        k = int(k)
        over = np.zeros(0, dtype=np.int64)
        if int(self.order) == 2:
            if words is None:
                words = [["<word>"] * int(n) for n in enc.lengths]
            over = self._first_order_ids(enc, words, "for its k-best list", kbest=True)
        parts = []
        for ids, sub, order in self._order_batches(enc, over):
            sib = self.sibling_scores(sub, threads) if order == 2 else (None, None)
            parts.append((ids, kbest_packed(self.arc_scores(sub, threads), sub.pair_off,
                                            sub.lengths, k, self.single_root_, threads, *sib)))
        if len(parts) == 1 and np.array_equal(parts[0][0], np.arange(len(enc.lengths))):
            return parts[0][1]
        lengths = enc.lengths
        head_off = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths.astype(np.int64) * k, out=head_off[1:])
        heads = np.full(int(head_off[-1]), -1, dtype=np.int32)
        scores = np.full((len(lengths), k), -np.inf)
        count = np.zeros(len(lengths), dtype=np.int32)
        for ids, res in parts:
            scores[ids] = res.scores
            count[ids] = res.count
            heads[_ranges(head_off[ids], lengths[ids].astype(np.int64) * k)] = res.heads
        return KBest(heads, head_off, scores, count, lengths, k)

    # ------------------------------------------------------------------ model files
    def _model_file(self):
        nz = np.flatnonzero(self.weights_)
        meta = {"params": self.get_params(), "tagset_": self.tag_column_,
                "single_root_": bool(self.single_root_), "words": self.words_.tolist(),
                "tags": self.tags_.tolist(), "prefixes": self.prefixes_.tolist(),
                "fit_time": self.fit_time_, "n_sentences": self.fit_info_.n_sentences,
                "errors": list(self.fit_info_.errors)}
        return meta, {"weight_index": nz.astype(np.int64), "weight_value": self.weights_[nz]}

    @classmethod
    def _from_model_file(cls, meta: dict, arrays: dict) -> "MSTParser":
        from ..dependency.data import TAGSETS
        from ..io import validate as V

        try:
            p = V.from_params(cls, meta)
            p.tag_column_ = meta["tagset_"]
            if p.tag_column_ not in TAGSETS[1:]:
                raise ValueError(f"unknown tagset {p.tag_column_!r}")
            p.single_root_ = bool(meta["single_root_"])
            for name in ("words", "tags", "prefixes"):
                vocab = _object_array(V.meta_list(meta, name, str))
                if len(vocab) > 1 and not (vocab[1:] > vocab[:-1]).all():
                    raise ModelFileError(f"meta {name!r}: not sorted")
                setattr(p, name + "_", vocab)
            size = 1 << int(p.bits)
            idx = V.get(arrays, "weight_index", "int", dtype=np.int64)
            val = V.get(arrays, "weight_value", "float", dtype=np.float64)
            V.check_len(val, "weight_value", len(idx))
            V.check_index(idx, "weight_index", 0, size)
            V.check_magnitude(val, "weight_value")
            w = np.zeros(size)
            w[idx] = val
            p.weights_ = w
            p.fit_time_ = float(meta.get("fit_time", 0.0))
            p.fit_info_ = MSTFitInfo(int(meta.get("n_sentences", 0)),
                                     [int(x) for x in meta.get("errors", [])])
        except ModelFileError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelFileError(f"corrupt mst model file ({exc!r})") from None
        return p
