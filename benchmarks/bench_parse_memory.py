"""Peak memory of ``fastspectral parse`` on a growing corpus: constant memory (bounded chunks).

    python benchmarks/bench_parse_memory.py [--sizes 10000 100000] [--jobs 2] [--pcfg 1,0]

Trains a PCFG on ``../shared/data/ptb/wsj-sample.mrg`` (``--pcfg V,H``; default ``1,0``, the
fast one: the default ``2,1`` parses about half as fast), writes WSJ section 22's sentences
repeated to each size, and runs ``python -m fastspectral parse MODEL INPUT -o OUTPUT --jobs N``
in a child process per size, in one run of this script.  Peak resident memory is the child's
``ru_maxrss`` (``os.wait4``), the time its whole wall time (start-up, model load, parse,
write).  Prints a Markdown table; every output is checked to hold one line per sentence.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from _parse_bench import DATA, corpus, section22, trained_pcfg


def run_child(cmd) -> tuple[float, int, int]:
    """(wall seconds, peak RSS KiB, exit status) of a child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    err_lines = []
    for line in proc.stderr:            # drain stderr while the child runs
        err_lines.append(line)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write("".join(err_lines))
    else:
        sys.stderr.write("".join(line for line in err_lines if "parsed" in line))
    return wall, usage.ru_maxrss, proc.returncode


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default=os.path.join(DATA, "wsj-sample.mrg"))
    ap.add_argument("--test", default=os.path.join(DATA, "wsj22.trees"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--pcfg", default="1,0", help="V,H of the PCFG (default 1,0: the fast one)")
    ap.add_argument("--chunk-size", type=int, default=None)
    ap.add_argument("--workdir", default=None, help="keep the files here (default: a temp dir)")
    args = ap.parse_args(argv)

    work, v, h, model = trained_pcfg(args.train, args.pcfg, args.workdir, "bench_parse_memory_")
    sents = section22(args.test)
    rows = []
    for n in args.sizes:
        inp = os.path.join(work, f"s22x{n}.txt")
        out = os.path.join(work, f"s22x{n}.trees")
        corpus(inp, sents, n)
        cmd = [sys.executable, "-m", "fastspectral", "parse", model, inp, "-o", out,
               "--jobs", str(args.jobs)]
        if args.chunk_size:
            cmd += ["--chunk-size", str(args.chunk_size)]
        wall, rss, rc = run_child(cmd)
        if rc != 0:
            raise SystemExit(f"parse of {n} sentences failed (exit {rc})")
        with open(out, "rb") as fh:
            lines = sum(1 for _ in fh)
        assert lines == n, (lines, n)
        rows.append((n, wall, n / wall, rss / 1024))
        print(f"{n} sentences: {wall:.1f} s, peak RSS {rss / 1024:.1f} MiB", flush=True)
        os.remove(out)
    print()
    print(f"PCFG v={v} h={h}, --jobs {args.jobs}, chunk {args.chunk_size or 2000} sentences; "
          f"section 22 ({len(sents)} sentences) repeated; one child process per size")
    print()
    print("| sentences | whole process (s) | sentences/s | peak RSS (MiB) |")
    print("|---:|---:|---:|---:|")
    for n, wall, rate, rss in rows:
        print(f"| {n:,} | {wall:.1f} | {rate:.1f} | {rss:.1f} |")


if __name__ == "__main__":
    main()
