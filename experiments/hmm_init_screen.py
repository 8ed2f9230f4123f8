"""Screening of starting points for spectral-initialised EM on the WSJ tags.

The protocol of ``benchmarks/bench_hmm.py --init`` (imported from it: the data splits and the
"reaches" rule): per split (dev: train on the first 90 % of the training sequences, perplexity
of the last 10 %; test: train on all, perplexity of wsj22), per ``m`` and EM seed, EM from a
random start to convergence (tol 1e-4 nats per event, at most 500 iterations), perplexity
with ``w = 0.2`` after every iteration; the start under test runs ``--iterations`` EM
iterations (the library's ``HMM(method="spectral-em")``, EM unchanged) and "reaches at" is
the first iteration whose perplexity is at most the seed's converged one; met when that
iteration is at most 1/5 of the seed's iterations.  Starts are given as specs::

    classes                      the default class start (hmm_from_token_classes)
    anchors                      the anchor start (hmm_from_anchors)
    mom:L=3:r=4:it=100:sc=0:init=classes:fl=0
                                 fastspectral.hmm.moment_init.hmm_from_moments: window length L,
                                 r random restarts, it window-EM iterations, sc screening
                                 iterations per start (0: every start runs it), init=classes
                                 adds the class start to the starts, fl a uniform mix
    blend:a=0.5                  (1 - a) classes + a anchors (every distribution)
    temp:t=0.7                   the class start with emissions raised to the power 1/t
    mom4:k=30                    the default moment start, then k window-EM iterations on
                                 windows of length 4 from it
    split:lv=1:r=0:it=100:fit=300:nz=0.01:init=classes
                                 fastspectral.hmm.moment_init.hmm_by_splitting: the moment
                                 start at ceil(m / 2^lv) states (class start at that size,
                                 init=none: random starts only, r random restarts), it window-EM
                                 iterations per size, fit at the last size (default it), states
                                 split with noise nz; dir=1: also the class start at m fitted
                                 fit iterations, the better window likelihood kept (sc=k: both
                                 routes k iterations at m, the better continues); em=k: k
                                 corpus Baum-Welch iterations at the size before the last;
                                 L4=k: then k window-EM iterations on the 4-gram windows

The start is plugged in by replacing ``fastspectral.hmm.spectral.hmm_from_token_classes``
while the run lasts (``model.py`` calls it for ``spectral_init="classes"``); its CPU time
(``time.process_time``, this process) is reported, and divided by the CPU time of one corpus
EM iteration (``em.em_step`` on the same training sequences, median of 5) as "EM-iteration
equivalents"; "reach + start cost": those equivalents plus the iteration that reaches the
seed's perplexity, and "met, start's cost counted": that sum is at most the seed's limit
(1/5 of its iterations, rounded down); "ppl at the limit - target": the start's perplexity at the seed's limit iteration
minus the seed's converged perplexity (the margin; negative is met).  EM seed runs are cached in ``--cache`` (they do not depend on the start).

    nice -n 10 python experiments/hmm_init_screen.py --splits dev --states 40 \\
        --starts classes mom:L=3:r=4:it=100
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))

from bench_hmm import _first_at_or_below, _tag_data  # noqa: E402
from fastspectral.hmm import HMM  # noqa: E402
from fastspectral.hmm import em as E  # noqa: E402
from fastspectral.hmm import moment_init as MI  # noqa: E402
from fastspectral.hmm import spectral as S  # noqa: E402
from fastspectral.hmm.data import build_and_encode  # noqa: E402

_CLASSES = S.hmm_from_token_classes


def parse_spec(spec: str):
    """``(kind, options)`` of a start spec (module docstring)."""
    kind, *rest = spec.split(":")
    opts = {}
    for r in rest:
        k, v = r.split("=")
        opts[k] = v
    return kind, opts


def make_start(spec: str, record: dict):
    """A function ``(H, m, seed) -> (start, trans, emit)`` for ``spec``; its CPU seconds and
    details go to ``record``."""
    kind, o = parse_spec(spec)

    def run(H, m, seed):
        t0 = time.process_time()
        if kind == "classes":
            out = _CLASSES(H, m, seed)
        elif kind == "anchors":
            out = S.hmm_from_anchors(H, m, seed)
        elif kind == "blend":
            a = float(o.get("a", 0.5))
            c, n = _CLASSES(H, m, seed), S.hmm_from_anchors(H, m, seed)
            out = tuple((1 - a) * x + a * y for x, y in zip(c, n))
        elif kind == "temp":
            t = float(o.get("t", 1.0))
            s, tr, e = _CLASSES(H, m, seed)
            stop = e[:, -1:]
            o_ = e[:, :-1] ** (1.0 / t)
            o_ /= o_.sum(axis=1, keepdims=True)
            out = (s, tr, np.hstack([o_ * (1 - stop), stop]))
        elif kind == "mom":
            init = _CLASSES(H, m, seed) if o.get("init") == "classes" else None
            info = {}
            out = MI.hmm_from_moments(H, m, seed, length=int(o.get("L", 3)),
                                      restarts=int(o.get("r", 4)),
                                      iterations=int(o.get("it", 100)),
                                      screen=int(o.get("sc", 0)),
                                      tol=float(o.get("tol", 1e-6)), init=init,
                                      floor=float(o.get("fl", 0.0)), info=info)
            record.update(window_iterations=info["iterations"], windows=info["windows"],
                          chosen=info["chosen"], window_loglik=info["loglik"],
                          final_window_loglik=float(info["history"][-1]))
        elif kind == "split":
            info = {}
            fi = o.get("fit")
            out = MI.hmm_by_splitting(H, m, seed, levels=int(o.get("lv", 1)),
                                      restarts=int(o.get("r", 0)),
                                      iterations=int(o.get("it", 100)),
                                      final_iterations=None if fi is None else int(fi),
                                      tol=float(o.get("tol", 1e-6)),
                                      init=None if o.get("init") == "none" else _CLASSES(
                                          H, MI.split_sizes(m, int(o.get("lv", 1)))[0], seed),
                                      noise=float(o.get("nz", 0.01)),
                                      floor=float(o.get("fl", 0.0)),
                                      direct=_CLASSES(H, m, seed) if o.get("dir") == "1"
                                      else None, screen=int(o.get("sc", 0)),
                                      corpus_iterations=int(o.get("em", 0)),
                                      refine=int(o.get("L4", 0)),
                                      info=info)
            record.update(window_iterations=int(sum(info["iterations"])),
                          chosen=info["chosen"],
                          refine_iterations=info.get("refine_iterations", 0),
                          windows=info["windows"], sizes=info["sizes"],
                          level_iterations=info["iterations"],
                          final_window_loglik=info["loglik"][-1])
        elif kind == "mom4":
            # the chosen trigram start, then window EM on length-4 windows from it
            info = {}
            s, tr, e = MI.hmm_from_moments(H, m, seed, info=info, init=_CLASSES(H, m, seed))
            w4 = MI.window_table(H.F, H.M, 4)
            s, tr, e, _, h4 = MI.window_em(w4, s, tr, e, info["occupancy"],
                                           iterations=int(o.get("k", 30)), tol=None)
            out = (s, tr, e)
            record.update(window_iterations=info["iterations"] + len(h4), windows=len(w4.W),
                          chosen=info["chosen"], window_loglik=info["loglik"],
                          final_window_loglik=float(h4[-1]))
        else:
            raise ValueError(f"unknown start {spec!r}")
        record["start_cpu"] = time.process_time() - t0
        return out

    return run


def em_iteration_cpu(tr, m: int, seed: int = 0) -> float:
    """CPU seconds of one corpus EM iteration (``em.em_step``; median of 5 after a warm-up)."""
    table, enc = build_and_encode(tr)
    M = len(table)
    uni = np.bincount(enc.ids, minlength=M + 1).astype(np.float64) + 1e-3
    uni /= uni.sum()
    s, t, e = E.random_init(M, m, uni, np.random.default_rng(seed))
    E.em_step(enc, s, t, e)
    ts = []
    for _ in range(5):
        t0 = time.process_time()
        E.em_step(enc, s, t, e)
        ts.append(time.process_time() - t0)
    return float(np.median(ts))


def seed_runs(split, m, seeds, tr, ev, args, cache):
    out = {}
    for seed in seeds:
        key = f"{split}/{m}/{seed}/{args.tol:g}/{args.max_em_iterations}"
        if key not in cache:
            r = HMM(n_states=m, method="em", field="tag", iterations=args.max_em_iterations,
                    tol=args.tol, backoff_weight=0.2, random_state=seed).fit(tr, dev=ev)
            cache[key] = {"iterations": int(r.iterations_run_),
                          "final": float(r.dev_perplexity_[-1]),
                          "curve": r.dev_perplexity_.tolist()}
            if args.cache:
                with open(args.cache, "w") as fh:
                    json.dump(cache, fh)
        out[seed] = cache[key]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", nargs="+", default=["classes"])
    ap.add_argument("--splits", nargs="+", default=["dev"])
    ap.add_argument("--states", type=int, nargs="+", default=[10, 20, 40])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--max-em-iterations", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0, help="random_state of the start")
    ap.add_argument("--cache", default="/tmp/hmm_init_em_seeds.json",
                    help="JSON cache of the EM seed runs ('' for none)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    cache = {}
    if args.cache and os.path.exists(args.cache):
        with open(args.cache) as fh:
            cache = json.load(fh)
    train, tr90, dev, test = _tag_data()
    print(f"## start screening; load average {os.getloadavg()}", flush=True)
    HMM(n_states=4, method="spectral-em", iterations=1).fit(tr90[:300], dev=dev[:50])  # warm-up
    for k in (2, MI.SMALL_ESTEP + 1):          # compiled kernels: few and many states
        MI.hmm_from_moments(None, k, restarts=1, iterations=2, init=None,
                            windows=MI.windows_from_sequences([0, 2, 3], [0, 1, 1], 2, 3))
    rows = []
    for split in args.splits:
        tr, ev = (tr90, dev) if split == "dev" else (train, test)
        for m in args.states:
            seeds = seed_runs(split, m, args.seeds, tr, ev, args, cache)
            it_cpu = em_iteration_cpu(tr, m)
            for spec in args.starts:
                rec = {}
                S.hmm_from_token_classes = make_start(spec, rec)
                try:
                    sem = HMM(n_states=m, method="spectral-em", field="tag",
                              iterations=args.iterations, backoff_weight=0.2,
                              random_state=args.seed, spectral_init="classes").fit(tr, dev=ev)
                finally:
                    S.hmm_from_token_classes = _CLASSES
                c = sem.dev_perplexity_
                row = {"split": split, "m": m, "start": spec, "curve": c.tolist(),
                       "em_iteration_cpu": it_cpu, **rec, "seeds": []}
                for seed, r in seeds.items():
                    hit = _first_at_or_below(c, r["final"])
                    cost = rec["start_cpu"] / it_cpu + (hit if hit is not None else np.inf)
                    row["seeds"].append({"seed": seed, "iterations": r["iterations"],
                                         "final": r["final"], "reaches_at": hit,
                                         "reach_plus_start_cost": float(cost),
                                         "ppl_at_limit": float(
                                             c[min(r["iterations"] // 5, len(c) - 1)]),
                                         "met": hit is not None and hit <= r["iterations"] / 5,
                                         "met_with_start_cost": bool(
                                             cost <= r["iterations"] // 5)})
                rows.append(row)
                met = sum(q["met"] for q in row["seeds"])
                print(f"{split} m={m} {spec}: ppl at 0/1/5/10/20/30 " + " / ".join(
                    f"{c[i]:.3f}" for i in (0, 1, 5, 10, 20, 30) if i < len(c)) +
                    f" | start {rec['start_cpu']:.2f} CPU-s = "
                    f"{rec['start_cpu'] / it_cpu:.1f} EM its ({it_cpu * 1e3:.0f} ms/it)" +
                    (f", {rec['window_iterations']} window-EM its, {rec['windows']} windows"
                     if "windows" in rec else "") + " | " +
                    "; ".join(f"s{q['seed']}: {q['iterations']} -> {q['final']:.3f}, at "
                              f"{q['reaches_at']} ({'yes' if q['met'] else 'no'})"
                              for q in row["seeds"]) + f" | {met}/{len(row['seeds'])} "
                    f"| load {os.getloadavg()[0]:.1f}", flush=True)
    print("\n| split | m | start | ppl at 0 / 1 / 5 / 10 / 20 | start CPU-s (EM its) | "
          "reaches at (limit) | reach + start cost in EM its | ppl at the limit - target | "
          "met | met, start's cost counted |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        c = r["curve"]
        print(f"| {r['split']} | {r['m']} | {r['start']} | " +
              " / ".join(f"{c[i]:.3f}" for i in (0, 1, 5, 10, 20) if i < len(c)) +
              f" | {r['start_cpu']:.2f} ({r['start_cpu'] / r['em_iteration_cpu']:.1f}) | " +
              " / ".join(f"{q['reaches_at'] if q['reaches_at'] is not None else 'never'}"
                         f" ({q['iterations'] // 5})" for q in r["seeds"]) + " | " +
              " / ".join(f"{q['reach_plus_start_cost']:.1f}" if np.isfinite(
                  q['reach_plus_start_cost']) else "never" for q in r["seeds"]) + " | " +
              " / ".join(f"{q['ppl_at_limit'] - q['final']:+.3f}" for q in r["seeds"]) +
              f" | {sum(q['met'] for q in r['seeds'])} of {len(r['seeds'])} | "
              f"{sum(q['met_with_start_cost'] for q in r['seeds'])} of {len(r['seeds'])} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
