"""Unsupervised parsing on WSJ (Parikh, Cohen & Xing 2014, table 2 and figure 4).

Learns the ATM parser and CCM from the words and tags of the WSJ sample plus the raw sentences of
section 22 (no trees), parses section 22 (sentences 1-400: dev, used to choose the
hyperparameters; 401-1700: test, reported), and prints unlabelled F1 by maximum length for ATM
(heuristic and oracle top bracket), CCM, right-/left-branching and random trees, then the F1
at length <= 10 of CCM from random restarts (figure 4) and the timings.

    python benchmarks/bench_atm.py [--restarts 10] [--embeddings FILE] [--split test|dev]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import data_path, need  # noqa: E402

from fastspectral.eval.unlabelled import LENGTHS, evaluate_by_length  # noqa: E402
from fastspectral.trees.readers import read_treebank  # noqa: E402
from fastspectral.trees.transforms import clean  # noqa: E402
from fastspectral.unsupervised import ATMParser, CCMParser, branching_tree, random_tree  # noqa
from fastspectral.unsupervised.common import gold_top_split  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--restarts", type=int, default=10)
    ap.add_argument("--embeddings", default=None)
    ap.add_argument("--split", choices=("test", "dev"), default="test")
    a = ap.parse_args()
    try:
        sample = [clean(t) for t in read_treebank(str(need(data_path("ptb", "wsj-sample.mrg"))))]
        s22 = list(read_treebank(str(need(data_path("ptb", "wsj22.trees")))))
    except BaseException as exc:  # pytest's skip outside pytest
        print(f"shared data absent: {exc}")
        return
    gold = s22[:400] if a.split == "dev" else s22[400:]
    words = [t.leaves() for t in gold]
    tags = [[q for _, q in t.pos()] for t in gold]
    learn = sample + s22          # words and tags only
    rows = {}
    t0 = time.perf_counter()
    atm = ATMParser(embeddings=a.embeddings).fit(learn)
    t_atm = time.perf_counter() - t0
    atm.parse(words[:5], tags=tags[:5])      # compiled code loaded
    t0 = time.perf_counter()
    rows["ATM (heuristic top bracket)"] = atm.parse(words, tags=tags)
    t_parse = time.perf_counter() - t0
    rows["ATM (oracle top bracket)"] = atm.parse(words, tags=tags,
                                                 top_splits=[gold_top_split(t) for t in gold])
    t0 = time.perf_counter()
    ccm = CCMParser().fit(learn)
    t_ccm = time.perf_counter() - t0
    rows["CCM (split-uniform init)"] = ccm.parse(words, tags=tags)
    rows["right-branching"] = [branching_tree(w, t, "right") for w, t in zip(words, tags)]
    rows["left-branching"] = [branching_tree(w, t, "left") for w, t in zip(words, tags)]
    rng = np.random.default_rng(0)
    rows["random (uniform splits)"] = [random_tree(w, t, rng) for w, t in zip(words, tags)]
    head = "".join(f"{('<= ' + str(L)) if L else 'all':>8}" for L in LENGTHS)
    print(f"section 22 {a.split} ({len(gold)} sentences), unlabelled F1")
    print(f"{'':30}{head}")
    for name, pred in rows.items():
        sc = evaluate_by_length(gold, pred)
        print(f"{name:30}" + "".join(f"{s.f1:8.1f}" for s in sc))
    print(f"{'sentences':30}" + "".join(f"{s.sentences:8d}" for s in sc))
    print(f"\nCCM random restarts (init=random, seeds 1..{a.restarts}), F1 at length <= 10:")
    f1s = []
    for seed in range(1, a.restarts + 1):
        m = CCMParser(init="random", random_state=seed).fit(learn)
        f1s.append(evaluate_by_length(gold, m.parse(words, tags=tags), (10,))[0].f1)
    bins = np.arange(0, 101, 5)
    hist, _ = np.histogram(f1s, bins)
    for lo, c in zip(bins[:-1], hist):
        if c:
            print(f"  [{lo:3d}, {lo + 5:3d})  {'#' * c}  {c}")
    print(f"  min {min(f1s):.1f}  median {np.median(f1s):.1f}  max {max(f1s):.1f}; "
          f"split-uniform init: {evaluate_by_length(gold, rows['CCM (split-uniform init)'], (10,))[0].f1:.1f}")
    print(f"\nATM learning on {len(learn)} sentences: {t_atm:.1f} s (eigenwords + covariance + "
          f"distances); CCM learning: {t_ccm:.1f} s")
    print(f"ATM parsing: {len(words) / t_parse:.0f} sentences/s ({len(words)} sentences, "
          f"{t_parse:.2f} s, one thread)")


if __name__ == "__main__":
    main()
