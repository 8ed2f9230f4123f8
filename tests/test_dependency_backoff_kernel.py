"""The compiled arc / stop weights of the DET and LEX back-off models (``BackoffSHAG.weights``)
against the NumPy reference (``BackoffSHAG._weights_numpy``)."""
import dataclasses
import itertools

import numpy as np
import pytest

from fastspectral.dependency.backoff import BackoffSHAG
from fastspectral.dependency.data import Encoded, modifier_sequences
from fastspectral.dependency.inference import pair_offsets
from fastspectral.dependency.model import SHAGParser
from fastspectral.trees.conll import DepSentence, read_malttab
from conftest import data_path

WSJ = str(data_path("dep", "wsj-sample.dp"))
MODELS = [("det", "none"), ("det+f", "none"), ("det", "lex"), ("det", "lex+f"),
          ("det", "lex+fcp")]


@pytest.fixture(scope="module")
def wsj():
    sents = list(itertools.islice(read_malttab(WSJ), 360))
    # unseen words, an unseen tag, a one-word sentence, punctuation / coordination (fcp states)
    extra = [DepSentence(words=["Zorblax", "quuxed", "the", "flimflam", "and", "it", "."],
                         xpos=["NNP", "VBD", "DT", "NN", "CC", "XYZZY", "."],
                         heads=[2, 0, 4, 2, 2, 2, 2]),
             DepSentence(words=["Yes"], xpos=["UH"], heads=[0]),
             DepSentence(words=["Blorf"], xpos=["NN"], heads=[0])]
    return sents[:300], sents[300:] + extra


@pytest.fixture(scope="module", params=MODELS, ids=["-".join(m) for m in MODELS])
def fitted(request, wsj):
    train, test = wsj
    model, lexical = request.param
    p = SHAGParser(method=model, lexical=lexical).fit(train)
    return p, p.encode(test, with_heads=False)


def _same(det, enc, power):
    pair_off = pair_offsets(enc)
    lw, ls = det.weights(enc, pair_off, power)
    rw, rs = det._weights_numpy(enc, pair_off, power)
    assert lw.shape == rw.shape and ls.shape == rs.shape
    np.testing.assert_allclose(lw, rw, rtol=1e-12, atol=0)
    np.testing.assert_allclose(ls, rs, rtol=1e-12, atol=0)
    return lw, ls, rw, rs


@pytest.mark.parametrize("power", [1.0, 0.5, 0.7])
def test_kernel_matches_numpy(fitted, power):
    p, enc = fitted
    det = p.det_
    lw, ls, rw, rs = _same(det, enc, power)
    assert det._tables is not None                      # the compiled path ran
    if power in (1.0, 0.5):                             # same operations: same bits
        assert np.array_equal(lw, rw) and np.array_equal(ls, rs)
    # the held-out batch has unknown words, an unseen tag and one-word sentences
    assert (enc.wid == det.n_words).any() or not det.lexical
    assert (np.diff(enc.tok_off) == 2).sum() >= 2
    # invalid arcs (into the root, self-loops) stay 0, every other weight is positive
    K = det.K
    for b in (0, len(enc.tok_off) - 2):
        n1 = int(enc.tok_off[b + 1] - enc.tok_off[b])
        sq = lw[pair_offsets(enc)[b] * K:pair_offsets(enc)[b + 1] * K].reshape(n1, n1, K)
        bad = np.zeros((n1, n1), dtype=bool)
        bad[:, 0] = True
        bad[np.arange(n1), np.arange(n1)] = True
        assert (sq[bad] == 0).all() and (sq[~bad] > 0).all()
    assert (ls > 0).all()


def test_kernel_root_and_unknown_word_ids(fitted):
    """Word id -1 (no vocabulary) on words, single sentences and the one-word sentence."""
    p, enc = fitted
    det = p.det_
    wid = enc.wid.copy()
    wid = np.where((enc.hsym > 0) & (np.arange(len(wid)) % 3 == 0), -1, wid)
    _same(det, dataclasses.replace(enc, wid=wid), 1.0)
    for b in (0, len(enc.tok_off) - 3, len(enc.tok_off) - 2):
        _same(det, enc.subset([b]), 0.5)


def test_out_of_range_batches_use_the_reference(fitted):
    p, enc = fitted
    det = p.det_
    one = enc.subset([0])
    bad = dataclasses.replace(one, msym=one.msym + det.n_tags)   # not an encoder's output
    lw, ls = det.weights(bad, pair_offsets(bad))
    rw, rs = det._weights_numpy(bad, pair_offsets(bad))
    assert np.array_equal(lw, rw) and np.array_equal(ls, rs)
    empty = enc.subset([])
    lw, ls = det.weights(empty, pair_offsets(empty))
    assert lw.shape == (0,) and ls.shape == (0,)


def test_tables_follow_the_levels(wsj):
    """Refitting (new level objects) rebuilds the kernel's tables; a model read back from its
    arrays gives the same weights."""
    train, test = wsj
    p = SHAGParser(method="det", lexical="lex+f").fit(train[:150])
    enc = p.encode(test, with_heads=False)
    det = p.det_
    before = det.weights(enc, pair_offsets(enc))[0]
    enc_tr = p.encode(train, with_heads=True)
    det.fit(enc_tr, modifier_sequences(enc_tr))
    after, _, ref, _ = _same(det, enc, 1.0)
    assert not np.array_equal(before, after)
    meta, arrays = det.to_arrays("det_")
    back = BackoffSHAG.from_arrays(meta, arrays, "det_")
    assert np.array_equal(back.weights(enc, pair_offsets(enc))[0], ref)


def test_encoded_dtypes_do_not_matter(fitted):
    p, enc = fitted
    det = p.det_
    enc32 = Encoded(enc.tok_off.astype(np.int32), enc.hsym.astype(np.int16), enc.msym,
                    enc.cls, enc.wid.astype(np.int64), enc.heads)
    lw, ls = det.weights(enc32, pair_offsets(enc))
    rw, rs = det._weights_numpy(enc, pair_offsets(enc))
    assert np.array_equal(lw, rw) and np.array_equal(ls, rs)
