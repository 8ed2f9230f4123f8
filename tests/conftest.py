"""Shared test fixtures: where the shared data lives.

The data folder ``shared/data`` lies beside the checkout (``../shared/data``); the environment
variable ``FASTSPECTRAL_DATA`` overrides it.  Tests that need it skip with a reason when absent.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# Subprocesses started by the tests (`python -m fastspectral ...`, `python -c ...`) run with the
# repository as their working directory; without this, Python would put that directory first on
# sys.path and import the *source* tree (whose compiled kernels exist only after an in-place
# build) instead of the installed package.  (Python >= 3.11; ignored by 3.10.)
os.environ.setdefault("PYTHONSAFEPATH", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("FASTSPECTRAL_SHARED", REPO.parent / "shared"))
DATA = Path(os.environ.get("FASTSPECTRAL_DATA", SHARED / "data"))
EVALB = SHARED / "evalb"


def data_path(*parts) -> Path:
    """A path under the shared data folder (it may not exist: see :func:`need`)."""
    return DATA.joinpath(*parts)


def need(path: Path) -> Path:
    """``path`` when it exists, else skip the calling test with a reason."""
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


def without_punctuation_rule(model):
    """``model`` with the lexicons' punctuation rule (issue 11) switched off, as parsers were
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
