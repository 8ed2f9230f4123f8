"""L-PCFG models with float32 binary tensors only (``float32_tensors()``, ``train
--float32-tensors``): half the tensor bytes in the model file, loaded (memory-mapped) without
a float64 copy, the same tensor products when parsing."""
import subprocess
import sys

import numpy as np
import pytest

import fastspectral
from fastspectral.errors import ModelFileError, NotFittedError
from fastspectral.io import modelfile
from fastspectral.synthetic import LatentPCFG

from test_lpcfg_kernel import _chart, _tiny
from test_tensor_chart_float32 import _run


def _mapped(a) -> bool:
    """``a`` is (a view of) a memory-mapped array: loading made no copy."""
    while isinstance(a, np.ndarray):
        if isinstance(a, np.memmap):
            return True
        a = a.base
    return False


@pytest.fixture(scope="module")
def sample():
    g = LatentPCFG.default(n_states=2, seed=0)
    return g.sample(300, seed=1), [t.leaves() for t in g.sample(40, seed=2)]


def _learners():
    from fastspectral.lpcfg.em import EMLPCFG
    from fastspectral.lpcfg.pivot import PivotLPCFG
    from fastspectral.lpcfg.spectral import SpectralLPCFG

    return [SpectralLPCFG(n_states=2, jobs=1), PivotLPCFG(n_states=2, jobs=1),
            EMLPCFG(n_states=2, iterations=2, jobs=1)]


@pytest.mark.parametrize("index", [0, 1, 2], ids=["spectral", "pivot", "em"])
def test_float32_model_parses_like_the_float64_model(index, sample, tmp_path, monkeypatch):
    trees, test = sample
    model = _learners()[index].fit(trees)
    model.save(tmp_path / "m64.fsm")
    expected = [str(t) for t in model.parse(test)]
    T32 = model._tensors_f32().copy()
    assert model.float32_tensors() is model
    assert model.lpcfg_.T.dtype == np.float32
    np.testing.assert_array_equal(model.lpcfg_.T, T32)
    assert model._tensors_f32() is model.lpcfg_.T          # no second copy
    assert [str(t) for t in model.parse(test)] == expected
    model.save(tmp_path / "m32.fsm")
    _, _, a64 = modelfile.load_model_file(tmp_path / "m64.fsm")
    _, _, a32 = modelfile.load_model_file(tmp_path / "m32.fsm")
    assert a32["lpcfg_T"].dtype == np.float32 and a32["lpcfg_T"].nbytes * 2 == a64["lpcfg_T"].nbytes
    monkeypatch.setattr(modelfile, "MMAP_MIN_BYTES", 0)
    loaded = fastspectral.load(tmp_path / "m32.fsm")
    assert _mapped(loaded.lpcfg_.T) and loaded.lpcfg_.T.dtype == np.float32
    np.testing.assert_array_equal(loaded.lpcfg_.T, T32)
    assert [str(t) for t in loaded.parse(test)] == expected
    # tree scores read the float32 tensors: float32 rounding only
    t = trees[0]
    assert loaded.tree_probability(t) == pytest.approx(
        fastspectral.load(tmp_path / "m64.fsm").tree_probability(t), rel=1e-5)


def test_unfitted_model_has_no_tensors_to_convert():
    with pytest.raises(NotFittedError):
        _learners()[0].float32_tensors()


def test_float32_tensors_with_a_nan_are_refused(sample, tmp_path):
    trees, _ = sample
    model = _learners()[0].fit(trees).float32_tensors()
    meta, arrays = model._model_file()
    arrays["lpcfg_T"] = arrays["lpcfg_T"].copy()
    arrays["lpcfg_T"][3] = np.nan
    modelfile.save_model_file(tmp_path / "bad.fsm", model.kind, meta, arrays)
    with pytest.raises(ModelFileError, match="lpcfg_T"):
        fastspectral.load(tmp_path / "bad.fsm")


def test_kernel_reads_float32_T_alone():
    """``T`` float32: the products and the one-state rules read it; a separate copy is refused."""
    g, rng, _ = _tiny(4, m=(2, 1, 1, 2, 1))
    items, _, w, off, table = _chart(g, rng, 5, 1.0)
    T32 = g.T.astype(np.float32)
    mu_ref, z_ref, _ = _run(g, 5, items, w, off, table, T32.astype(np.float64))
    mu, z, st = _run(g, 5, items, w, off, table, T32)
    assert st[0] == 0
    np.testing.assert_allclose(mu, mu_ref, rtol=1e-10, atol=1e-13)
    assert z[0] == pytest.approx(z_ref[0], rel=1e-10)
    mu2, _, _ = _run(g, 5, items, w, off, table, T32, T32)
    np.testing.assert_array_equal(mu2, mu)
    with pytest.raises(ValueError, match="float32"):
        _run(g, 5, items, w, off, table, T32, T32.copy())


@pytest.mark.parametrize("kind", ["spectral", pytest.param("pivot", marks=pytest.mark.slow)])
def test_train_float32_tensors_flag(kind, sample, tmp_path):
    from fastspectral.trees.ptb import write_brackets

    trees, test = sample
    train = tmp_path / "train.trees"
    write_brackets(trees, str(train))
    out = {}
    for flag in ([], ["--float32-tensors"]):
        path = tmp_path / f"{kind}{len(flag)}.fsm"
        subprocess.run([sys.executable, "-m", "fastspectral", "train", kind, str(train), "-o",
                        str(path), "--states", "2", "--jobs", "1", "-q", *flag], check=True)
        out[len(flag)] = path
    _, _, a64 = modelfile.load_model_file(out[0])
    _, _, a32 = modelfile.load_model_file(out[1])
    assert a64["lpcfg_T"].dtype == np.float64 and a32["lpcfg_T"].dtype == np.float32
    np.testing.assert_array_equal(fastspectral.load(out[0])._tensors_f32(), a32["lpcfg_T"])
    assert [str(t) for t in fastspectral.load(out[1]).parse(test)] == \
        [str(t) for t in fastspectral.load(out[0]).parse(test)]


def test_memory_mapped_lexicon_loads_the_same_tables(sample, tmp_path, monkeypatch):
    """The lexicon's tables from memory-mapped arrays: the fitted model's dicts, Python ints."""
    trees, _ = sample
    model = _learners()[0].fit(trees)
    model.save(tmp_path / "m.fsm")
    monkeypatch.setattr(modelfile, "MMAP_MIN_BYTES", 0)
    loaded = fastspectral.load(tmp_path / "m.fsm")
    for grammar in ("grammar_", "coarse_"):
        a = getattr(model.pcfg_, grammar).lexicon
        b = getattr(loaded.pcfg_, grammar).lexicon
        for table in ("tag_word", "word_count", "tag_count", "rare_tag_sig", "rare_tag"):
            got = getattr(b, table)
            assert got == getattr(a, table)
            assert all(type(v) is int for v in got.values())
            assert all(type(k) in (int, str) or type(k[0]) is int for k in got)
