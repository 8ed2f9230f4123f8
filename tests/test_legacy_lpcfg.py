"""Model files of the L-PCFG learners written before the estimator reshaping still
load and parse exactly as they did, and a fresh fit with the same settings gives the same parses.

``tests/data/legacy/{spectral,pivot,em}.fsm`` and the sha256 digests of their parses in
``expected.json`` were written by ``tests/data/legacy/make_legacy.py`` (40 sentences of
``LatentPCFG.default(n_states=2, seed=0).sample(40, seed=5)``, parsed with ``jobs=1``; the digest
is over ``"\\n".join(str(tree))``).  Their parameters carry the old names (``seed``,
``smoothing``, ``svd_iter``, ``em_iterations`` ...), mapped through ``_renamed_params``.
"""
import hashlib
import json
from pathlib import Path

import pytest
from conftest import without_punctuation_rule

from fastspectral.io import load
from fastspectral.lpcfg import EMLPCFG, PivotLPCFG, SpectralLPCFG

LEGACY = Path(__file__).resolve().parent / "data" / "legacy"
EXPECTED = json.loads((LEGACY / "expected.json").read_text())


def _digest(trees) -> str:
    return hashlib.sha256("\n".join(str(t) for t in trees).encode()).hexdigest()


@pytest.fixture(scope="module")
def data(synthetic_grammar):
    g = synthetic_grammar
    return g.sample(400, seed=0), [t.leaves() for t in g.sample(40, seed=5)]


CASES = {
    # moment_backoff="rule": the estimate of the versions that wrote these files
    "spectral": (SpectralLPCFG, lambda: SpectralLPCFG(n_states=4, moment_backoff="rule", jobs=1),
                 {"moment_smoothing": 30.0, "random_state": 0, "svd_iterations": 3,
                  "svd_oversamples": 10}),
    "pivot": (PivotLPCFG, lambda: PivotLPCFG(n_states=4, jobs=1),
              {"parent_smoothing": 0.0, "random_state": 0, "mixture_iterations": 30,
               "mixture_tol": 1e-5}),
    "em": (EMLPCFG, lambda: EMLPCFG(n_states=4, iterations=3, jobs=1),
           {"parent_smoothing": 0.1, "random_state": 0, "iterations": 3}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_legacy_file_loads_and_parses_the_same(name, data):
    cls, _, renamed = CASES[name]
    _, words = data
    model = load(LEGACY / f"{name}.fsm")
    assert type(model) is cls and model.kind == cls.kind
    for key, value in renamed.items():          # old parameter names mapped to the new ones
        assert getattr(model, key) == value, key
    assert model.fit_time_ > 0
    assert _digest(without_punctuation_rule(model).parse(words, jobs=1)) == EXPECTED[name]
    # the class's own loader gives the same model
    assert _digest(without_punctuation_rule(cls.load(LEGACY / f"{name}.fsm")).parse(words, jobs=1)) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_fresh_fit_parses_as_before(name, data, tmp_path):
    _, make, _ = CASES[name]
    trees, words = data
    model = make().fit(trees)
    assert _digest(without_punctuation_rule(model).parse(words, jobs=1)) == EXPECTED[name]
    # and a model file written today reads back to the same parses
    model.save(tmp_path / "m.fsm")
    assert _digest(without_punctuation_rule(load(tmp_path / "m.fsm")).parse(words, jobs=1)) == EXPECTED[name]
