"""The package's Numba cache (fastspectral._jit) and the build's warm-up (fastspectral.cli.warmup).

Every module with ``@njit(cache=True)`` kernels takes ``njit`` from ``fastspectral._jit`` (so
that its kernels are cached in the package's ``_jitcache`` folder, which ``pip install`` ships
compiled); the cache locator's folders and content-hash source stamps; the fallback of a
read-only package folder, seeded from the installed entries; the one-line note on compiling;
the warm-up covers every train command of the registry on data it writes itself.
"""
from __future__ import annotations

import ast
import hashlib
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fastspectral
from fastspectral import _jit, models
from fastspectral.cli import warmup as _warmup

PKG = Path(fastspectral.__file__).parent


def _kernel_modules():
    """(path, tree) of every package module that decorates a function with njit(cache=True)."""
    out = []
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "njit" \
                    and any(k.arg == "cache" for k in node.keywords):
                out.append((path, tree))
                break
    return out


def test_every_cached_kernel_module_takes_njit_from_jit():
    mods = _kernel_modules()
    assert len(mods) >= 20
    for path, tree in mods:
        if path.name == "_jit.py":
            continue
        froms = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert any(n.module == "_jit" and n.level >= 1 and "njit" in [a.name for a in n.names]
                   for n in froms), f"{path}: import njit from fastspectral._jit"
        assert not any(n.module == "numba" and "njit" in [a.name for a in n.names]
                       for n in froms), f"{path}: njit from numba bypasses the package cache"
        assert not any(isinstance(n, ast.Attribute) and n.attr in ("njit", "jit")
                       and getattr(n.value, "id", "") == "numba" for n in ast.walk(tree)), path


def test_package_locator_is_first_and_keys_by_content():
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    assert impl._locator_classes[0] is _jit.PackageCacheLocator
    from fastspectral.hmm import hankel as hmm_model

    fn = next(v for v in vars(hmm_model).values()
              if hasattr(v, "py_func") and getattr(v, "_cache", None) is not None
              and v.py_func.__module__ == hmm_model.__name__)
    loc = fn._cache._impl.locator
    assert isinstance(loc, _jit.PackageCacheLocator)
    assert Path(loc.get_cache_path()) == Path(_jit.CACHE_DIR) / "hmm"
    digest = hashlib.sha256(Path(hmm_model.__file__).read_bytes()).hexdigest()
    assert loc.get_source_stamp() == ("sha256", digest)  # no mtime: pip does not keep them


def test_functions_outside_the_package_keep_numbas_locators(tmp_path):
    def f(x):
        return x

    assert _jit.PackageCacheLocator.from_function(f, __file__) is None
    assert _jit.PackageCacheLocator.from_function(f, str(tmp_path / "x.py")) is None


def test_read_only_package_folder_falls_back_to_a_seeded_user_cache(tmp_path, monkeypatch):
    from fastspectral.hmm import hankel as hmm_model

    fn = next(v.py_func for v in vars(hmm_model).values()
              if hasattr(v, "py_func") and v.py_func.__module__ == hmm_model.__name__)
    installed, user = tmp_path / "installed", tmp_path / "user"
    prefix = _jit._filename_prefix(fn, hmm_model.__file__)
    (installed / "hmm").mkdir(parents=True)
    (installed / "hmm" / f"{prefix}.nbi").write_bytes(b"index")
    (installed / "hmm" / f"{prefix}.1.nbc").write_bytes(b"data")
    (installed / "hmm" / "other.f-1.py311.nbi").write_bytes(b"not this one")
    monkeypatch.setattr(_jit, "CACHE_DIR", str(installed))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(user))
    writable = _jit.PackageCacheLocator.ensure_cache_path

    def ensure(self):  # the installed folder is read-only (as for a system-wide install)
        if Path(self.get_cache_path()).is_relative_to(installed):
            raise PermissionError(13, "read-only", self.get_cache_path())
        writable(self)

    monkeypatch.setattr(_jit.PackageCacheLocator, "ensure_cache_path", ensure)
    assert _jit.PackageCacheLocator.from_function(fn, hmm_model.__file__) is None
    loc = _jit.UserCacheLocator.from_function(fn, hmm_model.__file__)
    assert Path(loc.get_cache_path()) == user / "fastspectral" / "hmm"
    got = sorted(p.name for p in (user / "fastspectral" / "hmm").iterdir())
    assert got == sorted([f"{prefix}.nbi", f"{prefix}.1.nbc"])
    # an existing user entry is kept, not overwritten by the installed one
    (user / "fastspectral" / "hmm" / f"{prefix}.nbi").write_bytes(b"newer")
    _jit.UserCacheLocator.from_function(fn, hmm_model.__file__)
    assert (user / "fastspectral" / "hmm" / f"{prefix}.nbi").read_bytes() == b"newer"


def test_filename_prefix_matches_numbas_cache_file_names():
    from fastspectral.hmm import hankel as hmm_model

    disp = next(v for v in vars(hmm_model).values()
                if hasattr(v, "py_func") and v.py_func.__module__ == hmm_model.__name__)
    assert disp._cache._impl.filename_base == _jit._filename_prefix(disp.py_func,
                                                                     hmm_model.__file__)


def test_compile_note_logged_once_for_package_kernels(caplog):
    from numba.core import event

    class Disp:
        def __init__(self, module):
            self.py_func = type("F", (), {"__module__": module})

    note = _jit._CompileNote()
    with caplog.at_level(logging.INFO, logger="fastspectral"):
        note.on_start(event.Event("numba:compile", event.EventStatus.START,
                                  data={"dispatcher": Disp("numpy.other")}))
        assert "compiling" not in caplog.text
        for _ in range(3):
            note.on_start(event.Event("numba:compile", event.EventStatus.START,
                                      data={"dispatcher": Disp("fastspectral.hmm.em")}))
    assert caplog.text.count("compiling kernels (first run only)") == 1


@pytest.mark.slow
def test_cli_notes_compilation_on_stderr(tmp_path):
    """A kernel compiled by a command (here into an empty cache) is announced on stderr."""
    code = ("import sys, fastspectral._jit as j; j.CACHE_DIR = sys.argv[1]; "
            "from fastspectral.cli import main; sys.exit(main(sys.argv[2:]))")
    files = _warmup.write_data(str(tmp_path), n=40)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "nc"))
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "cache"), "train", "brown",
                        files["text"][0], "-o", str(tmp_path / "m.brown")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("compiling kernels (first run only)") == 1
    assert _jit.cache_files(str(tmp_path / "cache")), "compiled kernels cached in the given root"
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "cache"), "train", "brown",
                        files["text"][0], "-o", str(tmp_path / "m2.brown")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "compiling" not in r.stderr, "the second run loads the cache"


def test_warmup_runs_every_train_command():
    names = {name for name, _, _ in _warmup.RUNS}
    assert names == set(models.train_commands())


def test_warmup_data_is_readable_by_the_commands_readers(tmp_path):
    from fastspectral.trees.conll import read_conllu, read_malttab
    from fastspectral.trees.readers import read_treebank

    files = _warmup.write_data(str(tmp_path), n=30)
    assert len(list(read_treebank(files["trees"][0]))) == 30
    assert len(list(read_conllu(files["conllu"][0]))) == 30
    assert len(list(read_malttab(files["malttab"][0]))) == 30
    ar = list(read_conllu(files["arabic"][0]))
    assert all("\u064e" in "".join(s.words) or "\u064f" in "".join(s.words)
               or "\u0650" in "".join(s.words) for s in ar)
    lines = Path(files["text"][0]).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 30 and all("/" in tok for tok in lines[0].split())
    big = Path(files["bigtext"][0]).read_text(encoding="utf-8").split()
    assert len(set(big)) > 2000, "a vocabulary that takes the sparse Hankel paths"
    cmds = _warmup.commands(str(tmp_path), files)
    assert sum(c[0] == "train" for c in cmds) == len(_warmup.RUNS)
