"""The spectral latent-variable dependency model (Dhillon et al. 2012): the recursion against
brute force, the observable operators against the true model, consistency of the estimates,
model files, bad input."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from fastspectral.latentdep.kernels import fragment_log_prob, tree_log_prob
from fastspectral.latentdep.model import LatentDependencyModel
from fastspectral.latentdep.synthetic import LatentDependencyGenerator
from fastspectral.trees.conll import DepSentence


def _arrays(g, sents):
    ids = g._word_ids(sents)
    off = np.zeros(len(sents) + 1, np.int64)
    off[1:] = np.cumsum([len(x) for x in ids])
    par = np.concatenate([np.asarray(s.heads, np.int64) - 1 for s in sents])
    return off, par, np.concatenate(ids)


@pytest.fixture(scope="module")
def gen():
    return LatentDependencyGenerator(n_states=3, n_words=10, seed=0)


@pytest.fixture(scope="module")
def tiny(gen):
    sents = [s for s in gen.sample(200, seed=5) if 2 <= len(s.words) <= 6]
    # and a hand-made one with left and right children at several levels, two roots
    sents.append(DepSentence(words=["w1", "w2", "w3", "w4", "w5", "w6"],
                             heads=[3, 3, 0, 3, 6, 0]))
    assert len(sents) >= 10
    return sents[:15]


def test_recursion_equals_brute_force(gen, tiny):
    """Algorithm 1 (hidden-state basis: the true model) == the sum over all state tuples."""
    brute = np.array([gen.brute_force_prob(s) for s in tiny])
    np.testing.assert_allclose(np.exp(gen.log_prob(tiny)), brute, rtol=1e-10)


@pytest.mark.parametrize("k", [None, 5])
def test_population_operators_equal_brute_force(gen, tiny, k):
    """The observable operators of section 3.3 built from the true moments reproduce p(x | y)
    (one-hot words) or its smoothed version (k-dimensional word vectors) exactly."""
    F = np.eye(gen.n_words) if k is None else \
        np.random.default_rng(1).normal(size=(gen.n_words, k))
    leaf, E_L, E_R, c1, smooth = gen.population_operators(F)
    if k is None:
        np.testing.assert_allclose(smooth, gen.O, atol=1e-12)
    logabs, sign, status = tree_log_prob(*_arrays(gen, tiny), leaf, E_L, E_R, c1)
    assert (status == 0).all()
    brute = np.array([gen.brute_force_prob(s, emission=smooth) for s in tiny])
    np.testing.assert_allclose(sign * np.exp(logabs), brute, rtol=1e-8)
    # a wrong operator (E_L and E_R swapped) does not
    logabs2, sign2, _ = tree_log_prob(*_arrays(gen, tiny), leaf, E_R, E_L, c1)
    assert not np.allclose(sign2 * np.exp(logabs2), brute, rtol=1e-3)


@pytest.mark.slow
def test_estimates_converge_to_the_true_probabilities(gen):
    """p-hat -> p(x | y): the median relative error shrinks with the sample and is small at
    30k trees (the estimator with E_L / E_R swapped, or without the Delta inverse, is far)."""
    test = gen.sample(300, seed=99)
    truth = gen.log_prob(test)
    errs = {}
    for n in (2000, 30000):
        model = LatentDependencyModel(n_states=3, embeddings="one-hot", ridge=1e-3)
        model.fit(gen.sample(n, seed=1))
        lp, sg = model.log_prob(test, return_sign=True)
        errs[n] = float(np.median(np.abs(sg * np.exp(lp - truth) - 1)))
    assert errs[30000] < 0.1, errs
    assert errs[30000] < 0.6 * errs[2000], errs
    # the same statistics with the directions exchanged are not the model
    model.E_L_, model.E_R_ = model.E_R_.copy(), model.E_L_.copy()
    lp, sg = model.log_prob(test, return_sign=True)
    assert np.median(np.abs(sg * np.exp(lp - truth) - 1)) > 3 * errs[30000]


@pytest.mark.slow
def test_low_dimensional_words_estimate_the_smoothed_model():
    """With k < V word vectors the estimate converges to the model with emission F M."""
    g = LatentDependencyGenerator(n_states=2, n_words=12, seed=3)
    F = np.random.default_rng(2).random((12, 4))     # non-negative: q(x | y) > 0
    from fastspectral.embeddings import Eigenwords

    ew = Eigenwords(dim=4, lowercase=False)
    ew.words_, ew.embeddings_ = ["<unk>"] + g.words, np.vstack([np.zeros(4), F])
    ew.counts_ = np.ones(13, np.int64)
    ew.singular_values_, ew.fit_time_ = np.ones(4), 0.0
    test = g.sample(300, seed=8)
    truth = g.log_prob(test, emission=F @ (F.T @ g.O))
    model = LatentDependencyModel(n_states=2, embeddings=ew, ridge=1e-3)
    model.fit(g.sample(30000, seed=4))
    lp, sg = model.log_prob(test, return_sign=True)
    assert np.median(np.abs(sg * np.exp(lp - truth) - 1)) < 0.1


def test_heads_override_and_kbest_broadcast(gen, tmp_path):
    model = LatentDependencyModel(n_states=3, embeddings="one-hot", ridge=1e-3)
    model.fit(gen.sample(3000, seed=2))
    s = [x for x in gen.sample(50, seed=3) if len(x.words) >= 4][0]
    n = len(s.words)
    chain = list(range(0, n))                        # word i+1 heads word i+2...: a chain
    flat = [0] + [1] * (n - 1)
    one = model.log_prob([s, s], heads=[chain, flat])
    np.testing.assert_array_equal(model.log_prob([s], heads=[chain, flat]), one)
    np.testing.assert_array_equal(model.log_prob([s]), model.log_prob([s], heads=[s.heads]))
    assert one[0] != one[1]
    # the true model tells the sampled tree from a flat one more often than not
    sents = [x for x in gen.sample(300, seed=4) if len(x.words) >= 4]
    own = model.log_prob(sents)
    flat_lp = model.log_prob(sents, heads=[[0] + [1] * (len(x.words) - 1) for x in sents])
    assert np.mean(own > flat_lp) > 0.6
    # model file round trip
    model.save(tmp_path / "m.ldep")
    import fastspectral
    back = fastspectral.load(tmp_path / "m.ldep")
    np.testing.assert_array_equal(back.log_prob(sents), own)


def _kbest_like_lists(rng, n_lists, k, max_len):
    """``(offsets, parent, groups)``: lists of ``k`` random trees over one sentence each, every
    tree a copy of the list's first with up to three heads moved (cycles and all: some
    trees of a list are not trees)."""
    off, pars, groups = [0], [], [0]
    for _ in range(n_lists):
        n = int(rng.integers(1, max_len + 1))
        perm = rng.permutation(n)
        base = np.empty(n, np.int64)
        base[perm[0]] = -1
        for q in range(1, n):
            base[perm[q]] = perm[rng.integers(q)]
        for _ in range(k):
            p = base.copy()
            for _ in range(rng.integers(0, 4)):
                p[rng.integers(n)] = rng.integers(-1, n)
            pars.append(p)
            off.append(off[-1] + n)
        groups.append(len(pars))
    return np.array(off), np.concatenate(pars), np.array(groups)


@pytest.mark.parametrize("stop", [False, True])
def test_kbest_lists_share_subtrees_with_the_same_results(stop):
    """groups= (runs of trees over one sentence: k-best lists) computes each shared partial
    subtree once; the scores equal the tree-by-tree kernel's up to rounding, the signs and
    the status codes exactly, invalid trees and zero vectors included."""
    rng = np.random.default_rng(3)
    m, V = 4, 12
    E_L, E_R = rng.normal(size=(2, m, m, m)) * 0.5
    leaf, c1 = rng.normal(size=(V, m)), rng.normal(size=m)
    leaf[0] = 0.0                                   # word 0: a zero vector, p-hat = 0
    S = rng.normal(size=(2, m, m)) if stop else None
    off, par, groups = _kbest_like_lists(rng, 40, 12, 9)
    # one word sequence per list; every third list may hold word 0
    words = np.concatenate([
        np.tile(rng.integers(1 if g % 3 else 0, V, size=off[groups[g] + 1] - off[groups[g]]),
                groups[g + 1] - groups[g]) for g in range(len(groups) - 1)]).astype(np.int64)
    ref = tree_log_prob(off, par, words, leaf, E_L, E_R, c1, S, S)
    got = tree_log_prob(off, par, words, leaf, E_L, E_R, c1, S, S, groups=groups)
    np.testing.assert_array_equal(got[2], ref[2])
    assert (ref[2] != 0).any() and (ref[2] == 0).any()
    ok = ref[2] == 0
    assert np.isneginf(ref[0][ok]).any() and np.isfinite(ref[0][ok]).any()
    np.testing.assert_array_equal(got[1][ok], ref[1][ok])
    np.testing.assert_allclose(got[0][ok], ref[0][ok], rtol=1e-12)
    # singletons and the ungrouped call are one computation
    single = np.arange(len(off), dtype=np.int64)
    np.testing.assert_array_equal(tree_log_prob(off, par, words, leaf, E_L, E_R, c1, S, S,
                                                groups=single)[0], ref[0])
    with pytest.raises(ValueError, match="groups"):
        tree_log_prob(off, par, words, leaf, E_L, E_R, c1, S, S, groups=groups[:-1])
    # the fragments: each computed once per list, the same sums in the same order
    M_L, M_R = (np.einsum("abj,rj->rab", E, leaf) for E in (E_L, E_R))
    ref = fragment_log_prob(off, par, words, leaf, M_L, M_R, c1, S, S)
    got = fragment_log_prob(off, par, words, leaf, M_L, M_R, c1, S, S, groups=groups)
    np.testing.assert_array_equal(got[2], ref[2])
    assert np.isneginf(ref[0][ok]).any() and np.isfinite(ref[0][ok]).any()
    np.testing.assert_array_equal(got[0][ok], ref[0][ok])
    np.testing.assert_array_equal(got[1][ok], ref[1][ok])


def test_tree_scores_reads_a_kbest_list_once(gen):
    """tree_scores = log_prob (with its sign) and fragment_log_prob from one reading of the
    input; a k-best list (one sentence object repeated) gives the scores of its trees one by
    one; a bad entry of a list is reported at its own index."""
    model = LatentDependencyModel(n_states=3, embeddings="one-hot", ridge=1e-3)
    model.fit(gen.sample(2000, seed=2))
    sents = [x for x in gen.sample(60, seed=8) if len(x.words) >= 5][:6]
    rng = np.random.default_rng(0)
    lists, heads = [], []
    for s in sents:
        for _ in range(8):
            h = np.asarray(s.heads, np.int64).copy()
            r = int(np.flatnonzero(h == 0)[0]) + 1          # a root word
            i = int(rng.integers(len(h)))
            if i + 1 != r:
                h[i] = r if h[i] != r else 0                # under the root, or a root
            lists.append(s)
            heads.append(h if rng.random() < 0.5 else list(h))
    lp, sign, frag, negs = model.tree_scores(lists, heads)
    one = [model.log_prob([s], heads=[h], return_sign=True) for s, h in zip(lists, heads)]
    np.testing.assert_allclose(lp, [x[0][0] for x in one], rtol=1e-12)
    np.testing.assert_array_equal(sign, [x[1][0] for x in one])
    f1, n1 = model.fragment_log_prob(lists, heads=heads)
    np.testing.assert_array_equal(frag, f1)
    np.testing.assert_array_equal(negs, n1)
    assert model.tree_scores(lists, heads, tree=False)[:2] == (None, None)
    assert model.tree_scores(lists, heads, fragments=False)[2:] == (None, None)
    with pytest.raises(TypeError, match=r"sentences\[9\]"):
        model.tree_scores(lists[:9] + [DepSentence(words=[1, 2], heads=[0, 1])] + lists[9:],
                          heads[:9] + [[0, 1]] + heads[9:])


def test_pos_tags_appended_to_the_word_vectors(gen, tmp_path):
    """tags='xpos': one-hot tags appended to the (eigen)word vectors; model files keep them."""
    import copy

    train = gen.sample(3000, seed=7)
    for s in train:
        s.xpos = ["N" if w in ("w0", "w1", "w2") else "V" for w in s.words]
    test = copy.deepcopy(train[:50])
    words_only = LatentDependencyModel(n_states=3, dim=4).fit(train)
    tagged = LatentDependencyModel(n_states=3, dim=4, tag_column="auto").fit(train)
    assert tagged.tag_column_ == "xpos" and tagged.tags_ == ["<unk>", "N", "V"]
    assert tagged.E_L_.shape == (3, 3, 3)
    lp = tagged.log_prob(test)
    assert np.isfinite(lp).all() and not np.allclose(lp, words_only.log_prob(test))
    test[0].xpos = ["??"] * len(test[0].words)            # an unknown tag: <unk>'s part
    assert np.isfinite(tagged.log_prob(test[:1])).all()
    tagged.save(tmp_path / "t.ldep")
    back = LatentDependencyModel.load(tmp_path / "t.ldep")
    np.testing.assert_array_equal(back.log_prob(test), tagged.log_prob(test))
    with pytest.raises(ValueError, match="tag_column must be"):
        LatentDependencyModel(tag_column="pos").fit(train)


def test_bad_input(gen):
    model = LatentDependencyModel(n_states=3, embeddings="one-hot", ridge=1e-3)
    model.fit(gen.sample(500, seed=2))
    s = DepSentence(words=["w1", "w2", "w3"], heads=[2, 3, 0])
    with pytest.raises(ValueError, match="cycle"):
        model.log_prob([s], heads=[[2, 1, 0]])
    with pytest.raises(ValueError, match="out of range"):
        model.log_prob([s], heads=[[4, 0, 0]])
    with pytest.raises(ValueError, match="no root"):
        model.log_prob([s], heads=[[2, 3, 1]])
    with pytest.raises(ValueError, match="entries"):
        model.log_prob([s], heads=[[0, 1]])
    with pytest.raises(TypeError):
        model.log_prob(["w1 w2"])
    with pytest.raises(ValueError, match="n_states"):
        LatentDependencyModel(n_states=0).fit([s])
    with pytest.raises(ValueError, match="exceeds"):
        LatentDependencyModel(n_states=5, embeddings="one-hot", ridge=1e-3).fit([s])
    with pytest.raises(ValueError, match=r"line 7: sentence 1 is not a dependency tree: a cycle"):
        bad = DepSentence(words=["a", "b", "c"], heads=[0, 3, 2])
        bad.line = 7
        LatentDependencyModel(n_states=1, embeddings="one-hot", ridge=1e-3).fit([bad])
    unparsed = DepSentence(words=["w1", "w2"], heads=[-1, -1])
    with pytest.raises(ValueError, match="no heads"):
        model.parse([unparsed])
    # unknown words share <unk>'s vector
    assert np.isfinite(model.log_prob([DepSentence(words=["zz", "w1"], heads=[0, 1])])).all()


def test_parse_stats_count_unknown_words_negative_and_floored_trees(gen):
    import copy

    from fastspectral.latentdep.model import LatentDepParseStats

    train = gen.sample(500, seed=2)
    model = LatentDependencyModel(n_states=3, embeddings="one-hot", ridge=1e-3).fit(train)
    test = gen.sample(20, seed=9)
    # one-hot: an unknown word's vector is zero, so a tree holding one has p-hat == 0 and
    # gets log_floor (the fallback)
    test.append(DepSentence(words=["zz", "w1", "yy"], heads=[0, 1, 2]))
    out = model.parse(test)
    _, sign = model.log_prob(test, return_sign=True)
    negative = sum("# latent_dep_sign = -1" in t.comments for t in out)
    assert negative == int((sign < 0).sum())
    assert model.last_parse_stats_ == LatentDepParseStats(
        sentences=21, words=sum(len(s.words) for s in test), unknown_words=2,
        unknown_tags=0, negative=negative, fallback=1)
    assert "# latent_dep_log_prob = -10000.000000" in out[-1].comments
    # with tags: a tag unseen in training is the unknown tag's block
    for s in train:
        s.xpos = ["N" if w in ("w0", "w1", "w2") else "V" for w in s.words]
    tagged = LatentDependencyModel(n_states=3, embeddings="one-hot", ridge=1e-3,
                                   tag_column="xpos").fit(train)
    test = copy.deepcopy(train[:5])
    test[1].xpos = ["??"] * len(test[1].words)
    tagged.parse(test)
    st = tagged.last_parse_stats_
    assert (st.sentences, st.unknown_words, st.unknown_tags, st.fallback) == \
        (5, 0, len(test[1].words), 0)


@pytest.mark.slow
def test_cli_train_parse_and_one_line_errors(gen, tmp_path):
    from fastspectral.trees.conll import write_conllu

    tb = tmp_path / "t.conllu"
    with open(tb, "w") as f:
        write_conllu(gen.sample(1500, seed=6), f)
    out = tmp_path / "m.ldep"
    run = lambda *a: subprocess.run([sys.executable, "-m", "fastspectral", *a],
                                    capture_output=True, text=True)
    r = run("train", "latent-dep", str(tb), "-o", str(out), "--states", "3", "--dim", "6")
    assert r.returncode == 0, r.stderr
    scored = tmp_path / "s.conllu"
    r = run("parse", str(out), str(tb), "-o", str(scored))
    assert r.returncode == 0, r.stderr
    assert scored.read_text().count("# latent_dep_log_prob = ") == 1500
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\ta\t_\t_\t_\t_\t0\t_\t_\t_\n2\tb\t_\t_\t_\t_\t3\t_\t_\t_\n"
                   "3\tc\t_\t_\t_\t_\t2\t_\t_\t_\n\n")
    r = run("train", "latent-dep", str(bad), "-o", str(tmp_path / "x.ldep"), "--states", "1",
            "--embeddings", "one-hot")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"{bad}:1: sentence 1 is not a dependency tree: a cycle" in r.stderr, r.stderr
    r = run("train", "latent-dep", str(tb), "-o", str(tmp_path / "y.ldep"), "--embeddings",
            str(tmp_path / "missing.ew"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_eigenwords_read_dependency_treebanks(gen, tmp_path):
    """`fastspectral train eigenwords` takes CoNLL / Malt-TAB treebanks: their words, one
    sentence each (not one line per token)."""
    from fastspectral.trees.corpus import read_words
    from fastspectral.trees.conll import write_conllu, write_malttab

    sents = gen.sample(20, seed=11)
    for name, write in (("t.conllu", write_conllu), ("t.dp", write_malttab)):
        with open(tmp_path / name, "w") as f:
            write(sents, f)
        assert read_words(tmp_path / name) == [s.words for s in sents]
