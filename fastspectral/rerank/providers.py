"""The score providers of :class:`~fastspectral.rerank.model.RerankDepParser`: the sub-models
that give every candidate of a k-best list its scores, and the dense features made of them.

* the first-order base parser (:class:`~fastspectral.rerank.mst.MSTParser`, the re-ranker's
  nested ``mst``) and its k-best lists; with ``base_order=2`` the second-order model's score of
  every candidate (the base parser's settings with ``order=2``; its own best tree added to each
  list, ``order2_best``);
* the latent dependency model of section 3 (kind ``latent-dep``, the nested ``spectral``):
  ``log p-hat`` of each candidate tree and / or of its depth-1 fragments, on the words or on
  the POS tags;
* the split-head-automaton model (the nested ``shag``; :mod:`fastspectral.rerank.shag_scores`):
  tree weight and summed log arc posteriors;

each jack-knifed over the training folds (:meth:`ScoreProviders.jackknife_log_prob`, ...), and
the unscaled dense feature columns the re-ranker reads (:meth:`ScoreProviders._raw_dense`,
normalised within each list by :func:`_normalise`).  The unfitted sub-model of each provider is
a clone of the re-ranker's nested estimator, or the provider's default when that is None
(:func:`default_mst`, :func:`default_spectral`, :func:`default_shag`);
:func:`check_sub_models` checks them; :func:`nested_from_old` maps the keywords of older
versions (the base parser's flat settings, ``spectral_params``, ``shag_params``) onto them, for
the constructor (:func:`accepts_old_keywords`) and for model files (:func:`nested_from_file`
reads today's entries).  :class:`ScoreProviders` is a mixin: it reads the
estimator's hyperparameters; the perceptron learner and the model files are in
:mod:`fastspectral.rerank.model`.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from ..base import check_jobs, clone
from .mst import MSTParser, numba_threads
from .reranker import RerankData

__all__ = ["ScoreProviders", "order2_scores", "add_candidates", "shag_tree_columns",
           "default_mst", "default_spectral", "default_shag", "spectral_from_params",
           "shag_from_params", "check_sub_models", "nested_from_old", "accepts_old_keywords",
           "nested_to_file", "nested_from_file", "NESTED", "OLD_PARAMS", "SHAG_SCORES",
           "LOGP_NORMS", "SPECTRAL_SCORES", "SPECTRAL_INPUTS"]

#: the SHAG model's scores used: the tree weight, the summed log arc posteriors, both
SHAG_SCORES = ("tree", "arc", "both")
#: normalisations of log p-hat within a k-best list (see _normalise)
LOGP_NORMS = ("max", "word", "list")
#: the spectral model's scores used: p-hat of the tree, of its depth-1 fragments, both
SPECTRAL_SCORES = ("tree", "fragment", "both")
#: constructor arguments of the default latent dependency model (``spectral=None``; 16
#: states: chosen on the WSJ dev split, docs/notes/rerank.md)
SPECTRAL_DEFAULTS = {"n_states": 16}
#: what the spectral model reads as its words: the words (eigenwords, the paper) or the POS
#: tags (one-hot vectors: a latent model of the tag tree)
SPECTRAL_INPUTS = ("words", "pos")
#: constructor arguments of the default POS-tag spectral model (``spectral_input="pos"``)
SPECTRAL_DEFAULTS_POS = {"n_states": 8, "embeddings": "one-hot"}


def _spectral_class():
    from .. import models

    try:
        return models.model_class("latent-dep")
    except (KeyError, ImportError, AttributeError) as exc:
        raise ValueError("features='base+spectral' needs the latent dependency model (kind "
                         f"'latent-dep'), which is not available in this build ({exc})") from None


def default_mst(random_state=0, jobs=None) -> MSTParser:
    """The base parser of ``mst=None``: :class:`~fastspectral.rerank.mst.MSTParser`'s defaults
    with the re-ranker's ``random_state`` and ``jobs``."""
    return MSTParser(random_state=random_state, jobs=jobs)


def spectral_from_params(params: dict | None = None, spectral_input: str = "words"):
    """The latent dependency model of the defaults of ``spectral_input``
    (:data:`SPECTRAL_DEFAULTS`, :data:`SPECTRAL_DEFAULTS_POS`) updated by the constructor
    arguments ``params`` (names of older versions renamed, ``tags`` -> ``tag_column``)."""
    cls = _spectral_class()
    names = cls._get_param_names() if hasattr(cls, "_get_param_names") else ()
    base = SPECTRAL_DEFAULTS_POS if spectral_input == "pos" else SPECTRAL_DEFAULTS
    defaults = {k: v for k, v in base.items() if k in names}
    renamed = getattr(cls, "_renamed_params", {})
    given = {renamed.get(k, k): v for k, v in (params or {}).items()}
    return cls(**{**defaults, **given})


def default_spectral(spectral_input: str = "words"):
    """The spectral model of ``spectral=None``: the latent dependency model with
    ``n_states=16`` (``spectral_input="pos"``: ``n_states=8, embeddings="one-hot"``)."""
    return spectral_from_params(None, spectral_input)


def shag_from_params(params: dict | None = None):
    """The :class:`~fastspectral.dependency.SHAGParser` of
    :data:`~fastspectral.rerank.shag_scores.SHAG_DEFAULTS` updated by ``params``."""
    from .shag_scores import new_shag

    return new_shag(params)


def default_shag():
    """The SHAG model of ``shag=None``: spectral, 8 states, LEX+FCP
    (:data:`~fastspectral.rerank.shag_scores.SHAG_DEFAULTS`)."""
    return shag_from_params(None)


def _describe(value) -> str:
    return f"a {type(value).__name__}" if hasattr(value, "get_params") else repr(value)


def check_sub_models(mst, spectral, shag, use_spectral: bool, use_shag: bool,
                     base_order: int = 1) -> None:
    """The checks of the re-ranker's nested estimators (its ``fit``): ``mst`` None or a
    :class:`~fastspectral.rerank.mst.MSTParser` (of order 2 only with ``base_order=1``: its
    own k-best lists are second-order), ``spectral`` None or an estimator
    with ``fit``, ``log_prob`` and ``fragment_log_prob``, ``shag`` None or a
    :class:`~fastspectral.dependency.SHAGParser`; those in use are validated (a one-line
    error naming ``mst__...``, ``spectral__...`` or ``shag__...``)."""
    if mst is not None:
        if not isinstance(mst, MSTParser):
            raise TypeError(f"mst must be an MSTParser or None, got {_describe(mst)}")
        _validate_nested("mst", mst)
        if int(mst.order) != 1 and int(base_order) == 2:
            raise ValueError(f"with base_order=2 mst must be a first-order MSTParser (order=1: "
                             f"base_order=2 adds the second-order model), got order="
                             f"{mst.order!r}; for second-order k-best lists use "
                             "mst=MSTParser(order=2) with base_order=1")
    if spectral is not None:
        if isinstance(spectral, type) or not all(hasattr(spectral, a) for a in (
                "get_params", "fit", "log_prob", "fragment_log_prob")):
            raise TypeError("spectral must be a latent dependency model (an estimator with "
                            "fit, log_prob and fragment_log_prob, e.g. LatentDependencyModel) "
                            f"or None, got {_describe(spectral)}")
        if use_spectral:
            _validate_nested("spectral", spectral)
    if shag is not None:
        from ..dependency import SHAGParser

        if not isinstance(shag, SHAGParser):
            raise TypeError(f"shag must be a SHAGParser or None, got {_describe(shag)}")
        if use_shag:
            _validate_nested("shag", shag)


def _validate_nested(name: str, model) -> None:
    """``model._validate_params()`` with its message naming ``NAME__param``."""
    check = getattr(model, "_validate_params", None)
    if check is None:
        return
    try:
        check()
    except (TypeError, ValueError) as exc:
        msg = str(exc)
        first = msg.split(" ", 1)[0]
        if first in model.get_params(deep=False):
            msg = f"{name}__{msg}"
        else:
            msg = f"{name}: {msg}"
        raise type(exc)(msg) from None


#: the base parser's keywords of older versions, now ``mst=MSTParser(...)``
OLD_MST_PARAMS = ("iterations", "minibatch", "bits", "tag_column")
#: every keyword of older versions the constructor still maps onto the nested estimators
OLD_PARAMS = OLD_MST_PARAMS + ("spectral_params", "shag_params")


def old_keywords_hint(names) -> str:
    """The nested form of the old keywords ``names``, e.g. ``mst=MSTParser(bits=...)``."""
    flat = [n for n in names if n in OLD_MST_PARAMS]
    parts = ["mst=MSTParser(" + ", ".join(f"{n}=..." for n in flat) + ")"] if flat else []
    if "spectral_params" in names:
        parts.append("spectral=LatentDependencyModel(...)")
    if "shag_params" in names:
        parts.append("shag=SHAGParser(...)")
    return ", ".join(parts)


def nested_from_old(old: dict, *, random_state=0, jobs=None, spectral_input="words",
                    mst=None, spectral=None, shag=None) -> dict:
    """The nested estimators ``{"mst": ..., "spectral": ..., "shag": ...}`` of the keywords
    of older versions ``old`` (the base parser's ``iterations``, ``minibatch``, ``bits``,
    ``tag_column``; ``spectral_params``, ``shag_params``), as they configured the sub-models:
    the base parser with the re-ranker's ``random_state`` and ``jobs``, the spectral model
    over the defaults of ``spectral_input``, the SHAG model over its defaults.  Only the
    estimators the old keywords set are returned; one given both ways (``mst`` and
    ``iterations``) is a TypeError."""
    out = {}
    flat = {k: old[k] for k in OLD_MST_PARAMS if k in old}
    given = {"mst": mst, "spectral": spectral, "shag": shag}
    for new, names in (("mst", sorted(flat)),
                       ("spectral", ["spectral_params"] * (old.get("spectral_params") is not None)),
                       ("shag", ["shag_params"] * (old.get("shag_params") is not None))):
        if names and given[new] is not None:
            raise TypeError(f"RerankDepParser: give {new}= or {names[0]}=, not both "
                            f"({names[0]} is now part of {new}=)")
    if flat:
        out["mst"] = MSTParser(**flat, random_state=random_state, jobs=jobs)
    if old.get("spectral_params") is not None:
        if not isinstance(old["spectral_params"], dict):
            raise TypeError(f"spectral_params must be a dict, got {old['spectral_params']!r}")
        out["spectral"] = spectral_from_params(old["spectral_params"], spectral_input)
    if old.get("shag_params") is not None:
        if not isinstance(old["shag_params"], dict):
            raise TypeError(f"shag_params must be a dict, got {old['shag_params']!r}")
        out["shag"] = shag_from_params(old["shag_params"])
    return out


def accepts_old_keywords(init):
    """``__init__`` also taking the keywords of :data:`OLD_PARAMS`, mapped onto the nested
    estimators with a DeprecationWarning (the signature, and so ``get_params``, stays
    ``init``'s: ``inspect.signature`` follows ``__wrapped__``)."""
    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        old = {k: kwargs.pop(k) for k in OLD_PARAMS if k in kwargs}
        init(self, *args, **kwargs)
        if old:
            mapped = nested_from_old(old, random_state=self.random_state, jobs=self.jobs,
                                     spectral_input=self.spectral_input, mst=self.mst,
                                     spectral=self.spectral, shag=self.shag)
            warnings.warn(
                "RerankDepParser(" + ", ".join(f"{k}=" for k in old) + ") is deprecated: the "
                "sub-models are nested estimators; use " + old_keywords_hint(old),
                DeprecationWarning, stacklevel=2)
            for name, value in mapped.items():
                setattr(self, name, value)
    return wrapper


#: the nested estimators of the re-ranker: parameter name -> the model kind it holds
NESTED = {"mst": "mst", "spectral": "latent-dep", "shag": "shag"}


def nested_to_file(sub):
    """A nested estimator as a model file's ``params`` record it: ``{"kind": KIND,
    "params": {...}}`` (None stays None; a value JSON cannot hold, such as an Eigenwords object
    as ``embeddings``, becomes None, as in the latent dependency model's own files)."""
    if sub is None:
        return None
    params = {k: (v if v is None or isinstance(v, (str, int, float, bool)) else None)
              for k, v in sub.get_params(deep=False).items()}
    return {"kind": getattr(sub, "kind", ""), "params": params}


def nested_from_file(name: str, entry):
    """The nested estimator ``name`` of its model-file entry (:func:`nested_to_file`); a
    malformed one is a ValueError."""
    from .. import models

    if entry is None:
        return None
    kind = NESTED[name]
    if not isinstance(entry, dict) or entry.get("kind") != kind or \
            not isinstance(entry.get("params"), dict):
        raise ValueError(f"{name} must be {{'kind': {kind!r}, 'params': {{...}}}} or null, "
                         f"got {entry!r}")
    cls = models.model_class(kind)
    return cls(**cls._params_from_file(entry["params"]))


def order2_scores(mst2, items, data, threads, tags=None) -> np.ndarray:
    """Every candidate of ``data`` (k-best lists of ``items``) scored by the second-order
    model ``mst2``: arc scores + sibling-part scores, one compiled call parallel over the
    sentences (:func:`~fastspectral.rerank.features.candidate_tree_scores`)."""
    from .features import candidate_tree_scores

    enc = mst2.encode(items, tags)
    if not np.array_equal(enc.lengths.astype(np.int64), data.lengths):
        raise ValueError("the second-order model's sentences do not match the k-best lists")
    arc = np.empty(data.n_candidates)
    sib = np.empty(data.n_candidates)
    with numba_threads(threads):
        candidate_tree_scores(mst2.weights_, enc.W, enc.P, enc.F, enc.tok_off,
                              enc.lengths.astype(np.int64), data.heads, data.cand_off,
                              data.cand_hoff, arc, sib)
    return arc + sib


def add_candidates(data, extra, mst, items, threads, tags=None):
    """The lists ``data`` with one more candidate per sentence, appended last: the tree
    ``extra`` (1-based heads of every sentence, packed), unless its list holds it already;
    its base score is the first-order ``mst``'s score of it (vectorised)."""
    from .features import candidate_tree_scores
    from .mst import _ranges

    B = len(data.lengths)
    ex_off = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(data.lengths, out=ex_off[1:])
    if len(extra) != ex_off[-1]:
        raise ValueError("the extra trees do not match the k-best lists")
    n_c = data.lengths[data.sent]
    eq = data.heads[_ranges(data.cand_hoff, n_c)] == extra[_ranges(ex_off[data.sent], n_c)]
    wrong = np.bincount(np.repeat(np.arange(data.n_candidates), n_c), weights=~eq,
                        minlength=data.n_candidates)
    present = np.zeros(B, dtype=bool)
    present[data.sent[wrong == 0]] = True
    ids = np.flatnonzero(~present)
    if len(ids) == 0:
        return data
    # the first-order score of each extra tree (arc part of the compiled tree scorer)
    enc = mst.encode(items, tags)
    arc, sib = np.empty(B), np.empty(B)
    with numba_threads(threads):
        candidate_tree_scores(mst.weights_, enc.W, enc.P, enc.F, enc.tok_off,
                              enc.lengths.astype(np.int64), extra, np.arange(B + 1),
                              ex_off[:-1].copy(), arc, sib)
    counts = np.diff(data.cand_off)
    order = np.argsort(np.concatenate([2 * data.sent, 2 * ids + 1]), kind="stable")
    out = RerankData.__new__(RerankData)
    out.lengths, out.tok_off, out.P = data.lengths, data.tok_off, data.P
    out.heads = np.concatenate([data.heads, extra])
    out.cand_hoff = np.concatenate([data.cand_hoff, len(data.heads) + ex_off[ids]])[order]
    out.base = np.concatenate([data.base, arc[ids]])[order]
    out.rank = np.concatenate([data.rank, counts[ids]])[order]
    new_counts = counts + (~present)
    out.cand_off = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(new_counts, out=out.cand_off[1:])
    out.sent = np.repeat(np.arange(B), new_counts)
    return out


def shag_tree_columns(logw, sign, data, how) -> list:
    """Dense columns of SHAG tree weights (``log |w|`` and its sign per candidate): ``log |w|``
    normalised within its list (``how``: a ``logp_norm``; a zero or non-finite weight gets the
    list's lowest valid value, 0 in a list without one), the 'w is 0 or not finite' and the
    'w < 0' indicators."""
    ok = np.isfinite(logw) & (sign != 0)
    filled = logw
    if (~ok).any():
        low = np.minimum.reduceat(np.where(ok, logw, np.inf), data.cand_off[:-1])
        low = np.where(np.isfinite(low), low, 0.0)
        filled = np.where(ok, logw, low[data.sent])
    return [_normalise(filled, data, how), (~ok).astype(np.float64),
            (sign < 0).astype(np.float64)]


def _normalise(x, data, how):
    """``x`` (one value per candidate) relative to its list: minus the list's best (``max``),
    that divided by the sentence's words (``word``), or standardised within the list
    (``list``: minus the list's mean, over its standard deviation)."""
    if len(x) == 0:
        return x.copy()
    if how in ("max", "word"):
        out = data.relative(x)
        return out / np.maximum(data.lengths[data.sent], 1) if how == "word" else out
    counts = np.diff(data.cand_off)
    mean = np.add.reduceat(x, data.cand_off[:-1]) / np.maximum(counts, 1)
    d = x - mean[data.sent]
    sd = np.sqrt(np.add.reduceat(d * d, data.cand_off[:-1]) / np.maximum(counts, 1))
    sd = np.where(sd > 0, sd, 1.0)
    return d / sd[data.sent]


def _concat(datas):
    """One :class:`RerankData` of several (sentence order kept)."""
    out = RerankData.__new__(RerankData)
    tok_shift = np.cumsum([0] + [int(d.tok_off[-1]) for d in datas[:-1]])
    head_shift = np.cumsum([0] + [len(d.heads) for d in datas[:-1]])
    cand_shift = np.cumsum([0] + [d.n_candidates for d in datas[:-1]])
    sent_shift = np.cumsum([0] + [len(d.lengths) for d in datas[:-1]])
    out.lengths = np.concatenate([d.lengths for d in datas])
    out.P = np.concatenate([d.P for d in datas])
    out.tok_off = np.concatenate([d.tok_off[:-1] + s for d, s in zip(datas, tok_shift)]
                                 + [[int(tok_shift[-1] + datas[-1].tok_off[-1])]])
    out.cand_off = np.concatenate([d.cand_off[:-1] + s for d, s in zip(datas, cand_shift)]
                                  + [[int(cand_shift[-1] + datas[-1].n_candidates)]])
    out.sent = np.concatenate([d.sent + s for d, s in zip(datas, sent_shift)])
    out.rank = np.concatenate([d.rank for d in datas])
    out.cand_hoff = np.concatenate([d.cand_hoff + s for d, s in zip(datas, head_shift)])
    out.heads = np.concatenate([d.heads for d in datas])
    out.base = np.concatenate([d.base for d in datas])
    return out


class ScoreProviders:
    """The sub-models and scores of the re-ranker (see the module docstring); a mixin of
    :class:`~fastspectral.rerank.model.RerankDepParser`."""

    def _new_mst(self) -> MSTParser:
        """An unfitted base parser: a clone of ``mst``, or :func:`default_mst`."""
        if self.mst is None:
            return default_mst(self.random_state, self.jobs)
        return clone(self.mst)

    def _new_mst2(self) -> MSTParser:
        """The second-order model of ``base_order=2``: the base parser's settings with
        ``order=2``."""
        return self._new_mst().set_params(order=2)

    @property
    def _order2(self) -> bool:
        return int(self.base_order) == 2

    def _order2_scores(self, mst2, items, data, threads=None, tags=None) -> np.ndarray:
        """Every candidate's score under the second-order model ``mst2``: the sum of its arc
        and sibling-part scores (one compiled call over all candidates,
        :func:`~fastspectral.rerank.features.candidate_tree_scores`)."""
        return order2_scores(mst2, items, data, check_jobs(self.jobs) if threads is None
                             else threads, tags)

    def jackknife_order2_scores(self, sents, data, msts=None):
        """``(lists, scores)``: the second-order scores of the jack-knifed lists ``data`` of
        ``sents``, each fold's lists rescored by a second-order model trained on the other
        folds only; with ``msts`` (each fold's first-order parser) and ``order2_best``, the
        lists first get that model's best tree (:meth:`_with_order2_best`), else ``lists`` is
        ``data``."""
        threads = check_jobs(self.jobs)
        cuts = self._cuts(len(sents))
        parts, datas = [], []
        for f in range(len(cuts) - 1):
            rest = sents[:cuts[f]] + sents[cuts[f + 1]:]
            held = sents[cuts[f]:cuts[f + 1]]
            mst2 = self._new_mst2().fit(rest)
            sub, _ = data.subset(np.arange(cuts[f], cuts[f + 1]))
            if msts is not None and self.order2_best:
                sub = self._with_order2_best(msts[f], mst2, held, sub, threads)
            datas.append(sub)
            parts.append(self._order2_scores(mst2, held, sub, threads))
        if not parts:
            return data, np.zeros(0)
        return (_concat(datas) if msts is not None and self.order2_best else data,
                np.concatenate(parts))

    def _with_order2_best(self, mst, mst2, items, data, threads, tags=None):
        """``data`` (k-best lists of ``items`` under the first-order ``mst``) with the
        second-order ``mst2``'s best tree of each sentence appended to its list unless the
        list holds it already; its base score is ``mst``'s score of it."""
        heads = mst2.predict_heads(items, tags=tags, jobs=threads)
        extra = (np.concatenate(heads).astype(np.int64) if len(heads)
                 else np.zeros(0, np.int64))
        return add_candidates(data, extra, mst, items, threads, tags)

    def _new_spectral(self):
        """An unfitted spectral model: a clone of ``spectral``, or :func:`default_spectral`
        of ``spectral_input``."""
        if self.spectral is None:
            return default_spectral(self.spectral_input)
        return clone(self.spectral)

    @property
    def _spectral(self) -> bool:
        return self.features in ("base+spectral", "base+spectral+shag")

    @property
    def _shag(self) -> bool:
        return self.features in ("base+shag", "base+spectral+shag")

    def _new_shag(self):
        """An unfitted SHAG model: a clone of ``shag``, or :func:`default_shag`."""
        if self.shag is None:
            return default_shag()
        return clone(self.shag)

    def _shag_scores(self, shag, items, data, threads=None):
        """The SHAG model's ``(log |w|, sign, summed log arc posteriors)`` of every candidate
        of ``data`` (``items``: its sentences)."""
        from .shag_scores import shag_scores

        return shag_scores(shag, items, data, threads)

    def jackknife_shag_scores(self, sents, data):
        """The SHAG scores of the jack-knifed lists ``data`` of ``sents``: each fold's lists
        scored by a SHAG model trained on the gold trees of the other folds only."""
        from .shag_scores import jackknife_shag_scores

        return jackknife_shag_scores(sents, data, self._cuts(len(sents)), None,
                                     check_jobs(self.jobs),
                                     fit_fn=lambda tr: self._new_shag().fit(tr))

    def _lists(self, mst, items, threads):
        """``(RerankData, base scores)`` of ``items``' k-best lists under ``mst``."""
        enc = mst.encode(items)
        return RerankData(mst.kbest_encoded(enc, int(self.k), threads,
                                            [s.words for s in items]), enc)

    @property
    def _tree(self) -> bool:
        return self._spectral and self.spectral_scores in ("tree", "both")

    @property
    def _fragments(self) -> bool:
        return self._spectral and self.spectral_scores in ("fragment", "both")

    def _log_prob(self, spectral, items, data, threads=None):
        """``(log |p-hat|, sign, fragment log p-hat, negative fragments)`` of every candidate
        of ``data`` (``items``: its sentences; None for the scores not used)."""
        items = self._spectral_view(items)
        sents = [items[b] for b in data.sent]
        heads = data.heads_list()
        return self._spectral_scores(spectral, sents, heads, threads, data.n_candidates)

    def _spectral_view(self, items) -> list:
        """The sentences as the spectral model reads them: themselves, or (``spectral_input=
        "pos"``) copies whose words are their POS tags."""
        if self.spectral_input != "pos":
            return list(items)
        from ..trees.conll import DepSentence

        return [DepSentence(words=list(s.tags), heads=list(s.heads) if s.heads else
                            [-1] * len(s.words)) for s in items]

    def _spectral_scores(self, spectral, sents, heads, threads, n):
        lp = sign = frag = fneg = None
        if hasattr(spectral, "tree_scores"):        # both from one reading of the lists
            lp, sign, frag, fneg = spectral.tree_scores(
                sents, heads, tree=self._tree, fragments=self._fragments, jobs=threads)
        else:
            if self._tree:
                lp, sign = spectral.log_prob(sents, heads=heads, return_sign=True, jobs=threads)
            if self._fragments:
                frag, fneg = spectral.fragment_log_prob(sents, heads=heads, jobs=threads)
        out = tuple(None if x is None else np.asarray(x, dtype=np.float64)
                    for x in (lp, sign, frag, fneg))
        if any(x is not None and x.shape != (n,) for x in out):
            raise ValueError(f"the spectral model returned the wrong number of scores for "
                             f"{n} trees")
        return out

    def _n_dense(self) -> int:
        return 1 + ((3 if self.logp_sign else 2) if self._tree else 0) + \
            (2 if self._fragments else 0) + \
            ((3 if self.shag_scores in ("tree", "both") else 0) +
             (1 if self.shag_scores in ("arc", "both") else 0) if self._shag else 0) + \
            (1 if self._order2 else 0)

    def _shag_columns(self, data, shag) -> list:
        """Dense columns of the SHAG scores ``(log |w|, sign, log posteriors)``: ``log |w|``
        normalised within the list (``logp_norm``; a zero or non-finite weight gets the list's
        lowest valid value), the 'w is 0 or not finite' and the 'w < 0' indicators; the summed
        log arc posteriors normalised the same way."""
        logw, sign, post = (np.asarray(x, np.float64) for x in shag)
        cols = []
        if self.shag_scores in ("tree", "both"):
            cols += shag_tree_columns(logw, sign, data, self.logp_norm)
        if self.shag_scores in ("arc", "both"):
            cols.append(_normalise(post, data, self.logp_norm))
        return cols

    def _raw_dense(self, data, logp, sign=None, frag=None, fneg=None,
                   shag=None, mst2=None) -> np.ndarray:
        """Unscaled dense features: the relative base score; with ``logp``: log |p-hat|
        normalised within its list (``logp_norm``), the 'p-hat is 0 or not finite' indicator
        and (``logp_sign``) the 'p-hat < 0' indicator; with ``frag``: the fragments' log
        p-hat normalised the same way and the negative fragments (minus the list's fewest);
        with ``mst2`` (last): the second-order score minus the list's best."""
        cols = [data.relative(data.base)]
        if logp is not None:
            ok = np.isfinite(logp)
            if sign is not None:
                ok &= sign != 0
            filled = logp.copy()
            if (~ok).any():
                # the lowest valid value of the list (or 0 when none is valid)
                low = np.where(ok, logp, np.inf)
                mins = np.minimum.reduceat(low, data.cand_off[:-1])
                mins = np.where(np.isfinite(mins), mins, 0.0)
                filled = np.where(ok, logp, mins[data.sent])
            cols.append(_normalise(filled, data, self.logp_norm))
            cols.append((~ok).astype(np.float64))
            if self.logp_sign:
                neg = sign < 0 if sign is not None else np.zeros(len(logp), np.bool_)
                cols.append(neg.astype(np.float64))
        if frag is not None:
            cols.append(_normalise(frag, data, self.logp_norm))
            cols.append(data.relative(-np.asarray(fneg, np.float64)))
        if shag is not None:
            cols += self._shag_columns(data, shag)
        if mst2 is not None:
            cols.append(data.relative(np.asarray(mst2, np.float64)))
        return np.ascontiguousarray(np.stack(cols, axis=1))

    def _cuts(self, n: int) -> np.ndarray:
        return np.linspace(0, n, int(self.folds) + 1).astype(int)

    def jackknife_log_prob(self, sents, data):
        """The spectral scores (:meth:`_log_prob`) of every candidate of the jack-knifed
        lists ``data`` of
        ``sents`` (:meth:`training_lists`): the latent dependency model trained on the other
        folds scores each fold's lists (a model that has seen a tree would favour it)."""
        threads = check_jobs(self.jobs)
        sents = self._spectral_view(sents)
        cuts = self._cuts(len(sents))
        parts = []
        all_heads = data.heads_list()
        for f in range(len(cuts) - 1):
            rest = sents[:cuts[f]] + sents[cuts[f + 1]:]
            spec = self._new_spectral().fit(rest)
            lo, hi = int(data.cand_off[cuts[f]]), int(data.cand_off[cuts[f + 1]])
            sub = [sents[b] for b in data.sent[lo:hi]]
            parts.append(self._spectral_scores(spec, sub, all_heads[lo:hi], threads, hi - lo))
        return tuple(None if parts[0][j] is None else np.concatenate([p[j] for p in parts])
                     for j in range(4))
