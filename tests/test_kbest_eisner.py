"""The compiled lazy k-best Eisner (Huang & Chiang 2005, Algorithm 3) against brute force:
on short sentences the k best scores equal the top k of an enumeration of every projective
tree (torch-struct's habit), the trees are distinct, projective and scored right."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral.dependency.eisner import eisner
from fastspectral.rerank.kbest import kbest, kbest_batch, kbest_packed

from _dep_brute import all_projective_trees, is_projective, is_tree


def _score(S, h):
    return sum(S[h[i], i + 1] for i in range(len(h)))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("single_root", [False, True])
def test_kbest_equals_brute_force_top_k(n, single_root):
    trees = all_projective_trees(n, single_root)
    rng = np.random.default_rng(n * 10 + single_root)
    for k in (1, 7, 50):
        S = rng.normal(size=(n + 1, n + 1))
        heads, scores = kbest(S, k, single_root=single_root)
        ref = np.sort([_score(S, t) for t in trees])[::-1][:k]
        assert len(scores) == len(ref)
        np.testing.assert_allclose(scores, ref, rtol=0, atol=1e-9)
        assert np.all(np.diff(scores) <= 1e-12), "best first"
        assert len({tuple(h) for h in heads}) == len(heads), "distinct trees"
        for h, s in zip(heads, scores):
            assert is_tree(h) and is_projective(h)
            assert not single_root or int((h == 0).sum()) == 1
            assert _score(S, h) == pytest.approx(s, abs=1e-9)


def test_number_of_projective_trees_is_exhausted():
    # 3 words: 12 projective trees (12 < k: all of them, then stop)
    S = np.random.default_rng(0).normal(size=(4, 4))
    heads, scores = kbest(S, 50)
    assert len(scores) == len(all_projective_trees(3, False)) == 12


def test_first_tree_is_the_viterbi_tree_and_batches_agree():
    rng = np.random.default_rng(5)
    mats = [rng.normal(size=(n + 1, n + 1)) for n in (1, 9, 23, 40, 2)]
    one = kbest_batch(mats, 20, single_root=True, jobs=1)
    two = kbest_batch(mats, 20, single_root=True, jobs=2)
    for S, (h1, s1), (h2, s2) in zip(mats, one, two):
        np.testing.assert_array_equal(h1, h2)
        np.testing.assert_array_equal(s1, s2)
        best = eisner(S, single_root=True)
        assert _score(S, best) == pytest.approx(s1[0])
        assert _score(S, h1[0]) == pytest.approx(_score(S, best))


def test_minus_infinity_arcs_are_never_used():
    n = 5
    S = np.random.default_rng(2).normal(size=(n + 1, n + 1))
    S[0, 3] = S[2, 1] = -np.inf
    heads, scores = kbest(S, 50)
    assert np.isfinite(scores).all()
    assert not ((heads[:, 2] == 0) | (heads[:, 0] == 2)).any()
    ok = [t for t in all_projective_trees(n, False) if t[2] != 0 and t[0] != 2]
    assert len(scores) == min(50, len(ok))


def test_bad_arguments():
    with pytest.raises(ValueError, match="k must be"):
        kbest(np.zeros((3, 3)), 0)
    with pytest.raises(ValueError, match="square"):
        kbest_batch([np.zeros((3, 4))], 5)
    with pytest.raises(ValueError, match="runs past"):
        kbest_packed(np.zeros(5), np.array([0, 9]), np.array([3], np.int32), 2)
