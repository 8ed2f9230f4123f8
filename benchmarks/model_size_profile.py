"""Where the bytes and the loading time of an L-PCFG model file go.

    python benchmarks/model_size_profile.py MODEL [MODEL ...] [--load-repeats 3]

For each model file: its size, the share of every array, the binary rule tensors ``T`` broken
down by the state counts ``(m_a, m_b, m_c)`` of their rules and by the training count of the
rule's parent symbol, the share of tensor entries that float32 cannot tell from 0 (below its
smallest normal number) and the float32 rounding error of the entries; then the time of
``fastspectral.io.load`` (wall and CPU, the file in the page cache after the first load) and of
the parse path's float32 copy of ``T`` (made on the first parse).
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..")))


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def profile(path, repeats):
    from fastspectral.io import modelfile

    size = os.path.getsize(path)
    print(f"\n## {path}: {size / 2**20:.1f} MB")
    with zipfile.ZipFile(path) as zf:
        members = sorted(zf.infolist(), key=lambda i: -i.file_size)
    for info in members[:6]:
        print(f"  {info.filename[:-4]:24s} {info.file_size / 2**20:9.1f} MB "
              f"{100 * info.file_size / size:5.1f} %")
    loads = []
    for _ in range(repeats):
        w, c = time.perf_counter(), _cpu()
        model = modelfile.load(path)
        loads.append((time.perf_counter() - w, _cpu() - c))
    print("  load (wall s, CPU s): " + ", ".join(f"{a:.2f}/{b:.2f}" for a, b in loads))
    lg = getattr(model, "lpcfg_", None)
    if lg is None:
        return
    if lg.T.dtype == np.float32:
        print(f"  float32 tensors in the file ({lg.T.nbytes / 2**20:.0f} MB): parsed without a copy")
    else:
        w, c = time.perf_counter(), _cpu()
        model._tensors_f32()
        print(f"  float32 copy of T (first parse): {time.perf_counter() - w:.2f} s wall, "
              f"{_cpu() - c:.2f} CPU-s, {lg.T.nbytes / 2 / 2**20:.0f} MB more memory")
    m = lg.m.astype(np.int64)
    per_rule = np.diff(lg.toff)
    T = np.asarray(lg.T)
    print(f"  T: {T.size:,} entries in {len(per_rule):,} binary rules "
          f"({T.nbytes / 2**20:.0f} MB {T.dtype}); {lg.U.size:,} unary entries")
    trip = np.stack([m[lg.bin_parent], m[lg.bin_left], m[lg.bin_right]], 1)
    full = int(m.max())
    n_full = (trip == full).sum(1)
    for k in (3, 2, 1, 0):
        sel = n_full == k
        print(f"  rules with {k} of 3 symbols at m={full}: {sel.sum():6d} rules, "
              f"{100 * per_rule[sel].sum() / max(T.size, 1):5.1f} % of T")
    counts = np.asarray(getattr(model, "sym_counts_", np.zeros(0)))
    if counts.size == m.size:
        pc = counts[lg.bin_parent]
        for lo, hi in ((0, 100), (100, 1000), (1000, 10000), (10000, None)):
            sel = (pc >= lo) & (pc < hi if hi else True)
            print(f"  parent count [{lo}, {hi or 'inf'}): {sel.sum():6d} rules, "
                  f"{100 * per_rule[sel].sum() / max(T.size, 1):5.1f} % of T")
    tiny = np.finfo(np.float32).tiny
    a = np.abs(T)
    t32 = T.astype(np.float32)
    if T.dtype == np.float32:
        T = T.astype(np.float64)
    nz = a > 0
    rel = np.abs(t32.astype(np.float64)[nz] - T[nz]) / a[nz]
    print(f"  entries below float32's normal range: {100 * np.mean(a < tiny):.3f} %; "
          f"exact zeros {100 * np.mean(~nz):.3f} %; float32 relative error max {rel.max():.2e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--load-repeats", type=int, default=3)
    args = ap.parse_args()
    for path in args.models:
        profile(path, args.load_repeats)


if __name__ == "__main__":
    main()
