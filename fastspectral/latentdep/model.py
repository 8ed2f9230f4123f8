"""The spectral latent-variable dependency model (Dhillon, Rodu, Collins, Foster & Ungar 2012).

Kept as one module (about 820 lines): one estimator whose ``fit`` is section 3 of the paper
end to end (moments, projections, parameters; the STOP extension beside the equations it
augments), its scoring and its model file; the kernels are in the sibling modules already.

Model (section 2).  The structure ``y`` of a dependency tree is given; each word ``x_i`` has a
hidden state ``h_i``; roots draw their state from ``pi``, a left (right) child from its head's
state by ``T_L`` (``T_R``), each word from its state by ``O``.  The model scores
``p(x | y)``: for re-ranking the k-best trees of one sentence the words are the same and only
``y`` changes.

Word representation.  Word ``x`` is its eigenword ``u(x)`` (``k`` dimensions, the dictionary
``U`` of :mod:`fastspectral.embeddings`; learned from the training words when no file is
given).  ``M = E[u(x) | h]`` (``k x m``) must have rank ``m``.  What is estimated is the model
with the emission ``p(x | h)`` replaced by its smoothed version ``u(x)^T M[:, h]`` (exactly
``p(x | h)`` for one-hot representations, ``embeddings="one-hot"``): a constant factor per word
for a fixed ``u``, which cancels between trees of the same sentence.

Observable parameters (section 3.3).  The paper's full text was not at hand, so the construction
below is derived here from the observable-operator method (Hsu, Kakade & Zhang 2009; Cohen et
al. 2012), with the paper's names for the quantities; the ``(eq. n)`` labels number the
equations of this docstring, not the paper's.  It is checked against brute-force summation over
hidden states in ``tests/test_latentdep.py``.
Sums run over the training trees; ``L(i)`` / ``R(i)`` are the left / right children of ``i``::

    Sigma_d = sum_{arcs i -> j, direction d} u(x_j) u(x_i)^T                       (eq. 1)
    W       = top-m right singular vectors of [Sigma_L; Sigma_R]  (range of M)      (eq. 2)
    V_d     = top-m left singular vectors of Sigma_d             (range of M T_d)
    mu      = mean of u(x_r) over root words r;       c_1 = W^T mu                   (eq. 3)
    K       = sum_i sum_{l in L(i), r in R(i)} u(x_l) (x) u(x_i) (x) u(x_r)         (eq. 4)
                (the trigram tensor: left child, head, right child)
    Delta_L = sum_i |L(i)| sum_{r in R(i)} V_R^T u(x_r) (W^T u(x_i))^T              (eq. 5)
    Delta_R = sum_i |R(i)| sum_{l in L(i)} V_L^T u(x_l) (W^T u(x_i))^T
    E_L[:, :, j] = Delta_L^+ K_L[:, :, j],  K_L[a, b, j] = K(W[:, j], W[:, b], V_R[:, a])    (eq. 6)
                   (K's slots: left child, head, right child)
    E_R[:, :, j] = Delta_R^+ K_R[:, :, j],  K_R[a, b, j] = K(V_L[:, a], W[:, b], W[:, j])
    D(x) c_inf = W^T u(x)                                                           (eq. 7)

Under the model, with ``A = W^T M``, ``E_d[:, :, j] = A^-T diag(T_d^T M^T W e_j) A^T`` and
``c_1 = A pi``: the recursion of Algorithm 1 (:func:`fastspectral.latentdep.kernels.tree_log_prob`)
then computes ``eta_i = A^-T beta_i`` for the inside vector ``beta_i[h] = p(subtree words |
h_i = h)``, and ``c_1 . eta_root = p(x | y)``.  The node weights hidden in ``K`` and ``Delta``
cancel, so any set of nodes (here those with children on both sides) estimates them.
``Delta^+`` is a ridge pseudo-inverse (``ridge`` relative to the largest singular value).

STOP (valency) events (``stop_events=True``; an extension of the paper's model, the geometric
valency of the DMV, Klein & Manning 2004, and of head automata).  A node in state ``h`` draws
its children on side ``d`` iid from ``m + 1`` states: real ``c`` with ``(1 - s_d(h)) T_d(c |
h)``, STOP with ``s_d(h)``, after which it stops; the score is ``p(x, valency | y) = p(x | y)
prod_{i, d} (1 - s_d(h_i)) ** n_d(i) s_d(h_i)`` (summed over states).  Its observable form is
eq. 1-7 on augmented data: every real node gets one STOP pseudo-child per side (outermost, no
children) with the vector ``w_s e_STOP`` (a new coordinate, ``w_s = stop_weight``), added to
the statistics without building tokens (:meth:`LatentDependencyModel._stop_operators`)::

    Sigma'_d = [Sigma_d; w_s sum_i u(x_i)^T]                                       (eq. 1s)
    W   = top-m right singular vectors of [Sigma'_L; Sigma'_R];  V_d = top-m left singular
          vectors of Sigma'_d ((k+1)-dimensional: the STOP coordinate; heads are never STOP,
          so Sigma'_d has rank m)                                                  (eq. 2s)
    SL'_i = sum_{l in L(i)} V_L^T u(x_l) + w_s V_L^T e_STOP,  |L'(i)| = |L(i)| + 1 (and R)
    K_L = sum_i SR'_i (x) W^T u(x_i) (x) sum_{l in L(i)} W^T u(x_l);
    Delta_L = sum_i |L'(i)| SR'_i (W^T u(x_i))^T   (every real node)               (eq. 4s, 5s)
    E_L[:, :, j] = Delta_L^+ K_L[:, :, j];  S_L = Delta_L^+ sum_i SR'_i (W^T u(x_i))^T  (eq. 6s)
    c_1 = W^T mu;  D(x) c_inf = W^T u(x)                                           (eq. 3s, 7s)

``S_L`` is the STOP slice of the edge operator applied to the STOP child's start vector,
divided by its emission ``w_s ** 2``.  Under the model (Wald's identity for the geometric
counts) ``E_d[:, :, j] = A^-T diag((1 - s_d) T_d^T M^T W e_j) A^T`` and ``S_d = A^-T diag(s_d)
A^T``; Algorithm 1 applies ``S_L`` after a node's left children and ``S_R`` after its right
ones.  ``stop_adjacency=True``: two STOP symbols per side (no real child / some), ``S_d`` of
shape ``(2, m, m)`` (the DMV's adjacency as an emission of the side's class: on trees of the
geometric model it estimates ``p(x, valency | y) prod_{i, d} P(class_d(i) | h_i)``).
``tests/test_latentdep_stop.py`` checks both against brute force from the exact population
moments.

Negative estimates.  Finite samples can make ``p-hat`` negative (or zero).  :meth:`log_prob`
returns ``log |p-hat|`` and, with ``return_sign=True``, the sign; ``p-hat == 0`` gives
``log_floor``.  For re-ranking use ``log |p-hat|`` (plus the sign as a second feature).  With
eigenwords (signed entries) the smoothed emission ``u(x)^T M[:, h]`` is not a per-word constant
times ``p(x | h)`` and can be negative: on the WSJ sample about half of all trees, gold ones
included, get a negative estimate (docs/notes/rerank.md).  :meth:`fragment_log_prob` gives local
scores (each node with its children) whose errors do not compound along the tree.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..base import Interval, Parser

__all__ = ["LatentDependencyModel", "LatentDepParseStats"]

ONE_HOT = "one-hot"


@dataclass
class LatentDepParseStats:
    """What happened to the trees of the last :meth:`LatentDependencyModel.parse` call
    (``last_parse_stats_``).

    Attributes
    ----------
    sentences : int
        Trees scored.
    words : int
        Words of those trees.
    unknown_words : int
        Words outside the vocabulary ``words_``, scored with the unknown word's vector.
    unknown_tags : int
        With tags (``tag_column_``): words whose tag was not seen in training (the unknown
        tag's block); 0 without tags.
    negative : int
        Trees whose estimate ``p-hat`` is negative (annotated ``latent_dep_sign = -1``; the
        score is ``log |p-hat|``).
    fallback : int
        Trees whose estimate is exactly 0 or not finite: given ``log_floor``.
    """

    sentences: int = 0
    words: int = 0
    unknown_words: int = 0
    unknown_tags: int = 0
    negative: int = 0
    fallback: int = 0


class LatentDependencyModel(Parser):
    """Spectral latent-variable dependency model: ``p-hat(words | tree)`` from eigenwords.

    Parameters
    ----------
    n_states : int
        ``m``: hidden states (at most the dimension of the word vectors).
    embeddings : str, Eigenwords or None
        Eigenword dictionary: a file written by ``fastspectral train eigenwords``, a fitted
        :class:`~fastspectral.embeddings.Eigenwords`, ``"one-hot"`` (indicator vectors of the
        training words: exact probabilities, small vocabularies only), or None: eigenwords of
        dimension ``dim`` learned from the training sentences' words.
    dim : int
        Dimension of the eigenwords learned when ``embeddings`` is None.
    tag_column : None, "upos", "xpos" or "auto"
        None: each word is its eigenword (the paper).  Otherwise the part-of-speech tag of that
        column (``auto``: XPOS when the treebank has them, else UPOS) is appended to the word's
        vector as a one-hot block weighted by ``tag_weight``.
    tag_weight : float
        Weight of the tag block (the eigenwords have unit length).
    ridge : float
        Ridge of the pseudo-inverses of ``Delta_L`` / ``Delta_R``, relative to their largest
        singular value (0.3: chosen on a WSJ dev split, docs/notes/latentdep.md; a consistent
        estimate needs a small one, e.g. 1e-3, as the sample grows).
    stop_events : bool
        Also score valency: a STOP event per node and side (the module docstring, eq. 1s-7s;
        an extension of the paper's model).  Default False: the paper's ``p(x | y)``.
    stop_weight : float
        ``w_s``, the weight of the STOP coordinate of the augmented vectors (the eigenwords
        have unit length); cancels in the population, changes the estimate with a ridge.
    stop_adjacency : bool
        With ``stop_events``: two STOP symbols per side, for a side without and with children
        (the DMV's adjacency).
    log_floor : float
        ``log_prob`` of a tree whose estimate is exactly 0 (or not finite).
    random_state : int
        Seed of the randomized SVDs (and of the eigenwords learned).
    jobs : int or None
        Threads of ``log_prob`` (None: every core available).

    Attributes
    ----------
    words_ : list of str -- the vocabulary (``words_[0]`` is the unknown word)
    leaf_ : ndarray ``(len(words_), m)`` -- ``D(x) c_inf = W^T u(x)`` of each word
    tags_ : list of str -- the tags (``tags_[0]`` the unknown tag; empty without tags)
    leaf_tags_ : ndarray ``(len(tags_), m)`` -- the tags' part of ``W^T u(x)``
    tag_column_ : str or None -- the DepSentence column the tags come from
    E_L_, E_R_ : ndarray (m, m, m) -- the edge operators
    c1_ : ndarray (m,) -- the root functional
    stop_L_, stop_R_ : ndarray (m, m), (2, m, m) with ``stop_adjacency``, or None -- the STOP
        operators (None without ``stop_events``)
    singular_values_ : ndarray (m,) -- of ``[Sigma_L; Sigma_R]``
    lowercase_ : bool -- words are lower-cased before look-up
    fit_time_ : float
    last_parse_stats_ : LatentDepParseStats -- counters of the last :meth:`parse` call

    References
    ----------
    Paramveer S. Dhillon, Jordan Rodu, Michael Collins, Dean P. Foster and Lyle H. Ungar
    (2012).  Spectral Dependency Parsing with Latent Variables.  EMNLP-CoNLL 2012, 205-213.

    Examples
    --------
    >>> from fastspectral.latentdep.synthetic import LatentDependencyGenerator
    >>> g = LatentDependencyGenerator(n_states=2, n_words=6, seed=0)
    >>> model = LatentDependencyModel(n_states=2, embeddings="one-hot", ridge=1e-3)
    >>> model = model.fit(g.sample(2000))
    >>> test = g.sample(3, seed=9)
    >>> lp = model.log_prob(test)
    >>> bool(np.all(np.abs(lp - g.log_prob(test)) < 0.5))
    True
    >>> model.log_prob(test[:1] * 2, heads=[test[0].heads, [0] + [1] * (len(test[0]) - 1)]).shape
    (2,)
    """

    kind = "latent-dep"
    input_kind = "dependency"
    #: names of model files written by older versions
    _renamed_params = {"tags": "tag_column"}
    _parameter_constraints = {
        "n_states": Interval(int, 1), "dim": Interval(int, 1), "ridge": Interval(float, 0.0),
        "tag_column": {None, "upos", "xpos", "auto"}, "stop_events": "boolean",
        "stop_adjacency": "boolean",
        "stop_weight": Interval(float, 0.0, float("inf"), closed="neither"),
        "log_floor": Interval(float, -float("inf"), float("inf"), closed="neither")}

    def __init__(self, n_states=8, embeddings=None, dim=30, tag_column=None, tag_weight=1.0,
                 ridge=0.3, stop_events=False, stop_weight=1.0, stop_adjacency=False,
                 log_floor=-1e4, random_state=0, jobs=None):
        self.n_states = n_states
        self.stop_events = stop_events
        self.stop_weight = stop_weight
        self.stop_adjacency = stop_adjacency
        self.embeddings = embeddings
        self.tag_column = tag_column
        self.tag_weight = tag_weight
        self.dim = dim
        self.ridge = ridge
        self.log_floor = log_floor
        self.random_state = random_state
        self.jobs = jobs

    # ------------------------------------------------------------------------------------------
    def _check_params(self):
        if self.stop_adjacency and not self.stop_events:
            raise ValueError("stop_adjacency=True needs stop_events=True")

    @staticmethod
    def _check_sentences(sentences, what="fit"):
        from ..base import check_dep_sentences
        from ..trees.conll import DepSentence, as_dep_sentences

        if isinstance(sentences, (str, bytes)) or isinstance(sentences, DepSentence):
            raise TypeError(f"{what} takes a list of DepSentence objects")
        sentences = as_dep_sentences(sentences)        # nltk DependencyGraphs converted
        # each distinct object once (the candidates of a k-best list repeat their sentence)
        uniq = list({id(s): s for s in sentences}.values())
        for s in uniq:
            if not isinstance(s, DepSentence):
                raise TypeError(f"{what} takes DepSentence objects (fastspectral.trees.conll), "
                                f"got {type(s).__name__}")
        if len(uniq) == len(sentences):
            return check_dep_sentences(sentences, "sentences")
        try:
            check_dep_sentences(uniq, "sentences")
        except TypeError:
            check_dep_sentences(sentences, "sentences")     # the error with its index
            raise
        return sentences

    def _features(self, sentences):
        """``(words, F, lowercase)``: the vocabulary, its feature matrix (``None`` = one-hot)."""
        from ..embeddings.eigenwords import Eigenwords, load_embeddings

        emb = self.embeddings
        if isinstance(emb, str) and emb == ONE_HOT:
            from collections import Counter
            counts = Counter(w for s in sentences for w in s.words)
            words = ["<unk>"] + sorted(counts, key=lambda w: (-counts[w], w))
            return words, None, False
        if emb is None:
            ew = Eigenwords(dim=int(self.dim), random_state=self.random_state)
            ew.fit([s.words for s in sentences])
        else:
            ew = load_embeddings(emb)
        return list(ew.words_), np.ascontiguousarray(ew.embeddings_, np.float64), \
            bool(ew.lowercase)

    def _ids(self, sentences, index, lowercase):
        """Vocabulary ids of every token (one look-up per distinct sentence object)."""
        cache: dict[int, np.ndarray] = {}
        out = []
        for s in sentences:
            key = id(s)
            ids = cache.get(key)
            if ids is None:
                ws = s.words
                if lowercase:
                    ids = np.fromiter((index.get(w.lower(), 0) for w in ws), np.int64, len(ws))
                else:
                    ids = np.fromiter((index.get(w, 0) for w in ws), np.int64, len(ws))
                cache[key] = ids
            out.append(ids)
        return out

    @staticmethod
    def _structure(sentences, heads=None):
        """``(offsets, parent)``: token ranges and local 0-based heads (-1 roots)."""
        lens = np.fromiter((len(s.words) for s in sentences), np.int64, len(sentences))
        offsets = np.zeros(len(sentences) + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        src = heads if heads is not None else [s.heads for s in sentences]
        if len(src) == 0:
            return offsets, np.zeros(0, np.int64)
        if all(isinstance(h, np.ndarray) and h.ndim == 1 for h in src):
            parent = np.concatenate(src).astype(np.int64) - 1      # one copy (k-best lists)
        else:
            parent = np.concatenate([np.asarray(h, np.int64).reshape(-1) for h in src]) - 1
        if parent.shape[0] != offsets[-1]:
            bad = [i for i, (h, n) in enumerate(zip(src, lens)) if len(h) != n][0]
            raise ValueError(f"heads[{bad}] has {len(src[bad])} entries for a sentence of "
                             f"{lens[bad]} words")
        return offsets, parent

    def _raise_invalid(self, sentences, status, heads):
        from .kernels import STATUS_CYCLE, STATUS_NOROOT

        bad = int(np.flatnonzero(status)[0])
        why = {STATUS_CYCLE: "a cycle", STATUS_NOROOT: "no root"}.get(
            int(status[bad]), "a head out of range (or unknown)")
        if heads is not None:
            raise ValueError(f"heads[{bad}] is not a dependency tree: {why}")
        line = getattr(sentences[bad], "line", None)
        if line is not None:             # a sentence read from a file: the CLI adds the path
            from ..errors import FormatError
            raise FormatError(f"sentence {bad + 1} is not a dependency tree: {why}", None, line)
        raise ValueError(f"sentence {bad + 1} is not a dependency tree: {why}")

    # ------------------------------------------------------------------------------------------
    def fit(self, X):
        """Estimate the observable parameters from dependency trees (DepSentence objects)."""
        from ..linalg.svd import randomized_svd
        from .kernels import check_trees

        t0 = time.perf_counter()
        self._validate_params()
        sentences = self._check_sentences(X)
        if not sentences or not any(len(s.words) for s in sentences):
            raise ValueError("no training trees")
        m = int(self.n_states)
        words, F, lowercase = self._features(sentences)
        index = {w: i for i, w in enumerate(words)}
        V = len(words)
        offsets, parent = self._structure(sentences)
        status = check_trees(offsets, parent)
        if status.any():
            self._raise_invalid(sentences, status, None)
        ids = np.concatenate(self._ids(sentences, index, lowercase))
        N = ids.shape[0]
        column = self._tag_column(sentences)
        tag_list = []
        if column is not None:
            tag_list = ["<unk>"] + sorted({t for s in sentences for t in getattr(s, column)})
            tids = np.concatenate(self._tag_ids(sentences, column, tag_list))
        # token features u(x_i) (N x k): the word's vector, then the weighted one-hot tag
        if F is None:
            X = sp.csr_matrix((np.ones(N), (np.arange(N), ids)), shape=(N, V))
        else:
            X = F[ids]
        kw = X.shape[1]
        if column is not None:
            Tg = sp.csr_matrix((np.full(N, float(self.tag_weight)), (np.arange(N), tids)),
                               shape=(N, len(tag_list)))
            X = sp.hstack([X, Tg]).tocsr() if sp.issparse(X) else np.hstack([X, Tg.toarray()])
        k = X.shape[1]
        if m > k:
            raise ValueError(f"n_states={m} exceeds the dimension of the word vectors ({k})")
        sent_of = np.repeat(np.arange(len(sentences)), np.diff(offsets))
        tok = np.arange(N)
        has_head = parent >= 0
        gpar = np.where(has_head, offsets[sent_of] + parent, -1)
        left = has_head & (tok < gpar)
        right = has_head & (tok > gpar)

        def moment(mask):               # sum over arcs of u(child) u(head)^T      (eq. 1)
            out = X[tok[mask]].T @ X[gpar[mask]]
            return out.tocsr() if sp.issparse(out) else np.asarray(out)

        rs = self.random_state if self.random_state is not None else 0
        if self.stop_events:
            # children sums per head (sparse N x N adjacency of left / right arcs)
            A_L = sp.csr_matrix((np.ones(int(left.sum())), (gpar[left], tok[left])),
                                shape=(N, N))
            A_R = sp.csr_matrix((np.ones(int(right.sum())), (gpar[right], tok[right])),
                                shape=(N, N))
            nL = np.asarray(A_L.sum(axis=1)).ravel()
            nR = np.asarray(A_R.sum(axis=1)).ravel()
            SL, SR = A_L @ X, A_R @ X
            if sp.issparse(X):
                SL, SR = SL.tocsr(), SR.tocsr()
            root_mean = np.asarray(X[~has_head].mean(axis=0)).ravel()
            adj = bool(self.stop_adjacency)
            W, E_L, E_R, S_L, S_R, mu_w, s_all = self._stop_operators(
                X, SL, SR, nL, nR, None, root_mean, m, rs, randomized_svd,
                aL=(nL > 0).astype(np.float64) if adj else None,
                aR=(nR > 0).astype(np.float64) if adj else None)
            self.stop_L_ = np.ascontiguousarray(S_L, np.float64)
            self.stop_R_ = np.ascontiguousarray(S_R, np.float64)
            return self._set_fitted(W, F, kw, words, tag_list, column, E_L, E_R, mu_w, s_all,
                                    lowercase, index, t0)
        self.stop_L_ = self.stop_R_ = None
        Sig_L, Sig_R = moment(left), moment(right)
        stack = sp.vstack([Sig_L, Sig_R]).tocsr() if sp.issparse(Sig_L) else \
            np.vstack([Sig_L, Sig_R])
        _, s_all, Wt = self._svd(stack, m, rs, randomized_svd)                  # eq. 2
        W = Wt.T                                                                  # k x m
        V_L = self._svd(Sig_L, m, rs, randomized_svd)[0]
        V_R = self._svd(Sig_R, m, rs, randomized_svd)[0]
        Hw = np.asarray(X @ W)                     # W^T u(x_i) per token (N x m)
        PL, PR = np.asarray(X @ V_L), np.asarray(X @ V_R)
        roots = ~has_head
        mu_w = Hw[roots].mean(axis=0)                                             # eq. 3
        # children sums per head (sparse N x N adjacency of left / right arcs)
        A_L = sp.csr_matrix((np.ones(int(left.sum())), (gpar[left], tok[left])), shape=(N, N))
        A_R = sp.csr_matrix((np.ones(int(right.sum())), (gpar[right], tok[right])), shape=(N, N))
        nL = np.asarray(A_L.sum(axis=1)).ravel()
        nR = np.asarray(A_R.sum(axis=1)).ravel()
        both = (nL > 0) & (nR > 0)
        if both.sum() < m:
            raise ValueError(f"too few nodes with both left and right children "
                             f"({int(both.sum())}) to estimate {m} states")
        SLw, SRw = A_L @ Hw, A_R @ Hw                  # W-projected child sums
        SLv, SRv = A_L @ PL, A_R @ PR                  # V_d-projected child sums
        b = np.flatnonzero(both)
        # eq. 4-6: K contracted with (W e_j, W, V_R) and (V_L, W, W e_j); Delta_L / Delta_R
        K_L = np.einsum("na,nb,nj->abj", SRv[b], Hw[b], SLw[b])
        K_R = np.einsum("na,nb,nj->abj", SLv[b], Hw[b], SRw[b])
        D_L = (SRv[b] * nL[b, None]).T @ Hw[b]
        D_R = (SLv[b] * nR[b, None]).T @ Hw[b]
        E_L = np.einsum("ac,cbj->abj", self._pinv(D_L), K_L)
        E_R = np.einsum("ac,cbj->abj", self._pinv(D_R), K_R)
        return self._set_fitted(W, F, kw, words, tag_list, column, E_L, E_R, mu_w, s_all,
                                lowercase, index, t0)

    def _set_fitted(self, W, F, kw, words, tag_list, column, E_L, E_R, mu_w, s_all,
                    lowercase, index, t0):
        m = int(self.n_states)
        # eq. 7: D(x) c_inf = W^T u(x), split into the word's part and the tag's part
        leaf = W[:kw] if F is None else F @ W[:kw]
        self.words_ = words
        self.leaf_ = np.ascontiguousarray(leaf, np.float64)
        self.tags_ = tag_list
        self.tag_column_ = column
        self.leaf_tags_ = np.ascontiguousarray(W[kw:] * float(self.tag_weight), np.float64)
        self.E_L_ = np.ascontiguousarray(E_L, np.float64)
        self.E_R_ = np.ascontiguousarray(E_R, np.float64)
        self.c1_ = np.ascontiguousarray(mu_w, np.float64)
        self.singular_values_ = np.asarray(s_all[:m], np.float64)
        self.lowercase_ = bool(lowercase)
        self._index = index
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _stop_operators(self, X, SL, SR, nL, nR, weights, root_mean, m, seed,
                        randomized_svd, aL=None, aR=None):
        """The observable operators of the model with valency (``stop_events=True``) from
        node statistics: ``(W, E_L, E_R, S_L, S_R, c_1, singular values)``.

        Every real node ``i`` (row ``i``, weight ``weights[i]``; None: 1) has the vector
        ``X[i] = u(x_i)``, the sums ``SL[i]`` / ``SR[i]`` of its real left / right children's
        vectors and their numbers ``nL[i]`` / ``nR[i]``; ``root_mean`` is the mean root vector.
        The data are augmented, without building pseudo-tokens, by one STOP pseudo-child on
        each side of every real node (outermost, no children) whose vector is ``w_s e_STOP``
        (a new coordinate ``k``; ``w_s = stop_weight``; words are 0 there), and eq. 1-7 are
        applied to the augmented data (eq. 1s-7s of the module docstring).  With ``aL`` /
        ``aR`` (``stop_adjacency``) there are two STOP symbols per side, ``e_STOP0`` (the side
        has no real child) and ``e_STOP1`` (it has one or more), ``aL[i]`` being the weight of
        the second (the indicator ``nL[i] > 0`` on data, its probability for population
        moments); ``S_d`` is then ``(2, m, m)``, one operator per symbol.  Fitting on trees
        passes one row per token; :meth:`LatentDependencyGenerator.population_moments
        <fastspectral.latentdep.synthetic.LatentDependencyGenerator.population_moments>` passes
        one row per hidden state with the exact expectations (the tests)."""
        sw = float(self.stop_weight)
        n, k = X.shape
        w = np.ones(n) if weights is None else np.asarray(weights, np.float64)
        Xw = X.multiply(w[:, None]).tocsr() if sp.issparse(X) else X * w[:, None]
        ones = np.ones(n)

        def classes(a):                # weights of the STOP symbols of each node (one side)
            if a is None:
                return [ones]
            a = np.asarray(a, np.float64)
            return [1.0 - a, a]

        cls_L, cls_R = classes(aL), classes(aR)

        def aug(S, cls):               # eq. 1s: [Sigma_d; w_s sum_i c_i u(x_i)^T], (k+C) x k
            Sig = S.T @ Xw
            rows = np.vstack([np.asarray((Xw.multiply(c[:, None]) if sp.issparse(Xw) else
                                          Xw * c[:, None]).sum(axis=0)).reshape(1, k) * sw
                              for c in cls]) if aL is not None else \
                np.asarray(Xw.sum(axis=0)).reshape(1, k) * sw
            if sp.issparse(Sig):
                return sp.vstack([Sig, sp.csr_matrix(rows)]).tocsr()
            return np.vstack([np.asarray(Sig), rows])

        Sig_L, Sig_R = aug(SL, cls_L), aug(SR, cls_R)
        stack = sp.vstack([Sig_L, Sig_R]).tocsr() if sp.issparse(Sig_L) else \
            np.vstack([Sig_L, Sig_R])
        _, s_all, Wt = self._svd(stack, m, seed, randomized_svd)                 # eq. 2s
        W = Wt.T                                                     # k x m (heads: real)
        V_L = self._svd(Sig_L, m, seed, randomized_svd)[0]           # (k+C) x m (children)
        V_R = self._svd(Sig_R, m, seed, randomized_svd)[0]
        Hw = np.asarray(X @ W)
        SLw, SRw = np.asarray(SL @ W), np.asarray(SR @ W)

        def stop_part(V, cls):         # the STOP child's w_s V_d[k + c], per node
            if len(cls) == 1:
                return sw * V[k][None, :]
            return sw * sum(c[:, None] * V[k + j][None, :] for j, c in enumerate(cls))

        # V_d-projected child sums, the STOP child included
        SLv = np.asarray(SL @ V_L[:k]) + stop_part(V_L, cls_L)
        SRv = np.asarray(SR @ V_R[:k]) + stop_part(V_R, cls_R)
        nL1 = np.asarray(nL, np.float64) + 1.0          # children with the STOP child
        nR1 = np.asarray(nR, np.float64) + 1.0

        def trigram(P, C):             # sum_i w_i P[i, a] Hw[i, b] C[i, j]       (eq. 4s)
            out = np.zeros((m * m, m))
            Cw = C * w[:, None]
            for a in range(0, n, 8192):
                z = slice(a, a + 8192)
                out += (P[z, :, None] * Hw[z, None, :]).reshape(-1, m * m).T @ Cw[z]
            return out.reshape(m, m, m)

        K_L, K_R = trigram(SRv, SLw), trigram(SLv, SRw)
        D_L = (SRv * (w * nL1)[:, None]).T @ Hw                                   # eq. 5s
        D_R = (SLv * (w * nR1)[:, None]).T @ Hw
        iL, iR = self._pinv(D_L), self._pinv(D_R)
        E_L = np.einsum("ac,cbj->abj", iL, K_L)                                   # eq. 6s
        E_R = np.einsum("ac,cbj->abj", iR, K_R)
        # the STOP slices E_d[:, :, STOP_c] = Delta_d^+ K_d[:, :, STOP_c], K_d[:, :, STOP_c]
        # = w_s P_dc, applied to the STOP child's start vector w_s e_STOP_c, divided by
        # w_s ** 2 (its emission u(STOP)^T M[:, STOP] = w_s ** 2): S_dc = Delta_d^+ P_dc
        S_L = np.stack([iL @ ((SRv * (w * c)[:, None]).T @ Hw) for c in cls_L])
        S_R = np.stack([iR @ ((SLv * (w * c)[:, None]).T @ Hw) for c in cls_R])
        if len(cls_L) == 1:
            S_L, S_R = S_L[0], S_R[0]
        mu_w = W.T @ np.asarray(root_mean, np.float64)                            # eq. 3s
        return W, E_L, E_R, S_L, S_R, mu_w, s_all

    def _tag_column(self, sentences):
        """The DepSentence column of the tags used (None: words only)."""
        if self.tag_column is None:
            return None
        if self.tag_column not in ("upos", "xpos", "auto"):
            raise ValueError(f"tag_column must be None, 'upos', 'xpos' or 'auto', got "
                             f"{self.tag_column!r}")
        if self.tag_column != "auto":
            return self.tag_column
        filled = lambda col: any(t != "_" for s in sentences[:200] for t in getattr(s, col))
        return "xpos" if filled("xpos") else "upos"

    @staticmethod
    def _tag_ids(sentences, column, tag_list):
        index = tag_list if isinstance(tag_list, dict) else \
            {t: i for i, t in enumerate(tag_list)}
        return [np.fromiter((index.get(t, 0) for t in getattr(s, column)), np.int64,
                            len(s.words)) for s in sentences]

    @staticmethod
    def _svd(X, m, seed, randomized_svd):
        if sp.issparse(X) and min(X.shape) > 500:
            return randomized_svd(X, m, random_state=seed)
        Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
        U, s, Vt = np.linalg.svd(Xd, full_matrices=False)
        return U[:, :m], s[:m], Vt[:m]

    def _pinv(self, D):
        U, s, Vt = np.linalg.svd(D)
        lam = float(self.ridge) * (s[0] if s.size else 0.0)
        inv = np.divide(s, s * s + lam * lam, out=np.zeros_like(s), where=s > 0)
        return (Vt.T * inv) @ U.T

    # ------------------------------------------------------------------------------------------
    def log_prob(self, sentences, heads=None, *, return_sign=False, jobs=None):
        """``log |p-hat(words | tree)|`` of each sentence (Algorithm 1, one compiled call).

        Parameters
        ----------
        sentences : list of DepSentence
            The sentences (their words; their heads unless ``heads`` is given).
        heads : list of int arrays, optional
            One head array per sentence (CoNLL convention: 1-based, 0 = root) scored instead
            of the sentence's own heads.  With a single sentence and several head arrays, every
            array is scored on that sentence (a k-best list).
        return_sign : bool
            Also return the sign of ``p-hat`` (+1 / -1; 0 where the estimate is 0).
        jobs : int, optional
            Threads (default: the model's ``jobs``, else every core).

        Returns
        -------
        ndarray of float64 (one per tree), or ``(log_abs, sign)`` with ``return_sign``.
        ``p-hat == 0`` (or a non-finite estimate) gives ``log_floor``.
        """
        logabs, sign, _ = self._log_prob(sentences, heads, jobs)
        return (logabs, sign) if return_sign else logabs

    def _log_prob(self, sentences, heads, jobs, inputs=None):
        """``(log |p-hat|, sign, inputs)`` of :meth:`log_prob`, ``inputs`` the
        :meth:`_kernel_inputs` of the call (given: reused)."""
        from .kernels import tree_log_prob

        if inputs is None:
            inputs = self._kernel_inputs(sentences, heads, "log_prob")
        sentences, heads, offsets, parent, words, leaf = inputs[:6]
        with self._numba_threads(jobs):
            logabs, sign, status = tree_log_prob(offsets, parent, words, leaf,
                                                 self.E_L_, self.E_R_, self.c1_,
                                                 *self._stop_ops(), groups=inputs[8])
        if status.any():
            self._raise_invalid(sentences, status, heads)
        bad = ~np.isfinite(logabs)
        if bad.any():
            logabs[bad] = float(self.log_floor)
            sign[bad] = 0.0
        return logabs, sign, inputs

    def _numba_threads(self, jobs):
        from ..base import check_jobs
        from .._threads import numba_threads

        return numba_threads(check_jobs(jobs if jobs is not None else self.jobs))

    def fragment_log_prob(self, sentences, heads=None, *, jobs=None):
        """Depth-1 fragment scores: ``(sum_i log |p-hat_i|, number of negative p-hat_i)`` per
        tree, ``p-hat_i`` being the estimate of node ``i`` with its children as leaves (a tree
        rooted at ``i``; :func:`fastspectral.latentdep.kernels.fragment_log_prob`).

        A local (composite-likelihood) version of :meth:`log_prob` for re-ranking: each
        fragment multiplies at most ``1 + children`` estimated operators, so its error does
        not compound along the tree.  Arguments as :meth:`log_prob`; a fragment estimated at
        exactly 0 makes the sum ``log_floor``.
        """
        return self._fragment_log_prob(sentences, heads, jobs)

    def _fragment_log_prob(self, sentences, heads, jobs, inputs=None):
        from .kernels import fragment_log_prob

        if inputs is None:
            inputs = self._kernel_inputs(sentences, heads, "fragment_log_prob")
        sentences, heads, offsets, parent, words, leaf = inputs[:6]
        # a child's operator E_d(leaf(x_c)) depends on its row only: once per row used
        used = np.zeros(leaf.shape[0], np.bool_)
        used[words] = True
        rows = np.flatnonzero(used)
        inverse = np.cumsum(used) - 1
        words = inverse[words]
        leaf = np.ascontiguousarray(leaf[rows])
        m = leaf.shape[1]            # M_d[r] = E_d(leaf[r]): one matrix product (BLAS)
        M_L = np.ascontiguousarray((leaf @ self.E_L_.reshape(m * m, m).T).reshape(-1, m, m))
        M_R = np.ascontiguousarray((leaf @ self.E_R_.reshape(m * m, m).T).reshape(-1, m, m))
        with self._numba_threads(jobs):
            logabs, negs, status = fragment_log_prob(offsets, parent, words, leaf, M_L, M_R,
                                                     self.c1_, *self._stop_ops(),
                                                     groups=inputs[8])
        if status.any():
            self._raise_invalid(sentences, status, heads)
        logabs[~np.isfinite(logabs)] = float(self.log_floor)
        return logabs, negs

    def tree_scores(self, sentences, heads=None, *, tree=True, fragments=True, jobs=None):
        """:meth:`log_prob` (with its sign) and :meth:`fragment_log_prob` of the same trees
        from one reading of the input: ``(log |p-hat|, sign, fragment log p-hat, negative
        fragments)``, None for the scores not asked (``tree``, ``fragments``).  The
        candidates of a k-best list (a sentence repeated with several head arrays) share the
        work of their common subtrees."""
        inputs = self._kernel_inputs(sentences, heads, "tree_scores")
        lp = sign = frag = negs = None
        if tree:
            lp, sign, _ = self._log_prob(None, None, jobs, inputs)
        if fragments:
            frag, negs = self._fragment_log_prob(None, None, jobs, inputs)
        return lp, sign, frag, negs

    def _stop_ops(self):
        """``(S_L, S_R)`` of the model with stop events, ``(None, None)`` without."""
        return getattr(self, "stop_L_", None), getattr(self, "stop_R_", None)

    def log_likelihood(self, sentences) -> tuple[float, int]:
        """``(sum of log |p-hat| over sentences (their own trees), number of words)``: the pair
        every model's ``log_likelihood`` returns."""
        self._check_fitted()
        sentences = self._check_sentences(sentences, "log_likelihood")
        return float(self.log_prob(sentences).sum()), sum(len(s.words) for s in sentences)

    def _kernel_inputs(self, sentences, heads, what):
        """``(sentences, heads, offsets, parent, words, leaf, ids, tag_ids, groups)`` of the
        scoring kernels: ``ids`` the vocabulary ids of each sentence's words (0: unknown),
        ``tag_ids`` the tag id of every token (0: unknown; None without tags), ``groups`` the
        boundaries of the runs of one sentence object (k-best lists; see
        :func:`~fastspectral.latentdep.kernels.tree_log_prob`)."""
        self._check_fitted()
        sentences = self._check_sentences(sentences, what)
        if heads is not None:
            if isinstance(heads, np.ndarray) and heads.ndim == 1:
                raise TypeError("heads is a list of head arrays, one per tree")
            heads = list(heads)
            if len(sentences) == 1 and len(heads) != 1:
                sentences = sentences * len(heads)
            if len(heads) != len(sentences):
                raise ValueError(f"{len(heads)} head arrays for {len(sentences)} sentences")
        offsets, parent = self._structure(sentences, heads)
        groups = self._runs(sentences)
        # the distinct sentence objects (a k-best list repeats one): their word ids once, and
        # for every token of every tree the position of its word among theirs
        first: dict[int, int] = {}
        uniq: list = []
        u_of_run = np.empty(len(groups) - 1, np.int64)
        for r in range(len(groups) - 1):
            s = sentences[groups[r]]
            u_of_run[r] = j = first.setdefault(id(s), len(uniq))
            if j == len(uniq):
                uniq.append(s)
        ids_u = self._ids(uniq, self._lookup(), self.lowercase_)
        u_of = np.repeat(u_of_run, np.diff(groups))
        ids = [ids_u[j] for j in u_of]
        u_lens = np.fromiter(map(len, ids_u), np.int64, len(ids_u))
        u_start = np.concatenate(([0], np.cumsum(u_lens)[:-1])).astype(np.int64)
        lens = np.diff(offsets)
        gather = (np.repeat(u_start[u_of] - offsets[:-1], lens) +
                  np.arange(offsets[-1])).astype(np.int64)
        wu = np.concatenate(ids_u).astype(np.int64) if ids_u else np.zeros(0, np.int64)
        words, leaf, tids = wu[gather], self.leaf_, None
        if self.tag_column_ is not None:
            # per-token start vectors (word + tag parts), built once per distinct sentence
            # object: the trees of a k-best list share one block of rows
            tidx = self._tag_index()
            tu = [self._tag_ids([x], self.tag_column_, tidx)[0] for x in uniq]
            tu = np.concatenate(tu) if tu else np.zeros(0, np.int64)
            leaf = np.ascontiguousarray(self.leaf_[wu] + self.leaf_tags_[tu])
            words, tids = gather, tu[gather]
        return sentences, heads, offsets, parent, words, leaf, ids, tids, groups

    @staticmethod
    def _runs(sentences) -> np.ndarray:
        """Boundaries of the runs of consecutive entries that are one sentence object."""
        key = np.fromiter(map(id, sentences), np.int64, len(sentences))
        cut = np.flatnonzero(key[1:] != key[:-1]) + 1
        return np.concatenate(([0], cut, [len(sentences)])).astype(np.int64)

    def _tag_index(self):
        idx = getattr(self, "_tags_index", None)
        if idx is None:
            idx = self._tags_index = {t: i for i, t in enumerate(self.tags_)}
        return idx

    def _lookup(self):
        idx = getattr(self, "_index", None)
        if idx is None:
            idx = self._index = {w: i for i, w in enumerate(self.words_)}
        return idx

    def parse(self, items, *, tags=None, jobs=None, progress=None) -> list:
        """Score the given trees: this model does not search for trees.  Returns copies of
        ``items`` with their heads unchanged and a comment ``# latent_dep_log_prob = L``
        (``log |p-hat|``, with ``# latent_dep_sign = -1`` when the estimate is negative), so
        ``fastspectral parse MODEL TREES`` annotates a treebank.  Sentences without heads
        (unparsed input) are a ValueError.  ``last_parse_stats_``
        (:class:`LatentDepParseStats`) counts the unknown words and tags, the negative
        estimates and the trees given ``log_floor``."""
        import copy

        items = self._check_sentences(items, "parse")
        n_threads = self._check_parse_args(items, tags, jobs)
        for i, s in enumerate(items):
            if any(h < 0 for h in s.heads):
                from ..errors import FormatError

                why = ("latent-dep scores given trees; this sentence has no heads (parse it "
                       "with a parser first)")
                if s.line is not None:       # read from a file: the CLI adds the path
                    raise FormatError(why, None, s.line)
                raise ValueError(f"sentence {i + 1}: {why}")
        logp, sign, inputs = self._log_prob(items, None, n_threads)
        ids, tids = inputs[6], inputs[7]
        self.last_parse_stats_ = LatentDepParseStats(
            sentences=len(items), words=int(sum(len(s.words) for s in items)),
            unknown_words=int(sum(np.count_nonzero(i == 0) for i in ids)),
            unknown_tags=0 if tids is None else int(np.count_nonzero(tids == 0)),
            negative=int(np.count_nonzero(sign < 0)), fallback=int(np.count_nonzero(sign == 0)))
        out = []
        for s, lp, sg in zip(items, logp, sign):
            t = copy.copy(s)
            t.comments = [c for c in s.comments if not c.startswith("# latent_dep_")]
            t.comments.append(f"# latent_dep_log_prob = {lp:.6f}")
            if sg < 0:
                t.comments.append("# latent_dep_sign = -1")
            out.append(t)
        if progress is not None:
            progress(len(out), len(out))
        return out

    # ------------------------------------------------------------------------------------------
    def _model_file(self):
        params = self.get_params(deep=False)
        if params["embeddings"] is not None and not isinstance(params["embeddings"], str):
            params["embeddings"] = None          # an object: its file name is not known
        meta = {"params": params, "words": list(self.words_), "lowercase": self.lowercase_,
                "tags": list(self.tags_), "tag_column": self.tag_column_,
                "fit_time": self.fit_time_}
        arrays = {"leaf": self.leaf_, "leaf_tags": self.leaf_tags_, "E_L": self.E_L_,
                  "E_R": self.E_R_, "c1": self.c1_, "singular_values": self.singular_values_}
        if getattr(self, "stop_L_", None) is not None:
            arrays.update(stop_L=self.stop_L_, stop_R=self.stop_R_)
        return meta, arrays

    @classmethod
    def _from_model_file(cls, meta, arrays):
        from ..errors import ModelFileError
        from ..io import validate as V

        model = V.from_params(cls, meta)
        words = V.meta_strings(meta, "words")
        if not words:
            raise ModelFileError("meta field 'words': an empty vocabulary")
        leaf = V.check_finite(V.get(arrays, "leaf", "float", ndim=2, shape=(len(words), None),
                                    dtype=np.float64), "leaf")
        m = leaf.shape[1]
        if m != int(model.n_states) or m == 0:
            V.fail("leaf", f"{m} columns where the model has {model.n_states} states")
        E_L = V.check_finite(V.get(arrays, "E_L", "float", ndim=3, shape=(m, m, m),
                                   dtype=np.float64), "E_L")
        E_R = V.check_finite(V.get(arrays, "E_R", "float", ndim=3, shape=(m, m, m),
                                   dtype=np.float64), "E_R")
        c1 = V.check_finite(V.get(arrays, "c1", "float", shape=(m,), dtype=np.float64), "c1")
        tags = V.meta_strings(meta, "tags")
        column = V.meta_str(meta, "tag_column", ("upos", "xpos"), allow_none=True)
        if (column is None) != (not tags):
            raise ModelFileError(f"meta fields 'tags' and 'tag_column': {len(tags)} tags with "
                                 f"tag column {column!r}")
        if tags:
            leaf_tags = V.check_finite(V.get(arrays, "leaf_tags", "float", ndim=2,
                                             shape=(len(tags), m), dtype=np.float64),
                                       "leaf_tags")
        else:                               # unused without tags
            leaf_tags = np.zeros((0, m))
        model.stop_L_ = model.stop_R_ = None
        if model.stop_events:               # files written before stop events have neither
            shape = (2, m, m) if model.stop_adjacency else (m, m)
            for name in ("stop_L", "stop_R"):
                if name not in arrays:
                    raise ModelFileError(f"array {name!r} is missing (the STOP operators of a "
                                         "model with stop_events=True)")
            model.stop_L_ = V.check_finite(V.get(arrays, "stop_L", "float", ndim=len(shape),
                                                 shape=shape, dtype=np.float64), "stop_L")
            model.stop_R_ = V.check_finite(V.get(arrays, "stop_R", "float", ndim=len(shape),
                                                 shape=shape, dtype=np.float64), "stop_R")
        model.words_, model.leaf_, model.E_L_, model.E_R_, model.c1_ = words, leaf, E_L, E_R, c1
        model.tags_, model.tag_column_, model.leaf_tags_ = tags, column, leaf_tags
        model.singular_values_ = V.check_nonneg(V.get(arrays, "singular_values", "float",
                                                      dtype=np.float64), "singular_values")
        model.lowercase_ = V.meta_bool(meta, "lowercase")
        model.fit_time_ = V.meta_float(meta, "fit_time")
        return model
