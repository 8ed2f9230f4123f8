"""Interpolated Kneser–Ney bigram language model (the vocabulary / bigram counting shared by
every language model of :mod:`fastspectral.lm` is in :mod:`fastspectral.lm.vocabulary`).

Conventions shared with :class:`~fastspectral.lm.saul_pereira.LatentBigramLM`:

* a sentence is a list of word strings; words are lower-cased when ``lowercase=True``;
* every training word seen fewer than ``min_count`` times (default 2: hapax legomena) is replaced
  by ``<unk>``, and so is every unknown word at evaluation time;
* each sentence ``w_1 .. w_n`` is scored as the ``n + 1`` bigram events ``(<s>, w_1), (w_1, w_2),
  ..., (w_n, </s>)``; perplexity is ``exp(-sum log p(w_i | w_{i-1}) / sum (n + 1))``.

Word ids: ``0 = <s>``, ``1 = </s>``, ``2 = <unk>``, then the kept words by decreasing frequency
(ties alphabetically).  ``<s>`` is never predicted; ``</s>`` never conditions.

Kneser–Ney (Chen & Goodman 1999, interpolated, "modified" discounts by default)::

    p(w | v) = max(c(v, w) - D(c(v, w)), 0) / c(v)  +  lambda(v) p_cont(w)
    lambda(v) = (D1 N1(v .) + D2 N2(v .) + D3 N3+(v .)) / c(v)
    p_cont(w) = max(N1+(. w) - D_u, 0) / N1+(. .)  +  D_u T / N1+(. .) / |V'|

with ``D1, D2, D3+`` from the count-of-counts ``n_1..n_4`` of the bigram counts
(``Y = n1 / (n1 + 2 n2)``, ``D_k = k - (k + 1) Y n_{k+1} / n_k``); ``discount="absolute"`` uses the
single ``D = Y``.  The continuation unigram is itself interpolated with the uniform distribution
over the ``|V'|`` predictable words (all ids but ``<s>``; ``T`` = number of words with a
continuation count, ``D_u`` = its own absolute discount) so that every word, ``<unk>`` included,
has a positive probability.  A context never seen as a context gets ``p_cont``.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..base import Estimator, Interval, PartitionedFit
from ..errors import ModelFileError
from .vocabulary import BOS, EOS, UNK, Vocabulary, _as_word_lists, bigram_ids, bigram_matrix

__all__ = ["BOS", "EOS", "UNK", "Vocabulary", "bigram_ids", "bigram_matrix",
           "KneserNeyBigramLM"]

class KneserNeyBigramLM(PartitionedFit, Estimator):
    """Interpolated Kneser-Ney bigram language model (the formulas are in the module docstring).

    Parameters
    ----------
    min_count : int, default 2
        Training words seen fewer times become ``<unk>``.
    lowercase : bool, default True
        Fold words to lower case.
    discount : {"modified", "absolute"}, default "modified"
        Three discounts ``D1, D2, D3+`` (Chen & Goodman's modified Kneser-Ney) or one.

    Attributes
    ----------
    vocab_ : Vocabulary
        The vocabulary (``<s>``, ``</s>``, ``<unk>``, then the kept words).
    counts_ : scipy.sparse.csr_matrix
        Bigram counts ``C[v, w]``.
    discounts_ : ndarray of shape (3,)
        ``D1, D2, D3+`` (all equal with ``discount="absolute"``).
    context_counts_ : ndarray
        ``c(v)``: bigram tokens with context ``v``.
    lambda_ : ndarray
        Interpolation weight ``lambda(v)`` of the continuation unigram.
    p_cont_ : ndarray
        The continuation unigram ``p_cont(w)`` (interpolated with the uniform distribution).
    unigram_discount_ : float
        ``D_u``, the absolute discount of the continuation counts.
    discounted_counts_ : ndarray
        ``max(c(v, w) - D(c(v, w)), 0)`` of every non-zero of ``counts_`` (CSR order).
    bigram_keys_ : ndarray of int64
        ``v * |V| + w`` of every non-zero of ``counts_`` (sorted; the look-up keys).
    fit_time_ : float
        Seconds spent in the last :meth:`fit`.

    References
    ----------
    R. Kneser and H. Ney, "Improved backing-off for m-gram language modeling", ICASSP 1995
    (the continuation counts ``N1+(. w)``, eq. 10-12); S. F. Chen and J. Goodman, "An empirical
    study of smoothing techniques for language modeling", Harvard TR-10-98, 1998 (interpolated
    Kneser-Ney, eq. 17; modified Kneser-Ney discounts ``D1, D2, D3+``, eq. 26).

    Examples
    --------
    >>> from fastspectral.lm import KneserNeyBigramLM
    >>> sents = [s.split() for s in ["the dog barks", "the cat sleeps", "a dog sleeps",
    ...                              "the dog sleeps", "a cat barks"]] * 3
    >>> lm = KneserNeyBigramLM(min_count=1).fit(sents)
    >>> lm.log_likelihood([["the", "dog", "barks"]])[1]       # 3 words + </s>
    4
    >>> 1.0 < lm.perplexity([["a", "dog", "barks"]]) < 5.0
    True
    """

    kind = "kneser-ney-bigram-lm"
    input_kind = "sequences"
    _parameter_constraints = {"discount": {"modified", "absolute"}, "min_count": Interval(int, 1)}
    #: a language model: ``log_likelihood`` gives ``(nats, predicted events)`` (``lm eval``)
    language_model = True

    def __init__(self, min_count: int = 2, lowercase: bool = True, discount: str = "modified"):
        self.min_count = min_count
        self.lowercase = lowercase
        self.discount = discount

    # ---------------------------------------------------------------- training
    def fit(self, X):
        """Estimate the model from training sentences (lists of words or ``(word, tag)``).
        Returns self."""
        self._validate_params()
        t0 = time.perf_counter()
        sents = list(_as_word_lists(X))
        if not sents:
            raise ValueError("no training sentences")
        self.vocab_ = Vocabulary.build(sents, int(self.min_count), bool(self.lowercase))
        n = len(self.vocab_)
        prev, nxt = bigram_ids(sents, self.vocab_)
        self.counts_ = bigram_matrix(prev, nxt, n)
        self._finish()
        self.fit_time_ = time.perf_counter() - t0
        return self

    def sufficient_statistics(self, items, context=None):
        """The word and bigram counts (string keys) of a partition of sentences (one pass;
        see :mod:`fastspectral.lm.stats`)."""
        from .stats import bigram_statistics

        return bigram_statistics(self, items)

    def fit_statistics(self, stats, context=None):
        """Fit from merged :meth:`sufficient_statistics` (the model ``fit`` gives on the
        concatenated partitions); returns None (fitted)."""
        from .stats import vocabulary_and_counts

        self._validate_params()
        t0 = time.perf_counter()
        self.vocab_, self.counts_ = vocabulary_and_counts(self, stats)
        self._finish()
        self.fit_time_ = time.perf_counter() - t0
        return None

    def _finish(self):
        """The discounts, interpolation weights and continuation unigram of ``counts_``
        (Chen & Goodman 1998, eq. 17 and 26)."""
        C = self.counts_
        n = C.shape[0]
        data = C.data
        nk = np.array([np.count_nonzero(data == k) for k in range(1, 5)], dtype=np.float64)
        if nk[0] == 0 or nk[1] == 0:
            Y = 0.5
        else:
            Y = nk[0] / (nk[0] + 2 * nk[1])
        if self.discount == "modified" and np.all(nk > 0):
            D = np.array([k - (k + 1) * Y * nk[k] / nk[k - 1] for k in (1, 2, 3)])
            D = np.clip(D, 0.0, None)
            D = np.minimum(D, [1.0, 2.0, 3.0])
        else:
            D = np.array([Y, Y, Y])
        self.discounts_ = D
        disc = np.where(data >= 3, D[2], np.where(data >= 2, D[1], D[0]))
        disc = np.minimum(disc, data)
        self.discounted_counts_ = data - disc  # discounted numerators per nonzero
        ctx = np.asarray(C.sum(axis=1)).ravel()
        self.context_counts_ = ctx
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(C.indptr))
        self.bigram_keys_ = rows * n + C.indices.astype(np.int64)  # sorted: v * n + w
        lam_num = np.bincount(rows, weights=disc, minlength=n)
        self.lambda_ = np.where(ctx > 0, lam_num / np.where(ctx > 0, ctx, 1.0), 1.0)
        # continuation unigram, interpolated with uniform over predictable words (not <s>)
        cont = np.bincount(C.indices, minlength=n).astype(np.float64)  # N1+(. w)
        cont[0] = 0.0
        total = cont.sum()
        n1 = np.count_nonzero(cont == 1)
        n2 = np.count_nonzero(cont == 2)
        Du = n1 / (n1 + 2 * n2) if (n1 + 2 * n2) > 0 else 0.5
        T = np.count_nonzero(cont)
        npred = n - 1
        p = np.maximum(cont - Du, 0.0) / total + Du * T / total / npred
        p[0] = 0.0
        self.unigram_discount_ = Du
        self.p_cont_ = p / p.sum()

    # ---------------------------------------------------------------- scoring
    def prob_ids(self, prev: np.ndarray, nxt: np.ndarray) -> np.ndarray:
        """``p(next | prev)`` for arrays of word ids."""
        self._check_fitted()
        C = self.counts_
        prev = np.asarray(prev, dtype=np.int64)
        nxt = np.asarray(nxt, dtype=np.int64)
        ctx = self.context_counts_[prev]
        # look up c(v, w): binary search of v * n + w in the sorted CSR keys
        num = np.zeros(len(prev))
        keys = prev * C.shape[1] + nxt
        flat = self.bigram_keys_
        pos = np.searchsorted(flat, keys)
        pos_ok = pos < len(flat)
        hit = np.zeros(len(prev), dtype=bool)
        hit[pos_ok] = flat[pos[pos_ok]] == keys[pos_ok]
        num[hit] = self.discounted_counts_[pos[hit]]
        pc = self.p_cont_[nxt]
        safe = np.where(ctx > 0, ctx, 1.0)
        return np.where(ctx > 0, num / safe + self.lambda_[prev] * pc, pc)

    def prob(self, prev_word: str, word: str) -> float:
        """``p(word | prev_word)``; use ``"<s>"`` / ``"</s>"`` for the sentence boundaries."""
        self._check_fitted()
        ids = [self._word_id(prev_word), self._word_id(word)]
        return float(self.prob_ids(np.array([ids[0]]), np.array([ids[1]]))[0])

    def _word_id(self, w: str) -> int:
        if w in (BOS, EOS, UNK):
            return self.vocab_.index[w]
        return int(self.vocab_.encode([w])[0])

    def log_likelihood(self, sentences) -> tuple[float, int]:
        """``(sum of natural-log probabilities, number of predicted tokens)``."""
        self._check_fitted()
        prev, nxt = bigram_ids(_as_word_lists(sentences), self.vocab_)
        if len(prev) == 0:
            return 0.0, 0
        return float(np.log(self.prob_ids(prev, nxt)).sum()), len(prev)

    def perplexity(self, sentences) -> float:
        """Per-token perplexity (``</s>`` counted as a token) of ``sentences``."""
        ll, n = self.log_likelihood(sentences)
        if n == 0:
            raise ValueError("no tokens to evaluate")
        return float(np.exp(-ll / n))

    # ---------------------------------------------------------------- files
    def _model_file(self):
        C = self.counts_
        meta = {"params": self.get_params(), "vocab": self.vocab_.words,
                "fit_time": self.fit_time_}
        return meta, {"indptr": C.indptr.astype(np.int64), "indices": C.indices.astype(np.int64),
                      "data": C.data}

    @classmethod
    def _from_model_file(cls, meta, arrays):
        try:
            # files written before the estimator base held the parameters as top-level fields
            params = meta["params"] if "params" in meta else \
                {k: meta[k] for k in ("min_count", "lowercase", "discount") if k in meta}
            model = cls(**cls._params_from_file(params))
            model._validate_params()
            model.vocab_ = Vocabulary(meta["vocab"], bool(model.lowercase), int(model.min_count))
            n = len(model.vocab_)
            # the sparse counts, validated before scipy sees them (fastspectral.io.validate)
            from ..io import validate as V

            indptr = V.get(arrays, "indptr", "int", shape=(n + 1,), dtype=np.int64)
            indices = V.get(arrays, "indices", "int", dtype=np.int64)
            V.check_offsets(indptr, "indptr", indices.shape[0])
            V.check_index(indices, "indices", 0, n)
            data = V.get(arrays, "data", "float", shape=indices.shape)
            V.check_nonneg(data, "data")
            model.counts_ = sp.csr_matrix((data, indices, indptr), shape=(n, n))
            model.fit_time_ = float(meta.get("fit_time", 0.0))
        except ModelFileError:
            raise
        except (KeyError, ValueError, TypeError) as exc:
            raise ModelFileError(f"corrupt Kneser-Ney model file ({exc})") from None
        model._finish()
        return model
