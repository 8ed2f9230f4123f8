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

F1 counts the whole-sentence bracket (the convention of Klein & Manning's published numbers,
docs/notes/unsupervised.md); ``--no-sentence-bracket`` leaves it out.  The main table is printed a
second time under the other convention, for reference.

    python benchmarks/bench_atm.py [--restarts 10] [--embeddings FILE] [--split test|dev|sample]
        [--vectors eigenwords|brown] [--dim M] [--bandwidth GAMMA] [--learn-brown]
        [--no-sentence-bracket] [--grid '[{"rank": 2, "bandwidth": 0.7}, ...]']
        [--ccm-grid '[{"pseudo_count": 2, "distituent_pseudo_count": 8}, ...]']
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import data_path, need  # noqa: E402

from fastspectral.eval.unlabelled import LENGTHS, convention, evaluate_by_length  # noqa: E402
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
                         "sweeps of docs/notes/unsupervised.md)")
    ap.add_argument("--ccm-grid", default=None, metavar="JSON",
                    help="a JSON list of CCMParser settings: print only CCM's F1 (length "
                         "<= 10 / <= 40) for each")
    ap.add_argument("--no-sentence-bracket", dest="sentence_bracket", action="store_false",
                    help="F1 without the whole-sentence bracket (the other convention is "
                         "shown in brackets in the grids, as a second table otherwise)")
    a = ap.parse_args()
    sb = a.sentence_bracket
    kw = {k: v for k, v in (("vectors", a.vectors), ("rank", a.dim),
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
        from fastspectral.trees.corpus import read_brown_universal
        atm_learn = learn + read_brown_universal(str(need(data_path("brown", "brown-tagged.txt"))))
    def cells(pred):
        """'F1 <= 10 / <= 40' under the chosen convention, then under the other one."""
        out = []
        for conv in (sb, not sb):
            sc = evaluate_by_length(gold, pred, (10, 40), sentence_bracket=conv)
            out.append(f"{sc[0].f1:5.1f} / {sc[1].f1:5.1f}")
        return out

    other = "without" if sb else "with"
    if a.grid is not None or a.ccm_grid is not None:
        import json

        print(f"{a.split} ({len(gold)} sentences): F1 <= 10 / <= 40 ({convention(sb)}); in "
              f"brackets {other} the whole-sentence bracket")
    if a.grid is not None:
        splits = [gold_top_split(t) for t in gold]
        print("ATM: heuristic top bracket | oracle top bracket")
        for settings in json.loads(a.grid):
            t0 = clock()
            m = ATMParser(**{**kw, **settings}).fit(atm_learn)
            t = clock() - t0
            h = cells(m.parse(words, tags=tags))
            o = cells(m.parse(words, tags=tags, top_splits=splits))
            print(f"  {settings}: {h[0]} ({h[1]}) | {o[0]} ({o[1]})  (learning {t:.1f} CPU-s)",
                  flush=True)
    if a.ccm_grid is not None:
        print("CCM (learned on the sentences of <= max_length words, default 10)")
        for settings in json.loads(a.ccm_grid):
            t0 = clock()
            m = CCMParser(**settings).fit(learn)
            t = clock() - t0
            c = cells(m.parse(words, tags=tags))
            print(f"  {settings}: {c[0]} ({c[1]})  (learning {t:.1f} CPU-s)", flush=True)
    if a.grid is not None or a.ccm_grid is not None:
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
    by_length = {}                           # L -> CCM's trees learned on <= L
    t_ccm_l = 0.0
    if a.ccm_by_length:                      # the paper's protocol: learn on <= L, test on <= L
        for L in LENGTHS:
            if L is None:
                continue
            t0 = clock()
            m = CCMParser(max_length=L).fit(learn)
            t_ccm_l += clock() - t0
            by_length[L] = m.parse(words, tags=tags)
    head = "".join(f"{('<= ' + str(L)) if L else 'all':>8}" for L in LENGTHS)
    f1 = (lambda sc: sc.macro_f1) if a.sentence_f1 else (lambda sc: sc.f1)
    print(f"ATM: {atm.get_params()}")
    for conv in (sb, not sb):
        print(f"\nsection 22 {a.split} ({len(gold)} sentences), unlabelled "
              f"{'sentence-level' if a.sentence_f1 else 'corpus-level'} F1 ({convention(conv)})")
        print(f"{'':32}{head}")
        for name, pred in rows.items():
            sc = evaluate_by_length(gold, pred, sentence_bracket=conv)
            print(f"{name:32}" + "".join(f"{f1(s):8.1f}" for s in sc))
            if name.startswith("CCM") and by_length:
                cl = {L: f1(evaluate_by_length(gold, p, (L,), sentence_bracket=conv)[0])
                      for L, p in by_length.items()}
                print(f"{'CCM (learned on <= L, paper)':32}" +
                      "".join(f"{cl[L]:8.1f}" if L in cl else f"{'-':>8}" for L in LENGTHS))
        print(f"{'sentences':32}" + "".join(f"{s.sentences:8d}" for s in sc))
    print(f"\nCCM random restarts (init=random, seeds 1..{a.restarts}), F1 at length <= 10 "
          f"({convention(sb)}):")
    f1s = []
    for seed in range(1, a.restarts + 1):
        m = CCMParser(init="random", random_state=seed).fit(learn)
        f1s.append(evaluate_by_length(gold, m.parse(words, tags=tags), (10,),
                                      sentence_bracket=sb)[0].f1)
    bins = np.arange(0, 101, 5)
    hist, _ = np.histogram(f1s, bins)
    for lo, c in zip(bins[:-1], hist):
        if c:
            print(f"  [{lo:3d}, {lo + 5:3d})  {'#' * c}  {c}")
    base = evaluate_by_length(gold, rows["CCM (learned on <= 10)"], (10,),
                              sentence_bracket=sb)[0].f1
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
