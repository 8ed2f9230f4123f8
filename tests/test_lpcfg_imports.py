"""The fastspectral.lpcfg package has no import cycle: every module imports alone, and the graph
of its intra-package imports (read from the source) is acyclic."""
import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import fastspectral.lpcfg

PKG = Path(fastspectral.lpcfg.__file__).resolve().parent
MODULES = sorted(p.stem for p in PKG.glob("*.py") if p.stem != "__init__")


def _package_imports(module: str) -> set:
    """Modules of fastspectral.lpcfg imported by ``module`` (at any level of its source)."""
    tree = ast.parse((PKG / f"{module}.py").read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                if node.module:
                    out.add(node.module.split(".")[0])
                else:
                    out.update(a.name for a in node.names)
            elif node.level == 0 and (node.module or "").startswith("fastspectral.lpcfg."):
                out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("fastspectral.lpcfg."):
                    out.add(a.name.split(".")[2])
    return out & set(MODULES)


def test_import_graph_is_acyclic():
    graph = {m: _package_imports(m) for m in MODULES}
    assert graph["pivot"] and "em" not in graph["pivot"]
    state = {}

    def visit(m, path):
        if state.get(m) == "done":
            return
        assert state.get(m) != "active", f"import cycle: {' -> '.join(path + [m])}"
        state[m] = "active"
        for n in sorted(graph[m]):
            visit(n, path + [m])
        state[m] = "done"

    for m in MODULES:
        visit(m, [])


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_alone(module):
    """A fresh interpreter imports the module by itself (no partially initialised module)."""
    name = f"fastspectral.lpcfg.{module}"
    code = f"import importlib; importlib.import_module({name!r})"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]


def test_moved_names():
    """The shared kernels live in latent_params; the planted anchored example is test data
    (tests/_anchored.py), not part of the package."""
    lp = importlib.import_module("fastspectral.lpcfg.latent_params")
    for name in ("LatentLayout", "LatentParams", "e_step", "m_step", "uniform_counts"):
        assert hasattr(lp, name)
    em = importlib.import_module("fastspectral.lpcfg.em")
    assert not hasattr(em, "LatentModelBase") and not hasattr(em, "brute_force_counts")
    assert not (PKG.parent / "synthetic_anchored.py").exists()
    from _anchored import AnchoredExample  # noqa: F401
