"""Eigenwords: CCA word embeddings (the one-step CCA of Dhillon, Foster & Ungar 2011)."""
from __future__ import annotations

import logging
import time
from collections import Counter

import numpy as np
import scipy.sparse as sp

from ..base import Estimator, Interval, check_sequences, check_words

__all__ = ["Eigenwords", "load_embeddings", "eigenword_vocabulary", "eigenword_cooccurrence"]

UNK = "<unk>"
BOS, EOS = "<s>", "</s>"


def eigenword_vocabulary(counts, min_count=1, vocabulary=50000, context_vocabulary=5000):
    """The word and context vocabularies of :class:`Eigenwords` from word counts:
    ``[<unk>] + ranked`` and ``[<unk>, <s>, </s>] + ranked[:context_vocabulary]``, ``ranked``
    the ``vocabulary`` most frequent words of count ``>= min_count`` (ties by the word)."""
    ranked = [w for w, c in sorted(counts.items(), key=lambda x: (-x[1], x[0]))
              if c >= min_count][:vocabulary]
    return [UNK] + ranked, [UNK, BOS, EOS] + ranked[:context_vocabulary]


def eigenword_cooccurrence(sents, words, ctx_words, window=2):
    """The word x (offset, context word) counts of the one-step CCA over ``sents`` (word
    lists, already case-folded): a sparse matrix ``(len(words), 2 window len(ctx_words))``, a
    sum over sentences (``window`` boundary symbols pad each sentence)."""
    index = {w: i for i, w in enumerate(words)}
    cindex = {w: i for i, w in enumerate(ctx_words)}
    nc = len(ctx_words)
    h = int(window)
    wid, cid, valid = [], [], []
    for s in sents:
        wid.extend([0] * h + [index.get(w, 0) for w in s] + [0] * h)
        cid.extend([1] * h + [cindex.get(w, 0) for w in s] + [2] * h)
        valid.extend([False] * h + [True] * len(s) + [False] * h)
    wid, cid = np.asarray(wid, np.int64), np.asarray(cid, np.int64)
    pos = np.flatnonzero(np.asarray(valid, dtype=bool))
    offsets = [o for o in range(-h, h + 1) if o != 0]
    rows = np.concatenate([wid[pos]] * len(offsets)) if len(pos) else np.zeros(0, np.int64)
    cols = np.concatenate([k * nc + cid[pos + o] for k, o in enumerate(offsets)]) \
        if len(pos) else np.zeros(0, np.int64)
    Q = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(words), len(offsets) * nc))
    Q.sum_duplicates()
    return Q


def _embed(model, Q, words, counts, dim, random_state, normalize):
    """Set the learned attributes of the :class:`Eigenwords` ``model`` (all but ``fit_time_``)
    from the co-occurrence counts ``Q`` of ``words`` (:func:`eigenword_cooccurrence`) and the
    word ``counts``: the SVD of the CCA-whitened counts."""
    from ..linalg.cca import whiten
    from ..linalg.svd import randomized_svd

    Omega, p_f, _ = whiten(Q)
    k = min(int(dim) + 1, min(Omega.shape) - 1)
    if k < 2:
        raise ValueError(f"too few distinct words ({len(words) - 1}) for eigenwords of "
                         f"dimension {dim}")
    U, s, _ = randomized_svd(Omega, k, random_state=random_state)
    # the data's rank bounds the dimension: directions past it are zero (or noise) columns
    rank = int(np.count_nonzero(s[1:] > s[0] * max(Omega.shape) * np.finfo(np.float64).eps)) \
        if len(s) else 0
    if rank < 1:
        raise ValueError(f"too few distinct words ({len(words) - 1}) for dim={dim}")
    if rank < int(dim):
        logging.getLogger("fastspectral").warning(
            f"eigenwords: dim={dim} is more than the {rank} dimension(s) the training data "
            f"allow ({len(words) - 1} words, {Omega.shape[1]} contexts): using dim={rank}")
    s = s[:rank + 1]
    scale = np.zeros_like(p_f)
    scale[p_f > 0] = 1.0 / np.sqrt(p_f[p_f > 0])
    E = U[:, 1:rank + 1] * scale[:, None]
    if normalize:
        norm = np.linalg.norm(E, axis=1)
        E = E / np.where(norm > 0, norm, 1.0)[:, None]
    index = {w: i for i, w in enumerate(words)}
    model.words_ = list(words)
    model.embeddings_ = np.ascontiguousarray(E, dtype=np.float64)
    model.counts_ = np.asarray([sum(c for w, c in counts.items() if w not in index)] +
                               [counts[w] for w in words[1:]], dtype=np.int64)
    model.singular_values_ = np.ascontiguousarray(s[1:], dtype=np.float64)
    model._index = index


def sentences_of(sentences, what: str = "sentences") -> list:
    """``sentences`` (lists of words, or trees: their words) as lists of words; a one-line
    ``TypeError`` for a string, a flat list of strings or a non-string word
    (:func:`fastspectral.base.check_sequences`)."""
    if isinstance(sentences, (str, bytes)):
        return check_sequences(sentences, what)
    return check_sequences([s.leaves() if hasattr(s, "leaves") else s for s in sentences],
                           what)


class WordIds:
    """Vocabulary ids of words, for the word-vector estimators (:class:`Eigenwords`,
    :class:`~fastspectral.embeddings.brown_clusters.BrownClusters`): ``words_`` (row 0:
    ``<unk>``), ``lowercase``."""

    def _lookup(self):
        idx = getattr(self, "_index", None)
        if idx is None:
            idx = self._index = {w: i for i, w in enumerate(self.words_)}
        return idx

    def ids(self, words) -> np.ndarray:
        """Vocabulary ids of ``words`` (0 = ``<unk>``)."""
        self._check_fitted()
        words = check_words(words)
        idx = self._lookup()
        fold = str.lower if self.lowercase else (lambda w: w)
        return np.asarray([idx.get(fold(w), 0) for w in words], dtype=np.int64)


class Eigenwords(WordIds, Estimator):
    """The eigenword dictionary: CCA between a word and its context window (OSCCA).

    Every token gives a row of the word view ``W`` (one-hot over the ``vocabulary`` most frequent
    words, the others sharing ``<unk>``) and of the context view ``C`` (one-hot of each of the
    ``window`` words on each side, per offset, over the ``context_vocabulary`` most frequent
    words, ``<unk>`` and the sentence boundaries).  With the cross counts ``C_wc = W^T C`` and
    diagonal approximations of ``C_ww`` and ``C_cc`` the CCA is the SVD of

        Omega = C_ww^-1/2  C_wc  C_cc^-1/2  ~  U diag(sigma) V^T          (Dhillon et al., sec. 2)

    (a randomized SVD, :mod:`fastspectral.linalg.svd`).  The first singular pair is the trivial
    one (constant canonical variates) and is dropped; the eigenword of word ``w`` is row ``w`` of
    ``C_ww^-1/2 U[:, 1:dim+1]``, normalised to unit length (``normalize``), so cosine and dot
    products agree.

    Parameters
    ----------
    dim : int
        Dimension of the embeddings, at most: capped (with a warning on the ``fastspectral``
        logger) at the rank the training data allow (about the number of distinct words).
    window : int
        Context words on each side.
    vocabulary : int
        Words with their own vector (the most frequent); the rest share ``<unk>``'s.
    context_vocabulary : int
        Context words told apart (the most frequent); the rest are one context ``<unk>``.
    min_count : int
        Words seen fewer times share ``<unk>``'s vector.
    lowercase : bool
        Fold words to lower case (training and look-up).
    normalize : bool
        Unit-length vectors.
    random_state : int
        Seed of the randomized SVD.

    Attributes
    ----------
    words_ : list of str
        The vocabulary (``words_[0] == "<unk>"``), most frequent first.
    embeddings_ : ndarray of shape ``(len(words_), d)``
        ``d = min(dim, rank of the whitened co-occurrences)``.
    counts_ : ndarray of int64, the training counts of ``words_``.
    singular_values_ : ndarray of shape (d,), the canonical correlations kept.
    fit_time_ : float

    References
    ----------
    Paramveer S. Dhillon, Dean Foster and Lyle Ungar (2011).  Multi-View Learning of Word
    Embeddings via CCA.  NIPS 24 (the one-step CCA, OSCCA, of section 2).
    Paramveer S. Dhillon, Jordan Rodu, Dean Foster and Lyle Ungar (2012).  Two Step CCA: A new
    spectral method for estimating vector models of words.  ICML 2012.

    Examples
    --------
    >>> sents = [["the", "dog", "runs"], ["a", "cat", "runs"], ["the", "cat", "sleeps"],
    ...          ["a", "dog", "sleeps"]] * 20
    >>> ew = Eigenwords(dim=2, window=1).fit(sents)
    >>> ew.transform(["dog", "cat", "zebra"]).shape
    (3, 2)
    >>> ew.nearest("dog", 1)[0][0] in {"cat", "dog"}
    True
    """

    kind = "eigenwords"
    input_kind = "sequences"
    _parameter_constraints = {name: Interval(int, 1) for name in
                              ("dim", "window", "vocabulary", "context_vocabulary", "min_count")}

    def __init__(self, dim=50, window=2, vocabulary=50000, context_vocabulary=5000, min_count=2,
                 lowercase=True, normalize=True, random_state=0):
        self.dim = dim
        self.window = window
        self.vocabulary = vocabulary
        self.context_vocabulary = context_vocabulary
        self.min_count = min_count
        self.lowercase = lowercase
        self.normalize = normalize
        self.random_state = random_state

    # ------------------------------------------------------------------------------------------
    def fit(self, X):
        """Learn the dictionary from ``X`` (lists of words, or trees: their words)."""
        t0 = time.perf_counter()
        self._validate_params()
        fold = str.lower if self.lowercase else (lambda w: w)
        sents = [[fold(w) for w in s] for s in sentences_of(X)]
        counts = Counter(w for s in sents for w in s)
        if not counts:
            raise ValueError("no words to learn from")
        words, ctx_words = eigenword_vocabulary(counts, self.min_count, self.vocabulary,
                                                self.context_vocabulary)
        Q = eigenword_cooccurrence(sents, words, ctx_words, self.window)
        _embed(self, Q, words, counts, self.dim, self.random_state, self.normalize)
        self.fit_time_ = time.perf_counter() - t0
        return self

    # ------------------------------------------------------------------------------------------
    def transform(self, words) -> np.ndarray:
        """The eigenwords of ``words`` (a list of strings): an array ``(len(words), dim)``."""
        self._check_fitted()
        return self.embeddings_[self.ids(words)]

    def nearest(self, word: str, k: int = 5) -> list:
        """The ``k`` nearest words of ``word`` by cosine: ``[(word, cosine), ...]``."""
        self._check_fitted()
        E = self.embeddings_
        v = E[self.ids([word])[0]]
        norms = np.linalg.norm(E, axis=1) * (np.linalg.norm(v) or 1.0)
        cos = (E @ v) / np.where(norms > 0, norms, 1.0)
        me = self.ids([word])[0]
        cos[me] = -np.inf
        cos[0] = -np.inf
        top = np.argsort(-cos)[:k]
        return [(self.words_[i], float(cos[i])) for i in top]

    def log_likelihood(self, sentences) -> tuple[float, int]:
        """``(log-probability (nats), number of words)`` of ``sentences`` under the
        dictionary's add-one unigram distribution over ``words_`` (unknown words: ``<unk>``).
        A coverage score of the dictionary for a corpus (the pair of the sequence-model
        interface); not a language model."""
        self._check_fitted()
        c = self.counts_.astype(np.float64) + 1.0
        logp = np.log(c / c.sum())
        ids = [self.ids(s) for s in sentences_of(sentences)]
        return float(sum(logp[i].sum() for i in ids)), sum(len(i) for i in ids)

    # ------------------------------------------------------------------------------------------
    def _model_file(self):
        meta = {"params": self.get_params(), "words": list(self.words_),
                "fit_time": self.fit_time_}
        return meta, {"embeddings": self.embeddings_, "counts": self.counts_,
                      "singular_values": self.singular_values_}

    @classmethod
    def _from_model_file(cls, meta, arrays):
        from ..errors import ModelFileError
        from ..io import validate as V

        model = V.from_params(cls, meta)
        words = V.meta_strings(meta, "words")
        if not words:
            raise ModelFileError("meta field 'words': an empty vocabulary (no <unk> row)")
        E = V.check_finite(V.get(arrays, "embeddings", "float", ndim=2,
                                 shape=(len(words), None), dtype=np.float64), "embeddings")
        if E.shape[1] == 0:
            V.fail("embeddings", "no dimensions")
        counts = V.check_nonneg(V.get(arrays, "counts", "int", shape=(len(words),),
                                      dtype=np.int64), "counts")
        model.words_, model.embeddings_, model.counts_ = words, E, counts
        model.singular_values_ = V.check_nonneg(V.get(arrays, "singular_values", "float",
                                                      dtype=np.float64), "singular_values")
        model.fit_time_ = V.meta_float(meta, "fit_time")
        return model


def load_embeddings(source) -> Eigenwords:
    """An :class:`Eigenwords` dictionary: ``source`` itself when it is one (fitted), else the
    model file at path ``source`` (``fastspectral train eigenwords``)."""
    if isinstance(source, Eigenwords):
        source._check_fitted()
        return source
    if not isinstance(source, (str, bytes)) and not hasattr(source, "__fspath__"):
        raise TypeError(f"embeddings must be a path or an Eigenwords, got {type(source).__name__}")
    import os

    from ..errors import ModelFileError

    path = os.fsdecode(source)
    try:
        return Eigenwords.load(source)
    except ModelFileError as exc:           # the one-line error names the file
        if str(exc).startswith(path + ":"):
            raise
        raise ModelFileError(f"{path}: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ModelFileError(f"{path}: corrupt or tampered 'eigenwords' model file "
                             f"({exc!r})") from None
