"""Encoded input of the sequence HMM: ``fit`` (every method) and the scoring methods on an
:class:`~fastspectral.hmm.data.Encoded` (from strings, or integer ids with their vocabulary) give the
model and the numbers the strings give; the encodings are checked with one-line errors."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral.hmm import HMM
from fastspectral.hmm.data import Encoded, build_and_encode, canonical


def _toy(n=600, seed=3):
    """Sequences over mixed-case symbols with a reserved string and rare symbols."""
    rng = np.random.default_rng(seed)
    names = ["DT", "NN", "nn", "VBZ", "JJ", "<s>", "Rare", "IN", "NNS", "vbz"]
    p = np.array([20, 25, 3, 10, 8, 1, 0.3, 9, 6, 2], dtype=float)
    p /= p.sum()
    seqs = []
    for _ in range(n):
        L = int(rng.integers(0, 9))
        seqs.append([names[i] for i in rng.choice(len(names), size=L, p=p)])
    return seqs


def _assert_same_model(a, b):
    assert a.symbols_.symbols == b.symbols_.symbols
    assert a.symbols_.lowercase == b.symbols_.lowercase
    assert a.n_states_ == b.n_states_
    if a.operators_ is not None:
        for k in ("alpha1", "A", "beta", "c", "W", "fallback", "singular_values"):
            np.testing.assert_allclose(getattr(b.operators_, k), getattr(a.operators_, k),
                                       rtol=0, atol=1e-12, err_msg=k)
    else:
        for k in ("start_", "trans_", "emit_"):
            np.testing.assert_allclose(getattr(b, k), getattr(a, k), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(a.rare_weight_, b.rare_weight_)
    assert a.backoff_weight_ == b.backoff_weight_
    assert a.ridge_ == b.ridge_ and a.state_mixing_ == b.state_mixing_
    assert a.best_iteration_ == b.best_iteration_


@pytest.mark.parametrize("method,kw", [
    ("spectral", {}),
    ("spectral", {"min_count": 3, "lowercase": True, "max_vocab": 4}),
    ("spectral", {"ridge": None, "state_mixing": None, "backoff_weight": None}),
    ("em", {"iterations": 4}),
    ("em", {"iterations": 4, "min_count": 2, "lowercase": True}),
    ("spectral-em", {"iterations": 2}),
])
def test_fit_on_the_encoding_is_the_fit_on_the_strings(method, kw):
    train, dev, test = _toy(600, 3), _toy(80, 4), _toy(60, 5) + [["zzz", "DT"], []]
    a = HMM(n_states=3, method=method, max_basis=16, **kw).fit(train, dev=dev)
    enc = a.encode(train)
    b = HMM(n_states=3, method=method, max_basis=16, **kw).fit(enc, dev=a.encode(dev))
    _assert_same_model(a, b)
    c = HMM(n_states=3, method=method, max_basis=16, **kw).fit(enc, dev=dev)
    _assert_same_model(a, c)
    for model in (a, b):                       # scoring reads strings and encodings alike
        for x in (test, model.encode(test), Encoded.from_sequences(test)):
            assert model.perplexity(x) == a.perplexity(test)
            np.testing.assert_array_equal(model.log_probability(x), a.log_probability(test))


def test_encoding_equals_build_and_encode():
    seqs = _toy(300, 7)
    for lower in (False, True):
        for mc in (1, 2, 5):
            table, full, counts = build_and_encode(seqs, mc, lower, return_counts=True)
            e = Encoded.from_sequences(seqs, lowercase=lower)
            for known in (None, e.symbols):         # the general path, the in-order one
                t2, f2, c2 = canonical(e.symbols.symbols, e.offsets, e.ids, mc, lower,
                                       e.symbols.lowercase, known)
                assert t2.symbols == table.symbols and t2.lowercase == table.lowercase
                np.testing.assert_array_equal(f2.offsets, full.offsets)
                np.testing.assert_array_equal(f2.ids, full.ids)
                np.testing.assert_array_equal(c2, counts)
    # an encoding out of table order (a subset changes the counts): renumbered
    e = Encoded.from_sequences(seqs).subset(np.arange(0, 300, 7))
    sub = [seqs[i] for i in range(0, 300, 7)]
    table, full, counts = build_and_encode(sub, 2, False, return_counts=True)
    t2, f2, c2 = canonical(e.symbols.symbols, e.offsets, e.ids, 2, False, False, e.symbols)
    assert t2.symbols == table.symbols
    np.testing.assert_array_equal(f2.ids, full.ids)
    np.testing.assert_array_equal(c2, counts)
    # a case-sensitive encoding folded by a lower-casing model: the folded strings' table
    e = Encoded.from_sequences(seqs)
    table, full, counts = build_and_encode(seqs, 2, True, return_counts=True)
    t2, f2, c2 = canonical(e.symbols.symbols, e.offsets, e.ids, 2, True, False)
    assert t2.symbols == table.symbols
    np.testing.assert_array_equal(f2.ids, full.ids)
    np.testing.assert_array_equal(c2, counts)


def test_from_ids_is_the_encoding_of_the_strings():
    seqs = _toy(400, 9)
    vocab = sorted({t for s in seqs for t in s}) + ["never-used"]   # any order, an unused id
    rng = np.random.default_rng(0)
    vocab = [vocab[i] for i in rng.permutation(len(vocab))]
    index = {t: i for i, t in enumerate(vocab)}
    ids = np.array([index[t] for s in seqs for t in s], dtype=np.int32)
    lengths = [len(s) for s in seqs]
    for lower in (False, True):
        e = Encoded.from_ids(ids, lengths, vocab, lowercase=lower)
        ref = Encoded.from_sequences(seqs, lowercase=lower)
        assert e.symbols.symbols == ref.symbols.symbols
        assert "never-used" not in e.symbols.symbols
        np.testing.assert_array_equal(e.ids, ref.ids)
        np.testing.assert_array_equal(e.offsets, ref.offsets)
    # hmmlearn's [n, 1] column of ids
    e2 = Encoded.from_ids(ids[:, None], lengths, vocab)
    np.testing.assert_array_equal(e2.ids, Encoded.from_sequences(seqs).ids)
    a = HMM(n_states=3, max_basis=16).fit(seqs)
    b = HMM(n_states=3, max_basis=16).fit(e2)
    _assert_same_model(a, b)


def test_encoded_input_errors():
    seqs = _toy(50, 1)
    vocab = ["a", "b", "c"]
    with pytest.raises(ValueError, match=r"ids\[2\] = 3 is not a symbol id \(0 \.\. 2\)"):
        Encoded.from_ids([0, 1, 3], [3], vocab)
    with pytest.raises(ValueError, match=r"ids\[0\] = -1"):
        Encoded.from_ids([-1, 1], [2], vocab)
    with pytest.raises(ValueError, match="lengths sum to 4, but there are 3 ids"):
        Encoded.from_ids([0, 1, 2], [2, 2], vocab)
    with pytest.raises(ValueError, match=r"lengths\[1\] = -1 is negative"):
        Encoded.from_ids([0, 1, 2], [4, -1], vocab)
    with pytest.raises(TypeError, match="ids must be an integer array"):
        Encoded.from_ids([0.0, 1.5], [2], vocab)
    with pytest.raises(ValueError, match="ids must be 1-D"):
        Encoded.from_ids([[0, 1], [1, 2]], [4], vocab)
    with pytest.raises(ValueError, match=r"symbols\[2\] repeats symbols\[0\] \('a'\)"):
        Encoded.from_ids([0, 1], [2], ["a", "b", "a"])
    with pytest.raises(TypeError, match=r"symbols\[1\] is a int"):
        Encoded.from_ids([0, 1], [2], ["a", 7])
    model = HMM(n_states=2, max_basis=4)
    with pytest.raises(TypeError, match="an Encoded without its symbols"):
        model.fit(Encoded(np.array([0, 2]), np.array([0, 1])))
    bad = Encoded.from_sequences(seqs)
    bad.ids = bad.ids.copy()
    bad.ids[5] = 99
    with pytest.raises(ValueError, match=r"sequences\.ids\[5\] = 99 is not a symbol id"):
        model.fit(bad)
    bad = Encoded.from_sequences(seqs)
    bad.offsets = bad.offsets.copy()
    bad.offsets[-1] += 1
    with pytest.raises(ValueError, match="offsets must run from 0 to len"):
        model.fit(bad)
    with pytest.raises(ValueError, match="encoded lower-cased"):
        model.fit(Encoded.from_sequences(seqs, lowercase=True))
    fitted = model.fit(seqs)
    with pytest.raises(ValueError, match="dev: offsets decrease at sequence 1"):
        HMM(n_states=2, max_basis=4).fit(seqs, dev=Encoded(
            np.array([0, 2, 1, 3]), np.array([1, 1, 1]), fitted.symbols_))
    with pytest.raises(ValueError, match="no training sequences"):
        HMM(n_states=2).fit(Encoded.from_ids(np.zeros(0, dtype=np.int64), [], ["a"]))

