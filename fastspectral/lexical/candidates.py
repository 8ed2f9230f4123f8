"""Stage 1 of the lexical disambiguator (Shah et al. 2010): the candidate labels of every
token (the lexicon's labels of a known word, the suffix guesser's for an unknown one, filtered
by the given tags), with the guesser trained lazily on the lexicon's (word, label) pairs.
"""
from __future__ import annotations


import numpy as np

from . import engine as E
from .analyser import SuffixGuesser, normalise_analyses
from .features import FeatureSpace

__all__ = ["candidates"]


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
    unmatched = None
    if tags is not None and len(label):
        label, ptr, unmatched = _filter_by_tags(label, ptr, tags, ov)
        inflected = None
    lv = ov.lv()[label] if len(label) else np.zeros((0, space.n_targets), np.int32)
    return E.Candidates(ptr, label, np.ascontiguousarray(lv, dtype=np.int32), ov, known,
                        inflected, unmatched)


def _filter_by_tags(label, ptr, tags, ov):
    """Keep the rows whose UPOS or XPOS is the token's tag when the token has a tag and such
    rows (vectorised over rows).  Returns ``(label, ptr, unmatched)``, ``unmatched[j]`` True
    when token ``j`` has a tag that none of its rows carries (all of them kept)."""
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
    unmatched = (tok_tag >= 0) & ~any_match
    return label[keep], np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), unmatched
