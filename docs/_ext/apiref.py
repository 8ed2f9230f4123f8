"""Sphinx extension: the API reference pages, written at build time from the package tree.

On ``builder-inited`` it walks the public modules of every package of :func:`packages`
(names starting with ``_`` are private) and writes ``api/<module>.rst`` (generated, not
committed): a module page is ``automodule`` with its members (those defined in the module,
documented from their numpydoc docstrings), a package page its docstring and the toctree of its
modules.  ``api/index.rst`` lists the packages.
"""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

#: the order of the index; every other public module of ``fastspectral`` follows it, except
#: ``fastspectral.cli`` (the command line, documented by its own reference, ``cli/``)
ORDER = (
    "fastspectral", "fastspectral.models", "fastspectral.base", "fastspectral.errors",
    "fastspectral.synthetic", "fastspectral.trees", "fastspectral.grammar", "fastspectral.lpcfg",
    "fastspectral.dependency", "fastspectral.rerank", "fastspectral.latentdep",
    "fastspectral.hmm", "fastspectral.lm", "fastspectral.lexical", "fastspectral.unsupervised",
    "fastspectral.embeddings", "fastspectral.linalg", "fastspectral.eval", "fastspectral.io",
    "fastspectral.dask", "fastspectral.integrations",
)
EXCLUDED = ("fastspectral.cli",)


def packages() -> list[str]:
    """The documented top-level packages and modules, in index order."""
    import fastspectral

    found = {f"fastspectral.{info.name}" for info in pkgutil.iter_modules(fastspectral.__path__)
             if not info.name.startswith("_")} - set(EXCLUDED)
    return ([name for name in ORDER if name == "fastspectral" or name in found]
            + sorted(found - set(ORDER)))


PACKAGES = tuple(packages())


def _title(text: str, ch: str = "=") -> str:
    return f"{text}\n{ch * len(text)}\n"


def submodules(name: str) -> list[str]:
    """Public sub-modules of package ``name`` (empty for a module)."""
    mod = importlib.import_module(name)
    if not hasattr(mod, "__path__") or name == "fastspectral":
        return []
    return [f"{name}.{info.name}" for info in pkgutil.iter_modules(mod.__path__)
            if not info.name.startswith("_")]


def _private_reexports(name: str, seen: set) -> str:
    """Directives for the classes and functions in ``name.__all__`` that are defined in a
    private module (``fastspectral._threads``, ``eval._evalb_base`` ...): documented here, under
    the public name, at the first module that exports them."""
    import inspect

    mod = importlib.import_module(name)
    out = []
    for attr in getattr(mod, "__all__", ()):
        obj = getattr(mod, attr, None)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)) or id(obj) in seen:
            continue
        if not any(part.startswith("_") for part in obj.__module__.split(".")[1:]):
            continue
        seen.add(id(obj))
        kind = "autoclass" if inspect.isclass(obj) else "autofunction"
        out.append(f".. {kind}:: {name}.{attr}\n" + ("   :members:\n" if kind == "autoclass" else ""))
    return "\n".join(out)


def api_pages() -> dict[str, str]:
    """``{file stem: reStructuredText}`` of every page of the API reference."""
    pages = {}
    seen: set = set()

    def module_page(name: str) -> None:
        subs = submodules(name)
        if name == "fastspectral":
            pages[name] = (_title("fastspectral") + "\n.. automodule:: fastspectral\n"
                           "   :no-members:\n\n"
                           "Top-level names: :func:`fastspectral.load` is "
                           ":func:`fastspectral.io.modelfile.load`, :func:`fastspectral.clone` "
                           "is :func:`fastspectral.base.clone`, ``fastspectral.Tree`` is "
                           ":class:`fastspectral.trees.tree.Tree`, the errors are those of "
                           ":mod:`fastspectral.errors`, and every learner class of "
                           ":mod:`fastspectral.models` is ``fastspectral.<ClassName>``.\n")
            return
        extra = _private_reexports(name, seen)
        if subs:
            body = [_title(name), f".. automodule:: {name}\n   :no-members:\n", extra,
                    ".. toctree::\n   :maxdepth: 1\n"]
            body += [f"   {s}" for s in subs]
            pages[name] = "\n".join(body) + "\n"
            for s in subs:
                module_page(s)
        else:
            pages[name] = (_title(name) + f"\n.. automodule:: {name}\n   :members:\n"
                           "   :ignore-module-all:\n   :show-inheritance:\n\n" + extra)

    for name in PACKAGES:
        module_page(name)
    index = [_title("API reference"),
             "Generated from the numpydoc docstrings when the documentation is built.  Every "
             "learner of the registry is also importable from the top level "
             "(``fastspectral.PCFG``, ``fastspectral.SHAGParser`` ...) and every model file "
             "loads with :func:`fastspectral.load`.  Each class and function is documented in "
             "the module that defines it; a package page lists its modules.\n",
             ".. toctree::\n   :maxdepth: 1\n"]
    index += [f"   {name}" for name in PACKAGES]
    pages["index"] = "\n".join(index) + "\n"
    return pages


def write_pages(app) -> None:
    out = Path(app.srcdir) / "api"
    out.mkdir(exist_ok=True)
    pages = api_pages()
    for stem, text in pages.items():
        path = out / f"{stem}.rst"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    for old in out.glob("*.rst"):           # modules that no longer exist
        if old.stem not in pages:
            old.unlink()


def setup(app):
    app.connect("builder-inited", write_pages)
    return {"version": "1", "parallel_read_safe": True}
