"""The search of latent states per symbol group (experiments/spectral_state_search.py: a
research harness, not part of the package): groups, the trial log, resuming from it, and a
state map that ``train spectral --state-map`` reads."""
from __future__ import annotations

import json
import sys
import warnings

import pytest

from conftest import REPO, data_path, need

sys.path.insert(0, str(REPO / "experiments"))
import spectral_state_search as search  # noqa: E402


@pytest.mark.parametrize("symbol, group", [
    ("NP^S", "NP"), ("NP", "NP"), ("@NP^NP|DT", "@NP"), ("S+VP^VP", "S"),
    ("@NP+QP^NP|$", "@NP"), ("NN", "NN"), ("PRP$", "PRP$"), ("-LRB-", "-LRB-"),
    ("@S^TOP|,", "@S"), ("#", "#"),
])
def test_group_of(symbol, group):
    assert search.group_of(symbol) == group


def test_search_log_and_state_map(tmp_path, capsys):
    from fastspectral.lpcfg import SpectralLPCFG
    from fastspectral.trees import read_ptb

    train = need(data_path("ptb", "wsj-sample.mrg"))
    log, out = tmp_path / "log.jsonl", tmp_path / "map.json"
    argv = ["--train", str(train), "--dev", str(train), "--dev-limit", "30", "--states", "2",
            "--values", "3", "--groups", "2", "--log", str(log), "--out", str(out)]
    search.main(argv)
    recs = [json.loads(line) for line in log.read_text().splitlines()]
    assert recs[0]["choice"] == {} and len(recs) == 3        # the start, then one per group
    for r in recs:
        assert 0 < r["search"] <= 100 and 0 < r["check"] <= 100 and 0 < r["f1"] <= 100
    smap = json.loads(out.read_text())
    assert set(smap.values()) <= {3}
    # every symbol of the map is one of the same treebank's grammar (none would warn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = SpectralLPCFG(n_states=2, jobs=1, state_map=smap).fit(list(read_ptb(train)))
    for sym, k in smap.items():
        assert model.states_[model.pcfg_.grammar_.sym_index[sym]] <= k
    # a second run reads every trial from the log instead of parsing again
    capsys.readouterr()
    search.main(argv)
    assert len(log.read_text().splitlines()) == 3
