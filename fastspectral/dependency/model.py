"""``SHAGParser``: spectral / EM / deterministic split-head-automaton dependency parsers.

The parser scores a tree with the product of (i) an unlexicalised *operator* SHAG over POS
tags (spectral, EM, or the trivial one-state automaton) and (ii) optionally a *deterministic*
back-off SHAG (DET, DET+F, or the lexicalised LEX, LEX+F, LEX+FCP of Luque et al. 2012,
sec. 5.2).  Parsing computes arc posteriors with the compiled inside-outside kernel and returns
the minimum-Bayes-risk tree ``argmax_y sum_{(h,m) in y} log mu_hm`` (first-order Eisner).

``model``:

* ``"det"`` / ``"det+f"``: deterministic unlexicalised SHAG with one state / first-vs-rest
  states (no operator part);
* ``"spectral"``: operator SHAG with ``states`` states learned by Algorithm 1;
* ``"em"``: operator SHAG with ``states`` states trained by ``iterations`` EM iterations.

``lexical`` (``"none"``, ``"lex"``, ``"lex+f"``, ``"lex+fcp"``) multiplies the model by a
lexicalised deterministic SHAG (log-linear combination, the lexical log-probability weighted
by ``lex_weight``).  The lexical models contain their own tag-level estimates (P_A), so with
``model="det"`` or ``"det+f"`` a lexical model is used *alone* (the paper's LEX rows); with
``"spectral"`` or ``"em"`` it is combined with the operator model.

``smoothing`` (default :data:`SMOOTHING`) interpolates the spectral / EM automata with the
DET+F back-off automaton (a mixture of weighted automata is one, with ``states + 2`` states),
so that modifier sequences never seen in training keep a positive weight; ``smoothing=0`` is
the paper's unsmoothed model.
"""
from __future__ import annotations

import copy
import dataclasses
import time
from collections import Counter

import numpy as np

from ..errors import FormatError, NotFittedError
from .backoff import BackoffSHAG
from .data import (ROOT, TAGSETS, SymbolVocab, check_sentence, choose_tagset, encode_sentences,
                   modifier_sequences, with_tagset)
from .inference import arc_marginals, mbr_decode, unpack_square
from .spectral import OperatorSHAG, learn_spectral

__all__ = ["SHAGParser", "MODELS", "LEXICAL"]

MODELS = ("det", "det+f", "spectral", "em")
#: default number of states: the development splits chose 8 / 6 / 8 (WSJ / Spanish / EWT) for
#: the default spectral model, whose accuracy is flat for larger n (docs/dependency.md)
STATES = 8
#: default interpolation weight of the DET+F back-off automaton (spectral and EM models),
#: chosen on the development splits (docs/dependency.md)
SMOOTHING = 0.3
#: default ridge of the spectral learner's regularised pseudo-inverse (``learn_spectral``),
#: chosen on the development splits (docs/dependency.md)
RIDGE = 1.0
LEXICAL = ("none", "lex", "lex+f", "lex+fcp")
_LEX_STATES = {"lex": "none", "lex+f": "f", "lex+fcp": "fcp"}
_KIND = "shag"


class SHAGParser:
    """Split head-automaton grammar dependency parser (Luque et al., EACL 2012).

    Parameters: ``model`` (see module docstring), ``states`` (N for spectral / EM),
    ``lexical``, ``iterations`` (EM), ``lex_weight`` (exponent of the lexical model),
    ``seed`` (EM initialisation), ``single_root`` (``None``: learn it from the training data,
    True when every training tree has exactly one root child), ``batch_size`` (sentences per
    kernel call while parsing), ``basis`` (spectral Hankel basis: 1 = single symbols, the
    paper's bigram / trigram statistics; 2 = also the frequent length-2 prefixes and suffixes),
    ``smoothing`` (spectral and EM models: the learned automata are interpolated with the
    DET+F back-off automaton, ``(1 - smoothing) * model + smoothing * DET+F``, which gives
    every tag sequence a positive weight; 0 is the paper's unsmoothed model; the operator
    model then has ``states + 2`` states.  Ignored by ``det`` / ``det+f``), ``tagset`` (the
    tag column read as POS tags: ``"upos"``, ``"xpos"`` (the sentences' ``tags``: XPOS, or UPOS
    when they have no XPOS) or ``"auto"``: UPOS for Universal Dependencies treebanks (every
    UPOS tag one of the 17 universal ones), XPOS otherwise; the choice is ``tagset_``),
    ``ridge`` (spectral model: regularisation of the pseudo-inverse in the operators, in units
    of the Hankel blocks' sampling noise; 0 is the paper's plain pseudo-inverse).
    """

    input_kind = "dependency"

    def __init__(self, model: str = "spectral", states: int = STATES, lexical: str = "none",
                 iterations: int = 25, lex_weight: float = 1.0, seed: int = 0,
                 single_root: bool | None = None, batch_size: int = 512, basis: int = 2,
                 smoothing: float = SMOOTHING, tagset: str = "auto", ridge: float = RIDGE):
        if model not in MODELS:
            raise ValueError(f"model must be one of {', '.join(MODELS)}, not {model!r}")
        if lexical not in LEXICAL:
            raise ValueError(f"lexical must be one of {', '.join(LEXICAL)}, not {lexical!r}")
        if int(states) < 1:
            raise ValueError("states must be >= 1")
        if int(basis) not in (1, 2):
            raise ValueError("basis must be 1 or 2")
        if int(iterations) < 0:
            raise ValueError("iterations must be >= 0")
        if not float(ridge) >= 0.0:
            raise ValueError(f"ridge must be >= 0, not {ridge!r}")
        if tagset not in TAGSETS:
            raise ValueError(f"tagset must be one of {', '.join(TAGSETS)}, not {tagset!r}")
        if not 0.0 <= float(smoothing) < 1.0:
            raise ValueError(f"smoothing must be in [0, 1), not {smoothing!r}")
        self.model = model
        self.states = int(states)
        self.lexical = lexical
        self.iterations = int(iterations)
        self.lex_weight = float(lex_weight)
        self.seed = int(seed)
        self.single_root = single_root
        self.batch_size = int(batch_size)
        self.basis = int(basis)
        self.smoothing = float(smoothing)
        self.tagset = tagset
        self.ridge = float(ridge)
        self.tagset_ = "xpos"
        self.tags_: SymbolVocab | None = None
        self.words_: SymbolVocab | None = None
        self.op_: OperatorSHAG | None = None
        self.det_: BackoffSHAG | None = None
        self.fallback_: BackoffSHAG | None = None
        self.single_root_ = False
        self.train_info_: dict = {}
        self.n_fallback_ = 0

    # ------------------------------------------------------------------ helpers
    def __repr__(self) -> str:
        return (f"SHAGParser(model={self.model!r}, states={self.states}, lexical={self.lexical!r}, "
                f"iterations={self.iterations}, smoothing={self.smoothing}, "
                f"tagset={self.tagset!r})")

    @property
    def _H(self) -> int:
        return len(self.tags_) + 1

    @property
    def _M(self) -> int:
        return len(self.tags_)

    def _check_fitted(self):
        if self.op_ is None:
            raise NotFittedError("this SHAGParser is not fitted; call fit() or load()")

    def _encode(self, sents, with_heads):
        """Encode sentences already seen through the model's tag column (``with_tagset``)."""
        return encode_sentences(sents, self.tags_, self.words_, with_heads=with_heads)

    def encode(self, sents, with_heads: bool = True):
        """The fitted model's flat encoding (``data.Encoded``) of ``sents``, read through its
        tag column (``tagset_``) and checked; for learners called directly (benchmarks)."""
        self._check_fitted()
        sents = with_tagset(list(sents), self.tagset_)
        for i, s in enumerate(sents):
            check_sentence(s, i, need_heads=with_heads)
        return self._encode(sents, with_heads)

    # ------------------------------------------------------------------ training
    def fit(self, sents) -> "SHAGParser":
        """Learn the model from dependency sentences (objects with ``words``, ``tags``, ``heads``)."""
        sents = list(sents)
        if not sents:
            raise ValueError("cannot fit a SHAGParser on an empty treebank")
        self.tagset_ = choose_tagset(sents) if self.tagset == "auto" else self.tagset
        sents = with_tagset(sents, self.tagset_)
        for i, s in enumerate(sents):
            check_sentence(s, i, need_heads=True)
        t0 = time.perf_counter()
        tag_counts = Counter(t for s in sents for t in s.tags)
        tag_list = sorted(tag_counts, key=lambda t: (-tag_counts[t], t))
        if ROOT in tag_counts:
            raise FormatError(f"the tag {ROOT!r} is reserved", None, None)
        self.tags_ = SymbolVocab(tag_list, unk_id=0)   # unseen tags -> most frequent tag
        if self.lexical != "none":
            word_list = sorted({w for s in sents for w in s.words})
            self.words_ = SymbolVocab(word_list, unk_id=len(word_list))
        else:
            self.words_ = None
        if self.single_root is None:
            self.single_root_ = all(sum(1 for h in s.heads if h == 0) == 1 for s in sents)
        else:
            self.single_root_ = bool(self.single_root)
        enc = self._encode(sents, True)
        seqs = modifier_sequences(enc)
        H, M = self._H, self._M
        info: dict = {}
        if self.model == "spectral":
            self.op_ = learn_spectral(enc, seqs, H, M, self.states, basis=self.basis,
                                      smoothing=self.smoothing, ridge=self.ridge)
        elif self.model == "em":
            from .em import fit_em
            self.op_, em_info = fit_em(enc, seqs, H, M, self.states, self.iterations, self.seed,
                                       smoothing=self.smoothing)
            info["loglik"] = em_info["loglik"]
        else:
            self.op_ = OperatorSHAG.trivial(H, M)
        n_words = len(self.words_) if self.words_ is not None else 0
        if self.lexical != "none":
            self.det_ = BackoffSHAG(_LEX_STATES[self.lexical], True, M, n_words).fit(enc, seqs)
        elif self.model in ("det", "det+f"):
            self.det_ = BackoffSHAG("none" if self.model == "det" else "f", False, M).fit(enc, seqs)
        else:
            self.det_ = None
        self.fallback_ = BackoffSHAG("f", False, M).fit(enc, seqs)
        info["train_seconds"] = time.perf_counter() - t0
        info["n_sentences"] = len(sents)
        self.train_info_ = info
        return self

    # ------------------------------------------------------------------ parsing
    def _det_power(self) -> float:
        return self.lex_weight if self.lexical != "none" else 1.0

    def _marginals(self, enc, jobs):
        mu, pair_off, logz, status = arc_marginals(self.op_, self.det_, enc, self.single_root_,
                                                   jobs, self._det_power())
        bad = np.nonzero(status != 0)[0]
        if len(bad):
            # sentences the model gives no weight: use the always-positive DET+F back-off model
            mu2, off2, _, _ = arc_marginals(OperatorSHAG.trivial(self._H, self._M),
                                            self.fallback_, enc.subset(bad), self.single_root_,
                                            jobs)
            for i, b in enumerate(bad):
                mu[pair_off[b]:pair_off[b + 1]] = mu2[off2[i]:off2[i + 1]]
            self.n_fallback_ += len(bad)
        return mu, pair_off, logz, status

    def _chunks(self, sents, max_pairs: int = 1 << 21):
        """Consecutive batches of at most ``batch_size`` sentences and about ``max_pairs``
        (head, modifier) pairs, so that the per-batch arc-weight arrays stay small."""
        a = 0
        while a < len(sents):
            b, pairs = a, 0
            while b < len(sents) and b - a < self.batch_size:
                pairs += (len(sents[b].words) + 1) ** 2
                if b > a and pairs > max_pairs:
                    break
                b += 1
            yield sents[a:b]
            a = b

    def predict_heads(self, sents, jobs=None, progress=None) -> list[np.ndarray]:
        """Predicted heads (1-based int32 arrays, 0 = root) of each sentence.

        ``progress``: optional callable ``progress(done, total)`` called after each batch.
        """
        self._check_fitted()
        sents = with_tagset(list(sents), self.tagset_)
        for i, s in enumerate(sents):
            check_sentence(s, i, need_heads=False)
        out: list[np.ndarray] = []
        for chunk in self._chunks(sents):
            enc = self._encode(chunk, False)
            mu, pair_off, _, _ = self._marginals(enc, jobs)
            heads, hoff = mbr_decode(mu, pair_off, enc.lengths, self.single_root_, jobs)
            out.extend(heads[hoff[b]:hoff[b + 1]].copy() for b in range(len(chunk)))
            if progress is not None:
                progress(len(out), len(sents))
        return out

    def parse(self, sents, jobs=None, progress=None) -> list:
        """Parse sentences; returns copies with ``heads`` filled (and ``rels`` set to ``"_"``).

        ``jobs``: threads (None: all CPUs); ``progress``: optional ``progress(done, total)``.
        """
        sents = list(sents)
        heads = self.predict_heads(sents, jobs, progress)
        out = []
        for s, h in zip(sents, heads):
            hl = [int(x) for x in h]
            if dataclasses.is_dataclass(s):
                fields = {f.name for f in dataclasses.fields(s)}
                kw = {"heads": hl}
                if "rels" in fields:
                    kw["rels"] = ["_"] * len(hl)
                out.append(dataclasses.replace(s, **kw))
            else:
                c = copy.copy(s)
                c.heads = hl
                out.append(c)
        return out

    def arc_posteriors(self, sent, jobs=1) -> np.ndarray:
        """``(n+1) x (n+1)`` matrix of arc posteriors ``mu[h, m]`` for one sentence."""
        self._check_fitted()
        sent = with_tagset([sent], self.tagset_)[0]
        check_sentence(sent, None, need_heads=False)
        enc = self._encode([sent], False)
        mu, pair_off, _, _ = self._marginals(enc, jobs)
        return unpack_square(mu, pair_off, 0).copy()

    def log_weight(self, sents, jobs=None) -> np.ndarray:
        """log |total weight| (log of the sum over all projective trees) of each sentence."""
        self._check_fitted()
        sents = with_tagset(list(sents), self.tagset_)
        for i, s in enumerate(sents):
            check_sentence(s, i, need_heads=False)
        enc = self._encode(sents, False)
        _, _, logz, status = arc_marginals(self.op_, self.det_, enc, self.single_root_,
                                           jobs, self._det_power())
        return np.where(status == 0, logz, np.nan)

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> None:
        """Write the model to ``path`` (a fastspectral model file of kind ``"shag"``)."""
        self._check_fitted()
        from ..io.modelfile import save_model_file

        meta = {"model": self.model, "states": self.states, "lexical": self.lexical,
                "iterations": self.iterations, "lex_weight": self.lex_weight, "seed": self.seed,
                "single_root": self.single_root, "single_root_": self.single_root_,
                "basis": self.basis, "smoothing": self.smoothing, "tagset": self.tagset,
                "tagset_": self.tagset_, "ridge": self.ridge,
                "tags": self.tags_.symbols,
                "words": self.words_.symbols if self.words_ is not None else None,
                "train_info": {k: v for k, v in self.train_info_.items() if k != "loglik"}}
        arrays = {"op_alpha1": self.op_.alpha1, "op_beta": self.op_.beta, "op_A": self.op_.A}
        fb_meta, fb_arrays = self.fallback_.to_arrays("fb_")
        meta["fallback"] = fb_meta
        arrays.update(fb_arrays)
        if self.det_ is not None:
            det_meta, det_arrays = self.det_.to_arrays("det_")
            meta["det"] = det_meta
            arrays.update(det_arrays)
        else:
            meta["det"] = None
        save_model_file(path, _KIND, meta, arrays)

    @classmethod
    def load(cls, path) -> "SHAGParser":
        """Read a model written by :meth:`save`."""
        from ..io.modelfile import load_model_file

        _, meta, arrays = load_model_file(path, expected_kind=_KIND)
        return cls._from_model_file(meta, arrays)

    @classmethod
    def _from_model_file(cls, meta: dict, arrays: dict) -> "SHAGParser":
        """Rebuild a parser from a model file's ``meta`` and ``arrays``."""
        from ..errors import ModelFileError

        try:
            p = cls(meta["model"], meta["states"], meta["lexical"], meta["iterations"],
                    meta["lex_weight"], meta["seed"], meta["single_root"],
                    basis=int(meta.get("basis", 1)),
                    smoothing=float(meta.get("smoothing", 0.0)),
                    tagset=meta.get("tagset", "xpos"), ridge=float(meta.get("ridge", 0.0)))
            p.tagset_ = meta.get("tagset_", "xpos")
            if p.tagset_ not in TAGSETS[1:]:
                raise ValueError(f"unknown tagset {p.tagset_!r}")
            p.single_root_ = bool(meta["single_root_"])
            p.tags_ = SymbolVocab(meta["tags"], unk_id=0)
            if meta.get("words") is not None:
                p.words_ = SymbolVocab(meta["words"], unk_id=len(meta["words"]))
            p.op_ = OperatorSHAG(arrays["op_alpha1"], arrays["op_beta"], arrays["op_A"])
            p.fallback_ = BackoffSHAG.from_arrays(meta["fallback"], arrays, "fb_")
            if meta.get("det") is not None:
                p.det_ = BackoffSHAG.from_arrays(meta["det"], arrays, "det_")
            p.train_info_ = dict(meta.get("train_info", {}))
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(f"corrupt shag model file ({exc!r})") from None
        H, M = len(p.tags_) + 1, len(p.tags_)
        if p.op_.alpha1.shape[:2] != (H, 2) or p.op_.A.shape[:3] != (H, 2, M):
            raise ModelFileError("corrupt shag model file (operator shapes do not match the tags)")
        return p
