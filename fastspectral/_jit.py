"""Numba for the package's kernels: ``njit`` / ``prange``, and where their cache lives.

Every module with ``@njit(cache=True)`` kernels imports them from here
(``from .._jit import njit, prange``); importing this module puts :class:`PackageCacheLocator`
first among Numba's cache locators, so that the compiled kernels of the package are kept in
``fastspectral/_jitcache/<subpackage>/`` inside the installed package:

* ``pip install .`` compiles them once at build time (``setup.py``'s ``build`` runs
  :mod:`fastspectral.cli.warmup` in the build tree) and installs the cache files with the package,
  so a new user's first command loads them instead of compiling for a minute;
* the source stamp of an entry is the SHA-256 of the source file's contents, not its mtime
  (pip does not keep mtimes), so installed entries are fresh exactly when the installed source
  is the source they were compiled from;
* Numba keys each entry by its signature, the CPU name and features, the Numba version and the
  function's bytecode: a cache built on another machine or for another Numba simply misses and
  the kernel is compiled (and cached) as before;
* when the package folder is not writable (a system-wide install), the cache is
  ``$NUMBA_CACHE_DIR/fastspectral`` or else a per-user folder (``~/.cache/fastspectral/jit``),
  seeded on first use from the entries installed with the package.

Functions outside the package keep Numba's own locators.  The first kernel compiled in a
process logs ``compiling kernels (first run only) ...`` at INFO on the ``fastspectral`` logger
(the command line shows it on stderr; a library user sees it only with logging configured).
"""
from __future__ import annotations

import functools
import glob
import hashlib
import logging
import os
import shutil
import sys

from numba import njit, prange  # noqa: F401  (re-exported: the package's kernels use these)
from numba.core import caching, event

__all__ = ["njit", "prange", "PackageCacheLocator", "UserCacheLocator", "CACHE_DIR",
           "cache_files"]

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
#: where the package's compiled kernels are cached when the package folder is writable
CACHE_DIR = os.path.join(PACKAGE_DIR, "_jitcache")

logger = logging.getLogger("fastspectral")


@functools.lru_cache(maxsize=None)
def _source_hash(path: str, mtime: float, size: int) -> str:
    # mtime and size only key the memo (a file edited while running is hashed again)
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _inside_package(py_file: str) -> bool:
    path = os.path.abspath(py_file)
    return path.startswith(PACKAGE_DIR + os.sep) and os.path.isfile(path)


def _filename_prefix(py_func, py_file: str) -> str:
    """The start of Numba's cache file names of ``py_func`` (``CacheImpl.get_filename_base``)."""
    modname = os.path.splitext(os.path.basename(py_file))[0]
    qualname = getattr(py_func, "__qualname__", py_func.__name__).replace("<", "").replace(">", "")
    return "%s.%s-%d.py%d%d%s" % (modname, qualname, py_func.__code__.co_firstlineno,
                                  sys.version_info[0], sys.version_info[1],
                                  getattr(sys, "abiflags", ""))


class PackageCacheLocator(caching._CacheLocator):
    """Numba cache locator of the package's functions: ``<root>/<subpackage>/``, where the root
    is :data:`CACHE_DIR`; source stamp = SHA-256 of the source file."""

    def __init__(self, py_func, py_file):
        self._py_file = os.path.abspath(py_file)
        self._lineno = py_func.__code__.co_firstlineno
        rel = os.path.relpath(os.path.dirname(self._py_file), PACKAGE_DIR)
        self._cache_path = os.path.normpath(os.path.join(self.root(), rel))

    @classmethod
    def root(cls) -> str:
        return CACHE_DIR

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        st = os.stat(self._py_file)
        return ("sha256", _source_hash(self._py_file, st.st_mtime, st.st_size))

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not _inside_package(py_file):
            return None
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:  # read-only install: the next locator
            return None
        return self


def _user_root() -> str:
    env = os.environ.get("NUMBA_CACHE_DIR")
    if env:
        return os.path.join(env, "fastspectral")
    from numba.misc.appdirs import AppDirs

    return os.path.join(AppDirs(appname="fastspectral", appauthor=False).user_cache_dir, "jit")


class UserCacheLocator(PackageCacheLocator):
    """The fallback of a read-only package folder: ``$NUMBA_CACHE_DIR/fastspectral`` or a
    per-user folder, whose entries of a function are first copied from the package's own."""

    @classmethod
    def root(cls) -> str:
        return _user_root()

    @classmethod
    def from_function(cls, py_func, py_file):
        self = super().from_function(py_func, py_file)
        if self is not None:
            self._seed(_filename_prefix(py_func, py_file))
        return self

    def _seed(self, prefix: str) -> None:
        rel = os.path.relpath(self._cache_path, self.root())
        src = os.path.join(CACHE_DIR, rel)
        if os.path.exists(os.path.join(self._cache_path, prefix + ".nbi")):
            return
        if not os.path.exists(os.path.join(src, prefix + ".nbi")):
            return
        try:
            for f in glob.glob(os.path.join(glob.escape(src), glob.escape(prefix) + ".*")):
                shutil.copyfile(f, os.path.join(self._cache_path, os.path.basename(f)))
        except OSError:
            pass  # a cold cache: the function is compiled


def cache_files(root: str = CACHE_DIR) -> list[str]:
    """The cache files (index ``.nbi`` and data ``.nbc``) under ``root``."""
    return sorted(glob.glob(os.path.join(glob.escape(root), "**", "*.nb[ic]"), recursive=True))


class _CompileNote(event.Listener):
    """Logs one line when the first kernel of the package is compiled in this process."""

    def __init__(self):
        self.done = False

    def on_start(self, ev):
        if self.done:
            return
        dispatcher = (ev.data or {}).get("dispatcher")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        if module.startswith("fastspectral."):
            self.done = True
            logger.info("compiling kernels (first run only) ...")

    def on_end(self, ev):
        pass


def _install() -> None:
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # renamed in Numba 0.6x
    classes = impl._locator_classes
    for cls in (UserCacheLocator, PackageCacheLocator):  # the package's own folder first
        if cls not in classes:
            classes.insert(0, cls)
    event.register("numba:compile", _NOTE)


_NOTE = _CompileNote()
_install()
