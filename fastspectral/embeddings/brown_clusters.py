"""Brown clusters: class-based bigram clustering (Brown et al. 1992) and their bit vectors.

The exchange-free greedy merge algorithm with a window of ``n_clusters`` active clusters (Liang
2005): words are taken by decreasing frequency; each new word enters as its own cluster and the
pair of active clusters whose merge loses the least average mutual information (AMI) of the
class bigram model is merged, so ``n_clusters`` clusters remain once every word is in.  Those
are then merged down to one, and the merge tree gives every cluster (and its words) a bit
string (0 = left, 1 = right from the root).  The merge losses are kept for every active pair and
updated in ``O(n_clusters^2)`` per merge (compiled with Numba), so learning costs
``O(V n_clusters^2)`` for ``V`` words.

The statistics are sums (word counts, then the bigram counts over the vocabulary), so they
can be computed per partition and merged (:func:`word_counts`, :func:`bigram_counts`); the
clustering runs once on the merged counts (:meth:`BrownClusters.fit_counts`).
"""
from __future__ import annotations

import time
from collections import Counter

import numpy as np
import scipy.sparse as sp
from .._jit import njit

from ..base import Estimator, Interval
from .eigenwords import WordIds, sentences_of

__all__ = ["BrownClusters", "word_counts", "bigram_counts", "brown_vocabulary"]

UNK = "<unk>"


def word_counts(sentences, lowercase=True) -> Counter:
    """Word counts of ``sentences`` (lists of words; a mergeable statistic)."""
    c: Counter = Counter()
    for s in sentences:
        c.update(w.lower() for w in s) if lowercase else c.update(s)
    return c


def brown_vocabulary(counts, min_count=2, vocabulary=None) -> list:
    """``[<unk>] + `` the clustered words: count >= ``min_count``, most frequent first (ties by
    the word), at most ``vocabulary``."""
    ranked = [w for w, c in sorted(counts.items(), key=lambda x: (-x[1], x[0]))
              if c >= min_count]
    if vocabulary is not None:
        ranked = ranked[:vocabulary]
    return [UNK] + ranked


def bigram_counts(sentences, index, lowercase=True) -> sp.csr_matrix:
    """Counts of adjacent word pairs within sentences over the vocabulary ``index`` (word ->
    id, 0 = ``<unk>``): a sparse ``(V, V)`` matrix (a mergeable statistic)."""
    V = len(index)
    left, right = [], []
    for s in sentences:
        ids = [index.get(w.lower() if lowercase else w, 0) for w in s]
        left.extend(ids[:-1])
        right.extend(ids[1:])
    M = sp.csr_matrix((np.ones(len(left)), (np.asarray(left, np.int64),
                                             np.asarray(right, np.int64))), shape=(V, V))
    M.sum_duplicates()
    return M


# ------------------------------------------------------------------------------ compiled core
@njit(cache=True, inline="always")
def _q(n, nl, nr, total):  # pragma: no cover - numba
    """One term of the average mutual information: p(c, d) log p(c, d) / (p(c) p(d))."""
    if n <= 0.0:
        return 0.0
    return n / total * np.log(n * total / (nl * nr))


@njit(cache=True)
def _pair_loss(P, nl, nr, total, a, b, active, K):  # pragma: no cover - numba
    """The AMI lost by merging the active slots ``a`` and ``b`` (from scratch, O(K))."""
    before = 0.0
    after = 0.0
    la = nl[a] + nl[b]
    ra = nr[a] + nr[b]
    for c in range(K):
        if not active[c]:
            continue
        if c == a or c == b:
            continue
        before += _q(P[a, c], nl[a], nr[c], total) + _q(P[c, a], nl[c], nr[a], total)
        before += _q(P[b, c], nl[b], nr[c], total) + _q(P[c, b], nl[c], nr[b], total)
        after += _q(P[a, c] + P[b, c], la, nr[c], total) + _q(P[c, a] + P[c, b], nl[c], ra, total)
    before += _q(P[a, a], nl[a], nr[a], total) + _q(P[b, b], nl[b], nr[b], total)
    before += _q(P[a, b], nl[a], nr[b], total) + _q(P[b, a], nl[b], nr[a], total)
    after += _q(P[a, a] + P[a, b] + P[b, a] + P[b, b], la, ra, total)
    return before - after


@njit(cache=True)
def _best_pair(L, active, K):  # pragma: no cover - numba
    """The active pair ``(a, b)``, ``a < b``, of least merge loss ``L[a, b]`` (first in row
    order on ties)."""
    best = np.inf
    bi, bj = -1, -1
    for a in range(K):
        if not active[a]:
            continue
        for b in range(a + 1, K):
            if active[b] and L[a, b] < best:
                best = L[a, b]
                bi, bj = a, b
    return bi, bj


@njit(cache=True)
def _merge_counts(P, i, j, K):  # pragma: no cover - numba
    """Cluster ``j``'s bigram counts join cluster ``i``'s (row and column); ``j``'s are zeroed."""
    for c in range(K):
        P[i, c] += P[j, c]
    for c in range(K):
        P[c, i] += P[c, j]
    for c in range(K):
        P[j, c] = 0.0
        P[c, j] = 0.0


@njit(cache=True)
def _brown(indptr, indices, data, indptr_t, indices_t, data_t, nl_w, nr_w, n_words,
           n_clusters):  # pragma: no cover - numba
    """Cluster words ``1..n_words-1`` (id order = decreasing frequency; id 0, ``<unk>``, is
    not clustered).  Returns ``leaf_of_word`` (the final cluster, 0..C-1, of every word; -1 for
    ``<unk>``) and the merges of the C final clusters down to one: ``merges[t] = (left, right)``
    node ids (leaves 0..C-1, merge t is node C + t)."""
    V = n_words - 1
    C = min(n_clusters, V)
    K = C + 1
    total = 0.0
    for i in range(len(data)):
        total += data[i]
    if total <= 0.0:
        total = 1.0
    P = np.zeros((K, K))
    nl = np.zeros(K)
    nr = np.zeros(K)
    active = np.zeros(K, np.bool_)
    L = np.full((K, K), np.inf)          # L[a, b], a < b: loss of merging a and b
    slot_of_word = np.full(n_words, -1, np.int64)
    # members of each slot as linked lists (relabelled on merges, the smaller list moves)
    head = np.full(K, -1, np.int64)
    nxt = np.full(n_words, -1, np.int64)
    size = np.zeros(K, np.int64)
    final_leaf = np.full(K, -1, np.int64)

    next_word = 1
    # fill the first C slots
    for s in range(C):
        w = next_word
        next_word += 1
        slot_of_word[w] = s
        head[s] = w
        size[s] = 1
        nl[s] = nl_w[w]
        nr[s] = nr_w[w]
        active[s] = True
    for s in range(C):
        w = head[s]
        for k in range(indptr[w], indptr[w + 1]):
            t = slot_of_word[indices[k]]
            if t >= 0:
                P[s, t] += data[k]
    for a in range(K):
        for b in range(a + 1, K):
            if active[a] and active[b]:
                L[a, b] = _pair_loss(P, nl, nr, total, a, b, active, K)
    while True:
        if next_word <= V:
            # the new word enters the free slot
            f = -1
            for s in range(K):
                if not active[s]:
                    f = s
                    break
            w = next_word
            next_word += 1
            slot_of_word[w] = f
            head[f] = w
            nxt[w] = -1
            size[f] = 1
            nl[f] = nl_w[w]
            nr[f] = nr_w[w]
            for c in range(K):
                P[f, c] = 0.0
                P[c, f] = 0.0
            for k in range(indptr[w], indptr[w + 1]):
                t = slot_of_word[indices[k]]
                if t >= 0:
                    P[f, t] += data[k]
            for k in range(indptr_t[w], indptr_t[w + 1]):
                t = slot_of_word[indices_t[k]]
                if t >= 0 and t != f:
                    P[t, f] += data_t[k]
            # the pairs without f gain the terms of the new column / row f
            for a in range(K):
                if not active[a]:
                    continue
                for b in range(a + 1, K):
                    if not active[b]:
                        continue
                    la = nl[a] + nl[b]
                    ra = nr[a] + nr[b]
                    L[a, b] += _q(P[a, f], nl[a], nr[f], total) + _q(P[f, a], nl[f], nr[a], total) \
                        + _q(P[b, f], nl[b], nr[f], total) + _q(P[f, b], nl[f], nr[b], total) \
                        - _q(P[a, f] + P[b, f], la, nr[f], total) \
                        - _q(P[f, a] + P[f, b], nl[f], ra, total)
            active[f] = True
            for c in range(K):
                if active[c] and c != f:
                    a, b = (c, f) if c < f else (f, c)
                    L[a, b] = _pair_loss(P, nl, nr, total, a, b, active, K)
        elif final_leaf[0] == -1:
            # every word is in: the C active clusters are the leaves of the hierarchy
            n_leaf = 0
            for s in range(K):
                if active[s]:
                    final_leaf[s] = n_leaf
                    n_leaf += 1
            break
        # merge the best pair (i, j): j's members join i
        i, j = _best_pair(L, active, K)
        # update the pairs without i and j: their terms with columns i, j become column i+j
        nli, nri = nl[i] + nl[j], nr[i] + nr[j]
        for a in range(K):
            if not active[a] or a == i or a == j:
                continue
            for b in range(a + 1, K):
                if not active[b] or b == i or b == j:
                    continue
                la = nl[a] + nl[b]
                ra = nr[a] + nr[b]
                old = _q(P[a, i], nl[a], nr[i], total) + _q(P[i, a], nl[i], nr[a], total) \
                    + _q(P[b, i], nl[b], nr[i], total) + _q(P[i, b], nl[i], nr[b], total) \
                    + _q(P[a, j], nl[a], nr[j], total) + _q(P[j, a], nl[j], nr[a], total) \
                    + _q(P[b, j], nl[b], nr[j], total) + _q(P[j, b], nl[j], nr[b], total) \
                    - _q(P[a, i] + P[b, i], la, nr[i], total) \
                    - _q(P[i, a] + P[i, b], nl[i], ra, total) \
                    - _q(P[a, j] + P[b, j], la, nr[j], total) \
                    - _q(P[j, a] + P[j, b], nl[j], ra, total)
                pai = P[a, i] + P[a, j]
                pia = P[i, a] + P[j, a]
                pbi = P[b, i] + P[b, j]
                pib = P[i, b] + P[j, b]
                new = _q(pai, nl[a], nri, total) + _q(pia, nli, nr[a], total) \
                    + _q(pbi, nl[b], nri, total) + _q(pib, nli, nr[b], total) \
                    - _q(pai + pbi, la, nri, total) - _q(pia + pib, nli, ra, total)
                L[a, b] += new - old
        _merge_counts(P, i, j, K)
        nl[i] = nli
        nr[i] = nri
        nl[j] = 0.0
        nr[j] = 0.0
        active[j] = False
        for c in range(K):
            L[min(c, j), max(c, j)] = np.inf
        # relabel j's words
        w = head[j]
        last = -1
        while w != -1:
            slot_of_word[w] = i
            last = w
            w = nxt[w]
        if last != -1:
            nxt[last] = head[i]
            head[i] = head[j]
        size[i] += size[j]
        head[j] = -1
        size[j] = 0
        for c in range(K):
            if active[c] and c != i:
                a, b = (c, i) if c < i else (i, c)
                L[a, b] = _pair_loss(P, nl, nr, total, a, b, active, K)
    # the leaves: every word's final cluster
    leaf_of_word = np.full(n_words, -1, np.int64)
    for w in range(1, V + 1):
        leaf_of_word[w] = final_leaf[slot_of_word[w]]
    # merge the C clusters down to one (recomputing the losses from scratch: O(C^3) once)
    node = np.full(K, -1, np.int64)
    for s in range(K):
        if active[s]:
            node[s] = final_leaf[s]
    n_leaf = 0
    for s in range(K):
        if active[s]:
            n_leaf += 1
    merges = np.zeros((max(n_leaf - 1, 0), 2), np.int64)
    for t in range(n_leaf - 1):
        i, j = _best_pair(L, active, K)
        merges[t, 0] = node[i]
        merges[t, 1] = node[j]
        _merge_counts(P, i, j, K)
        nl[i] += nl[j]
        nr[i] += nr[j]
        nl[j] = 0.0
        nr[j] = 0.0
        active[j] = False
        node[i] = n_leaf + t
        node[j] = -1
        for a in range(K):
            for b in range(a + 1, K):
                if active[a] and active[b]:
                    L[a, b] = _pair_loss(P, nl, nr, total, a, b, active, K)
                else:
                    L[a, b] = np.inf
    return leaf_of_word, merges


def _leaf_paths(merges, n_leaf):
    """Bit string of every leaf of the merge tree (root first; '' for a single leaf)."""
    paths = [""] * (n_leaf + len(merges))
    for t in range(len(merges) - 1, -1, -1):       # the root is the last merge
        p = paths[n_leaf + t]
        left, right = int(merges[t, 0]), int(merges[t, 1])
        paths[left] = p + "0"
        paths[right] = p + "1"
    return paths[:n_leaf]


#: the observed vectors of :class:`BrownClusters`
FEATURES = ("bits", "bits+clusters")


class BrownClusters(WordIds, Estimator):
    """Brown clusters of words and their bit-string vectors.

    Every word with at least ``min_count`` occurrences is put in one of ``n_clusters``
    clusters by the greedy AMI-merging algorithm of Brown et al. (1992) with Liang's (2005)
    window of active clusters (see the module docstring); the clusters are merged into a
    binary hierarchy, and a word's *bit string* is its cluster's path from the root.  As an
    observed vector (:meth:`transform`), bit ``k`` of the path is ``+1`` (right) or ``-1``
    (left), ``0`` past the end of the path, over the first ``dim`` bits; unknown words get the
    zero vector.

    Parameters
    ----------
    n_clusters : int
        Active clusters (and leaves of the hierarchy).
    min_count : int
        Words seen fewer times are not clustered (``<unk>``).
    vocabulary : int or None
        At most this many words are clustered (the most frequent).
    dim : int or None
        Bits in the vectors (None: the depth of the hierarchy).
    lowercase : bool
        Fold words to lower case.
    features : {"bits", "bits+clusters"}
        The vectors of :meth:`transform`: the +-1 bits of the path (``dim`` of them, None:
        the depth of the hierarchy); or the vectors of Parikh, Cohen & Xing (2014, section
        4.1, "word embeddings"): ``log2(C)`` bits of the path (``dim``, None: ``ceil(log2
        C)``) followed by the ``C`` one-hot indicators of the word's cluster.

    Attributes
    ----------
    words_ : list of str, ``words_[0] == "<unk>"``, then by decreasing frequency.
    bits_ : list of str, the bit string of every word (``""`` for ``<unk>``).
    clusters_ : ndarray of int64, every word's cluster (-1 for ``<unk>``).
    embeddings_ : ndarray ``(len(words_), dim)`` (``features="bits+clusters"``: ``dim + C``
        columns), the vectors of :meth:`transform`.
    class_bigrams_ : ndarray (C + 1, C + 1), class transition counts (the last class:
        ``<unk>``); ``word_counts_`` : ndarray ``(len(words_),)``, the emission counts; both for
        :meth:`log_likelihood`.
    fit_time_ : float

    References
    ----------
    Peter F. Brown, Vincent J. Della Pietra, Peter V. deSouza, Jenifer C. Lai and Robert L.
    Mercer (1992).  Class-Based n-gram Models of Natural Language.  Computational Linguistics
    18(4) (section 3: the merge loss in average mutual information).
    Percy Liang (2005).  Semi-Supervised Learning for Natural Language.  MIT MEng thesis
    (section 3.1: the window of active clusters and the bit strings).

    Examples
    --------
    >>> sents = [["the", "dog", "runs"], ["a", "cat", "runs"], ["the", "cat", "sleeps"],
    ...          ["a", "dog", "sleeps"]] * 20
    >>> bc = BrownClusters(n_clusters=3, min_count=1).fit(sents)
    >>> bc.bits_[bc.words_.index("dog")] == bc.bits_[bc.words_.index("cat")]
    True
    >>> bc.transform(["dog", "zebra"]).shape[0]
    2
    """

    kind = "brown"
    input_kind = "sequences"
    _parameter_constraints = {"n_clusters": Interval(int, 1), "min_count": Interval(int, 1),
                              "vocabulary": Interval(int, 1, allow_none=True),
                              "dim": Interval(int, 1, allow_none=True), "features": set(FEATURES)}

    def __init__(self, n_clusters=100, min_count=2, vocabulary=None, dim=None, lowercase=True,
                 features="bits"):
        self.n_clusters = n_clusters
        self.min_count = min_count
        self.vocabulary = vocabulary
        self.dim = dim
        self.lowercase = lowercase
        self.features = features

    def fit(self, X):
        """Cluster the words of ``X`` (lists of words, or trees: their words)."""
        sents = sentences_of(X)
        self._validate_params()
        counts = word_counts(sents, self.lowercase)
        words = brown_vocabulary(counts, self.min_count, self.vocabulary)
        index = {w: i for i, w in enumerate(words)}
        return self.fit_counts(words, bigram_counts(sents, index, self.lowercase))

    def fit_counts(self, words, bigrams):
        """Cluster from merged statistics: ``words`` (:func:`brown_vocabulary`) and their
        :func:`bigram_counts`."""
        t0 = time.perf_counter()
        self._validate_params()
        V = len(words)
        if V < 2:
            raise ValueError("no words to cluster (all rarer than min_count)")
        B = sp.csr_matrix(bigrams, dtype=np.float64)
        if B.shape != (V, V):
            raise ValueError(f"bigram counts of shape {B.shape} for {V} words")
        Bt = B.T.tocsr()
        nl = np.asarray(B.sum(axis=1)).ravel()
        nr = np.asarray(B.sum(axis=0)).ravel()
        # a word without a left (right) bigram still needs a positive marginal
        nl = np.maximum(nl, 1e-12)
        nr = np.maximum(nr, 1e-12)
        leaf, merges = _brown(B.indptr.astype(np.int64), B.indices.astype(np.int64), B.data,
                              Bt.indptr.astype(np.int64), Bt.indices.astype(np.int64), Bt.data,
                              nl, nr, V, int(self.n_clusters))
        n_leaf = len(merges) + 1
        paths = _leaf_paths(merges, n_leaf)
        self.words_ = list(words)
        self.clusters_ = leaf
        self.bits_ = [""] + [paths[c] for c in leaf[1:]]
        depth = max(len(p) for p in paths) if paths else 0
        if self.features == "bits":
            dim = max(1, depth if self.dim is None else int(self.dim))
        else:                                   # log2(C) bits, then the one-hot cluster
            dim = max(1, int(np.ceil(np.log2(max(n_leaf, 2)))) if self.dim is None
                      else int(self.dim))
        E = np.zeros((V, dim + (n_leaf if self.features == "bits+clusters" else 0)))
        for i, b in enumerate(self.bits_):
            for k, ch in enumerate(b[:dim]):
                E[i, k] = 1.0 if ch == "1" else -1.0
        if self.features == "bits+clusters":
            rows = np.flatnonzero(leaf >= 0)
            rows = rows[rows > 0]
            E[rows, dim + leaf[rows]] = 1.0
        self.embeddings_ = E
        # the class bigram model the clustering optimises (for log_likelihood): class
        # transition counts, the unclustered words (<unk>) a class of their own
        cls = np.where(leaf >= 0, leaf, n_leaf)
        Mc = sp.csr_matrix((np.ones(V), (np.arange(V), cls)), shape=(V, n_leaf + 1))
        self.class_bigrams_ = np.asarray((Mc.T @ B @ Mc).todense(), dtype=np.float64)
        self.word_counts_ = np.asarray(B.sum(axis=1)).ravel() + np.asarray(B.sum(axis=0)).ravel()
        self._index = {w: i for i, w in enumerate(self.words_)}
        self.fit_time_ = time.perf_counter() - t0
        return self

    def log_likelihood(self, sentences) -> tuple[float, int]:
        """``(log-probability (nats), number of words)`` of ``sentences`` (lists of words) under
        the class bigram model
        of Brown et al. (1992) that the clustering maximises: ``P(c_1) P(w_1|c_1) prod
        P(c_i|c_{i-1}) P(w_i|c_i)``, add-one smoothed, the emission counts taken from the
        bigram marginals (each token counted once per neighbour in its sentence); unknown
        words are ``<unk>``, a class of their own (the pair of the sequence-model
        interface)."""
        self._check_fitted()
        sentences = sentences_of(sentences)
        CB = self.class_bigrams_
        K = CB.shape[0]
        cls = np.where(self.clusters_ >= 0, self.clusters_, K - 1)
        wc = self.word_counts_
        class_total = np.bincount(cls, weights=wc, minlength=K)
        class_size = np.bincount(cls, minlength=K).astype(np.float64)
        log_emit = np.log((wc + 1.0) / (class_total[cls] + class_size[cls]))
        log_trans = np.log((CB + 1.0) / (CB.sum(axis=1, keepdims=True) + K))
        start = CB.sum(axis=0)
        log_start = np.log((start + 1.0) / (start.sum() + K))
        total, n = 0.0, 0
        for sent in sentences:
            words = sent.leaves() if hasattr(sent, "leaves") else list(sent)
            if not words:
                continue
            ids = self.ids(words)
            c = cls[ids]
            total += log_start[c[0]] + log_emit[ids].sum() + log_trans[c[:-1], c[1:]].sum()
            n += len(ids)
        return float(total), n

    def transform(self, words) -> np.ndarray:
        """The bit vectors of ``words``: an array ``(len(words), dim)``."""
        self._check_fitted()
        return self.embeddings_[self.ids(words)]

    def _model_file(self):
        meta = {"params": self.get_params(), "words": list(self.words_), "bits": self.bits_,
                "fit_time": self.fit_time_}
        return meta, {"embeddings": self.embeddings_, "clusters": self.clusters_,
                      "class_bigrams": self.class_bigrams_, "word_counts": self.word_counts_}

    @classmethod
    def _from_model_file(cls, meta, arrays):
        from ..errors import ModelFileError
        from ..io import validate as Vd

        model = Vd.from_params(cls, meta)
        model.words_ = Vd.meta_strings(meta, "words")
        V = len(model.words_)
        if V == 0:
            raise ModelFileError("meta field 'words': an empty vocabulary (no <unk> row)")
        model.bits_ = Vd.meta_strings(meta, "bits")
        if len(model.bits_) != V or any(b.strip("01") for b in model.bits_):
            raise ModelFileError(f"meta field 'bits': not one bit string per word ({V} words)")
        model.embeddings_ = Vd.check_finite(Vd.get(arrays, "embeddings", "float", ndim=2,
                                                   shape=(V, None), dtype=np.float64),
                                            "embeddings")
        model.clusters_ = Vd.get(arrays, "clusters", "int", shape=(V,), dtype=np.int64)
        if "class_bigrams" in arrays or "word_counts" in arrays:
            model.class_bigrams_ = Vd.check_nonneg(Vd.get(arrays, "class_bigrams", "float",
                                                          ndim=2, dtype=np.float64),
                                                   "class_bigrams")
            K = model.class_bigrams_.shape[0]
            Vd.get(arrays, "class_bigrams", "float", ndim=2, shape=(K, K))
            if K < 1:
                Vd.fail("class_bigrams", "no classes")
            model.word_counts_ = Vd.check_nonneg(Vd.get(arrays, "word_counts", "float",
                                                        shape=(V,), dtype=np.float64),
                                                 "word_counts")
        else:                 # a file written before the class model was kept: uniform counts
            K = int(model.clusters_.max()) + 2 if V else 1
            Vd.check_index(model.clusters_, "clusters", -1, max(K - 1, 0))
            model.class_bigrams_ = np.zeros((K, K))
            model.word_counts_ = np.zeros(V)
        # cluster ids: -1 (unclustered, the last class) or a class other than the last
        Vd.check_index(model.clusters_, "clusters", -1, K - 1)
        model.fit_time_ = Vd.meta_float(meta, "fit_time")
        return model
