"""Benchmark the Viterbi CKY kernel against NLTK's ``ViterbiParser`` on one identical grammar.

The grammar is a POS-level PCFG: the WSJ sample (``wsj-sample.mrg``) is prepared exactly as the
PCFG estimator prepares it (clean, collapse unary chains, right-factored binarisation with
horizontal order ``--h``), every word is replaced by its POS tag, and rule probabilities are the
relative frequencies of :meth:`fastspectral.grammar.grammar.Grammar.from_trees`.  The same rules
are handed to NLTK as a ``PCFG``:

* ``TOP -> X``        with ``root_prob[X]``,
* ``A -> B C``        with ``bin_prob``,
* ``A -> B``          with ``un_prob`` (after unary collapsing only ``X -> preterminal``),
* ``T -> 'T'``        with probability 1 (each preterminal emits its own tag string).

On our side the smoothed lexicon is bypassed: the kernel gets one lexical entry per token, the
preterminal whose label equals the token, with probability 1.  The "sentences" are the tag
sequences of WSJ section 22 sentences of ``--min-len``..``--max-len`` tokens.

Both parsers must agree on the best-parse probability of every sentence NLTK parses (relative
tolerance 1e-6), which shows the grammars are the same; the script also reports how many of the
best trees are identical (ties may be broken differently).

Usage::

    python benchmarks/bench_nltk.py [--h 1] [--nltk-sentences 10] [--min-len 8] [--max-len 15]

nltk is a benchmark-only dependency (``pip install nltk``); the package never imports it.
"""
from __future__ import annotations

import argparse
import inspect
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

try:
    import fastspectral  # noqa: F401
except ImportError:  # run from a checkout: python benchmarks/bench_nltk.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastspectral._ext.cky import parse_batch
from fastspectral.grammar.grammar import Grammar
from fastspectral.trees import read_ptb
from fastspectral.trees.transforms import base_label, clean, prepare

DATA = Path("/work/shared/data/ptb")
SAMPLE = DATA / "wsj-sample.mrg"
SECTION22 = DATA / "wsj22.trees"
TARGET_RATIO = 300.0
VITERBI = 0
REL_TOL = 1e-6


# ------------------------------------------------------------------------------------ grammar
def tag_level(tree):
    """Replace every word of a prepared tree by its POS tag (in place); returns the tree."""
    stack = [tree]
    while stack:
        node = stack.pop()
        kids = node.children
        if len(kids) == 1 and isinstance(kids[0], str):
            kids[0] = node.label
            continue
        stack.extend(k for k in kids if not isinstance(k, str))
    return tree


def load_grammar(path, h):
    """POS-level :class:`Grammar` estimated from the prepared, tag-level trees of ``path``."""
    trees = [tag_level(prepare(t, v=1, h=h)) for t in read_ptb(path)]
    return Grammar.from_trees(trees), len(trees)


def nltk_pcfg(g):
    """The same grammar as an ``nltk.PCFG`` with start symbol ``TOP``; returns (pcfg, counts)."""
    from nltk.grammar import PCFG, Nonterminal, ProbabilisticProduction

    if "TOP" in g.sym_index:
        raise ValueError("grammar uses TOP as an ordinary symbol; it must only be the root")
    nt = [Nonterminal(s) for s in g.symbols]
    top = Nonterminal("TOP")
    prods = []
    for a in np.nonzero(g.root_prob > 0)[0]:
        prods.append(ProbabilisticProduction(top, [nt[a]], prob=float(g.root_prob[a])))
    for a, b, c, p in zip(g.bin_parent, g.bin_left, g.bin_right, g.bin_prob):
        prods.append(ProbabilisticProduction(nt[a], [nt[b], nt[c]], prob=float(p)))
    for a, b, p in zip(g.un_parent, g.un_child, g.un_prob):
        prods.append(ProbabilisticProduction(nt[a], [nt[b]], prob=float(p)))
    for a in np.nonzero(g.is_preterminal)[0]:
        prods.append(ProbabilisticProduction(nt[a], [g.symbols[a]], prob=1.0))
    # relative frequencies: every left-hand side must sum to 1 up to rounding on both sides
    sums = defaultdict(float)
    for p in prods:
        sums[p.lhs()] += p.prob()
    worst = max(abs(s - 1.0) for s in sums.values())
    if worst > 1e-9:
        raise ValueError(f"rule probabilities of some left-hand side sum to 1 +- {worst:g}")
    counts = {"root": int((g.root_prob > 0).sum()), "binary": g.n_binary,
              "unary": int(g.un_parent.shape[0]), "lexical": int(g.is_preterminal.sum())}
    return PCFG(top, prods), counts


# ---------------------------------------------------------------------------------- sentences
def load_sentences(path, g, min_len, max_len):
    """Tag sequences of ``path`` with ``min_len <= n <= max_len`` tokens (``-NONE-`` skipped).

    Returns (sentences, n_uncovered): sentences with a tag the grammar has no preterminal for are
    left out (NLTK refuses them) and counted.
    """
    out, uncovered = [], 0
    for t in read_ptb(path):
        tags = [tag for _, tag in clean(t).pos() if tag != "-NONE-"]
        if not (min_len <= len(tags) <= max_len):
            continue
        if all(tag in g.sym_index and g.is_preterminal[g.sym_index[tag]] for tag in tags):
            out.append(tags)
        else:
            uncovered += 1
    return out, uncovered


def pack(g, sentences):
    """Lexical arrays for ``parse_batch``: one entry per token, its own tag's symbol, P = 1."""
    lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    idx = g.sym_index
    sym = np.fromiter((idx[t] for s in sentences for t in s), dtype=np.int32,
                      count=int(offsets[-1]))
    pos = np.concatenate([np.arange(n, dtype=np.int32) for n in lengths]) if len(sentences) \
        else np.zeros(0, np.int32)
    return lengths, offsets, pos, sym, np.ones(sym.shape[0])


def ours(cg, g, sentences, n_threads):
    """One batch through the Viterbi kernel: returns (nodes, node_offsets, counts, logz)."""
    lengths, offsets, pos, sym, prob = pack(g, sentences)
    return parse_batch(cg, lengths, offsets, pos, sym, prob, VITERBI, n_threads=n_threads)


def time_ours(cg, g, sentences, n_threads, min_seconds=1.0):
    """Sentences/s of :func:`ours` (packing included), repeating the batch for ``min_seconds``."""
    ours(cg, g, sentences, n_threads)  # warm-up
    done, t0 = 0, time.perf_counter()
    while True:
        ours(cg, g, sentences, n_threads)
        done += len(sentences)
        elapsed = time.perf_counter() - t0
        if elapsed >= min_seconds:
            return done / elapsed, elapsed


# --------------------------------------------------------------------------------- comparison
def nltk_spans(tree):
    """Preorder (start, end, base label) of every node of an NLTK tree below its root."""
    out = []

    def walk(t, start):
        end = start
        for c in t:
            if isinstance(c, str):
                end += 1
            else:
                out.append(None)
                k = len(out) - 1
                e = walk(c, end)
                out[k] = (end, e, base_label(c.label()))
                end = e
        return end

    walk(tree, 0)
    return out


def our_spans(g, nodes, noff, counts, r):
    """Preorder (start, end, class label) nodes of sentence ``r`` of a ``parse_batch`` result."""
    tri = nodes[noff[r]: noff[r] + 3 * counts[r]].reshape(-1, 3)
    return [(int(i), int(j), g.classes[c]) for i, j, c in tri]


def make_parser(pcfg):
    """``ViterbiParser`` without the wall-clock limit newer NLTK versions add."""
    from nltk.parse import ViterbiParser

    if "max_time" in inspect.signature(ViterbiParser.__init__).parameters:
        return ViterbiParser(pcfg, max_time=None)
    return ViterbiParser(pcfg)


def main(argv=None):
    """Run the benchmark and print the table; returns 0 when the grammars agree, else 1."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--h", type=int, default=1, help="horizontal markovisation order (default 1)")
    ap.add_argument("--nltk-sentences", type=int, default=10,
                    help="sentences parsed by NLTK (first K of section 22 in range; default 10)")
    ap.add_argument("--min-len", type=int, default=8)
    ap.add_argument("--max-len", type=int, default=15)
    ap.add_argument("--min-seconds", type=float, default=1.0,
                    help="minimum timed seconds for each of our measurements (default 1)")
    args = ap.parse_args(argv)
    import nltk

    t0 = time.perf_counter()
    g, n_trees = load_grammar(SAMPLE, args.h)
    cg = g.chart_grammar("max")
    pcfg, counts = nltk_pcfg(g)
    n_rules = sum(counts.values())
    print(f"grammar: {n_trees} trees of {SAMPLE.name}, v=1 h={args.h}, POS level: "
          f"{g.n_symbols} symbols, {n_rules} rules ({counts['root']} root, {counts['binary']} "
          f"binary, {counts['unary']} unary, {counts['lexical']} lexical) "
          f"[nltk {nltk.__version__}: {len(pcfg.productions())} productions]")

    sents, uncovered = load_sentences(SECTION22, g, args.min_len, args.max_len)
    if not sents:
        print("no sentences in the length range", file=sys.stderr)
        return 1
    K = min(args.nltk_sentences, len(sents))
    subset = sents[:K]
    print(f"sentences: {len(sents)} of {SECTION22.name} with {args.min_len}-{args.max_len} tags "
          f"({uncovered} left out: a tag unknown to the grammar); NLTK parses the first {K} "
          f"(mean length {np.mean([len(s) for s in subset]):.1f})")

    # --- NLTK
    parser = make_parser(pcfg)
    nltk_trees, nltk_time = [], 0.0
    for toks in subset:
        s0 = time.perf_counter()
        trees = list(parser.parse(toks))
        nltk_time += time.perf_counter() - s0
        nltk_trees.append(trees[0] if trees else None)
    nltk_rate = K / nltk_time

    # --- agreement on the K sentences
    nodes, noff, cnt, logz = ours(cg, g, subset, 1)
    agree = same_tree = 0
    worst = 0.0
    for r, (toks, nt) in enumerate(zip(subset, nltk_trees)):
        if nt is None or cnt[r] <= 0:
            ok = nt is None and cnt[r] == 0
            print(f"  sentence {r}: NLTK {'no parse' if nt is None else 'parse'}, ours "
                  f"{'no parse' if cnt[r] == 0 else 'parse'}{'' if ok else '  MISMATCH'}")
            agree += ok
            continue
        lp = math.log(nt.prob())
        diff = abs(lp - logz[r])
        worst = max(worst, diff)
        # relative tolerance on the probability itself: |log p1 - log p2| <= 1e-6
        ok = diff <= REL_TOL
        agree += ok
        same_tree += nltk_spans(nt) == our_spans(g, nodes, noff, cnt, r)
        if not ok:
            print(f"  sentence {r}: log P NLTK {lp:.9f} vs ours {logz[r]:.9f}  MISMATCH")
    print(f"agreement: best-parse probability equal (rel tol {REL_TOL:g}) on {agree}/{K} "
          f"sentences (max |d log P| = {worst:.2e}); identical best trees {same_tree}/{K}")

    # --- ours
    rate1, el1 = time_ours(cg, g, subset, 1, args.min_seconds)
    rate2, el2 = time_ours(cg, g, subset, 2, args.min_seconds)
    all1, _ = time_ours(cg, g, sents, 1, args.min_seconds)
    all2, _ = time_ours(cg, g, sents, 2, args.min_seconds)

    ratio = rate1 / nltk_rate
    w = 44
    print()
    print(f"{'parser (same grammar)':<{w}} {'sentences/s':>12} {'x NLTK':>9}")
    print("-" * (w + 23))
    print(f"{f'NLTK ViterbiParser ({K} sentences)':<{w}} {nltk_rate:>12.3f} {1.0:>9.1f}")
    print(f"{f'CKY Viterbi, 1 thread ({K} sentences)':<{w}} {rate1:>12.1f} {ratio:>9.1f}")
    print(f"{f'CKY Viterbi, 2 threads ({K} sentences)':<{w}} {rate2:>12.1f} "
          f"{rate2 / nltk_rate:>9.1f}")
    print(f"{f'CKY Viterbi, 1 thread (all {len(sents)})':<{w}} {all1:>12.1f} {'':>9}")
    print(f"{f'CKY Viterbi, 2 threads (all {len(sents)})':<{w}} {all2:>12.1f} {'':>9}")
    print("-" * (w + 23))
    met = ratio >= TARGET_RATIO
    print(f"CKY(1 thread) >= {TARGET_RATIO:.0f}x NLTK: {'yes' if met else 'no'} "
          f"({ratio:.0f}x)")
    print(f"total time {time.perf_counter() - t0:.1f} s")
    return 0 if agree == K else 1


if __name__ == "__main__":
    sys.exit(main())
