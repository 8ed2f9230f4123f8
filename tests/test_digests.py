"""tools/digests.py, the before / after check of refactors: the array digest sees every array's
name, dtype, shape and bytes but not the JSON header, and --compare reports every difference."""
import importlib.util
import json
from pathlib import Path

import numpy as np

TOOL = Path(__file__).resolve().parent.parent / "tools" / "digests.py"


def _tool():
    spec = importlib.util.spec_from_file_location("digests_tool", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_array_digest_sees_the_arrays_not_the_header(tmp_path):
    from fastspectral.io.modelfile import save_model_file

    d = _tool()
    arrays = {"a": np.arange(6, dtype=np.int32).reshape(2, 3), "b": np.ones(2)}
    digests = []
    for k, (meta, arr) in enumerate([({"t": 1.0}, arrays), ({"t": 2.0}, arrays),
                                     ({}, dict(arrays, a=arrays["a"].reshape(3, 2))),
                                     ({}, dict(arrays, a=arrays["a"].astype(np.int64))),
                                     ({}, dict(arrays, b=np.array([1.0, 1.5])))]):
        path = tmp_path / f"m{k}.fsm"
        save_model_file(path, "pcfg", meta, arr)
        digests.append(d.array_digest(path))
    assert digests[0] == digests[1]                        # the header (fit time) is left out
    assert len(set(digests[1:])) == 4                      # shape, dtype, bytes: all seen


def test_compare_reports_each_difference(tmp_path, capsys):
    d = _tool()
    before = {"x": {"arrays": "1", "output": "2"}, "y": {"arrays": "3", "output": "4"}}
    assert d.compare(before, before) == []
    now = {"x": {"arrays": "1", "output": "9"}, "z": {"arrays": "5", "output": "6"}}
    assert d.compare(now, before) == ["x: output differ", "y: not computed now",
                                      "z: not in the earlier digests"]
    assert d.main(["--compare", str(tmp_path / "missing.json")]) == 2
    (tmp_path / "bad.json").write_text("{")
    assert d.main(["--compare", str(tmp_path / "bad.json")]) == 2
    assert "bad.json" in capsys.readouterr().err
    (tmp_path / "old.json").write_text(json.dumps({"pcfg": {"arrays": "0", "output": "0"}}))
    assert d.main(["--kinds", "pcfg", "--compare", str(tmp_path / "old.json")]) == 1
    assert "pcfg: arrays differ" in capsys.readouterr().out


def test_digests_leave_logging_as_they_found_it():
    import logging

    before = logging.root.manager.disable
    _tool().digests(["kneser-ney-bigram-lm"])
    assert logging.root.manager.disable == before
