"""CCM's empty spans (Klein & Manning 2002): the contexts of the n + 1 gaps of a sentence."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral.unsupervised import CCMParser
from fastspectral.unsupervised.ccm import empty_span_contexts


def test_empty_span_contexts_against_brute_force():
    rng = np.random.default_rng(0)
    T = 5
    sents = [rng.integers(0, T, n) for n in (1, 2, 5, 3, 7)]
    offsets = np.cumsum([0] + [len(s) for s in sents])
    ids = np.concatenate(sents)
    want = np.zeros((T + 2) ** 2)
    for s in sents:
        ext = [T] + list(s) + [T + 1]
        for g in range(len(s) + 1):
            want[ext[g] * (T + 2) + ext[g + 1]] += 1
    np.testing.assert_array_equal(empty_span_contexts(offsets, ids, T), want)
    assert want.sum() == sum(len(s) + 1 for s in sents)


def test_empty_spans_change_the_distituent_contexts():
    sents = [(["a", "b", "c"], ["DT", "NN", "VBD"]), (["d", "e"], ["PRP", "VBD"])] * 5
    with_e = CCMParser(iterations=2).fit(sents)
    without = CCMParser(iterations=2, empty_spans=False).fit(sents)
    assert not np.allclose(with_e.context_logprob_[1], without.context_logprob_[1])
    np.testing.assert_allclose(np.exp(with_e.context_logprob_).sum(axis=1), 1.0)


@pytest.mark.parametrize("bad", [0, -1.0, True, "x"])
def test_bad_distituent_pseudo_count(bad):
    with pytest.raises(ValueError, match="distituent_pseudo_count"):
        CCMParser(distituent_pseudo_count=bad).fit([(["a", "b"], ["DT", "NN"])])
