"""The k-best re-ranker (Dhillon et al. 2012, section 4): baseline tree features, jack-knifed
lists, a log p-hat feature (any model with ``log_prob(sentences, heads=)``), model files, the
command line (``train rerank-dep``, ``parse --no-rerank``)."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral import cli
from fastspectral.base import Estimator
from fastspectral.errors import ModelFileError
from fastspectral.rerank import RerankDepParser
from fastspectral.rerank import model as rmodel
from fastspectral.rerank.reranker import tree_features
from fastspectral.trees.conll import read_conllu


@pytest.fixture(scope="module")
def synthetic():
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.synthetic import LatentPCFG
    from fastspectral.trees.transforms import clean

    g = LatentPCFG.default(n_states=2, seed=0)
    return list(trees_to_dep_sentences(clean(t) for t in g.sample(360, seed=7)))


class GoldOracle(Estimator):
    """A stand-in for the spectral model: log p-hat = -(wrong heads against the sentence's own
    heads); 'not finite' for every third tree of a list's wrong ones."""

    kind = "gold-oracle"
    input_kind = "dependency"

    def __init__(self, penalty: float = 5.0):
        self.penalty = penalty

    def fit(self, sents):
        self.n_ = len(list(sents))
        return self

    def log_prob(self, sentences, heads=None):
        out = np.empty(len(sentences))
        for i, (s, h) in enumerate(zip(sentences, heads)):
            wrong = int((np.asarray(h) != np.asarray(s.heads)).sum())
            out[i] = -self.penalty * wrong if wrong % 3 != 2 else -np.inf
        return out

    def _model_file(self):
        return {"n": self.n_, "penalty": self.penalty}, {}

    @classmethod
    def _from_model_file(cls, meta, arrays):
        m = cls(meta["penalty"])
        m.n_ = meta["n"]
        return m


def test_tree_features_are_the_papers_templates():
    P = [1, 10, 11, 12, 13]                      # root + four tags
    a = tree_features(P, [2, 0, 2, 3])           # 2 heads 1 and 3; 3 heads 4
    b = tree_features(P, [2, 0, 2, 2])           # 2 heads 1, 3, 4
    assert len(a) == 3 + 4       # (NONE, root, 2), (1, 2, 3), (NONE, 3, 4); 4 grandparent
    assert len(b) == 3 + 4       # (NONE, root, 2), (1, 2, 3), (1, 2, 4); 4 grandparent
    assert set(a) != set(b)
    np.testing.assert_array_equal(a, tree_features(P, [2, 0, 2, 3]))


def test_rerank_off_is_the_base_parser_and_save_load(synthetic, tmp_path):
    m = RerankDepParser(k=10, features="base", epochs=3, bits=18, rerank_bits=16,
                        jobs=2).fit(synthetic[:300])
    test = synthetic[300:]
    base = [s.heads for s in m.mst_.parse(test)]
    m.rerank = False
    assert [s.heads for s in m.parse(test)] == base
    m.rerank = True
    out = [s.heads for s in m.parse(test)]
    info = m.fit_info_
    assert set(info.seconds) >= {"jackknife", "rerank", "mst"} and len(info.mistakes) == 5
    assert info.oracle_uas > 0
    m.save(tmp_path / "r.fsm")
    q = RerankDepParser.load(tmp_path / "r.fsm")
    assert [s.heads for s in q.parse(test)] == out
    meta, arrays = m._model_file()
    with pytest.raises(ModelFileError, match="dense_scale"):
        RerankDepParser._from_model_file(meta, dict(arrays, dense_scale=-arrays["dense_scale"]))


def test_log_p_hat_feature_is_learnt(synthetic, monkeypatch, tmp_path):
    """With a log p-hat that tells the gold tree, the re-ranker must approach the lists'
    oracle: the dense feature reaches the perceptron, the lists and the model file."""
    from fastspectral.eval.attachment import attachment_scores

    monkeypatch.setattr(rmodel, "_spectral_class", lambda: GoldOracle)
    train, test = synthetic[:300], synthetic[300:]
    kw = dict(k=20, epochs=2, bits=18, rerank_bits=16, jobs=2)
    base = RerankDepParser(features="base", **kw).fit(train)
    spec = RerankDepParser(features="base+spectral", **kw).fit(train)
    assert isinstance(spec.spectral_, GoldOracle) and spec.dense_weights_.shape == (3,)
    assert spec.dense_weights_[1] > 0
    u_base = attachment_scores(test, base.parse(test)).uas
    u_spec = attachment_scores(test, spec.parse(test)).uas
    assert u_spec > u_base + 2, (u_base, u_spec)
    spec.save(tmp_path / "s.fsm")
    again = RerankDepParser.load(tmp_path / "s.fsm")
    assert [s.heads for s in again.parse(test)] == [s.heads for s in spec.parse(test)]


def test_bad_parameters(synthetic):
    with pytest.raises(ValueError, match="features"):
        RerankDepParser(features="nope").fit(synthetic[:20])
    with pytest.raises(ValueError, match="folds"):
        RerankDepParser(folds=1).fit(synthetic[:20])
    with pytest.raises(ValueError, match="dense_gain"):
        RerankDepParser(dense_gain=0).fit(synthetic[:20])
    with pytest.raises(ValueError, match="sentences"):
        RerankDepParser(features="base").fit(synthetic[:2])


def _write_conllu(path, sents, heads=True):
    lines = []
    for s in sents:
        for i, (w, t) in enumerate(zip(s.words, s.tags)):
            h = str(s.heads[i]) if heads else "_"
            lines.append(f"{i + 1}\t{w}\t_\t{t}\t{t}\t_\t{h}\t_\t_\t_")
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_cli_train_rerank_dep_and_parse_no_rerank(synthetic, tmp_path):
    train, inp, model = tmp_path / "t.conllu", tmp_path / "in.conllu", tmp_path / "m.rr"
    _write_conllu(train, synthetic[:200])
    _write_conllu(inp, synthetic[300:], heads=False)
    assert cli.main(["train", "rerank-dep", str(train), "-o", str(model), "--features", "base",
                     "--k", "10", "--epochs", "2", "--bits", "18", "--rerank-bits", "16",
                     "-q"]) == 0
    m = RerankDepParser.load(model)
    outs = {}
    for flag in ([], ["--no-rerank"]):
        out = tmp_path / f"out{len(flag)}.conllu"
        assert cli.main(["parse", str(model), str(inp), "-o", str(out), "-q"] + flag) == 0
        outs[len(flag)] = [s.heads for s in read_conllu(out)]
    sents = list(read_conllu(inp, heads_optional=True))
    assert outs[1] == [list(map(int, h)) for h in m.mst_.predict_heads(sents)]
    assert outs[0] == [s.heads for s in m.parse(sents)]


def test_cli_embeddings_need_spectral_features(synthetic, tmp_path, capsys):
    train = tmp_path / "t.conllu"
    _write_conllu(train, synthetic[:30])
    emb = tmp_path / "e.txt"
    emb.write_text("x\n")
    rc = cli.main(["train", "rerank-dep", str(train), "-o", str(tmp_path / "m"), "--features",
                   "base", "--embeddings", str(emb), "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "--embeddings needs --features base+spectral" in err
