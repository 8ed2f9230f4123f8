"""The ``"fastspectral"`` spaCy pipeline component (``pip install "fastspectral[spacy]"``).

Registered through spaCy's entry points (``[project.entry-points.spacy_factories]``), so after
installation ``nlp.add_pipe("fastspectral", config={"model": "wsj.fsm"})`` works without
importing this module.  See ``docs/integrations.md`` for the full behaviour:

* input: the doc's tokens, sentence by sentence (``doc.sents``: a sentencizer or a parser must
  run before; a doc without sentence boundaries is a ``ValueError``); whitespace tokens are
  left out of the model's input, whitespace inside a token is given to the model as ``_``;
* tags (``tags="auto"``): ``token.tag_`` (and ``token.pos_`` for the ``upos`` column of
  dependency models) when an upstream component set them, else none: constituency models
  choose their own tags, dependency models see unknown tags;
* constituency models (input kind ``"sentences"``) set benepar's extensions:
  ``span._.parse_string``, ``span._.labels``, ``span._.constituents``, ``span._.children``,
  ``span._.parent``; dependency parsers set ``token.head`` and ``token.dep_``; the
  latent-variable dependency model (which scores trees) sets ``span._.fastspectral_log_prob``
  of each sentence from the heads of an upstream parser;
* batched: each batch of ``nlp.pipe`` goes to the model's ``parse`` in one call; sentences the
  model refuses get its documented fallback (``docs/limits.md``), never an exception;
* ``nlp.to_disk`` copies the model file into the component's folder (``model.fsm``), which
  ``spacy.load`` reads back.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
from itertools import islice
from pathlib import Path

from spacy.language import Language
from spacy.tokens import Doc, Span

from ..trees.conll import DepSentence
from ..trees.tree import Tree

__all__ = ["FastSpectralComponent", "make_component", "TAG_CHOICES"]

log = logging.getLogger("fastspectral")

TAG_CHOICES = ("auto", "tag", "pos", "none")
MODEL_FILE = "model.fsm"
_DATA = "_fastspectral_parses"     # Doc extension: [[sent_start, token_ids, tree_string], ...]


def _register_extensions():
    if not Doc.has_extension(_DATA):
        Doc.set_extension(_DATA, default=None)
    getters = {"parse_string": _parse_string, "labels": _labels, "constituents": _constituents,
               "children": _children, "parent": _parent}
    for name, fn in getters.items():
        if not Span.has_extension(name):
            Span.set_extension(name, getter=fn)
    if not Span.has_extension("fastspectral_log_prob"):
        Span.set_extension("fastspectral_log_prob", default=None)


# ---- the constituency view of a doc (benepar's extensions) ---------------------------------
class _SentenceTree:
    """One parsed sentence: the tree (its TOP wrapper removed) and its nodes' doc spans."""

    __slots__ = ("tree", "nodes", "start", "end")

    def __init__(self, ids, tree_string):
        tree = Tree.fromstring(tree_string)
        if tree.label == "TOP" and len(tree.children) == 1 and not isinstance(
                tree.children[0], str):
            tree = tree.children[0]
        self.tree = tree
        nodes = []                       # (doc start, doc end, label, is_preterminal, node)
        for node, (label, i, j) in zip(tree.subtrees(), tree.spans()):   # both preorder
            nodes.append((ids[i], ids[j - 1] + 1, label, node.is_preterminal(), node))
        self.nodes = nodes
        self.start, self.end = ids[0], ids[-1] + 1


_CACHE: dict = {}      # id(doc) -> (its parse data, its trees): the getters' last docs


def _doc_trees(doc):
    data = doc._.get(_DATA)
    if not data:
        return []
    hit = _CACHE.get(id(doc))
    if hit is not None and hit[0] is data:
        return hit[1]
    trees = [_SentenceTree(ids, s) for ids, s in data]
    if len(_CACHE) >= 64:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[id(doc)] = (data, trees)
    return trees


def _strip(span):
    """``(start, end)`` of ``span`` without its leading and trailing whitespace tokens."""
    doc = span.doc
    i, j = span.start, span.end
    while i < j and doc[i].is_space:
        i += 1
    while j > i and doc[j - 1].is_space:
        j -= 1
    return i, j


def _sentence_of(span):
    i, j = _strip(span)
    for st in _doc_trees(span.doc):
        if st.start <= i and j <= st.end:
            return st, i, j
    raise ValueError(f"span {span.text!r} is not inside a sentence parsed by the "
                     "fastspectral component")


def _matching(st, i, j):
    return [n for n in st.nodes if n[0] == i and n[1] == j]


def _labels(span):
    """Labels of the constituents covering exactly ``span``, outermost first (preterminals,
    i.e. part-of-speech tags, excluded); ``()`` when it is not a constituent."""
    st, i, j = _sentence_of(span)
    return tuple(n[2] for n in _matching(st, i, j) if not n[3])


def _parse_string(span):
    """The bracketed parse of ``span`` (a constituent or a token)."""
    st, i, j = _sentence_of(span)
    m = _matching(st, i, j)
    if not m:
        raise ValueError(f"span {span.text!r} is not a constituent")
    return m[0][4].to_string()


def _distinct(nodes):
    """Spans in preorder, one per distinct ``(start, end)`` (unary chains listed once)."""
    seen, out = set(), []
    for n in nodes:
        if (n[0], n[1]) not in seen:
            seen.add((n[0], n[1]))
            out.append((n[0], n[1]))
    return out


def _constituents(span):
    """Every constituent inside ``span`` (single tokens included), in preorder."""
    st, i, j = _sentence_of(span)
    doc = span.doc
    return [doc[a:b] for a, b in _distinct(n for n in st.nodes if i <= n[0] and n[1] <= j)]


def _children(span):
    """The immediate constituents of the constituent ``span``."""
    st, i, j = _sentence_of(span)
    m = _matching(st, i, j)
    if not m:
        raise ValueError(f"span {span.text!r} is not a constituent")
    node = m[-1][4]                                   # the lowest node of a unary chain
    doc = span.doc
    idx = {id(n[4]): n for n in st.nodes}
    return [doc[idx[id(c)][0]:idx[id(c)][1]] for c in node.children if not isinstance(c, str)]


def _parent(span):
    """The smallest constituent strictly containing ``span`` (None for the sentence)."""
    st, i, j = _sentence_of(span)
    best = None
    for a, b, _, _, _ in st.nodes:
        if a <= i and j <= b and (a, b) != (i, j) and (best is None or b - a <= best[1] - best[0]):
            best = (a, b)
    return None if best is None else span.doc[best[0]:best[1]]


# ---- the component -------------------------------------------------------------------------
class FastSpectralComponent:
    """A fastspectral parser in a spaCy pipeline (see the module docstring).

    Parameters
    ----------
    nlp : Language
    name : str
    model : str
        Path of a fastspectral model file (``fastspectral train`` or ``model.save``).  When it
        does not exist (a pipeline being loaded by ``spacy.load`` elsewhere), the copy in the
        component's folder is read by :meth:`from_disk`.
    tags : {"auto", "tag", "pos", "none"}
        Where given tags come from: ``"auto"`` takes ``token.tag_`` (and ``token.pos_``) when the
        doc has them, ``"tag"`` / ``"pos"`` always that attribute, ``"none"`` never.
    jobs : int or None
        Parsing threads (None: every core available, divided by nothing in the main process and
        1 in the worker processes of ``nlp.pipe(n_process=...)``).
    max_memory : str or int or None
        The model's chart budget (``docs/limits.md``; None: the model's default).
    """

    def __init__(self, nlp, name="fastspectral", *, model=None, tags="auto", jobs=None,
                 max_memory=None):
        if tags not in TAG_CHOICES:
            raise ValueError(f"tags must be one of {TAG_CHOICES}, got {tags!r}")
        if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int)
                                 or jobs < 1):
            raise ValueError(f"jobs must be an integer >= 1 or None, got {jobs!r}")
        self.name = name
        self.tags = tags
        self.jobs = jobs
        self.max_memory = max_memory
        self.model_path = None if model is None else Path(model).expanduser().resolve()
        self._model = None
        _register_extensions()
        if self.model_path is not None and self.model_path.exists():
            self._load(self.model_path)

    # -- the model -------------------------------------------------------------------------
    def _load(self, path):
        from .. import load

        model = load(path)
        kind = getattr(model, "input_kind", None)
        if kind not in ("sentences", "dependency") or not hasattr(model, "parse"):
            raise ValueError(f"{path}: a {model.kind!r} model does not parse sentences")
        if self.max_memory is not None:
            model.max_memory = self.max_memory
        self._model = model
        self.model_path = Path(path)

    @property
    def model(self):
        """The fastspectral model (loaded once per process), or None while there is no model
        file to load.  Never raises: spaCy probes its components' ``model`` attributes (its
        runtime protocol checks) while ``spacy.load`` builds a pipeline, before
        :meth:`from_disk` has read the pipeline's copy of the file."""
        if self._model is None and self.model_path is not None and self.model_path.exists():
            self._load(self.model_path)
        return self._model

    def _require_model(self):
        """:attr:`model`, or the error that says why there is none."""
        model = self.model
        if model is None:
            if self.model_path is None:
                raise ValueError(f"the {self.name!r} component has no model: give "
                                 "config={'model': PATH}")
            raise FileNotFoundError(f"{self.model_path}: no such model file")
        return model

    def _threads(self):
        if self.jobs is not None:
            return self.jobs
        if multiprocessing.parent_process() is not None:
            return 1                      # a worker of nlp.pipe(n_process=k): k processes
        return None                       # the model's own default

    def __getstate__(self):               # worker processes reload the model from its file
        state = dict(self.__dict__)
        state["_model"] = None
        return state

    # -- processing ------------------------------------------------------------------------
    def __call__(self, doc):
        return next(iter(self.pipe([doc])))

    def pipe(self, stream, batch_size=128):
        it = iter(stream)
        while True:
            docs = list(islice(it, batch_size))
            if not docs:
                return
            self._process(docs)
            yield from docs

    def _sentences(self, doc):
        """``[(token ids, words, tags, pos)]`` of the doc's sentences (whitespace tokens out)."""
        if len(doc) == 0:
            return []
        if not (doc.has_annotation("SENT_START") or doc.has_annotation("DEP")):
            raise ValueError(f"the {self.name!r} component needs sentence boundaries: add a "
                             "'sentencizer' or a parser before it in the pipeline")
        use_tag = self.tags == "tag" or (self.tags == "auto" and doc.has_annotation("TAG"))
        use_pos = self.tags == "pos" or (self.tags == "auto" and doc.has_annotation("POS"))
        out = []
        for sent in doc.sents:
            toks = [t for t in sent if not t.is_space]
            if not toks:
                continue
            words = ["_".join(t.text.split()) or "_" for t in toks]
            tags = [t.tag_ or "_" for t in toks] if use_tag else None
            pos = [t.pos_ or "_" for t in toks] if use_pos else None
            out.append(([t.i for t in toks], words, tags, pos))
        return out

    def _process(self, docs):
        model = self._require_model()
        per_doc = [self._sentences(doc) for doc in docs]
        flat = [s for sents in per_doc for s in sents]
        if model.kind == "latent-dep":
            self._score(docs, per_doc)
            return
        if not flat:
            return
        jobs = self._threads()
        if model.input_kind == "sentences":
            given = [s[3] if self.tags == "pos" else s[2] for s in flat]
            tags = given if any(t is not None for t in given) else None
            trees = model.parse([s[1] for s in flat], tags=tags, jobs=jobs)
            k = 0
            for doc, sents in zip(docs, per_doc):
                data = []
                for ids, *_ in sents:
                    data.append([ids, trees[k].to_string()])
                    k += 1
                doc._.set(_DATA, data or None)
            return
        items = [DepSentence(words=w, xpos=t or [], upos=p or [], heads=[-1] * len(w))
                 for _, w, t, p in flat]
        parsed = model.parse(items, jobs=jobs)
        k = 0
        for doc, sents in zip(docs, per_doc):
            self._set_heads(doc, sents, parsed[k:k + len(sents)])
            k += len(sents)

    @staticmethod
    def _set_heads(doc, sents, parsed):
        """``token.head`` / ``token.dep_`` of the doc's tokens from the parsed sentences, in one
        ``Doc.from_array`` (whitespace tokens: see the module docstring)."""
        import numpy as np
        from spacy.attrs import DEP, HEAD, SENT_START

        n = len(doc)
        ar = np.arange(n, dtype=np.int64)
        head = ar.copy()
        covered = np.zeros(n, dtype=bool)
        rel = np.full(n, "dep", dtype=object)
        if sents:
            ids = np.concatenate([np.asarray(x[0], dtype=np.int64) for x in sents])
            off = np.cumsum([0] + [len(x[0]) for x in sents[:-1]])
            h = np.concatenate([np.asarray(p.heads, dtype=np.int64) for p in parsed])
            root = h <= 0
            first = np.repeat(off, [len(x[0]) for x in sents])       # sentence offset in ids
            head[ids] = np.where(root, ids, ids[first + np.maximum(h - 1, 0)])
            covered[ids] = True
            given = np.array([r for p in parsed for r in p.rels], dtype=object)
            rel[ids] = np.where(given == "_", np.where(root, "ROOT", "dep"), given)
        if not covered.all():
            # a whitespace token hangs from the nearest word before it in its sentence (after
            # it at the sentence's start); a sentence of whitespace only is its own root
            starts = doc.to_array([SENT_START]).reshape(-1).astype(np.int64) == 1
            starts[0] = True
            sent_start = np.maximum.accumulate(np.where(starts, ar, 0))
            ends = np.r_[starts[1:], True]
            sent_end = np.minimum.accumulate(np.where(ends, ar, n)[::-1])[::-1]
            prev = np.maximum.accumulate(np.where(covered, ar, -1))
            nxt = np.minimum.accumulate(np.where(covered, ar, n)[::-1])[::-1]
            gap = ~covered
            use_prev = gap & (prev >= sent_start)
            use_next = gap & ~use_prev & (nxt <= sent_end)
            head[use_prev] = prev[use_prev]
            head[use_next] = nxt[use_next]
            rel[gap & ~use_prev & ~use_next] = "ROOT"
        labels, inverse = np.unique(rel, return_inverse=True)        # objects: no fixed width
        label_ids = np.array([doc.vocab.strings.add(x) for x in labels], dtype=np.uint64)
        arr = np.stack([(head - ar).view(np.uint64), label_ids[inverse.reshape(-1)]], 1)
        doc.from_array([HEAD, DEP], arr)

    def _score(self, docs, per_doc):
        """latent-dep: the log-probability estimate of each sentence's upstream tree."""
        items, where = [], []
        for doc, sents in zip(docs, per_doc):
            if not doc.has_annotation("DEP"):
                if sents:
                    log.warning("%s: latent-dep scores trees; this doc has no heads (add a "
                                "parser before it); left unscored", self.name)
                continue
            for sent in doc.sents:
                toks = [t for t in sent if not t.is_space]
                if not toks:
                    continue
                pos = {t.i: k + 1 for k, t in enumerate(toks)}
                heads = [0 if t.head.i == t.i else pos.get(t.head.i, 0) for t in toks]
                items.append(DepSentence(words=["_".join(t.text.split()) or "_" for t in toks],
                                         xpos=[t.tag_ or "_" for t in toks], heads=heads))
                where.append(sent)
        if not items:
            return
        logp = self._require_model().log_prob(items, jobs=self._threads())
        for sent, lp in zip(where, logp):
            sent._.fastspectral_log_prob = float(lp)

    # -- serialisation ---------------------------------------------------------------------
    def to_disk(self, path, *, exclude=()):
        """Write the model file into ``path`` (``model.fsm``)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        target = path / MODEL_FILE
        if self.model_path is not None and self.model_path.exists():
            if self.model_path.resolve() != target.resolve():
                shutil.copyfile(self.model_path, target)
        else:
            self._require_model().save(target)

    def from_disk(self, path, *, exclude=()):
        """Read the model file written by :meth:`to_disk`."""
        self._load(Path(path) / MODEL_FILE)
        return self


@Language.factory("fastspectral",
                  default_config={"model": None, "tags": "auto", "jobs": None,
                                  "max_memory": None})
def make_component(nlp, name, model, tags, jobs, max_memory):
    """spaCy factory of :class:`FastSpectralComponent`."""
    return FastSpectralComponent(nlp, name, model=model, tags=tags, jobs=jobs,
                                 max_memory=max_memory)
