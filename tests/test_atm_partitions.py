"""The ATM parser's statistics protocol: the statistics of 1, 2 and 7
partitions, merged, give the model ``fit`` gives (the vectors learned from merged
co-occurrence counts, the covariances from merged sums), for eigenwords and Brown vectors."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import data_path, need
from fastspectral.base import Statistics
from fastspectral.embeddings.brown_clusters import BrownClusters
from fastspectral.embeddings.eigenwords import Eigenwords
from fastspectral.trees.readers import read_treebank
from fastspectral.trees.transforms import clean
from fastspectral.unsupervised import ATMParser
from fastspectral.unsupervised._vectors import (eigenword_cooccurrence, eigenword_vocabulary,
                                                eigenwords_from_cooccurrence)


def split(items, k):
    b = np.linspace(0, len(items), k + 1).astype(int)
    return [items[b[i]:b[i + 1]] for i in range(k)]


@pytest.fixture(scope="module")
def wsj():
    return [clean(t) for t in read_treebank(str(need(data_path("ptb", "wsj-sample.mrg"))))][:600]


def _same_model(a, b):
    assert a.tags_ == b.tags_
    assert a.lexicon_words_ == b.lexicon_words_ and a.lexicon_tags_ == b.lexicon_tags_
    assert a.n_sentences_ == b.n_sentences_
    np.testing.assert_array_equal(a.anchor_counts_, b.anchor_counts_)
    np.testing.assert_allclose(a.distances_, b.distances_, rtol=1e-9, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 2, 7])
@pytest.mark.parametrize("kw", [{}, {"vectors": "brown", "brown_clusters": 20},
                                {"center": True, "tag_map": "as-is"}])
def test_partitions_give_the_fitted_model(wsj, k, kw):
    a = ATMParser(embedding_dim=10, **kw).fit(wsj)
    b = ATMParser(embedding_dim=10, **kw).fit_partitions(split(wsj, k))
    _same_model(a, b)
    if k == 1:      # one partition: the same sums in the same order
        np.testing.assert_array_equal(a.distances_, b.distances_)
    words = [t.leaves() for t in wsj[:40]]
    tags = [[q for _, q in t.pos()] for t in wsj[:40]]
    ta, tb = a.parse(words, tags=tags), b.parse(words, tags=tags)
    # the minimal trees cost the same (a tree may differ on an exact tie of costs, whose
    # last bits differ with the summation order)
    np.testing.assert_allclose(a.last_costs_, b.last_costs_, rtol=1e-9)
    if k == 1:
        assert [str(x) for x in ta] == [str(y) for y in tb]


def test_partitions_with_given_embeddings_and_manual_passes(wsj):
    ew = Eigenwords(dim=8, min_count=1).fit([t.leaves() for t in wsj])
    a = ATMParser(embeddings=ew).fit(wsj)
    m = ATMParser(embeddings=ew)
    parts = [m.prepare_partition(p) for p in split(wsj, 3)]
    context = None
    passes = 0
    while True:
        stats = [m.sufficient_statistics(p, context) for p in parts]
        context = m.fit_statistics(sum(stats), context)
        passes += 1
        if context is None:
            break
    assert passes == 3
    _same_model(a, m)


def test_statistics_refuse_other_settings_and_passes(wsj):
    a = ATMParser(rank=2).sufficient_statistics(wsj[:10])
    b = ATMParser(rank=3).sufficient_statistics(wsj[10:20])
    with pytest.raises(ValueError, match="settings"):
        Statistics.merge_all([a, b])
    m = ATMParser(rank=2)
    with pytest.raises(ValueError, match="other ATM settings"):
        m.fit_statistics(b)
    ctx = m.fit_statistics(a)
    with pytest.raises(ValueError, match="pass 1 given for pass 2"):
        m.fit_statistics(a, ctx)
    with pytest.raises(ValueError, match="no sentences"):
        ATMParser().fit_partitions([[], []])


def test_eigenwords_from_merged_cooccurrences_equal_eigenwords_fit(wsj):
    """The eigenwords learned from partitioned counts are those of Eigenwords.fit."""
    sents = [[w.lower() for w in t.leaves()] for t in wsj]
    ref = Eigenwords(dim=10, window=2, min_count=1, random_state=0).fit(sents)
    from collections import Counter
    counts = Counter(w for s in sents for w in s)
    words, ctx = eigenword_vocabulary(counts)
    Q = sum(eigenword_cooccurrence(p, words, ctx, 2) for p in split(sents, 4))
    ew = eigenwords_from_cooccurrence(Q, words, counts, 10, 0)
    assert ew.words_ == ref.words_
    np.testing.assert_array_equal(ew.counts_, ref.counts_)
    np.testing.assert_allclose(ew.embeddings_, ref.embeddings_, atol=1e-10)


def test_brown_vectors_given_as_embeddings(wsj, tmp_path):
    bc = BrownClusters(n_clusters=16, dim=8).fit([t.leaves() for t in wsj])
    path = tmp_path / "en.brown"
    bc.save(path)
    a = ATMParser(embeddings=bc).fit(wsj[:200])
    b = ATMParser(embeddings=str(path)).fit(wsj[:200])
    np.testing.assert_array_equal(a.distances_, b.distances_)
