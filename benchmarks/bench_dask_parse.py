"""Local parsing (``--jobs 2``) against a 2-worker x 1-thread Dask ``LocalCluster``, paired.

    python benchmarks/bench_dask_parse.py [--sentences 20000] [--pcfg 1,0] [--workers 2]

Trains a PCFG on ``../shared/data/ptb/wsj-sample.mrg`` (``--pcfg V,H``, default ``1,0``: the
fast one), writes WSJ section 22's sentences repeated to ``--sentences`` lines, then in one run
of this script

1. ``fastspectral parse MODEL INPUT -o local.trees --jobs 2`` (one process, 2 OpenMP threads),
2. ``fastspectral parse MODEL INPUT -o dask.trees --dask-workers 2`` (a LocalCluster of 2
   worker processes x 1 thread, started by the command; chunks of 500 sentences are tasks),

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
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "data", "ptb"))
STATUS = re.compile(r"parsed (\d+) sentences.* in ([\d.]+) s \(([\d.]+) sentences/s\)")


def run_child(cmd):
    """(wall seconds, status line) of a child process."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"{' '.join(cmd)} failed (exit {proc.returncode})")
    line = [x for x in proc.stderr.splitlines() if "parsed" in x][-1]
    print(line, flush=True)
    return wall, line


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
    ap.add_argument("--workdir", default=None, help="keep the files here (default: a temp dir)")
    args = ap.parse_args(argv)

    from fastspectral.trees.readers import read_treebank

    work = args.workdir or tempfile.mkdtemp(prefix="bench_dask_parse_")
    os.makedirs(work, exist_ok=True)
    v, h = args.pcfg.split(",")
    model = os.path.join(work, f"wsj-v{v}h{h}.pcfg")
    if not os.path.exists(model):
        subprocess.run([sys.executable, "-m", "fastspectral", "train", "pcfg", args.train,
                        "-o", model, "--v", v, "--h", h, "-q"], check=True)
    sents = [" ".join(t.leaves()) for t in read_treebank(args.test)]
    inp = os.path.join(work, f"s22x{args.sentences}.txt")
    with open(inp, "w", encoding="utf-8") as fh:
        for i in range(args.sentences):
            fh.write(sents[i % len(sents)] + "\n")
    fs = [sys.executable, "-m", "fastspectral", "parse", model, inp]
    local_out, dask_out = os.path.join(work, "local.trees"), os.path.join(work, "dask.trees")
    local_wall, local_line = run_child(fs + ["-o", local_out, "--jobs", str(args.jobs)])
    dask_wall, dask_line = run_child(fs + ["-o", dask_out, "--dask-workers", str(args.workers)])
    with open(local_out, "rb") as a, open(dask_out, "rb") as b:
        identical = a.read() == b.read()
    assert identical, "the Dask output differs from the local one"
    per_task = task_overhead(model, work, args.workers, args.overhead_tasks)

    n = args.sentences
    lp, dp = STATUS.search(local_line), STATUS.search(dask_line)
    tasks = int(re.search(r"(\d+) tasks", dask_line).group(1))
    ready = float(re.search(r"cluster ready in ([\d.]+) s", dask_line).group(1))
    print()
    print(f"PCFG v={v} h={h}; WSJ section 22 ({len(sents)} sentences) repeated to {n:,}; "
          f"both runs in one script run, one after the other, on this machine "
          f"({os.cpu_count()} cores, shared); outputs byte-identical: {identical}")
    print()
    print("| run | whole process (s) | parse phase (s) | sentences/s (parse) | "
          "sentences/s (whole) |")
    print("|---|---:|---:|---:|---:|")
    print(f"| local, --jobs {args.jobs} | {local_wall:.1f} | {float(lp.group(2)):.1f} | "
          f"{float(lp.group(3)):.1f} | {n / local_wall:.1f} |")
    print(f"| Dask LocalCluster {args.workers} workers x 1 thread ({tasks} tasks of 500) | "
          f"{dask_wall:.1f} | {float(dp.group(2)):.1f} | {float(dp.group(3)):.1f} | "
          f"{n / dask_wall:.1f} |")
    print()
    print(f"cluster start (in the Dask run): {ready:.2f} s; overhead per task "
          f"({args.overhead_tasks} tasks without parsing work): {1000 * per_task:.1f} ms of "
          f"wall time, i.e. {100 * per_task * tasks / float(dp.group(2)):.2f} % of the parse "
          f"phase for its {tasks} tasks")


if __name__ == "__main__":
    main()
