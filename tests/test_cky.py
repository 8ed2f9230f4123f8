"""Compiled chart kernels against brute-force enumeration of every derivation on tiny grammars."""
import math
from collections import defaultdict

import numpy as np
import pytest

from fastspectral._ext.cky import chart_marginals, parse_batch
from fastspectral.grammar.grammar import Grammar
from fastspectral.grammar.lexicon import Lexicon


def random_grammar(seed, n_nt=4, n_tags=3, unary=True, chain=False):
    """A random PCFG: nonterminals N0.., tags T0..; binary rules over all symbols; unary rules
    N -> T (and, with ``chain``, N0 -> N1 so that closures of length two appear)."""
    rng = np.random.default_rng(seed)
    symbols = [f"N{i}" for i in range(n_nt)] + [f"T{i}" for i in range(n_tags)]
    S = len(symbols)
    is_pre = np.array([s.startswith("T") for s in symbols])
    bp, bl, br, bpr = [], [], [], []
    up, uc, upr = [], [], []
    for a in range(n_nt):
        rhs = [(b, c) for b in range(S) for c in range(S) if rng.random() < 0.35]
        un = [t for t in range(n_nt, S) if unary and rng.random() < 0.5]
        if chain and a == 0:
            un.append(1)
        w = rng.random(len(rhs) + len(un)) + 0.1
        w /= w.sum()
        for (b, c), p in zip(rhs, w[:len(rhs)]):
            bp.append(a); bl.append(b); br.append(c); bpr.append(p)
        for t, p in zip(un, w[len(rhs):]):
            up.append(a); uc.append(t); upr.append(p)
    root = np.zeros(S)
    root[:n_nt] = rng.random(n_nt) + 0.1
    root /= root.sum()
    lex = Lexicon(S)
    g = Grammar(symbols, is_pre, root, np.array(bp, np.int32), np.array(bl, np.int32),
                np.array(br, np.int32), np.array(bpr), np.array(up, np.int32),
                np.array(uc, np.int32), np.array(upr), lex)
    return g


def random_lexical(g, n, seed):
    rng = np.random.default_rng(seed)
    tags = np.flatnonzero(g.is_preterminal)
    pos, sym, prob = [], [], []
    for i in range(n):
        for t in tags:
            if rng.random() < 0.8:
                pos.append(i); sym.append(t); prob.append(rng.random() * 0.5 + 0.01)
    return np.array(pos, np.int32), np.array(sym, np.int32), np.array(prob)


def enumerate_derivations(g, n, lex):
    """All derivations as (probability, items) where items are (i, j, A, layer) with layer
    'post' for the top of each cell's unary chain and 'pre' for its bottom."""
    lexd = defaultdict(dict)
    for p, s, pr in zip(*lex):
        lexd[int(p)][int(s)] = lexd[int(p)].get(int(s), 0.0) + float(pr)
    rules = defaultdict(list)
    for a, b, c, p in zip(g.bin_parent, g.bin_left, g.bin_right, g.bin_prob):
        rules[int(a)].append((int(b), int(c), float(p)))
    unary = defaultdict(list)
    for a, b, p in zip(g.un_parent, g.un_child, g.un_prob):
        unary[int(a)].append((int(b), float(p)))

    def pre(i, j, A):
        if j - i == 1:
            if A in lexd[i]:
                yield lexd[i][A], [(i, j, A, "pre")]
            return
        for k in range(i + 1, j):
            for B, C, p in rules[A]:
                for pl, il in post(i, k, B):
                    for pr_, ir in post(k, j, C):
                        yield p * pl * pr_, [(i, j, A, "pre")] + il + ir

    def chains(A, depth=0):
        yield 1.0, A
        if depth < 3:
            for B, p in unary[A]:
                for q, bottom in chains(B, depth + 1):
                    yield p * q, bottom

    def post(i, j, A):
        for q, bottom in chains(A):
            for p, items in pre(i, j, bottom):
                # replace the bottom's own 'pre' item label and add the top
                yield q * p, [(i, j, A, "post")] + items

    out = []
    for A in range(g.n_symbols):
        if g.root_prob[A] > 0:
            for p, items in post(0, n, A):
                out.append((g.root_prob[A] * p, items))
    return out


def check_marginals_against_enumeration(g, n, lex, grammar=None, **kw):
    """``chart_marginals`` (keywords ``kw``) against brute-force enumeration of every
    derivation: log Z and the pre/post-unary marginals.  Returns ``(derivations, Z)``."""
    derivs = enumerate_derivations(g, n, lex)
    Z = sum(p for p, _ in derivs)
    res = chart_marginals(grammar if grammar is not None else g.chart_grammar("sum"), n, *lex,
                          **kw)
    if Z == 0:
        assert res["logz"] == -np.inf
        return derivs, Z
    assert res["logz"] == pytest.approx(math.log(Z), rel=1e-9, abs=1e-9)
    mpre = np.zeros((n, n + 1, g.n_symbols))
    mpost = np.zeros((n, n + 1, g.n_symbols))
    for p, items in derivs:
        for i, j, A, layer in items:
            (mpost if layer == "post" else mpre)[i, j, A] += p / Z
    np.testing.assert_allclose(res["marg_post"], mpost, atol=1e-10)
    np.testing.assert_allclose(res["marg_pre"], mpre, atol=1e-10)
    return derivs, Z


@pytest.mark.slow
@pytest.mark.parametrize("seed,n,chain", [(0, 1, False), (1, 2, False), (2, 3, False),
                                          (3, 4, False), (4, 3, True), (5, 4, True)])
def test_inside_outside_marginals_match_enumeration(seed, n, chain):
    g = random_grammar(seed, chain=chain)
    lex = random_lexical(g, n, seed + 100)
    derivs, Z = check_marginals_against_enumeration(g, n, lex)
    if Z == 0:
        return
    # Viterbi: best derivation probability
    vit = chart_marginals(g.chart_grammar("max"), n, *lex, viterbi=True)
    # (with chains of two unary steps the max-product closure gives the same best score)
    assert vit["logz"] == pytest.approx(math.log(max(p for p, _ in derivs)), rel=1e-9)


def _batch(g, sentences_lex, lengths, mode, **kw):
    offs = np.zeros(len(lengths) + 1, np.int64)
    for k, lx in enumerate(sentences_lex):
        offs[k + 1] = offs[k] + len(lx[0])
    pos = np.concatenate([lx[0] for lx in sentences_lex]).astype(np.int32)
    sym = np.concatenate([lx[1] for lx in sentences_lex]).astype(np.int32)
    prob = np.concatenate([lx[2] for lx in sentences_lex])
    cg = g.chart_grammar("max" if mode == 0 else "sum")
    return parse_batch(cg, np.array(lengths, np.int64), offs, pos, sym, prob, mode, **kw)


def _tree_items(triples):
    return [tuple(int(x) for x in t) for t in triples]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_viterbi_tree_is_best_derivation(seed):
    g = random_grammar(seed + 10)
    n = 4
    lex = random_lexical(g, n, seed)
    derivs = enumerate_derivations(g, n, lex)
    if not derivs:
        pytest.skip("no derivation")
    best_p, best_items = max(derivs, key=lambda d: d[0])
    nodes, noff, counts, logz = _batch(g, [lex], [n], 0)
    assert counts[0] > 0
    assert logz[0] == pytest.approx(math.log(best_p), rel=1e-9)
    # the decoded classes (base labels == symbols here) must be the best derivation's nodes,
    # listed as post nodes plus a separate node for a unary's child
    got = _tree_items(nodes[: 3 * counts[0]].reshape(-1, 3))
    expect = []
    for k, (i, j, A, layer) in enumerate(best_items):
        if layer == "post":
            expect.append((i, j, int(g.sym_class[A])))
            nxt = best_items[k + 1]
            if nxt[2] != A:  # unary: the chain bottom is a node too
                expect.append((i, j, int(g.sym_class[nxt[2]])))
    assert got == expect


def _all_binary_trees(i, j):
    if j - i == 1:
        yield [(i, j)]
        return
    for k in range(i + 1, j):
        for left in _all_binary_trees(i, k):
            for right in _all_binary_trees(k, j):
                yield [(i, j)] + left + right


@pytest.mark.parametrize("seed", range(5))
def test_max_recall_decoding_is_optimal(seed):
    n = 4
    for shift in range(0, 1000, 100):   # the first random grammar with a parse of the sentence
        g = random_grammar(seed + 20 + shift)
        lex = random_lexical(g, n, seed + 7 + shift)
        res = chart_marginals(g.chart_grammar("sum"), n, *lex)
        if res["logz"] != -np.inf:
            break
    assert res["logz"] != -np.inf
    K = len(g.classes)
    # class scores per span from post marginals: tags count as "no unary" at length 1
    def span_score(i, j):
        scores = np.zeros(K + 1)
        for A in range(g.n_symbols):
            m = res["marg_post"][i, j, A]
            if g.is_preterminal[A]:
                scores[K] += m
            else:
                scores[g.sym_class[A]] += m
        return scores.max()
    best = max(sum(span_score(i, j) for i, j in t) for t in _all_binary_trees(0, n))
    nodes, noff, counts, logz = _batch(g, [lex], [n], 1)
    items = _tree_items(nodes[: 3 * counts[0]].reshape(-1, 3))
    spans = sorted({(i, j) for i, j, _ in items})
    assert len(spans) == 2 * n - 1  # a full binary bracketing
    assert sum(span_score(i, j) for i, j in spans) == pytest.approx(best, rel=1e-9)


def test_long_sentence_no_underflow_and_threads_agree():
    g = random_grammar(3, n_nt=5, n_tags=4)
    lens = [120, 7, 60, 33]
    # word probabilities of realistic size (~1e-4): P(sentence) is far below the double range
    lexes = [(p, s, pr * 1e-4) for p, s, pr in
             (random_lexical(g, n, 50 + k) for k, n in enumerate(lens))]
    one = _batch(g, lexes, lens, 1, n_threads=1)
    two = _batch(g, lexes, lens, 1, n_threads=2)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    assert np.all(one[2] > 0)
    assert np.all(np.isfinite(one[3]))
    assert one[3][0] < -800  # exp(-800) underflows a double: only the scaling keeps it finite
    res = chart_marginals(g.chart_grammar("sum"), 120, *lexes[0])
    # every word has exactly one preterminal: the pre-layer tag marginals sum to one
    tag_mass = res["marg_pre"][np.arange(120), np.arange(1, 121)][:, g.is_preterminal].sum(axis=1)
    np.testing.assert_allclose(tag_mass, 1.0, atol=1e-8)
    # the root cell's top marginals sum to one
    assert res["marg_post"][0, 120].sum() == pytest.approx(1.0, abs=1e-8)
