"""The k-best re-ranker (Dhillon et al. 2012, section 4): baseline tree features, jack-knifed
lists, a log p-hat feature (any model with ``log_prob(sentences, heads=)``), model files, the
command line (``train rerank-dep``, ``parse --no-rerank``)."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral import cli
from fastspectral.base import Estimator
from fastspectral.errors import ModelFileError
from fastspectral.rerank import MSTParser, RerankDepParser
from fastspectral.rerank import model as rmodel
from fastspectral.rerank import providers
from fastspectral.rerank.reranker import tree_features
from fastspectral.trees.conll import read_conllu

from _conll_files import write_conllu


@pytest.fixture(scope="module")
def synthetic(synthetic_grammar):
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.trees.transforms import clean

    g = synthetic_grammar
    return list(trees_to_dep_sentences(clean(t) for t in g.sample(360, seed=7)))


class GoldOracle(Estimator):
    """A stand-in for the spectral model: log p-hat = -(wrong heads against the sentence's own
    heads); 'not finite' (sign 0) for every third tree of a list's wrong ones, a negative
    sign for those with 4 wrong heads."""

    kind = "gold-oracle"
    input_kind = "dependency"

    def __init__(self, penalty: float = 5.0):
        self.penalty = penalty

    def fit(self, sents):
        self.n_ = len(list(sents))
        return self

    def log_prob(self, sentences, heads=None, *, return_sign=False, jobs=None):
        out = np.empty(len(sentences))
        sign = np.ones(len(sentences))
        for i, (s, h) in enumerate(zip(sentences, heads)):
            wrong = int((np.asarray(h) != np.asarray(s.heads)).sum())
            out[i] = -self.penalty * wrong if wrong % 3 != 2 else -np.inf
            sign[i] = 0.0 if wrong % 3 == 2 else (-1.0 if wrong == 4 else 1.0)
        return (out, sign) if return_sign else out

    def fragment_log_prob(self, sentences, heads=None, *, jobs=None):
        """Uninformative fragment scores: the re-ranker must cope with a useless column."""
        return np.zeros(len(sentences)), np.zeros(len(sentences))

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
    m = RerankDepParser(k=10, features="base", rerank_bits=16, jobs=2,
                        mst=MSTParser(iterations=3, bits=18, jobs=2)).fit(synthetic[:300])
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

    monkeypatch.setattr(providers, "_spectral_class", lambda: GoldOracle)
    train, test = synthetic[:300], synthetic[300:]
    kw = dict(k=20, rerank_bits=16, jobs=2, mst=MSTParser(iterations=2, bits=18, jobs=2))
    base = RerankDepParser(features="base", **kw).fit(train)
    spec = RerankDepParser(features="base+spectral", **kw).fit(train)
    assert isinstance(spec.spectral_, GoldOracle) and spec.dense_weights_.shape == (6,)
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


def test_cli_train_rerank_dep_and_parse_no_rerank(synthetic, tmp_path):
    train, inp, model = tmp_path / "t.conllu", tmp_path / "in.conllu", tmp_path / "m.rr"
    write_conllu(train, synthetic[:200])
    write_conllu(inp, synthetic[300:], heads=False)
    assert cli.main(["train", "rerank-dep", str(train), "-o", str(model), "--features", "base",
                     "--k", "10", "--iterations", "2", "--bits", "18", "--rerank-bits", "16",
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
    write_conllu(train, synthetic[:30])
    emb = tmp_path / "e.txt"
    emb.write_text("x\n")
    rc = cli.main(["train", "rerank-dep", str(train), "-o", str(tmp_path / "m"), "--features",
                   "base", "--embeddings", str(emb), "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "--embeddings needs --features base+spectral" in err


class _Lists:
    """Two k-best lists (3 and 2 candidates) of sentences of 4 and 2 words."""
    cand_off = np.array([0, 3, 5])
    sent = np.array([0, 0, 0, 1, 1])
    lengths = np.array([4, 2])

    def relative(self, x):
        from fastspectral.rerank.reranker import RerankData
        return RerankData.relative(self, x)


def test_log_p_hat_normalisations_within_a_list():
    x = np.array([-10.0, -12.0, -16.0, -3.0, -5.0])
    d = _Lists()
    np.testing.assert_allclose(rmodel._normalise(x, d, "max"), [0, -2, -6, 0, -2])
    np.testing.assert_allclose(rmodel._normalise(x, d, "word"), [0, -0.5, -1.5, 0, -1])
    z = rmodel._normalise(x, d, "list")
    np.testing.assert_allclose([z[:3].mean(), z[:3].std(), z[3:].mean(), z[3:].std()],
                               [0, 1, 0, 1], atol=1e-12)
    assert z[0] > z[1] > z[2]


def test_dense_columns_sign_and_invalid():
    d = _Lists()
    d.base = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    lp = np.array([-10.0, -1e4, -16.0, -3.0, -5.0])
    sign = np.array([1.0, 0.0, -1.0, 1.0, 1.0])
    m = RerankDepParser(logp_norm="max", spectral_scores="tree")
    raw = m._raw_dense(d, lp, sign)
    assert raw.shape == (5, 4)
    np.testing.assert_allclose(raw[:, 0], [0, -1, -2, 0, -1])
    np.testing.assert_allclose(raw[:, 1], [0, -6, -6, 0, -2])   # p-hat = 0: the list's lowest
    np.testing.assert_array_equal(raw[:, 2], [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(raw[:, 3], [0, 0, 1, 0, 0])
    m.logp_sign = False
    assert m._raw_dense(d, lp, sign).shape == (5, 3) and m._n_dense() == 3
    # fragments: their log p-hat relative to the list's best, negatives above the fewest
    m.spectral_scores = "both"
    frag, fneg = np.array([-7.0, -9.0, -8.0, -2.0, -1.0]), np.array([1.0, 3.0, 2.0, 0.0, 0.0])
    raw = m._raw_dense(d, lp, sign, frag, fneg)
    assert raw.shape == (5, 5) and m._n_dense() == 5
    np.testing.assert_allclose(raw[:, 3], [0, -2, -1, -1, 0])
    np.testing.assert_allclose(raw[:, 4], [0, -2, -1, 0, 0])
    m.spectral_scores = "fragment"
    assert m._n_dense() == 3
    with pytest.raises(ValueError, match="logp_norm"):
        RerankDepParser(logp_norm="nope").fit([])


def test_tagged_log_prob_of_a_shared_sentence_equals_copies():
    """latent-dep with tags builds the start vectors once per distinct sentence object (the
    trees of a k-best list): the same scores as scoring separate copies."""
    import copy

    from fastspectral.latentdep import LatentDependencyModel
    from fastspectral.latentdep.synthetic import LatentDependencyGenerator

    g = LatentDependencyGenerator(n_states=2, n_words=8, seed=1)
    train = g.sample(600)
    for s in train:
        s.xpos = ["T" + w[-1] for w in s.words]
    m = LatentDependencyModel(n_states=3, dim=6, tag_column="xpos", random_state=0).fit(train)
    assert m.tag_column_ == "xpos" and len(m.tags_) > 2
    s, t = train[0], train[1]
    perturbed = [list(s.heads), [0] + [1] * (len(s.words) - 1)]
    shared = m.log_prob([s, s, t], heads=perturbed + [t.heads], return_sign=True)
    copies = m.log_prob([copy.deepcopy(s), copy.deepcopy(s), t], heads=perturbed + [t.heads],
                        return_sign=True)
    np.testing.assert_allclose(shared[0], copies[0], rtol=1e-12)
    np.testing.assert_array_equal(shared[1], copies[1])
    assert shared[0][0] != shared[0][1]


def test_fragment_log_prob_is_the_sum_over_depth_one_subtrees():
    """latent-dep's fragment scores: node i with its children as leaves, scored as a tree by
    log_prob; the sum over nodes and the count of negative fragments."""
    from fastspectral.latentdep import LatentDependencyModel
    from fastspectral.latentdep.synthetic import LatentDependencyGenerator
    from fastspectral.trees.conll import DepSentence

    g = LatentDependencyGenerator(n_states=3, n_words=10, seed=2)
    m = LatentDependencyModel(n_states=3, dim=5, ridge=0.1, random_state=0).fit(g.sample(800))
    sents = [s for s in g.sample(40, seed=5) if len(s.words) >= 4][:6]
    frag, neg = m.fragment_log_prob(sents)
    for s, f, k in zip(sents, frag, neg):
        total, negs = 0.0, 0
        for i in range(len(s.words)):
            kids = [j for j, h in enumerate(s.heads) if h == i + 1]
            nodes = sorted(kids + [i])
            words = [s.words[j] for j in nodes]
            heads = [0 if j == i else nodes.index(i) + 1 for j in nodes]
            lp, sg = m.log_prob([DepSentence(words=words, heads=heads)], return_sign=True)
            total += lp[0]
            negs += int(sg[0] < 0)
        assert f == pytest.approx(total, rel=1e-9, abs=1e-9)
        assert k == negs
    assert len({round(x, 6) for x in frag}) > 1
    # a k-best list of one sentence: one score per head array; a changed tree, a changed score
    s = sents[0]
    other = [0] + [1] * (len(s.words) - 1)
    f2, _ = m.fragment_log_prob([s], heads=[s.heads, other])
    assert f2[0] == pytest.approx(frag[0]) and f2[1] != pytest.approx(frag[0])


def test_cli_spectral_options(synthetic, tmp_path, capsys):
    """train rerank-dep --states / --spectral-scores / --dense-gain reach the model; parse
    with the spectral model."""
    train, inp, model = tmp_path / "t.conllu", tmp_path / "in.conllu", tmp_path / "m.rr"
    write_conllu(train, synthetic[:200])
    write_conllu(inp, synthetic[300:320], heads=False)
    assert cli.main(["train", "rerank-dep", str(train), "-o", str(model), "--k", "5",
                     "--iterations", "1", "--bits", "16", "--rerank-bits", "16", "--states", "2",
                     "--spectral-scores", "fragment", "--dense-gain", "4", "--logp-norm",
                     "word", "--spectral-ridge", "0.1", "-q"]) == 0
    m = RerankDepParser.load(model)
    assert m.spectral_.n_states == 2 and m.spectral_scores == "fragment"
    assert m.spectral_.ridge == 0.1
    assert m.dense_gain == 4.0 and m.logp_norm == "word" and m.dense_weights_.shape == (3,)
    out = tmp_path / "o.conllu"
    assert cli.main(["parse", str(model), str(inp), "-o", str(out), "-q"]) == 0
    assert len(list(read_conllu(out))) == 20
    rc = cli.main(["train", "rerank-dep", str(train), "-o", str(tmp_path / "b"), "--features",
                   "base", "--states", "4", "-q"])
    assert rc == 2 and "--states needs --features base+spectral" in capsys.readouterr().err
    rc = cli.main(["train", "rerank-dep", str(train), "-o", str(tmp_path / "b"), "--features",
                   "base", "--spectral-ridge", "0.1", "-q"])
    assert rc == 2 and "--spectral-ridge needs --features" in capsys.readouterr().err
    rc = cli.main(["train", "rerank-dep", str(train), "-o", str(tmp_path / "b"),
                   "--spectral-ridge", "-1", "-q"])
    assert rc == 2 and "--spectral-ridge must be >= 0" in capsys.readouterr().err


def test_pos_input_spectral_model(synthetic, tmp_path):
    """spectral_input="pos": the spectral model is trained on the tag sequences (one-hot,
    8 states by default) and scores the lists through the same view; save / load."""
    from fastspectral.latentdep import LatentDependencyModel

    train, test = synthetic[:200], synthetic[300:330]
    m = RerankDepParser(k=5, rerank_bits=16, spectral_input="pos", jobs=2,
                        mst=MSTParser(iterations=1, bits=16, jobs=2),
                        spectral=LatentDependencyModel(n_states=2, embeddings="one-hot")
                        ).fit(train)
    assert isinstance(m.spectral_, LatentDependencyModel)
    assert m.spectral_.embeddings == "one-hot" and m.spectral_.n_states == 2
    assert set(m.spectral_.words_[1:]) == {t for s in train for t in s.tags}
    view = m._spectral_view(test[:1])[0]
    assert view.words == list(test[0].tags) and view.heads == list(test[0].heads)
    out = [s.heads for s in m.parse(test)]
    m.save(tmp_path / "p.rr")
    assert [s.heads for s in RerankDepParser.load(tmp_path / "p.rr").parse(test)] == out
    with pytest.raises(ValueError, match="spectral_input"):
        RerankDepParser(spectral_input="tags").fit(train)


def test_sentences_over_the_kbest_budget_get_the_base_parse(synthetic, caplog, monkeypatch):
    """A sentence whose k-best chart would pass ``max_memory`` (or the kernel's length limit)
    gets the base parser's best tree, warned and counted; the others are re-ranked as
    before, in their places."""
    import logging

    from fastspectral import _memory
    import importlib

    kbest_mod = importlib.import_module("fastspectral.rerank.kbest")

    m = RerankDepParser(k=10, features="base", rerank_bits=16, jobs=1,
                        mst=MSTParser(iterations=3, bits=18, jobs=1)).fit(synthetic[:300])
    test = synthetic[300:330]
    lengths = [len(s.words) for s in test]
    longest = int(np.argmax(lengths))
    full = [list(h) for h in m.predict_heads(test)]
    assert m.last_parse_stats_.too_long == 0
    base = [list(h) for h in m.mst_.predict_heads(test)]
    m.max_memory = _memory.kbest_chart_bytes(lengths[longest] - 1)
    with caplog.at_level(logging.WARNING, logger="fastspectral"):
        got = [list(h) for h in m.predict_heads(test)]
    over = [k for k, n in enumerate(lengths) if n == lengths[longest]]
    assert m.last_parse_stats_.too_long == len(over) >= 1
    assert f"{lengths[longest]} words" in caplog.text and "no re-ranking" in caplog.text
    for k in range(len(test)):
        assert got[k] == (base[k] if k in over else full[k])
    m.max_memory = 0                                     # no budget: the length limit only
    monkeypatch.setattr(kbest_mod, "KBEST_MAX_WORDS", lengths[longest] - 1)
    got = [list(h) for h in m.predict_heads(test)]
    assert m.last_parse_stats_.too_long == len(over)
    assert all(got[k] == (base[k] if k in over else full[k]) for k in range(len(test)))


def test_argmax_segments_keeps_every_segment_with_nan_scores():
    from fastspectral.rerank.model import _argmax_segments

    x = np.array([1.0, 3.0, np.nan, np.nan, np.nan, -np.inf, 2.0, np.nan, 2.0])
    off = np.array([0, 3, 5, 6, 9])
    np.testing.assert_array_equal(_argmax_segments(x, off), [1, 3, 5, 6])


def test_rerank_data_subset():
    from fastspectral.rerank.mst import MSTParser
    from fastspectral.trees.conll import DepSentence

    def sent(text, heads):
        words, tags = zip(*(w.split("/") for w in text.split()))
        return DepSentence(words=words, xpos=tags, heads=heads)

    train = [sent("the/DT dog/NN barks/VBZ", [2, 3, 0]),
             sent("the/DT big/JJ dog/NN sleeps/VBZ", [3, 3, 4, 0]),
             sent("dogs/NNS bark/VBP", [2, 0])] * 4
    from fastspectral.rerank.reranker import RerankData

    mst = MSTParser(iterations=2, bits=16).fit(train)
    enc = mst.encode(train[:3])
    data = RerankData(mst.kbest_encoded(enc, 5, 1), enc)
    sub, cand = data.subset([2, 0])
    assert list(sub.lengths) == [2, 3]
    assert np.array_equal(sub.base, data.base[cand])
    for c_sub, c in enumerate(cand):
        assert np.array_equal(sub.candidate_heads(c_sub), data.candidate_heads(c))
    one, _ = data.subset([1])
    assert np.array_equal(one.P, data.P[data.tok_off[1]:data.tok_off[2]])
    assert np.array_equal(np.diff(one.tok_off), np.diff(data.tok_off)[[1]])
    # the re-ranker's scores of a sub-list are those of the same candidates in the whole
    from fastspectral.rerank.reranker import score_candidates

    rng = np.random.default_rng(0)
    w, v = rng.normal(size=1 << 16), rng.normal(size=1)

    def scores(d):
        out = np.empty(d.n_candidates)
        score_candidates(w, v, d.P, d.tok_off, d.lengths, d.heads, d.cand_off, d.cand_hoff,
                         d.base[:, None].copy(), out)
        return out

    assert np.allclose(scores(sub), scores(data)[cand])
