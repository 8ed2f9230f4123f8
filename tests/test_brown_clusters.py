"""Brown clusters: the compiled greedy merging against a brute-force reference, bit strings,
mergeable statistics, model files."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral.embeddings.brown_clusters import (BrownClusters, bigram_counts,
                                                    brown_vocabulary, word_counts)


def _ami(P, nl, nr, total, active):
    s = 0.0
    for c in active:
        for d in active:
            if P[c, d] > 0:
                s += P[c, d] / total * np.log(P[c, d] * total / (nl[c] * nr[d]))
    return s


def _reference(B, C):
    """The same greedy algorithm, every merge loss computed as the difference of the whole
    average mutual information (slow, obviously right)."""
    V = B.shape[0] - 1
    total = B.sum()
    nlw, nrw = np.maximum(B.sum(1), 1e-12), np.maximum(B.sum(0), 1e-12)
    K = C + 1
    members = [[] for _ in range(K)]
    active = []
    nxt = 1

    def stats():
        P = np.zeros((K, K))
        nl, nr = np.zeros(K), np.zeros(K)
        for s in active:
            nl[s] = nlw[members[s]].sum()
            nr[s] = nrw[members[s]].sum()
            for t in active:
                P[s, t] = B[np.ix_(members[s], members[t])].sum()
        return P, nl, nr

    def merge_best():
        P, nl, nr = stats()
        base = _ami(P, nl, nr, total, active)
        best, pair = np.inf, None
        for a in sorted(active):
            for b in sorted(active):
                if b <= a:
                    continue
                Q = P.copy()
                Q[a] += Q[b]
                Q[:, a] += Q[:, b]
                Q[b] = 0
                Q[:, b] = 0
                ml, mr = nl.copy(), nr.copy()
                ml[a] += ml[b]
                mr[a] += mr[b]
                loss = base - _ami(Q, ml, mr, total, [c for c in active if c != b])
                if loss < best - 1e-12:
                    best, pair = loss, (a, b)
        a, b = pair
        members[a] += members[b]
        members[b] = []
        active.remove(b)

    for s in range(min(C, V)):
        members[s] = [nxt]
        active.append(s)
        nxt += 1
    while nxt <= V:
        f = min(set(range(K)) - set(active))
        members[f] = [nxt]
        active.append(f)
        nxt += 1
        merge_best()
    return sorted(sorted(m) for m in members if m)


def _random_bigrams(V, n, seed):
    rng = np.random.default_rng(seed)
    # a few latent classes so that the clustering has structure; frequencies all distinct
    cls = rng.integers(0, 3, V + 1)
    B = np.zeros((V + 1, V + 1))
    for _ in range(n):
        a = rng.integers(1, V + 1)
        pool = np.flatnonzero(cls == (cls[a] + 1) % 3)
        pool = pool[pool > 0]
        b = rng.choice(pool) if len(pool) else a
        B[a, b] += 1 + rng.random()             # real weights: no exact ties of losses
    order = np.argsort(-(B.sum(0) + B.sum(1))[1:], kind="stable") + 1   # ids by frequency
    perm = np.concatenate([[0], order])
    return B[np.ix_(perm, perm)]


@pytest.mark.parametrize("C", [3, 5])      # (4 clusters of 3 latent classes: exact ties)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_compiled_merges_equal_the_brute_force_reference(seed, C):
    import scipy.sparse as sp

    B = _random_bigrams(14, 400, seed)
    words = ["<unk>"] + [f"w{i}" for i in range(1, 15)]
    bc = BrownClusters(n_clusters=C, min_count=1).fit_counts(words, sp.csr_matrix(B))
    got = sorted(sorted(np.flatnonzero(bc.clusters_ == c).tolist()) for c in range(C))
    assert got == _reference(B, C)
    # bit strings: distinct per cluster, a prefix code, shared inside a cluster
    bits = {c: bc.bits_[np.flatnonzero(bc.clusters_ == c)[0]] for c in range(C)}
    assert len(set(bits.values())) == C
    for a in bits.values():
        assert not any(b != a and b.startswith(a) for b in bits.values())


def test_obvious_clusters_and_vectors():
    sents = [["the", "dog", "runs"], ["a", "cat", "runs"], ["the", "cat", "sleeps"],
             ["a", "dog", "sleeps"]] * 20
    bc = BrownClusters(n_clusters=3, min_count=1).fit(sents)
    bit = dict(zip(bc.words_, bc.bits_))
    assert bit["dog"] == bit["cat"] and bit["runs"] == bit["sleeps"] and bit["the"] == bit["a"]
    assert len({bit["dog"], bit["runs"], bit["the"]}) == 3
    X = bc.transform(["dog", "cat", "zebra"])
    np.testing.assert_array_equal(X[0], X[1])
    assert not X[2].any()                         # unknown: the zero vector
    assert set(np.unique(X[0])) <= {-1.0, 0.0, 1.0}
    assert (np.abs(X[0]) > 0).sum() == len(bit["dog"])


def test_statistics_are_sums_over_partitions():
    sents = [["a", "b", "c"], ["b", "c"], ["c", "a", "b", "b"], ["d"]]
    counts = word_counts(sents[:2]) + word_counts(sents[2:])
    assert counts == word_counts(sents)
    words = brown_vocabulary(counts, 1)
    index = {w: i for i, w in enumerate(words)}
    whole = bigram_counts(sents, index)
    parts = bigram_counts(sents[:1], index) + bigram_counts(sents[1:], index)
    assert (whole != parts).nnz == 0
    assert whole.sum() == 6                      # no bigram across sentences


def test_model_file_round_trip(tmp_path):
    sents = [["x", "y", "z", "y"], ["z", "x", "y"]] * 5
    bc = BrownClusters(n_clusters=2, min_count=1, dim=3).fit(sents)
    bc.save(tmp_path / "b.brown")
    back = BrownClusters.load(tmp_path / "b.brown")
    assert back.bits_ == bc.bits_ and back.words_ == bc.words_
    np.testing.assert_array_equal(back.transform(["x", "q"]), bc.transform(["x", "q"]))
    assert bc.embeddings_.shape == (4, 3)


@pytest.mark.parametrize("kw", [{"n_clusters": 0}, {"min_count": 1.5}, {"dim": 0},
                                {"vocabulary": True}, {"features": "onehot"}])
def test_bad_parameters(kw):
    with pytest.raises(ValueError):
        BrownClusters(**kw).fit([["a", "b"]])


def test_nothing_to_cluster():
    with pytest.raises(ValueError, match="no words"):
        BrownClusters(min_count=5).fit([["a", "b"]])
    with pytest.raises(TypeError):
        BrownClusters().fit("a b c")


def test_paper_features_bits_then_one_hot_cluster():
    """Parikh, Cohen & Xing (2014, section 4.1): log2(C) path bits, then C cluster indicators."""
    sents = [["the", "dog", "runs"], ["a", "cat", "runs"], ["the", "cat", "sleeps"],
             ["a", "dog", "sleeps"]] * 20
    bc = BrownClusters(n_clusters=3, min_count=1, features="bits+clusters").fit(sents)
    X = bc.transform(["dog", "runs", "zebra"])
    assert X.shape == (3, 2 + 3)                       # ceil(log2 3) bits + 3 clusters
    onehot = X[:, 2:]
    assert onehot[0].sum() == 1 and onehot[1].sum() == 1
    assert onehot[0, bc.clusters_[bc.words_.index("dog")]] == 1
    assert not (onehot[0] == onehot[1]).all()
    assert not X[2].any()                              # unknown word: zero
    bits = BrownClusters(n_clusters=3, min_count=1).fit(sents).transform(["dog"])
    np.testing.assert_array_equal(X[0, :2], bits[0, :2])


@pytest.mark.slow
def test_cli_train_brown(tmp_path):
    """``fastspectral train brown CORPUS -o FILE`` (word/TAG lines: the tags are dropped), and a
    clean one-line error naming the file on an empty corpus (the reader of every "sequences"
    kind refuses it)."""
    import subprocess
    import sys

    import fastspectral

    corpus = tmp_path / "c.txt"
    corpus.write_text("the/at dog/nn runs/vbz ./.\na/at cat/nn sleeps/vbz ./.\n" * 10)
    out = tmp_path / "c.brown"
    r = subprocess.run([sys.executable, "-m", "fastspectral", "train", "brown", str(corpus),
                        "-o", str(out), "--n-clusters", "4", "--min-count", "1"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    bc = fastspectral.load(out)
    assert isinstance(bc, BrownClusters) and bc.n_clusters == 4
    assert "dog" in bc.words_ and "dog/nn" not in bc.words_
    assert bc.bits_[bc.words_.index("dog")] == bc.bits_[bc.words_.index("cat")]
    empty = tmp_path / "e.txt"
    empty.write_text("")
    r = subprocess.run([sys.executable, "-m", "fastspectral", "train", "brown", str(empty),
                        "-o", str(tmp_path / "e.brown")], capture_output=True, text=True)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "no words" in r.stderr
    assert str(empty) in r.stderr


def test_class_bigram_log_likelihood_is_a_distribution(tmp_path):
    sents = [["the", "dog", "runs"], ["a", "cat", "runs"], ["the", "cat", "sleeps"],
             ["a", "dog", "sleeps"], ["odd"]] * 20
    bc = BrownClusters(n_clusters=4, min_count=2).fit(sents + [["rare", "dog"]])
    # one-word sentences: the probabilities of the vocabulary (with <unk>) sum to one
    total = sum(np.exp(bc.log_likelihood([[w]])[0]) for w in bc.words_)
    assert total == pytest.approx(1.0)
    # the class transitions are learned: a seen order beats its reverse
    assert bc.log_likelihood([["the", "dog", "runs"]])[0] > \
        bc.log_likelihood([["runs", "dog", "the"]])[0]
    bc.save(tmp_path / "b.brown")
    back = BrownClusters.load(tmp_path / "b.brown")
    assert back.log_likelihood(sents[:4]) == pytest.approx(bc.log_likelihood(sents[:4]))
    assert bc.log_likelihood(sents[:4])[1] == sum(len(s) for s in sents[:4])


def test_cli_train_brown_options_and_tree_input(tmp_path, capsys, synthetic_grammar):
    """``train brown`` has its own options (described in --help) and reads PTB trees (their
    words) like ``train eigenwords``."""
    from fastspectral import cli, load

    try:
        rc = cli.main(["train", "brown", "--help"])
    except SystemExit as exc:
        rc = exc.code
    assert rc in (0, None)
    out = capsys.readouterr().out
    assert "Brown et al. 1992" in out and "--keep-case" in out and "--n-clusters C" in out
    trees = synthetic_grammar.sample(100, seed=1)
    path = tmp_path / "t.trees"
    path.write_text("".join(str(t) + "\n" for t in trees))
    assert cli.main(["train", "brown", str(path), "-o", str(tmp_path / "t.brown"),
                     "--n-clusters", "3", "--keep-case", "--features", "bits+clusters",
                     "-q"]) == 0
    bc = load(tmp_path / "t.brown")
    assert bc.lowercase is False and bc.features == "bits+clusters"
    assert set(bc.words_[1:]) <= {w for t in trees for w in t.leaves()}
    # a Brown model is not a language model for lm eval: one line naming the file, exit 2
    rc = cli.main(["lm", "eval", str(tmp_path / "t.brown"), str(path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "not a language model" in err
    assert str(tmp_path / "t.brown") in err
