"""Shared test fixtures and markers: where the shared data lives, the synthetic treebank.

The data folder ``shared/data`` lies beside the checkout (``../shared/data``); the environment
variable ``FASTSPECTRAL_DATA`` overrides it.  Tests that need it skip with a reason when absent.

Markers (registered in pyproject.toml) are given automatically at collection, so that they
cannot drift from what the tests do:

* ``data``: the test reaches the shared data, through the ``shared_data`` / ``evalb_dir``
  fixtures or a name of this file (``need``, ``data_path``, ``DATA``, ``SHARED``, ``EVALB``)
  used by the test, its decorators, the fixtures it requests or the module-level helpers and
  constants those use.  A ``data`` test skips when the data folder is absent, and ``need``
  called by a test without the marker fails it (the analysis missed a path to the data).
* ``subprocess``: the test (or a fixture or helper of its module that it uses) starts a
  process: ``subprocess``, ``Popen``, ``check_output``, ``sys.executable``.
* ``slow`` (seconds each: over ~2.5 s measured on a loaded 2-core machine, a module fixture
  included) is written on the tests themselves (``@pytest.mark.slow``, or ``pytestmark`` for
  a module whose fixtures are slow); ``pytest -m "not slow"`` is the quick run.
"""
from __future__ import annotations

import ast
import functools
import os
from pathlib import Path

import pytest

# Subprocesses started by the tests (`python -m fastspectral ...`, `python -c ...`) run with the
# repository as their working directory; without this, Python would put that directory first on
# sys.path and import the *source* tree (whose compiled kernels exist only after an in-place
# build) instead of the installed package.  (Python >= 3.11; ignored by 3.10.)
os.environ.setdefault("PYTHONSAFEPATH", "1")

REPO = Path(__file__).resolve().parents[1]
# Where the fastspectral under test was imported from: the checkout after an in-place or
# editable build, site-packages after `pip install .` (CI).  A child Python gets this folder,
# never REPO, on its path, so that it runs the same build as the tests do.
PACKAGE_PARENT = Path(__import__("fastspectral").__file__).resolve().parents[1]


def subprocess_env(*first, **extra) -> dict:
    """``os.environ`` for a child Python that imports the fastspectral under test.

    ``first``: folders put before it on ``PYTHONPATH``; ``extra``: variables to set.
    """
    env = dict(os.environ, **extra)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([*map(str, first), str(PACKAGE_PARENT), *rest])
    return env

SHARED = Path(os.environ.get("FASTSPECTRAL_SHARED", REPO.parent / "shared"))
DATA = Path(os.environ.get("FASTSPECTRAL_DATA", SHARED / "data"))
EVALB = SHARED / "evalb"


def data_path(*parts) -> Path:
    """A path under the shared data folder (it may not exist: see :func:`need`)."""
    return DATA.joinpath(*parts)


def need(path: Path) -> Path:
    """``path`` when it exists, else skip the calling test with a reason."""
    item = _CURRENT.get("item")
    if item is not None and item.get_closest_marker("data") is None:
        pytest.fail(f"{item.nodeid} reads the shared data ({path}) but is not marked 'data': "
                    "reach it through the shared_data fixture or a module-level name of "
                    "conftest (tests/conftest.py, _data_roots)", pytrace=False)
    if not Path(path).exists():
        pytest.skip(f"{path} is absent (shared data lies in ../shared beside the checkout; "
                    "set FASTSPECTRAL_DATA to point elsewhere)")
    return Path(path)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder ``../shared/data`` (skips the test when it is absent)."""
    return need(DATA)


@pytest.fixture(scope="session")
def evalb_dir() -> Path:
    """The EVALB reference reports ``../shared/evalb`` (skips the test when absent)."""
    return need(EVALB)


@pytest.fixture(scope="session")
def synthetic_grammar():
    """The synthetic treebank: the built-in latent PCFG ``LatentPCFG.default(n_states=2,
    seed=0)``, built once per test session; draw trees with ``.sample(n, seed=...)`` (each call
    with a seed gives new, identical trees, so a test may change what it draws)."""
    from fastspectral.synthetic import LatentPCFG

    return LatentPCFG.default(n_states=2, seed=0)


# ---- markers ------------------------------------------------------------------------------------
_CURRENT: dict = {}

#: fixtures that reach the shared data
_DATA_FIXTURES = frozenset({"shared_data", "evalb_dir"})
#: names of this file that reach the shared data when a test module imports them
_DATA_NAMES = frozenset({"need", "data_path", "DATA", "SHARED", "EVALB"})
#: names that start a process
_PROCESS_NAMES = frozenset({"subprocess", "Popen", "check_output", "check_call"})


def _names(node) -> set:
    """The names a syntax tree refers to (``sys.executable`` counts as one name)."""
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif (isinstance(sub, ast.Attribute) and sub.attr == "executable"
              and isinstance(sub.value, ast.Name) and sub.value.id == "sys"):
            out.add("sys.executable")
    return out


class ModuleUses:
    """What the tests of one module reach, found from its source: each module-level function,
    class or assignment is *tainted* by a set of root names when it refers to one of them or
    to another tainted module-level name."""

    def __init__(self, source: str):
        tree = ast.parse(source)
        self.defs: dict[str, list] = {}
        self.conftest_names: set = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defs.setdefault(node.name, []).append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for sub in ast.walk(t):
                        if isinstance(sub, ast.Name):
                            self.defs.setdefault(sub.id, []).append(node)
        for node in ast.walk(tree):                     # module-level or inside a test
            if isinstance(node, ast.ImportFrom) and node.module == "conftest":
                self.conftest_names.update(a.asname or a.name for a in node.names)
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self._memo: dict = {}

    def tainted(self, name: str, roots: frozenset, _stack=()) -> bool:
        """Whether the module-level ``name`` reaches one of ``roots``."""
        key = (name, roots)
        if key in self._memo:
            return self._memo[key]
        if name in _stack or name not in self.defs:
            return False
        hit = any(self.reaches(node, roots, _stack + (name,)) for node in self.defs[name])
        self._memo[key] = hit
        return hit

    def reaches(self, node, roots: frozenset, _stack=()) -> bool:
        names = _names(node)
        if names & roots:
            return True
        return any(self.tainted(n, roots, _stack) for n in names if n in self.defs)

    def test_node(self, item):
        """The function (or method) of a collected test."""
        name = getattr(item, "originalname", None) or item.name.split("[")[0]
        cls = getattr(item, "cls", None)
        if cls is not None and cls.__name__ in self.classes:
            for node in self.classes[cls.__name__].body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                    return node
        nodes = [n for n in self.defs.get(name, ()) if isinstance(n, (ast.FunctionDef,
                                                                       ast.AsyncFunctionDef))]
        return nodes[-1] if nodes else None

    def item_reaches(self, item, roots: frozenset) -> bool:
        """Whether a test, the module's ``pytestmark`` or a fixture of this module that the test
        requests reaches ``roots``."""
        node = self.test_node(item)
        if node is not None and self.reaches(node, roots):
            return True
        if self.tainted("pytestmark", roots):
            return True
        return any(self.tainted(f, roots) for f in item.fixturenames if f in self.defs)

    def data_roots(self) -> frozenset:
        return frozenset(_DATA_FIXTURES | (self.conftest_names & _DATA_NAMES))


@functools.lru_cache(maxsize=None)
def module_uses(path: str) -> ModuleUses:
    return ModuleUses(Path(path).read_text(encoding="utf-8"))


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = getattr(item, "path", None) or Path(str(item.fspath))
        if path.suffix != ".py":
            continue
        uses = module_uses(str(path))
        if _DATA_FIXTURES & set(item.fixturenames) or item.get_closest_marker("data") \
                or uses.item_reaches(item, uses.data_roots()):
            item.add_marker(pytest.mark.data)
        if uses.item_reaches(item, _PROCESS_NAMES | {"sys.executable"}):
            item.add_marker(pytest.mark.subprocess)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _CURRENT["item"] = item
    if item.get_closest_marker("data") is not None and not DATA.exists():
        need(DATA)


def pytest_runtest_teardown(item):
    _CURRENT.pop("item", None)


def without_punctuation_rule(model):
    """``model`` with the lexicons' punctuation rule switched off, as parsers were
    before it: the legacy digests were taken then (tests/data/legacy/make_legacy.py)."""
    from fastspectral.grammar.lexicon import Lexicon

    seen = set()

    def walk(obj, depth=0):
        if id(obj) in seen or depth > 4:
            return
        seen.add(id(obj))
        if isinstance(obj, Lexicon):
            obj.set_punctuation({})
            return
        for value in getattr(obj, "__dict__", {}).values():
            if isinstance(value, (list, tuple)):
                for v in value:
                    walk(v, depth + 1)
            elif hasattr(value, "__dict__"):
                walk(value, depth + 1)

    walk(model)
    return model


@pytest.fixture(autouse=True)
def _fastspectral_logger_propagates():
    """``fastspectral.cli.main`` gives the ``fastspectral`` logger its own stderr handler and
    stops propagation (the command line's status lines); a test that ran ``main`` in-process
    must not hide the library's warnings from ``caplog`` in the tests after it."""
    import logging

    log = logging.getLogger("fastspectral")
    saved = log.propagate
    log.propagate = True
    yield
    log.propagate = saved
