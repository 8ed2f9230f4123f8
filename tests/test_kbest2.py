"""The compiled second-order k-best decoder (Huang & Chiang 2005, Algorithm 3, over McDonald
& Pereira's 2006 sibling hypergraph) against brute force: on short sentences the k best
scores equal the top k of an enumeration of every projective tree scored with arc and
sibling parts; the trees are distinct, projective and scored right; with zero sibling scores
it is the first-order k-best decoder; ``MSTParser(order=2).kbest`` uses it."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral.dependency.eisner import eisner2_packed
from fastspectral.rerank.kbest import kbest_packed

from _dep_brute import all_projective_trees, is_projective, is_tree
from test_mst2 import random_packed, tree_score


def _one(A, G, k, single_root, jobs=1):
    n = A.shape[0] - 1
    res = kbest_packed(A.ravel(), np.array([0, A.size]), np.array([n], np.int32), k,
                       single_root, jobs, sibs=G.ravel(), sib_off=np.array([0, G.size]))
    return res.trees(0), res.scores[0, :res.count[0]]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("single_root", [False, True])
def test_kbest2_equals_brute_force_top_k(n, single_root):
    trees = all_projective_trees(n, single_root)
    rng = np.random.default_rng(n * 10 + single_root)
    for k in (1, 7, 50, 400):
        A = rng.normal(size=(n + 1, n + 1))
        G = rng.normal(size=(n + 1, n + 1, n + 1))
        heads, scores = _one(A, G, k, single_root)
        ref = np.sort([tree_score(A, G, t) for t in trees])[::-1][:k]
        assert len(scores) == len(ref)
        np.testing.assert_allclose(scores, ref, rtol=0, atol=1e-9)
        assert np.all(np.diff(scores) <= 1e-12), "best first"
        assert len({tuple(h) for h in heads}) == len(heads), "distinct trees"
        for h, s in zip(heads, scores):
            t = tuple(int(x) for x in h)
            assert is_tree(t) and is_projective(t)
            assert not single_root or t.count(0) == 1
            assert tree_score(A, G, t) == pytest.approx(s, abs=1e-9)


@pytest.mark.parametrize("single_root", [False, True])
def test_zero_sibling_scores_give_the_first_order_k_best(single_root):
    rng = np.random.default_rng(4)
    for n in (1, 3, 8, 15):
        A = rng.normal(size=(n + 1, n + 1))
        G = np.zeros((n + 1, n + 1, n + 1))
        _, s2 = _one(A, G, 30, single_root)
        one = kbest_packed(A.ravel(), np.array([0, A.size]), np.array([n], np.int32), 30,
                           single_root, 1)
        np.testing.assert_allclose(s2, one.scores[0, :one.count[0]], atol=1e-9)


def test_batches_threads_and_the_viterbi_tree_agree():
    lengths, arcs, aoff, sibs, soff = random_packed()
    arcs[aoff[0] + 2] = -np.inf                 # forbid 0 -> 2 in the first sentence
    r1 = kbest_packed(arcs, aoff, lengths, 20, True, 1, sibs=sibs, sib_off=soff)
    r2 = kbest_packed(arcs, aoff, lengths, 20, True, 2, sibs=sibs, sib_off=soff)
    np.testing.assert_array_equal(r1.heads, r2.heads)
    np.testing.assert_array_equal(r1.scores, r2.scores)
    best = eisner2_packed(arcs, aoff, sibs, soff, lengths, True, 1)
    np.testing.assert_allclose(r1.scores[:, 0][lengths > 0], best.best[lengths > 0],
                               atol=1e-9)
    assert r1.count[1] == 0
    for b, n in enumerate(lengths):
        A = arcs[aoff[b]:aoff[b + 1]].reshape(n + 1, n + 1)
        G = sibs[soff[b]:soff[b + 1]].reshape(n + 1, n + 1, n + 1)
        for h, s in zip(r1.trees(b), r1.scores[b]):
            t = tuple(int(x) for x in h)
            assert tree_score(A, G, t) == pytest.approx(s, abs=1e-9)
            assert t.count(0) == 1
            assert b != 0 or t[1] != 0


def test_bad_arguments():
    A, G = np.zeros(16), np.zeros(64)
    with pytest.raises(ValueError, match="both sibs"):
        kbest_packed(A, np.array([0, 16]), np.array([3], np.int32), 2, sibs=G)
    with pytest.raises(ValueError, match="runs past"):
        kbest_packed(A, np.array([0, 16]), np.array([3], np.int32), 2, sibs=G[:20],
                     sib_off=np.array([0, 64]))


# ---- the second-order MST parser's own lists, and the re-ranker on them ------------------
from fastspectral import cli  # noqa: E402
from fastspectral.rerank import MSTParser, RerankDepParser  # noqa: E402

from _conll_files import write_conllu  # noqa: E402


@pytest.fixture(scope="module")
def synthetic(synthetic_grammar):
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.trees.transforms import clean

    return list(trees_to_dep_sentences(clean(t) for t in synthetic_grammar.sample(200,
                                                                                   seed=11)))


@pytest.fixture(scope="module")
def mst2(synthetic):
    return MSTParser(order=2, iterations=2, bits=18, jobs=2).fit(synthetic[:150])


def test_order2_parser_kbest_is_its_own_ranking(mst2, synthetic):
    test = synthetic[150:170]
    kb = mst2.kbest(test, 10, jobs=2)
    best = mst2.predict_heads(test, jobs=1)
    enc = mst2.encode(test)
    arcs = mst2.arc_scores(enc, 1)
    sibs, soff = mst2.sibling_scores(enc, 1)
    for b, s in enumerate(test):
        trees = kb.trees(b)
        assert len(trees) >= 1
        np.testing.assert_array_equal(trees[0], best[b])
        n = len(s.words)
        A = arcs[enc.pair_off[b]:enc.pair_off[b] + (n + 1) ** 2].reshape(n + 1, n + 1)
        G = sibs[soff[b]:soff[b + 1]].reshape(n + 1, n + 1, n + 1)
        for h, sc in zip(trees, kb.scores[b]):
            assert tree_score(A, G, tuple(int(x) for x in h)) == pytest.approx(sc, abs=1e-6)


def test_order2_kbest_over_the_budget_falls_back_to_first_order(mst2, synthetic, caplog):
    from fastspectral import _memory

    test = synthetic[150:160]
    longest = int(np.argmax([len(s.words) for s in test]))
    n = len(test[longest].words)
    mst2.max_memory = _memory.kbest_chart_bytes(n, 2) - 1
    try:
        kb = mst2.kbest(test, 5, jobs=1)
    finally:
        mst2.max_memory = None
    assert "first-order k best" in caplog.text
    full = mst2.kbest(test, 5, jobs=1)
    one = mst2.encode([test[longest]])
    first = kbest_packed(mst2.arc_scores(one, 1), one.pair_off, one.lengths, 5,
                         mst2.single_root_, 1)
    np.testing.assert_array_equal(kb.trees(longest), first.trees(0))
    for b in range(len(test)):
        if b != longest and len(test[b].words) < n:
            np.testing.assert_array_equal(kb.trees(b), full.trees(b))


def test_reranker_on_second_order_lists(synthetic, tmp_path):
    kw = dict(k=8, features="base", rerank_bits=16, rerank_iterations=2, jobs=2)
    model = RerankDepParser(mst=MSTParser(order=2, iterations=2, bits=18, jobs=2),
                            **kw).fit(synthetic[:150])
    assert int(model.mst_.order) == 2 and getattr(model, "mst2_", None) is None
    test = synthetic[150:]
    out = model.predict_heads(test)
    lists = model.mst_.kbest(test, 8)
    for b, h in enumerate(out):
        assert any(np.array_equal(h, t) for t in lists.trees(b)), "picked from the list"
    model.save(tmp_path / "m.rr")
    back = RerankDepParser.load(tmp_path / "m.rr")
    assert int(back.mst_.order) == 2
    assert all(np.array_equal(a, b) for a, b in zip(back.predict_heads(test), out))


def test_cli_kbest_order_2(synthetic, tmp_path, capsys):
    write_conllu(tmp_path / "train.conllu", synthetic[:120])
    args = ["train", "rerank-dep", str(tmp_path / "train.conllu"), "-o",
            str(tmp_path / "m.rr"), "--features", "base", "--k", "4", "--iterations", "1",
            "--rerank-iterations", "1", "--bits", "18", "--rerank-bits", "16", "-q"]
    assert cli.main(args + ["--kbest-order", "2"]) == 0
    assert int(RerankDepParser.load(tmp_path / "m.rr").mst_.order) == 2
    assert cli.main(args + ["--kbest-order", "2", "--base-order", "2"]) != 0
    assert "exclude each other" in capsys.readouterr().err
