"""Parsing throughput per core and across cores.

For each constituency model (the PCFG with its defaults, the spectral L-PCFG with 16 states,
Pivot+EM with 16 states) this script parses the same sentences of WSJ section 22 (from words)
with ``jobs = 1, 2, 4, ...`` up to the cores this process may use
(:func:`fastspectral._threads.available_cores`; ``FASTSPECTRAL_THREADS`` caps it), in one
process with the model loaded once, and prints sentences/s, the speed-up over one thread, the
parallel efficiency (speed-up / J) and the CPU time per sentence (``resource.getrusage`` of the
process around each ``parse`` call: user + system of every thread).  On a machine whose cores
are busy with other work the wall-clock numbers measure the contention; sentences per CPU-second
is then the better measure of the per-core speed.

The models are trained once on the training file and cached as model files in a temporary
folder (``--cache``; the name includes the training file's size and modification time), so
later runs (or ``--whole-process``) start at once.

``--whole-process`` instead runs ``fastspectral parse MODEL FILE --jobs J`` as a child process
per model and J, with the child's resource accounting (``RUSAGE_CHILDREN``): its wall time and
CPU seconds include the interpreter's start-up, imports and the model load; a run of the same
command on one sentence shows that start-up cost alone.

    python benchmarks/bench_scaling.py --limit 500
    python benchmarks/bench_scaling.py --whole-process --limit 500
    python benchmarks/bench_scaling.py --models spectral --jobs 1 2 --repeat 3

No timing is asserted anywhere: the numbers are printed (markdown tables), measured on the
machine at hand; on a machine shared with other work they are noisy (say so with them).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data", "ptb")

#: name -> (registry train command, constructor arguments)
MODELS = {
    "pcfg": ("fastspectral.grammar.pcfg", "PCFG", {}),
    "spectral": ("fastspectral.lpcfg.spectral", "SpectralLPCFG", {"n_states": 16}),
    "pivot-em": ("fastspectral.lpcfg.em", "EMLPCFG", {"n_states": 16, "init": "pivot"}),
}
LABELS = {"pcfg": "PCFG (defaults)", "spectral": "spectral L-PCFG, 16 states",
          "pivot-em": "Pivot+EM, 16 states"}


def _cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _words(t):
    return [w for w, tag in t.pos() if tag != "-NONE-"]


def jobs_list(n_cores: int) -> list[int]:
    """1, 2, 4, ... up to ``n_cores`` (``n_cores`` itself included)."""
    out, j = [], 1
    while j < n_cores:
        out.append(j)
        j *= 2
    out.append(n_cores)
    return out


def cached_model(name: str, train_path: str, cache: str) -> str:
    """Path of the model file of ``name`` trained on ``train_path`` (trained on first use)."""
    import importlib

    st = os.stat(train_path)
    mod, cls_name, kwargs = MODELS[name]
    key = hashlib.sha1(repr((os.path.abspath(train_path), st.st_size, int(st.st_mtime),
                             cls_name, sorted(kwargs.items()))).encode()).hexdigest()[:12]
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"{name}-{key}.fsm")
    if not os.path.exists(path):
        from fastspectral.trees import read_ptb

        cls = getattr(importlib.import_module(mod), cls_name)
        t0 = time.perf_counter()
        model = cls(**kwargs).fit(list(read_ptb(train_path)))
        model.save(path + ".tmp")
        os.replace(path + ".tmp", path)
        print(f"# trained {name} in {time.perf_counter() - t0:.1f} s -> {path}", flush=True)
    return path


def in_process(names, paths, sents, jobs, repeat, evalb_gold=None):
    import fastspectral

    rows = []
    for name in names:
        t0 = time.perf_counter()
        model = fastspectral.load(paths[name])
        load_s = time.perf_counter() - t0
        # warm-up on the same sentences with the most threads: lazy imports, tables, the
        # lexicon's per-word-type cache and the OpenMP thread pools, so that J=1 is not
        # charged for what every later J finds ready
        model.parse(sents, jobs=max(jobs))
        base = None
        for j in jobs:
            best = None
            for _ in range(repeat):
                c0, w0 = _cpu_self(), time.perf_counter()
                out = model.parse(sents, jobs=j)
                wall, cpu = time.perf_counter() - w0, _cpu_self() - c0
                if best is None or wall < best[0]:
                    best = (wall, cpu)
            wall, cpu = best
            sps = len(sents) / wall
            base = base or sps
            row = {"model": name, "jobs": j, "sps": sps, "speedup": sps / base,
                   "eff": sps / base / j, "cpu_ms": 1000 * cpu / len(sents), "load_s": load_s}
            if evalb_gold is not None and j == jobs[0]:
                from fastspectral.eval.evalb import evaluate

                row["f1"] = evaluate(evalb_gold, [str(t) for t in out]).fmeasure
            rows.append(row)
            print(f"# {row}", flush=True)
    print()
    print("| model | J | sentences/s | speed-up | efficiency | CPU ms / sentence | "
          "sentences / CPU-s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {LABELS[r['model']]} | {r['jobs']} | {r['sps']:.1f} | {r['speedup']:.2f}x | "
              f"{100 * r['eff']:.0f} % | {r['cpu_ms']:.2f} | {1000 / r['cpu_ms']:.1f} |")
    print()
    print("| model | load s | F1 (J=%d) |" % jobs[0])
    print("|---|---:|---:|")
    for r in rows:
        if r["jobs"] == jobs[0]:
            f1 = f"{r['f1']:.2f}" if "f1" in r else "-"
            print(f"| {LABELS[r['model']]} | {r['load_s']:.3f} | {f1} |")
    return rows


def _child(cmd):
    c0, w0 = _cpu_children(), time.perf_counter()
    res = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall, cpu = time.perf_counter() - w0, _cpu_children() - c0
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {res.stderr.strip()}")
    return wall, cpu


def whole_process(names, paths, sents, jobs, repeat):
    exe = [sys.executable, "-m", "fastspectral"]
    with tempfile.TemporaryDirectory() as tmp:
        inp, one = os.path.join(tmp, "in.txt"), os.path.join(tmp, "one.txt")
        with open(inp, "w", encoding="utf-8") as f:
            f.writelines(" ".join(s) + "\n" for s in sents)
        with open(one, "w", encoding="utf-8") as f:
            f.write(" ".join(sents[0]) + "\n")
        rows = []
        for name in names:
            start = min((_child(exe + ["parse", paths[name], one, "--jobs", "1", "-q", "-o",
                                       os.devnull]) for _ in range(repeat)))
            base = None
            for j in jobs:
                wall, cpu = min(_child(exe + ["parse", paths[name], inp, "--jobs", str(j), "-q",
                                              "-o", os.devnull]) for _ in range(repeat))
                sps = len(sents) / wall
                base = base or sps
                rows.append({"model": name, "jobs": j, "wall": wall, "cpu": cpu, "sps": sps,
                             "speedup": sps / base, "eff": sps / base / j, "start_wall": start[0],
                             "start_cpu": start[1]})
                print(f"# {rows[-1]}", flush=True)
    print()
    print("| model | J | wall s | CPU s | sentences/s | speed-up | efficiency | "
          "1-sentence run: wall s / CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {LABELS[r['model']]} | {r['jobs']} | {r['wall']:.2f} | {r['cpu']:.2f} | "
              f"{r['sps']:.1f} | {r['speedup']:.2f}x | {100 * r['eff']:.0f} % | "
              f"{r['start_wall']:.2f} / {r['start_cpu']:.2f} |")
    return rows


def main(argv=None):
    from fastspectral._threads import available_cores

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", default=os.path.join(DATA, "wsj-sample.mrg"))
    ap.add_argument("--test", default=os.path.join(DATA, "wsj22.trees"))
    ap.add_argument("--limit", type=int, default=None, help="only the first N test sentences")
    ap.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    ap.add_argument("--jobs", type=int, nargs="+", default=None,
                    help="thread counts (default: 1, 2, 4, ... up to the available cores)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per point, the fastest kept")
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(),
                                                    "fastspectral-bench-scaling"),
                    help="folder of the cached model files")
    ap.add_argument("--whole-process", action="store_true",
                    help="time 'fastspectral parse MODEL FILE --jobs J' as child processes")
    ap.add_argument("--f1", action="store_true", help="also score the J=1 parses with EVALB")
    args = ap.parse_args(argv)

    from fastspectral.trees import read_ptb

    test = list(read_ptb(args.test))
    if args.limit:
        test = test[:args.limit]
    sents = [_words(t) for t in test]
    cores = available_cores()
    jobs = args.jobs or jobs_list(cores)
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"{cores} available to this process; test: {args.test} ({len(sents)} sentences, "
          f"{sum(map(len, sents))} words); J = {jobs}; best of {args.repeat}")
    paths = {n: cached_model(n, args.train, args.cache) for n in args.models}
    if args.whole_process:
        whole_process(args.models, paths, sents, jobs, args.repeat)
    else:
        in_process(args.models, paths, sents, jobs, args.repeat,
                   [str(t) for t in test] if args.f1 else None)


if __name__ == "__main__":
    main()
