"""WSJ benchmark of the spectral L-PCFG against the plain PCFG (a README table).

Trains on the WSJ sample, parses section 22 from words only, scores with EVALB (COLLINS.prm
semantics, :mod:`fastspectral.eval.evalb`) and times training (CPU seconds of the fitting
process) and parsing (wall clock with ``--jobs`` threads).

    python benchmarks/bench_lpcfg.py --train ../shared/data/ptb/wsj-sample.mrg \\
        --test ../shared/data/ptb/wsj22.trees --states 8 16 24 32 --jobs 2
"""
import argparse
import os
import sys
import time

from fastspectral.eval.evalb import evaluate
from fastspectral.grammar.pcfg import PCFG
from fastspectral.lpcfg import SpectralLPCFG
from fastspectral.trees import read_ptb

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data", "ptb")


def _words(t):
    return [w for w, tag in t.pos() if tag != "-NONE-"]


def _run(name, model, train, sents, gold, jobs):
    c0, w0 = time.process_time(), time.perf_counter()
    model.fit(train)
    fit_cpu, fit_wall = time.process_time() - c0, time.perf_counter() - w0
    model.parse(sents[:20], jobs=jobs)                       # warm-up (imports, caches)
    w0 = time.perf_counter()
    out = model.parse(sents, jobs=jobs)
    dt = time.perf_counter() - w0
    res = evaluate(gold, [str(t) for t in out])
    stats = getattr(model, "last_parse_stats_", {})
    return {"name": name, "f1": res.fmeasure, "recall": res.recall, "precision": res.precision,
            "fit_cpu": fit_cpu, "fit_wall": fit_wall, "parse_s": dt, "sps": len(sents) / dt,
            "stats": stats, "evalb_errors": res.all.n_error, "aborted": res.aborted}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", default=os.path.join(DATA, "wsj-sample.mrg"))
    ap.add_argument("--test", default=os.path.join(DATA, "wsj22.trees"))
    ap.add_argument("--states", type=int, nargs="+", default=[8, 16, 24, 32])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None, help="only the first N test sentences")
    ap.add_argument("--no-pcfg", action="store_true", help="skip the PCFG baseline")
    ap.add_argument("--smoothing", type=float, default=None, help="default: the model's (30)")
    ap.add_argument("--prune-threshold", type=float, default=None,
                    help="default: the model's (1e-5)")
    ap.add_argument("--coarse-threshold", type=float, default=None,
                    help="default: the model's (3e-3)")
    args = ap.parse_args(argv)
    train = list(read_ptb(args.train))
    test = list(read_ptb(args.test))
    if args.limit:
        test = test[:args.limit]
    sents = [_words(t) for t in test]
    gold = [str(t) for t in test]
    print(f"train: {args.train} ({len(train)} trees); test: {args.test} ({len(test)} sentences, "
          f"from words); parsing threads: {args.jobs}")
    rows = []
    if not args.no_pcfg:
        rows.append(_run("plain PCFG (v=2, h=1)", PCFG(v=2, h=1), train, sents, gold, args.jobs))
        print(rows[-1], flush=True)
    for m in args.states:
        opts = {k: v for k, v in (("moment_smoothing", args.smoothing),
                                  ("prune_threshold", args.prune_threshold),
                                  ("coarse_threshold", args.coarse_threshold)) if v is not None}
        model = SpectralLPCFG(n_states=m, **opts)
        rows.append(_run(f"spectral L-PCFG m={m}", model, train, sents, gold, args.jobs))
        print(rows[-1], flush=True)
    print()
    print("| model | EVALB F1 | recall | precision | training CPU-s | parsing sentences/s "
          f"({args.jobs} threads) | PCFG fallbacks | EVALB length-mismatch sentences |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        fb = getattr(r["stats"], "fallback_pcfg", "")
        err = f"{r['evalb_errors']}{' (report aborted)' if r['aborted'] else ''}"
        print(f"| {r['name']} | {r['f1']:.2f} | {r['recall']:.2f} | {r['precision']:.2f} | "
              f"{r['fit_cpu']:.2f} | {r['sps']:.1f} | {fb} | {err} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
