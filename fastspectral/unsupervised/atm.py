"""Unsupervised constituency parsing with additive tree metrics (Parikh, Cohen & Xing 2014)."""
from __future__ import annotations

import logging

import time
from dataclasses import asdict, dataclass

import numpy as np

from ..base import Interval, Parser, PartitionedFit
from ..trees.universal_tags import is_punctuation_tag
from . import _vectors
from ._vectors import MAX_DISTANCE  # noqa: F401  (the anchors' distance cap, documented here)
from .common import (TAG_MAPS, build_tree, map_tags, strip_punctuation, tagged_sentences)

__all__ = ["ATMParser", "ATMParseStats"]


@dataclass
class ATMParseStats:
    """What happened to the sentences of the last :meth:`ATMParser.parse` call
    (``last_parse_stats_``).

    Attributes
    ----------
    sentences : int
        Sentences parsed.
    too_long : int
        Sentences of more than :attr:`ATMParser.max_parse_words` words (punctuation removed),
        given the right-branching tree instead of the minimal-tree decoder's.
    """

    sentences: int = 0
    too_long: int = 0

    def __getitem__(self, name: str) -> int:
        # the counters were a dict before: ``stats["too_long"]`` still reads them
        if name not in asdict(self):
            raise KeyError(name)
        return getattr(self, name)

    def as_dict(self) -> dict:
        """The counters as a dict."""
        return asdict(self)

#: singular values below this are clipped (log of 0)
_EPS = 1e-12
TOP_BRACKETS = ("paper", "verb", "punct-verb", "none")
KERNELS = ("relative", "absolute")
#: Penn tags of participles (not "non-participle verbs" of the section 4.1 heuristic)
_PARTICIPLES = frozenset({"VBN", "VBG", "VBD|VBN", "VBG|NN"})
#: Penn tags of the marks the section 4.1 heuristic may split at (comma, semicolon, colon)
_CLAUSE_MARKS = frozenset({",", ":", ";"})


def paper_top_split(orig_tags, keep, utags) -> int:
    """The top bracket of the heuristic of the paper's section 4.1, as the number of kept
    (non-punctuation) words left of it:

    1. the rightmost comma, semicolon or colon with a verb somewhere before it and, after it,
       a noun followed (later) by a verb: the split is at that mark;
    2. else the first non-participle verb (Penn tags other than VBN/VBG; with universal tags
       only, any VERB): the split is just before it;
    3. else (no such verb, or it is the first word): the first word alone.

    ``orig_tags`` are the sentence's tags with punctuation, ``keep`` the indices of the kept
    words, ``utags`` the universal tags (nouns: NOUN, verbs: VERB).  -1 under two words."""
    n = len(keep)
    if n < 2:
        return -1
    L = len(orig_tags)
    kept_before = np.zeros(L + 1, np.int64)
    kept = np.zeros(L, bool)
    kept[keep] = True
    kept_before[1:] = np.cumsum(kept)
    first_verb = next((i for i in range(L) if kept[i] and utags[i] == "VERB"), L)
    verb_right = False          # a verb right of the position scanned
    nv_right = False            # a noun right of it with a verb further right
    for i in range(L - 1, -1, -1):
        if not kept[i]:
            if orig_tags[i] in _CLAUSE_MARKS and nv_right and first_verb < i:
                k = int(kept_before[i])
                if 1 <= k < n:
                    return k
            continue
        if utags[i] == "NOUN" and verb_right:
            nv_right = True
        if utags[i] == "VERB":
            verb_right = True
    for i in keep:
        if utags[i] == "VERB" and orig_tags[i] not in _PARTICIPLES:
            k = int(kept_before[i])
            return k if k >= 1 else 1
    return 1


def kernel_weights(n_dist, bandwidth, kind="relative"):
    """The anchor kernel as a matrix ``W[d, d']`` over word-pair distances ``0 .. n_dist-1``:
    the weight of a pair at distance ``d'`` in the covariance of a pair at distance ``d``, both
    with the same tags at both ends and the same direction (else the kernel is 0).

    ``"relative"`` is the kernel of the paper's section 4.1 ("choice of kernel"):
    ``max(0, 1 - kappa / gamma)`` with ``kappa = |d - d'| / (d + d')``, so ``gamma`` is a
    fraction (the paper chose 0.4) and long distances are pooled more widely than short ones;
    ``"absolute"`` is ``max(0, 1 - |d - d'| / gamma)`` with ``gamma`` in words (this package's
    reading before the paper's text was available).  Column 0 is zero: distance 0 is no pair.
    """
    dd = np.arange(n_dist, dtype=np.float64)
    diff = np.abs(dd[:, None] - dd[None, :])
    if kind == "relative":
        tot = dd[:, None] + dd[None, :]
        kappa = np.divide(diff, tot, out=np.zeros_like(diff), where=tot > 0)
        W = np.maximum(0.0, 1.0 - kappa / bandwidth)
    elif kind == "absolute":
        W = np.maximum(0.0, 1.0 - diff / bandwidth)
    else:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kind!r}")
    W[:, 0] = 0.0
    return W


class ATMParser(PartitionedFit, Parser):
    """Spectral unsupervised constituency parser with additive tree metrics.

    Learning (Algorithm 1 of the paper): every word ``j`` of a sentence is observed through its
    embedding ``x_j`` (eigenwords, :class:`fastspectral.embeddings.Eigenwords`).  For a word pair
    ``(j, k)`` the cross-covariance ``Sigma(j, k)`` is estimated by kernel smoothing over all
    pairs ``(j', k')`` of all sentences (section 3.4; the estimate in Algorithm 1)::

        Sigma(j, k) = sum K_gamma(j, k, j', k') x_j' x_k'^T / sum K_gamma(j, k, j', k')
        K_gamma = max(0, 1 - kappa / gamma),  kappa = ||k - j| - |k' - j'|| / (|k - j| + |k' - j'|)
                  if tag(j) = tag(j'), tag(k) = tag(k') and the same direction, else 0

    (the kernel of section 4.1, "choice of kernel"; ``kernel="absolute"`` is
    ``max(0, 1 - ||k - j| - |k' - j'|| / gamma)`` instead, see :func:`kernel_weights`).

    The kernel depends on the sentence only through the anchor ``(tag_j, tag_k, k - j)``: the
    sums are grouped by anchor in one compiled pass (linear in the corpus), smoothed along the
    distance, and every anchor gets its spectral distance (eq. 5)::

        d(j, k) = -log L_m(Sigma(j, k)) + 1/2 log L_m(Sigma(j, j)) + 1/2 log L_m(Sigma(k, k))

    where ``L_m`` is the product of the top ``m`` (``rank``) singular values.  Parsing (section
    3.3) finds the projective binary latent tree ``u`` minimising ``c(u)``, the sum of its edge
    lengths, the leaf edges by eq. 3 and the internal edges by eq. 4, each averaged over every
    choice of leaves in the subtrees (a dynamic program over (span, parent span), compiled;
    O(n^4)).  The undirected tree is then rooted (section 4.1): the root is placed on the edge
    of the top bracket chosen by ``top_bracket`` and the minimal tree containing that edge is
    returned.

    Punctuation is removed before learning and parsing (its words are put back into the
    output tree beside their neighbours); the top-bracket heuristics alone look at it (the
    paper's first rule splits at a comma, semicolon or colon: :func:`paper_top_split`).

    Defaults: the paper's kernel and heuristic; ``m`` and ``gamma`` chosen on the dev sets
    (docs/notes/unsupervised.md).  The paper's own choice, ``m=7, gamma=0.4``, was made for its
    embeddings (learned on far more text) and is worse with eigenwords learned on the
    training words here.  On WSJ sections 02-21 (41.5k sentences) section 22 chose
    ``vectors="brown", brown_clusters=100, rank=4`` (65.4 / 42.2 F1 at <= 10 / <= 40 words,
    against 62.1 / 35.9 with the defaults; docs/benchmarks-dependency.md).

    Parameters
    ----------
    rank : int
        ``m``: the singular values in the spectral distance.
    bandwidth : float
        ``gamma`` of the kernel: with ``kernel="relative"`` a fraction (the paper: 0.4; 1 or
        more pools every distance), with ``"absolute"`` in words of distance (1 or less: no
        smoothing across distances).
    kernel : {"relative", "absolute"}
        The anchor kernel's distance term (see :func:`kernel_weights`).
    embeddings : str or Eigenwords or BrownClusters or None
        The observed word vectors, learned elsewhere: a file or a fitted object of
        :class:`~fastspectral.embeddings.Eigenwords` (``fastspectral train eigenwords``) or
        :class:`~fastspectral.embeddings.brown_clusters.BrownClusters`; None learns the
        vectors of kind ``vectors`` on the training words.
    embedding_dim : int
        Dimension of the vectors learned when ``embeddings`` is None (eigenwords; Brown
        clusters: the bits kept).
    vectors : {"eigenwords", "brown"}
        The vectors learned when ``embeddings`` is None: eigenwords (CCA, Dhillon et al.
        2011) or Brown-cluster bit vectors (Brown et al. 1992; +-1 per bit of the word's
        cluster path, words seen once share the zero vector).
    brown_clusters : int
        Clusters of the Brown vectors learned when ``embeddings`` is None.
    brown_features : {"bits+clusters", "bits"}
        Those Brown vectors: the paper's (section 4.1: ``log2 C`` path bits and the one-hot
        cluster) or ``embedding_dim`` +-1 path bits.
    tag_map : {"universal", "as-is"}
        Tags mapped to the universal tagset of Petrov et al. (Penn tags expected), or kept.
    center : bool
        Subtract the smoothed means (covariances) instead of raw second moments.
    top_bracket : {"paper", "verb", "punct-verb", "none"}
        Rooting heuristic: the three rules of the paper's section 4.1
        (:func:`paper_top_split`); or split before the first verb; or at the first
        punctuation mark before the first verb, else before the first verb; or no heuristic
        (the root of the minimal tree).  Sentences without a usable split fall back to
        "none".
    random_state : int
        Seed of the eigenwords' randomized SVD.

    Attributes
    ----------
    tags_ : list of str
        The tag inventory (universal tags, or the training tags).
    distances_ : ndarray (n_tags, n_tags, MAX_DISTANCE + 1)
        ``d`` of each anchor ``(left tag, right tag, distance)``.
    anchor_counts_ : ndarray of int64, pairs seen per anchor.
    lexicon_words_, lexicon_tags_ : the most frequent tag of each training word (used when
        ``parse`` gets no tags).
    fit_time_ : float

    References
    ----------
    Ankur P. Parikh, Shay B. Cohen and Eric P. Xing (2014).  Spectral Unsupervised Parsing with
    Additive Tree Metrics.  ACL 2014: eqs. 3-4 (edge lengths from leaf distances), eq. 5 (the
    spectral distance), eq. 6 (the minimal projective tree), section 3.4 and Algorithm 1 (the
    kernel-smoothed covariances), section 4.1 (the top-bracket heuristic, the word vectors,
    the kernel).
    Paramveer S. Dhillon, Dean Foster and Lyle Ungar (2011).  Multi-View Learning of Word
    Embeddings via CCA.  NIPS 24.

    Examples
    --------
    >>> from fastspectral.synthetic import LatentPCFG
    >>> trees = LatentPCFG.default(n_states=2, seed=0).sample(200, seed=1)
    >>> atm = ATMParser(rank=2, embedding_dim=5).fit(trees)
    >>> tree = atm.parse([["the", "dog", "saw", "a", "cat"]],
    ...                  tags=[["DT", "NN", "VBD", "DT", "NN"]])[0]
    >>> tree.leaves()
    ['the', 'dog', 'saw', 'a', 'cat']
    >>> len(tree.children)
    2
    """

    kind = "atm"
    input_kind = "sentences"
    #: names of model files written by older versions
    _renamed_params = {"dim": "rank", "tagset": "tag_map"}
    _parameter_constraints = {
        "rank": Interval(int, 1), "bandwidth": Interval(float, 0.0, closed="neither"),
        "kernel": set(KERNELS), "tag_map": set(TAG_MAPS),
        "vectors": set(_vectors.VECTORS), "embedding_dim": Interval(int, 1),
        "brown_clusters": Interval(int, 1), "top_bracket": set(TOP_BRACKETS)}

    def __init__(self, rank=2, bandwidth=0.7, kernel="relative", embeddings=None,
                 embedding_dim=30, vectors="eigenwords", brown_clusters=100,
                 brown_features="bits+clusters", tag_map="universal", center=False,
                 top_bracket="paper", random_state=0):
        self.rank = rank
        self.brown_features = brown_features
        self.kernel = kernel
        self.vectors = vectors
        self.brown_clusters = brown_clusters
        self.bandwidth = bandwidth
        self.embeddings = embeddings
        self.embedding_dim = embedding_dim
        self.tag_map = tag_map
        self.center = center
        self.top_bracket = top_bracket
        self.random_state = random_state

    # ------------------------------------------------------------------------------------------
    def _check_params(self):
        from ..embeddings.brown_clusters import FEATURES   # numba: imported when needed
        if self.brown_features not in FEATURES:
            raise ValueError(f"brown_features must be one of {FEATURES}, got "
                             f"{self.brown_features!r}")

    def fit(self, X):
        """Learn the anchor distances from tagged sentences: trees (their words and tags only)
        or ``(words, tags)`` pairs.  The same passes as :meth:`fit_partitions` on one
        partition (:meth:`sufficient_statistics`, :meth:`fit_statistics`)."""
        t0 = time.perf_counter()
        self._validate_params()
        part = self.prepare_partition(X)
        context = None
        while True:
            context = self.fit_statistics(self.sufficient_statistics(part, context), context)
            if context is None:
                break
        self.fit_time_ = time.perf_counter() - t0
        return self

    # -- learning from partitions (the statistics protocol of fastspectral.base) -------------
    def prepare_partition(self, items):
        """The tagged sentences of ``items`` (universal tags mapped, punctuation marked)."""
        from ..base import Partition

        sents = tagged_sentences(items)
        mapped = [map_tags(tags, self.tag_map) for _, tags in sents]   # bad tags fail here
        return Partition((sents, mapped), len(sents))

    def _learns_vectors(self):
        return self.embeddings is None

    def sufficient_statistics(self, items, context=None):
        """The mergeable statistics of a partition for one pass (see :class:`ATMStatistics`):
        pass 1 counts words, tags and (word, tag) pairs; pass 2 the co-occurrences of the
        observed vectors' learner (eigenwords: word-context counts; Brown: bigram counts) and
        the word pairs per anchor; pass 3 the sums ``x_j x_k^T`` per anchor."""
        self._validate_params()
        part = self._as_partition(items)
        sents, mapped = part.data
        return _vectors.atm_statistics(self, sents, mapped, part.cache, context)

    def fit_statistics(self, stats, context=None):
        """Estimate from merged statistics; returns the context of the next pass, or None
        when fitted."""
        self._validate_params()
        return _vectors.atm_fit_statistics(self, stats, context)

    def _distances(self, N, Nd, slot, S, A, B, Sd, Ad):
        """The spectral distance (eq. 5) of every anchor from the smoothed sums."""
        T, _, D1 = N.shape
        p = S.shape[1]
        m = min(int(self.rank), p)
        W = kernel_weights(D1, float(self.bandwidth), self.kernel)     # W[d, d']
        # per-tag terms: log L_m(Sigma(j, j))
        diag = np.zeros(T)
        for t in range(T):
            n = max(Nd[t], 1)
            M = Sd[t] / n
            if self.center:
                mu = Ad[t] / n
                M = M - np.outer(mu, mu)
            sv = np.linalg.svd(M, compute_uv=False)[:m]
            diag[t] = np.log(np.maximum(sv, _EPS)).sum()
        dist = np.full((T, T, D1), np.nan)
        for t1 in range(T):
            for t2 in range(T):
                ds = np.flatnonzero(N[t1, t2] > 0)
                if len(ds) == 0:
                    continue
                Sm = S[slot[t1, t2, ds]]                       # (k, p, p)
                w = W[:, ds]                                   # (D1, k)
                mass = w @ N[t1, t2, ds].astype(np.float64)    # (D1,)
                ok = np.flatnonzero(mass > 0)
                if len(ok) == 0:
                    continue
                M = np.tensordot(w[ok], Sm, axes=(1, 0)) / mass[ok, None, None]
                if self.center:
                    mA = (w[ok] @ A[slot[t1, t2, ds]]) / mass[ok, None]
                    mB = (w[ok] @ B[slot[t1, t2, ds]]) / mass[ok, None]
                    M = M - mA[:, :, None] * mB[:, None, :]
                sv = np.linalg.svd(M, compute_uv=False)[:, :m]
                dist[t1, t2, ok] = -np.log(np.maximum(sv, _EPS)).sum(axis=1) \
                    + 0.5 * diag[t1] + 0.5 * diag[t2]
        # anchors without kernel mass: the nearest distance of the same tag pair, else the
        # mean over tag pairs at that distance, else the overall mean
        overall = np.nanmean(dist) if np.isfinite(dist).any() else 0.0
        col_mean = np.array([np.nanmean(dist[:, :, d]) if np.isfinite(dist[:, :, d]).any()
                             else np.nan for d in range(D1)])
        for t1 in range(T):
            for t2 in range(T):
                row = dist[t1, t2]
                have = np.flatnonzero(np.isfinite(row[1:])) + 1
                for d in range(1, D1):
                    if np.isfinite(row[d]):
                        continue
                    if len(have):
                        row[d] = row[have[np.argmin(np.abs(have - d))]]
                    elif np.isfinite(col_mean[d]):
                        row[d] = col_mean[d]
                    else:
                        row[d] = overall
        dist[:, :, 0] = 0.0
        return np.ascontiguousarray(dist)

    # ------------------------------------------------------------------------------------------
    def _sentence_tags(self, words, tags):
        if tags is None:
            lex = getattr(self, "_lex", None)
            if lex is None:
                lex = self._lex = dict(zip(self.lexicon_words_, self.lexicon_tags_))
            fallback = "NOUN" if "NOUN" in self.tags_ else self.tags_[0]
            utags = [lex.get(w, lex.get(w.lower(), fallback)) for w in words]
            return utags, utags
        if len(tags) != len(words):
            raise ValueError(f"{len(words)} words but {len(tags)} tags")
        return list(tags), map_tags(tags, self.tag_map) if self.tag_map == "universal" else \
            list(tags)

    def _top_split(self, orig_tags, keep, utags) -> int:
        """The heuristic top split (words left of it, over the kept words), or -1."""
        n = len(keep)
        if n < 2 or self.top_bracket == "none":
            return -1
        if self.top_bracket == "paper":
            return paper_top_split(orig_tags, keep, utags)
        verbs = [k for k, i in enumerate(keep) if utags[i] == "VERB"]
        first_verb = verbs[0] if verbs else None
        if self.top_bracket == "punct-verb":
            limit = keep[first_verb] if first_verb is not None else len(orig_tags)
            kept_before = 0
            for i, t in enumerate(orig_tags[:limit]):
                if is_punctuation_tag(t):
                    if 1 <= kept_before < n:
                        return kept_before
                else:
                    kept_before += 1
        if first_verb is not None and first_verb >= 1:
            return first_verb
        return -1

    #: sentences with more words (punctuation removed) than this get the right-branching tree
    #: instead of the O(n^4) minimal-tree decoder (a documented fallback, counted in
    #: ``last_parse_stats_``; 200 words take about a second)
    max_parse_words = 200

    def parse(self, items, *, tags=None, jobs=None, progress=None, top_splits=None):
        """Parse tokenised sentences; returns unlabelled trees (``X`` nodes, the tags as
        pre-terminals).  ``top_splits`` (one int per sentence, the words left of the top
        bracket after punctuation removal; 0 or -1: none) overrides the heuristic: the oracle
        top bracket of the paper's analysis (see :func:`~.common.gold_top_split`).  Sentences
        longer than :attr:`max_parse_words` get the right-branching tree (a warning on the
        ``fastspectral`` logger; ``last_parse_stats_.too_long`` counts them, an
        :class:`ATMParseStats`)."""
        items = list(items) if not isinstance(items, (str, bytes)) else items
        self._check_parse_args(items, tags, jobs)
        if top_splits is not None and len(top_splits) != len(items):
            raise ValueError(f"top_splits has {len(top_splits)} entries for {len(items)} "
                             "sentences")
        tindex = {t: i for i, t in enumerate(self.tags_)}
        fallback = tindex.get("NOUN", 0)
        offsets, tag_ids, force, rows = [0], [], [], []
        long_rows: set = set()
        for s, words in enumerate(items):
            orig, utags = self._sentence_tags(list(words), None if tags is None else tags[s])
            keep = strip_punctuation(orig)
            if len(keep) > self.max_parse_words:
                long_rows.add(s)
                keep_for_batch = keep[:1]       # one word: no node, offsets stay aligned
            else:
                keep_for_batch = keep
            tag_ids.extend(tindex.get(utags[i], fallback) for i in keep_for_batch)
            offsets.append(len(tag_ids))
            if s in long_rows:
                force.append(-1)
            elif top_splits is not None:
                k = int(top_splits[s])
                force.append(k if 1 <= k < len(keep) else -1)
            else:
                force.append(self._top_split(orig, keep, utags))
            rows.append((words, orig, keep))
        from ._atm_kernels import parse_batch

        offsets = np.asarray(offsets, np.int64)
        out = np.zeros((max(len(tag_ids), 1), 3), np.int64)
        costs = parse_batch(offsets, np.asarray(tag_ids, np.int64), self.distances_,
                            np.asarray(force, np.int64), out)
        trees = []
        for s, (words, orig, keep) in enumerate(rows):
            if s in long_rows:
                from .ccm import branching_tree

                logging.getLogger("fastspectral").warning(
                    f"sentence {s + 1} ({len(keep)} words without punctuation) is longer than "
                    f"{self.max_parse_words}: right-branching tree")
                trees.append(branching_tree(list(words), orig, "right"))
            else:
                a = offsets[s] - s
                n = len(keep)
                trees.append(build_tree(list(words), orig, keep, out[a:a + max(n - 1, 0)]))
            if progress is not None:
                progress(s + 1, len(items))
        self.last_costs_ = costs
        self.last_parse_stats_ = ATMParseStats(sentences=len(items), too_long=len(long_rows))
        return trees

    # ------------------------------------------------------------------------------------------
    def _model_file(self):
        params = self.get_params()
        if params["embeddings"] is not None and not isinstance(params["embeddings"], str):
            params["embeddings"] = None          # an object: its file name is not known
        meta = {"params": params, "tags": self.tags_, "lexicon_words": self.lexicon_words_,
                "lexicon_tags": self.lexicon_tags_, "n_sentences": self.n_sentences_,
                "fit_time": self.fit_time_}
        return meta, {"distances": self.distances_, "anchor_counts": self.anchor_counts_}

    @classmethod
    def _from_model_file(cls, meta, arrays):
        from ..errors import ModelFileError
        from ..io import validate as V

        model = V.from_params(cls, meta)
        model.tags_ = V.meta_strings(meta, "tags")
        T = len(model.tags_)
        if T == 0:
            raise ModelFileError("meta field 'tags': no tags")
        D = V.check_finite(V.get(arrays, "distances", "float", ndim=3, shape=(T, T, None),
                                 dtype=np.float64), "distances")
        if D.shape[2] < 2:
            V.fail("distances", f"shape {D.shape}: fewer than 2 distance slots")
        model.distances_ = D
        model.anchor_counts_ = V.check_nonneg(V.get(arrays, "anchor_counts", "int", ndim=3,
                                                    shape=D.shape, dtype=np.int64),
                                              "anchor_counts")
        model.lexicon_words_ = V.meta_strings(meta, "lexicon_words")
        model.lexicon_tags_ = V.meta_strings(meta, "lexicon_tags")
        if len(model.lexicon_words_) != len(model.lexicon_tags_):
            raise ModelFileError("meta fields 'lexicon_words' and 'lexicon_tags' differ in "
                                 "length")
        model.n_sentences_ = V.meta_int(meta, "n_sentences")
        model.fit_time_ = V.meta_float(meta, "fit_time")
        return model
