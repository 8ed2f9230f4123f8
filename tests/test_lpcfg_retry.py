"""The L-PCFG parse path's retries (sentences whose pruned PCFG chart has no parse are redone
with a 1000x lower coarse threshold, then unpruned) are deferred to after the first level of
every batch and run together; the parses are those of each sentence parsed alone.  Also the
compiled ``leaf_arrays`` that spreads per-entry leaf weights over a batch's items."""
import itertools

import numpy as np
import pytest

from conftest import need
from fastspectral._ext.tensor_chart import leaf_arrays
from fastspectral.lpcfg import SpectralLPCFG
from fastspectral.lpcfg.latent import LatentPCFGBase
from fastspectral.trees import read_ptb


def test_leaf_arrays_matches_numpy():
    rng = np.random.default_rng(0)
    ptr = np.array([0, 5, 5, 12, 20], dtype=np.int64)
    lex = rng.integers(-1, 6, size=20).astype(np.int64)
    w = rng.random(6)
    off = rng.integers(0, 100, size=6).astype(np.int64)
    for threads in (1, 2):
        lw, lo = leaf_arrays(ptr, lex, w, off, threads)
        at = np.flatnonzero(lex >= 0)
        want_w = np.zeros(20)
        want_w[at] = w[lex[at]]
        want_o = np.full(20, -1, dtype=np.int64)
        want_o[at] = off[lex[at]]
        assert np.array_equal(lw, want_w) and np.array_equal(lo, want_o)
    # items past the last sentence get the defaults
    lw, lo = leaf_arrays(np.array([0, 3], dtype=np.int64), lex[:5], w, off, 2)
    assert np.all(lw[3:] == 0.0) and np.all(lo[3:] == -1)
    lw, lo = leaf_arrays(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), w, off, 2)
    assert lw.shape == lo.shape == (0,)


def test_leaf_arrays_rejects_bad_input():
    ptr = np.array([0, 2, 4], dtype=np.int64)
    w, off = np.ones(3), np.zeros(3, dtype=np.int64)
    with pytest.raises(ValueError, match="entry index out of range"):
        leaf_arrays(ptr, np.array([0, 1, 3, -1], dtype=np.int64), w, off, 2)
    with pytest.raises(ValueError, match="differ in length"):
        leaf_arrays(ptr, np.array([0, 1, 2, -1], dtype=np.int64), w, off[:2], 2)
    with pytest.raises(ValueError, match="partition"):
        leaf_arrays(np.array([0, 3, 2], dtype=np.int64), np.zeros(4, dtype=np.int64), w, off)


def _words(t):
    return [w for w, tag in t.pos() if tag != "-NONE-"]


@pytest.fixture(scope="module")
def data(shared_data):
    trees = list(itertools.islice(read_ptb(need(shared_data / "ptb" / "wsj-sample.mrg")), 490))
    model = SpectralLPCFG(n_states=2, min_count=30, v=2, h=1).fit(trees[:150])
    return model, [_words(t) for t in trees[400:]]


def _record_levels(model, monkeypatch) -> list:
    """Sets a coarse threshold (0.02) high enough to prune away every fine derivation of some
    sentences and records ``(level, sentences, sentences left)`` of every first-level or retry
    call of the parse path."""
    monkeypatch.setattr(model, "coarse_threshold", 0.02)
    levels = []
    orig = LatentPCFGBase._parse_chunk

    def chunk(self, sentences, tags, ids, jobs, stats, out, level, *a, **k):
        left = orig(self, sentences, tags, ids, jobs, stats, out, level, *a, **k)
        levels.append((level, len(ids), len(left)))
        return left

    monkeypatch.setattr(LatentPCFGBase, "_parse_chunk", chunk)
    return levels


@pytest.mark.slow
def test_deferred_retries_give_the_parses_of_sentences_alone(data, monkeypatch):
    model, sents = data
    levels = _record_levels(model, monkeypatch)
    seen = []
    batch = model.parse(sents, jobs=2, chunk_size=8,
                        progress=lambda done, total: seen.append((done, total)))
    first = [(n, left) for level, n, left in levels if level == 0.02]
    second = [n for level, n, left in levels if level not in (0.02, None)]
    # the sentences left by several batches went to the second level together, in batches
    # of the full size (2 threads x 8) but the last
    assert sum(1 for _, left in first if left) > len(second) >= 1
    assert sum(second) == sum(left for _, left in first)
    assert all(n == 16 for n in second[:-1])
    assert seen[-1] == (len(sents), len(sents))
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
    alone = [model.parse([s], jobs=1)[0] for s in sents]
    assert [str(t) for t in batch] == [str(t) for t in alone]


@pytest.mark.slow
def test_retries_with_several_python_workers_give_the_same_parses(data, monkeypatch):
    # 4 threads: two Python workers, each group retrying its own sentences as it goes (4
    # threads even on a machine with fewer cores, where jobs is capped at the cores)
    from fastspectral import _threads

    cores = max(4, _threads.affinity_cores())
    monkeypatch.setattr(_threads, "affinity_cores", lambda: cores)
    model, sents = data
    levels = _record_levels(model, monkeypatch)
    four = [str(t) for t in model.parse(sents, jobs=4, chunk_size=8)]
    assert any(level not in (0.02, None) for level, _, _ in levels)
    two = [str(t) for t in model.parse(sents, jobs=2, chunk_size=8)]
    assert four == two
