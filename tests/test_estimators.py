"""The estimator contract, checked for every learner of the registry (fastspectral.models).

clone (scikit-learn's own, and fastspectral.base.clone), get_params / set_params, repr, fit
returns self, a not-fitted error naming the class, save / load round trip with identical output,
``last_parse_stats_`` set by every parser's ``parse``,
the registry's input kind equal to the class's, the top-level import, and a runnable example in
every learner's docstring.  A new kind gets all of this by its registry line alone (give it small
settings in ``SMALL`` if its defaults are slow).
"""
from __future__ import annotations

import ast
import dataclasses
import doctest
import importlib
import inspect
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import fastspectral
from fastspectral import models
from fastspectral.base import Estimator, Parser, clone
from fastspectral.errors import NotFittedError

#: small, fast settings per model kind (the contract does not depend on them)
SMALL = {
    "spectral-lpcfg": {"n_states": 2},
    "pivot-lpcfg": {"n_states": 2},
    "em-lpcfg": {"n_states": 2, "iterations": 2},
    "shag": {"n_states": 2},
    "latent-bigram-lm": {"n_states": 2},
}

KINDS = sorted(models.REGISTRY)


@pytest.fixture(scope="module")
def data(synthetic_grammar):
    """Training and test items for each input kind, from the built-in synthetic grammar."""

    g = synthetic_grammar
    trees = g.sample(300, seed=3)
    test = g.sample(12, seed=4)
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.trees.transforms import clean

    deps = list(trees_to_dep_sentences(clean(t) for t in trees))
    return {
        "sentences": (trees, [t.leaves() for t in test]),
        "dependency": (deps[:250], deps[250:262]),
        "sequences": ([t.leaves() for t in trees], [t.leaves() for t in test]),
    }


def _make(kind):
    cls = models.model_class(kind)
    return cls, cls(**SMALL.get(kind, {}))


def _output(model, items):
    """What a model produces for ``items``, as comparable text."""
    if model.input_kind == "sentences":
        return [str(t) for t in model.parse(items, jobs=1)]
    if model.input_kind == "dependency":
        return [s.heads for s in model.parse(items, jobs=1)]
    return repr(model.log_likelihood(items))


@pytest.mark.parametrize("kind", KINDS)
def test_registry_entry_matches_its_class(kind):
    entry = models.get(kind)
    cls = entry.load_class()
    assert issubclass(cls, Estimator)
    assert cls.kind == kind, "the class attribute `kind` keys the registry"
    assert cls.input_kind == entry.input_kind
    assert getattr(fastspectral, cls.__name__) is cls     # top-level import


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_params_clone_and_repr(kind):
    sklearn_base = pytest.importorskip("sklearn.base")
    cls, model = _make(kind)
    params = model.get_params()
    assert set(params) >= set(SMALL.get(kind, {}))
    names = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    assert sorted(params) == sorted(names), "every __init__ argument is a parameter"
    for other in (sklearn_base.clone(model), clone(model)):
        assert type(other) is cls and other is not model
        assert repr(other.get_params()) == repr(params)
    assert repr(model).startswith(f"{cls.__name__}(")
    name = next(iter(SMALL.get(kind, {})), None)
    if name is not None:
        assert f"{name}=" in repr(model)
        model.set_params(**{name: params[name]})
    with pytest.raises(ValueError, match="invalid parameter"):
        model.set_params(no_such_parameter=1)


@pytest.mark.parametrize("kind", KINDS)
def test_init_stores_arguments_unchanged(kind):
    """scikit-learn's contract: __init__ stores each argument as given (validation in fit)."""
    cls = models.model_class(kind)
    sentinel = object()
    for name in cls._get_param_names():
        model = cls(**{name: sentinel})
        assert model.get_params()[name] is sentinel, name


@pytest.mark.parametrize("kind", KINDS)
def test_not_fitted_error_names_the_class(kind, tmp_path):
    cls, model = _make(kind)
    with pytest.raises(NotFittedError, match=cls.__name__):
        model.save(tmp_path / "m.fsm")


def _check_parse_stats(model, items):
    """Every parser's ``parse`` sets ``last_parse_stats_``: a dataclass counting the
    sentences of that call (reset by every call), with integer counters only."""
    if not isinstance(model, Parser):
        return
    for part in (items, items[:3]):
        _output(model, part)
        stats = model.last_parse_stats_
        assert dataclasses.is_dataclass(stats), type(stats)
        assert stats.sentences == len(part)
        assert all(isinstance(getattr(stats, f.name), int) for f in dataclasses.fields(stats))
        # what ``fastspectral parse`` reads of every parser
        assert isinstance(getattr(stats, "flat_fallbacks", 0), int)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_fit_returns_self_and_save_load_round_trip(kind, data, tmp_path):
    cls, model = _make(kind)
    train, test = data[cls.input_kind]
    assert model.fit(train) is model
    assert model.fit_time_ >= 0
    before = _output(model, test)
    _check_parse_stats(model, test)
    path = tmp_path / "m.fsm"
    model.save(path)
    for loaded in (cls.load(path), fastspectral.load(path)):
        assert type(loaded) is cls
        assert repr(loaded.get_params()) == repr(model.get_params())
        assert _output(loaded, test) == before
    _check_parse_stats(loaded, test)


def _learner_modules():
    return sorted({models.get(k).target.split(":")[0] for k in KINDS})


@pytest.mark.parametrize("module", _learner_modules())
def test_learner_docstring_examples_run(module):
    mod = importlib.import_module(module)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(mod, optionflags=flags, verbose=False)
    assert result.failed == 0
    assert result.attempted > 0, f"{module} has no runnable example"


# ---------------------------------------------------------------------------------- imports
def _imports(path: Path, package: str) -> set[str]:
    """Modules of ``fastspectral`` a file imports, at any level (module top, functions,
    methods, conditionals), relative imports resolved against ``package``; ``from m import x``
    counts ``m`` and ``m.x`` (``x`` may be a submodule)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("fastspectral"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("fastspectral"):
                out.add(mod)
                out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def _package_modules() -> dict:
    root = Path(fastspectral.__file__).parent
    modules = {}
    for info in pkgutil.walk_packages([str(root)], "fastspectral."):
        spec = importlib.util.find_spec(info.name)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue
        package = info.name if info.ispkg else info.name.rpartition(".")[0]
        modules[info.name] = Path(spec.origin), package
    return modules


def _import_graph(modules: dict) -> dict:
    graph = {name: {m for m in _imports(path, pkg) if m in modules and m != name}
             for name, (path, pkg) in modules.items()}
    # a package's __init__ importing its own modules is not a cycle of siblings
    for name in graph:
        graph[name] = {m for m in graph[name] if not name.startswith(m + ".")}
    return graph


def _cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_import_graph_sees_function_level_and_relative_imports(tmp_path):
    """The graph counts an import inside a method, resolves ``..`` and ``from . import x``."""
    f = tmp_path / "m.py"
    f.write_text("import os\nfrom .b import c\n\nclass K:\n    def f(self):\n"
                 "        from ..x import y\n        from . import z\n"
                 "        if True:\n            import fastspectral.w\n", encoding="utf-8")
    got = _imports(f, "fastspectral.p")
    assert {"fastspectral.p.b", "fastspectral.p.b.c", "fastspectral.x", "fastspectral.x.y",
            "fastspectral.p.z", "fastspectral.w"} <= got
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    """No two modules of the package import each other, directly or through others, at any
    level (an import inside a function closes a circle as well)."""
    modules = _package_modules()
    assert len(modules) > 30
    cycles = _cycles(_import_graph(modules))
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_one_registry():
    """No second table of model kinds: the model-file loader and the CLI read fastspectral.models."""
    root = Path(fastspectral.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for name in ("register_model(", "MODEL_TYPES", "DEMO_MODELS", "DELEGATED_COMMANDS",
                     "_REGISTRY"):
            assert name not in text, f"{path.relative_to(root)} has {name}"
    assert np.all([isinstance(k, str) for k in models.REGISTRY])
