"""The spectral HMM from partitions (the statistics protocol of fastspectral.base): the model
``fit`` learns on the concatenated partitions, from 1, 2 and 7 partitions."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral.base import Statistics
from fastspectral.hmm import HMM

from test_hmm import _sample, _strings, _true_hmm


@pytest.fixture(scope="module")
def data():
    start, trans, emit = _true_hmm()
    train = _strings(_sample(start, trans, emit, 1500, 31))
    train = train + [["A", "rare", "b"], ["c", "Once", "<s>"], []]
    test = _strings(_sample(start, trans, emit, 200, 32)) + [["never", "seen", "a"]]
    return train, test


def _parts(seqs, k):
    cut = np.linspace(0, len(seqs), k + 1).astype(int)
    return [seqs[cut[i]:cut[i + 1]] for i in range(k)]


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 2, 7])
@pytest.mark.parametrize("params", [
    {"n_states": 2, "max_basis": 6},
    {"n_states": 3, "max_basis": 50, "lowercase": True, "min_count": 2, "ridge": 0.5,
     "state_mixing": 0.2, "backoff_weight": 0.1},
    {"n_states": 2, "max_basis": 8, "max_vocab": 2},
])
def test_partitions_equal_fit(data, k, params):
    train, test = data
    ref = HMM(**params).fit(train)
    model = HMM(**params).fit_partitions(_parts(train, k))
    assert model.symbols_.symbols == ref.symbols_.symbols
    np.testing.assert_array_equal(model.rare_weight_, ref.rare_weight_)
    np.testing.assert_array_equal(model.smoother_.counts_.toarray(),
                                  ref.smoother_.counts_.toarray())
    a, b = model.operators_, ref.operators_
    for name in ("alpha1", "beta", "c", "singular_values"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))    # exact counts
    for name in ("A", "W", "fallback"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-10, atol=1e-13)
    assert (model.ridge_, model.state_mixing_, model.backoff_weight_) == \
        (ref.ridge_, ref.state_mixing_, ref.backoff_weight_)
    np.testing.assert_allclose(model.log_probability(test), ref.log_probability(test),
                               rtol=1e-9)


def test_partition_model_saves_and_loads(data, tmp_path):
    train, test = data
    model = HMM(n_states=2, max_basis=6).fit_partitions(_parts(train, 2))
    model.save(tmp_path / "p.hmm")
    back = HMM.load(tmp_path / "p.hmm")
    np.testing.assert_array_equal(back.log_probability(test), model.log_probability(test))


def test_statistics_merge_in_any_grouping(data):
    train, _ = data
    model = HMM(n_states=2, max_basis=6)
    parts = [model.prepare_partition(p) for p in _parts(train, 3)]
    s = [model.sufficient_statistics(p) for p in parts]
    ctx = HMM(n_states=2, max_basis=6).fit_statistics(s[0] + s[1] + s[2])
    pairs = [model.sufficient_statistics(p, ctx) for p in parts]
    left = Statistics.merge_all([pairs[0] + pairs[1], pairs[2]])
    right = pairs[0] + (pairs[1] + pairs[2])
    np.testing.assert_array_equal(left.bigrams, right.bigrams)
    np.testing.assert_array_equal(left.prefix_pairs, right.prefix_pairs)


def test_partitioned_learning_is_spectral_only(data):
    train, _ = data
    with pytest.raises(ValueError, match="method='spectral'"):
        HMM(method="em").fit_partitions(_parts(train, 2))


def test_sparse_smoother_counts_from_partitions(data, monkeypatch):
    """Vocabularies too large for dense bigram tables: CSR counts per partition, merged."""
    from fastspectral.hmm import stats as HS

    train, test = data
    ref = HMM(n_states=2, max_basis=6).fit(train)
    monkeypatch.setattr(HS, "_DENSE_BIGRAMS", 0)
    model = HMM(n_states=2, max_basis=6).fit_partitions(_parts(train, 3))
    C, R = model.smoother_.counts_, ref.smoother_.counts_
    np.testing.assert_array_equal(C.toarray(), R.toarray())
    np.testing.assert_array_equal(C.indices, R.indices)
    np.testing.assert_allclose(model.log_probability(test), ref.log_probability(test),
                               rtol=1e-9)
