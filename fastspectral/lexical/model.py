"""The lexical disambiguator of Shah et al. (2010) on the estimator base.

See :class:`LexicalDisambiguator`; the two stages are in :mod:`fastspectral.lexical.engine`,
the data layer in :mod:`fastspectral.lexical.data`, the context statistics in
:mod:`fastspectral.lexical.features`, the metrics in :mod:`fastspectral.lexical.metrics` and
the cross-validation of table 5 in :mod:`fastspectral.lexical.cv`.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..base import Parser
from ..errors import FormatError, ModelFileError
from . import engine as E
from .analyser import SuffixGuesser, normalise_analyses
from .data import (Corpus, LabelScheme, apply_labels, corpus_from_sentences, corpus_vocalised,
                   gc_paused)
from .features import FeatureSpace, parse_features

__all__ = ["LexicalDisambiguator", "VARIANTS", "Learned", "train", "candidates",
           "predict_labels", "check_sentences"]

#: the models of table 5 that :class:`LexicalDisambiguator` can be
VARIANTS = ("full", "uni", "baseline", "ind", "unigram")
#: the paper's names of the variants
PAPER_NAMES = {"full": "M_full", "uni": "M_uni", "baseline": "M_baseline", "ind": "M_ind",
               "unigram": "unigram"}
_UNKNOWN = ("suffix", "none")
_VOCALISED = ("auto", "yes", "no")
#: ``graded``: the targets g(i, k) of stage 2 — "no": 1 for the gold candidate, 0 for the
#: others (the paper's reading); "unknown": graded (share of LEs shared with the gold label)
#: for tokens outside the lexicon; "all": graded for every token; "inner": chosen
_GRADED = ("inner", "no", "unknown", "all")
#: the options ``graded="inner"`` compares, the first winning ties (the simpler targets)
GRADED_GRID = ("no", "unknown")
#: ``unknown_weights``: a second weight set for the tokens outside the lexicon
_UNKNOWN_WEIGHTS = ("inner", "yes", "no", True, False)
#: the options ``unknown_weights="inner"`` compares, the first winning ties (one weight set)
UNKNOWN_WEIGHTS_GRID = ("no", "yes")


# ------------------------------------------------------------------------------------------
# checks
# ------------------------------------------------------------------------------------------
def check_sentences(items, labelled: bool):
    """A list of :class:`~fastspectral.trees.conll.DepSentence` (TypeError otherwise); with
    ``labelled``, FormatError naming the sentence's line for a word whose LEMMA, UPOS and XPOS
    are all ``_`` (nothing to learn)."""
    from ..base import check_dep_sentences
    from ..trees.conll import DepSentence

    if isinstance(items, (str, bytes)):
        raise TypeError("expected a list of DepSentence objects (read_conllu), not a string")
    items = list(items)
    for s in items:
        if not isinstance(s, DepSentence):
            raise TypeError(f"expected DepSentence objects (fastspectral.trees.conll."
                            f"read_conllu), got {type(s).__name__}")
    check_dep_sentences(items)                  # string words
    if labelled:
        if not items or not any(len(s) for s in items):
            raise ValueError("no training sentences (the corpus is empty)")
        for s in items:
            for i in range(len(s)):
                if s.lemmas[i] == "_" and s.upos[i] == "_" and s.xpos[i] == "_" and \
                        s.feats[i] == "_":
                    line = None if s.line is None else s.line + len(s.comments) + i
                    raise FormatError(f"word {i + 1} ({s.words[i]!r}) has no LEMMA, UPOS, "
                                      "XPOS or FEATS: nothing to learn (lexical training needs "
                                      "annotated CoNLL-U)", None, line)
    return items


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, not {value!r}")
    return value


def _check_number(name, value, low, high=None, strict_low=False, allow_none=False):
    if value is None and allow_none:
        return None
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    x = float(value) if ok else float("nan")
    if not ok or not (x > low if strict_low else x >= low) or (high is not None and x > high):
        rng = f"{'>' if strict_low else '>='} {low}" + (f" and <= {high}" if high is not None
                                                        else "")
        raise ValueError(f"{name} must be a number {rng}{' or None' if allow_none else ''}, "
                         f"not {value!r}")
    return x


# ------------------------------------------------------------------------------------------
# learned state
# ------------------------------------------------------------------------------------------
@dataclass
class Learned:
    """Everything ``fit`` learns (shared by the estimator and the cross-validation)."""

    vocalised: bool
    scheme: LabelScheme
    space: E.LabelSpace
    fs: FeatureSpace
    cols: list             # template columns of F used as features
    tables: E.Tables
    guesser: SuffixGuesser
    rankers: dict          # name -> Ranker
    n_bins: int
    unknown: str
    stage2: dict           # name -> rows used by stage 2
    known_guesses: bool = False
    known_guesses_scores: dict | None = None   # E1 of the inner choice ("inner")
    graded: str = "unknown"                    # the resolved g(i, k) ("no", "unknown", "all")
    graded_scores: dict | None = None          # E1 of the inner choice ("inner")
    unknown_weights: bool = True               # the resolved second weight set
    unknown_weights_scores: dict | None = None  # E1 of the inner choice ("inner")

    def target(self, name: str) -> int:
        return self.space.target(name)


def _specs(space: E.LabelSpace, names) -> list:
    """The ranker specifications of the models ``names`` (``M_full``, ``M_uni``,
    ``M_baseline``, ``M_e:<LE>``, ``M_morph``)."""
    les = tuple(range(1, 1 + len(space.scheme.names)))
    lemma = space.target("Lemma")
    out = []
    for name in names:
        if name == "M_full":
            out.append(E.RankerSpec(name, -1, (0,) + les, (0, lemma)))
        elif name == "M_uni":
            out.append(E.RankerSpec(name, -1, (0,) + les, (0, lemma), uniform=True))
        elif name == "M_baseline":
            out.append(E.RankerSpec(name, -1, (0,), (0,)))
        elif name == "M_morph":
            m = space.target("Morph")
            out.append(E.RankerSpec(name, m, (m,), ()))
        elif name.startswith("M_e:"):
            m = space.target(name[4:])
            out.append(E.RankerSpec(name, m, (m,), (m,) if m == lemma else ()))
        else:  # pragma: no cover - internal
            raise KeyError(name)
    return out


def variant_rankers(variant: str) -> tuple:
    """The rankers a variant needs."""
    return {"full": ("M_full",), "uni": ("M_uni",), "baseline": ("M_baseline",),
            "ind": ("M_e:Lemma", "M_morph"), "unigram": ()}[variant]


def _split_point(corpus: Corpus, fraction: float) -> int:
    """First sentence of the second part: ``fraction`` of the sentences, moved forward to the
    next document boundary when there is one before the end."""
    n = corpus.n_sentences
    s1 = min(max(1, int(round(fraction * n))), n - 1) if n > 1 else n
    starts = corpus.sent_starts
    k = s1
    while 0 < k < n and corpus.docs[starts[k]] == corpus.docs[starts[k] - 1]:
        k += 1
    return k if k < n else s1


def _guesser_pairs(tables: E.Tables, fs: FeatureSpace, space: E.LabelSpace):
    words = fs.vocabs[0]
    ptr = tables.lex_ptr
    for w in range(len(ptr) - 1):
        for k in range(ptr[w], ptr[w + 1]):
            yield words[w], space.labels[tables.lex_label[k]]


class _LazyGuesser:
    """The suffix guesser of a fitted model (:class:`SuffixGuesser` of the lexicon's (word,
    label) pairs), fitted on first use: tagging text whose tokens the lexicon all knows (and
    a model without the guessed inflections) never needs it, and training only needs those of
    the stage-2 directions.  The same guesser either way."""

    def __init__(self, tables: E.Tables, fs: FeatureSpace, space: E.LabelSpace,
                 vocalised: bool):
        self._args = (tables, fs, space, vocalised)
        self._fitted = None

    def fitted(self) -> SuffixGuesser:
        if self._fitted is None:
            tables, fs, space, voc = self._args
            self._fitted = SuffixGuesser().fit(_guesser_pairs(tables, fs, space), voc)
        return self._fitted

    def __call__(self, token: str) -> list:
        return self.fitted()(token)

    def inflections(self, token: str, lemmas) -> list:
        return self.fitted().inflections(token, lemmas)

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_args", "_fitted"):
            raise AttributeError(name)
        return getattr(self.fitted(), name)


def candidates(learned_tables: E.Tables, space: E.LabelSpace, fs: FeatureSpace,
               guesser: SuffixGuesser, tokens: list, F: np.ndarray, *, analyser=None,
               unknown: str = "suffix", vocalised: bool = False, tags=None,
               known_guesses: bool = False) -> E.Candidates:
    """The candidate sets ``C(t)`` of every token (eq. 9): the labels seen with the token in the
    counted data (most frequent first; a token not seen as written is looked up in lower
    case), the analyser's answers, and for tokens that neither knows the suffix guesser's
    analyses (``unknown="suffix"``) or a single empty analysis (``"none"``).  With
    ``known_guesses`` a known token also gets the guesser's analyses whose lemma is one of its
    lexicon lemmas (:meth:`SuffixGuesser.inflections`: unseen inflections of a known lexeme,
    the role SAMA's full analysis lists play in the paper).  ``tags``: one tag
    per token or None; candidates whose UPOS or XPOS is the tag are kept when there are any.

    A candidate set depends only on the token's string: the sets are built once per word type
    and spread over the tokens by vectorised indexing."""
    from .features import _type_ids

    ov = space.overlay()
    index = fs.index()[0]
    lex_ptr, lex_label = learned_tables.lex_ptr, learned_tables.lex_label
    n_words = len(lex_ptr) - 1
    ids, types = _type_ids(tokens)
    n_types = len(types)
    # the lexicon entry of every type: its Freq id, else its lower-case form's
    tw = np.full(n_types, -1, dtype=np.int64)
    if len(tokens):
        tw[ids] = F[:, 0]
    has = (tw >= 0) & (tw < n_words)
    has[has] = lex_ptr[tw[has] + 1] > lex_ptr[tw[has]]
    for k in np.nonzero(~has)[0]:
        t = types[k]
        if t != t.lower():
            w = index.get(t.lower(), -1)
            if 0 <= w < n_words and lex_ptr[w + 1] > lex_ptr[w]:
                tw[k] = w
                has[k] = True
    n_lex = np.where(has, lex_ptr[np.where(has, tw, 0) + 1] - lex_ptr[np.where(has, tw, 0)], 0)
    extra: dict = {}
    if analyser is not None:
        for k, t in enumerate(types):
            lex = set(lex_label[lex_ptr[tw[k]]:lex_ptr[tw[k] + 1]].tolist()) if has[k] else set()
            more = []
            for lab in normalise_analyses(t, analyser(t), vocalised):
                j = ov.add(lab)
                if j not in lex and j not in more:
                    more.append(j)
            if more:
                extra[k] = more
    n_analysed = {k: len(v) for k, v in extra.items()}
    if known_guesses and unknown == "suffix":
        labels = space.labels
        for k in np.nonzero(has)[0]:
            lex = lex_label[lex_ptr[tw[k]]:lex_ptr[tw[k] + 1]].tolist()
            more = list(extra.get(int(k), []))
            seen = set(lex) | set(more)
            for lab in guesser.inflections(types[k], {labels[j][0] for j in lex}):
                j = ov.add(lab)
                if j not in seen:
                    seen.add(j)
                    more.append(j)
            if more:
                extra[int(k)] = more
    for k in np.nonzero(~has)[0]:
        if int(k) in extra:
            continue
        t = types[k]
        cand = [ov.add(lab) for lab in guesser(t)] if unknown == "suffix" else []
        extra[int(k)] = cand or [ov.add(("_", "_", "_", "_", t if vocalised else ""))]
    # per-type candidate rows: the lexicon's labels, then the extra ones
    n_extra = np.zeros(n_types, dtype=np.int64)
    for k, more in extra.items():
        n_extra[k] = len(more)
    type_n = n_lex + n_extra
    type_ptr = np.concatenate([[0], np.cumsum(type_n)]).astype(np.int64)
    type_label = np.empty(int(type_ptr[-1]), dtype=np.int64)
    lex_rows, _ = E.token_rows(lex_ptr, tw[has])
    # the first n_lex rows of every known type hold its lexicon labels
    first = np.repeat(type_ptr[:-1][has], n_lex[has]) + \
        (np.arange(int(n_lex[has].sum())) - np.repeat(np.cumsum(n_lex[has]) - n_lex[has],
                                                      n_lex[has]))
    type_label[first] = lex_label[lex_rows]
    for k, more in extra.items():
        s = type_ptr[k] + n_lex[k]
        type_label[s:s + len(more)] = more
    # the rows added by known_guesses: past the lexicon's and the analyser's labels of a
    # known type
    type_infl = np.zeros(len(type_label), dtype=bool)
    if known_guesses and len(type_label):
        n_an = np.zeros(n_types, dtype=np.int64)
        for k, v in n_analysed.items():
            n_an[k] = v
        row_type = np.repeat(np.arange(n_types), type_n)
        pos = np.arange(len(type_label)) - type_ptr[:-1][row_type]
        type_infl = has[row_type] & (pos >= (n_lex + n_an)[row_type])
    rows, ptr = E.token_rows(type_ptr, ids)
    label = type_label[rows]
    inflected = type_infl[rows]
    known = has[ids] if len(tokens) else np.zeros(0, dtype=bool)
    if tags is not None and len(label):
        label, ptr = _filter_by_tags(label, ptr, tags, ov)
        inflected = None
    lv = ov.lv()[label] if len(label) else np.zeros((0, space.n_targets), np.int32)
    return E.Candidates(ptr, label, np.ascontiguousarray(lv, dtype=np.int32), ov, known,
                        inflected)


def _filter_by_tags(label, ptr, tags, ov):
    """Keep the rows whose UPOS or XPOS is the token's tag when the token has a tag and such
    rows (vectorised over rows)."""
    tag_id: dict = {}
    tok_tag = np.array([-1 if t in (None, "_") else tag_id.setdefault(t, len(tag_id))
                        for t in tags], dtype=np.int64)
    ulab, inv = np.unique(label, return_inverse=True)
    up = np.array([tag_id.get(ov.label(int(k))[1], -2) for k in ulab], dtype=np.int64)[inv]
    xp = np.array([tag_id.get(ov.label(int(k))[2], -2) for k in ulab], dtype=np.int64)[inv]
    row_tok = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    t = tok_tag[row_tok]
    match = (t >= 0) & ((up == t) | (xp == t))
    any_match = np.bincount(row_tok, weights=match, minlength=len(ptr) - 1) > 0
    keep = match | ~any_match[row_tok]
    counts = np.bincount(row_tok[keep], minlength=len(ptr) - 1)
    return label[keep], np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def _graded_value(graded):
    """``graded`` as "no", "unknown" or "all" (True: "all"; False / None: "no")."""
    if graded is True:
        return "all"
    if graded is False or graded is None:
        return "no"
    return _check_choice("graded", graded, ("no", "unknown", "all"))


def _stage2_rows(cands: E.Candidates, level: int, gold_lv: np.ndarray, n_targets: int,
                 graded, n_les: int):
    """Stage-2 rows: ``(token index, ptr, vals, g)`` of the tokens with two candidates or more
    whose targets ``g(i, k)`` differ: 1 for the gold candidate and 0 for the others, or
    (``graded``, label rankers) the share of the ``n_les`` label elements a candidate shares
    with the gold label; ``graded="unknown"``: graded for the tokens outside the lexicon
    (``"all"`` or True: every token; ``"no"``, False or None: 0/1)."""
    graded = _graded_value(graded)
    ptr, vals = E.row_values(cands, level, n_targets)
    col = 0 if level < 0 else level
    tok_of_row = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    gold = gold_lv[tok_of_row]
    y = (vals[:, col] == gold[:, col]).astype(np.float64)
    if graded != "no" and level < 0 and n_les:
        share = (vals[:, 1:1 + n_les] == gold[:, 1:1 + n_les]).mean(axis=1)
        use = np.ones(len(y), dtype=bool) if graded == "all" else ~cands.known[tok_of_row]
        y[use] = np.maximum(y[use], share[use])
    graded_tok = np.zeros(len(ptr) - 1, dtype=bool)
    if graded != "no" and level < 0 and n_les:
        graded_tok[:] = True if graded == "all" else ~cands.known
    n_rows = np.diff(ptr)
    n_tok = len(ptr) - 1
    hi = np.full(n_tok, -np.inf)
    lo = np.full(n_tok, np.inf)
    has = n_rows > 0            # a token's rows are contiguous: reduce them in one pass
    if has.any():
        starts = ptr[:-1][has]
        hi[has] = np.maximum.reduceat(y, starts)
        lo[has] = np.minimum.reduceat(y, starts)
    ok = (n_rows >= 2) & (hi > lo)
    n_hit = np.bincount(tok_of_row, weights=(y == 1.0), minlength=n_tok)
    ok &= graded_tok | (n_hit == 1)
    keep_tok = np.nonzero(ok)[0]
    keep_row = ok[tok_of_row]
    new_ptr = np.concatenate([[0], np.cumsum(n_rows[keep_tok])]).astype(np.int64)
    return keep_tok, new_ptr, np.ascontiguousarray(vals[keep_row]), y[keep_row]


#: stage-2 tokens (both directions together, per weight set) of each ranker's final fit,
#: drawn with ``random_state`` when there are more (a cost bound, not tuned; 20,000 until
#: the sixth speed session, see docs/lexical.md)
STAGE2_TOKENS = 10000


def train(sentences, *, rankers, features="all", vocalised="auto", split=0.5, refit=True,
          C=None, epsilon=None, frequency_classes=5, unknown="suffix", analyser=None,
          max_iter=1000, random_state=0, with_morph=False,
          loss="squared_epsilon_insensitive", graded="inner", unknown_weights="inner",
          cross_fit=True, stage2_tokens=STAGE2_TOKENS, known_guesses="inner") -> Learned:
    """Fit the stage-1 tables and the ``rankers`` (see :func:`_specs`) on labelled
    sentences (the body of :meth:`LexicalDisambiguator.fit`, shared with the
    cross-validation).  ``known_guesses``, ``graded`` and ``unknown_weights`` equal to
    ``"inner"`` are chosen on an inner split of these sentences (:func:`_choose_settings`)."""
    templates = parse_features(features)
    voc = corpus_vocalised(sentences) if vocalised == "auto" else vocalised == "yes"
    choose = known_guesses == "inner" and unknown == "suffix"
    kg_scores = g_scores = uw_scores = None
    known_guesses = voc if known_guesses == "auto" else known_guesses in (True, "yes")
    choose_g = graded == "inner"
    graded = "unknown" if choose_g else _graded_value(graded)
    choose_uw = unknown_weights == "inner"
    unknown_weights = True if choose_uw else unknown_weights in (True, "yes")
    corpus = corpus_from_sentences(sentences, voc)
    scheme = LabelScheme.from_labels(set(corpus.labels), voc)
    space = E.LabelSpace(scheme, with_morph)
    label_id = {lab: space.add(lab) for lab in dict.fromkeys(corpus.labels)}
    ids = np.fromiter((label_id[lab] for lab in corpus.labels), dtype=np.int64,
                      count=len(corpus.labels))
    fs = FeatureSpace.for_features(templates).fit(corpus.tokens, corpus.sent_starts)
    F = fs.transform(corpus.tokens, corpus.sent_starts)
    V = space.lv[ids]
    cols = [c for c, name in enumerate(fs.names) if name in templates]
    use_doc = "Doc" in templates

    def make_specs(uw):
        return [E.RankerSpec(s.name, s.level, s.targets, s.doc_targets if use_doc else (),
                             s.uniform, 2 if uw and not s.uniform else 1)
                for s in _specs(space, rankers)]

    specs = make_specs(unknown_weights)
    targets = sorted({m for s in specs for m in s.targets} | {0})
    doc_targets = sorted({m for s in specs for m in s.doc_targets})
    n_values = space.n_values()
    n_bins = int(frequency_classes)
    all_idx = np.arange(len(corpus))
    rankers_out: dict = {}
    stage2: dict = {}
    trainable = [s for s in specs if not s.uniform]
    # graded targets and the second weight set only matter to rankers with a stage 2
    choose_g = choose_g and bool(trainable)
    choose_uw = choose_uw and bool(trainable)
    if corpus.n_sentences < 2:
        choose = choose_g = choose_uw = False
    if (trainable or choose) and corpus.n_sentences >= 2:
        s1 = _split_point(corpus, split)
        cut = corpus.sent_starts[s1]
        parts = [(all_idx[:cut], all_idx[cut:])]
        if cross_fit:
            parts.append((all_idx[cut:], all_idx[:cut]))
        n_les = len(scheme.names)
        dirs = []
        for count_idx, row_idx in parts:
            tab = E.Tables.build(F, V, count_idx, corpus.docs, targets, doc_targets, fs.sizes,
                                 n_values)
            gue = SuffixGuesser().fit(_guesser_pairs(tab, fs, space), voc)
            Fr = np.ascontiguousarray(F[row_idx])
            cands = candidates(tab, space, fs, gue, [corpus.tokens[i] for i in row_idx], Fr,
                               analyser=analyser, unknown=unknown, vocalised=voc,
                               known_guesses=known_guesses or choose)
            S, qloc = tab.doc_similarity(Fr[:, 0], np.asarray(corpus.docs)[row_idx])
            dirs.append((tab, gue, Fr, cands, S, qloc, V[row_idx]))
        tables1, guesser1 = dirs[0][0], dirs[0][1]
        if choose or choose_g or choose_uw:
            inner = _InnerE1(dirs, space, cols, n_bins, n_les, C, epsilon, max_iter,
                             random_state, loss, use_doc)
            if choose:
                kg, kg_scores = _choose_known_guesses(inner, graded, unknown_weights)
                known_guesses = kg
            if choose_g:
                graded, g_scores = _choose_settings(
                    inner, {g: (known_guesses, g, unknown_weights) for g in GRADED_GRID})
            if choose_uw:
                uw, uw_scores = _choose_settings(
                    inner, {u: (known_guesses, graded, u == "yes")
                            for u in UNKNOWN_WEIGHTS_GRID})
                unknown_weights = uw == "yes"
            inner._fits.clear()     # the memo's design matrices: not needed any more
        if choose and not known_guesses:
            dirs = inner._plain if inner._plain is not None else \
                [d[:3] + (d[3].without_inflections(),) + d[4:] for d in dirs]
        specs = make_specs(unknown_weights)
        trainable = [s for s in specs if not s.uniform]
        for spec in trainable:      # each final fit chooses its own (C, epsilon)
            ranker, n_rows = _fit_ranker(spec, dirs, space, cols, n_bins, graded, n_les, C,
                                         epsilon, max_iter, random_state, loss, stage2_tokens)
            stage2[spec.name] = n_rows
            if ranker is not None:
                rankers_out[spec.name] = ranker
        if not refit:
            tables, guesser = tables1, guesser1
    for spec in specs:
        if spec.name not in rankers_out:
            lam, lam_doc = E.uniform_weights(spec, len(cols), n_bins)
            rankers_out[spec.name] = E.Ranker(spec, lam, lam_doc, 0.0, None, 0)
    if refit or not trainable or corpus.n_sentences < 2:
        tables = E.Tables.build(F, V, all_idx, corpus.docs, targets, doc_targets, fs.sizes,
                                n_values)
        guesser = _LazyGuesser(tables, fs, space, voc)
    return Learned(voc, scheme, space, fs, cols, tables, guesser, rankers_out, n_bins,
                   unknown, stage2, bool(known_guesses), kg_scores, graded, g_scores,
                   bool(unknown_weights), uw_scores)


def _digest(*parts) -> bytes:
    """A 128-bit digest of arrays (dtype, shape and bytes) and plain values: the key of the
    inner fits' memo (:func:`_fit_ranker`'s ``memo``)."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        if isinstance(p, np.ndarray):
            a = np.ascontiguousarray(p)
            h.update(repr((a.dtype.str, a.shape)).encode())
            h.update(memoryview(a).cast("B"))
        else:
            h.update(repr(p).encode())
        h.update(b"\x00")
    return h.digest()


def _per_block(value, blk):
    """``C`` or ``epsilon`` of weight set ``blk``: ``value`` itself, or its entry ``blk`` of
    a list (the first entry beyond its end)."""
    if isinstance(value, list):
        return value[blk] if blk < len(value) else value[0]
    return value


def _fit_ranker(spec, dirs, space, cols, n_bins, graded, n_les, C, epsilon, max_iter,
                random_state, loss, stage2_tokens, use=None, memo=None):
    """Stage 2 of one ranker on the rows of the directions ``dirs`` (``(tables, guesser, F,
    candidates, S, qloc, gold values)`` of each): ``(Ranker or None, stage-2 rows)``.
    ``use``: per direction a boolean mask of the tokens that may give stage-2 rows (None:
    all).  ``C`` / ``epsilon``: a number, None (the grid of :func:`E.fit_lambda`) or one
    of these per weight set (a list; a block beyond its end takes its first entry).

    ``memo``: a dict shared by fits on the same ``dirs`` (the inner choices): a design matrix
    is keyed by its direction and a digest of its inputs (tokens, candidate values, row
    groups), a weight set's fit by the keys of its pieces, its targets and the SVR's
    settings — the settings compared on the inner split often leave a weight set's rows as
    they are (``graded`` changes only the targets of tokens outside the lexicon, which have
    their own weight set; with every stage-2 token known, ``unknown_weights`` changes nothing),
    and those fits are then taken from the memo, not repeated (the same inputs give the same
    weights)."""
    one = E.RankerSpec(spec.name, spec.level, spec.targets, spec.doc_targets, spec.uniform, 1)
    lam, lam_doc = E.uniform_weights(spec, len(cols), n_bins)
    pieces = [[] for _ in range(spec.blocks)]
    n_rows = 0
    for d, (tab, _, Fr, cands, S, qloc, gold_lv) in enumerate(dirs):
        keep, ptr, vals, y = _stage2_rows(cands, spec.level, gold_lv, space.n_targets,
                                          graded, n_les)
        if use is not None:
            sub = np.nonzero(use[d][keep])[0]
            rows, ptr = E.token_rows(ptr, sub)
            keep, vals, y = keep[sub], vals[rows], y[rows]
        blocks = E.token_blocks(spec, cands.known[keep])
        for blk in range(spec.blocks):
            sel = np.nonzero(blocks == blk)[0]
            cap = None if stage2_tokens is None else -(-int(stage2_tokens) // len(dirs))
            if cap is not None and len(sel) > cap:
                rng = np.random.default_rng([random_state or 0, blk, d])
                sel = np.sort(rng.choice(sel, cap, replace=False))
            if len(sel) == 0:
                continue
            rows, p2 = E.token_rows(ptr, sel)
            v = np.ascontiguousarray(vals[rows])
            key = None if memo is None else \
                ("design", d, _digest(keep[sel], v, p2, one.targets, one.doc_targets, n_bins,
                                      tuple(cols)))
            X = None if key is None else memo.get(key)
            if X is None:
                X = E.design(tab, np.ascontiguousarray(Fr[keep[sel]]), cols, p2, v, one,
                             n_bins, S, qloc[keep[sel]], np.zeros(len(sel), np.int64))
                if key is not None:
                    memo[key] = X
            pieces[blk].append((X, y[rows], p2, len(sel), key))
            n_rows += len(rows)
    cs, es, b = [], [], 0.0
    for blk in range(spec.blocks):
        if sum(pc[3] for pc in pieces[blk]) < 2:
            cs.append(None)
            es.append(None)
            continue
        y = np.concatenate([pc[1] for pc in pieces[blk]])
        offs = np.cumsum([0] + [pc[2][-1] for pc in pieces[blk]])
        p2 = np.concatenate([pieces[blk][0][2][:1]] +
                            [pc[2][1:] + o for pc, o in zip(pieces[blk], offs)])
        c_b, e_b = _per_block(C, blk), _per_block(epsilon, blk)
        key = None if memo is None else \
            ("fit", tuple(pc[4] for pc in pieces[blk]), _digest(y, p2), c_b, e_b, max_iter,
             random_state, loss)
        fitted = None if key is None else memo.get(key)
        if fitted is None:
            X = sp.vstack([pc[0] for pc in pieces[blk]]).tocsr()
            fitted = E.fit_lambda(X, y, p2, c_b, e_b, max_iter, random_state, loss)
            if key is not None:
                memo[key] = fitted
                # the last fit of a grid is the fit with the chosen pair: the same weights
                memo[key[:3] + (fitted[2], fitted[3]) + key[5:]] = fitted
        coef, b_blk, c, e = fitted
        lb, ld = E.unpack(one, coef, len(cols), n_bins)
        lam[blk], lam_doc[blk] = lb[0], ld[0]
        cs.append(c)
        es.append(e)
        if blk == 0:
            b = b_blk
    if not any(c is not None for c in cs):
        return None, n_rows
    return E.Ranker(spec, lam, lam_doc, b, cs, n_rows, es), n_rows


#: stage-2 tokens (both directions together, per weight set) of each fit that chooses
#: ``known_guesses``, ``graded`` or ``unknown_weights`` on the inner split (a cost bound,
#: not tuned; 6,000 until the sixth speed session, see docs/lexical.md)
CHOICE_TOKENS = 3000


class _InnerE1:
    """The inner split of the training data on which ``known_guesses``, ``graded`` and
    ``unknown_weights`` are chosen: M_full is fitted on the first half of the stage-2 tokens
    of every direction (at most :data:`CHOICE_TOKENS`; ``C`` and ``epsilon`` of each weight
    set chosen by the grid of the first of these fits, then kept in ``pairs`` for the later
    ones — the final fits choose their own) and its E1 measured on all tokens of the second
    halves (scored with the counts of the other part of the training data; uncovered tokens
    are errors).  Training data only.
    ``self(known_guesses, graded, unknown_weights)`` is that E1 (memoised); ``tokens``: the
    number of inner evaluation tokens."""

    def __init__(self, dirs, space, cols, n_bins, n_les, C, epsilon, max_iter, random_state,
                 loss, use_doc):
        self.dirs, self.space, self.cols, self.n_bins, self.n_les = \
            dirs, space, cols, n_bins, n_les
        self.fit_args = (C, epsilon, max_iter, random_state, loss)
        self.base = _specs(space, ["M_full"])[0]
        self.use_doc = use_doc
        self.halves = [len(d[2]) // 2 for d in dirs]
        self.use = [np.arange(len(d[2])) < h for d, h in zip(dirs, self.halves)]
        self.tokens = sum(len(d[2]) - h for d, h in zip(dirs, self.halves))
        self._memo: dict = {}
        self._fits: dict = {}      # design matrices, fits and scores shared by the settings
        self._plain = None
        #: ``(C, epsilon)`` per weight set, chosen by the grid of the first inner fit and
        #: reused by the later inner fits (None: not yet chosen)
        self.pairs = None

    def __call__(self, known_guesses: bool, graded: str, unknown_weights: bool) -> float:
        key = (bool(known_guesses), graded, bool(unknown_weights))
        if key in self._memo:
            return self._memo[key]
        base, space = self.base, self.space
        spec = E.RankerSpec(base.name, base.level, base.targets,
                            base.doc_targets if self.use_doc else (), False,
                            2 if unknown_weights else 1)
        ds = self.dirs
        if not known_guesses:
            if self._plain is None:
                self._plain = [d[:3] + (d[3].without_inflections(),) + d[4:] for d in ds]
            ds = self._plain
        C, epsilon, max_iter, random_state, loss = self.fit_args
        if self.pairs is not None:
            C, epsilon = self.pairs
        ranker, _ = _fit_ranker(spec, ds, space, self.cols, self.n_bins, graded, self.n_les,
                                C, epsilon, max_iter, random_state, loss, CHOICE_TOKENS,
                                self.use, memo=self._fits)
        if self.pairs is None and ranker is not None and ranker.C[0] is not None:
            # a weight set without a fit (too few tokens) keeps the grid (None)
            self.pairs = (list(ranker.C), list(ranker.epsilon))
        if ranker is None:
            lam, lam_doc = E.uniform_weights(spec, len(self.cols), self.n_bins)
            ranker = E.Ranker(spec, lam, lam_doc, 0.0, None, 0)
        errors = 0
        for d, ((tab, _, Fr, cands, S, qloc, gold_lv), h) in enumerate(zip(ds, self.halves)):
            ev = np.arange(h, len(Fr))
            blocks = E.token_blocks(spec, cands.known[ev])
            # the errors depend on the candidates and on the weights of the blocks in use
            used = np.unique(blocks)
            lam = np.asarray(ranker.lam).reshape(spec.blocks, -1)[used]
            lam_doc = np.asarray(ranker.lam_doc).reshape(spec.blocks, -1)[used]
            key = ("errors", d, bool(known_guesses),
                   _digest(blocks, lam, lam_doc, ranker.intercept, spec.targets,
                           spec.doc_targets))
            err = self._fits.get(key)
            if err is None:
                ptr, vals = E.row_values(cands, -1, space.n_targets)
                rows, p2 = E.token_rows(ptr, ev)
                v = np.ascontiguousarray(vals[rows])
                sc = E.score(tab, np.ascontiguousarray(Fr[ev]), self.cols, p2, v, ranker,
                             self.n_bins, S, qloc[ev], blocks)
                best, _ = E.top2(p2, sc)
                err = int(np.sum(v[best, 0] != gold_lv[ev, 0]))
                self._fits[key] = err
            errors += err
        out = 100.0 * errors / max(self.tokens, 1)
        self._memo[key] = out
        return out


def _choose_settings(inner: _InnerE1, options: dict):
    """The option of ``options`` (``{name: (known_guesses, graded, unknown_weights)}``, in
    order of preference) with the lowest inner E1, ties to the earlier:
    ``(name, {name: E1, ..., "tokens": n})``."""
    scores = {name: inner(*setting) for name, setting in options.items()}
    best = min(scores, key=lambda k: (scores[k], list(options).index(k)))
    scores["tokens"] = inner.tokens
    return best, scores


def _choose_known_guesses(inner: _InnerE1, graded, unknown_weights):
    """``known_guesses="inner"``: M_full with and without the guessed inflections of known
    tokens compared on the inner split (:class:`_InnerE1`; ``graded`` and
    ``unknown_weights`` at their defaults when they are chosen too — they are chosen next,
    one after the other).  Returns ``(yes?, {"no": E1, "yes": E1, "tokens": n})``; ties:
    no."""
    name, scores = _choose_settings(inner, {"no": (False, graded, unknown_weights),
                                            "yes": (True, graded, unknown_weights)})
    return name == "yes", scores


def _rank(learned: Learned, cands, F, S, qloc, name, threads=None):
    r = learned.rankers[name]
    ptr, vals = E.row_values(cands, r.spec.level, learned.space.n_targets)
    scores = E.score(learned.tables, F, learned.cols, ptr, vals, r, learned.n_bins, S, qloc,
                     E.token_blocks(r.spec, cands.known), threads)
    best, second = E.top2(ptr, scores)
    col = 0 if r.spec.level < 0 else r.spec.level
    return vals[:, col], scores, best, second


def predict_labels(learned: Learned, corpus: Corpus, models, *, analyser=None, tags=None,
                   threads=None):
    """Top-two labels of every token for each model of ``models`` (``unigram``, ``M_full``,
    ``M_uni``, ``M_baseline``, ``M_ind``, ``M_e:<LE>`` — the last gives LE values): ``{name:
    (first, second)}``, lists of label tuples (values for ``M_e``; ``None`` where there is no
    second choice), plus ``"_candidates"``: the candidate labels of every token."""
    F = learned.fs.transform(corpus.tokens, corpus.sent_starts)
    cands = candidates(learned.tables, learned.space, learned.fs, learned.guesser,
                       corpus.tokens, F, analyser=analyser, unknown=learned.unknown,
                       vocalised=learned.vocalised, tags=tags,
                       known_guesses=learned.known_guesses)
    S, qloc = learned.tables.doc_similarity(F[:, 0], np.asarray(corpus.docs))
    ov = cands.overlay
    out = {}
    n = len(corpus)
    labels = _LabelLookup(ov)
    for name in models:
        if name == "unigram":
            ptr = cands.ptr
            lab = cands.label
            first = labels.take(lab[ptr[:-1]]) if n else []
            has2 = np.diff(ptr) > 1
            second = labels.take(np.where(has2, lab[np.minimum(ptr[:-1] + 1, len(lab) - 1)],
                                          -1)) if n else []
            out[name] = (first, second)
        elif name == "M_ind":
            lem = learned.target("Lemma")
            mor = learned.target("Morph")
            lv, ls, lb, l2 = _rank(learned, cands, F, S, qloc, "M_e:Lemma", threads)
            mv, ms, mb, m2 = _rank(learned, cands, F, S, qloc, "M_morph", threads)
            first, second = [], []
            for j in range(n):
                lemma1 = ov.value(lem, int(lv[lb[j]]))
                morph1 = ov.value(mor, int(mv[mb[j]]))
                first.append((lemma1,) + tuple(morph1))
                alts = []
                if l2[j] >= 0:
                    alts.append((ls[l2[j]] + ms[mb[j]],
                                 (ov.value(lem, int(lv[l2[j]])),) + tuple(morph1)))
                if m2[j] >= 0:
                    alts.append((ls[lb[j]] + ms[m2[j]],
                                 (lemma1,) + tuple(ov.value(mor, int(mv[m2[j]])))))
                second.append(max(alts, key=lambda a: a[0])[1] if alts else None)
            out[name] = (first, second)
        elif name.startswith("M_e:") or name == "M_morph":
            m = learned.rankers[name].spec.level
            v, _, b, s2 = _rank(learned, cands, F, S, qloc, name, threads)
            out[name] = ([ov.value(m, int(v[b[j]])) for j in range(n)],
                         [ov.value(m, int(v[s2[j]])) if s2[j] >= 0 else None
                          for j in range(n)])
        else:
            v, _, b, s2 = _rank(learned, cands, F, S, qloc, name, threads)
            out[name] = (labels.take(v[b]), labels.take(np.where(s2 >= 0, v[s2], -1)))
    out["_candidates"] = CandidateLists(cands, labels)
    return out


class _LabelLookup:
    """Label tuples of label ids of an :class:`~fastspectral.lexical.engine.Overlay`, many at
    a time (``take``; id -1 gives None)."""

    def __init__(self, ov):
        self.ov = ov
        self.table = list(ov.base.labels) + list(ov.labels) + [None]

    def take(self, ids) -> list:
        table = self.table
        return [table[k] for k in np.asarray(ids, dtype=np.int64).tolist()]


class CandidateLists(Sequence):
    """The candidate labels of every token (a read-only sequence of lists of label tuples),
    built token by token when asked for: tagging does not need them."""

    def __init__(self, cands, labels: _LabelLookup):
        self._ptr = cands.ptr
        self._label = cands.label
        self._labels = labels

    def __len__(self) -> int:
        return len(self._ptr) - 1

    def __getitem__(self, j):
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(len(self)))]
        n = len(self)
        if j < 0:
            j += n
        if not 0 <= j < n:
            raise IndexError("token index out of range")
        return self._labels.take(self._label[self._ptr[j]:self._ptr[j + 1]])


# ------------------------------------------------------------------------------------------
# the estimator
# ------------------------------------------------------------------------------------------
class LexicalDisambiguator(Parser):
    """Lexical disambiguation with factored labels and two-stage shrinkage (Shah et al. 2010).

    Each token ``t`` of a CoNLL-U corpus (for Arabic: the undiacritised FORM) gets a label
    ``l = (lemma, UPOS, XPOS, FEATS, vocalised form)`` chosen among its candidate set ``C(t)``
    (eq. 9: the labels seen with ``t`` in training and an analyser's answers; the guesser's
    analyses for unknown tokens — by shape analogy, vocalised form and lemma included, for
    vocalised corpora — and, with ``known_guesses``, unseen inflections of known tokens).  Labels factor into label elements (LEs: lemma, UPOS, the XPOS
    positions or the whole XPOS, each FEATS key, the vocalisation; see
    :class:`~fastspectral.lexical.data.LabelScheme`).

    Stage 1 counts, for every context template of table 3 (``Freq``, ``PrevWord``,
    ``NextWord``, the first/last letters of the neighbours, the document's words) and every
    target (the label and each LE), the univariate estimates ``beta*_jk`` (relative frequency
    of value ``k`` among the tokens with feature ``j``).  Stage 2 fits one shrinkage weight
    ``lambda_j`` per template, target and frequency class of the feature by a linear
    epsilon-SVR (liblinear) on the rows (token, candidate) of a held-out second part of the
    training data, target ``g(i, k) = 1`` for the gold candidate, 0 for the others; a token's
    label is ``argmax_{k in C(t)} sum_j lambda_j beta*_jk x_ij`` (eq. 6), where the sum runs
    over the estimates of the label and of each of its LEs.

    Parameters
    ----------
    variant : {"full", "uni", "baseline", "ind", "unigram"}, default "full"
        The model of table 5: ``"full"`` (M_full: the label and every LE, stage 2),
        ``"uni"`` (M_uni: the univariate stage-1 estimates of the label and every LE summed
        with ``lambda = 1``, no stage 2), ``"baseline"`` (M_baseline: whole labels only),
        ``"ind"`` (M_ind: the lemma and the morphological analysis chosen by two independent
        models) or ``"unigram"`` (the most frequent label of the token).
    features : str, default "all"
        Context templates: ``"table3"`` (the paper's), ``"all"`` (plus ``Prefix2``,
        ``Suffix2``, ``Suffix3``) or a comma-separated list (:mod:`.features`).
    vocalised : {"auto", "yes", "no"}, default "auto"
        Whether FORMs are vocalised (Arabic): tokens are then the undiacritised FORMs and the
        label carries the vocalised form.  ``"auto"``: yes when a training FORM holds an
        Arabic diacritic.
    split : float in (0, 1), default 0.5
        Share of the training sentences (moved to a document boundary) counted in stage 1
        while stage 2 is fitted on the rest.
    refit : bool, default True
        After stage 2, count stage 1 (and the candidate sets) again on all training data.
    cross_fit : bool, default True
        Stage 2 also fits on the rows of the first part scored with the counts of the second
        (twice the stage-2 rows; False: the paper's one direction).
    C : float or None, default None
        SVR regularisation; None: chosen among ``engine.C_GRID`` on a held-out half of the
        stage-2 rows (never on test data).
    epsilon : float or None, default None
        Width of the SVR's insensitive zone; None: chosen with ``C`` among
        ``engine.EPSILON_GRID`` on the same held-out half of the stage-2 rows.
    frequency_classes : int, default 5
        Frequency classes of a feature (1, 2-3, 4-7, ... occurrences) with their own lambda.
    unknown : {"suffix", "none"}, default "suffix"
        Candidates of tokens unknown to the lexicon and the analyser: the suffix guesser's
        (:class:`~fastspectral.lexical.analyser.SuffixGuesser`) or a single empty analysis.
    known_guesses : {"inner", "auto", "yes", "no"} or bool, default "inner"
        Known tokens also get the guesser's analyses whose lemma is one of their lexicon
        lemmas (unseen inflections of a known lexeme; the role of SAMA's full analysis
        lists); "no"/False: exactly eq. 9 for known tokens; "inner": chosen on the training
        data — M_full fitted both ways on the first half of the stage-2 tokens and its E1
        compared on the second half (ties: no; ``known_guesses_``); "auto": yes for vocalised
        corpora (a setting chosen after seeing cross-validation results: kept for
        reproducing them, not a default).
    graded : {"inner", "no", "unknown", "all"}, default "inner"
        The stage-2 targets g(i, k) of the label rankers: "no": 1 for the gold candidate and
        0 for the others; "unknown": the share of LEs a candidate shares with the gold label
        for the tokens outside the lexicon (whose gold label is rarely a candidate); "all":
        graded for every token; "inner": "no" or "unknown" chosen on the training data (after
        ``known_guesses``, the same inner split and score; ties: "no"; ``graded_``).
    unknown_weights : {"inner", "yes", "no"} or bool, default "inner"
        A second weight set for the tokens outside the lexicon; "inner": chosen on the
        training data (after ``graded``, the same inner split and score; ties: no;
        ``unknown_weights_``).
    analyser : callable or None, default None
        ``analyser(token) -> analyses`` added to every candidate set (the role of SAMA; see
        :mod:`.analyser`).  Not saved in model files: set it again after loading.
    loss : {"squared_epsilon_insensitive", "epsilon_insensitive"}, default \
"squared_epsilon_insensitive"
        The SVR loss: liblinear's L2-loss epsilon-SVR (solved in the primal by trust-region
        Newton: fast and converged) or the L1-loss epsilon-SVR (dual coordinate descent).
    max_iter : int, default 1000
        Iterations of liblinear.
    random_state : int or None, default 0
        Seed of liblinear's coordinate order.

    Attributes
    ----------
    vocalised_ : bool
        Whether the model reads undiacritised tokens and chooses vocalised forms.
    label_elements_ : list of str
        The LE names.
    n_labels_ : int
        Labels seen in training.
    lambdas_ : dict
        ``{ranker: (lambda, lambda of the document features, intercept)}``; ``lambda`` has one
        row per weight set (tokens the lexicon knows, the others) and one column per template,
        target and frequency class.
    C_ : dict
        The SVR ``C`` of each ranker, one per weight set (None: no stage-2 rows, uniform
        weights).
    epsilon_ : dict
        The SVR ``epsilon`` of each ranker, one per weight set (as ``C_``).
    known_guesses_ : bool
        Whether known tokens get the guessed inflections (the resolved ``known_guesses``).
    known_guesses_scores_ : dict or None
        With ``known_guesses="inner"``: the inner E1 of M_full without (``"no"``) and with
        (``"yes"``) them and the number of inner evaluation tokens (``"tokens"``).
    graded_ : str
        The resolved ``graded`` ("no", "unknown" or "all").
    graded_scores_ : dict or None
        With ``graded="inner"``: the inner E1 of M_full of each option of ``GRADED_GRID`` and
        ``"tokens"``.
    unknown_weights_ : bool
        Whether tokens outside the lexicon have their own weight set.
    unknown_weights_scores_ : dict or None
        With ``unknown_weights="inner"``: the inner E1 of M_full without (``"no"``) and with
        (``"yes"``) the second weight set and ``"tokens"``.
    fit_time_ : float
        Seconds spent in the last ``fit``.

    References
    ----------
    R. Shah, P. S. Dhillon, M. Liberman, D. P. Foster, M. Maamouri and L. H. Ungar (2010).
    A New Approach to Lexical Disambiguation of Arabic Text.  EMNLP 2010, 725-735.
    Implemented: the label-element factoring (section 3), the candidate sets (eq. 9), the
    univariate stage-1 estimates and the shrinkage score (eq. 6), the stage-2 epsilon-SVR on
    (token, candidate) rows, the baselines and models of table 5 and the per-LE models of
    table 4; the metrics A1/A2 and E1/E2 (:mod:`fastspectral.lexical.metrics`).

    Examples
    --------
    >>> from fastspectral.trees.conll import DepSentence
    >>> from fastspectral.lexical import LexicalDisambiguator
    >>> def sent(words, tags):
    ...     return DepSentence(words=words, lemmas=[w.lower() for w in words], upos=tags,
    ...                        xpos=tags, heads=[0] + [1] * (len(words) - 1))
    >>> data = [sent(["they", "can", "fish"], ["PRON", "AUX", "VERB"]),
    ...         sent(["a", "can", "opens"], ["DET", "NOUN", "VERB"])] * 20
    >>> model = LexicalDisambiguator(C=1.0).fit(data)
    >>> out = model.parse([sent(["they", "can", "fish"], ["_"] * 3)])
    >>> out[0].upos
    ['PRON', 'AUX', 'VERB']
    """

    kind = "lexical"
    input_kind = "dependency"

    def __init__(self, variant="full", features="all", vocalised="auto", split=0.5,
                 refit=True, cross_fit=True, C=None, epsilon=None, frequency_classes=5,
                 unknown="suffix", known_guesses="inner", graded="inner",
                 unknown_weights="inner", analyser=None,
                 loss="squared_epsilon_insensitive", max_iter=1000, random_state=0):
        self.variant = variant
        self.features = features
        self.vocalised = vocalised
        self.split = split
        self.refit = refit
        self.cross_fit = cross_fit
        self.C = C
        self.epsilon = epsilon
        self.frequency_classes = frequency_classes
        self.unknown = unknown
        self.known_guesses = known_guesses
        self.graded = graded
        self.unknown_weights = unknown_weights
        self.analyser = analyser
        self.loss = loss
        self.max_iter = max_iter
        self.random_state = random_state

    # -- fitting -----------------------------------------------------------------------------
    def _validate(self):
        _check_choice("variant", self.variant, VARIANTS)
        parse_features(self.features)
        _check_choice("vocalised", self.vocalised, _VOCALISED)
        _check_number("split", self.split, 0.0, 1.0, strict_low=True)
        if not 0.0 < float(self.split) < 1.0:
            raise ValueError(f"split must be a number in (0, 1), not {self.split!r}")
        if self.known_guesses not in ("inner", "auto", "yes", "no", True, False):
            raise ValueError(f"known_guesses must be 'inner', 'auto', 'yes', 'no', True or "
                             f"False, not {self.known_guesses!r}")
        _check_choice("graded", self.graded, _GRADED)
        if self.unknown_weights not in _UNKNOWN_WEIGHTS:
            raise ValueError(f"unknown_weights must be 'inner', 'yes', 'no', True or False, "
                             f"not {self.unknown_weights!r}")
        for name in ("refit", "cross_fit"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False, not {getattr(self, name)!r}")
        _check_number("C", self.C, 0.0, strict_low=True, allow_none=True)
        _check_number("epsilon", self.epsilon, 0.0, allow_none=True)
        if isinstance(self.frequency_classes, bool) or \
                not isinstance(self.frequency_classes, (int, np.integer)) or \
                not 1 <= self.frequency_classes <= 30:
            raise ValueError(f"frequency_classes must be an integer in 1..30, not "
                             f"{self.frequency_classes!r}")
        _check_choice("unknown", self.unknown, _UNKNOWN)
        _check_choice("loss", self.loss, E.LOSSES)
        if self.analyser is not None and not callable(self.analyser):
            raise TypeError(f"analyser must be callable (token -> analyses) or None, not "
                            f"{type(self.analyser).__name__}")
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, (int, np.integer)) \
                or self.max_iter < 1:
            raise ValueError(f"max_iter must be an integer >= 1, not {self.max_iter!r}")
        if self.random_state is not None and (isinstance(self.random_state, bool) or
                                              not isinstance(self.random_state,
                                                             (int, np.integer))):
            raise ValueError(f"random_state must be an integer or None, not "
                             f"{self.random_state!r}")

    def fit(self, sentences, y=None):
        """Learn from labelled dependency sentences (CoNLL-U: FORM, LEMMA, UPOS, XPOS, FEATS;
        any of them may be ``_`` but not all); returns self."""
        self._validate()
        sentences = check_sentences(sentences, labelled=True)
        t0 = time.perf_counter()
        seed = self.random_state if self.random_state is not None else \
            int(np.random.SeedSequence().generate_state(1)[0] >> 1)
        with gc_paused():
            self.learned_ = self._train(sentences, seed)
        self._set_attributes()
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _train(self, sentences, seed):
        return train(
            sentences, rankers=variant_rankers(self.variant), features=self.features,
            vocalised=self.vocalised, split=float(self.split), refit=bool(self.refit),
            cross_fit=bool(self.cross_fit),
            C=None if self.C is None else float(self.C),
            epsilon=None if self.epsilon is None else float(self.epsilon),
            frequency_classes=int(self.frequency_classes), unknown=self.unknown,
            known_guesses=self.known_guesses, graded=self.graded,
            unknown_weights=self.unknown_weights,
            analyser=self.analyser, loss=self.loss, max_iter=int(self.max_iter),
            random_state=seed,
            with_morph=self.variant == "ind")

    def _set_attributes(self):
        lr = self.learned_
        self.vocalised_ = lr.vocalised
        self.label_elements_ = list(lr.scheme.names)
        self.n_labels_ = len(lr.space.labels)
        self.lambdas_ = {k: (r.lam, r.lam_doc, r.intercept) for k, r in lr.rankers.items()}
        self.C_ = {k: r.C for k, r in lr.rankers.items()}
        self.epsilon_ = {k: r.epsilon for k, r in lr.rankers.items()}
        self.known_guesses_ = bool(lr.known_guesses)
        self.known_guesses_scores_ = None if lr.known_guesses_scores is None else \
            dict(lr.known_guesses_scores)
        self.graded_ = lr.graded
        self.graded_scores_ = None if lr.graded_scores is None else dict(lr.graded_scores)
        self.unknown_weights_ = bool(lr.unknown_weights)
        self.unknown_weights_scores_ = None if lr.unknown_weights_scores is None else \
            dict(lr.unknown_weights_scores)

    # -- prediction --------------------------------------------------------------------------
    def _model_name(self) -> str:
        return {"full": "M_full", "uni": "M_uni", "baseline": "M_baseline", "ind": "M_ind",
                "unigram": "unigram"}[self.variant]

    def predict_corpus(self, corpus: Corpus, tags=None, jobs=None):
        """``(first, second, candidates)``: the top-two labels of every token of a
        :class:`~fastspectral.lexical.data.Corpus` and its candidate labels (scored on
        ``jobs`` threads; None: Numba's default)."""
        self._check_fitted()
        if not isinstance(corpus, Corpus):
            raise TypeError(f"predict_corpus takes a Corpus (fastspectral.lexical.data), not "
                            f"{type(corpus).__name__}")
        name = self._model_name()
        with gc_paused():
            out = predict_labels(self.learned_, corpus, [name], analyser=self.analyser,
                                 tags=tags, threads=jobs)
        first, second = out[name]
        return first, second, out["_candidates"]

    def parse(self, items, *, tags=None, jobs=None, progress=None) -> list:
        """Disambiguate dependency sentences: a copy of each with LEMMA, UPOS, XPOS, FEATS of
        the chosen label; for a vocalised model FORM becomes the chosen vocalised form and the
        input FORM goes to MISC ``InputForm=`` when it differs; MISC ``LexAlt=`` holds the
        second choice (:func:`fastspectral.lexical.data.encode_alt`).  Heads are copied (an
        unknown head, ``_`` in the input, becomes 0).

        Parameters
        ----------
        items : list of DepSentence
            Sentences (only FORM is read; the document of a sentence comes from its comments).
        tags : list of lists of str, optional
            A tag per word (``"_"``: none): candidates whose UPOS or XPOS is the tag are kept
            when there are any.
        jobs : int, optional
            Threads of the compiled scoring pass (None: every available core).
        progress : callable, optional
            ``progress(done, total)``, called once at the end.
        """
        sents = check_sentences(items, labelled=False)
        threads = self._check_parse_args(sents, tags, jobs)
        if tags is not None:
            for s, t in zip(sents, tags):
                if len(t) != len(s):
                    raise ValueError(f"tags of a sentence of {len(s)} words has {len(t)} "
                                     "entries")
        nonempty = [s for s in sents if len(s)]
        corpus = corpus_from_sentences(nonempty, self.vocalised_, labelled=False)
        flat_tags = None
        if tags is not None:
            flat_tags = [t for s, ts in zip(sents, tags) if len(s) for t in ts]
        first, second, _ = self.predict_corpus(corpus, tags=flat_tags, jobs=threads) \
            if len(corpus) else ([], [], [])
        out = []
        k = 0
        for s in sents:
            n = len(s)
            out.append(apply_labels(s, first[k:k + n], second[k:k + n], self.vocalised_))
            k += n
        if progress is not None:
            progress(len(sents), len(sents))
        return out

    # -- model files -------------------------------------------------------------------------
    def _model_file(self):
        lr = self.learned_
        params = {k: (v.item() if isinstance(v, np.generic) else v)
                  for k, v in self.get_params(deep=False).items()}
        params["analyser"] = None
        meta = {
            "params": params,
            "vocalised": lr.vocalised,
            "scheme": lr.scheme.to_meta(),
            "with_morph": lr.space.with_morph,
            "labels": [list(lab) for lab in lr.space.labels],
            "fs_names": list(lr.fs.names),
            "vocabs": lr.fs.vocabs,
            "cols": [int(c) for c in lr.cols],
            "n_bins": lr.n_bins,
            "unknown": lr.unknown,
            "known_guesses": lr.known_guesses,
            "known_guesses_scores": lr.known_guesses_scores,
            "graded": lr.graded,
            "graded_scores": lr.graded_scores,
            "unknown_weights": lr.unknown_weights,
            "unknown_weights_scores": lr.unknown_weights_scores,
            "stage2": lr.stage2,
            "rankers": {k: {"level": r.spec.level, "targets": list(r.spec.targets),
                            "doc_targets": list(r.spec.doc_targets),
                            "uniform": r.spec.uniform, "blocks": r.spec.blocks,
                            "intercept": r.intercept, "C": r.C,
                            "epsilon": r.epsilon, "rows": r.rows}
                        for k, r in lr.rankers.items()},
            "fit_time": self.fit_time_,
        }
        arrays = lr.tables.to_arrays("t_")
        for k, r in lr.rankers.items():
            arrays[f"lam_{k}"] = r.lam
            arrays[f"lamdoc_{k}"] = r.lam_doc
        return meta, arrays

    @classmethod
    def _from_model_file(cls, meta, arrays):
        with gc_paused():
            return cls._from_model_file_body(meta, arrays)

    @classmethod
    def _from_model_file_body(cls, meta, arrays):
        from ..io import validate as V

        from .features import STRING_TEMPLATES

        model = V.from_params(cls, meta, "_validate")
        try:
            sm = V.meta_dict(meta, "scheme")
            V.meta_bool(sm, "vocalised", "meta 'scheme'")
            if sm.get("xpos_positions") is not None:
                pos = V.meta_list(sm, "xpos_positions", int, "meta 'scheme'")
                if any(p < 0 for p in pos):
                    raise ModelFileError("meta 'scheme' field 'xpos_positions': a negative "
                                         "position")
            V.meta_strings(sm, "feat_keys", "meta 'scheme'")
            scheme = LabelScheme.from_meta(sm)
            with_morph = V.meta_bool(meta, "with_morph")
            if with_morph != (model.variant == "ind"):
                raise ModelFileError(f"meta field 'with_morph': {with_morph} does not match "
                                     f"variant {model.variant!r}")
            space = E.LabelSpace(scheme, with_morph)
            labels = V.meta_list(meta, "labels", list)
            for k, lab in enumerate(labels):
                if len(lab) != 5 or not all(isinstance(x, str) for x in lab):
                    raise ModelFileError(f"meta field 'labels': entry {k} is not a label of 5 "
                                         "strings")
                space.add(tuple(lab))
            if len(space.labels) != len(labels):
                raise ModelFileError("meta field 'labels': a label is listed twice")
            names = V.meta_strings(meta, "fs_names")
            if not names or names[0] != "Freq" or len(set(names)) != len(names) or \
                    any(n not in STRING_TEMPLATES for n in names):
                raise ModelFileError(f"meta field 'fs_names': {names!r} is not a list of "
                                     "distinct templates starting with 'Freq'")
            vocabs = V.meta_list(meta, "vocabs", list)
            if len(vocabs) != len(names) or \
                    not all(isinstance(w, str) for v in vocabs for w in v):
                raise ModelFileError("meta field 'vocabs': not one list of strings per "
                                     "template of 'fs_names'")
            fs = FeatureSpace(names, [list(v) for v in vocabs])
            n_values = space.n_values()
            tables = E.Tables.from_arrays(arrays, "t_", len(fs.vocabs[0]), fs.sizes, n_values)
            cols = V.meta_list(meta, "cols", int)
            if any(not 0 <= c < len(names) for c in cols):
                raise ModelFileError(f"meta field 'cols': {cols!r}: a column outside the "
                                     f"{len(names)} templates")
            n_bins = V.meta_int(meta, "n_bins", 1)
            unknown = V.meta_str(meta, "unknown", _UNKNOWN)
            rankers = {}
            need = set(variant_rankers(model.variant))
            rmeta = V.meta_dict(meta, "rankers")
            if set(rmeta) != need:
                raise ModelFileError(f"meta field 'rankers': {sorted(rmeta)} where variant "
                                     f"{model.variant!r} has {sorted(need)}")
            for k, r in rmeta.items():
                where = f"meta 'rankers' {k!r}"
                want = _specs(space, [k])[0]
                spec = E.RankerSpec(k, V.meta_int(r, "level", -1, where),
                                    tuple(V.meta_list(r, "targets", int, where)),
                                    tuple(V.meta_list(r, "doc_targets", int, where)),
                                    V.meta_bool(r, "uniform", where),
                                    V.meta_int(r, "blocks", 1, where))
                wrong = [f for f, ok in (
                    ("level", spec.level == want.level),
                    ("targets", spec.targets == want.targets),
                    ("doc_targets", spec.doc_targets in (want.doc_targets, ())),  # () without Doc
                    ("uniform", spec.uniform == want.uniform),
                    ("blocks", spec.blocks <= 2)) if not ok]
                if wrong:
                    raise ModelFileError(f"{where} field {wrong[0]!r}: "
                                         f"{getattr(spec, wrong[0])!r} does not match the "
                                         f"label space (expected {getattr(want, wrong[0])!r})"
                                         if wrong[0] != "blocks" else
                                         f"{where} field 'blocks': {spec.blocks} is not 1 or 2")
                G = len(cols) * len(spec.targets)
                lam = V.check_finite(V.get(arrays, f"lam_{k}", "float", ndim=2,
                                           shape=(spec.blocks, G * n_bins), dtype=np.float64),
                                     f"lam_{k}")
                lam_doc = V.check_finite(V.get(arrays, f"lamdoc_{k}", "float", ndim=2,
                                               shape=(spec.blocks, len(spec.doc_targets)),
                                               dtype=np.float64), f"lamdoc_{k}")
                intercept = V.meta_float(r, "intercept", -np.inf, where)
                for key in ("C", "epsilon"):      # None, a number or one per block
                    x = r.get(key)
                    if x is not None and not (isinstance(x, list) and all(
                            isinstance(y, (int, float)) and not isinstance(y, bool)
                            for y in x)):
                        V.meta_float(r, key, 0.0, where)
                rankers[k] = E.Ranker(spec, lam, lam_doc, intercept, r.get("C"),
                                      V.meta_int(r, "rows", 0, where), r.get("epsilon"))
                for m in spec.doc_targets:
                    if m not in tables.doc_values:
                        raise ModelFileError(f"array 't_docv{m}_ptr' is missing (the document "
                                             f"counts of ranker {k!r})")
            voc = V.meta_bool(meta, "vocalised")
            for key in ("known_guesses_scores", "graded_scores", "unknown_weights_scores",
                        "stage2"):
                if meta.get(key) is not None and not isinstance(meta.get(key), dict):
                    raise ModelFileError(f"meta field {key!r}: not an object")
            for key in ("known_guesses", "unknown_weights"):
                if key in meta:
                    V.meta_bool(meta, key)
            guesser = _LazyGuesser(tables, fs, space, voc)
            model.learned_ = Learned(voc, scheme, space, fs, cols, tables, guesser, rankers,
                                     n_bins, unknown, dict(meta.get("stage2") or {}),
                                     bool(meta.get("known_guesses", False)),
                                     meta.get("known_guesses_scores"),
                                     # files before the inner choice: the fixed defaults then
                                     _graded_value(meta.get("graded", "unknown")),
                                     meta.get("graded_scores"),
                                     bool(meta.get("unknown_weights", True)),
                                     meta.get("unknown_weights_scores"))
            model._set_attributes()
            model.fit_time_ = float(meta.get("fit_time", 0.0))
        except ModelFileError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(f"malformed lexical model file ({type(exc).__name__}: "
                                 f"{exc})") from None
        return model

