"""F1 and speed of an L-PCFG against its pruning thresholds, on a dev split.

Parses the dev sentences (default: sentences 1-400 of WSJ section 22, the dev split of
docs/notes/pivot.md) with every pair of ``prune_threshold`` x ``coarse_threshold`` given, one thread,
and prints the dev F1 (EVALB, COLLINS.prm), sentences per CPU-second and the chart items of the
PCFG and L-PCFG passes.  The thresholds are parse-time settings: one model file serves all.
``--pruner T ...`` (a model trained with ``--pruner-states``) also sweeps the threshold of its
pruning model, ``none`` parsing without it; the items of its pass are printed too.

    python experiments/bench_pruning.py MODEL.fsm --prune 1e-4 3e-4 1e-3 --coarse 1e-3 3e-3
    python experiments/bench_pruning.py PRUNED.fsm --prune 1e-4 --coarse 1e-3 \
        --pruner none 1e-3 3e-3 --first 1700
"""
from __future__ import annotations

import argparse
import itertools
import os
import resource

HERE = os.path.dirname(os.path.abspath(__file__))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--dev", default=os.path.join(HERE, "..", "..", "shared", "data", "ptb",
                                                  "wsj22.trees"))
    ap.add_argument("--first", type=int, default=400, help="dev = the first N trees")
    ap.add_argument("--prune", type=float, nargs="+", default=[1e-4, 3e-4, 1e-3, 3e-3])
    ap.add_argument("--coarse", type=float, nargs="+", default=[1e-3, 3e-3])
    ap.add_argument("--pruner", nargs="+", default=[None], metavar="T",
                    help="thresholds of the model's pruning model ('none': without it)")
    args = ap.parse_args(argv)

    import fastspectral
    from fastspectral.eval.evalb import evaluate
    from fastspectral.trees import read_ptb

    trees = list(read_ptb(args.dev))[:args.first]
    gold = [str(t) for t in trees]
    sents = [[w for w, t in tr.pos() if t != "-NONE-"] for tr in trees]
    model = fastspectral.load(args.model)
    pruner = getattr(model, "pruner_", None)
    if args.pruner != [None] and pruner is None:
        ap.error(f"--pruner: {args.model} has no pruning model (train it with --pruner-states)")
    model.parse(sents, jobs=1)                       # warm-up: lexicon cache, tables
    print("| prune / coarse / pruner threshold | dev F1 | sentences per CPU-s | "
          "PCFG / pruner / L-PCFG items |")
    print("|---|---:|---:|---:|")
    for pt, ct, rt in itertools.product(args.prune, args.coarse, args.pruner):
        model.set_params(prune_threshold=pt, coarse_threshold=ct)
        model.pruner_ = None if rt == "none" else pruner
        if rt not in (None, "none"):
            model.set_params(pruner_threshold=float(rt))
        c0 = _cpu()
        out = model.parse(sents, jobs=1)
        cpu = _cpu() - c0
        st = model.last_parse_stats_
        f1 = evaluate(gold, [str(t) for t in out]).fmeasure
        shown = "-" if rt is None and pruner is None else (rt or f"{model.pruner_threshold:g}")
        print(f"| {pt:g} / {ct:g} / {shown} | {f1:.2f} | {len(sents) / cpu:.1f} | "
              f"{st.items_pcfg:,} / {st.items_pruner:,} / {st.items_lpcfg:,} |", flush=True)


if __name__ == "__main__":
    main()
