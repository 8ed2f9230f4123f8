"""Local parsing (``--jobs 2``) against a 2-worker x 1-thread Dask ``LocalCluster``, paired.

    python benchmarks/bench_dask_parse.py [--sentences 20000] [--pcfg 1,0] [--workers 2]

Trains a PCFG on ``../shared/data/ptb/wsj-sample.mrg`` (``--pcfg V,H``, default ``1,0``: the
fast one), writes WSJ section 22's sentences repeated to ``--sentences`` lines, then in one run
of this script

1. ``fastspectral parse MODEL INPUT -o local.trees --jobs 2`` (one process, 2 OpenMP threads),
2. ``fastspectral parse MODEL INPUT -o dask.trees --dask-workers 2`` (a LocalCluster of 2
   worker processes x 1 thread, started by the command; chunks of 500 sentences are tasks),
   ``--rounds`` times, the order alternating, with the load average seen during each run,

each as a child process: whole-process wall time (start-up, cluster, model load, parse, write)
and the parse phase's sentences/s from the command's own status line; the two outputs must be
byte-identical.  Then the overhead per task: ``parse_files`` on a LocalCluster of the same shape
over a file of empty lines with one line per task (tasks that carry no parsing work: the
submission, scheduling, model-cache lookup, result transfer and ordered write of each).
Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

from _parse_bench import DATA, corpus, section22, trained_pcfg

STATUS = re.compile(r"parsed (\d+) sentences.* in ([\d.]+) s \(([\d.]+) sentences/s\)")


def run_child(cmd):
    """(wall seconds, status line, mean 1-minute load average) of a child process."""
    load = [os.getloadavg()[0]]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    while True:
        try:
            proc.wait(timeout=15)
            break
        except subprocess.TimeoutExpired:
            load.append(os.getloadavg()[0])
    wall = time.perf_counter() - t0
    proc.stderr_text = proc.stderr.read()
    proc.stderr.close()
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr_text)
        raise SystemExit(f"{' '.join(cmd)} failed (exit {proc.returncode})")
    line = [x for x in proc.stderr_text.splitlines() if "parsed" in x][-1]
    print(line, flush=True)
    return wall, line, sum(load) / len(load)


def task_overhead(model, work, workers, n_tasks):
    """Seconds of wall time per task of no parsing work through parse_files."""
    from distributed import Client, LocalCluster

    from fastspectral.dask import parse_files

    empty = os.path.join(work, "empty-lines.txt")
    with open(empty, "w") as fh:
        fh.write("\n" * n_tasks)
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=40)
    client = Client(cluster)
    try:
        parse_files([empty], model, os.path.join(work, "warm"), client=client, chunk_size=50)
        res = parse_files([empty], model, os.path.join(work, "ovh"), client=client,
                          chunk_size=1)
        assert res.tasks == n_tasks
        return res.seconds / n_tasks
    finally:
        client.close()
        cluster.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default=os.path.join(DATA, "wsj-sample.mrg"))
    ap.add_argument("--test", default=os.path.join(DATA, "wsj22.trees"))
    ap.add_argument("--sentences", type=int, default=20000)
    ap.add_argument("--pcfg", default="1,0", help="V,H of the PCFG (default 1,0: the fast one)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2, help="threads of the local run")
    ap.add_argument("--overhead-tasks", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=1,
                    help="pairs of runs (the order alternates: local first, then Dask first)")
    ap.add_argument("--workdir", default=None, help="keep the files here (default: a temp dir)")
    args = ap.parse_args(argv)

    work, v, h, model = trained_pcfg(args.train, args.pcfg, args.workdir, "bench_dask_parse_")
    sents = section22(args.test)
    inp = os.path.join(work, f"s22x{args.sentences}.txt")
    corpus(inp, sents, args.sentences)
    fs = [sys.executable, "-m", "fastspectral", "parse", model, inp]
    local_out, dask_out = os.path.join(work, "local.trees"), os.path.join(work, "dask.trees")
    local_cmd = fs + ["-o", local_out, "--jobs", str(args.jobs)]
    dask_cmd = fs + ["-o", dask_out, "--dask-workers", str(args.workers)]
    runs = []          # (name, wall, status line, load)
    for r in range(args.rounds):
        order = [("local", local_cmd), ("dask", dask_cmd)]
        for name, cmd in (order if r % 2 == 0 else order[::-1]):
            runs.append((name, *run_child(cmd)))
        with open(local_out, "rb") as a, open(dask_out, "rb") as b:
            identical = a.read() == b.read()
        assert identical, "the Dask output differs from the local one"
    per_task = task_overhead(model, work, args.workers, args.overhead_tasks)

    n = args.sentences
    print()
    print(f"PCFG v={v} h={h}; WSJ section 22 ({len(sents)} sentences) repeated to {n:,}; "
          f"{args.rounds} round(s) in one script run, local and Dask one after the other "
          f"(order alternating), on this machine ({os.cpu_count()} cores, shared with other "
          f"work: the load average during each run is shown); outputs byte-identical")
    print()
    print("| run | whole process (s) | parse phase (s) | sentences/s (parse) | "
          "sentences/s (whole) | load avg |")
    print("|---|---:|---:|---:|---:|---:|")
    tasks = ready = parse_s = None
    for name, wall, line, load in runs:
        m = STATUS.search(line)
        if name == "dask":
            tasks = int(re.search(r"(\d+) tasks", line).group(1))
            ready = float(re.search(r"cluster ready in ([\d.]+) s", line).group(1))
            parse_s = float(m.group(2))
            label = (f"Dask LocalCluster {args.workers} workers x 1 thread ({tasks} tasks; "
                     f"cluster ready in {ready:.1f} s)")
        else:
            label = f"local, --jobs {args.jobs}"
        print(f"| {label} | {wall:.1f} | {float(m.group(2)):.1f} | {float(m.group(3)):.1f} | "
              f"{n / wall:.1f} | {load:.1f} |")
    print()
    print(f"overhead per task ({args.overhead_tasks} tasks without parsing work through "
          f"parse_files, {args.workers} workers): {1000 * per_task:.1f} ms of wall time, i.e. "
          f"{100 * per_task * tasks / parse_s:.2f} % of the last Dask parse phase for its "
          f"{tasks} tasks")

if __name__ == "__main__":
    main()
