"""The additive-tree-metric parser: the decoder against brute force, the learner, the CLI."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from fastspectral.trees.tree import Tree
from fastspectral.unsupervised import ATMParser
from fastspectral.unsupervised._atm_kernels import _decode, tree_cost
from fastspectral.unsupervised.common import build_tree, gold_top_split


def _all_trees(x, y):
    if y - x == 1:
        yield []
        return
    for m in range(x + 1, y):
        for left in _all_trees(x, m):
            for right in _all_trees(m, y):
                yield [(x, y, m)] + left + right


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7])
def test_decoder_finds_the_minimal_projective_tree(n):
    rng = np.random.default_rng(n)
    for _ in range(4):
        D = rng.random((n, n))
        D = D + D.T
        np.fill_diagonal(D, 0)
        costs = {tuple(t): tree_cost(D, np.array(t, np.int64)) for t in _all_trees(0, n)}
        out = np.zeros((n - 1, 3), np.int64)
        c = _decode(D, -1, out, 0)
        assert c == pytest.approx(min(costs.values()))
        assert tree_cost(D, out) == pytest.approx(c)
        for k in range(1, n):                      # the root forced by the top bracket
            out = np.zeros((n - 1, 3), np.int64)
            ck = _decode(D, k, out, 0)
            assert out[0, 2] == k
            assert ck == pytest.approx(min(v for t, v in costs.items() if t[0][2] == k))


def test_decoder_recovers_a_tree_metric():
    """Leaf distances of a tree with unit edges: the decoder's tree has the same splits."""
    # ((0 1) (2 (3 4))): path lengths in the unrooted tree
    gold = Tree.fromstring("(X (X (A a) (A b)) (X (A c) (X (A d) (A e))))")
    depth = {}

    def walk(t, path):
        if t.is_preterminal():
            depth[len(depth)] = path
            return
        for i, c in enumerate(t.children):
            walk(c, path + (i,))

    walk(gold, ())
    n = len(depth)
    D = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            a, b = depth[i], depth[j]
            k = 0
            while k < min(len(a), len(b)) and a[k] == b[k]:
                k += 1
            D[i, j] = len(a) + len(b) - 2 * k
    out = np.zeros((n - 1, 3), np.int64)
    _decode(D, 2, out, 0)
    pred = build_tree(list("abcde"), ["A"] * 5, list(range(5)), out)
    assert str(pred) == str(gold)


def test_build_tree_puts_punctuation_back():
    words = ["``", "a", "b", ",", "c", "."]
    tags = ["``", "DT", "NN", ",", "VBD", "."]
    keep = [1, 2, 4]
    t = build_tree(words, tags, keep, [(0, 3, 2), (0, 2, 1)])
    assert t.leaves() == words
    # the comma between b and c goes to the lowest node spanning both: the root
    assert str(t) == "(X (`` ``) (X (DT a) (NN b)) (, ,) (VBD c) (. .))"


def test_gold_top_split():
    t = Tree.fromstring("(TOP (S (NP (DT The) (NN dog)) (, ,) (VP (VBD barked)) (. .)))")
    assert gold_top_split(t) == 2
    assert gold_top_split(Tree.fromstring("(TOP (NN hi))")) == 0


@pytest.fixture(scope="module")
def synthetic(synthetic_grammar):
    g = synthetic_grammar
    return g.sample(300, seed=1), g.sample(40, seed=2)


def test_fit_parse_and_round_trip(synthetic, tmp_path):
    train, test = synthetic
    m = ATMParser(rank=2, embedding_dim=8).fit(train)
    assert m.distances_.shape[:2] == (len(m.tags_), len(m.tags_))
    assert np.isfinite(m.distances_).all()
    words = [t.leaves() for t in test]
    tags = [[q for _, q in t.pos()] for t in test]
    trees = m.parse(words, tags=tags)
    for t, w in zip(trees, words):
        assert t.leaves() == w
    m.save(tmp_path / "m.atm")
    again = ATMParser.load(tmp_path / "m.atm").parse(words, tags=tags)
    assert [str(t) for t in again] == [str(t) for t in trees]
    # the oracle top bracket is honoured
    splits = [gold_top_split(t) for t in test]
    from fastspectral.unsupervised.common import strip_punctuation
    for t, k, tg in zip(m.parse(words, tags=tags, top_splits=splits), splits, tags):
        keep = strip_punctuation(tg)
        if 1 <= k < len(keep):
            kids = [c for c in t.children if not c.is_preterminal() or
                    c.label not in (".", ",", ":")]
            assert len(kids[0].leaves()) >= 1


def test_bad_parameters_and_input(synthetic):
    train, _ = synthetic
    with pytest.raises(ValueError, match="rank"):
        ATMParser(rank=0).fit(train)
    with pytest.raises(ValueError, match="bandwidth"):
        ATMParser(bandwidth=-1).fit(train)
    with pytest.raises(ValueError, match="top_bracket"):
        ATMParser(top_bracket="x").fit(train)
    with pytest.raises(ValueError, match="tag 'nn-tl'"):
        ATMParser().fit([(["a"], ["nn-tl"])])
    with pytest.raises(TypeError):
        ATMParser().fit("a string")


@pytest.mark.slow
def test_cli_train_parse_eval(tmp_path, synthetic):
    train, test = synthetic
    tb = tmp_path / "train.trees"
    tb.write_text("".join(str(t) + "\n" for t in train))
    gold = tmp_path / "gold.trees"
    gold.write_text("".join(str(t) + "\n" for t in test))
    tagged = tmp_path / "in.txt"
    tagged.write_text("".join(" ".join(f"{w}/{q}" for w, q in t.pos()) + "\n" for t in test))
    model, out = tmp_path / "m.atm", tmp_path / "out.trees"

    def run(*args):
        r = subprocess.run([sys.executable, "-m", "fastspectral", *map(str, args)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return r.stdout

    run("train", "atm", tb, "-o", model, "--rank", "2", "--bandwidth", "3",
        "--embedding-dim", "8")
    run("parse", model, tagged, "-o", out)
    report = run("eval", gold, out, "--unlabelled", "--max-length", "10", "--by-length")
    assert report.rstrip().splitlines()[-1].startswith("Bracketing FMeasure = ")
    assert "<= 40" in report
    # the section-4.1 options are reachable from the command line and land in the model
    run("train", "atm", tb, "-o", model, "--kernel", "absolute", "--bandwidth", "3",
        "--top-bracket", "verb", "--vectors", "brown", "--brown-features", "bits",
        "--brown-clusters", "4", "--embedding-dim", "4")
    import fastspectral
    m = fastspectral.load(model)
    assert (m.kernel, m.top_bracket, m.vectors, m.brown_features) == \
        ("absolute", "verb", "brown", "bits")
    r = subprocess.run([sys.executable, "-m", "fastspectral", "train", "atm", str(tb), "-o",
                        str(model), "--bandwidth", "0"], capture_output=True, text=True)
    assert r.returncode == 2 and "positive number" in r.stderr and "Traceback" not in r.stderr


def test_sentences_beyond_the_decoder_limit_get_the_right_branching_tree(synthetic_grammar):
    """1,000 words: the O(n^4) decoder is not run (long sentences parse or are
    refused cleanly); the fallback is the right-branching tree, counted."""
    from fastspectral.unsupervised.atm import ATMParser, ATMParseStats
    from fastspectral.unsupervised.ccm import branching_tree

    g = synthetic_grammar
    trees = g.sample(200, seed=3)
    model = ATMParser().fit(trees)
    words = [w for t in trees for w in t.leaves()][:1000]
    tags = [p for t in trees for _, p in t.pos()][:1000]
    out = model.parse([words, words[:20]], tags=[tags, tags[:20]])
    assert model.last_parse_stats_ == ATMParseStats(sentences=2, too_long=1)
    assert model.last_parse_stats_["too_long"] == 1      # read as the dict it was before
    assert str(out[0]) == str(branching_tree(words, tags, "right"))
    assert out[1].leaves() == words[:20]


# --------------------------------------------------------------- the paper's section 4.1 pieces
def _split(tagged):
    from fastspectral.trees.universal_tags import to_universal
    from fastspectral.unsupervised.atm import paper_top_split
    from fastspectral.unsupervised.common import strip_punctuation

    tags = [t for _, t in tagged]
    return paper_top_split(tags, strip_punctuation(tags), to_universal(tags))


def test_paper_top_bracket_heuristic():
    def tagged(s):
        return [tuple(x.rsplit("/", 1)) for x in s.split()]

    # rule 2: before the first non-participle verb (the participle "based" is skipped)
    assert _split(tagged("the/DT firm/NN based/VBN here/RB said/VBD no/DT ./.")) == 4
    # rule 1: the rightmost comma with a verb before it and a noun then a verb after it
    s = tagged("prices/NNS rose/VBD ,/, and/CC stocks/NNS fell/VBD ,/, traders/NNS said/VBD ./.")
    assert _split(s) == 5
    # a comma without a verb before it is not used: rule 2
    assert _split(tagged("in/IN March/NNP ,/, the/DT firm/NN said/VBD so/RB")) == 4
    # a comma without "noun ... verb" after it: rule 2
    assert _split(tagged("he/PRP left/VBD ,/, sadly/RB for/IN us/PRP")) == 1
    # rule 3: no verb, or the verb first: the first word alone
    assert _split(tagged("the/DT big/JJ dog/NN")) == 1
    assert _split(tagged("buy/VB the/DT stock/NN")) == 1
    assert _split(tagged("hi/UH")) == -1
    # universal tags only: any verb counts, commas cannot be told from other marks
    from fastspectral.unsupervised.atm import paper_top_split
    u = ["DET", "NOUN", "VERB", "NOUN"]
    assert paper_top_split(u, [0, 1, 2, 3], u) == 2


def test_kernel_weights():
    from fastspectral.unsupervised.atm import kernel_weights

    W = kernel_weights(8, 0.4, "relative")
    assert (W[:, 0] == 0).all() and W[3, 3] == 1.0
    # kappa = |d - d'| / (d + d'): d=1, d'=2 gives 1/3, so 1 - (1/3)/0.4
    assert W[1, 2] == pytest.approx(1 - (1 / 3) / 0.4)
    assert W[1, 3] == 0.0                            # kappa 1/2 > gamma
    assert W[5, 7] == pytest.approx(1 - (2 / 12) / 0.4)
    A = kernel_weights(8, 2.0, "absolute")
    assert A[1, 2] == pytest.approx(0.5) and A[5, 7] == 0.0
    with pytest.raises(ValueError, match="kernel"):
        kernel_weights(8, 1.0, "gauss")
