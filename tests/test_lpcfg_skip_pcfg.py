"""The L-PCFG parse path skips the PCFG pass when the PCFG is the coarse grammar itself
(``v=1, h=0``) and runs it on demand for the sentences whose L-PCFG total is unusable."""
import itertools

import numpy as np
import pytest

from conftest import need
from fastspectral.lpcfg import SpectralLPCFG
from fastspectral.lpcfg.latent import LatentPCFGBase
from fastspectral.trees import read_ptb


def _words(t):
    return [w for w, tag in t.pos() if tag != "-NONE-"]


@pytest.fixture(scope="module")
def wsj(shared_data):
    trees = list(itertools.islice(read_ptb(need(shared_data / "ptb" / "wsj-sample.mrg")), 460))
    return trees[:400], [_words(t) for t in trees[400:]]


@pytest.fixture(scope="module")
def same_model(wsj):
    return SpectralLPCFG(n_states=4, min_count=30, v=1, h=0).fit(wsj[0])


class _Calls:
    """Counts the scalar (PCFG) passes of ``_run`` and can zero the L-PCFG total of chosen
    sentences of each batch."""

    def __init__(self, monkeypatch, zero=()):
        self.pcfg = 0
        orig = LatentPCFGBase._run

        def run(grammar, *a, **k):
            mu, Z, st = orig(grammar, *a, **k)
            if np.all(grammar.m == 1):
                self.pcfg += 1
            else:
                Z = Z.copy()
                Z[[z for z in zero if z < Z.shape[0]]] = 0.0
            return mu, Z, st

        monkeypatch.setattr(LatentPCFGBase, "_run", staticmethod(run))


def test_same_grammar_detected(wsj, same_model):
    assert same_model._parse_tables().same
    fine = SpectralLPCFG(n_states=2, min_count=30, v=2, h=1).fit(wsj[0][:150])
    assert not fine._parse_tables().same


def test_skipped_pass_keeps_coarse_survivors(wsj, same_model, monkeypatch):
    sents = wsj[1]
    calls = _Calls(monkeypatch)
    monkeypatch.setattr(SpectralLPCFG, "skip_same_pcfg", False)
    full = same_model.parse(sents, jobs=1)
    ran = calls.pcfg
    st_full = same_model.last_parse_stats_
    monkeypatch.setattr(SpectralLPCFG, "skip_same_pcfg", True)
    calls.pcfg = 0
    skip = same_model.parse(sents, jobs=1)
    st = same_model.last_parse_stats_
    assert ran > 0
    # the L-PCFG pass gets every coarse survivor (no second pruning), the PCFG pass ran only
    # if some sentence's L-PCFG total was unusable
    assert st.items_lpcfg == st.items_pcfg == st_full.items_pcfg
    assert st_full.items_lpcfg <= st_full.items_pcfg
    assert calls.pcfg > 0 or st.fallback_pcfg + st.fallback_flat == 0
    assert calls.pcfg < ran
    assert len(skip) == len(full) == len(sents)
    assert all(t.label == "TOP" for t in skip)


def test_unusable_total_runs_the_pass_on_demand(wsj, same_model, monkeypatch):
    sents = wsj[1][:12]
    out = {}
    for skip in (False, True):
        monkeypatch.setattr(SpectralLPCFG, "skip_same_pcfg", skip)
        calls = _Calls(monkeypatch, zero=(0, 5))
        out[skip] = [str(t) for t in same_model.parse(sents, jobs=1)]
        st = same_model.last_parse_stats_
        assert calls.pcfg >= 1
        assert st.fallback_pcfg >= 2
    # both decode those sentences from the PCFG posteriors of the same pruned chart
    order = sorted(range(len(sents)), key=lambda k: -len(sents[k]))
    for r in (0, 5):
        k = order[r]
        assert out[True][k] == out[False][k]
