"""Unsupervised parsing on WSJ (Parikh, Cohen & Xing 2014, table 2 and figure 4).

Learns the ATM parser and CCM from the words and tags of the WSJ sample plus the raw sentences of
section 22 (no trees), parses section 22 (sentences 1-400: dev, used to choose the
hyperparameters; 401-1700: test, reported; ``--split sample``: the WSJ sample's own trees, a
second, larger dev set), and prints unlabelled F1 by maximum length for ATM (heuristic and
oracle top bracket), CCM, right-/left-branching and random trees, then the F1 at length <= 10
of CCM from random restarts (figure 4) and the timings (CPU seconds: user + system of this
process).

CCM is shown twice: learned on the sentences of at most 10 words and applied to every length,
and as in the paper (section 4.1, "choice of data"): for each maximum length L, learned on the
sentences of at most L words and evaluated at L (``--no-ccm-by-length`` skips it).

    python benchmarks/bench_atm.py [--restarts 10] [--embeddings FILE] [--split test|dev|sample]
        [--vectors eigenwords|brown] [--dim M] [--bandwidth GAMMA] [--learn-brown]
        [--grid '[{"dim": 2, "bandwidth": 0.7}, ...]']
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
    ap.add_argument("--split", choices=("test", "dev", "sample"), default="test")
    ap.add_argument("--vectors", choices=("eigenwords", "brown"), default=None)
    ap.add_argument("--dim", type=int, default=None)
    ap.add_argument("--bandwidth", type=float, default=None)
    ap.add_argument("--no-ccm-by-length", dest="ccm_by_length", action="store_false")
    ap.add_argument("--learn-brown", action="store_true",
                    help="ATM also learns from the tagged Brown corpus (tags mapped to "
                         "universal; CCM and the timings' corpus are unchanged)")
    ap.add_argument("--sentence-f1", action="store_true",
                    help="the main table shows sentence-level (macro) F1 instead of the "
                         "corpus-level F1")
    ap.add_argument("--grid", default=None, metavar="JSON",
                    help="a JSON list of ATMParser settings: print only ATM's F1 (heuristic "
                         "and oracle top bracket, length <= 10 / <= 40) for each (the dev "
                         "sweeps of docs/unsupervised.md)")
    a = ap.parse_args()
    kw = {k: v for k, v in (("vectors", a.vectors), ("dim", a.dim),
                            ("bandwidth", a.bandwidth)) if v is not None}
    if a.embeddings is not None:
        kw["embeddings"] = a.embeddings
    try:
        sample = [clean(t) for t in read_treebank(str(need(data_path("ptb", "wsj-sample.mrg"))))]
        s22 = list(read_treebank(str(need(data_path("ptb", "wsj22.trees")))))
    except BaseException as exc:  # pytest's skip outside pytest
        print(f"shared data absent: {exc}")
        return
    gold = {"dev": s22[:400], "test": s22[400:], "sample": sample}[a.split]
    words = [t.leaves() for t in gold]
    tags = [[q for _, q in t.pos()] for t in gold]
    learn = sample + s22          # words and tags only
    rows = {}
    clock = time.process_time
    ATMParser().fit(learn[:50])               # compiled code loaded (not timed)
    atm_learn = learn
    if a.learn_brown:
        from fastspectral.unsupervised.brown_tags import read_brown_tagged
        atm_learn = learn + read_brown_tagged(str(need(data_path("brown", "brown-tagged.txt"))))
    if a.grid is not None:
        import json

        splits = [gold_top_split(t) for t in gold]
        print(f"ATM on {a.split} ({len(gold)} sentences): F1 <= 10 / <= 40, heuristic top "
              "bracket | oracle top bracket")
        for settings in json.loads(a.grid):
            t0 = clock()
            m = ATMParser(**{**kw, **settings}).fit(atm_learn)
            t = clock() - t0
            cells = []
            for top in (None, splits):
                sc = evaluate_by_length(gold, m.parse(words, tags=tags, top_splits=top), (10, 40))
                cells.append(f"{sc[0].f1:5.1f} / {sc[1].f1:5.1f}")
            print(f"  {settings}: {cells[0]} | {cells[1]}  (learning {t:.1f} CPU-s)", flush=True)
        return
    t0 = clock()
    atm = ATMParser(**kw).fit(atm_learn)
    t_atm = clock() - t0
    atm.parse(words[:5], tags=tags[:5])
    t0 = clock()
    rows["ATM (heuristic top bracket)"] = atm.parse(words, tags=tags)
    t_parse = clock() - t0
    rows["ATM (oracle top bracket)"] = atm.parse(words, tags=tags,
                                                 top_splits=[gold_top_split(t) for t in gold])
    t0 = clock()
    ccm = CCMParser().fit(learn)
    t_ccm = clock() - t0
    rows["CCM (learned on <= 10)"] = ccm.parse(words, tags=tags)
    rows["right-branching"] = [branching_tree(w, t, "right") for w, t in zip(words, tags)]
    rows["left-branching"] = [branching_tree(w, t, "left") for w, t in zip(words, tags)]
    rng = np.random.default_rng(0)
    rows["random (uniform splits)"] = [random_tree(w, t, rng) for w, t in zip(words, tags)]
    by_length = {}
    t_ccm_l = 0.0
    if a.ccm_by_length:                      # the paper's protocol: learn on <= L, test on <= L
        for L in LENGTHS:
            if L is None:
                continue
            t0 = clock()
            m = CCMParser(max_length=L).fit(learn)
            t_ccm_l += clock() - t0
            sc = evaluate_by_length(gold, m.parse(words, tags=tags), (L,))[0]
            by_length[L] = sc.macro_f1 if a.sentence_f1 else sc.f1
    head = "".join(f"{('<= ' + str(L)) if L else 'all':>8}" for L in LENGTHS)
    f1 = (lambda sc: sc.macro_f1) if a.sentence_f1 else (lambda sc: sc.f1)
    print(f"section 22 {a.split} ({len(gold)} sentences), unlabelled "
          f"{'sentence-level' if a.sentence_f1 else 'corpus-level'} F1")
    print(f"ATM: {atm.get_params()}")
    print(f"{'':32}{head}")
    for name, pred in rows.items():
        sc = evaluate_by_length(gold, pred)
        print(f"{name:32}" + "".join(f"{f1(s):8.1f}" for s in sc))
        if name.startswith("CCM") and by_length:
            print(f"{'CCM (learned on <= L, paper)':32}" +
                  "".join(f"{by_length[L]:8.1f}" if L in by_length else f"{'-':>8}"
                          for L in LENGTHS))
    print(f"{'sentences':32}" + "".join(f"{s.sentences:8d}" for s in sc))
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
    base = evaluate_by_length(gold, rows["CCM (learned on <= 10)"], (10,))[0].f1
    if f1s:
        print(f"  min {min(f1s):.1f}  median {np.median(f1s):.1f}  max {max(f1s):.1f}; "
              f"split-uniform init: {base:.1f}")
    print(f"\nATM learning on {len(atm_learn)} sentences: {t_atm:.1f} CPU-s (vectors + covariance "
          f"+ distances); CCM learning: {t_ccm:.1f} CPU-s (<= 10), {t_ccm_l:.1f} CPU-s (the "
          f"six learned on <= L)")
    print(f"ATM parsing: {len(words) / max(t_parse, 1e-9):.0f} sentences per CPU-s "
          f"({len(words)} sentences, {t_parse:.2f} CPU-s, one thread)")


if __name__ == "__main__":
    main()
