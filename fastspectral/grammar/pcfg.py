"""Plain (markovised) PCFG: the baseline parser, and the coarse grammar of the L-PCFGs.

>>> from fastspectral import PCFG
>>> from fastspectral.trees import read_ptb
>>> model = PCFG(v=2, h=1).fit(read_ptb("wsj-sample.mrg"))          # doctest: +SKIP
>>> trees = model.parse([["The", "dog", "barks", "."]])            # doctest: +SKIP

Training cleans each tree (function tags, traces), collapses unary chains and binarises with
vertical order ``v`` and horizontal order ``h`` (:func:`fastspectral.trees.transforms.prepare`),
then takes relative frequencies (:class:`~fastspectral.grammar.grammar.Grammar`).

Parsing runs the compiled CKY kernels on all sentences in parallel (``jobs`` OpenMP threads):

* ``decode="max-recall"`` (default): inside-outside, then Goodman's maximum expected labelled
  recall tree over base labels (intermediate ``@`` symbols are spliced out afterwards);
* ``decode="viterbi"``: the most probable derivation.

With ``prune_threshold`` (default 1e-4) and a fine grammar (v > 1 or h != 0) a coarse grammar
(v=1, h=0) is trained too and used for coarse-to-fine pruning: fine items whose coarse posterior
is below the threshold are never built.  If pruning leaves no parse, the sentence is reparsed
exhaustively; if the grammar has no parse at all (rare), the output is a flat tree over the
lexicon's best tags, and ``last_parse_stats_["fallback"]`` counts those sentences.
An empty sentence yields the empty tree ``(TOP )`` (EVALB treats it as a skip sentence).

Memory: a chart takes about ``n (n + 1) / 2 * S * 44`` bytes for an n-word sentence and S fine
symbols (about 0.4 GB for n = 100 with the default WSJ grammar), per thread.  A sentence whose
chart would exceed ``max_chart_bytes`` (default 4 GiB) is not parsed: it gets the flat fallback
tree and is counted in ``last_parse_stats_["too_long"]``.

Models built on a PCFG (the L-PCFGs of :mod:`fastspectral.lpcfg`, which use it as their pruning,
lexicon and fallback grammar) go through its public hooks only: :meth:`PCFG.fit_prepared` (fit
from trees and grammars they have already prepared), :meth:`PCFG.lexicon_options`,
:meth:`PCFG.best_tags`, and :meth:`PCFG.state` / :meth:`PCFG.from_state` (the model-file content).
"""
from __future__ import annotations

import os
import time

import numpy as np

from ..errors import NotFittedError
from ..io.modelfile import load_model_file, save_model_file
from ..trees.transforms import base_label, prepare
from ..trees.tree import Tree
from .chart import MAX_RECALL, VITERBI, flat_tree, nodes_to_tree, pack_lexical
from .grammar import Grammar

_DECODERS = {"max-recall": MAX_RECALL, "viterbi": VITERBI}


def _check_sentences(sentences, tags):
    if isinstance(sentences, (str, bytes)):
        raise TypeError("sentences must be a list of token lists, not a string")
    sentences = [list(s) for s in sentences]
    for k, s in enumerate(sentences):
        for w in s:
            if not isinstance(w, str):
                raise TypeError(f"sentence {k}: tokens must be str, got {type(w).__name__}")
            if not w or any(ch.isspace() for ch in w):
                raise ValueError(f"sentence {k}: invalid token {w!r} (empty or with whitespace)")
    if tags is not None:
        tags = list(tags)
        if len(tags) != len(sentences):
            raise ValueError(f"{len(tags)} tag sequences for {len(sentences)} sentences")
        for k, (s, t) in enumerate(zip(sentences, tags)):
            if t is not None and len(t) != len(s):
                raise ValueError(f"sentence {k}: {len(t)} tags for {len(s)} words")
    return sentences, tags


def default_jobs() -> int:
    """Number of worker threads used when ``jobs`` is None: the usable CPU count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover
        return max(1, os.cpu_count() or 1)


class PCFG:
    """Markovised PCFG estimated by relative frequency, parsed with compiled CKY.

    Parameters
    ----------
    v, h : markovisation orders (vertical >= 1, horizontal >= 0 or None for infinite).
    tag_parent : also parent-annotate preterminals (``NN^NP``); on by default (it gains about
        1.5 F1 on WSJ §22 at the same speed).
    decode : ``"max-recall"`` or ``"viterbi"``.
    prune_threshold : coarse-to-fine posterior threshold (None disables the coarse pass).
    rare_threshold, lex_smoothing, sig_smoothing : lexicon settings (see
        :mod:`fastspectral.grammar.lexicon`).
    jobs : default number of parsing threads (None: all CPUs).
    """

    input_kind = "sentences"
    model_kind = "pcfg"

    def __init__(self, v=2, h=1, tag_parent=True, decode="max-recall", prune_threshold=1e-4,
                 rare_threshold=1, lex_smoothing=0.5, sig_smoothing=1.0, jobs=None,
                 max_chart_bytes=4 * 2 ** 30):
        self.v = v
        self.h = h
        self.tag_parent = tag_parent
        self.decode = decode
        self.prune_threshold = prune_threshold
        self.rare_threshold = rare_threshold
        self.lex_smoothing = lex_smoothing
        self.sig_smoothing = sig_smoothing
        self.jobs = jobs
        self.max_chart_bytes = max_chart_bytes

    # -- validation ----------------------------------------------------------------------------
    def _validate_params(self):
        if not isinstance(self.v, (int, np.integer)) or self.v < 1:
            raise ValueError(f"v must be an integer >= 1, got {self.v!r}")
        if self.h is not None and (not isinstance(self.h, (int, np.integer)) or self.h < 0):
            raise ValueError(f"h must be an integer >= 0 or None, got {self.h!r}")
        if self.decode not in _DECODERS:
            raise ValueError(f"decode must be one of {sorted(_DECODERS)}, got {self.decode!r}")
        if self.prune_threshold is not None and not (0.0 <= self.prune_threshold < 1.0):
            raise ValueError(f"prune_threshold must be in [0, 1) or None, got {self.prune_threshold!r}")
        if self.jobs is not None and int(self.jobs) < 1:
            raise ValueError(f"jobs must be >= 1 or None, got {self.jobs!r}")

    def lexicon_options(self) -> dict:
        """Keyword arguments of :class:`~fastspectral.grammar.lexicon.Lexicon` for this model's
        lexicon settings (for :meth:`Grammar.from_trees` of grammars built outside :meth:`fit`)."""
        return {"rare_threshold": self.rare_threshold, "s1": self.lex_smoothing,
                "s2": self.sig_smoothing}

    @property
    def _uses_coarse(self):
        return self.prune_threshold is not None and (self.v > 1 or self.h != 0 or self.tag_parent)

    # -- learning ------------------------------------------------------------------------------
    def fit(self, trees):
        """Estimate from an iterable of treebank trees (raw or cleaned). Returns self."""
        self._validate_params()
        t0 = time.perf_counter()
        raw = list(trees)
        if not raw:
            raise ValueError("cannot fit a PCFG on an empty treebank")
        for k, t in enumerate(raw):
            if not isinstance(t, Tree):
                raise TypeError(f"tree {k} is a {type(t).__name__}, expected fastspectral.trees.Tree")
        fine = [prepare(t, self.v, self.h, self.tag_parent) for t in raw]
        coarse = None
        if self._uses_coarse:
            coarse = Grammar.from_trees([prepare(t, 1, 0, False) for t in raw],
                                        self.lexicon_options())
        self.fit_prepared(fine, coarse=coarse)
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def fit_prepared(self, fine_trees, grammar=None, coarse=None, fit_seconds=None):
        """Fit from trees that are already prepared; the hook of models built on this one.

        ``fine_trees``: the training trees after :func:`~fastspectral.trees.transforms.prepare`
        with this model's ``v``, ``h`` and ``tag_parent`` (rooted at ``TOP``), one per treebank
        tree.  ``grammar``: their :class:`~fastspectral.grammar.grammar.Grammar` when the caller
        has already estimated it with :meth:`lexicon_options` (default: estimated here).
        ``coarse``: the coarse grammar of coarse-to-fine parsing (symbols: the base labels of
        the fine ones, e.g. the ``v=1, h=0`` grammar of the same treebank); it is used as given,
        whatever ``prune_threshold``, ``v`` and ``h`` are; None: no coarse pass.
        ``fit_seconds``: recorded as ``fit_seconds_`` (default: the time this call took).

        Sets ``grammar_``, ``coarse_`` (with the fine-to-coarse projection ``proj_``),
        ``root_label_`` (most frequent label under ``TOP``, the root of fallback trees),
        ``n_train_trees_`` and ``fit_seconds_``, as :meth:`fit` does.  Returns self.
        """
        self._validate_params()
        t0 = time.perf_counter()
        fine = list(fine_trees)
        if not fine:
            raise ValueError("cannot fit a PCFG on an empty treebank")
        self.grammar_ = grammar if grammar is not None else \
            Grammar.from_trees(fine, self.lexicon_options())
        self.coarse_ = coarse
        if coarse is not None:
            self._set_projection()
        self.root_label_ = self._most_frequent_root(fine)
        self.n_train_trees_ = len(fine)
        self.fit_seconds_ = time.perf_counter() - t0 if fit_seconds is None else fit_seconds
        return self

    @staticmethod
    def _most_frequent_root(prepared):
        from collections import Counter
        c = Counter(base_label(t.children[0].label) for t in prepared if t.children)
        return c.most_common(1)[0][0] if c else "S"

    def _set_projection(self):
        cidx = {}
        for i, s in enumerate(self.coarse_.symbols):
            cidx.setdefault(base_label(s), i)
        proj = np.empty(self.grammar_.n_symbols, dtype=np.int32)
        for i, s in enumerate(self.grammar_.symbols):
            b = base_label(s)
            if b not in cidx:
                raise RuntimeError(f"fine symbol {s!r} has no coarse counterpart")
            proj[i] = cidx[b]
        self.proj_ = proj

    def _check_fitted(self):
        if not hasattr(self, "grammar_"):
            raise NotFittedError("this PCFG is not fitted yet: call fit(trees) or PCFG.load(path)")

    # -- parsing -------------------------------------------------------------------------------
    def parse(self, sentences, tags=None, jobs=None, progress=None, chunk_size=256):
        """Parse tokenised sentences; returns one :class:`Tree` per sentence (rooted at TOP).

        ``tags``: optional list (one entry per sentence, each None or a list of POS tags) of
        given tags.  ``jobs``: threads (default: the model's ``jobs``, else all CPUs).
        ``progress``: optional callable ``progress(done, total)``.
        """
        self._check_fitted()
        sentences, tags = _check_sentences(sentences, tags)
        jobs = int(jobs or self.jobs or default_jobs())
        out: list = [None] * len(sentences)
        S = self.grammar_.n_symbols
        limit = self.max_chart_bytes or float("inf")
        todo = [k for k, s in enumerate(sentences)
                if s and len(s) * (len(s) + 1) // 2 * S * 44 <= limit]
        too_long = [k for k, s in enumerate(sentences)
                    if s and len(s) * (len(s) + 1) // 2 * S * 44 > limit]
        for k, s in enumerate(sentences):
            if not s:
                out[k] = Tree("TOP", [])
        for k in too_long:
            out[k] = flat_tree(sentences[k], self.best_tags(sentences[k], None if tags is None
                                                             else tags[k]), self.root_label_)
        # longest first: better load balance across threads
        todo.sort(key=lambda k: -len(sentences[k]))
        stats = {"sentences": len(sentences), "empty": sum(1 for s in sentences if not s),
                 "fallback": 0, "too_long": len(too_long)}
        mode = _DECODERS[self.decode]
        g = self.grammar_
        cg = g.chart_grammar("max" if mode == VITERBI else "sum")
        use_coarse = self.coarse_ is not None and self.prune_threshold is not None
        from .._ext.cky import parse_batch

        done = 0
        if progress:
            progress(0, len(sentences))
        chunk = max(1, chunk_size) * jobs
        for c0 in range(0, len(todo), chunk):
            ids = todo[c0:c0 + chunk]
            sents = [sentences[k] for k in ids]
            stags = None if tags is None else [tags[k] for k in ids]
            lengths, offs, pos, sym, prob = pack_lexical(g, sents, stags)
            kwargs = {}
            if use_coarse:
                _, coffs, cpos, csym, cprob = pack_lexical(self.coarse_, sents, stags)
                kwargs = dict(coarse=self.coarse_.chart_grammar("sum"), proj=self.proj_,
                              coarse_lex_offsets=coffs, coarse_lex_pos=cpos,
                              coarse_lex_sym=csym, coarse_lex_prob=cprob,
                              threshold=float(self.prune_threshold))
            nodes, noff, counts, logz = parse_batch(cg, lengths, offs, pos, sym, prob, mode,
                                                    n_threads=jobs, **kwargs)
            for r, k in enumerate(ids):
                cnt = counts[r]
                words = sentences[k]
                if cnt < 0:
                    raise MemoryError(f"chart allocation failed for a sentence of {len(words)} words")
                if cnt == 0:
                    stats["fallback"] += 1
                    out[k] = flat_tree(words, self.best_tags(words, None if stags is None else stags[r]),
                                       self.root_label_)
                    continue
                triples = nodes[noff[r]: noff[r] + 3 * cnt].reshape(-1, 3)
                out[k] = nodes_to_tree(triples, words, g.classes, g.class_is_tag)
            done += len(ids)
            if progress:
                progress(done + stats["empty"] + len(too_long), len(sentences))
        self.last_parse_stats_ = stats
        return out

    def best_tags(self, words, tags=None):
        """The lexicon's highest-scoring tag (a base label) of every word of ``words``.

        ``tags``: None, or one given tag per word (a None entry, or a tag the grammar does not
        know, leaves that word free).  These are the tags of the flat fallback trees.
        """
        self._check_fitted()
        g = self.grammar_
        scores = g.lexicon.tag_word_scores(words, tags, g.tag_symbols)
        return [g.classes[g.sym_class[int(np.argmax(row))]] for row in scores]

    def log_probability(self, sentences, tags=None, jobs=None):
        """log P(sentence) under the grammar (inside algorithm), -inf when unparsable."""
        self._check_fitted()
        from .chart import marginals
        sentences, tags = _check_sentences(sentences, tags)
        return np.array([marginals(self.grammar_, s, None if tags is None else tags[k])["logz"]
                         if s else -np.inf for k, s in enumerate(sentences)])

    def prune(self, sentences, threshold=1e-5, tags=None, jobs=None):
        """Posterior pruning items (see :func:`fastspectral.grammar.chart.posterior_prune`)."""
        self._check_fitted()
        from .chart import posterior_prune
        sentences, tags = _check_sentences(sentences, tags)
        return posterior_prune(self.grammar_, sentences, threshold, tags,
                               int(jobs or self.jobs or default_jobs()))

    # -- persistence ---------------------------------------------------------------------------
    def get_params(self):
        return {"v": self.v, "h": self.h, "tag_parent": self.tag_parent, "decode": self.decode,
                "prune_threshold": self.prune_threshold, "rare_threshold": self.rare_threshold,
                "lex_smoothing": self.lex_smoothing, "sig_smoothing": self.sig_smoothing,
                "jobs": self.jobs, "max_chart_bytes": self.max_chart_bytes}

    def state(self):
        """The fitted model as ``(meta, arrays)``: a JSON-serialisable dict and a dict of numeric
        arrays, the content of the model file written by :meth:`save` (the array names start
        with ``fine_`` and ``coarse_``).  :meth:`from_state` reads it back."""
        self._check_fitted()
        gmeta, garr = self.grammar_.to_state("fine_")
        meta = {"params": self.get_params(), "grammar": gmeta, "root_label": self.root_label_,
                "n_train_trees": self.n_train_trees_, "fit_seconds": self.fit_seconds_}
        arrays = dict(garr)
        if self.coarse_ is not None:
            cmeta, carr = self.coarse_.to_state("coarse_")
            meta["coarse"] = cmeta
            arrays.update(carr)
        return meta, arrays

    def save(self, path):
        """Write the fitted model to ``path`` (versioned, pickle-free; see fastspectral.io)."""
        self._check_fitted()
        meta, arrays = self.state()
        save_model_file(path, self.model_kind, meta, arrays)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`."""
        _, meta, arrays = load_model_file(path, expected_kind=cls.model_kind)
        return cls.from_state(meta, arrays)

    @classmethod
    def _from_model_file(cls, meta, arrays):
        # the loader hook of fastspectral.io.modelfile.load (every model kind has one)
        return cls.from_state(meta, arrays)

    @classmethod
    def from_state(cls, meta, arrays):
        """The fitted model of a :meth:`state` ``(meta, arrays)`` pair (e.g. read from a file)."""
        model = cls(**meta["params"])
        model.grammar_ = Grammar.from_state(meta["grammar"], arrays, "fine_")
        model.coarse_ = None
        if "coarse" in meta:
            model.coarse_ = Grammar.from_state(meta["coarse"], arrays, "coarse_")
            model._set_projection()
        model.root_label_ = meta["root_label"]
        model.n_train_trees_ = meta["n_train_trees"]
        model.fit_seconds_ = meta["fit_seconds"]
        return model

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"PCFG({params})"
