"""The re-ranker's sub-models as nested estimators (``RerankDepParser(mst=..., spectral=...,
shag=...)``): ``get_params(deep=True)`` / ``set_params`` / ``clone`` reach them, ``fit``
validates and trains clones of them, model files keep them; the keywords of older versions
(the base parser's flat settings, ``spectral_params``, ``shag_params``) map onto them with a
DeprecationWarning and give the same model."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from fastspectral.base import clone
from fastspectral.dependency import SHAGParser
from fastspectral.io.modelfile import load_model_file, save_model_file
from fastspectral.latentdep import LatentDependencyModel
from fastspectral.rerank import MSTParser, RerankDepParser
from fastspectral.rerank.providers import SPECTRAL_DEFAULTS, default_spectral
from fastspectral.rerank.shag_scores import SHAG_DEFAULTS


@pytest.fixture(scope="module")
def deps():
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.synthetic import LatentPCFG
    from fastspectral.trees.transforms import clean

    trees = LatentPCFG.default(n_states=2, seed=0).sample(80, seed=3)
    out = list(trees_to_dep_sentences(clean(t) for t in trees))
    return out[:60], out[60:]


def _nested():
    return RerankDepParser(k=3, features="base+spectral+shag", folds=2, rerank_bits=16,
                           mst=MSTParser(iterations=1, bits=16),
                           spectral=LatentDependencyModel(n_states=2, embeddings="one-hot"),
                           shag=SHAGParser(n_states=2))


def _heads(model, sents):
    return [list(s.heads) for s in model.parse(sents, jobs=1)]


def test_get_params_deep_set_params_and_clone():
    sklearn_base = pytest.importorskip("sklearn.base")
    m = _nested()
    deep = m.get_params(deep=True)
    assert deep["mst__iterations"] == 1 and deep["mst__bits"] == 16
    assert deep["mst__order"] == 1
    assert deep["spectral__n_states"] == 2 and deep["spectral__embeddings"] == "one-hot"
    assert deep["shag__n_states"] == 2 and deep["shag__method"] == "spectral"
    shallow = m.get_params(deep=False)
    assert not any("__" in k for k in shallow) and shallow["mst"] is m.mst
    for old in ("iterations", "minibatch", "bits", "tag_column", "spectral_params",
                "shag_params"):
        assert old not in shallow
    assert m.set_params(spectral__n_states=8, mst__bits=18, k=4) is m
    assert (m.spectral.n_states, m.mst.bits, m.k) == (8, 18, 4)
    for other in (clone(m), sklearn_base.clone(m)):
        assert repr(other.get_params()) == repr(m.get_params())
        assert other.mst is not m.mst and other.spectral is not m.spectral
        assert other.shag is not m.shag
        other.set_params(mst__bits=20)
        assert m.mst.bits == 18
    with pytest.raises(ValueError, match="invalid parameter"):
        m.set_params(mst2__bits=18)
    # the defaults: no nested estimator, so no nested parameters to set
    plain = RerankDepParser()
    assert (plain.mst, plain.spectral, plain.shag) == (None, None, None)
    assert not any("__" in k for k in plain.get_params(deep=True))


def test_default_sub_models():
    m = RerankDepParser(random_state=4, jobs=2)
    mst = m._new_mst()
    assert mst.get_params() == MSTParser(random_state=4, jobs=2).get_params()
    assert m._new_mst2().get_params() == {**mst.get_params(), "order": 2}
    assert m._new_spectral().n_states == SPECTRAL_DEFAULTS["n_states"] == 16
    pos = RerankDepParser(spectral_input="pos")._new_spectral()
    assert (pos.n_states, pos.embeddings) == (8, "one-hot")
    assert default_spectral("pos").get_params() == pos.get_params()
    shag = m._new_shag()
    assert {k: shag.get_params()[k] for k in SHAG_DEFAULTS} == SHAG_DEFAULTS
    # a given sub-model is cloned: the second-order model takes the base parser's settings
    m = RerankDepParser(mst=MSTParser(iterations=3, bits=17, single_root=True))
    two = m._new_mst2()
    assert two is not m.mst and (two.order, two.iterations, two.bits, two.single_root) == \
        (2, 3, 17, True)
    assert m.mst.order == 1


def test_fit_trains_clones_and_save_load_keeps_the_nested_estimators(deps, tmp_path):
    train, test = deps
    m = _nested()
    given = m.mst, m.spectral, m.shag
    m.fit(train)
    assert (m.mst, m.spectral, m.shag) == given
    assert not any(k.endswith("_") for sub in given for k in vars(sub)), "given ones unfitted"
    assert m.mst_ is not m.mst and m.mst_.iterations == 1 and m.mst_.bits == 16
    assert m.spectral_.n_states == 2 and m.shag_.n_states == 2
    out = _heads(m, test)
    m.save(tmp_path / "m.fsm")
    _, meta, _ = load_model_file(tmp_path / "m.fsm")
    p = meta["params"]
    assert p["mst"] == {"kind": "mst", "params": m.mst.get_params(deep=False)}
    assert p["spectral"]["kind"] == "latent-dep" and p["spectral"]["params"]["n_states"] == 2
    assert p["shag"]["kind"] == "shag" and p["shag"]["params"]["n_states"] == 2
    q = RerankDepParser.load(tmp_path / "m.fsm")
    assert repr(q.get_params()) == repr(m.get_params())
    assert isinstance(q.mst, MSTParser) and isinstance(q.spectral, LatentDependencyModel)
    assert _heads(q, test) == out
    # a damaged entry is a ModelFileError naming params
    from fastspectral.errors import ModelFileError

    _, meta, arrays = load_model_file(tmp_path / "m.fsm")
    meta["params"]["mst"] = {"kind": "shag", "params": {}}
    save_model_file(tmp_path / "bad.fsm", "rerank-dep", meta, arrays)
    with pytest.raises(ModelFileError, match="params.*mst"):
        RerankDepParser.load(tmp_path / "bad.fsm")


def test_fit_validates_the_nested_estimators(deps):
    train, _ = deps
    cases = [
        (dict(mst=MSTParser(order=2), base_order=2), ValueError, "first-order"),
        (dict(mst=MSTParser(bits=40)), ValueError, "mst__bits"),
        (dict(mst="mst"), TypeError, "mst must be an MSTParser"),
        (dict(features="base+spectral", spectral=MSTParser()), TypeError, "spectral must be"),
        (dict(features="base+spectral",
              spectral=LatentDependencyModel(stop_adjacency=True)), ValueError,
         "spectral: stop_adjacency"),
        (dict(shag=MSTParser()), TypeError, "shag must be a SHAGParser"),
        (dict(features="base+shag", shag=SHAGParser(n_states=0)), ValueError,
         "shag__n_states"),
        (dict(random_state=-1), ValueError, "random_state"),
        (dict(jobs=0), ValueError, "jobs"),
    ]
    for kw, exc, match in cases:
        m = RerankDepParser(k=3, folds=2, **kw)        # stored as given: checked in fit
        with pytest.raises(exc, match=match):
            m.fit(train)
    # a sub-model the features do not use is not validated
    RerankDepParser(k=3, folds=2, features="base", rerank_bits=16,
                    mst=MSTParser(iterations=1, bits=16),
                    shag=SHAGParser(n_states=0))._validate_params()


def _old_and_new():
    """Pairs of (keywords of older versions, today's nested form) configuring one model."""
    return [
        (dict(features="base", iterations=1, minibatch=4, bits=16, tag_column="xpos",
              random_state=3, jobs=1),
         dict(features="base", random_state=3, jobs=1,
              mst=MSTParser(iterations=1, minibatch=4, bits=16, tag_column="xpos",
                            random_state=3, jobs=1))),
        (dict(features="base+spectral", spectral_input="pos", bits=16,
              spectral_params={"n_states": 2}),
         dict(features="base+spectral", spectral_input="pos", mst=MSTParser(bits=16),
              spectral=LatentDependencyModel(n_states=2, embeddings="one-hot"))),
        (dict(features="base+shag", bits=16, iterations=1, shag_params={"n_states": 2}),
         dict(features="base+shag", mst=MSTParser(bits=16, iterations=1),
              shag=SHAGParser(**{**SHAG_DEFAULTS, "n_states": 2}))),
    ]


def test_old_keywords_warn_and_map_onto_the_nested_estimators(deps):
    train, test = deps
    for old, new in _old_and_new():
        with pytest.warns(DeprecationWarning, match=r"deprecated.*use (mst|spectral|shag)="):
            a = RerankDepParser(k=3, folds=2, rerank_bits=16, **old)
        b = RerankDepParser(k=3, folds=2, rerank_bits=16, **new)
        assert repr(a.get_params()) == repr(b.get_params())
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)   # clone: today's form only
            clone(a)
        a.fit(train)
        b.fit(train)
        np.testing.assert_array_equal(a.weights_, b.weights_)
        np.testing.assert_array_equal(a.dense_weights_, b.dense_weights_)
        np.testing.assert_array_equal(a.mst_.weights_, b.mst_.weights_)
        assert _heads(a, test) == _heads(b, test)


def test_old_keywords_messages():
    with pytest.warns(DeprecationWarning) as rec:
        RerankDepParser(iterations=2, bits=16, spectral_params={"n_states": 4},
                        shag_params={"n_states": 3})
    msg = str(rec[0].message)
    assert rec[0].filename == __file__, "the warning points at the caller"
    assert "mst=MSTParser(iterations=..., bits=...)" in msg
    assert "spectral=LatentDependencyModel(...)" in msg and "shag=SHAGParser(...)" in msg
    with pytest.raises(TypeError, match="give mst= or bits=, not both"):
        RerankDepParser(bits=16, mst=MSTParser())
    with pytest.raises(TypeError, match="give spectral= or spectral_params="):
        RerankDepParser(spectral_params={"n_states": 2}, spectral=LatentDependencyModel())
    with pytest.raises(TypeError, match="spectral_params must be a dict"):
        RerankDepParser(spectral_params=[("n_states", 2)])
    with pytest.raises(TypeError, match="unexpected keyword"):
        RerankDepParser(epochs=3)
    m = RerankDepParser()
    with pytest.raises(ValueError, match=r"'bits' is no longer.*mst__bits"):
        m.set_params(bits=18)
    with pytest.raises(ValueError, match=r"'shag_params' is no longer.*shag=SHAGParser"):
        m.set_params(shag_params={})


def test_old_layout_of_a_model_file_loads(deps, tmp_path):
    """A file whose params are in the layout of older versions (the base parser's settings
    flat, spectral_params / shag_params dicts) loads with the nested estimators and parses
    the same."""
    train, test = deps
    m = RerankDepParser(k=3, folds=2, rerank_bits=16, features="base+spectral+shag",
                        spectral_input="pos", random_state=2, jobs=1,
                        mst=MSTParser(iterations=1, bits=16, tag_column="xpos",
                                      random_state=2, jobs=1),
                        spectral=LatentDependencyModel(n_states=2, embeddings="one-hot",
                                                       ridge=0.5),
                        shag=SHAGParser(**{**SHAG_DEFAULTS, "n_states": 2})).fit(train)
    m.save(tmp_path / "new.fsm")
    kind, meta, arrays = load_model_file(tmp_path / "new.fsm")
    params = {k: v for k, v in meta["params"].items() if k not in ("mst", "spectral", "shag")}
    params.update(epochs=1, bits=16, minibatch=8, tagset="xpos",
                  spectral_params={"n_states": 2, "ridge": 0.5},
                  shag_params={"n_states": 2})
    save_model_file(tmp_path / "old.fsm", kind, {**meta, "params": params}, arrays)
    old = RerankDepParser.load(tmp_path / "old.fsm")
    assert repr(old.get_params()) == repr(m.get_params())
    assert _heads(old, test) == _heads(m, test)
