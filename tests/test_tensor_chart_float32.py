"""The tensor chart's float32 copy of the rule tensors (``inside_outside_batch(T32=...)``, the
L-PCFG parse path): the products read float32, everything else stays float64."""

import numpy as np
import pytest

from fastspectral._ext.tensor_chart import inside_outside_batch
from fastspectral.lpcfg.params import LatentGrammar

from test_lpcfg_kernel import _brute, _chart, _tiny


def _run(g, n, items, w, off, table, T, T32=None):
    it = np.asarray(items, dtype=np.int32)
    return inside_outside_batch(
        g.S, g.m, g.bin_parent, g.bin_left, g.bin_right, g.toff, T, g.rl_ptr, g.rl_rule,
        g.un_parent, g.un_child, g.uoff, g.U, g.uc_ptr, g.uc_rule, g.c1, g.c1off,
        np.array([n], np.int32), np.array([0, len(it)], np.int64),
        np.ascontiguousarray(it[:, 0]), np.ascontiguousarray(it[:, 1]),
        np.ascontiguousarray(it[:, 2]), w, off, table, T32=T32)


@pytest.mark.parametrize("seed,n,keep", [(0, 3, 1.0), (1, 4, 1.0), (2, 5, 0.7), (3, 6, 0.8)])
def test_float32_tensors_match_brute_force_on_the_rounded_model(seed, n, keep):
    g, rng, _ = _tiny(seed, m=(2, 3, 2, 2, 1))
    T32 = g.T.astype(np.float32)
    # the model whose tensors are the float32 values exactly: what the products compute with
    gr = LatentGrammar(g.m, g.bin_parent, g.bin_left, g.bin_right, T32.astype(np.float64),
                       g.un_parent, g.un_child, g.U, {a: g.root(a) for a in range(g.S)
                                                      if g.root(a) is not None})
    items, leaf, w, off, table = _chart(gr, rng, n, keep)
    allowed = {tuple(int(x) for x in it) for it in items}
    Z, marg = _brute(gr, n, allowed, leaf)
    mu, Zk, st = _run(g, n, items, w, off, table, g.T, T32)
    assert st[0] == 0
    assert Zk[0] == pytest.approx(Z, rel=1e-10, abs=1e-12)
    mu64, Z64, _ = _run(gr, n, items, w, off, table, gr.T)
    np.testing.assert_allclose(mu, mu64, rtol=1e-10, atol=1e-13)
    if abs(Z) > 1e-9:
        for it, m_ in zip(items, mu):
            assert m_ == pytest.approx(marg.get(tuple(int(x) for x in it), 0.0) / Z,
                                       rel=1e-8, abs=1e-9)
    # and close to the float64 model itself (float32 rounding of the tensors only)
    muf, Zf, _ = _run(g, n, items, w, off, table, g.T)
    assert Zk[0] == pytest.approx(Zf[0], rel=1e-5, abs=1e-7)


def test_float32_copy_must_match_T():
    g, rng, _ = _tiny(5)
    items, leaf, w, off, table = _chart(g, rng, 3, 1.0)
    with pytest.raises(ValueError, match="float32"):
        _run(g, 3, items, w, off, table, g.T, g.T[:-1].astype(np.float32))


def test_model_parse_path_float32_copy(tmp_path):
    """The learners keep float64; the parse path's copy is float32, remade after a refit."""
    from fastspectral.lpcfg.spectral import SpectralLPCFG
    from fastspectral.trees import Tree

    trees = [Tree.fromstring(s) for s in (
        "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))",
        "(S (NP (DT a) (NN cat)) (VP (VBZ sleeps) (ADVP (RB now))))",
        "(S (NP (NN dog)) (VP (VBZ sees) (NP (DT the) (NN cat))))")] * 4
    m = SpectralLPCFG(n_states=2, min_count=1, random_state=0).fit(trees)
    assert m.lpcfg_.T.dtype == np.float64
    t32 = m._tensors_f32()
    assert t32.dtype == np.float32 and t32.shape == m.lpcfg_.T.shape
    assert m._tensors_f32() is t32
    np.testing.assert_allclose(t32, m.lpcfg_.T, rtol=1e-6, atol=1e-37)
    out = m.parse([["the", "dog", "sees", "a", "cat"]], jobs=1)
    assert out[0].leaves() == ["the", "dog", "sees", "a", "cat"]
    m.fit(trees[:6])
    assert m._tensors_f32() is not t32
