"""Model files written before the estimator reshaping (tests/data/legacy, see make_legacy.py
there) still load, under today's parameter names, and give the same parses and
log-likelihoods; a fresh fit with the same settings (today's names) gives them too.  The
re-ranker's file (make_legacy_rerank.py) was written before its sub-models became nested
estimators: it loads with them.

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


def _heads_digest(model, sents):
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
    assert _heads_digest(old, dep[250:]) == EXPECTED["shag"]
    old.save(tmp_path / "again.fsm")
    again = SHAGParser.load(tmp_path / "again.fsm")
    assert again.get_params() == old.get_params()
    assert _heads_digest(again, dep[250:]) == EXPECTED["shag"]
    fresh = SHAGParser(n_states=4).fit(dep[:250])
    assert _heads_digest(fresh, dep[250:]) == EXPECTED["shag"]


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


# ------------------------------------------------------------------------------ re-ranker
def _rerank_data():
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.synthetic import LatentPCFG
    from fastspectral.trees.transforms import clean

    trees = LatentPCFG.default(n_states=2, seed=0).sample(300, seed=3)
    deps = list(trees_to_dep_sentences(clean(t) for t in trees))
    return deps[:24], deps[250:262]


def test_legacy_reranker_loads_with_nested_estimators(tmp_path):
    """The flat base-parser settings and the ``spectral_params`` dict (with the latent
    dependency model's older name ``tags``) of the file become ``mst`` and ``spectral``;
    the parses are the recorded ones, written again and from a fresh fit of the nested
    form."""
    from fastspectral.latentdep import LatentDependencyModel
    from fastspectral.rerank import MSTParser, RerankDepParser

    expected = json.loads((LEGACY / "expected_rerank.json").read_text())["rerank"]
    train, test = _rerank_data()
    old = load(LEGACY / "rerank.fsm")
    assert isinstance(old, RerankDepParser)
    params = old.get_params()
    assert (params["mst__iterations"], params["mst__minibatch"], params["mst__bits"],
            params["mst__tag_column"], params["mst__random_state"], params["mst__jobs"]) == \
        (1, 4, 16, "xpos", 1, 1)
    assert (params["spectral__n_states"], params["spectral__tag_column"],
            params["spectral__ridge"]) == (3, "xpos", 0.5)
    assert params["shag"] is None and (old.k, old.folds, old.random_state) == (3, 2, 1)
    assert _heads_digest(old, test) == expected
    old.save(tmp_path / "again.fsm")
    again = RerankDepParser.load(tmp_path / "again.fsm")
    assert repr(again.get_params()) == repr(old.get_params())
    assert _heads_digest(again, test) == expected
    fresh = RerankDepParser(
        k=3, features="base+spectral", folds=2, rerank_bits=16, random_state=1, jobs=1,
        mst=MSTParser(iterations=1, minibatch=4, bits=16, tag_column="xpos", random_state=1,
                      jobs=1),
        spectral=LatentDependencyModel(n_states=3, tag_column="xpos", ridge=0.5)).fit(train)
    assert _heads_digest(fresh, test) == expected


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
