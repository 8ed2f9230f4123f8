"""Model files written before the estimator reshaping (tests/data/legacy, see make_legacy.py
there) still load, under today's parameter names, and give the same parses and
log-likelihoods; a fresh fit with the same settings (today's names) gives them too.

Parses are compared exactly (digests of the trees); log-likelihoods within a relative
tolerance: Numba compiles for the CPU it runs on, so the last bits of a float differ between
machines (the recorded values were taken on one of them)."""
import ast
import hashlib
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import without_punctuation_rule

from fastspectral.io import load

LEGACY = Path(__file__).resolve().parent / "data" / "legacy"
EXPECTED = json.loads((LEGACY / "expected.json").read_text())


def _digest(lines):
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


# ------------------------------------------------------------------------------ PCFG
@pytest.fixture(scope="module")
def pcfg_data(synthetic_grammar):
    g = synthetic_grammar
    return g.sample(400, seed=0), [t.leaves() for t in g.sample(40, seed=5)]


def _pcfg_digest(model, words):
    return _digest([str(t) for t in without_punctuation_rule(model).parse(words, jobs=1)])


def test_legacy_pcfg(pcfg_data, tmp_path):
    from fastspectral.grammar.pcfg import PCFG

    trees, words = pcfg_data
    old = load(LEGACY / "pcfg.fsm")
    assert isinstance(old, PCFG) and old.get_params()["v"] == 2 and old.jobs == 1
    assert old.fit_time_ > 0                       # read from the old "fit_seconds" field
    assert _pcfg_digest(old, words) == EXPECTED["pcfg"]
    old.save(tmp_path / "again.fsm")               # written again in today's layout
    assert _pcfg_digest(PCFG.load(tmp_path / "again.fsm"), words) == EXPECTED["pcfg"]
    fresh = PCFG(v=2, h=1, jobs=1).fit(trees)
    assert _pcfg_digest(fresh, words) == EXPECTED["pcfg"]


# ------------------------------------------------------------------------------ SHAG
@pytest.fixture(scope="module")
def dep(shared_data):
    from fastspectral.trees.conll import read_malttab

    return list(itertools.islice(read_malttab(shared_data / "dep" / "wsj-sample.dp"), 300))


def _shag_digest(model, sents):
    return _digest([" ".join(map(str, s.heads)) for s in model.parse(sents, jobs=1)])


def test_legacy_shag(dep, tmp_path):
    from fastspectral.dependency.model import SHAGParser

    old = load(LEGACY / "shag.fsm")
    assert isinstance(old, SHAGParser)
    # the old positional meta fields, under today's names
    assert (old.method, old.n_states, old.random_state, old.backoff_weight, old.iterations,
            old.basis, old.ridge, old.tag_column) == ("spectral", 4, 0, 0.3, 25, 2, 1.0, "auto")
    assert old.tag_column_ == "xpos" and old.single_root_ is True
    assert old.fit_info_.n_sentences == 250 and old.fit_time_ > 0
    assert _shag_digest(old, dep[250:]) == EXPECTED["shag"]
    old.save(tmp_path / "again.fsm")
    again = SHAGParser.load(tmp_path / "again.fsm")
    assert again.get_params() == old.get_params()
    assert _shag_digest(again, dep[250:]) == EXPECTED["shag"]
    fresh = SHAGParser(n_states=4).fit(dep[:250])
    assert _shag_digest(fresh, dep[250:]) == EXPECTED["shag"]


def test_old_shag_meta_defaults(tmp_path):
    """Files older still lacked basis / smoothing / tagset / ridge: their models had basis 1,
    no back-off, the xpos column and no ridge."""
    from fastspectral.dependency.model import SHAGParser
    from fastspectral.io.modelfile import load_model_file, save_model_file

    _, meta, arrays = load_model_file(LEGACY / "shag.fsm")
    for key in ("basis", "smoothing", "tagset", "tagset_", "ridge"):
        del meta[key]
    save_model_file(tmp_path / "older.fsm", "shag", meta, arrays)
    m = SHAGParser.load(tmp_path / "older.fsm")
    assert (m.basis, m.backoff_weight, m.tag_column, m.ridge, m.tag_column_) == \
        (1, 0.0, "xpos", 0.0, "xpos")


# ------------------------------------------------------------------------------ LMs
def _same_log_likelihood(got, recorded: str, rtol: float = 1e-9):
    """``got`` (log-likelihood, number of tokens) equals the recorded repr: the count exactly,
    the log-likelihood to ``rtol`` (machine-dependent last bits)."""
    want_ll, want_n = ast.literal_eval(recorded)
    ll, n = got
    assert n == want_n
    np.testing.assert_allclose(ll, want_ll, rtol=rtol, atol=0)


@pytest.fixture(scope="module")
def brown(shared_data):
    from fastspectral.trees.corpus import read_corpus

    path = str(shared_data / "brown" / "brown-tagged.txt")
    return (read_corpus(path, max_tokens=20000),
            read_corpus(path, skip_tokens=20000, max_tokens=5000))


def test_legacy_latent_lm(brown, tmp_path):
    from fastspectral.lm import LatentBigramLM

    train, test = brown
    old = load(LEGACY / "lm.fsm")
    assert isinstance(old, LatentBigramLM)
    assert (old.method, old.n_states, old.iterations, old.iterations_) == ("pivot-em", 4, 2, 2)
    _same_log_likelihood(old.log_likelihood(test), EXPECTED["lm"])
    old.save(tmp_path / "again.fsm")
    again = LatentBigramLM.load(tmp_path / "again.fsm")
    assert again.log_likelihood(test) == old.log_likelihood(test)   # same process: bit-identical
    fresh = LatentBigramLM(n_states=4, method="pivot-em", iterations=2).fit(train)
    _same_log_likelihood(fresh.log_likelihood(test), EXPECTED["lm"], rtol=1e-7)


def test_legacy_kneser_ney(brown, tmp_path):
    from fastspectral.lm import KneserNeyBigramLM

    train, test = brown
    old = load(LEGACY / "kn.fsm")
    assert isinstance(old, KneserNeyBigramLM)
    assert old.get_params() == {"min_count": 2, "lowercase": True, "discount": "modified"}
    _same_log_likelihood(old.log_likelihood(test), EXPECTED["kn"])
    old.save(tmp_path / "again.fsm")
    again = KneserNeyBigramLM.load(tmp_path / "again.fsm")
    assert again.log_likelihood(test) == old.log_likelihood(test)   # same process: bit-identical
    _same_log_likelihood(KneserNeyBigramLM().fit(train).log_likelihood(test), EXPECTED["kn"])
