"""Learning from partitions on Dask: time and peak memory, local ``fit`` vs a 2-worker
``LocalCluster``, on the WSJ sample repeated 10 times (39,140 trees).

    python benchmarks/bench_dask_learn.py                  # PCFG and spectral L-PCFG
    python benchmarks/bench_dask_learn.py --learners pcfg --repeat 2
    python benchmarks/bench_dask_learn.py --learners pivot-em --repeat 1   # Pivot+EM m=16, 4 it.

The treebank ``../shared/data/ptb/wsj-sample.mrg`` is written ``--repeat`` times into a
temporary folder (deleted at the end; never into the repository): once as one file (the local
run reads it) and as two files of ``repeat / 2`` copies each, with the same trees in the same
order (the Dask run reads one file per worker, as ``fastspectral train KIND FILE... --dask-workers
2`` does; with an odd ``--repeat`` the trees are split in two halves).  Every measured run is a fresh process (``--one``), so that its peak resident memory
(``ru_maxrss``) is its own; the runs being compared are made one after the other in the same
invocation of this script (the machine's cores are shared with other jobs: compare only the
numbers of one run).

* local: read the file (``read_ptb``), ``model.fit(trees)`` (one core);
* dask: start a ``LocalCluster`` (2 worker processes, 1 thread each), read the two files on the
  workers, ``fastspectral.dask.fit_partitioned`` (statistics per partition, merged on the
  workers, the estimate on the client).  Peak memory: the client's and each worker's
  ``ru_maxrss`` (the workers' include their Dask runtime).

The two models must be equal up to the order of floating-point sums: the script checks the
model files (integers equal, floats within rtol 1e-10) and counts the identical parses of 200
sentences of WSJ section 22 (a spectral model's max-recall tree can change with the last bits
of its tensors: a near-tie of two trees).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("FASTSPECTRAL_DATA", REPO.parent / "shared" / "data"))


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_s() -> float:
    """CPU-seconds (user + system) of this process so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _make(learner, states=None, iterations=4):
    if learner == "pcfg":
        from fastspectral import PCFG
        return PCFG(jobs=1)
    if learner == "spectral":
        from fastspectral.lpcfg import SpectralLPCFG
        return SpectralLPCFG(jobs=1) if states is None else SpectralLPCFG(n_states=states, jobs=1)
    if learner == "pivot":          # fastspectral train pivot --states 16
        from fastspectral.lpcfg import PivotLPCFG
        return PivotLPCFG(n_states=states or 16, jobs=1)
    if learner == "pivot-em":       # fastspectral train pivot-em --states 16 --iterations 4
        from fastspectral.lpcfg import EMLPCFG
        return EMLPCFG(n_states=states or 16, init="pivot", iterations=iterations, jobs=1)
    raise SystemExit(f"unknown learner {learner}")


def run_one(args) -> dict:
    """One measured run in this (fresh) process; prints a JSON line."""
    model = _make(args.learner, args.states, args.iterations)
    t0 = time.perf_counter()
    out = {"learner": args.learner, "mode": args.one}
    if args.one == "local":
        from fastspectral.trees import read_ptb

        trees = list(read_ptb(args.files[0]))
        t1 = time.perf_counter()
        c1 = _cpu_s()
        model.fit(trees)
        t2 = time.perf_counter()
        out.update(trees=len(trees), read_s=t1 - t0, fit_s=t2 - t1, total_s=t2 - t0,
                   peak_mb=_maxrss_mb(), fit_cpu_s=_cpu_s() - c1)
    else:
        import logging

        from distributed import Client, LocalCluster

        from fastspectral.dask import fit_partitioned, read_partitions

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
        t1 = time.perf_counter()
        parts = read_partitions(client, args.files)
        n = sum(client.gather(client.map(len, parts)))
        t2 = time.perf_counter()
        c2, w2 = _cpu_s(), client.run(_cpu_s)
        fit_partitioned(model, parts, client)
        t3 = time.perf_counter()
        c3, w3 = _cpu_s(), client.run(_cpu_s)
        workers = client.run(_maxrss_mb)
        out.update(trees=n, cluster_start_s=t1 - t0, read_s=t2 - t1, fit_s=t3 - t2,
                   total_s=t3 - t1, passes=model.partitioned_fit_["passes"],
                   peak_mb=_maxrss_mb(), worker_peak_mb=sorted(workers.values()),
                   fit_cpu_s=c3 - c2, worker_fit_cpu_s=sorted(w3[w] - w2[w] for w in w3))
        del parts
        client.close()
        cluster.close()
    out["load_avg"] = os.getloadavg()[0]
    model.save(args.save)
    print(json.dumps(out))
    return out


def _same_models(pa, pb, sentences) -> tuple[bool, str]:
    import numpy as np

    from fastspectral import load
    from fastspectral.io.modelfile import load_model_file

    _, ma, aa = load_model_file(pa)
    _, mb, ab = load_model_file(pb)
    if aa.keys() != ab.keys():
        return False, "different arrays"
    worst = 0.0
    for k in aa:
        x, y = np.asarray(aa[k]), np.asarray(ab[k])
        if x.shape != y.shape:
            return False, f"{k}: shapes {x.shape} {y.shape}"
        if x.dtype.kind in "iub":
            if not np.array_equal(x, y):
                return False, f"{k}: integers differ"
        else:
            scale = max(1.0, float(np.abs(x).max(initial=0.0)))
            if not np.allclose(y, x, rtol=1e-10, atol=1e-12 * scale):
                return False, f"{k}: max |diff| {np.abs(x - y).max():.3g}"
            if x.size:
                worst = max(worst, float(np.abs(x - y).max()) / scale)
    a, b = load(pa), load(pb)
    same = sum(x == y for x, y in zip((str(t) for t in a.parse(sentences, jobs=1)),
                                      (str(t) for t in b.parse(sentences, jobs=1))))
    return True, f"arrays within rtol 1e-10 (max diff / max {worst:.1g}); " \
                 f"{same}/{len(sentences)} parses identical"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--learners", nargs="+", default=["pcfg", "spectral"],
                    choices=["pcfg", "spectral", "pivot", "pivot-em"])
    ap.add_argument("--repeat", type=int, default=10, help="copies of the WSJ sample")
    ap.add_argument("--states", type=int, default=None,
                    help="latent states of the L-PCFGs (default: 8 spectral, 16 pivot)")
    ap.add_argument("--iterations", type=int, default=4, help="EM iterations of pivot-em")
    ap.add_argument("--one", choices=["local", "dask"], help=argparse.SUPPRESS)
    ap.add_argument("--learner", help=argparse.SUPPRESS)
    ap.add_argument("--files", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--save", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        run_one(args)
        return
    if args.repeat < 1:
        raise SystemExit("--repeat must be >= 1")
    sample = DATA / "ptb" / "wsj-sample.mrg"
    if not sample.exists():
        raise SystemExit(f"{sample} is absent")
    text = sample.read_text(encoding="utf-8")
    if not text.endswith("\n"):
        text += "\n"
    from fastspectral.trees import read_ptb

    test = [t.leaves() for t in read_ptb(DATA / "ptb" / "wsj22.trees")][:200]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_dask_learn_") as tmp:
        tmp = Path(tmp)
        whole = tmp / "wsj-x.mrg"
        halves = [tmp / "wsj-x-part0.mrg", tmp / "wsj-x-part1.mrg"]
        whole.write_text(text * args.repeat, encoding="utf-8")
        if args.repeat % 2 == 0:
            for h in halves:
                h.write_text(text * (args.repeat // 2), encoding="utf-8")
        else:                       # the trees of the whole file, cut in two halves
            from fastspectral.trees.ptb import write_brackets

            trees = list(read_ptb(whole))
            write_brackets(trees[:len(trees) // 2], halves[0])
            write_brackets(trees[len(trees) // 2:], halves[1])
            del trees
        for learner in args.learners:
            res = {}
            for mode, files in (("local", [whole]), ("dask", halves)):
                save = tmp / f"{learner}-{mode}.model"
                cmd = [sys.executable, __file__, "--one", mode, "--learner", learner,
                       "--save", str(save), "--iterations", str(args.iterations),
                       "--files", *map(str, files)]
                if args.states is not None:
                    cmd += ["--states", str(args.states)]
                proc = subprocess.run(cmd, capture_output=True, text=True, cwd=str(tmp))
                if proc.returncode != 0:
                    sys.stderr.write(proc.stderr)
                    raise SystemExit(f"{learner} {mode} failed")
                res[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
                res[mode]["save"] = str(save)
                print(json.dumps({k: v for k, v in res[mode].items() if k != "save"}),
                      flush=True)
            same, detail = _same_models(res["local"]["save"], res["dask"]["save"], test)
            rows.append((learner, res, same, detail))
    print()
    print(f"WSJ sample x {args.repeat} ({rows[0][1]['local']['trees']} trees); local: one "
          "process, one core; dask: LocalCluster, 2 workers x 1 thread, 2 files; load: the "
          f"1-minute load average at the end of the run ({os.cpu_count()} cores)")
    print()
    print("| learner | run | read (s) | fit (s) | read + fit (s) | peak memory (MB) | load | "
          "same model |")
    print("|---|---|---:|---:|---:|---|---:|---|")
    for learner, res, same, detail in rows:
        lo, da = res["local"], res["dask"]
        print(f"| {learner} | local | {lo['read_s']:.1f} | {lo['fit_s']:.1f} | "
              f"{lo['total_s']:.1f} | {lo['peak_mb']:.0f} | {lo['load_avg']:.1f} | |")
        wk = " + ".join(f"{w:.0f}" for w in da["worker_peak_mb"])
        print(f"| {learner} | dask (2 workers) | {da['read_s']:.1f} | {da['fit_s']:.1f} | "
              f"{da['total_s']:.1f} | client {da['peak_mb']:.0f}, workers {wk} | "
              f"{da['load_avg']:.1f} | {'yes' if same else 'NO'}: {detail} |")
    print()
    for learner, res, _, _ in rows:
        da = res["dask"]
        passes = "; ".join(f"pass {i + 1}: statistics {s:.1f} s, estimate {e:.1f} s"
                           for i, (s, e) in enumerate(da["passes"]))
        print(f"{learner} dask: cluster start {da['cluster_start_s']:.1f} s (not counted); "
              f"{passes}")
        wcpu = " + ".join(f"{c:.1f}" for c in da["worker_fit_cpu_s"])
        print(f"{learner} fit CPU-seconds: local {res['local']['fit_cpu_s']:.1f}; dask client "
              f"{da['fit_cpu_s']:.1f}, workers {wcpu}")
    if not all(r[2] for r in rows):
        raise SystemExit("the models differ")


if __name__ == "__main__":
    main()
