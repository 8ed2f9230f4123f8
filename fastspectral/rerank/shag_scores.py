"""Re-ranking scores from the split-head-automaton (SHAG) model of Luque et al. (2012).

The library's second spectral latent-variable dependency model
(:class:`fastspectral.dependency.SHAGParser`: an operator SHAG over POS tags learned by the
spectral method, optionally multiplied by a lexicalised deterministic SHAG) gives every
candidate tree of a k-best list two scores:

* **tree weight** ``log |w(y)|`` and its sign: ``w(y)`` is the product over the heads ``h``
  (the root: right direction only) and directions ``d`` of the weight of ``h``'s
  head-outwards modifier sequence ``m_1 .. m_T``,
  ``beta[h,d]^T A[h,d,m_T] .. A[h,d,m_1] alpha1[h,d]`` (the operator part, eq. 1-2 of the
  paper, sign-indefinite for spectral models) times the deterministic part
  ``lw[h,m_1,k_0] .. lw[h,m_T,k_{T-1}] ls[h,d,k_T]`` (its state ``k`` driven by the
  modifiers' classes), exactly as the inside kernel (``fastspectral/_ext/shag.pyx``) weighs
  one tree; the sum of ``w(y)`` over all projective trees is the inside total
  ``exp(SHAGParser.log_weight)`` (tested by enumeration).  With a single-rooted model a tree
  with several root children gets weight 0 (as in the inside kernel).
* **arc posteriors**: ``sum over the tree's arcs of log max(mu[h, m], floor)`` with the arc
  posteriors ``mu`` of the inside-outside kernel (``SHAGParser.arc_posteriors``; sentences
  the model gives no weight use its DET+F fallback, as its parser does).

The tree weights are a product along each head's modifier sequences, not a recursion: one
Numba kernel (``cache=True``) over all candidates of all lists, parallel across sentences,
reading the deterministic model's arc / stop weights from the compiled
``BackoffSHAG.weights`` (computed once per sentence) and the operators of the model.
:func:`jackknife_shag_scores` scores jack-knifed training lists with a model trained on the
other folds only.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from .._jit import njit, prange

from ..base import check_jobs

__all__ = ["SHAG_DEFAULTS", "shag_scores", "jackknife_shag_scores", "new_shag", "tree_weights"]

#: the SHAG model of the re-ranker when its ``shag`` is None: the configuration
#: docs/notes/dependency.md chose for WSJ (spectral, 8 states, with LEX+FCP: 83.40 UAS alone)
SHAG_DEFAULTS = {"method": "spectral", "n_states": 8, "lexical": "lex+fcp"}
#: floor of the arc posteriors in the posterior score
POSTERIOR_FLOOR = 1e-6


def new_shag(params: dict | None = None):
    """A :class:`~fastspectral.dependency.SHAGParser` with ``SHAG_DEFAULTS`` updated by
    ``params``."""
    from ..dependency import SHAGParser

    return SHAGParser(**{**SHAG_DEFAULTS, **(params or {})})


@njit(cache=True, parallel=True)
def _tree_kernel(alpha1, beta, A, next_state, hsym, msym, cls, tok_off, lw, ls, pair_off, K,
                 mu, single_root, heads, cand_off, cand_hoff, floor, out_logw, out_sign,
                 out_post):  # pragma: no cover - numba
    """Tree weight (``out_logw``: ``log |w|``, ``out_sign``: -1 / 0 / +1) and summed clipped log
    arc posteriors (``out_post``) of every candidate.  Sentence ``b`` (positions ``tok_off[b]
    ..``, root first) has candidates ``cand_off[b] .. cand_off[b+1]`` (heads of word ``i`` at
    ``heads[cand_hoff[c] + i]``), arc weights ``lw`` at ``pair_off[b] * K``, stop weights
    ``ls`` at ``tok_off[b] * 2 * K`` and posteriors ``mu`` at ``pair_off[b]``."""
    N = alpha1.shape[2]
    for b in prange(len(tok_off) - 1):
        t0 = tok_off[b]
        n1 = tok_off[b + 1] - t0
        n = n1 - 1
        po = pair_off[b]
        cnt = np.zeros(n1 + 1, np.int64)
        start = np.zeros(n1 + 1, np.int64)
        kids = np.zeros(max(n, 1), np.int64)
        v = np.empty(N)
        v2 = np.empty(N)
        for c in range(cand_off[b], cand_off[b + 1]):
            hb = cand_hoff[c]
            # children of every head in linear order (counting sort)
            for h in range(n1 + 1):
                cnt[h] = 0
            nroot = 0
            post = 0.0
            for i in range(n):
                h = heads[hb + i]
                cnt[h + 1] += 1
                if h == 0:
                    nroot += 1
                x = mu[po + h * n1 + i + 1]
                post += np.log(x if x > floor else floor)
            out_post[c] = post
            start[0] = 0
            for h in range(n1):
                start[h + 1] = start[h] + cnt[h + 1]
                cnt[h + 1] = 0
            for i in range(n):
                h = heads[hb + i]
                kids[start[h] + cnt[h + 1]] = i + 1
                cnt[h + 1] += 1
            if single_root and nroot != 1:
                out_logw[c] = -np.inf
                out_sign[c] = 0.0
                continue
            logw = 0.0
            sign = 1.0
            for h in range(n1):
                hs = hsym[t0 + h]
                a, e = start[h], start[h + 1]
                split = a
                while split < e and kids[split] < h:
                    split += 1
                for d in range(2):
                    if h == 0 and d == 0:
                        continue          # the root has no left automaton
                    for i in range(N):
                        v[i] = alpha1[hs, d, i]
                    k = 0
                    T = split - a if d == 0 else e - split
                    for j in range(T):
                        # head-outwards: left kids from the nearest (right-most) one
                        m = kids[split - 1 - j] if d == 0 else kids[split + j]
                        wk = lw[(po + h * n1 + m) * K + k]
                        if wk <= 0.0:
                            logw = -np.inf
                        else:
                            logw += np.log(wk)
                        k = next_state[k, cls[t0 + m]]
                        ms = msym[t0 + m]
                        big = 0.0
                        for ip in range(N):
                            acc = 0.0
                            for ii in range(N):
                                acc += A[hs, d, ms, ip, ii] * v[ii]
                            v2[ip] = acc
                            if abs(acc) > big:
                                big = abs(acc)
                        if big == 0.0 or not np.isfinite(big):
                            logw = -np.inf
                            big = 1.0
                        for ip in range(N):
                            v[ip] = v2[ip] / big
                        logw += np.log(big)
                    s = 0.0
                    for i in range(N):
                        s += beta[hs, d, i] * v[i]
                    s *= ls[((t0 + h) * 2 + d) * K + k]
                    if s == 0.0 or not np.isfinite(s):
                        logw = -np.inf
                    else:
                        if s < 0.0:
                            sign = -sign
                        logw += np.log(abs(s))
            if logw == -np.inf or not np.isfinite(logw):
                out_logw[c] = -np.inf
                out_sign[c] = 0.0
            else:
                out_logw[c] = logw
                out_sign[c] = sign


def _model_arrays(parser, enc, pair_off):
    """The operator arrays and the deterministic part's arc / stop weights of ``enc``."""
    from ..dependency.inference import det_arrays

    K, next_state, lw, ls = det_arrays(parser.det_, enc, pair_off, parser._det_power(),
                                       np.int64)
    return parser.op_.astype_contiguous(), K, next_state, lw, ls


def _posteriors(parser, enc, threads):
    """Packed arc posteriors of ``enc`` (the fallback model's where the model gives a sentence
    no weight, as :class:`SHAGParser` parses)."""
    from ..dependency.inference import arc_marginals
    from ..dependency.spectral import OperatorSHAG

    res = arc_marginals(parser.op_, parser.det_, enc, parser.single_root_, threads,
                        parser._det_power())
    mu = res.mu
    bad = np.nonzero(res.status != 0)[0]
    if len(bad):
        H, M = len(parser.tags_) + 1, len(parser.tags_)
        fb = arc_marginals(OperatorSHAG.trivial(H, M), parser.fallback_, enc.subset(bad),
                           parser.single_root_, threads)
        for i, b in enumerate(bad):
            mu[res.pair_off[b]:res.pair_off[b + 1]] = fb.mu[fb.pair_off[i]:fb.pair_off[i + 1]]
    return mu, res.pair_off


def shag_scores(parser, sents, data, jobs=None, floor: float = POSTERIOR_FLOOR,
                batch: int = 256):
    """``(log |w|, sign, summed log posteriors)`` of every candidate of ``data`` (a
    :class:`~fastspectral.rerank.reranker.RerankData`, or anything with ``lengths``,
    ``cand_off``, ``cand_hoff`` and ``heads``: its sentence ``b`` is ``sents[b]``) under the
    fitted :class:`~fastspectral.dependency.SHAGParser` ``parser``; float64 arrays of
    ``data.n_candidates``.  Batches of ``batch`` sentences; ``jobs`` threads."""
    from ..dependency.inference import pair_offsets
    from .mst import numba_threads

    threads = check_jobs(jobs)
    sents = list(sents)
    cand_off = np.asarray(data.cand_off, np.int64)
    nc = int(cand_off[-1])
    if len(sents) != len(cand_off) - 1:
        raise ValueError(f"{len(sents)} sentences for {len(cand_off) - 1} k-best lists")
    logw, sign, post = np.empty(nc), np.empty(nc), np.empty(nc)
    heads = np.ascontiguousarray(data.heads, np.int64)
    hoff = np.ascontiguousarray(data.cand_hoff, np.int64)
    for a in range(0, len(sents), int(batch)):
        b = min(len(sents), a + int(batch))
        enc = parser.encode(sents[a:b], with_heads=False)
        if not np.array_equal(enc.lengths, np.asarray(data.lengths[a:b])):
            raise ValueError("the sentences do not match the k-best lists' lengths")
        pair_off = pair_offsets(enc)
        op, K, next_state, lw, ls = _model_arrays(parser, enc, pair_off)
        mu, _ = _posteriors(parser, enc, threads)
        lo, hi = int(cand_off[a]), int(cand_off[b])
        with numba_threads(threads):
            _tree_kernel(op.alpha1, op.beta, op.A, next_state,
                         enc.hsym.astype(np.int64), enc.msym.astype(np.int64),
                         enc.cls.astype(np.int64), enc.tok_off.astype(np.int64), lw, ls,
                         pair_off, K, mu, bool(parser.single_root_), heads,
                         cand_off[a:b + 1] - lo, hoff[lo:hi], float(floor),
                         logw[lo:hi], sign[lo:hi], post[lo:hi])
    return logw, sign, post


def tree_weights(parser, sent, trees, jobs=1):
    """``(log |w|, sign)`` of each tree (a list of 1-based head lists) of one sentence: for
    tests and inspection."""
    trees = [np.asarray(t, np.int64) for t in trees]
    n = len(sent.words)

    lists = SimpleNamespace(lengths=np.array([n], np.int64),
                            cand_off=np.array([0, len(trees)], np.int64),
                            cand_hoff=np.arange(len(trees), dtype=np.int64) * n,
                            heads=np.concatenate(trees) if trees else np.zeros(0, np.int64))
    lw, sg, _ = shag_scores(parser, [sent], lists, jobs)
    return lw, sg


def jackknife_shag_scores(sents, data, cuts, params: dict | None = None, jobs=None,
                          floor: float = POSTERIOR_FLOOR, fit_fn=None):
    """:func:`shag_scores` of jack-knifed lists: the lists of the sentences
    ``cuts[f] .. cuts[f+1]`` (fold ``f``) are scored by a SHAG model trained on the gold
    trees of the other folds only.  ``fit_fn(train_sentences)`` makes a fitted model
    (default: ``new_shag(params).fit``)."""
    sents = list(sents)
    fit_fn = fit_fn or (lambda tr: new_shag(params).fit(tr))
    cand_off = np.asarray(data.cand_off, np.int64)
    nc = int(cand_off[-1])
    out = (np.empty(nc), np.empty(nc), np.empty(nc))
    for f in range(len(cuts) - 1):
        a, b = int(cuts[f]), int(cuts[f + 1])
        model = fit_fn(sents[:a] + sents[b:])
        lo, hi = int(cand_off[a]), int(cand_off[b])

        part = SimpleNamespace(lengths=np.asarray(data.lengths[a:b]),
                               cand_off=cand_off[a:b + 1] - lo,
                               cand_hoff=np.asarray(data.cand_hoff[lo:hi]), heads=data.heads)
        for dst, src in zip(out, shag_scores(model, sents[a:b], part, jobs, floor)):
            dst[lo:hi] = src
    return out
