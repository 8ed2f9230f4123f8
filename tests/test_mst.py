"""The first-order MSTParser (McDonald et al. 2005): hashed features, perceptron updates,
learning, model files and the command line (``train mst`` / ``parse``)."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral import cli
from fastspectral.errors import ModelFileError
from fastspectral.rerank import MSTParser
from fastspectral.rerank.features import arc_features, perceptron_update
from fastspectral.trees.conll import DepSentence, read_conllu

from _conll_files import write_conllu
from conftest import data_path, need


def _sent(text, heads):
    words, tags = zip(*(w.split("/") for w in text.split()))
    return DepSentence(words=words, xpos=tags, upos=tags, heads=heads)


TOY = [_sent("the/DT dog/NN barks/VBZ", [2, 3, 0]),
       _sent("a/DT cat/NN sleeps/VBZ", [2, 3, 0]),
       _sent("dogs/NNS bark/VBP loudly/RB", [2, 0, 2]),
       _sent("the/DT big/JJ dog/NN sleeps/VBZ", [3, 3, 4, 0])] * 5


@pytest.fixture(scope="module")
def synthetic(synthetic_grammar):
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.trees.transforms import clean

    g = synthetic_grammar
    return list(trees_to_dep_sentences(clean(t) for t in g.sample(400, seed=3)))


def test_features_depend_on_direction_distance_and_between_tags():
    W, P, F = [1, 5, 6, 7, 8], [1, 10, 11, 12, 13], [1, 5, 6, 7, 8]
    f12 = arc_features(W, P, F, 4, 1, 2, 20)
    f21 = arc_features(W, P, F, 4, 2, 1, 20)
    f14 = arc_features(W, P, F, 4, 1, 4, 20)
    assert len(f12) == 58 and len(f14) == 58 + 2 * 2        # two in-between words, twice
    assert set(f12) != set(f21)
    # the un-conjoined half of the unigram head features is shared by both arcs of word 1
    assert set(f12) & set(arc_features(W, P, F, 4, 1, 3, 20))
    np.testing.assert_array_equal(f12, arc_features(W, P, F, 4, 1, 2, 20))
    assert f12.min() >= 0 and f12.max() < 2 ** 20


def test_perceptron_update_moves_weights_towards_the_gold_arc():
    from fastspectral.rerank.features import arc_scores

    p = MSTParser(bits=16, iterations=1).fit(TOY[:4])
    enc = p.encode(TOY[:1])
    w, u = np.zeros(2 ** 16), np.zeros(2 ** 16)
    gold = np.array([2, 3, 0], np.int32)
    pred = np.array([3, 3, 0], np.int32)
    off = np.array([0, 3], np.int64)
    wrong = perceptron_update(w, u, 1.0, enc.W, enc.P, enc.F, enc.tok_off, enc.lengths, gold,
                              pred, off, 1.0)
    assert wrong == 1
    out = np.empty(int(enc.pair_off[-1]))
    arc_scores(w, enc.W, enc.P, enc.F, enc.tok_off, enc.lengths, enc.pair_off, out)
    S = out.reshape(4, 4)
    assert S[2, 1] > 0 > S[3, 1]
    assert np.isneginf(S[:, 0]).all() and np.isneginf(np.diag(S)).all()


def test_learns_the_toy_treebank_and_round_trips(tmp_path):
    p = MSTParser(iterations=5, bits=16).fit(TOY)
    assert [s.heads for s in p.parse(TOY[:4])] == [s.heads for s in TOY[:4]]
    assert p.fit_info_.errors[-1] <= p.fit_info_.errors[0]
    p.save(tmp_path / "m.fsm")
    q = MSTParser.load(tmp_path / "m.fsm")
    np.testing.assert_array_equal(p.weights_, q.weights_)
    kb = q.kbest(TOY[:2], k=10)
    assert list(kb.count) == [7, 7]       # 3 words, one root child: 7 projective trees
    np.testing.assert_array_equal(kb.trees(0)[0], TOY[0].heads)


def test_synthetic_accuracy(synthetic):
    from fastspectral.eval.attachment import attachment_scores

    p = MSTParser(iterations=5, bits=18, jobs=2).fit(synthetic[:300])
    r = attachment_scores(synthetic[300:], p.parse(synthetic[300:]))
    assert r.uas > 85, r.uas


def test_bad_parameters_and_data():
    with pytest.raises(ValueError, match="iterations"):
        MSTParser(iterations=0).fit(TOY)
    with pytest.raises(ValueError, match="bits"):
        MSTParser(bits=40).fit(TOY)
    with pytest.raises(ValueError, match="empty"):
        MSTParser().fit([])
    bad = _sent("a/DT b/NN", [2, 2])
    with pytest.raises(Exception, match="self-loop"):
        MSTParser(bits=16).fit([bad])


def test_corrupt_model_file(tmp_path):
    p = MSTParser(iterations=1, bits=16).fit(TOY)
    meta, arrays = p._model_file()
    arrays = dict(arrays, weight_index=arrays["weight_index"] + 2 ** 16)
    with pytest.raises(ModelFileError, match="weight_index"):
        MSTParser._from_model_file(meta, arrays)


def test_cli_train_and_parse_conllu_without_heads(tmp_path, capsys):
    train, inp, model, out = (tmp_path / n for n in ("t.conllu", "in.conllu", "m.mst",
                                                     "out.conllu"))
    write_conllu(train, TOY)
    write_conllu(inp, TOY[:4], heads=False)
    assert cli.main(["train", "mst", str(train), "-o", str(model), "--iterations", "5",
                     "--bits", "16", "-q"]) == 0
    assert cli.main(["parse", str(model), str(inp), "-o", str(out), "-q"]) == 0
    parsed = list(read_conllu(out))
    assert [s.heads for s in parsed] == [s.heads for s in TOY[:4]]
    assert [s.words for s in parsed] == [s.words for s in TOY[:4]]
    # --no-rerank is for re-ranking models only: one line, exit 2
    rc = cli.main(["parse", str(model), str(inp), "-o", str(out), "--no-rerank", "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "--no-rerank" in err and "Traceback" not in err


def test_cli_bad_treebank_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tdog\t_\tNN\tNN\t_\tX\t_\t_\t_\n\n", encoding="utf-8")
    rc = cli.main(["train", "mst", str(bad), "-o", str(tmp_path / "m.mst"), "-q"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "bad.conllu" in err[0] and ":1" in err[0]


@pytest.mark.slow
def test_wsj_sample_accuracy():
    from fastspectral.eval.attachment import attachment_scores
    from fastspectral.trees.readers import read_treebank

    sents = list(read_treebank(need(data_path("dep", "wsj-sample.dp"))))
    p = MSTParser(iterations=2, jobs=2).fit(sents[:800])
    r = attachment_scores(sents[-200:], p.parse(sents[-200:]))
    assert r.uas > 75, r.uas       # SHAG DET+F, on 3131 sentences, is 73.17


def test_upos_tagset_fits_and_reads_the_upos_column():
    """UD sentences (distinct UPOS and XPOS): tagset upos/auto trains on the UPOS column (the
    sentences were once seen through the tag view twice: 'no UPOS tags')."""
    def ud(text, heads):
        words, xpos, upos = zip(*(w.split("/") for w in text.split()))
        return DepSentence(words=words, xpos=xpos, upos=upos, heads=heads)

    data = [ud("the/DT/DET dog/NN/NOUN barks/VBZ/VERB", [2, 3, 0]),
            ud("dogs/NNS/NOUN bark/VBP/VERB", [2, 0])] * 4
    for tagset in ("upos", "auto"):
        m = MSTParser(iterations=2, bits=16, tag_column=tagset).fit(data)
        assert m.tag_column_ == "upos" and "NOUN" in set(m.tags_) and "NN" not in set(m.tags_)
        assert [list(s.heads) for s in m.parse(data[:2])] == [[2, 3, 0], [2, 0]]
    m = MSTParser(iterations=2, bits=16, tag_column="xpos").fit(data)
    assert "NN" in set(m.tags_) and "NOUN" not in set(m.tags_)


@pytest.mark.slow
@pytest.mark.parametrize("n", [12, 40])
def test_long_sentence_in_between_sums_equal_the_direct_ones(n):
    """The prefix-sum path of long sentences (``long_between``) gives the arc scores of the
    direct one, which hashes every word between head and modifier: random weights, tags from
    a small set (runs of one tag, every distance bin on both sides, the root as head)."""
    from fastspectral.rerank.features import arc_scores
    from fastspectral.rerank.mst import _packed

    rng = np.random.default_rng(n)
    lengths = np.array([5, n, 3], dtype=np.int32)
    tok = int((lengths + 1).sum())
    W = rng.integers(3, 50, tok)
    P = rng.integers(3, 7, tok)
    F = rng.integers(3, 40, tok)
    enc = _packed(W, P, F, lengths)
    w = rng.normal(size=2 ** 16)
    direct = np.empty(int(enc.pair_off[-1]))
    arc_scores(w, enc.W, enc.P, enc.F, enc.tok_off, enc.lengths, enc.pair_off, direct)
    fast = np.empty_like(direct)
    arc_scores(w, enc.W, enc.P, enc.F, enc.tok_off, enc.lengths, enc.pair_off, fast, 5)
    fin = np.isfinite(direct)
    np.testing.assert_array_equal(fin, np.isfinite(fast))
    np.testing.assert_allclose(fast[fin], direct[fin], rtol=1e-12, atol=1e-9)
    a, b = int(enc.pair_off[0]), int(enc.pair_off[1])
    np.testing.assert_array_equal(fast[a:b], direct[a:b])      # 5 words: still direct
    assert not np.array_equal(fast, direct)                    # the long one was not
