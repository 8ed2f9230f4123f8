"""PCFG baseline on real data: train on the WSJ sample, parse WSJ §22 from words only.

    python benchmarks/bench_pcfg.py [--settings 1,0 2,1 2,2 3,1] [--jobs 2] [--limit N]

For each markovisation setting (v, h; tags parent-annotated unless ``notag``) prints EVALB F1 (all sentences and length <= 40, exactly as
EVALB with COLLINS.prm computes them), tagging accuracy, training seconds (read + clean +
binarise + estimate) and parsing sentences/second with ``--jobs`` threads, as a Markdown table.
"""
from __future__ import annotations

import argparse
import os
import time

from threadpoolctl import threadpool_limits

from fastspectral import PCFG
from fastspectral.eval.evalb import evaluate
from fastspectral.trees import read_ptb

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "data", "ptb"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default=os.path.join(DATA, "wsj-sample.mrg"))
    ap.add_argument("--test", default=os.path.join(DATA, "wsj22.trees"))
    ap.add_argument("--settings", nargs="+", default=["1,0", "2,1,notag", "2,1", "2,2"],
                    help="v,h[,notag] (h may be 'inf'; 'notag' turns tag parent annotation off)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None, help="parse only the first N test trees")
    ap.add_argument("--decode", default="max-recall", choices=["max-recall", "viterbi"])
    ap.add_argument("--prune", type=float, default=1e-4, help="coarse-to-fine threshold (0: off)")
    args = ap.parse_args(argv)

    gold = list(read_ptb(args.test))[: args.limit]
    sents = [t.leaves() for t in gold]
    gold_str = [str(t) for t in gold]
    rows = []
    with threadpool_limits(1):
        for setting in args.settings:
            parts = setting.split(",")
            v, h = int(parts[0]), (None if parts[1] == "inf" else int(parts[1]))
            tag_parent = not (len(parts) > 2 and parts[2] == "notag")
            t0 = time.perf_counter()
            model = PCFG(v=v, h=h, tag_parent=tag_parent, decode=args.decode,
                         prune_threshold=args.prune or None).fit(read_ptb(args.train))
            train_s = time.perf_counter() - t0
            model.parse(sents[:20], jobs=args.jobs)  # warm caches (lexicon, compiled grammar)
            t0 = time.perf_counter()
            pred = model.parse(sents, jobs=args.jobs)
            parse_s = time.perf_counter() - t0
            r = evaluate(gold_str, [str(t) for t in pred])
            s = model.grammar_.summary()
            rows.append((setting, s["symbols"], s["binary_rules"], r.fmeasure, r.le40.fmeasure,
                         r.tagging_accuracy, train_s, len(sents) / parse_s,
                         model.last_parse_stats_.fallback))
            print(f"v,h={setting}: F1 {r.fmeasure:.2f} (<=40 {r.le40.fmeasure:.2f}) "
                  f"train {train_s:.1f}s parse {len(sents) / parse_s:.1f} sent/s; EVALB "
                  f"length-mismatch sentences {r.all.n_error}{' (aborted)' if r.aborted else ''}",
                  flush=True)
    print()
    print(f"| v,h | symbols | binary rules | F1 all | F1 <=40 | tag acc | train s | sent/s ({args.jobs} threads) | no parse |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| {} | {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.1f} | {:.1f} | {} |".format(*row))


if __name__ == "__main__":
    main()
