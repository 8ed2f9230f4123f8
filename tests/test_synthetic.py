"""Tests of the built-in latent-variable PCFG (fastspectral.synthetic)."""
import itertools
import math
from collections import Counter

import numpy as np
import pytest

from fastspectral.synthetic import DEFAULT_LEXICON, LatentPCFG
from fastspectral.trees import Tree

PHRASAL = ["S", "NP", "VP", "PP", "SBAR", "ADJP"]
TAGS = ["DT", "NN", "NNS", "NNP", "VB", "VBD", "VBZ", "IN", "JJ", "RB", "PRP", "CC", "TO", "MD",
        ".", ","]

TINY_RULES = [("S", "NP", "VP", 2.0, ""), ("S", "PRP", "VP", 1.0, ""), ("NP", "DT", "NN", 1.0, ""),
              ("VP", "VB", "NP", 1.0, ""), ("VP", "VB", "PRP", 1.0, "")]
TINY_LEXICON = {"DT": ["the", "a"], "NN": ["dog", "cat"], "VB": ["sees", "likes"], "PRP": ["he"]}


def tiny(n_states=2, seed=3):
    return LatentPCFG(TINY_RULES, TINY_LEXICON, {"S": 1.0}, n_states=n_states, seed=seed)


@pytest.fixture(scope="module")
def g2(synthetic_grammar):
    return synthetic_grammar


# ----------------------------------------------------------------------------------- helpers
def all_trees(g, a):
    """Every tree derivable from ``a`` in a non-recursive grammar."""
    if a in g.lexicon:
        return [Tree(a, [w]) for w in g.lexicon[a]]
    out = []
    for r in g.rules_by_lhs[a]:
        _, b, c = g.rules[r]
        for lt, rt in itertools.product(all_trees(g, b), all_trees(g, c)):
            out.append(Tree(a, [lt, rt]))
    return out


def derivations(g, words):
    """All labelled CNF trees over ``words`` the grammar allows, rooted at a start symbol."""
    n = len(words)
    chart = {}
    for i, w in enumerate(words):
        chart[i, i + 1] = {t: [Tree(t, [w])] for t in g.tags_of_word.get(w, [])}
    for span in range(2, n + 1):
        for i in range(n - span + 1):
            j = i + span
            cell = {}
            for k in range(i + 1, j):
                left, right = chart[i, k], chart[k, j]
                for (a, b, c) in g.rules:
                    if b in left and c in right:
                        for lt, rt in itertools.product(left[b], right[c]):
                            cell.setdefault(a, []).append(Tree(a, [lt, rt]))
            chart[i, j] = cell
    return [Tree("TOP", [t]) for a, ts in chart[0, n].items() if a in g.root for t in ts]


def brute_force_probability(g, tree):
    """Sum over every assignment of hidden states of the joint probability."""
    nodes = list(tree.children[0].subtrees())
    ranges = [range(g.n_states[x.label]) for x in nodes]
    pos = {id(x): i for i, x in enumerate(nodes)}
    total = 0.0
    for states in itertools.product(*ranges):
        p = g.root[nodes[0].label][states[0]]
        for x, h in zip(nodes, states):
            if x.is_preterminal():
                p *= g.emission[x.label][h, g.lexicon[x.label].index(x.children[0])]
            else:
                b, c = x.children
                r = g.rule_index[(x.label, b.label, c.label)]
                k = g.rules_by_lhs[x.label].index(r)
                p *= g.rule_prob[x.label][h, k]
                p *= g.child_states[r][h, states[pos[id(b)]], states[pos[id(c)]]]
        total += p
    return total


# ----------------------------------------------------------------------------------- structure
def test_default_grammar_inventory(g2):
    assert g2.nonterminals == PHRASAL
    assert sorted(g2.preterminals) == sorted(TAGS)
    assert 250 <= len(g2.vocabulary) <= 500
    for tag in TAGS:
        assert tag in g2.lexicon
    multi = [t for t in TAGS if len(g2.lexicon[t]) > 1]
    assert len(multi) >= 13  # "each preterminal emitting several words"
    # ambiguous words
    assert set(g2.tags_of_word["report"]) >= {"NN", "VB"}
    assert set(g2.tags_of_word["reports"]) >= {"NNS", "VBZ"}
    assert set(g2.tags_of_word["that"]) >= {"DT", "IN"}
    assert set(g2.tags_of_word["fast"]) >= {"JJ", "RB"}
    # CNF: binary rules only, no unary, preterminals never on a left-hand side
    for a, b, c in g2.rules:
        assert a in PHRASAL and b in g2.symbols and c in g2.symbols
    assert all(g2.n_states[s] == 2 for s in g2.symbols)


@pytest.mark.parametrize("n_states", [1, 2, 4, (2, 4), {"S": 3, "NP": 2, "NN": 4}])
def test_every_conditional_normalises(n_states):
    g = LatentPCFG.default(n_states=n_states, seed=5)
    assert math.isclose(sum(v.sum() for v in g.root.values()), 1.0, rel_tol=1e-12)
    for a in g.nonterminals:
        p = g.rule_prob[a]
        assert p.shape == (g.n_states[a], len(g.rules_by_lhs[a]))
        assert np.all(p > 0)
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    for r, (a, b, c) in enumerate(g.rules):
        cs = g.child_states[r]
        assert cs.shape == (g.n_states[a], g.n_states[b], g.n_states[c])
        np.testing.assert_allclose(cs.sum(axis=(1, 2)), 1.0, rtol=1e-12)
    for a in g.preterminals:
        e = g.emission[a]
        assert e.shape == (g.n_states[a], len(g.lexicon[a]))
        np.testing.assert_allclose(e.sum(axis=1), 1.0, rtol=1e-12)
    # the refined grammar is a proper PCFG as well
    ref = g.refined_rules()
    assert len(ref.symbols) == sum(g.n_states.values())
    assert math.isclose(sum(ref.root.values()), 1.0, rel_tol=1e-12)
    mass = Counter()
    for a, b, c, p in ref.binary:
        mass[a] += p
    for a, w, p in ref.emission:
        mass[a] += p
    assert set(mass) == set(ref.symbols)
    for s, m in mass.items():
        assert math.isclose(m, 1.0, rel_tol=1e-10), s
    assert "NP_0" in ref.symbols and ("NP_1" in ref.symbols) == (g.n_states["NP"] > 1)
    # subcritical: finite trees with probability one, expected length near the target
    assert g.spectral_radius() < 0.95
    assert 5.0 <= g.expected_length() <= g.target_length + 1e-6


def test_state_counts_argument():
    g = LatentPCFG.default(n_states=(2, 4), seed=1)
    counts = set(g.n_states.values())
    assert counts <= {2, 3, 4} and len(counts) > 1
    g = LatentPCFG.default(n_states={"NP": 3})
    assert g.n_states["NP"] == 3 and g.n_states["VP"] == 1
    with pytest.raises(ValueError):
        LatentPCFG.default(n_states=0)
    with pytest.raises(ValueError):
        LatentPCFG([("S", "NP", "XX", 1.0, "")], TINY_LEXICON, {"S": 1.0})
    with pytest.raises(ValueError):
        LatentPCFG(TINY_RULES, TINY_LEXICON, {"NN": 1.0})


def test_deterministic_from_seed():
    a, b = LatentPCFG.default(3, seed=7), LatentPCFG.default(3, seed=7)
    c = LatentPCFG.default(3, seed=8)
    for s in a.nonterminals:
        np.testing.assert_array_equal(a.rule_prob[s], b.rule_prob[s])
    for s in a.preterminals:
        np.testing.assert_array_equal(a.emission[s], b.emission[s])
    assert any(not np.allclose(a.emission[s], c.emission[s]) for s in a.preterminals)
    s1 = [str(t) for t in a.sample(20, seed=11)]
    assert s1 == [str(t) for t in b.sample(20, seed=11)]
    assert s1 != [str(t) for t in a.sample(20, seed=12)]
    # seed=None uses the model's own generator: reproducible per model, advancing between calls
    x1, x2 = a.sample(10), a.sample(10)
    y1 = b.sample(10)
    assert [str(t) for t in x1] == [str(t) for t in y1]
    assert [str(t) for t in x1] != [str(t) for t in x2]


def test_parameters_depend_on_hidden_states(g2):
    differs = [a for a in g2.preterminals if len(g2.lexicon[a]) > 2
               and np.abs(g2.emission[a][0] - g2.emission[a][1]).max() > 0.02]
    assert len(differs) >= 10
    rule_diff = [a for a in g2.nonterminals
                 if np.abs(g2.rule_prob[a][0] - g2.rule_prob[a][1]).max() > 0.05]
    assert len(rule_diff) >= 4
    # child states are not independent of the parent state
    dep = [r for r, cs in enumerate(g2.child_states) if np.abs(cs[0] - cs[1]).max() > 0.1]
    assert len(dep) >= len(g2.rules) // 2


# ----------------------------------------------------------------------------------- sampling
def test_samples_are_cnf_trees_with_states(g2):
    trees, states = g2.sample(400, seed=2, with_states=True)
    lengths = []
    for t, st in zip(trees, states):
        assert isinstance(t, Tree) and t.label == "TOP" and len(t.children) == 1
        assert t.children[0].label in g2.root
        spans = t.spans()
        assert len(st) == len(spans) - 1
        for x, h in zip(t.children[0].subtrees(), st):
            assert 0 <= h < g2.n_states[x.label]
            if x.is_preterminal():
                assert x.label in g2.preterminals and x.children[0] in g2.lexicon[x.label]
            else:
                assert len(x.children) == 2 and x.label in g2.nonterminals
                assert (x.label, x.children[0].label, x.children[1].label) in g2.rule_index
        n = len(t.leaves())
        assert 1 <= n <= g2.max_len
        lengths.append(n)
        assert g2.tree_probability(t) > 0
        # round trip through the bracket string
        assert Tree.fromstring(str(t)) == t
    lengths = np.array(lengths)
    assert 7 <= lengths.mean() <= 20
    assert np.mean((lengths >= 5) & (lengths <= 30)) > 0.75
    assert np.mean([t.leaves()[-1] in {".", "!", "?"} for t in trees]) > 0.6
    short = g2.sample(100, seed=3, max_len=6)
    assert max(len(t.leaves()) for t in short) <= 6


@pytest.mark.slow
def test_empirical_length_matches_expected_length():
    g = LatentPCFG.default(n_states=3, seed=2, max_len=100000, max_depth=100000)
    lengths = np.array([len(t.leaves()) for t in g.sample(4000, seed=9)])
    se = lengths.std() / math.sqrt(len(lengths))
    assert abs(lengths.mean() - g.expected_length()) < 4 * se + 0.2


@pytest.mark.slow
def test_sampled_frequencies_match_tree_probability():
    g = tiny(n_states=2)
    support = [Tree("TOP", [t]) for t in all_trees(g, "S")]
    probs = {str(t): g.tree_probability(t) for t in support}
    assert len(probs) == 50
    assert math.isclose(sum(probs.values()), 1.0, rel_tol=1e-12)
    n = 20000
    trees, states = g.sample(n, seed=123, with_states=True)
    counts = Counter(str(t) for t in trees)
    assert set(counts) <= set(probs)
    chi2, dof = 0.0, -1
    for s, p in probs.items():
        e = n * p
        if e >= 5:
            chi2 += (counts.get(s, 0) - e) ** 2 / e
            dof += 1
    assert dof >= 20
    assert chi2 < dof + 5 * math.sqrt(2 * dof), (chi2, dof)
    # a deliberately wrong model is rejected by the same statistic
    wrong = tiny(n_states=2, seed=4)
    chi2_wrong = sum((counts.get(s, 0) - n * wrong.tree_probability(s)) ** 2
                     / (n * wrong.tree_probability(s)) for s in probs)
    assert chi2_wrong > dof + 5 * math.sqrt(2 * dof)
    # the sampled root states follow pi(S, h)
    root_freq = np.bincount([st[0] for st in states], minlength=2) / n
    np.testing.assert_allclose(root_freq, g.root["S"], atol=0.015)


# ----------------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("n_states", [2, {"S": 3, "NP": 2, "VP": 3, "DT": 2, "NN": 3, "PRP": 2}])
def test_tree_probability_equals_brute_force(n_states):
    g = LatentPCFG.default(n_states=n_states, seed=4)
    trees = [t for t in g.sample(300, seed=6) if len(t.leaves()) <= 5][:6]
    assert len(trees) >= 3
    for t in trees:
        exact = brute_force_probability(g, t)
        assert exact > 0
        assert math.isclose(g.tree_probability(t), exact, rel_tol=1e-10)
        assert math.isclose(g.tree_probability(str(t)), exact, rel_tol=1e-10)
        assert math.isclose(g.tree_probability(t.children[0]), exact, rel_tol=1e-10)


def test_impossible_trees_have_probability_zero(g2):
    assert g2.tree_probability("(TOP (S (NP (DT the) (NN dog)) (VP (VBD saw) (PRP him))))") > 0
    assert g2.tree_probability("(TOP (S (NP (DT the) (NN zebra)) (VP (VBD saw) (PRP him))))") == 0
    assert g2.tree_probability("(TOP (S (NP (NN dog)) (VP (VBD saw) (PRP him))))") == 0  # unary
    assert g2.tree_probability("(TOP (S (NP (DT the) (JJ big) (NN dog)) (VP (VBD saw) "
                               "(PRP him))))") == 0  # ternary
    assert g2.tree_probability("(TOP (NP (DT the) (NN dog)))") == 0  # NP is not a root
    assert g2.tree_probability("(TOP (S (VP (VBD saw) (PRP him)) (NP (DT the) (NN dog))))") == 0
    assert g2.sentence_probability(["the", "zebra"]) == 0.0
    assert g2.sentence_probability([]) == 0.0


def test_long_trees_do_not_underflow():
    g = LatentPCFG.default(n_states=2, seed=0, max_len=400)
    long = next(t for t in g.sample(3000, seed=1, max_len=400) if len(t.leaves()) >= 120)
    lp = g.tree_log_probability(long)
    assert np.isfinite(lp) and lp < -300


def test_sentence_probability_sums_tree_probabilities(g2):
    sents = [t for t in g2.sample(400, seed=8) if 3 <= len(t.leaves()) <= 5][:3]
    sents.append(Tree.fromstring(
        "(TOP (S (PRP he) (VP (VBZ reports) (NP (DT that) (NN report)))))"))
    for t in sents:
        words = t.leaves()
        trees = derivations(g2, words)
        assert any(d == t for d in trees)
        total = sum(g2.tree_probability(d) for d in trees)
        assert total > 0
        assert math.isclose(g2.sentence_probability(words), total, rel_tol=1e-9)


def test_tiny_sentence_marginals_sum_to_one():
    g = tiny(n_states=3)
    sentences = {tuple(t.leaves()) for t in all_trees(g, "S")}
    assert math.isclose(sum(g.sentence_probability(s) for s in sentences), 1.0, rel_tol=1e-10)


def test_default_lexicon_is_english_like():
    assert "the" in DEFAULT_LEXICON["DT"] and "dog" in DEFAULT_LEXICON["NN"]
    assert DEFAULT_LEXICON["TO"] == ["to"] and DEFAULT_LEXICON[","] == [","]
