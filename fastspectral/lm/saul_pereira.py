"""The Saul–Pereira latent-state ("aggregate Markov") bigram language model.

    p(w2 | w1) = sum_h r(h | w1) s(w2 | h)          (h = 1..m hidden classes)

learned three ways (Cohen & Collins 2014, section 8):

``method="pivot"``
    The bigram matrix ``C[w1, w2]`` is, up to normalisation, ``p(w1, w2) = sum_h p(h) p(w1 | h)
    s(w2 | h)``: MDP 2 (:func:`fastspectral.linalg.mdp2`) on ``C^T`` — rows ``w2``, CCA
    representation of the left contexts ``w1`` — finds ``m`` anchor words ``w2`` and
    ``s(w2 | h)``.  Only frequent words may be anchors (the ``anchor_top = 100`` most frequent
    second words, seen at least ``anchor_min_count`` times): the farthest-point search otherwise
    picks rare words with one deterministic left context (``angeles``, ``rico``), whose
    context distributions are noise, not classes.  Then ``r(. | w1)`` is,
    for every ``w1`` separately, the maximum-likelihood mixture weight vector of the fixed
    components ``s(. | h)`` on the bigram counts of ``w1`` — a concave problem solved by EM
    (:func:`fastspectral.linalg.mixture_weights_em`, ``r_iterations`` at most).
``method="pivot-em"``
    The pivot estimate, with ``s`` smoothed towards the unigram distribution
    (``(1 - init_smoothing) s + init_smoothing p(w2)``, so that EM can move weights that the
    anchor solution set to exactly 0), then ``iterations`` iterations of standard EM.
``method="em"``
    Standard EM from a random initialisation (``r(. | w1)`` ~ Dirichlet(1); ``s(. | h)`` = the
    unigram distribution times independent Uniform(0.5, 1.5) noise, renormalised), seeded by
    ``random_state``.

EM (for both ``r`` and ``s``) runs in Numba over the nonzeros of the sparse bigram matrix, one
pass over the rows (``r`` update, parallel over ``w1``) and one over the columns (``s`` update,
parallel over ``w2``): ``O(nnz m)`` per iteration.  When ``fit`` (or ``fit_statistics``,
learning from partitions) is given ``dev`` sentences, their perplexity is recorded after every
iteration and the parameters of the best iteration are kept (``best_iteration_``).

Probabilities used for scoring are ``(1 - floor) sum_h r s + floor / |V'|`` (``|V'|``: the
predictable words, all but ``<s>``) with ``floor = 1e-6`` by default: a safety net against
exact zeros, below 1e-6 relative effect otherwise.  Vocabulary, ``<unk>`` and boundary
conventions are those of :mod:`fastspectral.lm.kneser_ney`.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from .._jit import njit, prange

from ..base import Estimator, Interval, PartitionedFit
from ..errors import ModelFileError
from ..linalg import mdp2, mixture_weights_em
from .vocabulary import Vocabulary, _as_word_lists, bigram_ids, bigram_matrix

__all__ = ["LatentBigramLM", "em_step", "pair_loglik"]

METHODS = ("pivot", "pivot-em", "em")
#: EM iterations of each method when ``iterations`` is None
DEFAULT_ITERATIONS = {"pivot": 0, "pivot-em": 10, "em": 100}


@njit(cache=True)
def _ordered_sum(x):  # pragma: no cover - numba
    """Left-to-right sum: the same total whatever the thread count (``x.sum()`` inside a
    ``parallel=True`` function is a parallel reduction whose rounding depends on it)."""
    t = 0.0
    for k in range(x.shape[0]):
        t += x[k]
    return t


@njit(cache=True, parallel=True)
def _em_rows(indptr, indices, data, R, S, rowtot, ratio, Rnew):  # pragma: no cover - numba
    n = indptr.shape[0] - 1
    m = R.shape[1]
    lls = np.zeros(n)
    for i in prange(n):
        acc = np.zeros(m)
        ll = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            den = 0.0
            for h in range(m):
                den += R[i, h] * S[j, h]
            if den > 0.0:
                x = data[k] / den
                ll += data[k] * np.log(den)
            else:
                x = 0.0
                ll += data[k] * -745.0
            ratio[k] = x
            for h in range(m):
                acc[h] += x * S[j, h]
        if rowtot[i] > 0.0:
            for h in range(m):
                Rnew[i, h] = R[i, h] * acc[h] / rowtot[i]
        else:
            for h in range(m):
                Rnew[i, h] = R[i, h]
        lls[i] = ll
    return _ordered_sum(lls)


@njit(cache=True, parallel=True)
def _em_cols(cptr, crow, cpos, ratio, R, S, Snew):  # pragma: no cover - numba
    n = cptr.shape[0] - 1
    m = R.shape[1]
    for j in prange(n):
        acc = np.zeros(m)
        for k in range(cptr[j], cptr[j + 1]):
            x = ratio[cpos[k]]
            i = crow[k]
            for h in range(m):
                acc[h] += x * R[i, h]
        for h in range(m):
            Snew[j, h] = S[j, h] * acc[h]


@njit(cache=True, parallel=True)
def _pair_loglik(prev, nxt, weight, R, S, floor, uniform):  # pragma: no cover - numba
    n = prev.shape[0]
    m = R.shape[1]
    out = np.zeros(n)
    for k in prange(n):
        i = prev[k]
        j = nxt[k]
        p = 0.0
        for h in range(m):
            p += R[i, h] * S[j, h]
        p = (1.0 - floor) * p + floor * uniform
        out[k] = weight[k] * np.log(p) if p > 0.0 else weight[k] * -745.0
    return _ordered_sum(out)


class _EMData:
    """CSR and CSC views of the bigram counts prepared once for :func:`em_step`."""

    def __init__(self, C: sp.csr_matrix):
        C = sp.csr_matrix(C, dtype=np.float64)
        C.sum_duplicates()
        C.sort_indices()
        self.C = C
        self.indptr = C.indptr.astype(np.int64)
        self.indices = C.indices.astype(np.int64)
        self.data = C.data
        self.rowtot = np.asarray(C.sum(axis=1)).ravel()
        pos = sp.csr_matrix((np.arange(1, C.nnz + 1, dtype=np.float64), C.indices, C.indptr),
                            shape=C.shape).tocsc()
        pos.sort_indices()
        self.cptr = pos.indptr.astype(np.int64)
        self.crow = pos.indices.astype(np.int64)
        self.cpos = pos.data.astype(np.int64) - 1
        self.ratio = np.empty(C.nnz)
        self.total = float(C.data.sum())


def em_step(data: _EMData, R: np.ndarray, S: np.ndarray):
    """One EM iteration on the bigram counts; returns ``(R_new, S_new, loglik(R, S))``.

    ``R`` (``n x m``) rows are ``r(. | w1)``; ``S`` (``n x m``) columns are ``s(. | h)``.  The
    returned log-likelihood (natural log, summed over bigram tokens) is that of the INPUT
    parameters; EM guarantees ``loglik(R_new, S_new) >= loglik(R, S)``.
    """
    Rnew = np.empty_like(R)
    Snew = np.empty_like(S)
    ll = _em_rows(data.indptr, data.indices, data.data, R, S, data.rowtot, data.ratio, Rnew)
    _em_cols(data.cptr, data.crow, data.cpos, data.ratio, R, S, Snew)
    colsum = Snew.sum(axis=0)
    Snew /= np.where(colsum > 0, colsum, 1.0)[None, :]
    return Rnew, Snew, ll


def pair_loglik(prev, nxt, weight, R, S, floor=0.0):
    """Sum of ``weight * log p(nxt | prev)`` under ``p = (1 - floor) R S^T + floor / (n - 1)``."""
    n = S.shape[0]
    return float(_pair_loglik(np.asarray(prev, dtype=np.int64), np.asarray(nxt, dtype=np.int64),
                              np.asarray(weight, dtype=np.float64), R, S, float(floor),
                              1.0 / max(n - 1, 1)))


def _unique_pairs(prev, nxt, n):
    key = prev * n + nxt
    uk, cnt = np.unique(key, return_counts=True)
    return uk // n, uk % n, cnt.astype(np.float64)



class LatentBigramLM(PartitionedFit, Estimator):
    """Saul-Pereira latent bigram model ``p(w2 | w1) = sum_h r(h | w1) s(w2 | h)``.

    Parameters
    ----------
    n_states : int, default 8
        Hidden classes ``m``.
    method : {"pivot", "pivot-em", "em"}, default "pivot"
        The learning method (see the module docstring).
    iterations : int or None, default None
        EM iterations; None: 0 / 10 / 100 for ``pivot`` / ``pivot-em`` / ``em``
        (:data:`DEFAULT_ITERATIONS`; the value used is ``iterations_``).
    min_count : int, default 2
        Training words seen fewer times become ``<unk>``.
    lowercase : bool, default True
        Fold words to lower case.
    anchor_min_count : int, default 20
        Words seen fewer times as a second word cannot be anchors (pivot methods).
    anchor_top : int or None, default 100
        Only the ``anchor_top`` most frequent second words may be anchors (None: no limit).
    r_iterations : int, default 300
        EM limit of the concave ``r`` problem of the pivot methods.
    svd_iterations : int, default 6
        Power iterations of the randomised SVD of the pivot methods.
    init_smoothing : float, default 0.1
        ``pivot-em``: weight of the unigram distribution mixed into the pivot ``s`` before EM.
    floor : float, default 1e-6
        Scoring uses ``(1 - floor) sum_h r s + floor / |V'|``; in [0, 1).
    random_state : int or None, default 0
        Seed of the randomised SVD and of the random EM initialisation (None: fresh entropy).

    Attributes
    ----------
    vocab_ : Vocabulary
        The vocabulary.
    r_ : ndarray of shape (n_words, n_states)
        Row ``w1`` is ``r(. | w1)``.
    s_ : ndarray of shape (n_words, n_states)
        Column ``h`` is ``s(. | h)``.
    anchors_ : ndarray of int64
        Anchor word ids (pivot methods; empty for ``em``); :attr:`anchor_words_` names them.
    iterations_ : int
        EM iterations run (``iterations`` resolved).
    train_loglik_ : ndarray
        Per EM iteration, the per-token training log-likelihood of the parameters entering it.
    dev_perplexity_ : ndarray
        Per iteration when ``fit`` (or ``fit_statistics``) was given ``dev`` (index 0 = before
        EM), else empty.
    best_iteration_ : int
        The iteration whose parameters were kept.
    fit_time_ : float
        Seconds spent in the last :meth:`fit`.
    timings_ : dict
        Seconds of the steps of the last :meth:`fit` (counting, mdp2, r_em, em).

    References
    ----------
    L. Saul and F. Pereira, "Aggregate and mixed-order Markov models for statistical language
    processing", EMNLP 1997 (the aggregate Markov model, eq. 2, and its EM updates, eq. 3-4);
    S. B. Cohen and M. Collins, "A provably correct learning algorithm for latent-variable
    PCFGs", ACL 2014, section 8 (the pivot method for this model; MDP 2, figure 2).

    Examples
    --------
    >>> from fastspectral.lm import LatentBigramLM
    >>> sents = [s.split() for s in ["the dog barks", "the cat sleeps", "a dog sleeps",
    ...                              "the dog sleeps", "a cat barks"]] * 3
    >>> lm = LatentBigramLM(n_states=2, method="em", iterations=5, min_count=1).fit(sents)
    >>> lm.r_.shape
    (9, 2)
    >>> lm.iterations_, len(lm.train_loglik_)
    (5, 5)
    >>> 1.0 < lm.perplexity([["a", "dog", "barks"]]) < 10.0
    True
    """

    kind = "latent-bigram-lm"
    input_kind = "sequences"
    #: a language model: ``log_likelihood`` gives ``(nats, predicted events)`` (``lm eval``)
    language_model = True
    #: names of model files written by older versions
    _renamed_params = {"em_iterations": "iterations"}
    _parameter_constraints = {
        "method": set(METHODS), "n_states": Interval(int, 1),
        "iterations": Interval(int, 0, allow_none=True), "min_count": Interval(int, 1),
        "anchor_min_count": Interval(int, 0), "anchor_top": Interval(int, 1, allow_none=True),
        "r_iterations": Interval(int, 1), "svd_iterations": Interval(int, 0),
        "random_state": Interval(int, 0, allow_none=True), "floor": Interval(float, 0.0, 1.0),
        "init_smoothing": Interval(float, 0.0, 1.0, closed="both")}

    def __init__(self, n_states: int = 8, method: str = "pivot", iterations: int | None = None,
                 min_count: int = 2, lowercase: bool = True, anchor_min_count: int = 20,
                 anchor_top: int | None = 100,
                 r_iterations: int = 300, svd_iterations: int = 6, init_smoothing: float = 0.1,
                 floor: float = 1e-6, random_state: int | None = 0):
        self.n_states = n_states
        self.method = method
        self.iterations = iterations
        self.min_count = min_count
        self.lowercase = lowercase
        self.anchor_min_count = anchor_min_count
        self.anchor_top = anchor_top
        self.r_iterations = r_iterations
        self.svd_iterations = svd_iterations
        self.init_smoothing = init_smoothing
        self.floor = floor
        self.random_state = random_state

    # ------------------------------------------------------------------ training
    def fit(self, X, dev=None, vocab: Vocabulary | None = None):
        """Train on ``X`` (lists of words or ``(word, tag)`` pairs).  Returns self.

        ``dev``: optional held-out sentences; their perplexity is tracked after every EM
        iteration and the best iteration's parameters are kept.  ``vocab``: reuse a vocabulary
        (default: built from ``X`` with ``min_count`` / ``lowercase``).
        """
        self._validate_params()
        t_start = time.perf_counter()
        sents = list(_as_word_lists(X))
        if not sents:
            raise ValueError("no training sentences")
        self.vocab_ = vocab if vocab is not None else Vocabulary.build(
            sents, int(self.min_count), bool(self.lowercase))
        prev, nxt = bigram_ids(sents, self.vocab_)
        C = bigram_matrix(prev, nxt, len(self.vocab_))
        return self._fit_bigrams(C, dev, t_start)

    def _fit_bigrams(self, C, dev, t_start):
        """The rest of :meth:`fit` from the bigram counts ``C`` of the vocabulary ``vocab_``
        (also :meth:`fit_statistics`)."""
        iters = DEFAULT_ITERATIONS[self.method] if self.iterations is None \
            else int(self.iterations)
        anchor_min_count = int(self.anchor_min_count)
        anchor_top = None if self.anchor_top is None else int(self.anchor_top)
        init_smoothing = float(self.init_smoothing)
        floor = float(self.floor)
        n = len(self.vocab_)
        m = int(self.n_states)
        data = _EMData(C)
        timings = {"counting": time.perf_counter() - t_start}
        unigram = np.asarray(C.sum(axis=0)).ravel()
        unigram /= unigram.sum()
        dev_pairs = None
        if dev is not None:
            dprev, dnxt = bigram_ids(_as_word_lists(dev), self.vocab_)
            if len(dprev):
                dev_pairs = _unique_pairs(dprev, dnxt, n) + (len(dprev),)
        self.anchors_ = np.zeros(0, dtype=np.int64)
        if self.method in ("pivot", "pivot-em"):
            t0 = time.perf_counter()
            colmass = np.asarray(C.sum(axis=0)).ravel()
            allowed = colmass >= anchor_min_count
            if anchor_top is not None:
                top = np.argsort(-colmass, kind="stable")[:anchor_top]
                mask = np.zeros(n, dtype=bool)
                mask[top] = True
                allowed &= mask
            n_ok = int(np.count_nonzero(allowed))
            if n_ok < m:
                among = "" if anchor_top is None else f" among the {anchor_top} most frequent"
                raise ValueError(f"only {n_ok} words qualify as anchors (seen >= "
                                 f"{anchor_min_count} times as a second word{among}): too "
                                 f"few for {m} states (lower anchor_min_count or raise "
                                 f"anchor_top)")
            res = mdp2(sp.csr_matrix(C.T), m, candidates=allowed,
                       svd_iterations=int(self.svd_iterations), random_state=self.random_state)
            S = np.ascontiguousarray(res.r)
            self.anchors_ = res.anchors
            timings["mdp2"] = time.perf_counter() - t0
            timings.update({"mdp2_" + k: v for k, v in res.timings.items()})
            t0 = time.perf_counter()
            R = mixture_weights_em(C, S, max_iter=int(self.r_iterations), tol=1e-7)
            rowtot = data.rowtot
            R[rowtot == 0] = res.pi  # contexts never seen (</s>): the prior
            timings["r_em"] = time.perf_counter() - t0
            if self.method == "pivot-em":
                S = (1.0 - init_smoothing) * S + init_smoothing * unigram[:, None]
        else:
            rng = np.random.default_rng(self.random_state)
            R = rng.dirichlet(np.ones(m), size=n)
            S = unigram[:, None] * rng.uniform(0.5, 1.5, size=(n, m))
            S /= S.sum(axis=0, keepdims=True)
        R = np.ascontiguousarray(R, dtype=np.float64)
        S = np.ascontiguousarray(S, dtype=np.float64)

        def dev_ppl(R, S):
            if dev_pairs is None:
                return None
            a, b, w, ntok = dev_pairs
            return float(np.exp(-pair_loglik(a, b, w, R, S, floor) / ntok))

        t0 = time.perf_counter()
        train_ll = []
        dev_hist = []
        best = (dev_ppl(R, S), 0, R, S)
        if best[0] is not None:
            dev_hist.append(best[0])
        for it in range(1, iters + 1):
            R, S, ll = em_step(data, R, S)
            train_ll.append(ll / data.total)
            if dev_pairs is not None:
                dp = dev_ppl(R, S)
                dev_hist.append(dp)
                if dp < best[0]:
                    best = (dp, it, R, S)
        if dev_pairs is not None:
            _, self.best_iteration_, R, S = best
        else:
            self.best_iteration_ = iters
        if iters:
            timings["em"] = time.perf_counter() - t0
        self.iterations_ = iters
        self.r_ = R
        self.s_ = S
        self.train_loglik_ = np.asarray(train_ll)
        self.dev_perplexity_ = np.asarray(dev_hist, dtype=np.float64)
        self.fit_time_ = time.perf_counter() - t_start
        self.timings_ = timings
        return self

    # ------------------------------------------------------------------ learning from partitions
    def sufficient_statistics(self, items, context=None):
        """The word and bigram counts (string keys) of a partition of sentences (one pass;
        see :mod:`fastspectral.lm.stats`): the bigram matrix is all that the pivot method and
        EM read, so they run once on the merged counts."""
        from .stats import bigram_statistics

        return bigram_statistics(self, items)

    def fit_statistics(self, stats, context=None, dev=None):
        """Fit from merged :meth:`sufficient_statistics`: the model ``fit(sentences, dev=dev)``
        gives on the concatenated partitions; returns None (fitted).

        ``dev``: optional held-out sentences, as in :meth:`fit` (the best EM iteration by dev
        perplexity is kept).  The dev set is not partitioned: it is read here, once, where EM
        runs on the merged bigram matrix."""
        from .stats import vocabulary_and_counts

        self._validate_params()
        t0 = time.perf_counter()
        self.vocab_, C = vocabulary_and_counts(self, stats)
        self._fit_bigrams(C, dev, t0)
        return None

    # ------------------------------------------------------------------ scoring
    def prob_ids(self, prev, nxt) -> np.ndarray:
        """``p(next | prev)`` for arrays of word ids (with the ``floor``)."""
        self._check_fitted()
        prev = np.asarray(prev, dtype=np.int64)
        nxt = np.asarray(nxt, dtype=np.int64)
        p = np.einsum("ij,ij->i", self.r_[prev], self.s_[nxt])
        floor = float(self.floor)
        return (1.0 - floor) * p + floor / (len(self.vocab_) - 1)

    def prob(self, prev_word: str, word: str) -> float:
        """``p(word | prev_word)``; ``"<s>"`` / ``"</s>"`` name the sentence boundaries."""
        self._check_fitted()
        special = self.vocab_.words[:3]
        ids = [self.vocab_.index[w] if w in special else int(self.vocab_.encode([w])[0])
               for w in (prev_word, word)]
        return float(self.prob_ids([ids[0]], [ids[1]])[0])

    def log_likelihood(self, sentences) -> tuple[float, int]:
        """``(sum of natural-log probabilities, number of predicted tokens)`` of ``sentences``
        (the pair every sequence model's ``log_likelihood`` returns)."""
        self._check_fitted()
        prev, nxt = bigram_ids(_as_word_lists(sentences), self.vocab_)
        if len(prev) == 0:
            return 0.0, 0
        a, b, w = _unique_pairs(prev, nxt, len(self.vocab_))
        return pair_loglik(a, b, w, self.r_, self.s_, float(self.floor)), len(prev)

    def perplexity(self, sentences) -> float:
        """Per-token perplexity (``</s>`` counted, ``<s>`` not) of ``sentences``."""
        ll, n = self.log_likelihood(sentences)
        if n == 0:
            raise ValueError("no tokens to evaluate")
        return float(np.exp(-ll / n))

    @property
    def anchor_words_(self) -> list[str]:
        """The anchor words (pivot methods), one per hidden state."""
        self._check_fitted()
        return [self.vocab_.words[i] for i in self.anchors_]

    # ------------------------------------------------------------------ files
    def _model_file(self):
        meta = {"params": self.get_params(), "vocab": self.vocab_.words,
                "iterations": int(self.iterations_),
                "best_iteration": int(self.best_iteration_), "fit_time": self.fit_time_}
        return meta, {"r": self.r_, "s": self.s_, "anchors": self.anchors_,
                      "train_loglik": self.train_loglik_, "dev_perplexity": self.dev_perplexity_}

    @classmethod
    def _from_model_file(cls, meta, arrays):
        try:
            model = cls(**cls._params_from_file(meta["params"]))
            model._validate_params()
            model.vocab_ = Vocabulary(meta["vocab"], bool(model.lowercase), int(model.min_count))
            # every array validated before use (fastspectral.io.validate)
            from ..io import validate as V

            n, m = len(model.vocab_), int(model.n_states)
            model.r_ = V.check_finite(V.get(arrays, "r", "float", ndim=2, shape=(n, m),
                                            dtype=np.float64), "r")
            model.s_ = V.check_finite(V.get(arrays, "s", "float", ndim=2, shape=(n, m),
                                            dtype=np.float64), "s")
            model.anchors_ = V.check_index(V.get(arrays, "anchors", "int", dtype=np.int64),
                                           "anchors", 0, n)
            model.train_loglik_ = V.get(arrays, "train_loglik", "float")
            model.dev_perplexity_ = V.get(arrays, "dev_perplexity", "float")
            model.best_iteration_ = int(meta["best_iteration"])
            # older files stored the resolved iteration count as the parameter itself
            model.iterations_ = int(meta["iterations"]) if "iterations" in meta else \
                (DEFAULT_ITERATIONS[model.method] if model.iterations is None
                 else int(model.iterations))
            model.fit_time_ = float(meta["fit_time"])
            model.timings_ = {}
            n = len(model.vocab_)
            m = int(model.n_states)
            if model.r_.shape != (n, m) or model.s_.shape != (n, m):
                raise ValueError("parameter shapes do not match the vocabulary")
        except ModelFileError:
            raise
        except (KeyError, ValueError, TypeError) as exc:
            raise ModelFileError(f"corrupt latent bigram model file ({exc})") from None
        return model
