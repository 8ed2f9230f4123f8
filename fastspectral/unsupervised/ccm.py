"""The constituent-context model (Klein & Manning 2002) and the branching baselines."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..base import Parser
from ..base import Interval
from .common import TAG_MAPS, build_tree, map_tags, strip_punctuation, tagged_sentences

__all__ = ["CCMParser", "CCMParseStats", "branching_tree", "random_tree",
           "empty_span_contexts"]

INITS = ("split-uniform", "random")


@dataclass
class CCMParseStats:
    """What happened to the sentences of the last :meth:`CCMParser.parse` call
    (``last_parse_stats_``).

    Attributes
    ----------
    sentences : int
        Sentences parsed.
    untagged : int
        Sentences parsed without tags (``tags=None``: every word gets the model's first tag,
        so the bracketing says little).
    words : int
        Words parsed (punctuation removed).
    unknown_tags : int
        Of those words, the ones whose tag (after ``tag_map``) was not seen in training: they
        share one unknown tag in the yields and contexts.
    unseen_yields : int
        Spans of two or more words short of the whole sentence (those a bracketing decides)
        whose yield (tag sequence) was not seen in training, scored with the unseen-yield
        probability (``unseen_logprob_``).
    """

    sentences: int = 0
    untagged: int = 0
    words: int = 0
    unknown_tags: int = 0
    unseen_yields: int = 0


class CCMParser(Parser):
    """The constituent-context model: EM over binary bracketings of tag sequences.

    A sentence's tags ``s`` and a binary bracketing ``B`` (every span ``(i, j)`` a constituent
    or a distituent) have probability ``P(B) prod_(i,j) P(a_ij | B_ij) P(x_ij | B_ij)`` with
    ``P(B)`` uniform over binary trees, ``a_ij`` the span's yield (its tag sequence) and
    ``x_ij`` its context (the tags before and after, or the sentence boundaries).  EM: the
    E-step is inside-outside over the binary trees with span factors
    ``phi = P(a|c) P(x|c) / (P(a|d) P(x|d))`` (compiled, log space, O(n^3)); the M-step counts
    the constituent posteriors (and their complements for distituents), add-``pseudo_count``
    smoothed; the empty spans (``empty_spans``) add their contexts to the distituents.
    ``init``: the split-uniform initialiser of Klein & Manning (first M-step from the bracket
    posteriors of trees whose every split is uniform), or ``"random"``: Dirichlet(1) initial
    parameters seeded by ``random_state`` (the random restarts of Parikh et al.'s figure 4).
    Punctuation is removed before learning and parsing.

    Parameters
    ----------
    iterations : int
        EM iterations.
    init : {"split-uniform", "random"}
    pseudo_count : float
        Pseudo-count added to every yield and context count of the constituents (and of the
        distituents unless ``distituent_pseudo_count`` is given).
    distituent_pseudo_count : float or None
        Pseudo-count of the distituent yields and contexts (None: ``pseudo_count``).
    empty_spans : bool
        Count the ``n + 1`` empty spans of every sentence as distituents (Klein & Manning
        2002): their contexts, the tag pairs around each gap, are fixed distituent context
        counts in every M-step (the empty yield's own probability is the same factor in every
        bracketing and cancels).
    tag_map : {"universal", "as-is"}
    max_length : int or None
        Learn from the sentences of at most this many words (after punctuation removal; 10:
        Klein & Manning's WSJ10).  Longer sentences are still parsed.
    random_state : int

    Attributes
    ----------
    log_likelihood_ : list of float, per EM iteration.
    fit_time_ : float
    last_parse_stats_ : CCMParseStats
        Counters of the last :meth:`parse` call.

    References
    ----------
    Dan Klein and Christopher D. Manning (2002).  A Generative Constituent-Context Model for
    Improved Grammar Induction.  ACL 2002 (section 3: the model, EM and the initialiser).
    Ankur P. Parikh, Shay B. Cohen and Eric P. Xing (2014).  Spectral Unsupervised Parsing with
    Additive Tree Metrics.  ACL 2014 (table 2 and figure 4: CCM and its random restarts).

    Examples
    --------
    >>> from fastspectral.synthetic import LatentPCFG
    >>> trees = LatentPCFG.default(n_states=2, seed=0).sample(200, seed=1)
    >>> ccm = CCMParser(iterations=5).fit(trees)
    >>> ccm.parse([["the", "dog", "saw", "a", "cat"]],
    ...           tags=[["DT", "NN", "VBD", "DT", "NN"]])[0].leaves()
    ['the', 'dog', 'saw', 'a', 'cat']
    """

    kind = "ccm"
    input_kind = "sentences"
    #: names of model files written by older versions
    _renamed_params = {"tagset": "tag_map"}
    _parameter_constraints = {
        "iterations": Interval(int, 0), "init": set(INITS),
        "pseudo_count": Interval(float, 0.0, closed="neither"),
        "distituent_pseudo_count": Interval(float, 0.0, closed="neither", allow_none=True),
        "tag_map": set(TAG_MAPS), "max_length": Interval(int, 1, allow_none=True)}

    def __init__(self, iterations=40, init="split-uniform", pseudo_count=1.0,
                 distituent_pseudo_count=4.0, empty_spans=True, tag_map="as-is", max_length=10,
                 random_state=0):
        self.iterations = iterations
        self.init = init
        self.pseudo_count = pseudo_count
        self.distituent_pseudo_count = distituent_pseudo_count
        self.empty_spans = empty_spans
        self.tag_map = tag_map
        self.max_length = max_length
        self.random_state = random_state

    # ------------------------------------------------------------------------------------------
    def _encode(self, tag_lists, tindex, grow):
        offsets, ids = [0], []
        for tags in tag_lists:
            for t in tags:
                if t not in tindex:
                    if not grow:
                        t = None
                    else:
                        tindex[t] = len(tindex)
                ids.append(tindex[t] if t is not None else len(tindex))   # unknown tag id
            offsets.append(len(ids))
        return np.asarray(offsets, np.int64), np.asarray(ids, np.int64)

    def fit(self, X):
        """Learn from tagged sentences: trees (their words and tags only) or
        ``(words, tags)`` pairs."""
        t0 = time.perf_counter()
        self._validate_params()
        from ._ccm_kernels import estep, span_hashes, split_uniform_posteriors

        tag_lists = []
        for words, tags in tagged_sentences(X):
            keep = strip_punctuation(tags)
            u = map_tags(tags, self.tag_map)
            kt = [u[i] for i in keep]
            if kt and (self.max_length is None or len(kt) <= self.max_length):
                tag_lists.append(kt)
        if not tag_lists:
            raise ValueError("no sentences to learn from (after punctuation removal and "
                             "max_length)")
        tindex: dict = {}
        offsets, ids = self._encode(tag_lists, tindex, True)
        T = len(tindex) + 1                         # + the unknown tag of parse time
        H, C = span_hashes(offsets, ids, T)
        hashes, yid = np.unique(H, return_inverse=True)
        yid = yid.astype(np.int64)
        n_ctx = (T + 2) * (T + 2)
        lam = float(self.pseudo_count)
        lam_d = lam if self.distituent_pseudo_count is None else \
            float(self.distituent_pseudo_count)
        # the n + 1 empty spans of a sentence are distituents in every bracketing (Klein &
        # Manning 2002): fixed counts of their contexts (the tags around each gap)
        empty = empty_span_contexts(offsets, ids, T) if self.empty_spans else np.zeros(n_ctx)
        post = split_uniform_posteriors(offsets)
        if self.init == "random":
            rng = np.random.default_rng(self.random_state)
            params = [np.log(rng.dirichlet(np.ones(n))) for n in (len(hashes), n_ctx) * 2]
        else:
            params = self._mstep(post, yid, C, len(hashes), n_ctx, lam, lam_d, empty)
        self.log_likelihood_ = []
        for _ in range(int(self.iterations)):
            ll = estep(offsets, yid, C, params[0], params[1], params[2], params[3], post)
            self.log_likelihood_.append(float(ll))
            params = self._mstep(post, yid, C, len(hashes), n_ctx, lam, lam_d, empty)
        self.tags_ = list(tindex)
        self.yield_hashes_ = hashes
        self.yield_logprob_ = np.ascontiguousarray(np.stack([params[0], params[2]]))
        self.context_logprob_ = np.ascontiguousarray(np.stack([params[1], params[3]]))
        # the log-probability of a yield never seen in training, per class
        cy = np.bincount(yid, weights=post, minlength=len(hashes))
        dy = np.bincount(yid, weights=1.0 - post, minlength=len(hashes))
        self.unseen_logprob_ = np.log(np.array([lam / (cy.sum() + lam * (len(hashes) + 1)),
                                                lam_d / (dy.sum() + lam_d * (len(hashes) + 1))]))
        self.n_sentences_ = len(tag_lists)
        self.fit_time_ = time.perf_counter() - t0
        return self

    @staticmethod
    def _mstep(post, yid, cid, n_y, n_c, lam, lam_d, empty):
        out = []
        cy = np.bincount(yid, weights=post, minlength=n_y) + lam
        cx = np.bincount(cid, weights=post, minlength=n_c) + lam
        dy = np.bincount(yid, weights=1.0 - post, minlength=n_y) + lam_d
        dx = np.bincount(cid, weights=1.0 - post, minlength=n_c) + lam_d + empty
        for v in (cy, cx, dy, dx):
            out.append(np.log(v / v.sum()))
        return out

    # ------------------------------------------------------------------------------------------
    def parse(self, items, *, tags=None, jobs=None, progress=None):
        """Viterbi bracketings of tagged sentences (``tags=None``: every word gets the model's
        first tag, which makes little sense: pass tags).  ``last_parse_stats_``
        (:class:`CCMParseStats`) counts the untagged sentences, the words with a tag unseen in
        training and the spans with an unseen yield."""
        items = list(items) if not isinstance(items, (str, bytes)) else items
        self._check_parse_args(items, tags, jobs)
        from ._ccm_kernels import span_hashes, viterbi_batch

        tindex = {t: i for i, t in enumerate(self.tags_)}
        rows, tag_lists = [], []
        for s, words in enumerate(items):
            words = list(words)
            orig = list(tags[s]) if tags is not None else [self.tags_[0]] * len(words)
            if len(orig) != len(words):
                raise ValueError(f"sentence {s + 1}: {len(words)} words but {len(orig)} tags")
            keep = strip_punctuation(orig)
            u = map_tags(orig, self.tag_map) if tags is not None else orig
            tag_lists.append([u[i] for i in keep])
            rows.append((words, orig, keep))
        offsets, ids = self._encode(tag_lists, tindex, False)
        T = len(self.tags_) + 1
        H, C = span_hashes(offsets, ids, T)
        pos = np.searchsorted(self.yield_hashes_, H)
        pos = np.minimum(pos, len(self.yield_hashes_) - 1)
        seen = self.yield_hashes_[pos] == H
        self.last_parse_stats_ = CCMParseStats(
            sentences=len(items), untagged=len(items) if tags is None else 0,
            words=len(ids), unknown_tags=int((ids == len(self.tags_)).sum()),
            unseen_yields=int((~seen & _decided_spans(np.diff(offsets))).sum()))
        ly = np.where(seen, self.yield_logprob_[0][pos] - self.yield_logprob_[1][pos],
                      self.unseen_logprob_[0] - self.unseen_logprob_[1])
        lx = self.context_logprob_[0][C] - self.context_logprob_[1][C]
        out = np.zeros((max(len(ids), 1), 3), np.int64)
        viterbi_batch(offsets, np.ascontiguousarray(ly), np.ascontiguousarray(lx), out)
        trees = []
        for s, (words, orig, keep) in enumerate(rows):
            a = offsets[s] - s
            trees.append(build_tree(words, orig, keep, out[a:a + max(len(keep) - 1, 0)]))
            if progress is not None:
                progress(s + 1, len(items))
        return trees

    # ------------------------------------------------------------------------------------------
    def _model_file(self):
        meta = {"params": self.get_params(), "tags": self.tags_,
                "log_likelihood": self.log_likelihood_, "n_sentences": self.n_sentences_,
                "fit_time": self.fit_time_}
        return meta, {"yield_hashes": self.yield_hashes_, "yield_logprob": self.yield_logprob_,
                      "context_logprob": self.context_logprob_,
                      "unseen_logprob": self.unseen_logprob_}

    @classmethod
    def _from_model_file(cls, meta, arrays):
        from ..errors import ModelFileError
        from ..io import validate as V

        model = V.from_params(cls, meta)
        model.tags_ = V.meta_strings(meta, "tags")
        if not model.tags_:
            raise ModelFileError("meta field 'tags': no tags")
        T2 = len(model.tags_) + 3
        h = V.get(arrays, "yield_hashes", "int", dtype=np.uint64)
        Y = len(h)
        if Y == 0:
            V.fail("yield_hashes", "no yields")
        if (h[1:] < h[:-1]).any():                      # binary-searched: sorted
            k = int(np.flatnonzero(h[1:] < h[:-1])[0])
            V.fail("yield_hashes", f"not sorted (entries {k} and {k + 1})")
        model.yield_hashes_ = h
        for name, shape in (("yield_logprob", (2, Y)), ("context_logprob", (2, T2 * T2)),
                            ("unseen_logprob", (2,))):
            a = V.check_finite(V.get(arrays, name, "float", ndim=len(shape), shape=shape,
                                     dtype=np.float64), name)
            if (a > 0).any():
                k = int(np.flatnonzero(a.ravel() > 0)[0])
                V.fail(name, f"entry {k} is {a.ravel()[k]}, a log-probability above 0")
            setattr(model, name + "_", a)
        ll = meta.get("log_likelihood")
        if not isinstance(ll, list) or not all(isinstance(x, (int, float)) and
                                               not isinstance(x, bool) for x in ll):
            raise ModelFileError("meta field 'log_likelihood': not a list of numbers")
        model.log_likelihood_ = [float(x) for x in ll]
        model.n_sentences_ = V.meta_int(meta, "n_sentences")
        model.fit_time_ = V.meta_float(meta, "fit_time")
        return model


def _decided_spans(lengths) -> np.ndarray:
    """For the spans of :func:`~._ccm_kernels.span_hashes` (every sentence's ``i < j``, by
    ``i`` then ``j``): True for those of two or more words short of the whole sentence, the
    spans a bracketing decides."""
    parts, cache = [], {}
    for n in lengths.tolist():
        mask = cache.get(n)
        if mask is None:
            i, j = np.triu_indices(n + 1, 1)
            mask = cache[n] = (j - i >= 2) & (j - i < n)
        parts.append(mask)
    return np.concatenate(parts) if parts else np.zeros(0, bool)


# ------------------------------------------------------------------------------------------------
def empty_span_contexts(offsets, ids, n_tags):
    """Counts of the contexts of the empty spans (the ``n + 1`` gaps of every sentence): context
    id ``left * (n_tags + 2) + right``, ``left`` the tag before the gap (``n_tags``: the
    sentence start), ``right`` the tag after it (``n_tags + 1``: the end).  Vectorised."""
    T = int(n_tags)
    offsets = np.asarray(offsets, np.int64)
    ids = np.asarray(ids, np.int64)
    n_s = len(offsets) - 1
    lens = np.diff(offsets)
    gap_sent = np.repeat(np.arange(n_s), lens + 1)
    gap = np.arange(len(gap_sent)) - np.repeat(offsets[:-1] + np.arange(n_s), lens + 1)
    pos = offsets[gap_sent] + gap                    # the word right of the gap
    last = max(len(ids) - 1, 0)
    safe = ids if len(ids) else np.zeros(1, np.int64)
    left = np.where(gap > 0, safe[np.clip(pos - 1, 0, last)], T)
    right = np.where(gap < lens[gap_sent], safe[np.clip(pos, 0, last)], T + 1)
    return np.bincount(left * (T + 2) + right, minlength=(T + 2) ** 2).astype(np.float64)


def branching_tree(words, tags, direction="right", label="X"):
    """The right- (or left-) branching tree of a sentence over its non-punctuation words
    (punctuation put back beside its neighbours)."""
    keep = strip_punctuation(tags)
    n = len(keep)
    if direction == "right":
        nodes = [(i, n, i + 1) for i in range(n - 1)]
    elif direction == "left":
        nodes = [(0, j, j - 1) for j in range(n, 1, -1)]
    else:
        raise ValueError(f"direction must be 'right' or 'left', got {direction!r}")
    return build_tree(list(words), list(tags), keep, nodes, label)


def random_tree(words, tags, rng, label="X"):
    """A binary tree over the non-punctuation words whose every split is uniform."""
    keep = strip_punctuation(tags)
    nodes, stack = [], [(0, len(keep))] if len(keep) >= 2 else []
    while stack:
        x, y = stack.pop()
        m = int(rng.integers(x + 1, y))
        nodes.append((x, y, m))
        if y - m >= 2:
            stack.append((m, y))
        if m - x >= 2:
            stack.append((x, m))
    return build_tree(list(words), list(tags), keep, nodes, label)
