"""Model files: large arrays are memory-mapped on load (no copy) and give identical models."""
from __future__ import annotations

import numpy as np
import pytest

import fastspectral
from fastspectral import models
from fastspectral.errors import ModelFileError
from fastspectral.io import modelfile


@pytest.mark.parametrize("kind", ["pcfg", "spectral-lpcfg"])
def test_memory_mapped_arrays_give_the_same_parses(kind, tmp_path, monkeypatch, synthetic_grammar):
    g = synthetic_grammar
    trees, test = g.sample(300, seed=1), [t.leaves() for t in g.sample(30, seed=2)]
    cls = models.model_class(kind)
    model = cls(n_states=2, jobs=1) if kind != "pcfg" else cls(jobs=1)
    model.fit(trees)
    model.save(tmp_path / "m.fsm")
    expected = [str(t) for t in model.parse(test)]
    monkeypatch.setattr(modelfile, "MMAP_MIN_BYTES", 0)
    _, _, arrays = modelfile.load_model_file(tmp_path / "m.fsm")
    assert any(isinstance(a, np.memmap) for a in arrays.values())
    loaded = fastspectral.load(tmp_path / "m.fsm")
    assert [str(t) for t in loaded.parse(test)] == expected


def test_truncated_mapped_array_is_refused(tmp_path, monkeypatch):
    modelfile.save_model_file(tmp_path / "m.fsm", "pcfg", {}, {"big": np.arange(1000.0)})
    data = (tmp_path / "m.fsm").read_bytes()
    (tmp_path / "cut.fsm").write_bytes(data[:len(data) // 2])
    monkeypatch.setattr(modelfile, "MMAP_MIN_BYTES", 0)
    with pytest.raises(ModelFileError):
        modelfile.load_model_file(tmp_path / "cut.fsm")


@pytest.mark.parametrize("mapped", [True, False])
def test_changed_byte_inside_an_array_is_refused(tmp_path, monkeypatch, mapped):
    """A flipped byte in a large (memory-mapped) array fails its CRC-32 like a small array's
    does in np.load, instead of loading as a silently different model."""
    values = np.arange(5000.0)
    modelfile.save_model_file(tmp_path / "m.fsm", "pcfg", {}, {"big": values})
    data = bytearray((tmp_path / "m.fsm").read_bytes())
    at = bytes(data).find(values[2500:2502].tobytes())
    assert at > 0
    data[at] ^= 0x01                      # 2500.0 becomes another finite number
    (tmp_path / "bad.fsm").write_bytes(bytes(data))
    monkeypatch.setattr(modelfile, "MMAP_MIN_BYTES", 0 if mapped else 1 << 40)
    _, _, good = modelfile.load_model_file(tmp_path / "m.fsm")
    assert isinstance(good["big"], np.memmap) == mapped
    np.testing.assert_array_equal(good["big"], values)
    with pytest.raises(ModelFileError, match="bad.fsm.*CRC"):
        modelfile.load_model_file(tmp_path / "bad.fsm")


def test_lpcfg_file_without_its_coarse_grammar_is_refused(tmp_path, synthetic_grammar):
    """An L-PCFG parse always prunes with the embedded PCFG's coarse grammar: a file whose
    ``pcfg`` meta lacks it is refused at load (it loaded, then parsing raised AttributeError)."""
    import json

    g = synthetic_grammar
    model = models.model_class("spectral-lpcfg")(n_states=2, jobs=1).fit(g.sample(200, seed=1))
    model.save(tmp_path / "m.fsm")
    kind, meta, arrays = modelfile.load_model_file(tmp_path / "m.fsm")
    meta = json.loads(json.dumps(meta))
    del meta["pcfg"]["coarse"]
    modelfile.save_model_file(tmp_path / "bad.fsm", kind, meta,
                              {k: np.asarray(v) for k, v in arrays.items()})
    with pytest.raises(ModelFileError, match="bad.fsm.*coarse"):
        fastspectral.load(tmp_path / "bad.fsm")


def test_validation_fast_paths_find_what_the_entry_checks_find():
    """check_finite / check_prob prove a good array by reductions; a bad entry is still found
    and named, and finite entries whose sum overflows are not taken for a bad one."""
    from fastspectral.errors import ModelFileError
    from fastspectral.io import validate as V

    good = np.linspace(0.0, 1.0, 1001).astype(np.float32)
    assert V.check_prob(good, "p") is good
    huge = np.array([1e308, 1e308, -1e308], dtype=np.float64)
    assert V.check_finite(huge, "h") is huge
    for bad, k in ((np.nan, 7), (np.inf, 0), (-np.inf, 1000)):
        a = good.copy()
        a[k] = bad
        with pytest.raises(ModelFileError, match=f"entry {k} is"):
            V.check_finite(a, "p")
    for bad, k in ((-0.5, 3), (1.5, 999)):
        a = good.copy()
        a[k] = bad
        with pytest.raises(ModelFileError, match=f"entry {k} is .*not a probability"):
            V.check_prob(a, "p")
