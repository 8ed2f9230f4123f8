"""Model files: large arrays are memory-mapped on load (no copy) and give identical models."""
from __future__ import annotations

import numpy as np
import pytest

import fastspectral
from fastspectral import models
from fastspectral.errors import ModelFileError
from fastspectral.io import modelfile
from fastspectral.synthetic import LatentPCFG


@pytest.mark.parametrize("kind", ["pcfg", "spectral-lpcfg"])
def test_memory_mapped_arrays_give_the_same_parses(kind, tmp_path, monkeypatch):
    g = LatentPCFG.default(n_states=2, seed=0)
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
