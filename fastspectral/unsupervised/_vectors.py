"""The additive-tree-metric parser's statistics as mergeable sums (the statistics protocol of
:mod:`fastspectral.base`; docs/scale.md), and its observed vectors.

Three passes, each a sum over sentences, so that a partitioned corpus gives the model ``fit``
gives on the whole corpus:

1. counts of words, of the (universal) tags of the non-punctuation words and of (word, tag)
   pairs: the vocabulary of the observed vectors, the tag inventory (first-seen order) and
   the lexicon;
2. the co-occurrence counts the vectors are learned from (eigenwords: word x context-word
   counts, Dhillon et al. 2011; Brown clusters: word bigram counts, Brown et al. 1992), and
   the word pairs per anchor ``(tag_j, tag_k, k - j)``; the SVD (or the clustering) runs once,
   on the merged counts;
3. per anchor the sums ``sum x_j x_k^T`` (and the first moments), per tag ``sum x_j x_j^T``:
   the kernel-smoothed covariances and the spectral distances (Parikh, Cohen & Xing 2014,
   section 3.4 and eq. 5) are computed from the merged sums.

With ``embeddings`` given (a file or a fitted object) the vectors are not learned and pass 2
counts only the anchors.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from ..base import Statistics
from ..embeddings.eigenwords import eigenword_cooccurrence, eigenword_vocabulary
from .common import strip_punctuation

#: word pairs farther apart than this share the anchor of this distance
MAX_DISTANCE = 60

__all__ = ["ATMStatistics", "atm_statistics", "atm_fit_statistics", "load_vectors",
           "eigenword_vocabulary", "eigenword_cooccurrence", "eigenwords_from_cooccurrence"]

VECTORS = ("eigenwords", "brown")


class ATMStatistics(Statistics):
    """One pass's statistics of :class:`~fastspectral.unsupervised.ATMParser` (fields by
    pass: see the module docstring); ``pass_`` and ``settings`` must agree to merge."""

    _same = ("pass_", "settings")

    def __init__(self, pass_, settings, **fields):
        self.pass_ = pass_
        self.settings = settings
        for k, v in fields.items():
            setattr(self, k, v)


def _settings(model):
    p = model.get_params()
    emb = p["embeddings"]
    p["embeddings"] = emb if emb is None or isinstance(emb, str) else id(emb)
    return tuple(sorted((k, repr(v)) for k, v in p.items()))


# ------------------------------------------------------------------------- eigenword pieces
def eigenwords_from_cooccurrence(Q, words, counts, dim, random_state=0, normalize=True):
    """The fitted :class:`~fastspectral.embeddings.Eigenwords` (``window=2``, ``min_count=1``)
    of merged co-occurrence counts: the SVD of the CCA-whitened counts, once."""
    from ..embeddings.eigenwords import Eigenwords, _embed

    ew = Eigenwords(dim=int(dim), window=2, min_count=1, random_state=random_state)
    _embed(ew, Q, words, counts, dim, random_state, normalize)
    ew.fit_time_ = 0.0
    return ew


def load_vectors(source):
    """Observed vectors: a fitted :class:`~fastspectral.embeddings.Eigenwords` or
    :class:`~fastspectral.embeddings.brown_clusters.BrownClusters`, or the model file of
    one."""
    from ..embeddings.brown_clusters import BrownClusters
    from ..embeddings.eigenwords import Eigenwords

    if isinstance(source, (Eigenwords, BrownClusters)):
        source._check_fitted()
        return source
    if not isinstance(source, (str, bytes)) and not hasattr(source, "__fspath__"):
        raise TypeError("embeddings must be a path, an Eigenwords or a BrownClusters, got "
                        f"{type(source).__name__}")
    from ..io.modelfile import load_model_file

    kind, _, _ = load_model_file(source)
    return (BrownClusters if kind == BrownClusters.kind else Eigenwords).load(source)


# ------------------------------------------------------------------------------- the passes
def _encode(sents, mapped, tindex, vectors):
    """Offsets, tag ids and vector ids of the non-punctuation words."""
    offsets, tag_ids, vec_ids = [0], [], []
    for (words, tags), utags in zip(sents, mapped):
        keep = strip_punctuation(tags)
        tag_ids.extend(tindex[utags[i]] for i in keep)
        if vectors is not None:
            vec_ids.extend(vectors.ids([words[i] for i in keep]).tolist())
        offsets.append(len(tag_ids))
    return (np.asarray(offsets, np.int64), np.asarray(tag_ids, np.int64),
            np.asarray(vec_ids, np.int64))


def atm_statistics(model, sents, mapped, cache, context):
    """One partition's :class:`ATMStatistics` for the pass of ``context``."""
    from ._atm_kernels import anchor_sums, count_anchor_pairs

    settings = _settings(model)
    if context is None:                                          # pass 1: counts
        words: Counter = Counter()
        if model.embeddings is None:
            for w, _ in sents:
                words.update(x.lower() for x in w)
        tags: Counter = Counter()
        lex: Counter = Counter()
        for (w, t), u in zip(sents, mapped):
            for i in strip_punctuation(t):
                tags[u[i]] += 1
            lex.update(zip(w, u))
        return ATMStatistics(1, settings, words=words, tags=tags, lex=lex, n=len(sents))
    tindex = {t: i for i, t in enumerate(context["tags"])}
    T = len(tindex)
    if context["pass"] == 2:                                     # pass 2: co-occurrences
        offsets, tag_ids, _ = _encode(sents, mapped, tindex, None)
        N, Nd = count_anchor_pairs(offsets, tag_ids, T, MAX_DISTANCE)
        co = None
        if context.get("vocab") is not None:
            low = [[x.lower() for x in w] for w, _ in sents]
            if model.vectors == "brown":
                from ..embeddings.brown_clusters import bigram_counts
                co = bigram_counts(low, {w: i for i, w in enumerate(context["vocab"])}, False)
            else:
                co = eigenword_cooccurrence(low, context["vocab"], context["ctx_vocab"], 2)
        return ATMStatistics(2, settings, N=N, Nd=Nd, co=co)
    # pass 3: sums per anchor
    vectors = context["vectors"]
    offsets, tag_ids, vec_ids = _encode(sents, mapped, tindex, vectors)
    vecs = np.ascontiguousarray(vectors.embeddings_, dtype=np.float64)
    S, A, B, Sd, Ad = anchor_sums(offsets, tag_ids, vec_ids, vecs, context["slot"],
                                  MAX_DISTANCE, context["n_slots"], T)
    return ATMStatistics(3, settings, S=S, A=A, B=B, Sd=Sd, Ad=Ad)


def atm_fit_statistics(model, stats, context):
    """The estimate of merged statistics: the next pass's context, or None (fitted)."""
    if not isinstance(stats, ATMStatistics):
        raise TypeError(f"expected ATMStatistics, got {type(stats).__name__}")
    if stats.settings != _settings(model):
        raise ValueError("these statistics were computed with other ATM settings")
    want = 1 if context is None else context["pass"]
    if stats.pass_ != want:
        raise ValueError(f"statistics of pass {stats.pass_} given for pass {want}")
    if stats.pass_ == 1:
        if stats.n == 0:
            raise ValueError("no sentences to learn from")
        tagnames = list(stats.tags)
        if not tagnames:
            raise ValueError("no words left after removing punctuation")
        lex: dict = {}
        for (w, t), c in stats.lex.items():
            lex.setdefault(w, {})[t] = c
        model.lexicon_words_ = list(lex)
        model.lexicon_tags_ = [max(v.items(), key=lambda kv: (kv[1], kv[0]))[0]
                               for v in lex.values()]
        model.n_sentences_ = int(stats.n)
        model.tags_ = tagnames
        ctx = {"pass": 2, "tags": tagnames, "vocab": None}
        if model.embeddings is None:
            if not stats.words:
                raise ValueError("no words to learn the vectors from")
            if model.vectors == "brown":
                from ..embeddings.brown_clusters import brown_vocabulary
                ctx["vocab"] = brown_vocabulary(stats.words, 2)
            else:
                ctx["vocab"], ctx["ctx_vocab"] = eigenword_vocabulary(stats.words)
            ctx["word_counts"] = stats.words
        return ctx
    if stats.pass_ == 2:
        if context["vocab"] is None:
            vectors = load_vectors(model.embeddings)
        elif model.vectors == "brown":
            from ..embeddings.brown_clusters import BrownClusters
            bits = int(model.embedding_dim) if model.brown_features == "bits" else None
            vectors = BrownClusters(n_clusters=int(model.brown_clusters), min_count=1, dim=bits,
                                    features=model.brown_features).fit_counts(
                context["vocab"], stats.co)
        else:
            vectors = eigenwords_from_cooccurrence(stats.co, context["vocab"],
                                                   context["word_counts"],
                                                   int(model.embedding_dim),
                                                   model.random_state)
        N = stats.N
        slot = np.full(N.shape, -1, np.int64)
        occ = N > 0
        slot[occ] = np.arange(int(occ.sum()))
        return {"pass": 3, "tags": context["tags"], "vectors": vectors, "slot": slot,
                "n_slots": int(occ.sum()), "N": N, "Nd": stats.Nd}
    # pass 3
    from .._blas import blas_single_thread

    with blas_single_thread():      # many small products: threads only add overhead
        model.distances_ = model._distances(context["N"], context["Nd"], context["slot"],
                                            stats.S, stats.A, stats.B, stats.Sd, stats.Ad)
    model.anchor_counts_ = context["N"]
    if not hasattr(model, "fit_time_"):
        model.fit_time_ = 0.0
    return None
