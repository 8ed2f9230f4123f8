"""Pivot, Pivot+EM and EM L-PCFGs on real data (like table 1 of Cohen & Collins 2014).

    python benchmarks/bench_pivot.py [--states 8 16 24 32] [--em-iterations 20]
        [--pivot-em-iterations 4] [--dev-size 400] [--jobs 2] [--json out.json]
        [--v V --h H --smoothing A --feature-pairs I,O ...]     (default: the models' defaults)
        [--options JSON] [--dev-only]                           (development study)

Trains on the WSJ sample, picks the number of EM iterations on the dev set (the first
``--dev-size`` sentences of §22, parsed from words only, EVALB F1) and reports, for every number
of latent states ``m``: F1 on all of §22 (and on §22 without the dev sentences), EM iterations at
the best dev F1, training seconds up to that iteration (pivot estimation included for Pivot+EM;
dev parsing excluded) and parsing speed (sentences/s with ``--jobs`` threads), as Markdown.
Dev F1 is evaluated after the iterations listed by ``--eval-at`` (always including the last).
With both EM and Pivot+EM, the row ``pivot-em@k`` is Pivot+EM stopped after ``k`` = a fifth of
EM's iterations to its best dev F1 (at least 1): the issue's "within 0.5 F1 of EM using at most
a fifth of EM's iterations".

    python benchmarks/bench_pivot.py --recovery [--sizes 250 1000 4000 16000 64000]

instead prints the synthetic recovery experiment: the pivot learner on samples of growing size M
from the planted anchored L-PCFG (:class:`AnchoredExample` of ``tests/_anchored.py``), with the
max-abs errors of t, q and pi after the best permutation of every symbol's states.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..")))
DATA = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "data", "ptb"))

from fastspectral.eval.evalb import evaluate  # noqa: E402
from fastspectral.lpcfg.em import EMLPCFG  # noqa: E402
from fastspectral.lpcfg.pivot import PivotLPCFG  # noqa: E402
from fastspectral.trees import read_ptb  # noqa: E402


def _f1(gold, pred):
    return evaluate(gold, pred).fmeasure


def run_em(name, make, train, dev_sents, dev_gold, eval_at, jobs, keep_at=None):
    """Fit with dev evaluation after the iterations in ``eval_at``; keep the best parameters.

    Returns ``(model, best, trace, train_seconds, kept)``; the model holds the parameters of the
    best dev iteration, ``train_seconds`` is the wall time from the start of ``fit`` to the end of
    that iteration minus the time spent parsing the dev set; ``kept`` is ``(iteration, state,
    train_seconds)`` of iteration ``keep_at`` (or None)."""
    best = {"f1": -1.0, "it": 0, "state": None, "train_s": 0.0}
    kept = [None]
    trace = []
    dev_time = [0.0]
    start = [0.0]

    def cb(it, model, ll):
        elapsed = time.perf_counter() - start[0] - dev_time[0]
        if it == keep_at:
            kept[0] = (it, (model.lpcfg_, model.lex_table_, model.params_), elapsed)
        if it not in eval_at and it != model.n_iterations:
            return False
        t0 = time.perf_counter()
        f1 = _f1(dev_gold, model.parse(dev_sents, jobs=jobs))
        dev_time[0] += time.perf_counter() - t0
        trace.append((it, round(ll, 1), round(f1, 2), round(elapsed, 1)))
        print(f"  {name} it {it}: train loglik {ll:.1f}, dev F1 {f1:.2f}, train {elapsed:.1f} s",
              flush=True)
        if f1 > best["f1"]:
            best.update(f1=f1, it=it, state=(model.lpcfg_, model.lex_table_, model.params_),
                        train_s=elapsed)
        return False

    model = make()
    start[0] = time.perf_counter()
    model.fit(train, callback=cb)
    _install(model, best["state"])
    return model, best, trace, best["train_s"], kept[0]


def _install(model, state):
    model.lpcfg_, model.lex_table_, model.params_ = state
    model._coarse_lg = None


def recovery(sizes, jobs):
    """Print the recovery error of the pivot learner against the sample size (Markdown)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from _anchored import AnchoredExample

    ex = AnchoredExample(0)
    print("| M (trees) | max abs error t | max abs error q | max abs error pi | fit s |")
    print("|---|---|---|---|---|")
    for n in sizes:
        trees = ex.sample(n, seed=1)
        model = PivotLPCFG(**ex.fit_options(), jobs=jobs)
        t0 = time.perf_counter()
        model.fit(trees)
        dt = time.perf_counter() - t0
        e = ex.recovery_error(model)
        print(f"| {n} | {e['t']:.4f} | {e['q']:.4f} | {e['pi']:.4f} | {dt:.1f} |", flush=True)


def _model_options(args):
    """Constructor options given on the command line (the rest are the models' defaults)."""
    opts = {}
    for k in ("v", "h", "min_count", "rare_threshold"):
        if getattr(args, k) is not None:
            opts[k] = getattr(args, k)
    return opts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default=os.path.join(DATA, "wsj-sample.mrg"))
    ap.add_argument("--test", default=os.path.join(DATA, "wsj22.trees"))
    ap.add_argument("--states", type=int, nargs="+", default=[8, 16, 24, 32])
    ap.add_argument("--models", nargs="+", default=["pivot", "em", "pivot-em"],
                    choices=["pivot", "em", "pivot-em"])
    ap.add_argument("--em-iterations", type=int, default=20)
    ap.add_argument("--pivot-em-iterations", type=int, default=4)
    ap.add_argument("--eval-at", type=int, nargs="+", default=[1, 2, 3, 4, 6, 8, 10, 13, 16, 20])
    ap.add_argument("--dev-size", type=int, default=400)
    ap.add_argument("--feature-pairs", nargs="+", default=None,
                    help="pivot (inside,outside) template pairs, e.g. 1,1 0,0 (section 6.2; "
                         "default: PivotLPCFG's)")
    ap.add_argument("--v", type=int, default=None, help="default: the models' (EMLPCFG)")
    ap.add_argument("--h", type=int, default=None)
    ap.add_argument("--min-count", type=int, default=None)
    ap.add_argument("--rare-threshold", type=int, default=None)
    ap.add_argument("--smoothing", type=float, default=None, help="EM smoothing (default: EMLPCFG's)")
    ap.add_argument("--options", default=None, metavar="JSON",
                    help='more EMLPCFG keyword arguments, e.g. \'{"rare_threshold": 3}\'')
    ap.add_argument("--dev-only", action="store_true",
                    help="development study: dev F1 after every evaluated iteration only (no §22)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--speed-threads", type=int, nargs="*", default=[],
                    help="also time parsing §22 with these thread counts (e.g. 1)")
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--recovery", action="store_true", help="synthetic recovery experiment only")
    ap.add_argument("--sizes", type=int, nargs="+", default=[250, 1000, 4000, 16000, 64000])
    args = ap.parse_args(argv)
    if args.recovery:
        recovery(args.sizes, args.jobs)
        return

    opts = _model_options(args)
    piv_opts = {}
    if args.feature_pairs:
        piv_opts["feature_pairs"] = tuple(tuple(int(x) for x in p.split(","))
                                          for p in args.feature_pairs)
    em_opts = dict(opts)
    if args.smoothing is not None:
        em_opts["parent_smoothing"] = args.smoothing
    if args.options:
        em_opts.update(json.loads(args.options))
        piv_opts.update(em_opts.pop("pivot_options", {}))
    train = list(read_ptb(args.train))
    gold = list(read_ptb(args.test))
    sents = [t.leaves() for t in gold]
    dev_gold, dev_sents = gold[:args.dev_size], sents[:args.dev_size]
    order = [n for n in ("pivot", "em", "pivot-em") if n in args.models]
    rows = []

    def score(m, name, model, best_it, dev_f1, train_s, trace):
        if args.dev_only:
            print(json.dumps({"m": m, "model": name, "dev_f1": round(dev_f1, 2),
                              "em_iterations": best_it, "train_s": round(train_s, 1),
                              "options": em_opts}), flush=True)
            return
        t0 = time.perf_counter()
        pred = model.parse(sents, jobs=args.jobs)
        parse_s = time.perf_counter() - t0
        extra = {}
        for th in args.speed_threads:
            t0 = time.perf_counter()
            model.parse(sents, jobs=th)
            extra[f"parse_sps_{th}t"] = round(len(sents) / (time.perf_counter() - t0), 1)
        res22 = evaluate(gold, pred)
        row = {"m": m, "model": name, "f1_22": round(res22.fmeasure, 2),
               "evalb_errors_22": res22.all.n_error, "evalb_aborted_22": res22.aborted,
               "f1_22_nodev": round(_f1(gold[args.dev_size:], pred[args.dev_size:]), 2),
               "dev_f1": None if dev_f1 is None else round(dev_f1, 2),
               "em_iterations": best_it, "train_s": round(train_s, 1),
               "parse_sps": round(len(sents) / parse_s, 1), **extra, "trace": trace}
        print(json.dumps(row), flush=True)
        rows.append(row)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(rows, fh, indent=1)

    for m in args.states:
        em_best_it = None
        for name in order:
            print(f"m={m} {name}", flush=True)
            if name == "pivot":
                model = PivotLPCFG(n_states=m, jobs=args.jobs, **opts,
                                   **{k: v for k, v in piv_opts.items() if k != "parent_smoothing"})
                t0 = time.perf_counter()
                model.fit(train)
                train_s = time.perf_counter() - t0
                dev_f1 = _f1(dev_gold, model.parse(dev_sents, jobs=args.jobs))
                score(m, name, model, 0, dev_f1, train_s, [])
                continue
            iters = args.pivot_em_iterations if name == "pivot-em" else args.em_iterations
            init = "pivot" if name == "pivot-em" else "random"
            # Pivot+EM after a fifth of EM's iterations to its best dev F1 (the rule)
            keep_at = max(1, em_best_it // 5) if (name == "pivot-em" and em_best_it) else None
            model, best, trace, train_s, kept = run_em(
                name, lambda: EMLPCFG(n_states=m, iterations=iters, init=init, jobs=args.jobs,
                                      pivot_options=piv_opts, **em_opts),
                train, dev_sents, dev_gold, set(args.eval_at), args.jobs, keep_at)
            score(m, name, model, best["it"], best["f1"], train_s, trace)
            if name == "em":
                em_best_it = best["it"]
            if kept is not None:
                it, state, kept_s = kept
                _install(model, state)
                dev = dict((t[0], t[2]) for t in trace).get(it)
                score(m, f"pivot-em@{it}", model, it, dev, kept_s, [])
    if args.dev_only:
        return
    print()
    print("| m | model | §22 F1 (1700) | §22 F1 w/o dev (1300) | dev F1 | EM its | train s | parse sent/s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        dev = "" if r["dev_f1"] is None else f"{r['dev_f1']:.2f}"
        print(f"| {r['m']} | {r['model']} | {r['f1_22']:.2f} | {r['f1_22_nodev']:.2f} | "
              f"{dev} | {r['em_iterations']} | {r['train_s']:.1f} | {r['parse_sps']:.1f} |")


if __name__ == "__main__":
    main()
