"""One estimator base for every learner: the scikit-learn estimator contract, model files, parse.

Every learner of fastspectral (:class:`~fastspectral.PCFG`, the L-PCFGs, :class:`SHAGParser`,
the language models and the sequence models) derives from :class:`Estimator`; those that parse
derive from :class:`Parser`.  The base gives

* ``get_params`` / ``set_params`` / ``__repr__`` derived from the ``__init__`` signature, exactly as
  scikit-learn's ``BaseEstimator`` does, so ``sklearn.base.clone(model)``, grid searches and
  pipelines work, and :func:`clone` does the same without scikit-learn;
* a fitted check (:meth:`Estimator._check_fitted`) naming the real class;
* one validation of the hyperparameters (:meth:`Estimator._validate_params`): the declarative
  table :attr:`Estimator._parameter_constraints` (:class:`Interval`, sets of options) and the
  one hook ``_check_params`` for what a table cannot say;
* ``save(path)`` / ``cls.load(path)`` through the versioned model files of :mod:`fastspectral.io`
  (a subclass implements ``_model_file() -> (meta, arrays)`` and the classmethod
  ``_from_model_file(meta, arrays)``), and an upgrade of parameter names read from files written
  by older versions (:attr:`Estimator._renamed_params`);
* one ``parse(items, *, tags=None, jobs=None, progress=None)`` signature (:class:`Parser`) with the
  argument checks shared by every parser (:meth:`Parser._check_parse_args`).

Why not inherit from ``sklearn.base.BaseEstimator``?  Importing it costs about 0.6 s on this
project's machine (scikit-learn imports most of its utilities), which every ``fastspectral``
command would pay, including ``parse`` of a small file.  The contract is small (the signature
introspection below mirrors scikit-learn's), and ``tests/test_estimators.py`` checks it against
scikit-learn's own ``clone`` for every learner of the registry.

The vocabulary shared by every learner (one name, one meaning):

================  ===============================================================================
``n_states``      number of latent states
``random_state``  seed of every random choice of ``fit`` (an int; ``None``: fresh entropy)
``iterations``    training iterations (EM, perceptron epochs, liblinear) of the learner
``tag_column``    the CoNLL POS column a dependency model reads (``"auto"``, ``"upos"``, ``"xpos"``)
``tag_map``       a mapping of the tags (``"universal"`` or ``"as-is"``)
``dim``           an embedding size (``rank``: a spectral rank)
``method``        the estimation algorithm of a family (``"spectral"``, ``"em"``, ``"pivot"``...)
``jobs``          default number of parsing threads (``None``: the cores available)
``X``             the training data argument of ``fit``
``fit_time_``     seconds spent in the last ``fit``
``kind``          class attribute: the model kind (registry key and model-file kind)
================  ===============================================================================
"""
from __future__ import annotations

import copy
import inspect
from itertools import chain
from typing import ClassVar

from ._threads import check_jobs  # noqa: F401  (re-exported: the thread-count check)
from .errors import NotFittedError

__all__ = ["Estimator", "Parser", "clone", "check_jobs", "check_int", "check_float", "Interval",
           "Statistics", "Partition", "PartitionedFit", "check_sequences", "check_words",
           "check_dep_sentences", "check_trees"]


class Estimator:
    """Base of every fastspectral learner (scikit-learn's estimator contract).

    Subclasses list every hyperparameter as an explicit keyword of ``__init__`` and store it
    unchanged under the same attribute name; validation happens in ``fit``.  Learned state lives
    in attributes whose names end with ``_``.
    """

    #: model kind: the key of :mod:`fastspectral.models` and the kind written in model files
    kind: ClassVar[str] = ""
    #: what ``fastspectral parse`` feeds the model: "sentences", "dependency" or "sequences"
    input_kind: ClassVar[str] = "sentences"
    #: parameter names of model files written by older versions -> today's names
    _renamed_params: ClassVar[dict] = {}
    #: the declarative checks of the hyperparameters, ``{name: constraint}``, merged along the
    #: class hierarchy (a subclass adds or replaces entries).  A constraint is an
    #: :class:`Interval`, a ``set`` of allowed values (``None`` among them when allowed), or
    #: one of the strings ``"boolean"``, ``"callable"``, ``"dict"`` (each may end in
    #: ``" or None"``)
    _parameter_constraints: ClassVar[dict] = {}

    # -- validation ----------------------------------------------------------------------------
    @classmethod
    def _all_constraints(cls) -> dict:
        out: dict = {}
        for klass in reversed(cls.__mro__):
            out.update(vars(klass).get("_parameter_constraints", {}))
        return out

    def _validate_params(self) -> None:
        """Check every hyperparameter: the table :attr:`_parameter_constraints` (a one-line
        ``ValueError`` / ``TypeError`` naming the parameter), then :meth:`_check_params`.
        ``fit`` calls it, and so do the partitioned / statistics paths and the model-file
        readers."""
        for name, constraint in self._all_constraints().items():
            check_constraint(name, getattr(self, name), constraint)
        self._check_params()

    def _check_params(self) -> None:
        """The checks the table cannot express (relations between parameters, nested
        settings); a learner overrides it (calling ``super()._check_params()``)."""

    # -- the scikit-learn contract -----------------------------------------------------------
    @classmethod
    def _get_param_names(cls) -> list[str]:
        init = cls.__init__
        if init is object.__init__:
            return []
        params = [p for p in inspect.signature(init).parameters.values()
                  if p.name != "self" and p.kind != p.VAR_KEYWORD]
        for p in params:
            if p.kind == p.VAR_POSITIONAL:
                raise RuntimeError(f"{cls.__name__}.__init__ must not take *args (scikit-learn "
                                   "estimator contract)")
        return sorted(p.name for p in params)

    def get_params(self, deep: bool = True) -> dict:
        """Hyperparameters as a dict ``{name: value}`` (with ``deep``, also ``name__sub`` of
        nested estimators)."""
        out = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params):
        """Set hyperparameters (``name=value``, nested ``name__sub=value``); returns self."""
        valid = self.get_params(deep=True)
        nested: dict[str, dict] = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; valid "
                                 f"parameters: {', '.join(self._get_param_names())}")
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub_params in nested.items():
            valid[name].set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__).parameters
        parts = []
        for name in self._get_param_names():
            value = getattr(self, name)
            default = sig[name].default
            try:
                same = default is not inspect.Parameter.empty and bool(value == default) and \
                    type(value) is type(default)
            except Exception:  # arrays and other values without a boolean ==
                same = False
            if not same:
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __sklearn_tags__(self):  # pragma: no cover - only called by scikit-learn itself
        from sklearn.utils import Tags, TargetTags
        return Tags(estimator_type=None, target_tags=TargetTags(required=False))

    # -- fitted state ------------------------------------------------------------------------
    def _is_fitted(self) -> bool:
        """True when ``fit`` (or ``load``) has set learned attributes (names ending in ``_``)."""
        return any(k.endswith("_") and not k.startswith("__") for k in vars(self))

    def _check_fitted(self) -> None:
        """Raise :class:`~fastspectral.errors.NotFittedError` naming the real class."""
        if not self._is_fitted():
            name = type(self).__name__
            raise NotFittedError(f"this {name} is not fitted yet: call fit(...) first or load "
                                 f"a saved model with {name}.load(path)")

    # -- model files -------------------------------------------------------------------------
    def _model_file(self) -> tuple[dict, dict]:
        """``(meta, arrays)`` written by :meth:`save`: a JSON-serialisable dict and a dict of
        numeric arrays (subclasses implement it)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be saved")

    @classmethod
    def _from_model_file(cls, meta: dict, arrays: dict):
        """The fitted model of ``(meta, arrays)`` read from a model file (subclasses implement
        it; :func:`fastspectral.io.load` calls it)."""
        raise NotImplementedError(f"{cls.__name__} cannot be loaded")

    def save(self, path) -> None:
        """Write the fitted model to ``path`` (versioned, pickle-free; see :mod:`fastspectral.io`)."""
        from .io.modelfile import save_model_file

        self._check_fitted()
        meta, arrays = self._model_file()
        save_model_file(path, self.kind, meta, arrays)

    @classmethod
    def load(cls, path):
        """Read a model of this class written by :meth:`save`."""
        from .io.modelfile import construct, load_model_file

        _, meta, arrays = load_model_file(path, expected_kind=cls.kind)
        return construct(cls, cls.kind, meta, arrays, path)

    @classmethod
    def _params_from_file(cls, params: dict) -> dict:
        """Constructor arguments from the ``params`` of a model file: names of older versions
        renamed (:attr:`_renamed_params`), names this version does not know dropped."""
        known = set(cls._get_param_names())
        out = {}
        for name, value in params.items():
            name = cls._renamed_params.get(name, name)
            if name in known:
                out[name] = value
        return out


class Parser(Estimator):
    """Base of the models that parse: one ``parse`` signature for all of them."""

    def parse(self, items, *, tags=None, jobs=None, progress=None) -> list:
        """Parse ``items`` (tokenised sentences, or dependency sentences for dependency models).

        Parameters
        ----------
        items : list
            The sentences: lists of word strings (``input_kind == "sentences"``) or
            :class:`~fastspectral.trees.conll.DepSentence` objects (``"dependency"``).
        tags : list of lists of str, optional
            Part-of-speech tags, one list per sentence (``None``: the model chooses them).
        jobs : int, optional
            Parsing threads (``None``: the model's ``jobs``, else every core available).
        progress : callable, optional
            ``progress(done, total)`` called as sentences finish.

        Returns
        -------
        list
            One result per item, in order.
        """
        raise NotImplementedError

    def _check_parse_args(self, items, tags=None, jobs=None) -> int:
        """Shared checks of ``parse``: fitted, ``items`` a list of sentences (not one flat
        sentence), ``tags`` aligned, ``jobs`` >= 1.  Returns the thread count to use."""
        self._check_fitted()
        from ._memory import keep_chart_memory
        keep_chart_memory()                 # charts reused between sentences (glibc)
        if isinstance(items, (str, bytes)):
            raise TypeError("parse() takes a list of sentences, not a string; for one sentence "
                            "pass [sentence]")
        if self.input_kind == "sentences":
            items = items if isinstance(items, (list, tuple)) else list(items)
            if items and isinstance(items[0], str):
                raise TypeError("parse() takes a list of tokenised sentences (lists of words); "
                                "got a flat list of strings: for one sentence pass [words]")
            check_sequences(items, "sentences")
        elif self.input_kind == "dependency":
            check_dep_sentences(items, "sentences")
        if tags is not None and len(tags) != len(items):
            raise ValueError(f"tags has {len(tags)} entries for {len(items)} sentences")
        from ._threads import resolve_jobs

        return resolve_jobs(jobs if jobs is not None else getattr(self, "jobs", None),
                            n_items=len(items) if hasattr(items, "__len__") else None)


# ---- input checks shared by every learner: a one-line TypeError for a wrong kind of input ----
def check_sequences(sequences, what: str = "sequences") -> list:
    """``sequences`` as a list of lists of strings (``(word, tag)`` pairs are not accepted:
    choose a field when reading).  Raises ``TypeError`` with a one-line message for a string,
    a flat list of strings (whose characters would be taken as words) or a non-string token."""
    if isinstance(sequences, (str, bytes)):
        raise TypeError(f"{what} must be a list of sequences (lists of strings), not a string")
    try:
        seqs = list(sequences)
    except TypeError:
        raise TypeError(f"{what} must be a list of sequences (lists of strings), not "
                        f"{type(sequences).__name__}") from None
    if set(map(type, seqs)) <= {list}:
        try:                            # the common case: lists of strings, checked at C speed
            "".join(chain.from_iterable(seqs))
            return seqs
        except TypeError:
            pass                        # find and name the offending sequence below
    out = []
    for i, s in enumerate(seqs):
        if isinstance(s, (str, bytes)):
            raise TypeError(f"{what}[{i}] is a string: pass a list of sequences (lists of "
                            "tokens), e.g. [sentence.split()]")
        try:
            s = list(s)
            "".join(s)                  # a C-speed check that every token is a string
        except TypeError:
            bad = next((t for t in s if not isinstance(t, str)), s) if isinstance(s, list) \
                else s
            raise TypeError(f"{what}[{i}] holds a {type(bad).__name__}, not a string (a "
                            "sequence is a list of string tokens)") from None
        out.append(s)
    return out


def check_words(words, what: str = "words") -> list:
    """``words`` (one sequence of string tokens) as a list; a one-line ``TypeError`` for a
    string (its characters are not words) or a non-string token."""
    if isinstance(words, (str, bytes)):
        raise TypeError(f"{what} must be a list of words (strings), not a string")
    try:
        words = list(words)
        "".join(words)
    except TypeError:
        bad = next((t for t in words if not isinstance(t, str)), words) \
            if isinstance(words, list) else words
        raise TypeError(f"{what} holds a {type(bad).__name__}, not a string (a list of "
                        "string words is expected)") from None
    return words


def check_dep_sentences(items, what: str = "sentences") -> list:
    """``items`` as a list of dependency sentences (objects with a ``words`` column, such as
    :class:`~fastspectral.trees.conll.DepSentence`; an ``nltk`` DependencyGraph is converted)
    whose words are strings; a one-line
    ``TypeError`` otherwise (a string, lists of words, non-string words)."""
    if isinstance(items, (str, bytes)) or hasattr(items, "words"):
        raise TypeError(f"{what} must be a list of dependency sentences (DepSentence, e.g. "
                        "from fastspectral.trees.conll.read_conllu), not "
                        f"{'a string' if isinstance(items, (str, bytes)) else 'one sentence'}")
    from .trees.conll import as_dep_sentences

    items = as_dep_sentences(items)               # nltk DependencyGraphs converted
    for i, s in enumerate(items):
        if isinstance(s, (str, bytes, list, tuple)) or not hasattr(s, "words"):
            raise TypeError(f"{what}[{i}] is a {type(s).__name__}, not a dependency sentence "
                            "(DepSentence, e.g. from fastspectral.trees.conll.read_conllu)")
    try:
        "".join(chain.from_iterable(s.words for s in items))
    except TypeError:
        for i, s in enumerate(items):
            bad = next((w for w in s.words if not isinstance(w, str)), None)
            if bad is not None:
                raise TypeError(f"{what}[{i}] has a word that is a {type(bad).__name__}, not "
                                "a string") from None
        raise
    return items


def check_trees(trees, what: str = "trees") -> list:
    """``trees`` as a list of :class:`~fastspectral.trees.tree.Tree` (an ``nltk.Tree``
    converted); a one-line ``TypeError``
    for a string, one tree, or an item that is not a tree (a list of words, a string)."""
    from .trees.tree import Tree, as_tree

    if isinstance(trees, (str, bytes, Tree)) or as_tree(trees) is not trees:
        raise TypeError(f"{what} must be a list of trees (Tree, e.g. from "
                        "fastspectral.trees.readers.read_treebank), not "
                        f"{'a string' if isinstance(trees, (str, bytes)) else 'one tree'}")
    trees = [as_tree(t) for t in trees]           # nltk Trees converted
    for i, t in enumerate(trees):
        if not isinstance(t, Tree):
            raise TypeError(f"{what}[{i}] is a {type(t).__name__}, not a Tree (read trees with "
                            "fastspectral.trees.readers.read_treebank or Tree.fromstring)")
    return trees


def check_int(name: str, value, low: int, allow_none: bool = False):
    """A hyperparameter check: ``value`` as an ``int`` >= ``low`` (None passes when
    ``allow_none``); ``ValueError`` naming ``name`` otherwise (bools are refused)."""
    import numbers

    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}{' or None' if allow_none else ''}"
                         f", got {value!r}")
    return int(value)


def check_float(name: str, value, low: float, high: float | None = None) -> float:
    """A hyperparameter check: ``value`` as a ``float`` in ``[low, high)`` (``high`` None: no
    upper bound; NaN and bools refused); ``ValueError`` naming ``name`` otherwise."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = float("nan")
    if isinstance(value, bool) or not (x >= low and (high is None or x < high)):
        interval = f">= {low}" if high is None else f"in [{low}, {high})"
        raise ValueError(f"{name} must be a number {interval}, got {value!r}")
    return x


class Interval:
    """A numeric hyperparameter constraint (scikit-learn's ``Interval``, smaller).

    ``Interval(int, 1, None)``: an integer >= 1 (:func:`check_int`); ``Interval(int, 16, 28,
    closed="both")``: an integer in 16..28; ``Interval(float, 0, 1)``:
    a number in ``[0, 1)`` (:func:`check_float`); ``closed`` says which ends belong to it:
    ``"left"`` (the default), ``"right"``, ``"both"`` or ``"neither"`` (``Interval(float, 0,
    None, closed="neither")``: a number > 0); ``allow_none`` lets None pass.  Bools, strings
    and NaN are refused.
    """

    def __init__(self, kind, low, high=None, *, closed: str = "left", allow_none: bool = False):
        if kind not in (int, float) or closed not in ("left", "right", "both", "neither"):
            raise ValueError("Interval(kind, low, high, closed): kind int or float, closed "
                             "'left', 'right', 'both' or 'neither'")
        if kind is int and closed != ("left" if high is None else "both"):
            raise ValueError("an integer Interval includes its bounds: closed='left' without "
                             "high, 'both' with it")
        self.kind, self.low, self.high = kind, low, high
        self.closed, self.allow_none = closed, allow_none

    def check(self, name: str, value):
        if value is None and self.allow_none:
            return None
        if self.kind is int:
            v = check_int(name, value, self.low, self.allow_none)
            if self.high is not None and v > self.high:
                raise ValueError(f"{name} must be an integer in {self.low}..{self.high}, got "
                                 f"{value!r}")
            return v
        import numbers

        x = float(value) if isinstance(value, numbers.Real) else float("nan")
        low_open, high_closed = self.closed in ("right", "neither"), self.closed in ("right",
                                                                                      "both")
        above = x > self.low if low_open else x >= self.low
        below = self.high is None or x < self.high or high_closed and x <= self.high
        if isinstance(value, bool) or not (above and below):
            left, right = "(" if low_open else "[", "]" if high_closed else ")"
            interval = f"{'>' if low_open else '>='} {self.low}" if self.high is None else \
                f"in {left}{self.low}, {self.high}{right}"
            raise ValueError(f"{name} must be a number {interval}"
                             f"{' or None' if self.allow_none else ''}, got {value!r}")
        return x

    def __repr__(self) -> str:
        return f"Interval({self.kind.__name__}, {self.low}, {self.high}, closed={self.closed!r})"


def check_constraint(name: str, value, constraint) -> None:
    """Check ``value`` of the hyperparameter ``name`` against one entry of
    :attr:`Estimator._parameter_constraints`; a one-line error naming ``name`` otherwise."""
    import numpy as np

    if isinstance(constraint, Interval):
        constraint.check(name, value)
    elif isinstance(constraint, (set, frozenset)):
        try:
            ok = value in constraint
        except TypeError:                   # unhashable
            ok = False
        if not ok or isinstance(value, bool) and not any(isinstance(c, bool)
                                                         for c in constraint):
            shown = ", ".join(sorted(repr(c) for c in constraint))
            raise ValueError(f"{name} must be one of {shown}, got {value!r}")
    elif constraint in ("boolean", "boolean or None"):
        if not (isinstance(value, (bool, np.bool_)) or value is None and "None" in constraint):
            none = "None, " if "None" in constraint else ""
            raise ValueError(f"{name} must be {none}True or False, got {value!r}")
    elif constraint in ("dict", "dict or None"):
        if not (isinstance(value, dict) or value is None and constraint.endswith("None")):
            raise ValueError(f"{name} must be a dict{' or None' if 'None' in constraint else ''}"
                             f", got {value!r}")
    elif constraint in ("callable", "callable or None"):
        if not (callable(value) or value is None and constraint.endswith("None")):
            raise TypeError(f"{name} must be {constraint.replace('callable', 'a callable')}, "
                            f"got {value!r}")
    else:
        raise TypeError(f"unknown constraint {constraint!r} of {name}")


def clone(estimator, *, safe: bool = True):
    """An unfitted copy of ``estimator`` with the same hyperparameters (scikit-learn's
    ``clone`` without importing scikit-learn)."""
    if isinstance(estimator, (list, tuple, set, frozenset)):
        return type(estimator)(clone(e, safe=safe) for e in estimator)
    if not hasattr(estimator, "get_params") or isinstance(estimator, type):
        if not safe:
            return copy.deepcopy(estimator)
        raise TypeError(f"cannot clone {estimator!r}: it has no get_params method")
    params = estimator.get_params(deep=False)
    return type(estimator)(**{k: clone(v, safe=False) for k, v in params.items()})



# ---- learning from partitioned data ---------------------------------------------------------
# The statistics protocol: the count and moment statistics of a learner are sums over
# sentences, so a learner that mixes in PartitionedFit computes them per partition
# (``sufficient_statistics``), the partitions' statistics are merged (``Statistics.merge``, any
# tree of merges that keeps the partitions' order), and ``fit_statistics`` computes the estimate
# once from the merged statistics.  A learner needing several passes over the data (the spectral
# L-PCFG: symbol tables, then feature moments, then projected moments; EM: one pass per
# iteration) returns from ``fit_statistics`` the *context* of the next pass (broadcast to every
# partition), and None when it is fitted.  :meth:`PartitionedFit.fit_partitions` is the serial
# driver; :mod:`fastspectral.dask.learn` runs the same passes on a Dask cluster.


class Statistics:
    """Mergeable sufficient statistics of one partition (or of several, merged).

    Fields are merged by kind: :class:`collections.Counter` by adding counts (keys kept in
    first-seen order, so merging partitions in order gives the dict order of counting their
    concatenation), numbers, NumPy arrays and SciPy sparse matrices by ``+``, nested
    :class:`Statistics` recursively; the fields named in ``_same`` must be equal (e.g. the pass
    and the settings they were computed with).  Subclasses with other fields override
    :meth:`_merge_field`.

    ``a.merge(b)`` (also ``a + b``; ``sum(stats)`` works) returns new statistics and changes
    neither operand; ``a.update(b)`` (also ``a += b``) adds ``b`` into ``a`` in place.
    """

    #: fields that must be equal in merged statistics (not added)
    _same: tuple = ()

    def copy(self) -> "Statistics":
        """A copy sharing no mutable container with ``self``."""
        from collections import Counter

        import numpy as np

        new = object.__new__(type(self))
        for name, value in vars(self).items():
            if isinstance(value, Counter):
                value = Counter(value)
            elif isinstance(value, (np.ndarray, Statistics)) or hasattr(value, "tocsr"):
                value = value.copy()
            elif isinstance(value, list):
                value = list(value)
            elif isinstance(value, dict):
                value = {k: (v.copy() if hasattr(v, "copy") else v) for k, v in value.items()}
            setattr(new, name, value)
        return new

    def update(self, other: "Statistics") -> "Statistics":
        """Add ``other`` into ``self`` (in place); returns self."""
        if type(other) is not type(self):
            raise TypeError(f"cannot merge {type(other).__name__} into {type(self).__name__}")
        mine, theirs = vars(self), vars(other)
        if mine.keys() != theirs.keys():
            raise ValueError(f"{type(self).__name__}: statistics with different fields")
        for name in mine:
            if name in self._same:
                if not _equal(mine[name], theirs[name]):
                    raise ValueError(f"cannot merge {type(self).__name__} computed with "
                                     f"different {name} ({mine[name]!r} != {theirs[name]!r})")
                continue
            setattr(self, name, self._merge_field(name, mine[name], theirs[name]))
        return self

    def _merge_field(self, name, a, b):
        """The merge of field ``name`` (``a`` may be changed in place and returned)."""
        from collections import Counter

        if isinstance(a, Counter):
            a.update(b)
            return a
        if isinstance(a, Statistics):
            return a.update(b)
        if a is None and b is None:
            return None
        return a + b

    def merge(self, other: "Statistics") -> "Statistics":
        """New statistics: ``self`` and ``other`` added (neither changed)."""
        return self.copy().update(other)

    def __add__(self, other):
        return self.merge(other)

    def __radd__(self, other):
        if isinstance(other, int) and other == 0:   # sum(stats) starts from 0
            return self.copy()
        return NotImplemented

    def __iadd__(self, other):
        return self.update(other)

    @classmethod
    def merge_all(cls, stats) -> "Statistics":
        """The merge of an ordered, non-empty iterable of statistics (none of them changed)."""
        it = iter(stats)
        try:
            acc = next(it).copy()
        except StopIteration:
            raise ValueError("no statistics to merge") from None
        for s in it:
            acc.update(s)
        return acc


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:       # arrays: element-wise ==
        import numpy as np
        return bool(np.array_equal(a, b))


class Partition:
    """One partition of the training data as a learner reads it in every pass
    (:meth:`PartitionedFit.prepare_partition`): ``data`` (e.g. the binarised trees) and
    ``n_items``.  ``cache`` keeps what a pass derives from the data for the next passes (node
    arrays...); it is not pickled (a partition moved to another Dask worker recomputes it)."""

    def __init__(self, data, n_items: int):
        self.data = data
        self.n_items = int(n_items)
        self.cache: dict = {}

    #: rough bytes per item in memory (a parsed tree or sentence with its Python objects)
    _BYTES_PER_ITEM = 16_000

    def __sizeof__(self) -> int:
        # what Dask's scheduler takes as the size of this data (``sys.getsizeof``): a
        # partition is heavy, so tasks go where it lies rather than the data to them
        cached = 0
        for value in self.cache.values():
            for v in (value if isinstance(value, tuple) else (value,)):
                cached += int(getattr(v, "nbytes", 0) or 0)
        return object.__sizeof__(self) + self.n_items * self._BYTES_PER_ITEM + cached

    def __getstate__(self):
        return {"data": self.data, "n_items": self.n_items}

    def __setstate__(self, state):
        self.data = state["data"]
        self.n_items = state["n_items"]
        self.cache = {}


class PartitionedFit:
    """Mixin of the learners that can learn from partitioned data (see :class:`Statistics`).

    A learner implements :meth:`sufficient_statistics` and :meth:`fit_statistics` (and, when
    every pass reads the items transformed the same way, :meth:`prepare_partition`)::

        stats = [model.sufficient_statistics(part) for part in partitions]   # per partition
        context = model.fit_statistics(Statistics.merge_all(stats))          # once
        # context is None: fitted; else run the next pass with that context:
        stats = [model.sufficient_statistics(part, context) for part in partitions] ...

    :meth:`fit_partitions` is that loop; the model equals ``fit`` on the concatenated
    partitions (up to the order of floating-point sums).
    """

    def prepare_partition(self, items) -> Partition:
        """The partition as every pass reads it (default: the items as a list)."""
        items = list(items)
        return Partition(items, len(items))

    def _as_partition(self, items) -> Partition:
        return items if isinstance(items, Partition) else self.prepare_partition(items)

    def sufficient_statistics(self, items, context=None) -> Statistics:
        """The :class:`Statistics` of one partition (``items``: the training items, or a
        :class:`Partition`) for the pass of ``context`` (None: the first pass)."""
        raise NotImplementedError(f"{type(self).__name__} cannot learn from partitions")

    def fit_statistics(self, stats: Statistics, context=None):
        """Estimate from the merged statistics of the pass of ``context``.  Returns None when
        the model is fitted (``self`` holds the estimate, as after ``fit``), else the context
        of the next pass."""
        raise NotImplementedError(f"{type(self).__name__} cannot learn from partitions")

    def _check_fit_params(self, fit_params: dict) -> None:
        """Raise TypeError unless :meth:`fit_statistics` takes the keywords ``fit_params``
        (checked before any statistics are computed)."""
        if not fit_params:
            return
        import inspect

        try:
            inspect.signature(self.fit_statistics).bind(None, None, **fit_params)
        except TypeError:
            raise TypeError(f"{type(self).__name__}.fit_statistics takes no argument "
                            f"{', '.join(map(repr, fit_params))}") from None

    def fit_partitions(self, partitions, **fit_params):
        """Fit from an ordered list of partitions (lists of items) in this process, pass by
        pass; returns self (the same model as ``fit`` on their concatenation).

        ``fit_params``: keywords of :meth:`fit_statistics` (passed to every pass), such as
        ``dev=`` of :class:`~fastspectral.lm.LatentBigramLM` (the model of ``fit(..., dev=)``).
        """
        import time

        self._check_fit_params(fit_params)
        t0 = time.perf_counter()
        parts = [self.prepare_partition(p) for p in partitions]
        if not parts:
            raise ValueError("no partitions to learn from")
        context = None
        while True:
            stats = Statistics.merge_all(self.sufficient_statistics(p, context) for p in parts)
            context = self.fit_statistics(stats, context, **fit_params)
            if context is None:
                break
        self.fit_time_ = time.perf_counter() - t0
        return self
