"""The package's layers: the library never imports its command line (only the entry point
``python -m fastspectral``, ``fastspectral/__main__.py``, does), and only
``fastspectral.dask`` imports Dask (every import statement of every module, at any depth:
module level, inside functions and classes, relative or absolute).  A module over 700 lines
(Python, Cython, headers) says at its top why it is one module."""
from __future__ import annotations

import ast
import pathlib
import re

import fastspectral

ROOT = pathlib.Path(fastspectral.__file__).parent


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        yield ".".join(parts), is_pkg, path


def imported_names(source: str, module: str, is_pkg: bool) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in ``source`` (a module named
    ``module``; ``from X import y`` gives ``X`` and ``X.y``)."""
    package = module if is_pkg else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module
            out.append((node.lineno, name))
            out.extend((node.lineno, f"{name}.{a.name}") for a in node.names)
    return out


def _violations():
    cli, dask = [], []
    for module, is_pkg, path in _modules():
        names = imported_names(path.read_text(encoding="utf-8"), module, is_pkg)
        for line, name in names:
            where = f"{path.relative_to(ROOT.parent)}:{line}: {name}"
            library = not module.startswith("fastspectral.cli") and \
                module != "fastspectral.__main__"
            if library and (name == "fastspectral.cli" or name.startswith("fastspectral.cli.")):
                cli.append(where)
            top = name.split(".")[0]
            if top in ("dask", "distributed") and not module.startswith("fastspectral.dask"):
                dask.append(where)
    return cli, dask


def test_the_checker_sees_imports_at_every_level():
    src = ("import os\n"
           "def f():\n"
           "    from ..cli import kit\n"
           "class C:\n"
           "    def g(self):\n"
           "        import distributed.client\n"
           "        from dask import bag\n")
    names = {n for _, n in imported_names(src, "fastspectral.io.pipeline", False)}
    assert {"os", "fastspectral.cli", "fastspectral.cli.kit", "distributed.client",
            "dask", "dask.bag"} <= names
    pkg = {n for _, n in imported_names("from . import parse\n", "fastspectral.dask", True)}
    assert "fastspectral.dask.parse" in pkg


def test_no_library_module_imports_the_command_line():
    cli, _ = _violations()
    assert cli == []


def test_only_fastspectral_dask_imports_dask():
    _, dask = _violations()
    assert dask == []


def test_the_walk_covers_the_package():
    mods = {m for m, _, _ in _modules()}
    assert {"fastspectral.io.pipeline", "fastspectral.dask.client", "fastspectral.trees.corpus",
            "fastspectral.cli.parse"} <= mods


# ---- large modules say why they are one module (docs/ARCHITECTURE.md) ----------------------
#: lines above which a module states why it is kept as one module
LONG_MODULE = 700
#: the first lines of a module in which that statement must stand
HEAD_LINES = 40
_KEPT = re.compile(r"Kept as one module \(about ([\d,]+) lines\)")


def one_module_reason(text: str):
    """The problem with ``text`` (a module's source) as a long module, or None: it must say
    "Kept as one module (about N lines)" in its first :data:`HEAD_LINES` lines, N within 10 %
    of its length."""
    lines = text.splitlines()
    if len(lines) <= LONG_MODULE:
        return None
    m = _KEPT.search("\n".join(lines[:HEAD_LINES]))
    if m is None:
        return f"{len(lines)} lines and no \"Kept as one module (about N lines)\" in its " \
               f"first {HEAD_LINES} lines"
    stated = int(m.group(1).replace(",", ""))
    if abs(stated - len(lines)) > 0.1 * len(lines):
        return f"says about {stated} lines but has {len(lines)}"
    return None


def test_the_long_module_check_finds_a_missing_or_stale_reason():
    body = "x = 1\n" * (LONG_MODULE + 50)
    assert "no \"Kept as one module" in one_module_reason('"""A module."""\n' + body)
    late = '"""A module.\n' + "\n" * HEAD_LINES + \
        'Kept as one module (about 750 lines): one thing."""\n' + body
    assert "first 40 lines" in one_module_reason(late)
    stale = '"""A module.\n\nKept as one module (about 300 lines): one thing."""\n' + body
    assert "says about 300 lines" in one_module_reason(stale)
    ok = '"""A module.\n\nKept as one module (about 1,750 lines): one thing."""\n' + \
        "x = 1\n" * 1700
    assert one_module_reason(ok) is None
    assert one_module_reason('"""Short."""\n' + "x = 1\n" * 100) is None


def test_every_long_module_says_why_it_is_one_module():
    files = [p for ext in ("*.py", "*.pyx", "*.pxd", "*.h") for p in ROOT.rglob(ext)]
    assert any(p.suffix == ".pyx" for p in files)
    bad = []
    for path in sorted(files):
        why = one_module_reason(path.read_text(encoding="utf-8"))
        if why is not None:
            bad.append(f"{path.relative_to(ROOT.parent)}: {why}")
    assert bad == []
