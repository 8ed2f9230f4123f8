"""The sequence HMM estimator: spectral (HKZ 2009), EM (Baum-Welch), or spectral-initialised EM.

See :class:`HMM`.  The learners are in :mod:`fastspectral.hmm.spectral` and
:mod:`fastspectral.hmm.em`; the data layer in :mod:`fastspectral.hmm.data`.

Kept as one module (about 900 lines): the estimator only (parameters, the dispatch of its
three methods, scoring, model files); the learners are :mod:`~fastspectral.hmm.hankel`,
:mod:`~fastspectral.hmm.spectral`, :mod:`~fastspectral.hmm.automaton`,
:mod:`~fastspectral.hmm.starts`, :mod:`~fastspectral.hmm.moment_init` and
:mod:`~fastspectral.hmm.em`.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..base import Estimator, Interval, PartitionedFit
from ..errors import ModelFileError
from .._blas import blas_single_thread
from . import em as _em
from . import hankel as _hk
from . import spectral as _sp
from .data import (FIELDS, Encoded, SymbolTable, canonical, check_sequences, encode,
                   frame_ids, read_training as _read_training, reencode)

__all__ = ["HMM", "METHODS", "DEFAULT_ITERATIONS", "DEFAULT_BACKOFF_WEIGHT",
           "BACKOFF_GRID", "RIDGE_GRID", "MIXING_GRID", "DEFAULT_RIDGE", "DEFAULT_MIXING",
           "SPECTRAL_FLOOR", "NEGATIVE", "SPECTRAL_INITS"]

METHODS = ("spectral", "em", "spectral-em")
#: EM iterations when ``iterations=None``
DEFAULT_ITERATIONS = {"spectral": 0, "em": 100, "spectral-em": 20}
#: interpolation weight of the Kneser-Ney bigram when ``backoff_weight=None`` and ``fit`` has
#: no ``dev`` sequences: the weights the WSJ-tag development split chose at m = 40
#: (docs/notes/hmm.md); EM also scores its development perplexity with it to choose the iteration
DEFAULT_BACKOFF_WEIGHT = {"spectral": 0.05, "em": 0.2, "spectral-em": 0.2}
#: the weights tried on ``dev`` sequences when ``backoff_weight=None``
BACKOFF_GRID = (0.0, 0.001, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: spectral ridges tried on ``dev`` sequences when ``ridge=None`` (else :data:`DEFAULT_RIDGE`)
RIDGE_GRID = (0.5, 1.0, 2.0, 3.0, 5.0)
DEFAULT_RIDGE = 1.0
#: state mixings tried on ``dev`` sequences when ``state_mixing=None`` (else
#: :data:`DEFAULT_MIXING`, the value the WSJ-tag development split chose at m = 40)
MIXING_GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
DEFAULT_MIXING = 0.3
#: uniform share of every spectral prediction, so that the spectral model alone
#: (``backoff_weight=0``) gives every sequence a positive probability
SPECTRAL_FLOOR = 1e-3
#: how the spectral model makes its event weights non-negative
NEGATIVE = ("abs", "clip")
#: starting points of ``method="spectral-em"``
SPECTRAL_INITS = ("classes", "anchors", "moments", "split")
END = "</s>"




class HMM(PartitionedFit, Estimator):
    """Hidden Markov model of symbol sequences: spectral, EM, or spectral-initialised EM.

    A sequence ``x_1 .. x_T`` is scored as ``T + 1`` events (its symbols, then the end of the
    sequence), each predicted from the whole past, and every prediction is interpolated with
    a Kneser-Ney bigram model so that every sequence gets a positive probability::

        p(x_t | x_<t) = (1 - w) p_model(x_t | x_<t) + w p_KN(x_t | x_{t-1})

    ``method="spectral"``
        The observable-operator representation of Hsu, Kakade & Zhang (HKZ): ``b_1``,
        ``b_inf`` and ``B_x`` from the unigram, bigram and trigram moments ``P_1``, ``P_21``,
        ``P_3x1`` and the top-``n_states`` left singular vectors of ``P_21`` (HKZ Algorithm 1,
        eq. 6-8), with the generalised Hankel basis of the SHAG learner (single symbols and
        the ``max_basis`` most frequent length-2 prefixes and suffixes), START / STOP framing
        (the end of a sequence is an event) and a ridge-regularised pseudo-inverse.
        ``p_model`` is HKZ's streaming conditional ``b_inf^T B_x b_t`` (section 3, "conditional
        probabilities"), clipped at 0 and renormalised over all events (see
        :mod:`fastspectral.hmm.spectral`).  No iterations, no local optima: a consistent
        estimator (HKZ Theorem 6).
    ``method="em"``
        Baum-Welch from a random start (seeded by ``random_state``): scaled forward-backward
        compiled and parallel over sequences (:mod:`fastspectral.hmm.em`).
    ``method="spectral-em"``
        Baum-Welch started from HMM parameters read from the data through a spectral step
        (``spectral_init``): ``"classes"`` (default) clusters the (previous symbol, symbol)
        pairs on the top singular vectors of the symbol-context matrix and counts the class
        HMM of the tokens' (soft) classes (:func:`fastspectral.hmm.spectral.hmm_from_token_classes`;
        a spectral clustering, not a moment estimate of the HMM); ``"anchors"``: the CCA
        anchor decomposition of the symbol-context matrix (MDP 2 of Cohen & Collins 2014)
        gives the emissions, least squares through them the transitions
        (:func:`fastspectral.hmm.spectral.hmm_from_anchors`): the pivot+EM idea for sequences;
        ``"moments"``: an HMM matched to the trigram-window moments (EM on the distinct
        weighted windows from the class start and 8 random starts, the best kept;
        :func:`fastspectral.hmm.moment_init.hmm_from_moments`): a moment-matching estimate,
        not the spectral one, and it costs 17-56 corpus EM iterations' CPU on the WSJ tags;
        ``"split"``: the same window objective without restarts, by progressive state
        splitting from the class start at ``m / 8`` states, beside the class start at ``m``
        fitted directly, the better window likelihood kept
        (:func:`fastspectral.hmm.moment_init.hmm_by_splitting`; 6-16 corpus EM iterations'
        CPU on the WSJ tags).

    Parameters
    ----------
    n_states : int, default 16
        Hidden states ``m`` (the rank of the spectral model: at most the Hankel basis size,
        ``#symbols + 1 + max_basis``).
    method : {"spectral", "em", "spectral-em"}, default "spectral"
        The estimation algorithm (above).
    field : {"word", "tag", "upos", "xpos"}, default "word"
        What the model reads from a token when sequences are read from files
        (:func:`fastspectral.trees.corpus.read_sequences`): words, or POS tags.
    iterations : int or None, default None
        EM iterations (None: 100 for ``"em"``, 20 for ``"spectral-em"``; unused by
        ``"spectral"``).  With ``dev`` sequences, the iteration with the best development
        perplexity is kept.
    tol : float or None, default None
        EM: stop early when an iteration raises the training log-likelihood by less than
        ``tol`` nats per event (None: run all ``iterations``).
    backoff_weight : float in [0, 1) or None, default None
        Weight ``w`` of the Kneser-Ney bigram in every prediction.  None: chosen among
        :data:`BACKOFF_GRID` on the ``dev`` sequences given to :meth:`fit`, else
        :data:`DEFAULT_BACKOFF_WEIGHT` (0.05 spectral, 0.2 EM).  With 0, a sequence the model
        gives no weight gets probability 0.
    ridge : float or None, default 1.0
        Spectral learning: the pseudo-inverse ``(U^T P)^+ = V diag(1/s)`` becomes
        ``V diag(s / (s^2 + lam^2))``, ``lam = ridge / sqrt(#sequences)`` (the order of the
        Hankel block's sampling noise; 0 is HKZ's plain pseudo-inverse).  None: chosen among
        :data:`RIDGE_GRID` on the ``dev`` sequences (perplexity of the spectral model alone),
        else :data:`DEFAULT_RIDGE`.
    state_mixing : float in [0, 1) or None, default None
        Spectral scoring (a stabilised streaming filter): after each symbol ``x`` the state is
        ``(1 - s) B_x v / (b_inf^T B_x v) + s f_x``, ``f_x`` the averaged state after ``x``
        (``U^T P[:, x]``, normalised), which keeps the filter near the span of states the
        training data reached.  None: chosen among :data:`MIXING_GRID` on the ``dev``
        sequences (with the ridge), else :data:`DEFAULT_MIXING`.
    negative : {"abs", "clip"}, default "abs"
        Spectral scoring: the weights ``b_inf^T B_x v`` of the next events are made
        non-negative by their absolute values (the fix for negative spectral marginals of
        Cohen et al. 2013) or by clipping at 0; then renormalised and mixed with the uniform
        distribution (share :data:`SPECTRAL_FLOOR`).
    max_basis : int, default 512
        Length-2 prefixes and suffixes added to the Hankel basis (0: HKZ's single symbols).
    min_count : int, default 1
        Training symbols seen fewer times become the unknown symbol ``<unk>``.
    max_vocab : int or None, default None
        Vocabulary cap of the hidden-state model: it sees the ``max_vocab`` most frequent
        symbols one by one and every other symbol (with ``<unk>``) as one shared unknown
        symbol, which emits them in proportion to their training counts (the Kneser-Ney
        bigram keeps every symbol).  None: no cap.
    lowercase : bool, default False
        Lower-case tokens before looking them up.
    random_state : int or None, default 0
        Seed of EM's random start, of the spectral initialiser's random projection and
        k-means and of the randomized SVD (None: fresh entropy).
    spectral_init : {"classes", "anchors", "moments", "split"}, default "classes"
        The starting point of ``method="spectral-em"`` (above); "classes" reached random-start
        EM's converged development perplexity within a fifth of its iterations in 6 of 9
        (m, seed) cases on the WSJ tags, "anchors" in 2, "moments" in 9, "split" in 8-9
        (test: 3, -, 6, 4 of 9; with the start's own CPU counted as EM iterations: 3, -, 0, 3;
        docs/notes/hmm.md).

    Attributes
    ----------
    symbols_ : SymbolTable
        The symbols (id 0 = ``<unk>``).
    n_states_ : int
        Hidden states of the fitted model (the spectral rank may be lower than ``n_states``
        when the Hankel block has a lower rank).
    operators_ : SpectralOperators or None
        The spectral model (``method="spectral"``).
    start_, trans_, emit_ : ndarray or None
        The HMM (EM methods): ``start_[h]``, ``trans_[h, h']``, ``emit_[h, x]`` over the
        symbols and the end (``x = len(symbols_)``).
    smoother_ : KneserNeyBigramLM
        The Kneser-Ney bigram of the interpolation.
    backoff_weight_ : float
        The interpolation weight used.
    ridge_, state_mixing_ : float
        The spectral ridge and state mixing used (``ridge_`` None and ``state_mixing_`` 0 for
        the EM methods).
    train_loglik_, dev_perplexity_ : ndarray
        EM: per-event training log-likelihood of the parameters entering each iteration, and
        the development perplexity before EM and after each iteration (when ``dev`` is given).
    best_iteration_ : int
        The EM iteration kept.
    iterations_run_ : int
        EM iterations run (fewer than ``iterations`` when ``tol`` stopped them).
    fit_time_ : float
        Seconds spent in the last :meth:`fit`.
    timings_ : dict
        Seconds per training stage.

    References
    ----------
    D. Hsu, S. M. Kakade and T. Zhang, "A Spectral Algorithm for Learning Hidden Markov
    Models", COLT 2009 / JCSS 2012: the observable representation (Lemma 3 and the
    definitions of ``b_1``, ``b_inf``, ``B_x`` as eq. 6-8 of Algorithm 1, with ``U`` from
    the SVD of ``P_21``), joint and conditional probabilities (section 3), consistency
    (Theorem 6).  B. Balle, X. Carreras, F. M. Luque and A. Quattoni, "Spectral learning of
    weighted automata", Machine Learning 2014 (generalised Hankel bases).  L. R. Rabiner, "A
    tutorial on hidden Markov models", Proc. IEEE 1989 (scaled forward-backward).  S. B.
    Cohen, K. Stratos, M. Collins, D. P. Foster and L. Ungar, "Spectral Learning Algorithms for
    Natural Language Processing", NAACL tutorial 2013.

    Examples
    --------
    >>> from fastspectral.hmm import HMM
    >>> train = [["DT", "NN", "VBZ"], ["DT", "JJ", "NN", "VBZ"], ["NNS", "VBP"],
    ...          ["DT", "NN", "VBD", "DT", "NN"]] * 50
    >>> model = HMM(n_states=3, method="spectral", field="tag").fit(train)
    >>> model.predict_next([["DT"]])
    ['NN']
    >>> ll, n = model.log_likelihood([["DT", "NN", "VBZ"]])
    >>> n
    4
    >>> bool(ll < 0)
    True
    """

    kind = "hmm"
    input_kind = "sequences"
    _parameter_constraints = {
        "n_states": Interval(int, 1), "method": set(METHODS), "field": set(FIELDS),
        "iterations": Interval(int, 0, allow_none=True),
        "tol": Interval(float, 0.0, allow_none=True),
        "backoff_weight": Interval(float, 0.0, 1.0, allow_none=True),
        "ridge": Interval(float, 0.0, allow_none=True),
        "state_mixing": Interval(float, 0.0, 1.0, allow_none=True), "negative": set(NEGATIVE),
        "max_basis": Interval(int, 0), "min_count": Interval(int, 1),
        "max_vocab": Interval(int, 1, allow_none=True), "lowercase": "boolean",
        "random_state": Interval(int, 0, allow_none=True), "spectral_init": set(SPECTRAL_INITS)}
    #: a language model: ``log_likelihood`` gives ``(nats, predicted events)`` (``lm eval``)
    language_model = True

    def __init__(self, n_states: int = 16, method: str = "spectral", field: str = "word",
                 iterations: int | None = None, backoff_weight: float | None = None,
                 tol: float | None = None, ridge: float | None = 1.0,
                 state_mixing: float | None = None, negative: str = "abs",
                 max_basis: int = 512, min_count: int = 1,
                 max_vocab: int | None = None, lowercase: bool = False,
                 random_state: int | None = 0, spectral_init: str = "classes"):
        self.n_states = n_states
        self.method = method
        self.field = field
        self.iterations = iterations
        self.tol = tol
        self.backoff_weight = backoff_weight
        self.ridge = ridge
        self.state_mixing = state_mixing
        self.negative = negative
        self.max_basis = max_basis
        self.min_count = min_count
        self.max_vocab = max_vocab
        self.lowercase = lowercase
        self.random_state = random_state
        self.spectral_init = spectral_init

    # ------------------------------------------------------------------ training
    def fit(self, X, dev=None):
        """Learn the model from ``X`` (lists of strings, or their encoding).

        Parameters
        ----------
        X : list of list of str, or Encoded
            Training sequences (e.g. from :func:`fastspectral.trees.corpus.read_sequences`), or
            those sequences encoded once (:meth:`encode`, ``Encoded.from_sequences``, or
            integer ids with their vocabulary: ``Encoded.from_ids(ids, lengths, symbols)``):
            the same model, without hashing the tokens in every fit (the encoding is
            checked: ids in range, offsets consistent).
        dev : list of list of str, or Encoded, optional
            Development sequences: EM keeps the iteration with the best development
            perplexity, and ``backoff_weight=None`` is chosen on them.

        Returns
        -------
        self
        """
        t_start = time.perf_counter()
        self._validate_params()
        n_seqs, table, full, counts = _training_input(X, int(self.min_count),
                                                      bool(self.lowercase))
        if not n_seqs:
            raise ValueError("no training sequences")
        if isinstance(dev, Encoded):
            dev.check("dev")
            dev_seqs = dev
        else:
            dev_seqs = check_sequences(dev, "dev") if dev is not None else None
        # drop a previous fit's state
        for k in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, k)
        timings = {}
        self.symbols_ = table
        self._set_rare_weights(full, counts)
        M = self.n_latent_symbols_
        enc = self._latent(full)
        H = None
        if self.method in ("spectral", "spectral-em"):
            t0 = time.perf_counter()
            H = _sp.dense_hankel(enc, M, int(self.max_basis)) or \
                _sp.hankel_data(enc, M, int(self.max_basis))
            timings["hankel"] = time.perf_counter() - t0
        # without a vocabulary cap the Hankel pass's pair counts are the smoother's bigrams
        pairs = H.pairs if isinstance(H, _sp.DenseHankel) and enc is full else None
        self._fit_smoother(full, counts, pairs)
        timings["counting"] = time.perf_counter() - t_start - timings.get("hankel", 0.0)
        if isinstance(dev_seqs, Encoded):
            dev_full = reencode(dev_seqs, table, "dev") if dev_seqs.n_sequences else None
        else:
            dev_full = encode(dev_seqs, table) if dev_seqs else None
        dev_png = self._ngram_probs(dev_full) if dev_full is not None else None
        dev_enc = self._latent(dev_full) if dev_full is not None else None
        dev_rw = self._event_rare_weights(dev_full) if dev_full is not None else None
        seed = self.random_state
        self.operators_ = None
        self.start_ = self.trans_ = self.emit_ = None
        self.train_loglik_ = np.zeros(0)
        self.dev_perplexity_ = np.zeros(0)
        self.best_iteration_ = 0
        self.iterations_run_ = 0
        self.state_mixing_ = 0.0
        self.ridge_ = None
        if self.method == "spectral":
            t0 = time.perf_counter()
            self._fit_spectral(enc, M, H, seed, dev_full)
            self.n_states_ = self.operators_.n_states
            timings["spectral"] = time.perf_counter() - t0
        else:
            t0 = time.perf_counter()
            rng = np.random.default_rng(seed)
            if self.method == "spectral-em" and self.spectral_init == "anchors":
                start, trans, emit = _sp.hmm_from_anchors(H, int(self.n_states), seed)
                timings["spectral_init"] = time.perf_counter() - t0
            elif self.method == "spectral-em" and self.spectral_init == "moments":
                from .moment_init import hmm_from_moments
                start, trans, emit = hmm_from_moments(H, int(self.n_states), seed)
                timings["spectral_init"] = time.perf_counter() - t0
            elif self.method == "spectral-em" and self.spectral_init == "split":
                from .moment_init import hmm_by_splitting
                start, trans, emit = hmm_by_splitting(H, int(self.n_states), seed)
                timings["spectral_init"] = time.perf_counter() - t0
            elif self.method == "spectral-em":
                start, trans, emit = _sp.hmm_from_token_classes(H, int(self.n_states), seed)
                timings["spectral_init"] = time.perf_counter() - t0
            else:
                unigram = np.bincount(enc.ids, minlength=M + 1).astype(np.float64)
                unigram[M] = enc.n_sequences
                unigram = (unigram + 1e-3) / (unigram.sum() + 1e-3 * (M + 1))
                start, trans, emit = _em.random_init(M, int(self.n_states), unigram, rng)
            self._run_em(enc, start, trans, emit, dev_enc, dev_png, dev_rw, timings)
            self.n_states_ = int(self.start_.shape[0])
        if self.backoff_weight is not None:
            self.backoff_weight_ = float(self.backoff_weight)
        elif dev_full is not None and dev_full.n_sequences:
            q = self._model_probs(dev_full)
            self.backoff_weight_ = min(BACKOFF_GRID,
                                       key=lambda w: -_total_loglik(q, dev_png, w))
        else:
            self.backoff_weight_ = DEFAULT_BACKOFF_WEIGHT[self.method]
        self.timings_ = timings
        self.fit_time_ = time.perf_counter() - t_start
        return self

    def _fit_spectral(self, enc, M, H, seed, dev_full) -> None:
        """Operators, ridge and state mixing: those set, else chosen on ``dev_full`` by the
        perplexity of the spectral model alone (``backoff_weight=0``), else the defaults."""
        has_dev = dev_full is not None and dev_full.n_sequences > 0
        ridges = [float(self.ridge)] if self.ridge is not None else \
            (list(RIDGE_GRID) if has_dev else [DEFAULT_RIDGE])
        mixings = [float(self.state_mixing)] if self.state_mixing is not None else \
            (list(MIXING_GRID) if has_dev else [DEFAULT_MIXING])
        best = None
        for ridge in ridges:
            op = _sp.learn_operators(enc, M, int(self.n_states), int(self.max_basis), ridge,
                                     random_state=seed, hankel=H)
            if len(ridges) * len(mixings) == 1:
                best = (0.0, ridge, mixings[0], op)
                break
            self.operators_ = op
            for mix in mixings:
                self.state_mixing_ = mix
                with np.errstate(divide="ignore"):
                    score = -float(np.log(self._model_probs(dev_full)).sum())
                if best is None or score < best[0]:
                    best = (score, ridge, mix, op)
        _, self.ridge_, self.state_mixing_, self.operators_ = best

    def _fit_smoother(self, enc: Encoded, counts=None, pairs=None) -> None:
        """The Kneser-Ney bigram over this model's symbols (``fastspectral.lm``), built from
        the encoded ids: the vocabulary, bigram counts and discounts ``KneserNeyBigramLM.fit``
        gives on the symbol strings (tested equal), without re-reading the strings.
        ``pairs``: the framed-bigram counts of ``enc`` (``DenseHankel.pairs``), if known."""
        t0 = time.perf_counter()
        if counts is None:
            counts = np.bincount(enc.ids, minlength=len(self.symbols_))
        kn, kid = self._smoother_vocabulary(counts)
        V = len(kn.vocab_)
        if pairs is not None:             # the (M + 2)^2 framed-bigram table, regrouped
            M = len(self.symbols_)
            cp, cs = pairs
            B = cs.reshape(M + 2, M + 2).astype(np.float64)     # symbol -> symbol / STOP
            B[M, :M] = cp.reshape(M + 2, M + 2)[M, :M]          # START -> symbol
            B[M, M + 1] = np.count_nonzero(enc.offsets[1:] == enc.offsets[:-1])  # empty
            K = np.zeros((M + 2, V))
            K[np.arange(M), kid] = 1.0
            K[M, 0] = K[M + 1, 1] = 1.0                          # <s>, </s>
            counts = K.T @ B @ K
        elif V * V <= _hk._DENSE_COUNT:   # one compiled pass: the same CSR as bigram_matrix
            counts = _hk._bigram_counts(enc.offsets, enc.ids, kid, V)
        else:
            from ..lm.vocabulary import bigram_matrix

            n = enc.n_sequences
            framed = frame_ids(enc, kid[enc.ids], 0, 1)      # <s> x </s>
            starts = enc.offsets[1:] + 2 * np.arange(1, n + 1) - 1   # every sequence's </s>
            keep = np.ones(len(framed) - 1, dtype=bool)
            keep[starts[:-1]] = False                   # no bigram from </s> to the next <s>
            counts = bigram_matrix(framed[:-1][keep], framed[1:][keep], V)
        self._finish_smoother(kn, counts, t0)

    def _smoother_vocabulary(self, counts):
        """``(KneserNeyBigramLM with its vocabulary, symbol id -> KN id)`` from the symbol
        counts: the seen symbols, most frequent first (ties in string order)."""
        from ..lm.kneser_ney import BOS, EOS, UNK, KneserNeyBigramLM, Vocabulary

        syms = self.symbols_.symbols
        M = len(syms)
        seen = [i for i in range(1, M) if counts[i] > 0]
        seen.sort(key=lambda i: (-counts[i], syms[i]))
        kn = KneserNeyBigramLM(min_count=1, lowercase=False)
        kn.vocab_ = Vocabulary([BOS, EOS, UNK] + [syms[i] for i in seen], lowercase=False,
                               min_count=1)
        kid = np.full(M, 2, dtype=np.int64)
        kid[np.asarray(seen, dtype=np.int64)] = 3 + np.arange(len(seen))
        return kn, kid

    def _finish_smoother(self, kn, counts, t0) -> None:
        """The smoother from its bigram counts (dense array or CSR)."""
        if isinstance(counts, np.ndarray):
            counts = sp.csr_matrix(_hk._dense_to_csr(counts), shape=counts.shape)
        kn.counts_ = counts
        kn._finish()
        kn.fit_time_ = time.perf_counter() - t0
        self._set_smoother(kn)

    def _set_smoother(self, kn) -> None:
        self.smoother_ = kn
        index = kn.vocab_.index
        # <unk> (symbol 0) is KN's <unk> (id 2); every other symbol was seen in training
        self._kn_ids = np.array([2] + [index.get(s, 2) for s in self.symbols_.symbols[1:]],
                                dtype=np.int64)

    def _set_rare_weights(self, full: Encoded, counts=None) -> None:
        """The latent vocabulary: symbols ``1..K`` (the ``max_vocab`` most frequent) are their
        own latent symbols; ``<unk>`` and the rarer symbols share latent symbol 0, which emits
        each of them with weight ``count / (their total count)``.  ``counts``: the counts per
        symbol id, if known (else those of ``full``)."""
        M = len(self.symbols_)
        K = M - 1 if self.max_vocab is None else min(int(self.max_vocab), M - 1)
        counts = np.bincount(full.ids, minlength=M).astype(np.float64) if counts is None else \
            np.asarray(counts, dtype=np.float64).copy()
        counts[1:K + 1] = 0.0
        tot = counts.sum()
        w = counts / tot if tot > 0 else counts
        w[1:K + 1] = 1.0
        self.rare_weight_ = w
        self.n_latent_symbols_ = K + 1

    def _floor(self) -> np.ndarray:
        """The spectral model's uniform share, spread over the latent events that can occur
        (latent symbol 0 only when it emits some symbol, i.e. when there are rare symbols)."""
        K1 = self.n_latent_symbols_
        ok = np.ones(K1 + 1)
        if not self.rare_weight_[0] > 0 and not (K1 < len(self.rare_weight_)):
            ok[0] = 0.0
        return SPECTRAL_FLOOR * ok / ok.sum()

    def _latent(self, full: Encoded) -> Encoded:
        """``full`` with every symbol beyond the cap mapped to latent symbol 0."""
        K = self.n_latent_symbols_ - 1
        if K == len(self.symbols_) - 1:
            return full                                 # no cap: the same symbols
        return Encoded(full.offsets, np.where(full.ids <= K, full.ids, 0))

    def _event_rare_weights(self, full: Encoded) -> np.ndarray:
        """Per event: the weight of the observed symbol within its latent symbol (1 for the
        symbols below the cap and for the end)."""
        n = full.n_sequences
        w = np.ones(len(full.ids) + n)
        is_tok = np.ones(len(w), dtype=bool)
        is_tok[full.offsets[1:] + np.arange(n)] = False
        w[is_tok] = self.rare_weight_[full.ids]
        return w

    def _run_em(self, enc, start, trans, emit, dev_enc, dev_png, dev_rw, timings):
        iters = DEFAULT_ITERATIONS[self.method] if self.iterations is None else \
            int(self.iterations)
        w = DEFAULT_BACKOFF_WEIGHT[self.method] if self.backoff_weight is None else \
            float(self.backoff_weight)

        def dev_ppl(s, t, e):
            q = _em.filtering(dev_enc, s, t, e) * dev_rw
            return float(np.exp(-_total_loglik(q, dev_png, w) / len(q)))

        t0 = time.perf_counter()
        train_ll, dev_hist = [], []
        best = (np.inf, 0, start, trans, emit)
        if dev_enc is not None and dev_enc.n_sequences:
            best = (dev_ppl(start, trans, emit), 0, start, trans, emit)
            dev_hist.append(best[0])
        n_events = enc.n_events
        tol = None if self.tol is None else float(self.tol)
        self.iterations_run_ = iters
        prev = (start, trans, emit)
        for it in range(1, iters + 1):
            start, trans, emit, ll = _em.em_step(enc, start, trans, emit)
            train_ll.append(ll / n_events)
            if tol is not None and len(train_ll) >= 2 and train_ll[-1] - train_ll[-2] < tol:
                # the step into the current parameters gained less than tol: converged
                # (train_ll[-1] is the log-likelihood of the parameters entering this step)
                start, trans, emit = prev
                self.iterations_run_ = it - 1
                break
            prev = (start, trans, emit)
            if dev_hist:
                p = dev_ppl(start, trans, emit)
                dev_hist.append(p)
                if p < best[0]:
                    best = (p, it, start, trans, emit)
        if dev_hist:
            _, self.best_iteration_, start, trans, emit = best
        else:
            self.best_iteration_ = self.iterations_run_
        timings["em"] = time.perf_counter() - t0
        self.start_, self.trans_, self.emit_ = start, trans, emit
        self.train_loglik_ = np.asarray(train_ll)
        self.dev_perplexity_ = np.asarray(dev_hist)

    # ------------------------------------------------------------------ partitioned learning
    def prepare_partition(self, items):
        from ..base import Partition

        seqs = check_sequences(items, "sequences")
        return Partition(seqs, len(seqs))

    def sufficient_statistics(self, items, context=None):
        """The mergeable statistics of a partition of sequences for the pass of ``context``
        (``method="spectral"``; four passes: tokens, smoother bigrams and length-2 string
        counts, the Hankel block, the projected trigram sums; see
        :mod:`fastspectral.hmm.stats`)."""
        from . import stats as S

        part = self._as_partition(items)
        if context is None:
            self._check_partitioned()
            return S.token_counts(self, part)
        return {"pairs": S.pair_counts, "hankel": S.hankel_counts,
                "operators": S.operator_counts}[context.stage](part, context)

    def _check_partitioned(self):
        self._validate_params()
        if self.method != "spectral":
            raise ValueError(f"partitioned learning is implemented for method='spectral', "
                             f"not {self.method!r}")

    def fit_statistics(self, stats, context=None):
        """One estimate from merged statistics: the next pass's context, or None once fitted
        (the model ``fit(sequences)`` gives on the concatenated partitions, without ``dev``:
        ridge, state mixing and interpolation weight as given or their defaults)."""
        from . import stats as S

        if context is None:
            self._check_partitioned()
            for k in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
                delattr(self, k)
            self._partition_t0 = time.perf_counter()
            self.symbols_, counts = S.symbol_table(self, stats)
            self._set_rare_weights(None, counts)
            kn, kid = self._smoother_vocabulary(counts)
            self._partition_kn = kn
            if (self.n_latent_symbols_ + 2) ** 2 > _hk._DENSE_COUNT:
                raise ValueError("partitioned learning needs dense count tables: at most "
                                 f"{int(_hk._DENSE_COUNT ** 0.5) - 2} latent symbols (use "
                                 "max_vocab)")
            return S.PassContext("pairs", self.symbols_, self.n_latent_symbols_, kid,
                                 len(kn.vocab_))
        M = context.M
        if context.stage == "pairs":
            bigrams = stats.bigrams
            if not isinstance(bigrams, np.ndarray):         # merged CSR: canonical form
                bigrams = sp.csr_matrix(bigrams)
                bigrams.sum_duplicates()
                bigrams.sort_indices()
            self._finish_smoother(self._partition_kn, bigrams, self._partition_t0)
            del self._partition_kn
            k = int(self.max_basis)
            pc, sc = _hk._dense_top(stats.prefix_pairs, k), _hk._dense_top(stats.suffix_pairs, k)
            n_rows, n_cols = M + 1 + len(sc), M + 1 + len(pc)
            if n_rows * n_cols > _hk._DENSE_COUNT:
                raise ValueError("partitioned learning needs a dense Hankel block (lower "
                                 "max_basis or the number of symbols)")
            B2 = (M + 2) * (M + 2)
            ptab = np.full(B2, -1, dtype=np.int64)
            ptab[pc] = M + 1 + np.arange(len(pc))
            stab = np.full(B2, -1, dtype=np.int64)
            stab[sc] = M + 1 + np.arange(len(sc))
            return context.next("hankel", basis=(ptab, stab, n_rows, n_cols))
        if context.stage == "hankel":
            if stats.n_sequences == 0:
                raise ValueError("no training sequences")
            scale = 1.0 / stats.n_sequences
            self._partition_hankel = (stats.P * scale, stats.n * scale, stats.n_sequences)
            ridge = DEFAULT_RIDGE if self.ridge is None else float(self.ridge)
            P = self._partition_hankel[0]
            with blas_single_thread():
                U, X, sv = _sp._projections(P, int(self.n_states), ridge, 1e-10,
                                            stats.n_sequences, self.random_state)
            self._partition_svd = (U, X, sv, ridge)
            return context.next("operators", U=U, X=X)
        P, n, n_seq = self._partition_hankel
        U, X, sv, ridge = self._partition_svd
        del self._partition_hankel, self._partition_svd
        self.operators_ = _sp.finish_operators(P, n, M, U, X, sv, stats.A * (1.0 / n_seq))
        self.n_states_ = self.operators_.n_states
        self.ridge_ = ridge
        self.state_mixing_ = DEFAULT_MIXING if self.state_mixing is None else \
            float(self.state_mixing)
        self.backoff_weight_ = DEFAULT_BACKOFF_WEIGHT["spectral"] if \
            self.backoff_weight is None else float(self.backoff_weight)
        self.start_ = self.trans_ = self.emit_ = None
        self.train_loglik_ = np.zeros(0)
        self.dev_perplexity_ = np.zeros(0)
        self.best_iteration_ = 0
        self.iterations_run_ = 0
        self.fit_time_ = time.perf_counter() - self._partition_t0
        self.timings_ = {}
        del self._partition_t0
        return None

    # ------------------------------------------------------------------ scoring internals
    def _encode(self, sequences, what="sequences") -> Encoded:
        self._check_fitted()
        if isinstance(sequences, Encoded):
            sequences.check(what)
            return reencode(sequences, self.symbols_, what)
        return encode(check_sequences(sequences, what), self.symbols_)

    def encode(self, sequences) -> Encoded:
        """``sequences`` (lists of strings) encoded once, for repeated fits and scoring:
        :meth:`Encoded.from_sequences <fastspectral.hmm.data.Encoded.from_sequences>` with
        this model's ``lowercase``.  ``fit(model.encode(seqs))`` learns the model
        ``fit(seqs)`` learns (the same symbols, ids and arrays) without hashing the tokens;
        integer ids with their vocabulary (hmmlearn's ``fit(X, lengths)`` input) come in
        through :meth:`Encoded.from_ids <fastspectral.hmm.data.Encoded.from_ids>`."""
        return Encoded.from_sequences(sequences, bool(self.lowercase))

    def _ngram_probs(self, enc: Encoded) -> np.ndarray:
        """``p_KN(event | previous symbol)`` of every event of ``enc``."""
        n = enc.n_sequences
        kid = self._kn_ids[enc.ids]
        ev = len(enc.ids) + n
        prev = np.empty(ev, dtype=np.int64)
        nxt = np.empty(ev, dtype=np.int64)
        first = enc.offsets[:-1] + np.arange(n)      # event index of each sequence's start
        end = enc.offsets[1:] + np.arange(n)         # event index of each sequence's end
        is_tok = np.ones(ev, dtype=bool)
        is_tok[end] = False
        nxt[is_tok] = kid
        nxt[end] = 1                                  # </s>
        prev[1:] = np.where(is_tok[:-1], nxt[:-1], 0)
        prev[first] = 0                               # <s>
        return self.smoother_.prob_ids(prev, nxt)

    def _model_probs(self, full: Encoded) -> np.ndarray:
        """``p_model(event | past)`` of every event of ``full`` (NaN: the spectral model gives
        no event a positive weight; the n-gram then predicts alone)."""
        enc = self._latent(full)
        if self.operators_ is not None:
            q, resets = _sp.spectral_conditionals(
                self.operators_, enc, absolute=self.negative == "abs",
                mixing=self.state_mixing_, floor=self._floor())
            self.last_resets_ = int(resets.sum())
        else:
            q = _em.filtering(enc, self.start_, self.trans_, self.emit_)
        return q * self._event_rare_weights(full)

    def _event_probs(self, enc: Encoded) -> np.ndarray:
        q = self._model_probs(enc)
        return _mix(q, self._ngram_probs(enc), self.backoff_weight_)

    # ------------------------------------------------------------------ scoring
    def log_likelihood(self, sequences) -> tuple[float, int]:
        """``(total natural-log probability, number of predicted events)`` of ``sequences``;
        the events are the tokens and the end of every sequence."""
        enc = self._encode(sequences)
        if enc.n_events == 0:
            return 0.0, 0
        p = self._event_probs(enc)
        with np.errstate(divide="ignore"):
            return float(np.log(p).sum()), int(enc.n_events)

    def perplexity(self, sequences) -> float:
        """Per-event perplexity ``exp(-log_likelihood / events)`` (the end counted)."""
        ll, n = self.log_likelihood(sequences)
        if n == 0:
            raise ValueError("no events to evaluate")
        return float(np.exp(-ll / n))

    def log_probability(self, sequences) -> np.ndarray:
        """``log p(x)`` (natural log) of every sequence under the interpolated model."""
        enc = self._encode(sequences)
        p = self._event_probs(enc)
        with np.errstate(divide="ignore"):
            lp = np.log(p)
        seq = np.repeat(np.arange(enc.n_sequences), enc.lengths + 1)
        return np.bincount(seq, weights=lp, minlength=enc.n_sequences)

    def conditional_probabilities(self, sequences) -> list:
        """Per sequence, the ``T + 1`` streaming probabilities ``p(x_t | x_<t)`` of its tokens
        and of its end (interpolated model)."""
        enc = self._encode(sequences)
        p = self._event_probs(enc)
        cut = enc.offsets[1:] + np.arange(1, enc.n_sequences + 1)
        return np.split(p, cut[:-1]) if enc.n_sequences else []

    def raw_log_probability(self, sequences):
        """``(log |p(x)|, sign)`` per sequence of the model alone, without interpolation or
        clipping: the spectral estimate ``b_inf^T B_{x_T} .. B_{x_1} b_1`` (which can be 0 or
        negative: sign 0 / -1), or the HMM's forward probability."""
        full = self._encode(sequences)
        enc = self._latent(full)
        if self.operators_ is not None:
            lp, sign = _sp.raw_log_probability(self.operators_, enc)
        else:
            lp = _em.log_probability(enc, self.start_, self.trans_, self.emit_)
            sign = np.where(np.isfinite(lp), 1.0, 0.0)
        with np.errstate(divide="ignore"):
            lw = np.log(self.rare_weight_[full.ids])
        seq = np.repeat(np.arange(full.n_sequences), full.lengths)
        lp = lp + np.bincount(seq, weights=lw, minlength=full.n_sequences)
        sign = np.where(np.isfinite(lp), sign, 0.0)
        return lp, sign

    def next_distribution(self, prefixes) -> np.ndarray:
        """``[len(prefixes), len(symbols_) + 1]``: the distribution of the next event after each
        prefix (column ``j`` is ``symbols_.symbols[j]``, the last column the end)."""
        full = self._encode(prefixes, "prefixes")
        enc = self._latent(full)
        n, M, K1 = full.n_sequences, len(self.symbols_), self.n_latent_symbols_
        if self.operators_ is not None:
            op = self.operators_
            V = _sp.spectral_prefix_states(op, enc, absolute=self.negative == "abs",
                                           mixing=self.state_mixing_)
            g = np.empty((n, K1 + 1))
            g[:, :K1] = V @ op.W.T
            g[:, K1] = V @ op.beta
            g = np.abs(g) if self.negative == "abs" else np.clip(g, 0.0, None)
            Z = g.sum(axis=1, keepdims=True)
            fl = self._floor()
            ql = np.where(Z > 0, (1.0 - fl.sum()) * g / np.where(Z > 0, Z, 1.0) + fl[None, :],
                          np.nan)
        else:
            ql = _em.prefix_states(enc, self.start_, self.trans_, self.emit_) @ self.emit_
        # latent symbols -> symbols (rarer symbols share latent symbol 0), then the end
        col = np.append(np.where(np.arange(M) < K1, np.arange(M), 0), K1)
        q = ql[:, col] * np.append(self.rare_weight_, 1.0)[None, :]
        last = np.zeros(n, dtype=np.int64)           # <s> for an empty prefix
        nonempty = full.lengths > 0
        last[nonempty] = self._kn_ids[full.ids[full.offsets[1:][nonempty] - 1]]
        targets = np.append(self._kn_ids, 1)        # symbols, then </s>
        png = self.smoother_.prob_ids(np.repeat(last, M + 1), np.tile(targets, n))
        return _mix(q.ravel(), png, self.backoff_weight_).reshape(n, M + 1)

    def predict_next(self, prefixes) -> list:
        """The most probable next symbol after each prefix (``"</s>"``: the end)."""
        d = self.next_distribution(prefixes)
        labels = self.symbols_.symbols + [END]
        return [labels[j] for j in np.argmax(d, axis=1)]

    # ------------------------------------------------------------------ model files
    def _model_file(self):
        kn_meta, kn_arrays = _smoother_state(self.smoother_)
        meta = {"params": self.get_params(), "symbols": self.symbols_.symbols,
                "lowercase": bool(self.symbols_.lowercase),
                "n_latent_symbols": self.n_latent_symbols_,
                "backoff_weight": self.backoff_weight_, "best_iteration": self.best_iteration_,
                "state_mixing": self.state_mixing_, "ridge": self.ridge_,
                "fit_time": self.fit_time_, "smoother": kn_meta}
        arrays = {"kn_" + k: v for k, v in kn_arrays.items()}
        arrays["rare_weight"] = self.rare_weight_
        arrays["train_loglik"] = self.train_loglik_
        arrays["dev_perplexity"] = self.dev_perplexity_
        if self.operators_ is not None:
            op = self.operators_
            arrays.update(alpha1=op.alpha1, A=op.A, beta=op.beta, c=op.c, W=op.W,
                          fallback=op.fallback, singular_values=op.singular_values)
        else:
            arrays.update(start=self.start_, trans=self.trans_, emit=self.emit_)
        return meta, arrays

    @classmethod
    def _from_model_file(cls, meta, arrays):
        from ..lm.kneser_ney import KneserNeyBigramLM

        try:
            from ..io import validate as V

            # every float array: numeric and finite (shapes are checked below)
            f = lambda k: V.check_finite(V.get(arrays, k, "float", ndim=None,  # noqa: E731
                                               dtype=np.float64), k)
            model = cls(**cls._params_from_file(meta["params"]))
            if "negative" not in meta["params"]:     # files before the option: clipping
                model.negative = "clip"
            model.symbols_ = SymbolTable(meta["symbols"], bool(meta["lowercase"]))
            M = len(model.symbols_)
            kn = KneserNeyBigramLM._from_model_file(
                meta["smoother"], {k[3:]: v for k, v in arrays.items() if k.startswith("kn_")})
            model._set_smoother(kn)
            model.rare_weight_ = f("rare_weight")
            K1 = int(meta["n_latent_symbols"])
            model.n_latent_symbols_ = K1
            if model.rare_weight_.shape != (M,) or not 1 <= K1 <= M:
                raise ValueError("rare-symbol weights do not match the symbols")
            model.backoff_weight_ = float(meta["backoff_weight"])
            model.state_mixing_ = float(meta.get("state_mixing", 0.0))
            model.ridge_ = None if meta.get("ridge") is None else float(meta["ridge"])
            model.best_iteration_ = int(meta["best_iteration"])
            model.fit_time_ = float(meta["fit_time"])
            model.train_loglik_ = np.asarray(arrays["train_loglik"], dtype=np.float64)
            model.dev_perplexity_ = np.asarray(arrays["dev_perplexity"], dtype=np.float64)
            model.timings_ = {}
            model.operators_ = None
            model.start_ = model.trans_ = model.emit_ = None
            if "A" in arrays:
                op = _sp.SpectralOperators(f("alpha1"), f("A"), f("beta"), f("c"), f("W"),
                                           f("fallback"), f("singular_values"))
                n = op.n_states
                if op.alpha1.shape != (n,) or op.A.shape != (K1, n, n) or \
                        op.W.shape != (K1, n) or op.fallback.shape != (K1, n) or \
                        op.beta.shape != (n,) or op.c.shape != (n,):
                    raise ValueError("operator shapes do not match the symbols")
                model.operators_ = op
                model.n_states_ = n
            else:
                model.start_, model.trans_, model.emit_ = f("start"), f("trans"), f("emit")
                m = model.start_.shape[0]
                if model.trans_.shape != (m, m) or model.emit_.shape != (m, K1 + 1):
                    raise ValueError("HMM parameter shapes do not match the symbols")
                model.n_states_ = m
        except ModelFileError:
            raise
        except (KeyError, ValueError, TypeError, IndexError) as exc:
            raise ModelFileError(f"corrupt hmm model file ({exc})") from None
        return model


def _training_input(sequences, min_count: int, lowercase: bool):
    """``(number of sequences, SymbolTable, Encoded, tokens per symbol id)`` of the training
    input: lists of strings (:func:`~fastspectral.hmm.data.read_training`) or an input
    :class:`~fastspectral.hmm.data.Encoded` (checked, then the table and ids the strings
    would give, by :func:`~fastspectral.hmm.data.canonical`)."""
    if isinstance(sequences, Encoded):
        sequences.check("sequences")
        src = sequences.symbols
        if src.lowercase and not lowercase:
            raise ValueError("the sequences were encoded lower-cased; this model has "
                             "lowercase=False (encode them with lowercase=False)")
        table, full, counts = canonical(src.symbols, np.asarray(sequences.offsets, np.int64),
                                        np.ascontiguousarray(sequences.ids, dtype=np.int64),
                                        min_count, lowercase, src.lowercase, src)
        return full.n_sequences, table, full, counts
    seqs, table, full, counts = _read_training(sequences, min_count, lowercase)
    return len(seqs), table, full, counts


def _mix(q, png, w):
    """``(1 - w) q + w png``, and ``png`` where ``q`` is NaN."""
    return np.where(np.isnan(q), png, (1.0 - w) * np.nan_to_num(q) + w * png)


def _total_loglik(q, png, w) -> float:
    with np.errstate(divide="ignore"):
        return float(np.log(_mix(q, png, w)).sum())


def _smoother_state(kn):
    """``(meta, arrays)`` of the Kneser-Ney model (its own model-file content)."""
    return kn._model_file()
