"""Where the wall time of ``model.parse`` goes, at a given thread count (issue 12).

Every function of the compiled modules ``fastspectral._ext.*`` is wrapped with a wall-clock
timer before the model is loaded; one ``parse`` of the test sentences then shows how much of its
wall time is spent inside the kernels (which release the GIL and run their OpenMP threads) and
how much outside them (the serial, GIL-held part of the parse path that bounds the speed-up by
Amdahl's law), followed by ``cProfile``'s functions with the largest own time.

    python benchmarks/profile_parse.py MODEL.fsm --jobs 1 16 --limit 800
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--test", default=os.path.join(HERE, "..", "..", "shared", "data", "ptb",
                                                   "wsj22.trees"))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1])
    ap.add_argument("--top", type=int, default=18, help="cProfile rows (0: no cProfile, whose "
                    "overhead inflates the Python part)")
    args = ap.parse_args(argv)

    import importlib
    import pkgutil

    import fastspectral._ext as ext

    spent: dict = {}

    def timed(name, f):
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t
        return wrapper

    for info in pkgutil.iter_modules(ext.__path__):
        mod = importlib.import_module(f"fastspectral._ext.{info.name}")
        for name in dir(mod):
            f = getattr(mod, name)
            if callable(f) and not name.startswith("_") and not isinstance(f, type) and \
                    getattr(f, "__module__", "") == mod.__name__:
                setattr(mod, name, timed(f"{info.name}.{name}", f))

    import fastspectral
    from fastspectral.trees import read_ptb

    sents = [[w for w, t in tree.pos() if t != "-NONE-"] for tree in read_ptb(args.test)]
    sents = sents[:args.limit] if args.limit else sents
    model = fastspectral.load(args.model)
    model.parse(sents[:20], jobs=1)
    for j in args.jobs:
        prof = cProfile.Profile() if args.top else None
        spent.clear()
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        model.parse(sents, jobs=j)
        if prof:
            prof.disable()
        wall = time.perf_counter() - t0
        kern = sum(spent.values())
        print(f"## {os.path.basename(args.model)} J={j}: wall {wall:.2f} s"
              f"{' (under cProfile)' if prof else ''}, "
              f"inside kernels {kern:.2f} s ({100 * kern / wall:.0f} %), outside "
              f"{wall - kern:.2f} s ({100 * (wall - kern) / wall:.0f} %)")
        for name, t in sorted(spent.items(), key=lambda x: -x[1]):
            print(f"   {name:40s} {t:8.3f} s")
        if prof:
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(args.top)
            print("\n".join(line for line in s.getvalue().splitlines()[6:] if line.strip()))


if __name__ == "__main__":
    main()
